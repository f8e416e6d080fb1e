"""Mixture-of-experts training steps: expert-parallel groups doing an all-to-all every layer.

Every rank holds some experts; the router sends each token to its experts, so the work an EP
rank does in a step is the tokens its experts received. The all-to-all of every layer waits for
the group's most loaded member, and the pipeline and the data-parallel all-reduce wait for the
slowest group: the step ends together everywhere. ``compute_ms`` is a rank's own work (the
dense part alike on every rank, the expert part its share of tokens, a TP group at its slowest
member's pace); the rest of the step is waiting in collectives (``comm_ms``) but for the loader.

Token routing is workload: one hot expert per EP group at a time (+8-25 % of its rank's expert
work for tens to hundreds of steps, bounded by the capacity factor), a jitter every step, the
spread growing as the auxiliary loss drifts. A hot rank computes more and its local gradient is
larger; it is never a fault.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.blind33 import noise
from bench.blind34.world import Log


@dataclass(frozen=True)
class Rank:
    rank: int
    node: str
    gpu: int
    tp: int
    pp: int
    dp: int
    ep_group: tuple  # the EP group's id: ranks in one all-to-all
    tp_group: tuple  # ranks that wait for each other inside compute
    router: tuple = ()  # ranks that see the same tokens (a TP group): one routing share


One = Callable[[float], float]


@dataclass
class MoeJob:
    """One job's shape and the hooks the story's faults use."""

    name: str
    ranks: list[Rank]
    compute_ms: dict[int, float]      # a stage's mean compute at capacity factor 1.25
    expert_frac: float                # the expert FFN's share of compute
    a2a_ms: float                     # one step's all-to-all time on a healthy fabric
    reduce_ms: float                  # data-parallel all-reduce
    bubble_ms: float                  # pipeline bubble (0 without PP)
    loader_ms: float                  # time in neither (data loading)
    cov: float = 0.01                 # per-rank jitter (PAI noise), as a fraction
    hot_steps: tuple[int, int] = (20, 90)
    capacity: One = lambda ts: 1.25   # capacity factor: bounds a hot expert's extra work
    spread: One = lambda ts: 1.0      # the aux loss drifting: routing jitter x this
    slow: dict[int, One] = field(default_factory=dict)           # rank -> compute factor
    a2a_x: dict[tuple, One] = field(default_factory=dict)        # ep group -> all-to-all factor
    stall: Callable[[int], tuple[int, float] | None] = lambda step: None  # (rank, extra ms)
    grad_x: Callable[[int, int, float], float] = lambda rank, step, ts: 1.0
    bad_sum: Callable[[int, int, float], bool] = lambda rank, step, ts: False
    steps_out: list[tuple[int, float, float]] = field(default_factory=list)  # (step, t0, t1)


def _checksum(job: str, tp: int, pp: int, step: int, salt: str = "") -> str:
    return hashlib.sha1(f"{job}/{tp}/{pp}/{step}{salt}".encode()).hexdigest()[:16]


def run(log: Log, rng: random.Random, job: MoeJob, t_start: float, t_end: float,
        first_step: int, saves: Callable[[int], float]) -> list[tuple[float, float]]:
    """Write ``job``'s step records from ``t_start`` until a step would end past ``t_end``;
    its pauses (``saves(step)`` seconds of checkpoint after a step, 0 for none) as spans."""
    n_est = int((t_end - t_start) * 1000 / (job.compute_ms[0] * 0.9)) + 10
    jitter = {r.rank: noise.stream(rng, min(n_est, 20000)) for r in job.ranks}
    groups: dict[tuple, list[Rank]] = {}
    for r in job.ranks:
        groups.setdefault(r.ep_group, []).append(r)
    units = {g: sorted({r.router or (r.rank,) for r in m}) for g, m in groups.items()}
    hot: dict[tuple, list] = {g: [rng.randrange(len(units[g])), rng.uniform(0.08, 0.25),
                                  rng.randint(*job.hot_steps)] for g in groups}
    pauses: list[tuple[float, float]] = []
    t, step, i, loss, after_pause = t_start, first_step, 0, 2.9, False
    while True:
        cap = job.capacity(t)
        spread = job.spread(t)
        comp: dict[int, float] = {}
        dev: dict[int, float] = {}
        for g, members in groups.items():
            h = hot[g]
            h[2] -= 1
            if h[2] <= 0:
                h[:] = [rng.randrange(len(units[g])), rng.uniform(0.08, 0.25),
                        rng.randint(*job.hot_steps)]
            share = {u: max(-0.3, min(cap - 1.0, rng.gauss(0.0, 0.025 * spread)
                                      + (h[1] if k == h[0] else 0.0)))
                     for k, u in enumerate(units[g])}
            for r in members:
                d = dev[r.rank] = share[r.router or (r.rank,)]
                base = job.compute_ms[r.pp] * (1.0 - job.expert_frac * (1.25 - cap))
                c = base * (1.0 + job.expert_frac * d)
                c *= 1.0 + job.cov * jitter[r.rank][i % len(jitter[r.rank])]
                f = job.slow.get(r.rank)
                comp[r.rank] = c * (f(t) if f else 1.0)
        st = job.stall(step)
        if st:
            comp[st[0]] += st[1]
        if after_pause:
            comp = {k: v * rng.uniform(1.03, 1.08) for k, v in comp.items()}
        # a TP group computes at its slowest member's pace
        tpmax: dict[tuple, float] = {}
        for r in job.ranks:
            tpmax[r.tp_group] = max(tpmax.get(r.tp_group, 0.0), comp[r.rank])
        for r in job.ranks:
            comp[r.rank] = tpmax[r.tp_group] * (1.0 + 0.002 * rng.random())
        span = 0.0
        for g, members in groups.items():
            fx = job.a2a_x.get(g)
            a2a = job.a2a_ms * (fx(t) if fx else 1.0) * rng.uniform(0.97, 1.03)
            span = max(span, max(comp[r.rank] for r in members) + a2a)
        step_ms = span + job.bubble_ms + job.reduce_ms * rng.uniform(0.97, 1.03) + job.loader_ms
        t_end_step = t + step_ms / 1000.0
        if t_end_step > t_end:
            break
        loss = max(1.2, loss - 0.00002 * rng.random() * (job.compute_ms[0] / 100.0))
        for r in job.ranks:
            loader = job.loader_ms * rng.uniform(0.6, 1.0)
            c = comp[r.rank]
            ts = t_end_step + rng.uniform(0.0, 0.003 + step_ms / 1e5)
            gn = (0.9 + 0.1 * rng.random()) * (1.0 + 0.9 * dev[r.rank]) * job.grad_x(
                r.rank, step, ts)
            salt = "!" if job.bad_sum(r.rank, step, ts) else ""
            log.add("telemetry.step", {
                "ts": round(ts, 4), "job": job.name, "step": step, "rank": r.rank,
                "node": r.node, "gpu": r.gpu, "step_ms": round(step_ms, 2),
                "compute_ms": round(c, 2), "comm_ms": round(max(0.0, step_ms - c - loader), 2),
                "tp_rank": r.tp, "pp_rank": r.pp, "dp_rank": r.dp,
                "loss": round(loss * (1 + rng.gauss(0, 0.004)), 4),
                "grad_norm": round(gn, 4),
                "param_checksum": _checksum(job.name, r.tp, r.pp, step, salt)})
        job.steps_out.append((step, t, t_end_step))
        t = t_end_step
        i += 1
        after_pause = False
        pause = saves(step)
        if pause:
            pauses.append((t, t + pause))
            t += pause
            after_pause = True
        step += 1
    return pauses
