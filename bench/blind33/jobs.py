"""Synchronous TP x PP x DP training on ``world.Gpu`` boards, a step at a time.

A TP group (8 GPUs: one H100 node, or two GB200 trays over NVLink) computes together and waits
for its slowest GPU inside ``compute_ms``; the step ends when the slowest group has computed,
the pipeline's bubble has drained and the DP reduction is done; every rank waits the rest in
``comm_ms``. A group's pace carries real PAI noise (noise.py) at the job's CoV. ``actions`` are
timed changes to the boards (a profile switch, a rack budget, a fault's start) applied before
the first step that starts after them; ``gaps`` are idle spans before a step (a synchronous save,
an evaluation job's pause), booked idle (the smoothing floor where the board keeps one) and
counted in the step's "neither"; ``stretch`` is a compute factor on every rank of a step (the
first step after an idle span, when the power ramp limits the first kernels; a job-wide cap).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.blind33 import noise
from bench.blind33.world import Gpu


@dataclass
class Job:
    name: str
    tenant: str
    cluster: str
    tp: int
    pp: int
    dp: int
    groups: list[list[Gpu]]      # index dp * pp + stage; each the TP group's GPUs in tp order
    stage_s: list[float]         # compute a step per stage at full clock
    reduce_s: float
    bubble_s: float
    cov: float
    actions: list[tuple[float, Callable[[], None]]] = field(default_factory=list)
    gaps: dict[int, float] = field(default_factory=dict)       # step index -> idle s before
    stretch: dict[int, float] = field(default_factory=dict)    # step index -> compute factor
    busy: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # node -> reductions

    def gpus(self) -> list[Gpu]:
        return [g for grp in self.groups for g in grp]


def run(job: Job, t0: float, t1: float, rng: random.Random, coolant: Callable[[float], float],
        out: list[tuple[str, dict]]) -> float:
    """Train ``job`` from ``t0`` until a step would start after ``t1``; step records to
    ``out``; the end of the last step."""
    n_est = int((t1 - t0) / (min(job.stage_s) * 0.8)) + 10
    pace = [noise.stream(rng, n_est) for _ in job.groups]
    actions = sorted(job.actions, key=lambda a: a[0])
    t, k, last_t = t0, 0, max(job.stage_s) + job.reduce_s + job.bubble_s
    loss = rng.uniform(2.6, 3.2)
    while t < t1 and k < n_est:
        while actions and actions[0][0] <= t:
            actions.pop(0)[1]()
        gap = job.gaps.get(k, 0.0)
        if t + gap >= t1:
            break
        if gap:
            for g in job.gpus():
                g.book(t, t + gap, -1.0, 0.0, 0, coolant(t))
            t += gap
            while actions and actions[0][0] <= t:
                actions.pop(0)[1]()
        x = job.stretch.get(k, 1.0)
        per: list[tuple[float, list[tuple[Gpu, float, float, int]]]] = []
        for gi, grp in enumerate(job.groups):
            base = job.stage_s[gi % job.pp] * (1.0 + job.cov * pace[gi][k]) * x
            mine = []
            for g in grp:
                clk, bits = g.speed(t, t + last_t)
                mine.append((g, base * rng.gauss(1.0, 0.0015) / clk, clk, bits))
            per.append((max(c for _, c, _, _ in mine), mine))
        reduce_s = job.reduce_s * rng.gauss(1.0, 0.02)
        neither = [rng.uniform(0.012, 0.030) for _ in job.groups]
        span = max(c for c, _ in per) + job.bubble_s + reduce_s + max(neither)
        end = t + span
        c_temp = coolant(t)
        loss = loss * 0.9995 + rng.gauss(0, 0.004)
        for gi, (c_grp, mine) in enumerate(per):
            dp, pp = divmod(gi, job.pp)
            for tp, (g, c, clk, bits) in enumerate(mine):
                g.book(t, end, c / span, clk, bits, c_temp)
                comp = c_grp * 1000.0 * rng.uniform(1.0, 1.002)
                nei = (neither[gi] + gap) * 1000.0
                step_ms = (span + gap) * 1000.0
                out.append(("telemetry.step", {
                    "ts": round(end + rng.uniform(0.0, 0.004), 4), "job": job.name,
                    "step": k + 1, "rank": gi * job.tp + tp, "node": g.node, "gpu": g.gpu,
                    "step_ms": round(step_ms, 2), "compute_ms": round(comp, 2),
                    "comm_ms": round(max(0.0, step_ms - comp - nei) - 0.01, 2),
                    "tp_rank": tp, "pp_rank": pp, "dp_rank": dp,
                    "loss": round(loss + rng.gauss(0, 0.01), 4),
                    "grad_norm": round(abs(rng.gauss(0.9, 0.05)), 4),
                    "cluster": job.cluster, "tenant": job.tenant}))
        for node in {g.node for g in job.gpus()}:
            job.busy.setdefault(node, []).append((end - reduce_s, end))
        last_t, t, k = span, end, k + 1
    return t
