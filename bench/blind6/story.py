"""The two blind6 stories; every choice from the seed (README "The stories").

`k8s-a100`: 12 x 8 A100 SXM4 under Kubernetes: a pipeline-parallel job with an interleaved
schedule and a global-batch ramp-up, two nodes in MIG mode shared by single-slice jobs, a job
that starts mid-log. `slurm-pcie`: 16 x 4 H100 PCIe under Slurm: a job preempted and requeued
onto other nodes, time-based checkpoints that storm the storage fabric together, a node whose
clock chrony slews back, a collector that restarts and re-sends its last minute.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from bench.blind6 import faults as F
from bench.blind6.fleet import A100_SXM, H100_PCIE, GpuModel, Node, hostlist
from bench.blind6.jobs import Attempt, Job
from bench.blind6.jobs import run as run_attempt

EPOCH = 1_798_000_000.0   # 2026-12-23 (UTC); a seed moves it by days


@dataclass
class Story:
    name: str
    t_end: float
    nodes: list[Node]
    topology: str
    faults: list = field(default_factory=list)
    steps: list = field(default_factory=list)        # (true_t, topic, value)
    healthy: list[str] = field(default_factory=list)  # what happens that is not a fault
    ints: bool = True          # DCGM integer temperatures
    recovery: bool = False     # NVML recovery_action reported
    max_hold_s: float = 4.5    # the longest a record is held in transit
    resend: tuple | None = None   # (node, t_restart, gap_s, minute_s): collector restart
    rate_fn: object = None


def _nodes(names, model: GpuModel, ngpu, nics, rates, thermal_s, ecc_s, nic_s, rng, epoch,
           inlet) -> list[Node]:
    out = []
    for name in names:
        out.append(Node(name, model, ngpu, list(nics), dict(zip(nics, rates, strict=True)),
                        thermal_s, ecc_s, nic_s, phase=rng.uniform(0, 30),
                        offset_s=rng.gauss(0, 0.02),
                        inlet_c=inlet + rng.uniform(-1.5, 1.5),
                        demand=[rng.uniform(0.93, 1.07) for _ in range(ngpu)],
                        sensor_c=[rng.uniform(0, 5) for _ in range(ngpu)], epoch=epoch))
    return out


def _runner(t_end: float):
    """`jobs.run` with every attempt ended by the log's end (a shortened --minutes run)."""
    def run(job: Job, att: Attempt, faults, rng, out) -> None:
        att.stop_t = min(att.stop_t, t_end)
        att.stall_t = min(att.stall_t, t_end)
        run_attempt(job, att, faults, rng, out)
    return run


def _busy_frac(node: Node, t: float) -> float:
    return sum(node.util(g, t) for g in range(node.ngpu)) / node.ngpu


def k8s_a100(seed: int, minutes: float = 20.0) -> Story:
    rng = random.Random(1000 + seed)
    t_end = minutes * 60.0
    run = _runner(t_end)
    epoch = EPOCH + seed * 86400.0
    names = [f"a100-{i:02d}" for i in range(1, 13)]
    nodes = _nodes(names, A100_SXM, 8, ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"],
                   [200.0] * 4, 15.0, 15.0, 10.0, rng, epoch, 24.0)
    by = {n.name: n for n in nodes}
    topo = "\n".join([
        "# Slurm topology.conf of the A100 pods (hostlist ranges)",
        f"SwitchName=ib-leaf1 Nodes={hostlist('a100-', 1, 4)}",
        f"SwitchName=ib-leaf2 Nodes={hostlist('a100-', 5, 8)}",
        f"SwitchName=ib-leaf3 Nodes={hostlist('a100-', 9, 12)}",
        "SwitchName=ib-spine1 Switches=ib-leaf[1-3]", ""])
    st = Story("k8s-a100", t_end, nodes, topo)
    sid = f"k8sa100-s{seed}"

    # Job P: TP2 x PP4 x DP8 on nodes 1-8, interleaved 1F1B (2 chunks a stage); global batch
    # ramps 256 -> 1024 (16 -> 64 microbatches a replica); checkpoint every 50 steps.
    ramp = [80, 160, 240]
    p = Job("llm-pp4", tp=2, pp=4, dp=8, vchunks=2,
            stage_ms=(rng.uniform(92, 98), 88.0, 88.0, rng.uniform(100, 108)),
            micro=lambda s: 16 * (1 + sum(s >= r for r in ramp)), allreduce_ms=350.0,
            ckpt=lambda s, t: rng.uniform(11.0, 17.0) if s % 50 == 0 and s > 0 else 0.0)
    p_place = [(by[names[r // 8]], r % 8) for r in range(64)]

    # the faults in P, on three different nodes
    slow_node = rng.choice([2, 3, 4, 5])     # stages 1 and 2 live on nodes 3-6
    p_nodes = [slow_node] + rng.sample([i for i in range(8) if i != slow_node], 2)
    slow_rank = next(r for r in rng.sample(range(64), 64)
                     if p.coords(r)[1] in (1, 2) and r // 8 == p_nodes[0])
    sn, sg = p_place[slow_rank][0].name, p_place[slow_rank][1]
    st.faults.append(F.SlowGpu(f"{sid}-slow", sn, sg, rng.uniform(200, 330),
                               rng.uniform(1.15, 1.25)))
    cn, cg = names[p_nodes[1]], rng.randrange(8)
    st.faults.append(F.NvlinkCrc(f"{sid}-crc", cn, cg, rng.uniform(90, 200),
                                 rng.uniform(0.02, 0.05), rng.uniform(120, 180),
                                 rng.uniform(30, 60)))
    hn, hnic = names[p_nodes[2]], f"mlx5_{rng.randrange(4)}"
    t_h = rng.uniform(760, 860)
    hang, down = rng.uniform(40, 70), rng.uniform(8, 15)
    st.faults.append(F.HcaHang(f"{sid}-hca", hn, hnic, t_h, hang, down))

    # MIG nodes 9-10: every A100 as two 3g.40gb slices, a single-GPU job on each
    mig = {}
    for ni in (8, 9):
        for g in range(8):
            for inst in range(2):
                j = Job(f"ft-{ni + 1:02d}{g}{inst}", rank_fields=False,
                        stage_ms=(rng.uniform(90, 180),), micro=lambda s: 16, jitter=0.05,
                        checksum_every=10**9, loss0=rng.uniform(0.8, 1.6))
                mig[(ni, g, inst)] = j
    xn = rng.choice((8, 9))
    xg = rng.randrange(8)
    t_x = rng.uniform(420, 560)
    st.faults.append(F.Xid94Mig(f"{sid}-xid94", names[xn], xg, t_x))
    sbe_n = 17 - xn   # the other MIG node
    sbe_g = rng.randrange(8)
    t_s = rng.uniform(300, 500)
    storm = F.SbeStorm(names[sbe_n], sbe_g, t_s, t_s + rng.uniform(240, 360), rng.uniform(0.5, 2.0))
    st.faults.append(storm)
    st.healthy += [
        f"P's global batch ramps up at steps {ramp} (every rank's step longer alike)",
        "P's pipeline stages differ (embedding, loss head) and wait in the schedule's bubble",
        f"SBE storm on {names[sbe_n]} GPU {sbe_g}: {storm.per_s:.1f}/s corrected for"
        f" {storm.t1 - storm.t0:.0f} s from t={t_s:.0f}, no XID, no remap",
        "32 single-slice MIG jobs on nodes 9-10, two on every GPU, 5 % step noise",
        "job W (TP8 x DP2) starts on nodes 11-12 mid-log"]

    out = st.steps
    a1 = Attempt(0.0, p_place, 0, stop_t=t_h + rng.uniform(8, 12), stall_t=t_h)
    p.attempts.append(a1)
    run(p, a1, st.faults, rng, out)
    a2 = Attempt(t_h + hang + down + rng.uniform(60, 120), p_place, a1.last_ckpt + 1, stop_t=t_end)
    p.attempts.append(a2)
    run(p, a2, st.faults, rng, out)
    for (ni, g, inst), j in mig.items():
        stop = t_x + 0.3 if (ni, g, inst) == (xn, xg, 0) else t_end
        a = Attempt(rng.uniform(0, 200), [(nodes[ni], g)], rng.randrange(100, 5000),
                    stop_t=stop, stall_t=stop, util=0.46)
        j.attempts.append(a)
        run(j, a, st.faults, rng, out)
    w = Job("sft-w", tp=8, dp=2, stage_ms=(rng.uniform(100, 120),), micro=lambda s: 8,
            allreduce_ms=160.0)
    aw = Attempt(rng.uniform(560, 640), [(nodes[10 + r // 8], r % 8) for r in range(16)], 0,
                 stop_t=t_end)
    run(w, aw, st.faults, rng, out)

    def rate(node: Node, nic: str, t: float) -> tuple[float, float]:
        busy = _busy_frac(node, t)
        r = (3.0e7 if node.name in (names[8], names[9]) else 3.2e9) * busy
        return r, 2.0e4 * r / 1e9
    st.rate_fn = rate
    return st


def slurm_pcie(seed: int, minutes: float = 22.0) -> Story:
    rng = random.Random(2000 + seed)
    t_end = minutes * 60.0
    run = _runner(t_end)
    epoch = EPOCH + seed * 86400.0 + 43200.0
    an = [f"pcie-a{i:02d}" for i in range(1, 9)]
    bn = [f"pcie-b{i:02d}" for i in range(1, 9)]
    nodes = _nodes(an + bn, H100_PCIE, 4, ["mlx5_0", "mlx5_1"], [400.0, 200.0], 5.0, 30.0, 20.0,
                   rng, epoch, 26.0)
    by = {n.name: n for n in nodes}
    topo = "\n".join([
        "# Slurm topology.conf (explicit node lists; the storage fabric is not listed)",
        "SwitchName=leafA Nodes=" + ",".join(an),
        "SwitchName=leafB Nodes=" + ",".join(bn),
        "SwitchName=spine Switches=leafA,leafB", ""])
    st = Story("slurm-pcie", t_end, nodes, topo, ints=False, recovery=True, max_hold_s=1.2)
    sid = f"slurmpcie-s{seed}"

    # chrony on b02 lost its source days ago: ~3 s ahead; from t=360 s it slews back at 1000 ppm
    b02 = by["pcie-b02"]
    b02.offset_s = rng.uniform(2.6, 3.4)
    b02.slew = (360.0, 1000.0, 0.01)
    # the dcgm collector on b03 restarts: 20 s without samples, then its last minute again
    st.resend = ("pcie-b03", rng.uniform(560, 700), 20.0, 60.0)

    def timed_ckpt():
        """Saves every 300 s of wall clock (--save-interval-minutes 5): all jobs together."""
        state = {"k": None}

        def ckpt(step: int, t: float) -> float:
            k = int(t // 300)
            if state["k"] is None:
                state["k"] = k
            if k > state["k"]:
                state["k"] = k
                return rng.uniform(20.0, 40.0)
            return 0.0
        return ckpt

    # R: TP2 x DP8 on b01-b04, from the start
    r = Job("r-tp2", tp=2, dp=8, stage_ms=(70.0,), micro=lambda s: 10, allreduce_ms=180.0,
            ckpt=timed_ckpt())
    r_place = [(by[bn[i // 4]], i % 4) for i in range(16)]
    sdc_rank = rng.randrange(16)
    gsp_rank = rng.choice([i for i in range(16) if i // 2 != sdc_rank // 2])
    t_gh = rng.uniform(900, 1000)
    t_119 = t_gh + rng.uniform(30, 45)
    gn, gg = r_place[gsp_rank][0].name, r_place[gsp_rank][1]
    st.faults.append(F.GspHang(f"{sid}-gsp", gn, gg, t_gh, t_119, t_119 + rng.uniform(2, 10),
                               t_119 + rng.uniform(200, 280)))
    sdc_step = int(rng.uniform(200, 330) / 0.95) + 1000
    sn, sg = r_place[sdc_rank][0].name, r_place[sdc_rank][1]
    st.faults.append(F.Sdc(f"{sid}-sdc", "r-tp2", sdc_rank, sn, sg, sdc_step,
                           F.gpu_scope(sn, sg)))

    # Q: pure DP (no rank fields) on a01-a04, preempted by H; requeued onto b05-b08
    q = Job("q-fsdp", rank_fields=False, dp=16, stage_ms=(85.0,), micro=lambda s: 12,
            allreduce_ms=250.0, ckpt=timed_ckpt())
    t_pre = rng.uniform(420, 540)
    q_new = [(by[bn[4 + i // 4]], i % 4) for i in range(16)]
    pn, pg = rng.choice(q_new)
    st.faults.append(F.PcieDegraded(f"{sid}-pcie", pn.name, pg, rng.uniform(1.18, 1.28),
                                    rng.uniform(4.0, 15.0)))
    # H: high priority, pure DP over a01-a08
    h = Job("h-prio", rank_fields=False, dp=32, stage_ms=(75.0,), micro=lambda s: 14,
            allreduce_ms=300.0, ckpt=timed_ckpt())
    h_place = [(by[an[i // 4]], i % 4) for i in range(32)]
    t_h0 = t_pre + rng.uniform(50, 80)
    t_x = t_h0 + rng.uniform(280, 380)
    on, og = by[an[rng.randrange(4, 8)]].name, rng.randrange(4)
    t_reset = t_x + rng.uniform(150, 210)
    st.faults.append(F.OffBus(f"{sid}-offbus", on, og, t_x, t_reset))

    out = st.steps
    ra = Attempt(0.0, r_place, 1000, stop_t=t_gh + 120.0, stall_t=t_gh)
    run(r, ra, st.faults, rng, out)
    qa = Attempt(0.0, [(by[an[i // 4]], i % 4) for i in range(16)], 4000, stop_t=t_end,
                 sigterm_t=t_pre)
    run(q, qa, st.faults, rng, out)
    qb = Attempt(qa.end_t + rng.uniform(100, 160), q_new, qa.last_ckpt + 1, stop_t=t_end)
    q.ckpt = timed_ckpt()
    run(q, qb, st.faults, rng, out)
    h.ckpt = timed_ckpt()
    ha = Attempt(t_h0, h_place, 0, stop_t=t_x + rng.uniform(1, 3), stall_t=t_x)
    run(h, ha, st.faults, rng, out)
    h.ckpt = timed_ckpt()
    hb = Attempt(t_reset + rng.uniform(50, 90), h_place, ha.last_ckpt + 1, stop_t=t_end)
    run(h, hb, st.faults, rng, out)
    st.healthy += [
        f"Q preempted at t={t_pre:.0f} s (SIGTERM, a checkpoint, exit) and requeued onto b05-b08",
        "every job saves every 300 s of wall clock: checkpoint storms on the storage NICs",
        f"pcie-b02's clock {b02.offset_s:.1f} s ahead, slewed back at 1000 ppm from t=360 s",
        f"pcie-b03's collector restarts at t={st.resend[1]:.0f} s and re-sends its last minute",
        "pcie-a05..a08 idle (reserved for H) until H starts"]

    def rate(node: Node, nic: str, t: float) -> tuple[float, float]:
        busy = _busy_frac(node, t)
        if nic == "mlx5_0":
            r = 4.0e9 * busy
            return r, 2.0e4 * r / 1e9
        in_storm = busy > 0.1 and (t % 300.0) < 35.0 and t > 299.0
        if in_storm:
            return 2.2e9, 4.0e7
        return 8.0e7 * busy, 1.0e3
    st.rate_fn = rate
    return st


STORIES = {"k8s-a100": k8s_a100, "slurm-pcie": slurm_pcie}
