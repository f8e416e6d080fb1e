"""blind24's two stories -- time, churn and drift -- every choice drawn from the seed.

`drift` (faultline topology, rail-optimized; thermal and ports 10 s, ECC 30 s): 16 H100 nodes.
pt-dense (TP4 x DP24, 96 ranks on hx-00..11) runs all along; ft-elastic (pure DP on hx-12..15)
loses hx-13 to its scheduler mid-run and takes it back later -- each time a 15-45 s re-rendezvous
with no steps, ranks renumbered densely (the node after the leaver takes its ranks), every
survivor's share of the fixed global batch x32/24 while it is away, the rejoined node's first
steps cold. Faults: a GPU whose draw creeps up (VRM / leakage ageing) until it sits at its 700 W
cap and gives up clock, its step time drifting up with it; a GPU whose compute drifts up 1.0-1.4 %
a minute with clock, power and temperature nominal (HBM ageing: nothing names it); a GPU computing
wrong once every 50-150 steps. Routine: a GPU ageing at 0.3-0.5 % per 10 min (below anything
worth a page), one node's clock stepped 2-4.2 s back by NTP and later forward, a bad batch on
every replica at once, saves.

`churn` (a plain Slurm topology.conf; every collector 30 s): 20 A100 nodes. pt-big (TP2 x PP2 x
DP16 on gn001-008, eval passes with no steps) beside a hyper-parameter sweep churning 1-2-node
jobs of 2-7 minutes on gn009-016 (cold starts, steep loss curves, a new job on a node seconds
after the last one ends), and inference servers on gn017-020 (no steps, bursty power). Faults: a
sweep node's GPU whose HBM runs hot (0x20 under every job that lands on it, cool between jobs); an
inference GPU whose die heats too fast (0x20 / 0x40 in bursts only); pt-big's GPU computing wrong
now and then. Routine: the churn, the bursts (0x4 at their peaks), the eval passes, a stage's
imbalance, a bad batch on every replica, one node's clock stepped by NTP.
"""

from __future__ import annotations

import random

from bench.blind24.sim import (
    Fleet,
    GpuSpec,
    Job,
    Label,
    Member,
    Recorder,
    Sdc,
    Segment,
    collectors,
    run_job,
)
from bench.blind24.world import A100, H100, Fault, churn_topology, drift_topology

EPOCH = 1_796_500_000.0
STORIES = ("drift", "churn")


def _fx(effects: list, name: str, scope: dict, a: float, b: float) -> None:
    effects.append({"effect": name, "scope": scope, "start_ts": round(a, 3),
                    "end_ts": round(b, 3), "expect": "pages nobody"})


def _step_ts(rec: Recorder, job: str, step: int) -> float | None:
    ts = [v["ts"] for _, _, tp, v in rec.recs if tp == "telemetry.step" and v["job"] == job
          and v["step"] == step]
    return min(ts) if ts else None


def _gpus(rng, nodes, board, inlet, load_w):
    out = []
    for n in nodes:
        base = rng.uniform(*inlet)
        out += [GpuSpec(n, g, board, base + rng.uniform(-0.5, 1.5), rng.uniform(*load_w),
                        rng.random()) for g in range(8)]
    return out


def _pick(rng, pool, taken):
    k = rng.choice([p for p in pool if p[0] not in taken])
    taken.add(k[0])
    return k


def drift(seed: int, minutes: float):
    rng = random.Random(f"blind24/drift/{seed}")
    T = minutes * 60.0
    epoch = EPOCH + seed * 86400.0
    nodes = [f"hx-{i:02d}" for i in range(16)]
    gpus = _gpus(rng, nodes, H100, (24.0, 29.0), H100.load_w)
    fleet = Fleet(gpus, int(T) + 120)
    rec = Recorder(epoch, rng, "drift-h100")
    labels, effects, slow = [], [], {}
    pt_nodes, el_nodes = nodes[:12], nodes[12:]
    members = [Member(n, g, 8 * i + g, (8 * i + g) % 4, 0, (8 * i + g) // 4)
               for i, n in enumerate(pt_nodes) for g in range(8)]
    pt = Job("pt-dense", "lm", [Segment(-rng.uniform(300, 900), T + 100, members)],
             compute_ms=rng.uniform(1150, 1300), other_ms=25.0, allreduce_ms=230.0,
             intensity=0.97, first_step=rng.randint(12000, 40000), loss=(2.05, 0.4, 20000.0))
    step_s = (pt.compute_ms + 25.0 + 235.0) / 1000.0
    t = rng.uniform(100, 300)
    while t < T:
        pt.saves.append((t, rng.uniform(8.0, 14.0)))
        t += rng.uniform(360, 420)
    t_bad = rng.uniform(0.4, 0.7) * T
    pt.bad_batch = pt.first_step + int((t_bad - pt.segments[0].t_from) / step_s)
    pt.bad = (rng.uniform(3.0, 6.0), rng.uniform(8.0, 30.0))
    pool = [((m.node), m) for m in members]
    taken: set = set()
    # faults: a leaking board, an ageing HBM, an intermittent SDC (three nodes); routine ageing
    _, leak = _pick(rng, pool, taken)
    _, age = _pick(rng, pool, taken)
    _, bad = _pick(rng, pool, taken)
    _, old = _pick(rng, pool, taken)
    g = fleet.gpus[(leak.node, leak.gpu)]
    g.fault = Fault("leak", rng.uniform(0.25, 0.45) * T, rate=rng.uniform(0.04, 0.06) / 60.0)
    g.label = Label(f"leak-{leak.node}-g{leak.gpu}", "slow_node", "power",
                    {"level": "gpu", "node": leak.node, "gpu": leak.gpu}, True)
    labels.append(g.label)
    lab = Label(f"age-{age.node}-g{age.gpu}", "slow_node", "unknown",
                {"level": "gpu", "node": age.node, "gpu": age.gpu}, False)
    labels.append(lab)
    slow[(age.node, age.gpu)] = ("age", rng.uniform(0.2, 0.45) * T,
                                 rng.uniform(1.0, 1.4) / 100.0 / 60.0, lab)
    rate = rng.uniform(0.003, 0.005) / 600.0
    slow[(old.node, old.gpu)] = ("ageing", 0.0, rate, None)
    _fx(effects, f"slow ageing {rate * 600 * 100:.2f} % per 10 min",
        {"node": old.node, "gpu": old.gpu}, epoch, epoch + T)
    sdc_lab = Label(f"sdc-{bad.node}-g{bad.gpu}", "sdc", "gpu_hardware",
                    {"level": "gpu", "node": bad.node, "gpu": bad.gpu}, True)
    labels.append(sdc_lab)
    sdc = Sdc(bad.node, bad.gpu, rng.uniform(0.08, 0.3) * T, sdc_lab, random.Random(rng.random()))
    # NTP steps the leaking node's clock back, later forward
    t1 = rng.uniform(0.2, 0.35) * T
    t2 = t1 + rng.uniform(150, 360) * min(1.0, minutes / 18.0)
    d = rng.uniform(2.0, 4.2)
    rec.offsets[leak.node] = [(t1, t2, -d)]
    _fx(effects, f"ntp stepped the clock {d:.1f} s back, then forward", {"node": leak.node},
        epoch + t1 - d, epoch + t2)
    # the elastic job
    t_leave = rng.uniform(0.28, 0.40) * T
    t_back = t_leave + rng.uniform(20, 45)
    t_join = rng.uniform(0.60, 0.70) * T
    t_go = t_join + rng.uniform(15, 30)

    def dense(order):
        return [Member(n, g, 8 * i + g) for i, n in enumerate(order) for g in range(8)]

    el = Job("ft-elastic", "tune", [
        Segment(-rng.uniform(100, 500), t_leave, dense(el_nodes)),
        Segment(t_back, t_join, dense([el_nodes[0]] + el_nodes[2:]), work=32 / 24),
        Segment(t_go, T + 100, dense([el_nodes[0]] + el_nodes[2:] + [el_nodes[1]]),
                cold={el_nodes[1]: (2.6, 1.7, 1.25, 1.1)})],
        compute_ms=rng.uniform(600, 700), other_ms=18.0, allreduce_ms=120.0, intensity=0.93,
        first_step=rng.randint(2000, 6000), loss=(1.2, 0.3, 3000.0))
    _fx(effects, "elastic shrink: hx-13 leaves, ranks renumbered, x32/24 per rank",
        {"job": el.name}, epoch + t_leave, epoch + t_join)
    _fx(effects, "elastic grow: hx-13 rejoins as ranks 24-31, cold first steps",
        {"job": el.name}, epoch + t_join, epoch + t_go + 30)
    _fx(effects, "scheduler reclaimed the node (idle)", {"node": el_nodes[1]},
        epoch + t_leave, epoch + t_go)
    # loads
    for job in (pt, el):
        for seg in job.segments:
            for m in seg.members:
                fleet.busy((m.node, m.gpu), seg.t_from, seg.t_to, job.intensity)
    for a, b in ((t_leave, t_back), (t_join, t_go)):
        for n in el_nodes:
            for gg in range(8):
                if n != el_nodes[1]:
                    fleet.busy((n, gg), a, b, 0.1)
    for ts_, dur in pt.saves:
        for m in members:
            fleet.busy((m.node, m.gpu), ts_, ts_ + dur, 0.15)
        _fx(effects, "synchronous checkpoint save", {"job": pt.name}, epoch + ts_,
            epoch + ts_ + dur + 5)
    fleet.simulate()
    run_job(pt, fleet, rec, rng, T, slow, sdc)
    run_job(el, fleet, rec, rng, T, slow)
    bts = _step_ts(rec, pt.name, pt.bad_batch)
    if bts is not None:
        _fx(effects, "bad batch on every replica (loss and grad-norm spike, not SDC)",
            {"job": pt.name}, bts - 2, bts + 8)
    collectors(fleet, rec, rng, {n: {"nics": [f"mlx5_{k}" for k in range(8)], "gbps": 400.0}
                                 for n in nodes}, 10.0, 30.0, 10.0, T)
    return {"format": "faultline", "text": drift_topology()}, rec, labels, effects


def _sweeps(rng, nodes, T):
    """The sweep's schedule: (name, nodes, start, end), each node busy with one job at a time."""
    free = {n: rng.uniform(-200.0, 40.0) for n in nodes}
    jobs, k = [], 0
    while True:
        size = 2 if rng.random() < 0.3 else 1
        order = sorted(nodes, key=lambda n: (free[n], n))
        pick = order[:size]
        start = max(free[n] for n in pick) + rng.uniform(3.0, 40.0)
        if start >= T - 30:
            break
        end = start + rng.uniform(120.0, 420.0)
        jobs.append((f"hp-{k:03d}", pick, start, end))
        for n in pick:
            free[n] = end
        k += 1
    return jobs


def churn(seed: int, minutes: float):
    rng = random.Random(f"blind24/churn/{seed}")
    T = minutes * 60.0
    epoch = EPOCH + 3600.0 + seed * 86400.0
    nodes = [f"gn{i:03d}" for i in range(1, 21)]
    big_nodes, sweep_nodes, inf_nodes = nodes[:8], nodes[8:16], nodes[16:]
    gpus = (_gpus(rng, big_nodes + sweep_nodes, A100, (26.0, 31.0), A100.load_w)
            + _gpus(rng, inf_nodes, A100, (26.0, 31.0), (370.0, 420.0)))
    fleet = Fleet(gpus, int(T) + 120)
    rec = Recorder(epoch, rng, "churn-a100")
    labels, effects, slow = [], [], {}
    members = []
    for r in range(64):
        members.append(Member(big_nodes[r // 8], r % 8, r, r % 2, (r // 2) % 2, r // 4))
    big = Job("pt-big", "lm", [Segment(-rng.uniform(300, 900), T + 100, members)],
              compute_ms=rng.uniform(1400, 1600), other_ms=30.0, allreduce_ms=280.0,
              intensity=0.95, first_step=rng.randint(5000, 20000), loss=(2.3, 0.5, 8000.0),
              stage_extra=rng.uniform(0.04, 0.08))
    t = rng.uniform(60, 240)
    while t < T:
        dur = rng.uniform(25, 40)
        big.pauses.append((t, t + dur))
        _fx(effects, "eval pass (no steps)", {"job": big.name}, epoch + t, epoch + t + dur + 5)
        t += rng.uniform(300, 360)
    step_s = (big.compute_ms * (1 + big.stage_extra) + 30 + 290) / 1000.0
    t_bad = rng.uniform(0.4, 0.7) * T
    busy_s = t_bad - big.segments[0].t_from - sum(b - a for a, b in big.pauses if b < t_bad)
    big.bad_batch = big.first_step + int(busy_s / step_s)
    big.bad = (rng.uniform(3.0, 6.0), rng.uniform(8.0, 30.0))
    _fx(effects, "pipeline stage 1 slower (its loss head)", {"job": big.name}, epoch,
        epoch + T)
    # faults
    hot_node = rng.choice(sweep_nodes)
    hot = fleet.gpus[(hot_node, rng.randrange(8))]
    hot.fault = Fault("memhot", rng.uniform(0.1, 0.3) * T, k=rng.uniform(2.1, 2.5))
    hot.label = Label(f"hbm-{hot.node}-g{hot.gpu}", "slow_node", "thermal",
                      {"level": "gpu", "node": hot.node, "gpu": hot.gpu}, True)
    labels.append(hot.label)
    tim_node = rng.choice(inf_nodes)
    tim = fleet.gpus[(tim_node, rng.randrange(8))]
    tim.fault = Fault("die", rng.uniform(0.15, 0.35) * T, k=rng.uniform(1.9, 2.2))
    tim.label = Label(f"tim-{tim.node}-g{tim.gpu}", "hardware", "thermal",
                      {"level": "gpu", "node": tim.node, "gpu": tim.gpu}, True)
    labels.append(tim.label)
    bad = rng.choice(members)
    sdc_lab = Label(f"sdc-{bad.node}-g{bad.gpu}", "sdc", "gpu_hardware",
                    {"level": "gpu", "node": bad.node, "gpu": bad.gpu}, True)
    labels.append(sdc_lab)
    sdc = Sdc(bad.node, bad.gpu, rng.uniform(0.08, 0.3) * T, sdc_lab, random.Random(rng.random()))
    ntp = tim_node if seed % 2 == 0 else bad.node
    t1 = rng.uniform(0.2, 0.45) * T
    t2 = t1 + rng.uniform(120, 300) * min(1.0, minutes / 18.0)
    d = rng.uniform(2.0, 4.2)
    rec.offsets[ntp] = [(t1, t2, -d)]
    _fx(effects, f"ntp stepped the clock {d:.1f} s back, then forward", {"node": ntp},
        epoch + t1 - d, epoch + t2)
    # loads: the big job, the sweep, the inference bursts
    for m in members:
        fleet.busy((m.node, m.gpu), big.segments[0].t_from, T + 100, big.intensity)
        for a, b in big.pauses:
            fleet.busy((m.node, m.gpu), a, b, 0.55)
    sweeps = []
    for name, on, start, end in _sweeps(rng, sweep_nodes, T):
        c = rng.uniform(250.0, 1100.0)
        mem = [Member(n, g, 8 * i + g) for i, n in enumerate(on) for g in range(8)]
        job = Job(name, "sweep", [Segment(start, end, mem)], compute_ms=c,
                  other_ms=rng.uniform(10, 40), allreduce_ms=c * (0.14 if len(on) > 1 else 0.06),
                  intensity=rng.uniform(0.7, 1.0), loss=(2.6, 8.0, rng.uniform(40, 120)),
                  cold_steps=(rng.uniform(3.0, 8.0), 1.6, 1.3, 1.15, 1.05))
        for m in mem:
            fleet.busy((m.node, m.gpu), start, end, job.intensity)
        sweeps.append(job)
        _fx(effects, f"sweep job on {len(on)} node(s): cold start, steep loss, then ends",
            {"job": name}, epoch + start, epoch + end)
    for n in inf_nodes:
        t = rng.uniform(-30, 0)
        level = [rng.uniform(0.12, 0.3) for _ in range(8)]
        while t < T + 100:
            quiet = rng.uniform(15, 110)
            for gg in range(8):
                fleet.busy((n, gg), t, t + quiet, level[gg])
            t += quiet
            burst, peak = rng.uniform(8, 70), rng.uniform(0.75, 1.0)
            for gg in range(8):
                fleet.busy((n, gg), t, t + burst, peak * rng.uniform(0.95, 1.0))
            t += burst
        _fx(effects, "inference server: bursty power, no steps (0x4 at the peaks)",
            {"node": n}, epoch, epoch + T)
    fleet.simulate()
    run_job(big, fleet, rec, rng, T, slow, sdc)
    for job in sweeps:
        run_job(job, fleet, rec, rng, T, slow)
    bts = _step_ts(rec, big.name, big.bad_batch)
    if bts is not None:
        _fx(effects, "bad batch on every replica (loss and grad-norm spike, not SDC)",
            {"job": big.name}, bts - 2, bts + 8)
    collectors(fleet, rec, rng, {n: {"nics": [f"mlx5_{k}" for k in range(4)], "gbps": 200.0}
                                 for n in nodes}, 30.0, 30.0, 30.0, T)
    return {"format": "slurm", "text": churn_topology()}, rec, labels, effects


def build(story: str, seed: int, minutes: float):
    """(topology record value, recorder, labels, effects) of one story and seed."""
    return {"drift": drift, "churn": churn}[story](seed, minutes)
