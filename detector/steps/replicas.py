"""Replicas: each rank's replica-wide deviation, replicas on one node, and a job of
two replicas one of which computes slower (``replica_split``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from detector.alerts import Scope
from detector.findings import Finding
from detector.step_numerics import _NAN
from detector.steps.common import (
    _SPLIT_ALPHA,
    _SPLIT_EVERY,
    _SPLIT_LOOKS,
    _SPLIT_RATIO,
    _smoothed,
    _StepBuffer,
)
from models.numpy_c import count_nonzero
from models.peer_stats import group_median, median, row_deviations, row_sizes, sorted_rows

if TYPE_CHECKING:
    from detector.steps.job import JobMonitor


def replica_split(job: JobMonitor, buf: _StepBuffer, busy: np.ndarray, ts: float,
                  out: list[Finding]) -> None:
    """Evidence only: in a job of exactly two data-parallel replicas, the GPUs of the one
    that computes lastingly slower than the other (a ``replica_split`` finding, once a job).

    Two peers a group are too few to compare (min_peers), and the pipeline stage's median
    of two slow and two fast ranks (TP 2 x DP 2) sits between them: nothing in this job can
    name the GPU -- the TP partner waits in the TP all-reduce and reports the same
    ``compute_ms`` -- nor tell a slow GPU from a replica's own work.  The correlator's
    memory across jobs can (detector.lemon): the same GPU in the slow replica of job after
    job.  Its run is state (``JobMonitor._split``): a restore goes on with it.
    """
    cfg = job.cfg
    if job._evaluated <= cfg.warmup_steps:
        return
    dp = buf.dp
    lo, hi = min(dp, key=lambda v: -1 if v is None else v), max(
        dp, key=lambda v: -1 if v is None else v)
    if lo is None or lo == hi:
        return
    pairs: dict[tuple[int, int], list[int]] = {}
    for i, (d, tp, pp) in enumerate(zip(dp, buf.tp, buf.pp, strict=True)):
        if d != lo and d != hi:
            return  # more than two replicas: their peers say which is slow
        pairs.setdefault((pp or 0, tp or 0), [-1, -1])[d == hi] = i
    if any(a < 0 or b < 0 for a, b in pairs.values()):
        return
    state = job._split
    keys = sorted(pairs)
    if state is None or state[0] != keys:
        state = job._split = [keys, np.zeros(len(keys)), 0.0, 0, ts, False]
    if state[5]:
        return  # told once a job
    idx = np.array([pairs[k] for k in keys])
    diff = np.log(busy[idx[:, 1]]) - np.log(busy[idx[:, 0]])  # the higher replica's over
    state[1] += _SPLIT_ALPHA * (diff - state[1])
    state[2] += _SPLIT_ALPHA * (1.0 - state[2])
    level = state[1] / state[2]  # (bias-corrected: the first looks weigh alike)
    up, down = level > _SPLIT_RATIO, level < -_SPLIT_RATIO
    if up.any() == down.any():  # neither side, or both: no one slow replica
        state[3], state[4] = 0, ts
        return
    state[3] += 1
    if state[3] < _SPLIT_LOOKS:
        return
    state[5] = True
    side, sel = (1, up) if up.any() else (0, down)
    slow = [int(i) for i in idx[sel, side]]
    gpus = [[buf.hw[i][0], int(buf.hw[i][1])] for i in slow]
    d_slow = hi if side else lo
    out.append(Finding(ts, state[4], "replica_split", "slow_node", "unknown",
                       Scope.of_replica(job.job, int(d_slow)), True, False, 0.3, {
                           "replica_gpus": gpus,
                           "compute_ratio_to_peers": round(math.exp(float(
                               np.abs(level[sel]).mean())), 3),
                           "run_steps": state[3] * _SPLIT_EVERY, "dp_ranks": 2},
                       job.job, job.tenant, job.cluster, None, int(d_slow)))


def _replica_common(self, d: np.ndarray, buf: _StepBuffer, ok: np.ndarray | None,
                    comparable: np.ndarray | None, warm: bool
                    ) -> tuple[np.ndarray | None, bool]:
    """Each rank's replica-wide deviation this step, and whether that is the job's main
    noise (None, False: no replicas to take medians of).

    Ranks of one data-parallel replica share its batch: with per-step sequence-length
    imbalance between replicas every rank of a replica is fast or slow together, by up
    to +-20 %, and a rank's ratio to its DP peers is mostly its replica's batch.  Used
    (not None) only while the spread of the replicas' medians stays
    ``replica_noise_ratio`` times the spread of the ranks around their replica's median
    (smoothed over steps; a fault on one GPU or one replica moves neither median much).
    Ordinary jitter is per rank: a median of >= 4 ranks spreads half as much as they do.
    Until then the medians still serve the warm-up: ranks of replicas spanning nodes
    learn their start offsets against them (:meth:`_check_slow`).
    ``ok`` and ``comparable`` pick ``d``'s ranks from the step's (None: all).  The medians
    are returned only when they are used: in the regime or in the warm-up (``warm``).
    """
    cfg = self.cfg
    if cfg.replica_noise_ratio <= 0.0:
        return None, False
    dp = buf.dp_array()
    if ok is not None:
        dp = dp[ok]
    if comparable is not None:
        dp = dp[comparable]
    known: np.ndarray | None = dp >= 0
    n_known = count_nonzero(known)
    if n_known < 16:
        return None, False
    if n_known == len(dp):
        known = None  # (all: the usual step)
    else:
        d, dp = d[known], dp[known]
    sr = sorted_rows(d, dp)
    multi: np.ndarray | None = None
    rep: np.ndarray | None = None
    if sr is not None and sr[2].k >= 4:
        # Replicas of one size, each of >= 4 ranks (the usual step): all count, and the
        # medians below are taken over a row a replica (:func:`sorted_rows`).
        v, mid, rows = sr
        if len(d) // rows.k < 4:
            return None, False
        within = median(row_deviations(v, mid).ravel(), scratch=True)
        across = median(np.abs(mid - median(mid)), scratch=True)
    else:
        if sr is None:
            med, size, _ = group_median(d, dp)
        else:
            v, mid, rows = sr
            med, size = mid[rows.back], row_sizes(rows, len(d))
        multi = size >= 4
        if len(set(dp[multi].tolist())) < 4:
            return None, False
        rep, dm = med[multi], d[multi]
        within = median(np.abs(dm - rep), scratch=True)
        across = median(np.abs(rep - median(rep)), scratch=True)
    ratio = across / max(within, 1e-6)
    # From the first step (not from zero): the warm-up learns each rank's offset on the
    # statistic this regime chooses -- under imbalance, against its replica mates.
    self._replica_noise = _smoothed(self._replica_noise, ratio, cfg.slow_sigma_alpha)
    # Entered above replica_noise_ratio, left only below replica_noise_exit: a workload
    # whose smoothed ratio sits just over the threshold (DP 4 with per-GPU speed offsets:
    # 3.07-4.40, minimum 2.31 after warm-up) flapped out of the regime on 137 of 3,961
    # steps, and on those a replica's batch became a rank's evidence and its bias was
    # learned at half size against its DP peers: a healthy GPU 4.5 % over its replica
    # mates paged at 8,373 s (healthy fleet dp4-10s seed 85001, BENCHMARKS.md "Final
    # fleet's one escalation").
    limit = cfg.replica_noise_exit if self._imbalanced else cfg.replica_noise_ratio
    self._imbalanced = self._replica_noise >= limit
    if not (self._imbalanced or warm):
        return None, False  # (the medians serve neither the score nor the warm-up)
    if rep is None:
        rep = mid[rows.back]
    if known is None and multi is None:
        return rep, self._imbalanced  # (every rank's replica median: rep as it is)
    common = np.zeros(len(known) if known is not None else len(d))
    idx = np.arange(len(d)) if known is None else known.nonzero()[0]
    common[idx if multi is None else idx[multi]] = rep
    return common, self._imbalanced


def _one_node_replicas(self, buf: _StepBuffer, r: np.ndarray) -> np.ndarray:
    """Per rank of slots ``r`` (this step's): whether every rank of its replica this
    step is on its node.

    Kept per slot and taken again only when the job's layout changed: a rank moved to
    other hardware (:meth:`_track_hardware`), a rank named another replica, or the
    step's set of ranks is not the last one's.  Arrival order does not matter, so a
    step costs a few array comparisons, not a loop over the job's ranks.
    """
    slots = buf.slots
    n = len(self._rank_of)
    dp = buf.dp_array()
    seen = np.zeros(n, dtype=bool)
    seen[slots] = True
    if (self._layout_moves != self._moves or len(self._layout_seen) != n
            or not np.array_equal(seen, self._layout_seen)
            or not np.array_equal(dp, self._layout_dp[slots])):
        nodes: dict[int, set[str]] = {}
        for (node, _), rep in zip(buf.hw, buf.dp, strict=True):
            if rep is not None:
                nodes.setdefault(rep, set()).add(node)
        one = np.zeros(n, dtype=bool)
        one[slots] = np.fromiter((rep is not None and len(nodes[rep]) == 1 for rep in buf.dp),
                                 dtype=bool, count=len(buf.dp))
        layout_dp = np.full(n, -1, dtype=np.int64)
        layout_dp[slots] = dp
        self._layout_moves, self._layout_seen = self._moves, seen
        self._layout_dp, self._layout_one = layout_dp, one
    return self._layout_one[r]


@staticmethod
def _replica_elsewhere(d: np.ndarray, buf: _StepBuffer, pos: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Per rank: the median deviation of its replica's ranks on other nodes (NaN when
    its replica has none reporting), and of its whole replica (NaN under 4 ranks).

    Warm-up only (``warmup_steps`` steps a start), so a loop over ranks is affordable.
    """
    n = len(d)
    elsewhere = np.full(n, _NAN)
    whole = np.full(n, _NAN)
    reps: dict[int, dict[str, list[int]]] = {}
    for j, i in enumerate(pos.tolist()):
        rep = buf.dp[i]
        if rep is not None:
            reps.setdefault(rep, {}).setdefault(buf.hw[i][0], []).append(j)
    for by_node in reps.values():
        members = [j for js in by_node.values() for j in js]
        if len(members) >= 4:
            whole[members] = median(d[members])
        if len(by_node) < 2:
            continue
        for node, js in by_node.items():
            others = [j for other, ks in by_node.items() if other != node for j in ks]
            elsewhere[js] = median(d[others])
    return elsewhere, whole
