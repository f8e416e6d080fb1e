"""blind22's two stories, every choice drawn from the seed.

``fabric`` -- the network and the storage, Slurm topology.conf, every collector at 30 s (IB).
``sched``  -- the scheduler, faultline topology, thermal and ports at 10 s, ECC at 30 s (RoCE).

Each returns the topology record's value, the filled ``Sim``, the faults (DESIGN labels
without their span: the span is the first and last record a fault's tag is on) and the
routine shapes (``effects``: what must page nobody).
"""

from __future__ import annotations

import math

import numpy as np

from bench.blind22 import world
from bench.blind22.sim import Segment, Sim, Spec

EPOCH = 1764950400.0     # 2025-12-05 16:00 UTC


def _effect(name: str, scope: dict, a: float, b: float, why: str) -> dict:
    return {"effect": name, "scope": scope, "start_ts": round(a, 3), "end_ts": round(b, 3),
            "why": why, "expect": "pages nobody"}


def fabric(seed: int, minutes: float = 18.0):
    rng = np.random.default_rng([22, 1, seed])
    t0 = EPOCH + seed * 86400.0 + float(rng.uniform(0, 3600))
    dur = minutes * 60.0
    names = [f"hgx{i:03d}" for i in range(1, 17)]
    sim = Sim(rng, t0, dur, names, roce=False)
    at = lambda a, b: t0 + dur * float(rng.uniform(a, b))  # noqa: E731
    even = seed % 2 == 0
    a_nodes, b_nodes = list(range(0, 6)), list(range(6, 14))
    A = Spec("pt-a", "vision", tp=8, pp=1, compute_ms=(1150.0,), comm_ms=380.0,
             port_bytes_s=7e9, loss=True)
    B = Spec("pt-b", "lm", tp=4, pp=2, compute_ms=(1650.0, 1750.0), comm_ms=600.0,
             port_bytes_s=11e9, loss=True)
    faults, effects = [], []
    # the checkpoint storm: both jobs save asynchronously on the site's 5-minute wall-clock
    # boundaries to the same file system; the background writes stretch every step of both
    # jobs by 25-50 % for 8-16 steps, both together
    first = math.ceil(t0 / 300.0) * 300.0
    for c in np.arange(first, t0 + dur, 300.0):
        for spec, step_s in ((A, 1.6), (B, 2.4)):
            n = int(rng.integers(8, 17))
            extra = float(rng.uniform(0.25, 0.5)) * step_s * 1000.0
            spec.saves.append((float(c) + float(rng.uniform(0, 4)), extra, n, True))
            effects.append(_effect("checkpoint-storm", {"job": spec.job}, c,
                                   c + n * step_s * 1.5 + 5,
                                   "async save to shared storage on the 5-min boundary, "
                                   "every job's steps +25-50 % together"))
    # adaptive routing / ECMP imbalance: one spine hot for 3-6 min; pt-b (across the two
    # leaves) waits in every all-reduce, its ports' xmit_wait x10-20; no error, no link change
    h0 = at(0.22, 0.55)
    h1 = h0 + float(rng.uniform(180, 360))
    hot = float(rng.uniform(1.25, 1.45))
    B.comm.append((h0, h1, lambda r, t, m=hot: m * math.exp(r.normal(0, 0.05)), None))
    for n in b_nodes:
        sim.wait_mult[n, :, sim.sec(h0):sim.sec(h1)] = float(rng.uniform(10, 20))
        effects.append(_effect("hot-spine", {"node": names[n]}, h0, h1,
                               "ECMP/adaptive routing hashing pt-b's cross-leaf flows onto "
                               "one spine: congestion, no unit to isolate"))
    effects.append(_effect("hot-spine", {"job": "pt-b"}, h0, h1, "every rank waits alike"))
    effects.append(_effect("pipeline-stage-imbalance", {"job": "pt-b"}, t0, t0 + dur,
                           "stage 1 holds the loss head: +6 % compute, never compared"))
    # a healthy fabric's rare symbol errors: 3 ports, 1-3 bursts of 1-2
    for _ in range(3):
        n, p = int(rng.integers(16)), int(rng.integers(8))
        for _ in range(int(rng.integers(1, 4))):
            t = at(0.02, 0.98)
            sim.port_ev.setdefault((n, p), []).append((t, "symbol_errors",
                                                       int(rng.integers(1, 3)), None))
            effects.append(_effect("healthy-symbol-errors", {"node": names[n]}, t, t + 30,
                                   "a link's everyday corrected symbol errors"))
    if even:
        # an IB link flaps once and retrains at 1x width: 400 -> 100 Gb/s for good
        n, p = int(rng.choice(b_nodes)), int(rng.integers(8))
        tag = f"width-{names[n]}-mlx5_{p}"
        tf = at(0.35, 0.55)
        d = float(rng.uniform(4, 9))
        s0, s1 = sim.sec(tf), sim.sec(tf + d)
        sim.down[n, p, s0:s1 + 1] = True
        dark = (n, p, s0, s1)
        sim.rate[n, p, s1 + 1:] = 100.0
        sim.wait_mult[n, p, s1 + 1:] = 25.0
        sim.port_ev.setdefault((n, p), []).extend([
            (tf, "link_downed", 1, tag), (tf, "symbol_errors", int(rng.integers(40, 300)), tag),
            (tf + d, "rcv_errors", int(rng.integers(3, 20)), tag)])
        slow = float(rng.uniform(1.4, 1.6))
        # the step in flight when the link drops waits out the retrain
        B.comm.append((tf - 2.6, tf, lambda r, t, d=d: 1.0 + d * 1000.0 / 600.0, tag))
        B.comm.append((tf + d, t0 + dur + 60, lambda r, t, m=slow: m * math.exp(
            r.normal(0, 0.02)), tag))
        faults.append({"fault_id": tag, "kind": "network", "cause": "nic", "attributable": True,
                       "scope": {"level": "nic", "node": names[n], "nic": f"mlx5_{p}",
                                 "port": 1}})
        loader_job, loader_nodes = A, a_nodes
    else:
        # a marginal optic: symbol errors climbing ~3 decades over 6-10 min, receive errors
        # once the FEC gives up, pt-a's all-reduce up to +20 % and retransmit stalls
        n, p = int(rng.choice(a_nodes)), int(rng.integers(8))
        tag = f"ber-{names[n]}-mlx5_{p}"
        tb = at(0.25, 0.45)
        ramp = float(rng.uniform(360, 600))
        rate = lambda t: 2.0 * math.exp(math.log(1250.0) * min(1.2, (t - tb) / ramp))  # noqa
        ev = sim.port_ev.setdefault((n, p), [])
        for t in np.arange(tb, t0 + dur, 5.0):
            k = int(rng.poisson(rate(t) / 6.0))
            if k:
                ev.append((float(t), "symbol_errors", k, tag))
            if rate(t) > 300:
                j = int(rng.poisson(rate(t) / 180.0))
                if j:
                    ev.append((float(t), "rcv_errors", j, tag))
        if not ev:
            ev.append((tb, "symbol_errors", 1, tag))
        sev = lambda t: min(1.0, rate(t) / 2500.0)  # noqa: E731
        A.comm.append((tb + ramp * 0.5, t0 + dur + 60,
                       lambda r, t: 1.0 + 0.2 * sev(t) + (
                           float(r.uniform(0.25, 0.7)) if r.random() < 0.1 * sev(t) else 0.0),
                       tag))
        faults.append({"fault_id": tag, "kind": "network", "cause": "nic", "attributable": True,
                       "scope": {"level": "nic", "node": names[n], "nic": f"mlx5_{p}",
                                 "port": 1}})
        loader_job, loader_nodes = B, b_nodes
        dark = None
    # a node's local NVMe failing: its data loader stalls (~0.1-3 s, ever more often); its
    # ranks compute on time, the rest wait in the all-reduce -- slow in neither part
    n = int(rng.choice(loader_nodes))
    tag = f"nvme-{names[n]}"
    tl = at(0.2, 0.45)

    def stall(r, t, tl=tl):
        grow = min(1.0, (t - tl) / 420.0)
        if r.random() >= 0.12 + 0.5 * grow:
            return 0.0
        return float(min(3000.0, r.lognormal(math.log(300.0 * (1 + 2.0 * grow)), 0.5)))
    loader_job.stalls.append((n, tl, stall, tag))
    faults.append({"fault_id": tag, "kind": "slow_node", "cause": "unknown",
                   "attributable": False, "scope": {"level": "node", "node": names[n]}})
    for spec, nodes in ((A, a_nodes), (B, b_nodes)):
        sim.run(spec, Segment(t0 + float(rng.uniform(0, 1.5)), t0 + dur, nodes,
                              int(rng.integers(20000, 90000))))
    if dark:
        n, p, s0, s1 = dark
        sim.traffic[n, p, s0:s1 + 1] = 0.0
    sim.thermal(30.0)
    sim.nic(30.0)
    sim.ecc(30.0)
    return {"format": "slurm", "text": world.FABRIC_TOPOLOGY}, sim, faults, effects


def sched(seed: int, minutes: float = 20.0):
    rng = np.random.default_rng([22, 2, seed])
    t0 = EPOCH + seed * 86400.0 + 43200.0 + float(rng.uniform(0, 3600))
    dur = minutes * 60.0
    end = t0 + dur
    names = [f"sx{i:02d}" for i in range(1, 17)]
    sim = Sim(rng, t0, dur, names, roce=True)
    at = lambda a, b: t0 + dur * float(rng.uniform(a, b))  # noqa: E731
    even = seed % 2 == 0
    faults, effects = [], []
    restart_cold = (3.0, 1.6, 1.2, 1.05)

    def saves(spec, every, extra):
        t = t0 + float(rng.uniform(40, every))
        while t < end:
            spec.saves.append((t, float(rng.uniform(*extra)), 1, False))
            effects.append(_effect("checkpoint-save", {"job": spec.job}, t, t + 30,
                                   "synchronous save: one step +5-9 s on every rank"))
            t += every * float(rng.uniform(0.9, 1.1))

    def resume(res, seg):
        return (res["save_steps"][-1] + 1) if res["save_steps"] else seg.step0 - int(
            rng.integers(40, 200))

    def restart(members, a, b):
        for n in members:
            sim.set_load(n, slice(None), a + 3.0, b, 0.15)
    # el-a: an elastic job (torchrun --nnodes=4:8), TP8 x DP8 on sx01-08
    E = Spec("el-a", "research", tp=8, pp=1, compute_ms=(1300.0,), comm_ms=420.0,
             port_bytes_s=8e9, checksum=True, loss=True)
    saves(E, float(rng.uniform(200, 280)), (5000.0, 8000.0))
    td = at(0.18, 0.26)
    drained = int(rng.integers(0, 8))
    seg1 = Segment(t0 + 0.5, td, list(range(8)), int(rng.integers(30000, 60000)))
    r1 = sim.run(E, seg1)
    m2 = [n for n in range(8) if n != drained]
    rng.shuffle(m2)
    b2 = td + float(rng.uniform(25, 60))
    restart(m2, td, b2)
    tg = at(0.38, 0.46)
    seg2 = Segment(b2, tg, m2, resume(r1, seg1), 1, restart_cold)
    r2 = sim.run(E, seg2)
    m3 = m2 + [15]
    rng.shuffle(m3)
    b3 = tg + float(rng.uniform(25, 60))
    restart(m3, tg, b3)
    effects += [
        _effect("elastic-shrink", {"job": "el-a"}, td, b2 + 90,
                "the operator drains a node; torchrun re-rendezvous on 7 nodes, new dp_ranks, "
                "from the last checkpoint (step numbers repeat)"),
        _effect("drained-idle", {"node": names[drained]}, td, end, "drained, idle"),
        _effect("elastic-grow", {"job": "el-a"}, tg, b3 + 90,
                "the spare sx16 joins; re-rendezvous on 8 nodes, new dp_ranks, rewind"),
        _effect("elastic-grow", {"node": "sx16"}, tg, b3 + 90, "the spare joins el-a")]
    if even:
        # XID 119 (GSP RPC timeout) hangs one GPU: el-a blocks in NCCL until its watchdog
        # (150-240 s), torchrun restarts without the node; the GPU answers nothing again
        tx = max(at(0.58, 0.66), b3 + 90)
        n = int(rng.choice([m for m in m3 if m != 15]))
        g = int(rng.integers(8))
        tag = f"gsp-{names[n]}-g{g}"
        seg3 = Segment(b3, tx, m3, resume(r2, seg2), 2, restart_cold)
        r3 = sim.run(E, seg3)
        w = float(rng.uniform(150, 240))
        for m in m3:
            sim.set_load(m, slice(None), tx, tx + w, 0.45)
        sim.xid(tx, n, g, 119, tag)
        sim.xid(tx + float(rng.uniform(25, 60)), n, g, 119, tag)
        sim.silent[(n, g)] = tx + 1.0
        sim.node_tags.setdefault(n, []).append((tx, tag))
        m4 = [m for m in m3 if m != n]
        rng.shuffle(m4)
        b4 = tx + w + float(rng.uniform(30, 60))
        restart(m4, tx + w, b4)
        sim.run(E, Segment(b4, end, m4, resume(r3, seg3), 3, restart_cold))
        effects.append(_effect("nccl-watchdog-teardown", {"job": "el-a"}, tx, b4 + 90,
                               "el-a hung behind the GPU, killed by its watchdog, restarted "
                               "without the node (the fault is the GPU's)"))
        faults.append({"fault_id": tag, "kind": "hardware", "cause": "gpu_hardware",
                       "attributable": True, "scope": {"level": "gpu", "node": names[n],
                                                       "gpu": g}})
    else:
        # a mercurial GPU: from 55-70 % its rank's parameters differ from its DP peers'
        n = int(rng.choice([m for m in m3 if m != 15]))
        g = int(rng.integers(8))
        tag = f"sdc-{names[n]}-g{g}"
        E.sdc.append((n, g, max(at(0.55, 0.7), b3 + 60), tag))
        sim.run(E, Segment(b3, end, m3, resume(r2, seg2), 2, restart_cold))
        faults.append({"fault_id": tag, "kind": "sdc", "cause": "gpu_hardware",
                       "attributable": True, "scope": {"level": "gpu", "node": names[n],
                                                       "gpu": g}})
    # lp-b (low priority) on sx09-12 is preempted; hp-c (another tenant) takes the nodes
    L = Spec("lp-b", "batch", tp=8, pp=1, compute_ms=(880.0,), comm_ms=330.0,
             port_bytes_s=6e9)
    tp_ = at(0.34, 0.46)
    kill = {n: tp_ + float(rng.uniform(0, 2.0)) for n in range(8, 12)}
    mark = len(sim.recs)
    sim.run(L, Segment(t0 + float(rng.uniform(0, 1)), tp_ + 2.0, list(range(8, 12)),
                       int(rng.integers(1000, 9000))))
    sim.recs[mark:] = [r for r in sim.recs[mark:]
                       if r[2]["ts"] <= kill[names.index(r[2]["node"])]]
    for n, k in kill.items():
        sim.set_load(n, slice(None), k, k + 20, 0.0)
    launch = max(kill.values()) + float(rng.uniform(3, 15))
    h_begin = launch + float(rng.uniform(40, 90))
    for n in range(8, 12):
        sim.set_load(n, slice(None), launch, h_begin, 0.15)
    H = Spec("hp-c", "prod", tp=4, pp=1, compute_ms=(1000.0,), comm_ms=300.0,
             port_bytes_s=7e9, checksum=True, loss=True)
    saves(H, float(rng.uniform(260, 340)), (4000.0, 6000.0))
    H.saves = [s for s in H.saves if s[0] > h_begin + 120]
    effects[:] = [e for e in effects if e["effect"] != "checkpoint-save" or e["scope"].get(
        "job") != "hp-c" or e["start_ts"] > h_begin + 120]     # (after the freeze: see README)
    effects += [
        _effect("preemption", {"job": "lp-b"}, tp_, tp_ + 2.0,
                "the scheduler preempts the low-priority job mid-step: its last step "
                "reported by some nodes only, its GPUs idle"),
        _effect("node-reuse", {"job": "hp-c"}, launch, h_begin + 150,
                "another tenant's job on the same GPUs within seconds, cold start "
                "(step 0 ~30 s: compile)")]
    for n in range(8, 12):
        effects.append(_effect("preemption", {"node": names[n]}, tp_, h_begin + 150,
                               "preempted, reused by hp-c"))
    # a GPU's correctable errors climb under lp-b, rows remap (XID 63, pending) and, under
    # hp-c, a remap fails (XID 64, failure, reset asked)
    n, g = int(rng.integers(8, 12)), int(rng.integers(8))
    tag = f"remap-{names[n]}-g{g}"
    te = tp_ - float(rng.uniform(120, 240))
    tf = min(h_begin + float(rng.uniform(150, 330)), end - 90.0)
    ev = sim.gpu_ev.setdefault((n, g), [])
    ev.append((te, "sbe_volatile", int(rng.integers(1, 4)), tag))
    for t in np.arange(te + 10, end, 10.0):
        lam = 0.3 + 8.0 * min(1.0, (t - te) / max(1.0, tf - te))
        k = int(rng.poisson(lam))
        if k:
            ev.append((float(t), "sbe_volatile", k, tag))
    for t in sorted(rng.uniform(te + 60, tf - 30, int(rng.integers(2, 4)))):
        sim.xid(float(t), n, g, 63, tag)
        ev.append((float(t), "row_remap_pending", True, tag))
    sim.xid(tf, n, g, 64, tag)
    ev += [(tf, "row_remap_failure", True, tag), (tf, "recovery_action", "gpu_reset", tag)]
    sim.run(H, Segment(h_begin, end, list(range(8, 12)), 0, 0,
                       (28.0, 2.2, 1.6, 1.3, 1.15, 1.05, 1.02)))
    faults.append({"fault_id": tag, "kind": "hardware", "cause": "gpu_memory",
                   "attributable": True, "scope": {"level": "gpu", "node": names[n], "gpu": g}})
    # ft-d: steady TP8 x DP3 on sx13-15
    D = Spec("ft-d", "research", tp=8, pp=1, compute_ms=(1500.0,), comm_ms=450.0,
             port_bytes_s=8e9, checksum=True)
    saves(D, float(rng.uniform(300, 420)), (6000.0, 9000.0))
    sim.run(D, Segment(t0 + float(rng.uniform(0, 1)), end, [12, 13, 14],
                       int(rng.integers(5000, 50000))))
    # a healthy GPU's occasional corrected error
    for _ in range(2):
        m, q = int(rng.choice([12, 13, 14])), int(rng.integers(8))
        for t in rng.uniform(t0 + 30, end - 30, int(rng.integers(1, 3))):
            sim.gpu_ev.setdefault((m, q), []).append((float(t), "sbe_volatile", 1, None))
            effects.append(_effect("sbe-trickle", {"node": names[m]}, float(t), float(t) + 60,
                                   "one corrected error, no remap"))
    sim.thermal(10.0)
    sim.nic(10.0)
    sim.ecc(30.0)
    return {"format": "faultline", "text": world.SCHED_TOPOLOGY}, sim, faults, effects


STORIES = {"fabric": fabric, "sched": sched}
