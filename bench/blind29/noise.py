"""Real step-time noise from Alibaba PAI (job 2: stable variation, workers unlike each other).

Each sample is a worker's mini-batch time against the median of all workers at that sample,
standardized by the median absolute deviation (x1.4826) and clipped at CLIP. A stream chains
windows of 40-120 consecutive samples of one worker, each window's mean taken out: what stays
is PAI's short-range wobble and its tail (lag-1 ~0.5); a lasting offset would be a straggler,
which is a fault of its own here, not noise.
"""

from __future__ import annotations

import csv
import functools
import itertools
import random
import statistics
from pathlib import Path

CLIP = 4.0
DATA = Path(__file__).resolve().parent.parent / "data" / "alibaba-pai-minibatch" / "job_2_norm.csv"


@functools.cache
def _series() -> tuple[tuple[float, ...], ...]:
    by_time: dict[int, dict[int, float]] = {}
    with open(DATA, newline="") as fh:
        for row in csv.DictReader(fh):
            by_time.setdefault(int(row["time"]), {})[int(row["worker"])] = float(
                row["batch_time_norm"])
    resid: dict[int, list[float]] = {}
    for t in sorted(by_time):
        med = statistics.median(by_time[t].values())
        for w, x in by_time[t].items():
            resid.setdefault(w, []).append(x - med)
    every = [x for xs in resid.values() for x in xs]
    centre = statistics.median(every)
    mad = 1.4826 * statistics.median(abs(x - centre) for x in every) or 1.0
    return tuple(tuple(max(-CLIP, min(CLIP, (x - centre) / mad)) for x in xs)
                 for xs in resid.values() if len(xs) >= 130)


def stream(rng: random.Random, n: int) -> list[float]:
    """``n`` standardized noise samples (mean ~0, sd ~1, |x| <= CLIP)."""
    scale = _scale()
    return [max(-CLIP, min(CLIP, x / scale)) for x in _raw(rng, n)]


@functools.cache
def _scale() -> float:
    """The sd of window-demeaned samples (the MAD above counts workers' lasting offsets, which
    the windows take out)."""
    xs = _raw(random.Random(0), 20000)
    return statistics.pstdev(xs) or 1.0


def _raw(rng: random.Random, n: int) -> list[float]:
    series = _series()
    out: list[float] = []
    while len(out) < n:
        xs = rng.choice(series)
        width = rng.randint(40, 120)
        start = rng.randrange(0, len(xs) - width)
        win = xs[start:start + width]
        mean = sum(win) / width
        out.extend(max(-CLIP, min(CLIP, x - mean)) for x in win)
    return out[:n]


def lag1(xs: list[float]) -> float:
    """Lag-1 autocorrelation of ``xs``."""
    m = sum(xs) / len(xs)
    var = sum((x - m) ** 2 for x in xs)
    return sum((a - m) * (b - m) for a, b in itertools.pairwise(xs)) / var if var else 0.0
