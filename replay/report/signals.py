"""The numbers each plot draws, computed from :mod:`replay.report.series` (no drawing here).

>>> from replay.report.series import JobSteps
>>> js = JobSteps()
>>> for step in range(3):
...     for rank in range(4):
...         js.ts.append(100.0 + step); js.step.append(step); js.rank.append(rank)
...         js.node.append("n"); js.gpu.append(rank); js.group.append((0, 0))
...         js.compute_ms.append(130.0 if rank == 2 else 100.0 + rank)
...         js.grad_norm.append(1.0); js.checksum.append("a" if rank != 1 or step < 2 else "b")
>>> band = peer_band(js, 2, "compute_ms")
>>> band.value.tolist(), band.median.tolist()
([130.0, 130.0, 130.0], [101.0, 101.0, 101.0])
>>> v = checksum_vote(js, 1)
>>> v.agree.tolist(), v.disagree.tolist(), v.target_agrees.tolist()
([4, 4, 3], [0, 0, 1], [True, True, False])
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from replay.report.series import JobSteps


@dataclass
class Band:
    """One rank's value per step against its peers' median and 10th-90th percentile."""

    rank: int
    ts: np.ndarray
    step: np.ndarray
    value: np.ndarray
    median: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@dataclass
class Vote:
    """Per step: ranks of the target's peer group agreeing with the majority checksum."""

    rank: int
    ts: np.ndarray
    step: np.ndarray
    agree: np.ndarray
    disagree: np.ndarray
    target_agrees: np.ndarray


def rank_on(js: JobSteps, node: str, gpu: int | None) -> int | None:
    """The rank that ran on this GPU (the last one seen), or on the node's first GPU."""
    found = None
    for i in range(len(js.rank)):
        if js.node[i] == node and (gpu is None or js.gpu[i] == gpu):
            found = js.rank[i]
    return found


def _peer_rows(js: JobSteps, rank: int) -> tuple[np.ndarray, tuple[int, int]]:
    try:
        i = js.rank.index(rank)
    except ValueError:
        return np.zeros(0, dtype=np.int64), (0, 0)
    group = js.group[i]
    rows = np.fromiter((k for k, g in enumerate(js.group) if g == group), dtype=np.int64)
    return rows, group


def peer_band(js: JobSteps, rank: int, field: str, since: float = -math.inf,
              until: float = math.inf) -> Band:
    """``field`` (compute_ms or grad_norm) of ``rank`` and of its peers, step by step."""
    rows, _ = _peer_rows(js, rank)
    col = getattr(js, field)
    by_step: dict[int, list[float]] = defaultdict(list)
    mine: dict[int, tuple[float, float]] = {}
    for k in rows:
        ts = js.ts[k]
        if not since <= ts <= until:
            continue
        s, x = js.step[k], col[k]
        if js.rank[k] == rank:
            mine[s] = (ts, x)
        elif math.isfinite(x):
            by_step[s].append(x)
    steps = sorted(s for s in mine if by_step.get(s))
    peers = [np.array(by_step[s]) for s in steps]
    return Band(rank, np.array([mine[s][0] for s in steps]), np.array(steps),
                np.array([mine[s][1] for s in steps]),
                np.array([float(np.median(p)) for p in peers]),
                np.array([float(np.percentile(p, 10)) for p in peers]),
                np.array([float(np.percentile(p, 90)) for p in peers]))


def checksum_vote(js: JobSteps, rank: int, since: float = -math.inf,
                  until: float = math.inf) -> Vote:
    """The checksum vote of ``rank``'s peer group, step by step."""
    rows, _ = _peer_rows(js, rank)
    votes: dict[int, Counter[str]] = defaultdict(Counter)
    mine: dict[int, tuple[float, str]] = {}
    for k in rows:
        c = js.checksum[k]
        if c is None or not since <= js.ts[k] <= until:
            continue
        votes[js.step[k]][c] += 1
        if js.rank[k] == rank:
            mine[js.step[k]] = (js.ts[k], c)
    steps = sorted(mine)
    agree, disagree, target = [], [], []
    for s in steps:
        top, n = votes[s].most_common(1)[0]
        agree.append(n)
        disagree.append(sum(votes[s].values()) - n)
        target.append(mine[s][1] == top)
    return Vote(rank, np.array([mine[s][0] for s in steps]), np.array(steps), np.array(agree),
                np.array(disagree), np.array(target, dtype=bool))


def against_siblings(own: list[tuple[Any, ...]], others: list[list[tuple[Any, ...]]],
                     column: int, since: float, until: float
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(ts, own value, siblings' median, ts of the median) of one column of samples."""
    pts = [(r[0], r[column]) for r in own if since <= r[0] <= until]
    bins: dict[int, list[float]] = defaultdict(list)
    for rows in others:
        for r in rows:
            if since <= r[0] <= until and math.isfinite(r[column]):
                bins[round(r[0])].append(r[column])
    keys = sorted(bins)
    return (np.array([p[0] for p in pts]), np.array([p[1] for p in pts]),
            np.array([float(np.median(bins[k])) for k in keys]), np.array(keys, dtype=float))


def rates(rows: list[tuple[float, int, int, bool]], since: float, until: float
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NIC samples as (ts, errors per second, transmit Gbit/s), counter resets skipped."""
    ts, err, gbps = [], [], []
    prev = None
    for r in rows:
        if prev is not None and since <= r[0] <= until:
            dt = r[0] - prev[0]
            if dt > 0 and r[1] >= prev[1] and r[2] >= prev[2]:
                ts.append(r[0])
                err.append((r[1] - prev[1]) / dt)
                gbps.append((r[2] - prev[2]) * 8 / dt / 1e9)
        prev = r
    return np.array(ts), np.array(err), np.array(gbps)
