"""blind35's two stories, every choice drawn from the seed: ``numerics`` and ``corners``."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from bench.blind35 import world
from bench.blind35.train import Job, Rank, Step, emit, schedule

STORIES = ("numerics", "corners")
EVAL_LOAD, SAVE_LOAD = 0.35, 0.15


def _loads(jobs: list[tuple[Job, list[Step]]]) -> dict[str, world.Load]:
    """Each node's load: training between pauses, evaluation passes, saves."""
    loads: dict[str, world.Load] = {}
    for job, steps in jobs:
        nodes = sorted({r.node for r in job.ranks})
        segs: list[tuple[float, float, float]] = []
        run = steps[0].begin
        for i, st in enumerate(steps):
            save = job.saves.get(st.step, 0.0)
            pause = job.evals.get(st.step, 0.0)
            last = i == len(steps) - 1
            if save or pause or last:
                segs.append((run, st.end - save, 1.0))
                if save:
                    segs.append((st.end - save, st.end, SAVE_LOAD))
                if pause:
                    segs.append((st.end, st.end + pause, EVAL_LOAD))
                run = st.end + pause
        for n in nodes:
            load = loads.setdefault(n, world.Load())
            for seg in segs:
                load.add(*seg)
    return loads


def _every(rng: random.Random, lo: int, hi: int, first: int, last: int) -> list[int]:
    out, s = [], first + rng.randint(lo, hi)
    while s < last:
        out.append(s)
        s += rng.randint(lo, hi)
    return out


def _routine(job: Job, rng: random.Random, n: int, hard_every: int) -> None:
    """Hard samples: one rank's local norm x1.8-2.6 for one step, about every ``hard_every``
    steps somewhere in the job."""
    for s in range(3, n):
        if rng.random() < 1.0 / hard_every:
            job.hard[(s, rng.choice(job.ranks).rank)] = rng.uniform(1.8, 2.6)


def _span(stamps: dict[tuple[int, int], float], keys) -> tuple[float, float]:
    ts = [stamps[k] for k in keys if k in stamps]
    return min(ts), max(ts)


def _ecc_span(log: world.Log, node: str, gpu: int, changed: Callable[[dict], bool]
              ) -> tuple[float, float]:
    rows = [v for _, _, tp, v in log.records if tp == "telemetry.ecc" and v["node"] == node
            and v["gpu"] == gpu]
    first = min(v["ts"] for v in rows if changed(v))
    return first, max(v["ts"] for v in rows)


def numerics(seed: int, minutes: float) -> world.Log:
    """A dense fp16 job from its first step: warm-up, overflow skips, a logit blow-up, a bad
    shard, evaluation passes, a save; a bad HBM row, one GPU's drifting kernel, optimizer state
    corrupted once and spread by the all-gather."""
    rng = random.Random(35_000 + seed)
    nodes = [f"nm-{i:02d}" for i in range(1, 9)]
    log = world.Log(seed, world.topology("blind35-numerics", nodes))
    t0 = 1_797_000_000.0 + seed * 100_003.0
    t_end = t0 + minutes * 60.0
    ranks = []
    for i, node in enumerate(nodes):
        for g in range(8):
            pp, tp, dp = i // 4, g % 4, (i % 4) * 2 + g // 4
            ranks.append(Rank(pp * 32 + dp * 4 + tp, node, g, tp, pp, dp))
    scale = {(tp, pp): rng.uniform(0.7, 1.2) for tp in range(4) for pp in range(2)}
    scale[(0, 0)] = rng.uniform(1.3, 1.6)           # the embedding's shard
    job = Job("dense-a", "nx-a", "llm", sorted(ranks, key=lambda r: r.rank),
              compute_ms=rng.uniform(880, 960), comm_ms=rng.uniform(160, 220),
              loader_ms=rng.uniform(6, 10), t_first=t0 + rng.uniform(5, 20),
              stage_x=(1.0, rng.uniform(1.02, 1.05)), loss0=rng.uniform(9.0, 10.5),
              loss_end=rng.uniform(2.3, 2.8), loss_tau=rng.uniform(150, 250),
              gn=rng.uniform(0.6, 1.1), warm=rng.uniform(4.0, 8.0),
              warm_tau=rng.uniform(40, 70), group_scale=scale)
    n = int(minutes * 60.0 / 1.15)                  # about how many steps fit
    for s in _every(rng, 250, 320, 0, n):
        job.evals[s] = rng.uniform(25, 40)
    job.saves[int(n * rng.uniform(0.60, 0.68))] = rng.uniform(8, 12)
    groups = sorted(scale)
    late = range(min(160, n), n)
    for s in sorted(rng.sample(range(5, 150), rng.randint(4, 6))) + sorted(
            rng.sample(late, min(len(late), rng.randint(1, 3)))):
        job.skips[s] = set(rng.sample(groups, rng.randint(1, 3)))
    spike_at, spike_len = int(n * rng.uniform(0.35, 0.50)), rng.randint(4, 9)
    l_peak, g_peak = rng.uniform(1.4, 2.2), rng.uniform(15, 60)
    for k in range(spike_len + 25):
        up = min(1.0, (k + 1) / 3.0) if k < spike_len else math.exp(-(k - spike_len) / 6.0)
        job.spikes[spike_at + k] = (1 + (l_peak - 1) * up, 1 + (g_peak - 1) * up)
    shard_at, shard_dp = int(n * rng.uniform(0.18, 0.28)), rng.randrange(8)
    for k in range(rng.randint(2, 4)):
        job.shards[shard_at + k] = (shard_dp, rng.uniform(1.8, 3.0), rng.uniform(4, 10))
    _routine(job, rng, n, 40)
    # faults: three distinct nodes
    hbm_node, drift_node = rng.sample(nodes, 2)
    drift_rank = rng.choice([r for r in job.ranks if r.node == drift_node])
    drift_from = int(n * rng.uniform(0.25, 0.40))
    job.drift[drift_rank.rank] = (drift_from, rng.uniform(1.18, 1.35))
    prop_from = int(n * rng.uniform(0.55, 0.70))
    job.prop = (prop_from, rng.uniform(1.25, 1.4), rng.uniform(3.0, 6.0))

    steps = schedule(job, rng, t_end)
    stamps = emit(job, steps, log, rng)
    loads = _loads([(job, steps)])
    gpus = [world.Gpu(n_, g, rng.uniform(-2, 2), rng.choice((0, 0, 0, 0, 1, 3))) for n_ in nodes
            for g in range(8)]
    hbm_gpu = rng.randrange(8)
    t_sbe = t0 + minutes * 60.0 * rng.uniform(0.12, 0.25)
    r0, td = rng.uniform(0.03, 0.06), rng.uniform(80, 130)

    def sbe(t: float) -> int:
        return 0 if t < t_sbe else int(r0 * td / math.log(2) * (2 ** ((t - t_sbe) / td) - 1))

    t_dbe = t0 + minutes * 60.0 * rng.uniform(0.62, 0.78)
    t_92 = next(t for t in (t_sbe + k for k in range(100_000)) if sbe(t) >= 200)
    xids = [(t_dbe, 48), (t_dbe + rng.uniform(1, 3), 63)]
    if t_92 < t_dbe:
        xids.insert(0, (t_92, 92))
    ecc = {(hbm_node, hbm_gpu): world.Ecc(sbe=sbe, dbe_at=t_dbe, xids=xids)}
    world.thermal_rows(log, rng, gpus, loads, t0, t_end)
    world.ecc_rows(log, rng, gpus, ecc, t0, t_end)
    world.nic_rows(log, rng, nodes, loads, t0, t_end)

    sbe0 = next(g.sbe0 for g in gpus if (g.node, g.gpu) == (hbm_node, hbm_gpu))
    span = _ecc_span(log, hbm_node, hbm_gpu,
                     lambda v: v.get("xid") is not None or v["sbe_volatile"] > sbe0)
    log.label(f"hbm-{hbm_node}-g{hbm_gpu}", "hardware", "gpu_memory",
              {"level": "gpu", "node": hbm_node, "gpu": hbm_gpu}, *span, True)
    last = steps[-1].step
    log.label(f"drift-{drift_node}-g{drift_rank.gpu}", "sdc", "unknown",
              {"level": "gpu", "node": drift_node, "gpu": drift_rank.gpu},
              *_span(stamps, [(s, drift_rank.rank) for s in range(drift_from, last + 1)]), False)
    log.label(f"prop-{job.name}", "sdc", "unknown", {"level": "job", "job": job.name},
              *_span(stamps, [(s, r.rank) for s in range(prop_from, last + 1)
                              for r in job.ranks]), False)

    scope = {"level": "job", "job": job.name}
    by_step = {st.step: st for st in steps}

    def at(s: int) -> float:
        return by_step[min(s, last)].end

    log.effect("lr-warm-up", scope, at(0), at(int(3 * job.warm_tau)))
    for s in job.skips:
        if s in by_step:
            log.effect("overflow-skip", scope, at(s), at(s))
    log.effect("attention-logit-blow-up", scope, at(spike_at), at(spike_at + spike_len + 25))
    log.effect("bad-data-shard", {"level": "replica", "job": job.name, "dp_rank": shard_dp},
               at(shard_at), at(max(job.shards)))
    for s in job.evals:
        if s in by_step:
            log.effect("evaluation-pass", scope, at(s), at(s) + job.evals[s])
    for s, x in job.saves.items():
        if s in by_step:
            log.effect("save", scope, at(s) - x, at(s))
    log.effect("hard-samples", scope, at(0), at(last))
    return log


def corners(seed: int, minutes: float) -> world.Log:
    """Two fp8 jobs mid-run: a rack's inlet warming, evaluation passes, overflow skips, amax
    spikes; a GPU wrong only when hot, one wrong only at its voltage corner (the first step
    after a pause), one whose local gradients overflow alone."""
    rng = random.Random(35_500 + seed)
    nodes = [f"nc-{i:02d}" for i in range(1, 9)]
    log = world.Log(seed, world.topology("blind35-corners", nodes))
    t0 = 1_797_050_000.0 + seed * 100_003.0
    t_end = t0 + minutes * 60.0
    dur = minutes * 60.0
    rb = [Rank((i * 4 + g // 2) * 2 + g % 2, node, g, g % 2, 0, i * 4 + g // 2)
          for i, node in enumerate(nodes[:4]) for g in range(8)]
    rc = [Rank(i * 8 + g, node, g, g, 0, i) for i, node in enumerate(nodes[4:]) for g in range(8)]
    jb = Job("fp8-b", "nx-b", "lab", sorted(rb, key=lambda r: r.rank),
             compute_ms=rng.uniform(620, 700), comm_ms=rng.uniform(110, 150),
             loader_ms=rng.uniform(4, 8), t_first=t0 + rng.uniform(2, 10),
             loss0=3.1, loss_end=rng.uniform(2.0, 2.3), loss_tau=3000.0, gn=rng.uniform(0.3, 0.5),
             warm=0.0, group_scale={(0, 0): rng.uniform(0.9, 1.1), (1, 0): rng.uniform(0.9, 1.1)})
    jc = Job("fp8-c", "nx-b", "lab", sorted(rc, key=lambda r: r.rank),
             compute_ms=rng.uniform(1600, 1900), comm_ms=rng.uniform(250, 350),
             loader_ms=rng.uniform(10, 20), t_first=t0 + rng.uniform(2, 10),
             loss0=2.6, loss_end=rng.uniform(1.7, 1.9), loss_tau=4000.0, gn=rng.uniform(0.2, 0.4),
             warm=0.0, group_scale={(tp, 0): rng.uniform(0.8, 1.2) for tp in range(8)})
    nb, nc = int(dur / 0.8), int(dur / 2.1)
    for s in _every(rng, 300, 400, 0, nb):
        jb.evals[s] = rng.uniform(20, 30)
    for s in _every(rng, 30, 45, 0, nc):
        jc.evals[s] = rng.uniform(15, 25)
    for s in rng.sample(range(10, nb), rng.randint(3, 5)):
        jb.skips[s] = {(rng.randrange(2), 0)}
    for s in rng.sample(range(5, nc), rng.randint(2, 3)):
        jc.skips[s] = {(tp, 0) for tp in rng.sample(range(8), rng.randint(1, 3))}
    amax = rng.sample(range(20, nb), rng.randint(3, 6))
    for s in amax:
        jb.spikes[s] = (1.0 + rng.uniform(0.0, 0.05), rng.uniform(2.0, 4.0))
    _routine(jb, rng, nb, 40)
    _routine(jc, rng, nc, 40)

    # the hot rack: the GPU wrong when hot sits in it; the non-finite rank on another rack
    rack = rng.randrange(2)
    hot_node = nodes[rack * 2 + rng.randrange(2)]
    hot_gpu = rng.randrange(8)
    nan_node = nodes[(1 - rack) * 2 + rng.randrange(2)]
    nan_rank = rng.choice([r for r in jb.ranks if r.node == nan_node])
    t_warm, ramp, warm_c = t0 + dur * rng.uniform(0.30, 0.45), rng.uniform(150, 240), \
        rng.uniform(7.5, 10.0)

    def inlet(t: float) -> float:
        return warm_c * min(1.0, max(0.0, (t - t_warm) / ramp))

    gpus = []
    for n_ in nodes:
        for g in range(8):
            hot = (n_, g) == (hot_node, hot_gpu)
            gpus.append(world.Gpu(n_, g, rng.uniform(5.0, 6.0) if hot else rng.uniform(-2, 2),
                                  rng.choice((0, 0, 0, 1)),
                                  inlet if n_ in nodes[rack * 2:rack * 2 + 2] else
                                  (lambda t: 0.0)))
    nan_from, nan_n = rng.uniform(0.20, 0.50), rng.randint(8, 14)
    vmin_node = rng.choice(nodes[4:])
    vmin_rank = rng.choice([r for r in jc.ranks if r.node == vmin_node])
    vmin_from = int(nc * rng.uniform(0.20, 0.35))

    sb = schedule(jb, rng, t_end)
    sc = schedule(jc, rng, t_end)
    loads = _loads([(jb, sb), (jc, sc)])
    # the overflowing rank: 8-14 steps from 20-50 % of the job on (the whole job skips them)
    nan_steps = sorted(rng.sample(range(int(len(sb) * nan_from), len(sb) - 1),
                                  min(nan_n, len(sb) - 1 - int(len(sb) * nan_from))))
    for s in nan_steps:
        jb.nonfinite.add((s, nan_rank.rank))
    # the hot GPU: wrong on 1 in 12-25 of the steps it ends above 81.5 C
    hot_g = next(g for g in gpus if (g.node, g.gpu) == (hot_node, hot_gpu))
    hot_rank = next(r for r in jb.ranks if (r.node, r.gpu) == (hot_node, hot_gpu))
    p_hot = 1.0 / rng.uniform(12, 25)
    hot_steps = [st.step for st in sb
                 if world.die_c(hot_g, loads[hot_node], st.end) > 81.5 and rng.random() < p_hot]
    if not hot_steps:       # a short log: its hottest step
        hot_steps = [max(sb, key=lambda st: world.die_c(hot_g, loads[hot_node], st.end)).step]
    for s in hot_steps:
        jb.flips.add((s, hot_rank.rank))
    # the voltage corner: the first step after a pause (the load's di/dt), 70 % of the time
    after = [s + 1 for s in sorted(jc.evals) if s + 1 >= vmin_from and s + 1 < len(sc)]
    vmin_steps = [s for s in after if rng.random() < 0.7] or after[:1] or [len(sc) - 1]
    for s in vmin_steps:
        jc.flips.add((s, vmin_rank.rank))
    stb = emit(jb, sb, log, rng)
    stc = emit(jc, sc, log, rng)
    world.thermal_rows(log, rng, gpus, loads, t0, t_end)
    world.ecc_rows(log, rng, gpus, {}, t0, t_end)
    world.nic_rows(log, rng, nodes, loads, t0, t_end)

    log.label(f"hot-{hot_node}-g{hot_gpu}", "sdc", "gpu_hardware",
              {"level": "gpu", "node": hot_node, "gpu": hot_gpu},
              *_span(stb, [(s, hot_rank.rank) for s in hot_steps]), True)
    log.label(f"vmin-{vmin_node}-g{vmin_rank.gpu}", "sdc", "gpu_hardware",
              {"level": "gpu", "node": vmin_node, "gpu": vmin_rank.gpu},
              *_span(stc, [(s, vmin_rank.rank) for s in vmin_steps]), True)
    log.label(f"nan-{nan_node}-g{nan_rank.gpu}", "sdc", "unknown",
              {"level": "gpu", "node": nan_node, "gpu": nan_rank.gpu},
              *_span(stb, [(s, nan_rank.rank) for s in nan_steps]), False)

    for job, steps in ((jb, sb), (jc, sc)):
        scope = {"level": "job", "job": job.name}
        by_step = {st.step: st for st in steps}
        for s, x in job.evals.items():
            if s in by_step:
                log.effect("evaluation-pass", scope, by_step[s].end, by_step[s].end + x)
        for s in job.skips:
            if s in by_step:
                log.effect("overflow-skip", scope, by_step[s].end, by_step[s].end)
        log.effect("hard-samples", scope, steps[0].end, steps[-1].end)
    for s in amax:
        st = next((x for x in sb if x.step == s), None)
        if st:
            log.effect("fp8-amax-spike", {"level": "job", "job": jb.name}, st.end, st.end)
    for n_ in nodes[rack * 2:rack * 2 + 2]:
        log.effect("rack-inlet-warming", {"level": "node", "node": n_}, t_warm, t_end)
    log.effect("warm-gpu-position", {"level": "node", "node": hot_node}, t0, t_end)
    return log


def build(story: str, seed: int, minutes: float) -> world.Log:
    """One story's log for ``seed``."""
    return {"numerics": numerics, "corners": corners}[story](seed, minutes)
