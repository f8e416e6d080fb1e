"""Real step-time noise from Alibaba PAI's mini-batch times (bench/data/alibaba-pai-minibatch).

A worker's residual is log(its time / the job's cross-worker median at that sample), less its
own 101-sample rolling median (a worker's persistent offset is a shared-GPU artefact, not
noise), MAD-standardized and clipped at 4 sigma. Workers that straggle (job 1 worker 6, and any
worker with over 2 % of its samples past 3 sigma) are left out: their runs are stragglers, not
noise. A stream chains windows of 40-120 consecutive samples of random workers, so the lag-1
autocorrelation (~0.6 in the data) is kept. ``job_stream`` is the cross-worker median's own
standardized residual (the job-wide part every rank shares).
"""

from __future__ import annotations

import csv
import functools
import math
import random
import statistics
from collections import defaultdict
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "alibaba-pai-minibatch"
JOBS = (1, 2, 3)
CLIP = 4.0


def _read(job: int) -> dict[int, list[float]]:
    per_t: dict[int, dict[int, float]] = defaultdict(dict)
    with open(DATA / f"job_{job}_norm.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            t = float(row["batch_time_norm"])
            if t > 0:
                per_t[int(row["time"])][int(row["worker"])] = t
    times = sorted(t for t, ws in per_t.items() if len(ws) >= 8)
    workers = sorted({w for t in times for w in per_t[t]})
    out: dict[int, list[float]] = {w: [] for w in workers}
    out[-1] = []
    for t in times:
        med = statistics.median(per_t[t].values())
        out[-1].append(math.log(med))
        for w in workers:
            if w in per_t[t]:
                out[w].append(math.log(per_t[t][w] / med))
    return out


def _standardize(xs: list[float], window: int = 101) -> list[float]:
    half = window // 2
    detr = [x - statistics.median(xs[max(0, i - half):i + half + 1]) for i, x in enumerate(xs)]
    mad = statistics.median(abs(d) for d in detr) * 1.4826 or 1e-9
    return [max(-CLIP, min(CLIP, d / mad)) for d in detr]


@functools.cache
def _pools() -> tuple[tuple[tuple[float, ...], ...], tuple[tuple[float, ...], ...]]:
    ranks, jobs = [], []
    for job in JOBS:
        series = _read(job)
        jobs.append(tuple(_standardize(series.pop(-1))))
        for w, xs in sorted(series.items()):
            if len(xs) < 150 or (job, w) == (1, 6):
                continue
            z = _standardize(xs)
            if sum(abs(v) > 3.0 for v in z) > 0.02 * len(z):
                continue
            ranks.append(tuple(z))
    return tuple(ranks), tuple(jobs)


def _chain(pool, rng: random.Random, n: int) -> list[float]:
    out: list[float] = []
    while len(out) < n:
        xs = pool[rng.randrange(len(pool))]
        w = rng.randint(40, 120)
        i = rng.randrange(0, max(1, len(xs) - w))
        out.extend(xs[i:i + w])
    return out[:n]


def rank_stream(rng: random.Random, n: int) -> list[float]:
    """``n`` standardized (unit-MAD) residuals of one worker, autocorrelated as in PAI."""
    return _chain(_pools()[0], rng, n)


def job_stream(rng: random.Random, n: int) -> list[float]:
    """``n`` standardized residuals of a job's cross-worker median (shared by every rank)."""
    return _chain(_pools()[1], rng, n)


def lag1(xs: list[float]) -> float:
    """Lag-1 autocorrelation (what the chaining keeps)."""
    m = statistics.fmean(xs)
    num = sum((a - m) * (b - m) for a, b in zip(xs, xs[1:], strict=False))
    den = sum((a - m) ** 2 for a in xs) or 1e-12
    return num / den
