"""Real step-time noise for blind32: Alibaba PAI job 3's per-worker mini-batch times.

Job 3 (25 % of a GPU a worker, ten workers, ~250 samples each; Alibaba: "there could be
multiple stragglers") wanders less from sample to sample than job 4 (lag-1 ~0.55 against
~0.87 once chained), closer to a dedicated GPU's step. Each worker's series is centred on
its own median and scaled by its own MAD (a worker that is persistently slower -- a
straggler of the trace -- adds no offset); windows of 30-100 consecutive samples of one
worker are chained, each window's mean taken out, the whole scaled to sd 1 and clipped at
``CLIP``. The lag-1 autocorrelation of the trace stays (a step's time follows the one
before), which white noise would not keep.

>>> import random
>>> xs = stream(random.Random(1), 2000)
>>> len(xs), max(abs(x) for x in xs) <= CLIP
(2000, True)
"""

from __future__ import annotations

import csv
import functools
import random
import statistics
from pathlib import Path

CLIP = 4.0
DATA = Path(__file__).resolve().parents[1] / "data" / "alibaba-pai-minibatch" / "job_3_norm.csv"


@functools.cache
def _workers() -> tuple[tuple[float, ...], ...]:
    by: dict[str, list[tuple[int, float]]] = {}
    with DATA.open(newline="") as fh:
        for row in csv.DictReader(fh):
            by.setdefault(row["worker"], []).append((int(row["time"]),
                                                     float(row["batch_time_norm"])))
    out = []
    for _, series in sorted(by.items()):
        xs = [x for _, x in sorted(series)]
        med = statistics.median(xs)
        mad = statistics.median(abs(x - med) for x in xs) * 1.4826 or 1.0
        out.append(tuple((x - med) / mad for x in xs))
    return tuple(out)


def stream(rng: random.Random, n: int) -> list[float]:
    """``n`` samples of standardized real noise (sd ~1, lag-1 kept, |x| <= CLIP)."""
    workers = _workers()
    raw: list[float] = []
    while len(raw) < n:
        w = workers[rng.randrange(len(workers))]
        k = rng.randint(30, 100)
        i = rng.randrange(0, len(w) - k)
        win = w[i:i + k]
        m = statistics.fmean(win)
        raw.extend(x - m for x in win)
    raw = raw[:n]
    sd = statistics.pstdev(raw) or 1.0
    return [max(-CLIP, min(CLIP, x / sd)) for x in raw]


def lag1(xs: list[float]) -> float:
    """Lag-1 autocorrelation of ``xs``."""
    m = statistics.fmean(xs)
    num = sum((a - m) * (b - m) for a, b in zip(xs, xs[1:], strict=False))
    den = sum((a - m) ** 2 for a in xs) or 1.0
    return num / den
