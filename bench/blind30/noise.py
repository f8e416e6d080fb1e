"""Real step-time noise from Alibaba PAI's job 2 (bench/data/alibaba-pai-minibatch, CC BY 4.0).

Each worker's mini-batch time is read against the median of all workers at the same iteration
(``time / median - 1``), standardized by the median absolute deviation of all residuals. A
stream chains 30-100-sample windows of one worker's residuals (so a window keeps the real
lag-1 correlation, its drift and its bursts), each window's own mean taken out and its spread
rescaled to 1, every value clipped at ``CLIP``. A rank's step time is then
``base * (1 + cov * x)`` with its own stream: PAI's shape, at the spread of dedicated GPUs.

>>> import random
>>> xs = stream(random.Random(1), 500)
>>> len(xs), max(abs(x) for x in xs) <= CLIP
(500, True)
"""

from __future__ import annotations

import csv
import functools
import random
import statistics
from pathlib import Path

CLIP = 4.0
DATA = Path(__file__).resolve().parent.parent / "data" / "alibaba-pai-minibatch" / "job_2_norm.csv"


@functools.cache
def residuals() -> tuple[tuple[float, ...], ...]:
    """Each worker's residual series (against the cross-worker median), MAD-standardized."""
    by_time: dict[int, dict[int, float]] = {}
    with DATA.open(newline="") as fh:
        for row in csv.DictReader(fh):
            by_time.setdefault(int(row["time"]), {})[int(row["worker"])] = float(
                row["batch_time_norm"])
    series: dict[int, list[float]] = {}
    for t in sorted(by_time):
        med = statistics.median(by_time[t].values())
        for w, x in by_time[t].items():
            series.setdefault(w, []).append(x / med - 1.0)
    flat = [x for s in series.values() for x in s]
    mid = statistics.median(flat)
    mad = statistics.median(abs(x - mid) for x in flat) * 1.4826
    return tuple(tuple((x - mid) / mad for x in series[w]) for w in sorted(series)
                 if len(series[w]) > 120)


def stream(rng: random.Random, n: int) -> list[float]:
    """``n`` standardized values of real PAI noise (windows chained, sd ~1, clipped)."""
    out: list[float] = []
    pool = residuals()
    while len(out) < n:
        s = pool[rng.randrange(len(pool))]
        k = rng.randint(30, 100)
        a = rng.randrange(0, len(s) - k)
        win = s[a:a + k]
        mu = statistics.fmean(win)
        sd = statistics.pstdev(win) or 1.0
        out.extend(max(-CLIP, min(CLIP, (x - mu) / sd)) for x in win)
    return out[:n]


def lag1(xs: list[float]) -> float:
    """Lag-1 autocorrelation of ``xs``."""
    mu = statistics.fmean(xs)
    num = sum((a - mu) * (b - mu) for a, b in zip(xs, xs[1:], strict=False))
    den = sum((a - mu) ** 2 for a in xs)
    return num / den if den else 0.0
