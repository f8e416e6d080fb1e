"""Real step-time noise for blind27: Alibaba PAI's per-worker mini-batch times as multipliers.

A worker's residual is its log mini-batch time less the cross-worker median at the same
iteration, standardized by the median absolute deviation and clipped at ``CLIP``; job 2 (the
one Alibaba calls "stable, workers differ") gives the rank noise, the cross-worker median's
own log deviation the job-wide wander. A stream chains 40-120-sample windows of one worker so
its lag-1 autocorrelation is the data's, not white noise.
"""

from __future__ import annotations

import csv
import functools
import math
import random
import statistics
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "alibaba-pai-minibatch"
CLIP = 4.0


@functools.cache
def _table(job: int) -> dict[int, dict[int, float]]:
    """iteration -> worker -> mini-batch time (normalized units) of ``job``."""
    out: dict[int, dict[int, float]] = {}
    with (DATA / f"job_{job}_norm.csv").open() as fh:
        for row in csv.DictReader(fh):
            t = float(row["batch_time_norm"])
            if t > 0:
                out.setdefault(int(row["time"]), {})[int(row["worker"])] = t
    return out


def _mad_z(xs: list[float]) -> list[float]:
    med = statistics.median(xs)
    mad = statistics.median(abs(x - med) for x in xs) or 1e-9
    return [max(-CLIP, min(CLIP, (x - med) / (1.4826 * mad))) for x in xs]


@functools.cache
def residuals(job: int = 2) -> tuple[tuple[float, ...], ...]:
    """Each worker's standardized residual series against the cross-worker median."""
    tab = _table(job)
    its = sorted(i for i, w in tab.items() if len(w) >= 3)
    per: dict[int, list[float]] = {}
    for i in its:
        med = statistics.median(tab[i].values())
        for w, t in tab[i].items():
            per.setdefault(w, []).append(math.log(t / med))
    return tuple(tuple(_mad_z(xs)) for xs in per.values() if len(xs) >= 120)


@functools.cache
def wander(job: int = 2) -> tuple[float, ...]:
    """The cross-worker median's standardized log deviation: the job's own pace wander."""
    tab = _table(job)
    meds = [math.log(statistics.median(tab[i].values())) for i in sorted(tab)
            if len(tab[i]) >= 3]
    return tuple(_mad_z(meds))


def stream(rng: random.Random, n: int, source: tuple[tuple[float, ...], ...] | None = None
           ) -> list[float]:
    """``n`` standardized noise values: windows of real workers' residuals chained."""
    src = source if source is not None else residuals()
    out: list[float] = []
    while len(out) < n:
        xs = rng.choice(src)
        w = rng.randint(40, 120)
        a = rng.randrange(0, max(1, len(xs) - w))
        out.extend(xs[a:a + w])
    return out[:n]


def job_stream(rng: random.Random, n: int) -> list[float]:
    """``n`` values of the job-wide wander (one series, a random start, wrapped)."""
    xs = wander()
    a = rng.randrange(len(xs))
    return [xs[(a + i) % len(xs)] for i in range(n)]


def lag1(xs: list[float]) -> float:
    """Lag-1 autocorrelation of ``xs``."""
    m = statistics.fmean(xs)
    num = sum((a - m) * (b - m) for a, b in zip(xs, xs[1:], strict=False))
    den = sum((a - m) ** 2 for a in xs) or 1e-12
    return num / den
