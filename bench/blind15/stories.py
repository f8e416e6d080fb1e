"""blind15's two stories: the slowness shows up somewhere other than its cause, and the map is
wrong. Every choice comes from the seed; see README.md for what each story holds and why.
"""

from __future__ import annotations

import math
import random

from bench.blind15.jobs import Job
from bench.blind15.world import Log, Port, ecc_row, thermal_row

NICS = [f"mlx5_{k}" for k in range(8)]
STEP_GBPS = 140.0      # a busy rank's port, averaged over a step


def _collect(log: Log, nodes: list, jobs: list, gpu_state, nic_state, thermal_s: float,
             arrival=None, gpu_index=None, resend=None) -> None:
    """dcgm-exporter thermal / ECC rows and the NIC exporter's port rows for `nodes`.

    `arrival(node, ts)` -> arrival time or None (the usual 30-600 ms); `gpu_index(node, gpu)`
    -> the index the collector writes; `resend(node, ts)` -> a delay after which the collector
    sends a NIC row again with a new `ts`, or None.
    """
    rng = log.rng
    inlet_off = {n: rng.uniform(-1.5, 1.5) for n in nodes}
    ports = {(n, nic): Port(n, nic) for n in nodes for nic in NICS}
    phase = {n: rng.uniform(0.0, thermal_s) for n in nodes}
    for n in nodes:
        t = log.t0 + phase[n]
        k = 0
        while t < log.t1:
            inlet = 24.0 + 2.0 * math.sin(2 * math.pi * (t - log.t0) / 1300.0) + inlet_off[n]
            late = arrival(n, t) if arrival else None
            for g in range(8):
                busy = next((b for j in jobs if (b := j.busy_at(n, g, t)) is not None), 0.0)
                ratio, bits, temp_add, f = gpu_state(n, g, t)
                row = thermal_row(t, n, gpu_index(n, g) if gpu_index else g, busy, ratio,
                                  inlet, rng, bits, temp_add)
                log.emit("telemetry.thermal", row, late)
                if f is not None:
                    f.touch(row["ts"])
                if k % round(30.0 / thermal_s) == 0:
                    log.emit("telemetry.ecc", ecc_row(t + 0.05, n, gpu_index(n, g) if gpu_index
                                                     else g), late)
            t += thermal_s
            k += 1
    for (n, nic), port in ports.items():
        t, last = log.t0 + rng.uniform(0.0, 10.0), None
        while t < log.t1:
            if last is not None:
                busy = next((b for j in jobs if (b := j.busy_at(n, NICS.index(nic), t))
                             is not None), 0.0)
                kw, gbps_mult, f = nic_state(n, nic, t)
                port.advance(t - last, STEP_GBPS * gbps_mult * (busy > 0.05) + 0.05, rng, **kw)
                row = port.row(t)
                late = arrival(n, t) if arrival else None
                log.emit("telemetry.nic", row, late)
                if f is not None:
                    f.touch(row["ts"])
                again = resend(n, t) if resend else None
                if again is not None:
                    log.emit("telemetry.nic", {**row, "ts": round(t + again, 3)},
                             (late or t) + again + rng.uniform(0.05, 0.4))
            last = t
            t += 10.0


def pipe(seed: int, minutes: float) -> Log:
    """A TP4 x PP4 x DP4 job on eight RoCE nodes whose topology file is a year old."""
    rng = random.Random(f"blind15-pipe-{seed}")
    t0 = 1796500800.0 + seed * 86400.0
    t1 = t0 + minutes * 60.0
    nodes = [f"pp{i:02d}" for i in range(1, 9)]
    moved = rng.choice(["pp03", "pp04"])      # re-cabled to leaf-b; the file still says leaf-a
    topo = ("# written at install; pp09-10 and leaf-c were decommissioned since\n"
            "Topology=pipe-roce Version=1\n"
            "NodeSet=pp[01-10] Gpus=8 Nics=mlx5_[0-7]\n"
            "Rack=rack-a Nodes=pp[01-04]\nRack=rack-b Nodes=pp[05-08]\n"
            "Rack=rack-c Nodes=pp[09-10]\n"
            "SwitchName=leaf-a Nodes=pp[01-04]\nSwitchName=leaf-b Nodes=pp[05-08]\n"
            "SwitchName=leaf-c Nodes=pp[09-10]\n"
            "SwitchName=spine-1 Switches=leaf-a,leaf-b,leaf-c\n")
    log = Log(rng, t0, t1, {"format": "faultline", "text": topo})
    real_leaf_b = {"pp05", "pp06", "pp07", "pp08", moved}
    span = t1 - t0

    base = rng.uniform(1620.0, 1780.0)
    job = Job("pp-lm", "research", nodes, tp=4, pp=4, dp=4,
              stage_ms=[base * 1.05, base, base * rng.uniform(0.99, 1.02), base * 1.16],
              reduce_ms=rng.uniform(240.0, 290.0), loader_ms=25.0,
              start_ts=t0 + rng.uniform(0.5, 2.5), end_ts=t1, microbatches=16, virtual=2,
              first_step=rng.randint(20000, 60000),
              clock_offset_s={n: rng.uniform(-0.004, 0.004) for n in nodes})

    # F1: one GPU of stage 1 or 2 loses clock (no throttle reason, less power); the whole
    # replica then waits for it inside its pipeline timer.
    stage, dp, tp = rng.choice([1, 2]), rng.randrange(4), rng.randrange(4)
    slow_node, slow_gpu = nodes[2 * stage + dp // 2], tp + 4 * (dp % 2)
    slow_on = t0 + span * rng.uniform(0.18, 0.32)
    slow_ratio = rng.uniform(0.70, 0.78)
    f_slow = log.fault("stage-gpu-clock", "slow_node", "unknown",
                       {"level": "gpu", "node": slow_node, "gpu": slow_gpu}, False)

    def gpu_state(node, gpu, ts):
        if node == slow_node and gpu == slow_gpu and ts >= slow_on:
            return slow_ratio * rng.uniform(0.99, 1.01), 0, 0.0, f_slow
        return 1.0, 0, 0.0, None

    # F2: leaf-b's ASIC corrupts and drops under load: sequence errors, receive errors and
    # back-pressure on every port facing it -- including the moved node the file puts on leaf-a.
    asic_on = t0 + span * rng.uniform(0.55, 0.66)
    asic_off = asic_on + rng.uniform(150.0, 240.0)
    f_leaf = log.fault("leaf-b-asic", "network", "switch", {"level": "switch", "switch": "leaf-b"},
                       True)
    seq_rate, red_mult, p2p_mult = rng.uniform(150.0, 600.0), rng.uniform(1.5, 1.9), \
        rng.uniform(1.08, 1.16)

    def nic_state(node, nic, ts):
        if node in real_leaf_b and asic_on <= ts < asic_off + 10.0:
            return (dict(wait_per_s=rng.uniform(2500.0, 6000.0), seq_err_per_s=seq_rate,
                         rcv_err_per_s=rng.uniform(2.0, 10.0), cnp_per_s=60.0), 0.7, f_leaf)
        return {}, 1.0, None

    def net(jobname, ts):
        if asic_on <= ts < asic_off:
            return red_mult, p2p_mult, [f_leaf]
        return 1.0, 1.0, []

    job.run(log, gpu_state, lambda n, t: (1.0, 0.0, None), net)

    # routine: a node's collector batches 2-5 min late, then catches up; another resends.
    quiet = [n for n in nodes if n not in {slow_node, moved} and n not in real_leaf_b]
    late_node = rng.choice(quiet)
    late_on = t0 + span * rng.uniform(0.30, 0.40)
    late_off = late_on + rng.uniform(120.0, 300.0)
    dup_node = rng.choice([n for n in nodes if n not in {late_node, slow_node}])
    dup_on = t0 + span * rng.uniform(0.1, 0.8)

    def arrival(node, ts):
        if node == late_node and late_on <= ts < late_off:
            return late_off + rng.uniform(1.0, 5.0)
        return None

    def resend(node, ts):
        if node == dup_node and dup_on <= ts < dup_on + 90.0:
            return rng.uniform(0.8, 2.5)
        return None

    _collect(log, nodes, [job], gpu_state, nic_state, 10.0, arrival=arrival, resend=resend)
    log.effect("stage-imbalance", {"job": "pp-lm"}, job.start_ts, t1,
               why="embedding stage 0 +5 %, loss head stage 3 +16 %, interleaved 1F1B v=2 m=16")
    log.effect("p2p-wait-in-compute", {"job": "pp-lm"}, job.start_ts, t1,
               why="Megatron's forward-backward timer holds the pipeline's p2p waits")
    log.effect("collector-late-batch", {"node": late_node}, late_on, late_off,
               why="thermal / ECC / NIC rows held and sent at once at the window's end")
    log.effect("resend-new-ts", {"node": dup_node}, dup_on, dup_on + 90.0,
               why="NIC rows sent twice, the second with a ts 0.8-2.5 s later, same counters")
    log.effect("stale-topology", {"node": moved}, t0, t1,
               why=f"{moved} faces leaf-b (the file says leaf-a); leaf-c, pp09-10 are gone")
    return log


def fabric(seed: int, minutes: float) -> Log:
    """Two jobs on a Slurm fleet whose topology.conf names a node that moved and a leaf gone."""
    rng = random.Random(f"blind15-fabric-{seed}")
    t0 = 1796504400.0 + seed * 86400.0
    t1 = t0 + minutes * 60.0
    span = t1 - t0
    a_nodes = [f"fx{i:02d}" for i in range(1, 9)]
    b_nodes = ["fx09", "fx10", "fx11", "fx15"]     # fx15 is new: not in the file; fx12 is away
    topo = ("SwitchName=leaf1 Nodes=fx[01-06]\nSwitchName=leaf2 Nodes=fx[07-12]\n"
            "SwitchName=leaf3 Nodes=fx[13-14]\nSwitchName=spine1 Switches=leaf[1-3]\n")
    log = Log(rng, t0, t1, {"format": "slurm", "text": topo})
    offs = {n: rng.uniform(-0.004, 0.004) for n in a_nodes + b_nodes}
    a = Job("pt-a", "research", a_nodes, tp=8, pp=1, dp=8, stage_ms=[rng.uniform(1280, 1420)],
            reduce_ms=rng.uniform(280.0, 330.0), loader_ms=30.0, start_ts=t0 + rng.uniform(0.3, 2),
            end_ts=t1, first_step=rng.randint(5000, 90000), clock_offset_s=offs)
    b = Job("ft-b", "product", b_nodes, tp=8, pp=1, dp=4, stage_ms=[rng.uniform(900, 1000)],
            reduce_ms=rng.uniform(160.0, 200.0), loader_ms=40.0, start_ts=t0 + rng.uniform(0.3, 2),
            end_ts=t1, first_step=rng.randint(100, 4000), clock_offset_s=offs)

    # F3: a node's CPU governor left at powersave (a BIOS update reset it): its loaders and
    # kernel launches run slower -- no GPU, NIC or counter says why.
    gov_node = rng.choice(["fx02", "fx03", "fx04", "fx06"])
    gov_on = t0 if seed % 2 == 0 else t0 + span * rng.uniform(0.30, 0.40)
    gov_mult, gov_add = rng.uniform(1.06, 1.09), rng.uniform(150.0, 300.0)
    f_gov = log.fault("cpu-governor-powersave", "slow_node", "unknown",
                      {"level": "node", "node": gov_node}, False)

    def host(node, ts):
        if node == gov_node and ts >= gov_on:
            return gov_mult, gov_add, f_gov
        return 1.0, 0.0, None

    # F5: a GPU of fx10 runs hot (a failed fan in its sled) into HW thermal slowdown; fx10's
    # collector writes NVML minor numbers, which after the last reboot differ from the index.
    hot_gpu = rng.randrange(8)
    perm = rng.choice([[1, 0, 3, 2, 5, 4, 7, 6], [2, 3, 0, 1, 6, 7, 4, 5],
                       [4, 5, 6, 7, 0, 1, 2, 3]])
    hot_on = t0 + span * rng.uniform(0.22, 0.42)
    ramp_s, hot_add = rng.uniform(60.0, 90.0), rng.uniform(22.0, 26.0)
    f_hot = log.fault("hot-gpu-renumbered", "slow_node", "thermal",
                      {"level": "gpu", "node": "fx10", "gpu": hot_gpu}, True)

    def gpu_state(node, gpu, ts):
        if node == "fx10" and gpu == hot_gpu and ts >= hot_on:
            add = hot_add * min(1.0, (ts - hot_on) / ramp_s)
            if add >= hot_add * 0.85:
                return rng.uniform(0.80, 0.86), 0x40, add, f_hot
            return 1.0, 0, add, f_hot
        return 1.0, 0, 0.0, None

    # routine: ECMP hashes two nodes' flows (one each side of the spine) onto one uplink.
    ecmp = ("fx05", "fx08")
    ecmp_on = t0 + span * rng.uniform(0.45, 0.58)
    ecmp_off = ecmp_on + rng.uniform(120.0, 200.0)
    ecmp_nics = set(rng.sample(NICS, 3))
    ecmp_mult = rng.uniform(1.35, 1.5)

    def nic_state(node, nic, ts):
        if node in ecmp and nic in ecmp_nics and ecmp_on <= ts < ecmp_off + 10.0:
            return dict(wait_per_s=rng.uniform(1500.0, 4000.0), cnp_per_s=80.0), 0.65, None
        return {}, 1.0, None

    def net(jobname, ts):
        if jobname == "pt-a" and ecmp_on <= ts < ecmp_off:
            return ecmp_mult, 1.0, []
        return 1.0, 1.0, []

    a.run(log, gpu_state, host, net)
    b.run(log, gpu_state, host, net)
    _collect(log, a_nodes + b_nodes, [a, b], gpu_state, nic_state, 15.0,
             gpu_index=lambda n, g: perm[g] if n == "fx10" else g)
    for n in ecmp:
        log.effect("ecmp-collision", {"node": n}, ecmp_on, ecmp_off,
                   why=f"{len(ecmp_nics)} ports' flows hashed onto one spine uplink; pt-a's "
                       f"reduce x{ecmp_mult:.2f}, nothing to isolate")
    log.effect("gpu-renumbered", {"node": "fx10"}, t0, t1,
               why=f"collector's gpu = NVML minor number {perm} of the step records' index")
    log.effect("stale-topology", {"node": "fx07"}, t0, t1,
               why="fx07 is a new box on leaf1 (file: leaf2); fx15 unlisted on leaf2; fx12 away; "
                   "leaf3 and fx13-14 gone")
    return log


STORIES = {"pipe": pipe, "fabric": fabric}
