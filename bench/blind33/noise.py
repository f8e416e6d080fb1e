"""Real step-time noise: Alibaba PAI job 2's mini-batch times, each worker against itself.

Job 2 is the PAI job whose variation Alibaba calls stable (workers differ from each other, not
over time), so its residuals are a healthy rank's jitter. Each worker's times, in iteration
order, minus the worker's median, over 1.4826 x its MAD; windows of 40-120 consecutive samples of
one worker chained end to end, each window's mean removed (a worker's level is not noise),
scaled to sd 1 and clipped at CLIP. What is kept: the real shape of a run -- bursts, lag-1.
"""

from __future__ import annotations

import csv
import functools
import random
import statistics
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "alibaba-pai-minibatch" / "job_2_norm.csv"
CLIP = 4.0


@functools.cache
def _workers() -> tuple[tuple[float, ...], ...]:
    """Each worker's standardized residuals, in iteration order."""
    rows: dict[str, list[tuple[int, float]]] = {}
    with DATA.open(newline="") as fh:
        for r in csv.DictReader(fh):
            rows.setdefault(r["worker"], []).append((int(r["time"]), float(r["batch_time_norm"])))
    out = []
    for _, xs in sorted(rows.items()):
        ys = [y for _, y in sorted(xs)]
        med = statistics.median(ys)
        mad = statistics.median(abs(y - med) for y in ys) * 1.4826 or 1.0
        out.append(tuple((y - med) / mad for y in ys))
    return tuple(out)


def stream(rng: random.Random, n: int) -> list[float]:
    """``n`` samples of chained real windows: mean 0 per window, sd ~1, |x| <= CLIP.

    >>> xs = stream(random.Random(1), 500)
    >>> len(xs), max(abs(x) for x in xs) <= CLIP
    (500, True)
    """
    workers = _workers()
    out: list[float] = []
    while len(out) < n:
        w = rng.choice(workers)
        size = rng.randint(40, 120)
        at = rng.randrange(0, max(1, len(w) - size))
        win = list(w[at:at + size])
        mu = statistics.fmean(win)
        sd = statistics.pstdev(win) or 1.0
        out.extend(max(-CLIP, min(CLIP, (x - mu) / sd)) for x in win)
    return out[:n]


def lag1(xs: list[float]) -> float:
    """Lag-1 autocorrelation of ``xs``."""
    mu = statistics.fmean(xs)
    num = sum((a - mu) * (b - mu) for a, b in zip(xs, xs[1:], strict=False))
    den = sum((a - mu) ** 2 for a in xs) or 1.0
    return num / den
