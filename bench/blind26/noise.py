"""Real step-time noise from Alibaba PAI's mini-batch traces (bench/data/alibaba-pai-minibatch).

A worker's **own** residual: log(batch time) less the log of the cross-worker median at the same
sampled iteration, less its own 51-sample rolling median (what persists is a worker's offset,
not noise), divided by its MAD (x 1.4826), clipped at +-4. Jobs 2 and 4 (10 workers each), minus
the workers Alibaba calls stragglers -- here any worker with more than 2 % of its samples past 3
sigma. The **job-wide** residual is the cross-worker median's own log residual against its
rolling median, standardized the same way. Streams chain windows of 30-90 consecutive samples
from random workers, so the lag-1 correlation of the real traces survives; the caller scales
them (an H100 rank's own noise is far below a shared PAI GPU's).
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
CLIP = 4.0
JOBS = (2, 4)


def _rolling_median(xs: list[float], half: int = 25) -> list[float]:
    return [statistics.median(xs[max(0, i - half):i + half + 1]) for i in range(len(xs))]


def _standardize(xs: list[float]) -> list[float]:
    trend = _rolling_median(xs)
    res = [x - m for x, m in zip(xs, trend, strict=False)]
    mad = statistics.median(abs(r) for r in res) * 1.4826 or 1.0
    return [max(-CLIP, min(CLIP, r / mad)) for r in res]


@functools.cache
def _pools() -> tuple[tuple[tuple[float, ...], ...], tuple[tuple[float, ...], ...]]:
    """(per-worker residual series, job-wide residual series)."""
    workers, jobwide = [], []
    for job in JOBS:
        by_time: dict[int, dict[int, float]] = defaultdict(dict)
        with open(DATA / f"job_{job}_norm.csv", newline="") as fh:
            for row in csv.DictReader(fh):
                v = float(row["batch_time_norm"])
                if v > 0:
                    by_time[int(row["time"])][int(row["worker"])] = math.log(v)
        times = [t for t in sorted(by_time) if len(by_time[t]) >= 8]
        med = [statistics.median(by_time[t].values()) for t in times]
        jobwide.append(tuple(_standardize(med)))
        for w in range(10):
            xs = [by_time[t][w] - m for t, m in zip(times, med, strict=False) if w in by_time[t]]
            if len(xs) < 120:
                continue
            z = _standardize(xs)
            if sum(abs(x) > 3 for x in z) > 0.02 * len(z):
                continue                       # a straggler, not noise
            workers.append(tuple(z))
    return tuple(workers), tuple(jobwide)


def _chain(pool, rng: random.Random, n: int) -> list[float]:
    out: list[float] = []
    while len(out) < n:
        src = pool[rng.randrange(len(pool))]
        k = rng.randint(30, 90)
        i = rng.randrange(0, len(src) - k)
        out.extend(src[i:i + k])
    return out[:n]


def rank_stream(rng: random.Random, n: int) -> list[float]:
    """``n`` standardized samples of one worker's own noise (real PAI residuals)."""
    return _chain(_pools()[0], rng, n)


def job_stream(rng: random.Random, n: int) -> list[float]:
    """``n`` standardized samples of a job's common step-time wander (real PAI)."""
    return _chain(_pools()[1], rng, n)


def lag1(xs: list[float]) -> float:
    """Lag-1 autocorrelation (a check that chaining kept the traces' memory)."""
    m = statistics.fmean(xs)
    num = sum((a - m) * (b - m) for a, b in zip(xs, xs[1:], strict=False))
    den = sum((a - m) ** 2 for a in xs) or 1.0
    return num / den
