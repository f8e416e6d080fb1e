"""Real step-time noise for blind24: Alibaba PAI mini-batch times, as residual streams.

Each PAI worker's idiosyncratic residual is log(its time / the job's cross-worker median at the
same sample), less its own 101-sample rolling median (so a persistent straggler's offset is gone
and only its fluctuation stays), standardized by the MAD and clipped at 4.5 sigma. A worker whose
standardized residual averages over 3 sigma across 4 consecutive samples 10 times or more is a
straggler, not noise (job 1's worker 6 and job 3's workers 6-9, the stragglers Alibaba's notes
name): its series is left out -- a detrended level shift would put an unlabelled slowdown of a few
percent, tens of steps long, on a healthy rank. The job-wide
residual is the cross-worker median's own log deviation from its rolling median. Jobs 1-3 only
(job 4's times swing by tens of percent). Consecutive samples stay consecutive, so the lag-1
autocorrelation (~0.57 here) is the data's; a stream chains 40-120-sample windows from the seed.
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
CLIP = 4.5
STRAGGLER_RUNS = 10


def _rolling_median(x: list[float], half: int = 50) -> list[float]:
    return [statistics.median(x[max(0, i - half):i + half + 1]) for i in range(len(x))]


def _standardize(x: list[float]) -> list[float]:
    med = statistics.median(x)
    mad = statistics.median(abs(v - med) for v in x) * 1.4826 or 1.0
    return [max(-CLIP, min(CLIP, (v - med) / mad)) for v in x]


@functools.cache
def series() -> tuple[tuple[tuple[float, ...], ...], tuple[tuple[float, ...], ...]]:
    """(idiosyncratic residual series, one a worker; job-wide residual series, one a job)."""
    own, common = [], []
    for j in (1, 2, 3):
        by: dict[int, dict[int, float]] = defaultdict(dict)
        with open(DATA / f"job_{j}_norm.csv", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                by[int(row["worker"])][int(row["time"])] = max(float(row["batch_time_norm"]), 1.0)
        times = sorted(set.intersection(*(set(v) for v in by.values())))
        med = [statistics.median(by[w][t] for w in by) for t in times]
        for w in sorted(by):
            r = [math.log(by[w][t] / m) for t, m in zip(times, med, strict=True)]
            base = _rolling_median(r)
            z = _standardize([a - b for a, b in zip(r, base, strict=True)])
            if sum(sum(z[i:i + 4]) > 12.0 for i in range(len(z) - 3)) < STRAGGLER_RUNS:
                own.append(tuple(z))
        lm = [math.log(m) for m in med]
        common.append(tuple(_standardize([a - b for a, b in zip(lm, _rolling_median(lm),
                                                                  strict=True)])))
    return tuple(own), tuple(common)


class Stream:
    """An endless standardized residual stream: chained windows of real PAI series."""

    def __init__(self, rng: random.Random, common: bool = False):
        self._rng = random.Random(rng.random())
        self._pool = series()[1 if common else 0]
        self._buf: list[float] = []

    def next(self) -> float:
        if not self._buf:
            s = self._rng.choice(self._pool)
            n = self._rng.randint(40, 120)
            i = self._rng.randrange(0, len(s) - n)
            self._buf = list(s[i:i + n])
            self._buf.reverse()
        return self._buf.pop()
