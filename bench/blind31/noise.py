"""Real step-time noise from Alibaba PAI (job 2's mini-batch times), as a unit-variance stream.

Each sample of job 2 is a worker's time against the median of the ten workers at that time,
MAD-standardized; a stream chains 30-100-sample windows of one worker (each window's own mean
taken out, so a worker's persistent offset is not carried over as a straggler), scaled to sd 1
and clipped at ``CLIP``. Consecutive PAI samples are ~10 iterations apart, so the chaining keeps
the slow wander of real noise (lag-1 ~0.5), not white noise.
"""

from __future__ import annotations

import csv
import functools
import random
import statistics
from collections import defaultdict
from pathlib import Path

CSV = Path(__file__).resolve().parents[1] / "data" / "alibaba-pai-minibatch" / "job_2_norm.csv"
CLIP = 4.0


@functools.cache
def _workers() -> tuple[tuple[float, ...], ...]:
    """Each worker's MAD-standardized deviation from the cross-worker median, in time order."""
    by_time: dict[int, dict[int, float]] = defaultdict(dict)
    with CSV.open() as fh:
        for row in csv.DictReader(fh):
            by_time[int(row["time"])][int(row["worker"])] = float(row["batch_time_norm"])
    devs: dict[int, list[float]] = defaultdict(list)
    for t in sorted(by_time):
        xs = by_time[t]
        if len(xs) < 5:
            continue
        med = statistics.median(xs.values())
        for w, x in xs.items():
            devs[w].append(x / med - 1.0)
    allx = [x for v in devs.values() for x in v]
    centre = statistics.median(allx)
    mad = statistics.median(abs(x - centre) for x in allx) * 1.4826 or 1.0
    return tuple(tuple((x - centre) / mad for x in devs[w]) for w in sorted(devs))


def stream(rng: random.Random, n: int) -> list[float]:
    """``n`` samples of PAI noise (sd ~1, lag-1 ~0.5, |x| <= CLIP) drawn with ``rng``.

    >>> xs = stream(random.Random(1), 500)
    >>> len(xs), max(abs(x) for x in xs) <= CLIP
    (500, True)
    """
    workers = _workers()
    out: list[float] = []
    while len(out) < n:
        w = workers[rng.randrange(len(workers))]
        k = rng.randint(30, 100)
        i = rng.randrange(max(1, len(w) - k))
        win = list(w[i:i + k])
        if len(win) < 10:
            continue
        mean = statistics.fmean(win)
        sd = statistics.pstdev(win) or 1.0
        out.extend(max(-CLIP, min(CLIP, (x - mean) / sd)) for x in win)
    return out[:n]


def lag1(xs: list[float]) -> float:
    """Lag-1 autocorrelation of ``xs``."""
    m = statistics.fmean(xs)
    num = sum((a - m) * (b - m) for a, b in zip(xs, xs[1:], strict=False))
    den = sum((a - m) ** 2 for a in xs) or 1.0
    return num / den
