"""Real step-time noise for blind28: Alibaba PAI job 2 ("variation stable, workers differ").

Each worker's mini-batch time against the cross-worker median at the same iteration, divided by
the MAD of all such ratios and clipped at ``CLIP``: a standardized, real wander.  A stream
chains 40-120-sample windows of one worker at a time, so its lag-1 autocorrelation is the real
one (~0.55), not white noise; each window's own mean is taken out (job 2's workers differ by a
lasting offset that on dedicated GPUs would be a straggler, not noise), which leaves sd ~0.27.
Callers scale it (``SD`` is that sd) to their CoV (1.5-3 % on dedicated H100s).
"""

from __future__ import annotations

import csv
import functools
import random
import statistics
from collections import defaultdict
from pathlib import Path

CLIP = 4.0
SD = 0.27
DATA = Path(__file__).resolve().parent.parent / "data" / "alibaba-pai-minibatch" / "job_2_norm.csv"


@functools.cache
def _series() -> tuple[tuple[float, ...], ...]:
    by: dict[int, dict[int, float]] = defaultdict(dict)
    with DATA.open() as fh:
        for r in csv.DictReader(fh):
            by[int(r["time"])][int(r["worker"])] = float(r["batch_time_norm"])
    full = [by[t] for t in sorted(by) if len(by[t]) == 10]
    rel = [[row[w] / statistics.median(row.values()) - 1.0 for w in range(10)] for row in full]
    flat = [x for row in rel for x in row]
    med = statistics.median(flat)
    mad = statistics.median(abs(x - med) for x in flat) * 1.4826
    return tuple(tuple(max(-CLIP, min(CLIP, (row[w] - med) / mad)) for row in rel)
                 for w in range(10))


def stream(rng: random.Random, n: int) -> list[float]:
    """``n`` standardized samples (mean ~0, sd ~1, |x| <= CLIP) chained from real workers."""
    ser = _series()
    out: list[float] = []
    while len(out) < n:
        w = ser[rng.randrange(len(ser))]
        k = rng.randint(40, 120)
        a = rng.randrange(0, max(1, len(w) - k))
        win = w[a:a + k]
        m = statistics.fmean(win)
        out.extend(max(-CLIP, min(CLIP, x - m)) for x in win)
    return out[:n]


def lag1(xs: list[float]) -> float:
    """Lag-1 autocorrelation of ``xs``."""
    m = statistics.fmean(xs)
    num = sum((a - m) * (b - m) for a, b in zip(xs, xs[1:], strict=False))
    return num / sum((a - m) ** 2 for a in xs)
