"""The two stories: `life` (one job's whole life on 16 HGX H100) and `zero3` (a ZeRO-3 job on
failing PCIe, an interleaved pipeline job, legacy collectors). Every choice from the seed."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from bench.blind10.jobs import Job, spare_in
from bench.blind10.world import Label, Node

T0 = 1_790_000_000.0


@dataclass
class World:
    story: str
    seed: int
    t0: float
    dur_s: float
    topology: dict
    nodes: list
    jobs: list = field(default_factory=list)
    labels: list = field(default_factory=list)    # (Label, end_ts or None)
    post: list = field(default_factory=list)      # (Label, predicate(topic, value, true_t))


def _rng(story: str, seed: int, what: str) -> random.Random:
    return random.Random(f"blind10/{story}/{seed}/{what}")


def _nodes(story, seed, prefix, n) -> list:
    return [Node(f"{prefix}{i:02d}", _rng(story, seed, f"node{i}")) for i in range(1, n + 1)]


def _quiet_ports(r, nodes, n=3) -> None:
    """A few healthy ports with a low, steady symbol-error rate (BER in spec, no FEC loss)."""
    for node in r.sample(nodes, n):
        node.sym_base[r.randrange(node.nics)] = r.uniform(0.002, 0.01)


# ------------------------------------------------------------------------------- life
def life(seed: int, minutes: float = 20.0) -> World:
    S = "life"
    r = _rng(S, seed, "plan")
    t0, D = T0 + seed * 100_000, minutes * 60.0
    end = t0 + D
    nodes = _nodes(S, seed, "hgx-a", 16)
    topo = ("Topology=blind10-life Version=1\n"
            "NodeSet=hgx-a[01-16] Gpus=8 Nics=mlx5_[0-7]\n"
            "Rack=rack-a[1-4] Nodes=hgx-a[01-16]\n"
            "SwitchName=leaf-a[1-4] Nodes=hgx-a[01-16]\n"
            "SwitchName=spine-a[1-2] Switches=leaf-a[1-4]\n")
    w = World(S, seed, t0, D, {"format": "faultline", "text": topo}, nodes)
    _quiet_ports(r, nodes)
    x, y, z, v = r.sample(nodes, 4)
    job = Job("pt-life", "pretrain", nodes, _rng(S, seed, "job"), tp=8, dp=16,
              compute_ms=r.uniform(1900, 2200), comm_ms=r.uniform(380, 460),
              checksum_every=20, async_ckpt_every=50, eval_every=100,
              accum_from_t=t0 + r.uniform(0.22, 0.30) * D)
    w.jobs.append(job)

    # optical transceiver: symbol errors double every Td seconds, then the link flaps
    port = r.randrange(8)
    xl = Label("xcvr-ramp", "network", "nic", {"level": "nic", "node": x.name,
                                               "nic": f"mlx5_{port}", "port": 1})
    ramp0 = t0 + r.uniform(0.05, 0.15) * D
    flap = t0 + r.uniform(0.68, 0.78) * D
    down_s = r.uniform(4.0, 8.0)
    r0, r_flap = r.uniform(0.03, 0.06), r.uniform(40, 120)
    if seed % 2:     # marginal for days: its 16-bit symbol counter pegs at 65535 mid-ramp
        x.sym_start[port] = r.uniform(45_000, 60_000)
    td = (flap - ramp0) / math.log2(r_flap / r0)

    def sym_rate(t):
        if t < ramp0:
            return 0.0
        if t < flap:
            return r0 * 2 ** ((t - ramp0) / td)
        return 0.5 * r_flap * 2 ** ((t - flap) / (1.5 * td))

    def rcv_rate(t):
        return max(0.0, sym_rate(t) - 8.0) * 0.04

    xs = {"sym": 0.0, "flapped": False, "nr": random.Random(f"{seed}xcvr")}

    def xcvr_nic(node, k, t, dt):
        if node is not x or k != port or t < ramp0:
            return None
        nr = xs["nr"]
        mid = t - dt / 2
        add = {"symbol_errors": sym_rate(mid) * dt * nr.uniform(0.6, 1.4),
               "rcv_errors": rcv_rate(mid) * dt * nr.uniform(0.6, 1.4)}
        if flap <= t and not xs["flapped"]:
            xs["flapped"] = True
            add["link_downed"] = 1
        if flap <= t < flap + down_s:
            add["_down"] = True
        xs["sym"] += add["symbol_errors"]
        if xs["sym"] >= 1 or add.get("_down") or add.get("link_downed"):
            add["_label"] = xl
        return add
    x.nic_hooks.append(xcvr_nic)

    def xcvr_step(jb, step, t, comp, neither):
        m = 1 + min(0.12, rcv_rate(t) * 0.02)
        stall = 0.0
        if t <= flap < t + (max(comp) + jb.comm_ms) / 1000:
            stall = down_s * 1000 + jb.rng.uniform(1500, 3000)   # NCCL IB retries ride it out
        if m > 1.005 or stall:
            jb.touched.append(xl)
        return m, stall
    job.hooks.append(xcvr_step)
    w.labels.append((xl, end))

    # a degrading local NVMe: loader stalls on one node, rarer than 1 in 60 steps at first
    zl = Label("nvme-stalls", "slow_node", "unknown", {"level": "node", "node": z.name},
               attributable=False)
    nv0 = t0 + r.uniform(0.10, 0.25) * D

    def nvme_step(jb, step, t, comp, neither):
        if t < nv0:
            return 1.0, 0.0
        frac = min(1.0, (t - nv0) / (end - nv0))
        if jb.rng.random() >= 1 / 60 + (1 / 3 - 1 / 60) * frac ** 1.5:
            return 1.0, 0.0
        stall = jb.rng.uniform(400, 800 + 2000 * frac)
        for i in range(len(neither)):
            if jb.nodes[i // 8] is z:
                neither[i] += stall * jb.rng.uniform(0.97, 1.03)
        jb.touched.append(zl)
        return 1.0, 0.0
    job.hooks.append(nvme_step)
    w.labels.append((zl, None))

    # attempt 1, a planned stop (config change), drivers reloaded on two nodes, attempt 2
    start = t0 + r.uniform(15, 40)
    stop = t0 + r.uniform(0.45, 0.52) * D
    t, step = job.run(start, 0, stop, final_ckpt=True)
    reload_t = t + r.uniform(20, 40)
    for node in (y, v):
        rt = reload_t + r.uniform(0, 15)
        node.dcgm_gap.append((rt, rt + r.uniform(30, 60)))
        node.gpu_reset.append(rt)
        if node is y:      # a diag script's `nvidia-smi -lgc` survives into the next job
            y.lock = (rt, r.choice([1395.0, 1440.0, 1500.0, 1545.0]))
    yl = Label("locked-clocks", "slow_node", "unknown", {"level": "node", "node": y.name},
               attributable=False)
    restart = t + r.uniform(120, 200)
    job.run(restart, step, end)
    w.labels.append((yl, end))
    w.post = [(yl, lambda tp, val, tt: (tp == "telemetry.thermal" and val["node"] == y.name
                                        and tt >= y.lock[0])
               or (tp == "telemetry.step" and tt >= restart))]
    return w


# ------------------------------------------------------------------------------ zero3
def zero3(seed: int, minutes: float = 20.0) -> World:
    S = "zero3"
    r = _rng(S, seed, "plan")
    t0, D = T0 + 50_000 + seed * 100_000, minutes * 60.0
    end = t0 + D
    nodes = _nodes(S, seed, "hgx-b", 16)
    topo = "".join(f"SwitchName=leaf-b{k} Nodes=hgx-b[{4 * k - 3:02d}-{4 * k:02d}]\n"
                   for k in range(1, 5)) + "SwitchName=spine-b1 Switches=leaf-b[1-4]\n"
    w = World(S, seed, t0, D, {"format": "slurm", "text": topo}, nodes)
    _quiet_ports(r, nodes)
    zn, spare, pn, sn = nodes[:8], nodes[8], nodes[9:13], nodes[13:15]
    for node in sn:
        node.wrap32 = True              # an older collector: port_xmit_wait in a uint32
    wn, late, clr = r.sample(zn, 3)
    late.late_burst_s = 3.0
    clr.ib_reset.append(t0 + r.uniform(0.30, 0.40) * D)   # `perfquery -R` after a cable check
    gap_node = r.choice(pn + sn)
    g0 = t0 + r.uniform(0.55, 0.65) * D
    gap_node.dcgm_gap.append((g0, g0 + r.uniform(45, 90)))   # dcgm-exporter restart

    sft = Job("sft-b", "finetune", sn, _rng(S, seed, "sft"), tp=8, dp=2,
              compute_ms=r.uniform(850, 1000), comm_ms=r.uniform(170, 230), checksum_every=20)
    sft.run(t0 + r.uniform(0, 3), 0, end, cold_start=False)
    w.jobs.append(sft)

    # interleaved pipeline job, launched with ranks 4-7 of one node bound to the wrong socket
    pipe = Job("pp-int", "research", pn, _rng(S, seed, "pipe"), tp=4, pp=4, dp=2,
               compute_ms=r.uniform(2400, 2800), comm_ms=r.uniform(300, 380),
               stage_w=(1.04, 1.0, 1.0, 1.09), checksum_every=25, async_ckpt_every=150)
    bad = r.choice(pn)
    nl = Label("numa-bind", "slow_node", "unknown", {"level": "node", "node": bad.name},
               attributable=False)
    numa_f, numa_ms = r.uniform(1.06, 1.09), r.uniform(150, 300)

    def numa_step(jb, step, t, comp, neither):
        for i in range(len(comp)):
            if jb.nodes[i // 8] is bad and i % 8 >= 4:
                comp[i] *= numa_f
                neither[i] += numa_ms * jb.rng.uniform(0.8, 1.25)
        jb.touched.append(nl)
        return 1.0, 0.0
    pipe.hooks.append(numa_step)
    pipe.run(t0 + r.uniform(0.10, 0.18) * D, 0, end)
    w.jobs.append(pipe)
    w.labels.append((nl, end))

    # ZeRO-3, pure DP on 8 nodes; one GPU's PCIe link storms, falls off the bus, comes back
    # after an automated reboot, storms again and is gone
    z = Job("ft-zero3", "finetune", list(zn), _rng(S, seed, "zero3"), tp=1, dp=64,
            rank_fields=False, compute_ms=r.uniform(1300, 1500), comm_ms=r.uniform(520, 650),
            comm_sd=0.08, checksum_every=None, sync_ckpt_every=100)
    g = r.randrange(8)
    al = Label("aer-xid79", "hardware", "gpu_hardware", {"level": "gpu", "node": wn.name,
                                                         "gpu": g})
    xid1 = t0 + r.uniform(0.30, 0.36) * D
    xid2 = t0 + r.uniform(0.84, 0.90) * D
    storms = []
    t = t0 + r.uniform(0.12, 0.20) * D
    while t < xid1 - 20:
        storms.append((t, min(t + r.uniform(20, 60), xid1), r.uniform(30, 150)))
        t += r.uniform(90, 200)
    boot = xid1 + r.uniform(125, 150)       # automation reboots it after the watchdog
    back = boot + r.uniform(120, 160)
    requeue = back + r.uniform(45, 75)
    t = requeue + r.uniform(60, 120)
    while t < xid2 - 20:
        storms.append((t, min(t + r.uniform(20, 60), xid2), r.uniform(30, 150)))
        t += r.uniform(90, 200)
    storms.append((xid2 - r.uniform(5, 15), xid2, r.uniform(150, 300)))   # the last gasp
    wn.dark.append((boot, back))
    wn.gpu_gone[g] = [(xid1, back), (xid2, math.inf)]
    wn.xids += [(xid1, g, 79, al), (xid2, g, 79, al)]
    slow_f = r.uniform(1.06, 1.12)

    def storm_rate(a, b):
        """Replays per second averaged over [a, b)."""
        tot = sum(rate * max(0.0, min(b, e) - max(a, s)) for s, e, rate in storms)
        return tot / (b - a) if b > a else 0.0

    def aer_ecc(node, gpu, t, dt):
        if node is not wn or gpu != g:
            return None
        n = storm_rate(t - dt, t) * dt
        return {"pcie_replay": n, "_label": al} if n >= 1 else None
    wn.ecc_hooks.append(aer_ecc)

    def aer_step(jb, step, t, comp, neither):
        if wn not in jb.nodes or not any(s <= t < e for s, e, _ in storms):
            return 1.0, 0.0
        comp[jb.nodes.index(wn) * 8 + g] *= slow_f
        jb.touched.append(al)
        return 1.0, 0.0
    z.hooks.append(aer_step)
    t, step = z.run(t0 + r.uniform(0, 3), 0, end, hang_t=xid1, cold_start=False)
    resume = step - step % 100            # from the last checkpoint: steps repeat
    t, step = z.run(requeue, resume, end, hang_t=xid2)
    spare_in(z, wn, spare)
    if t + 60 < end:
        z.run(t + r.uniform(40, 70), step - step % 100, end)
    w.jobs.append(z)
    w.labels.append((al, end))
    return w


STORIES = {"life": life, "zero3": zero3}
