"""Stragglers no CUSUM sees: warm-up gross steps, bursts, recurring outliers,
sustained shifts.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from detector import sku_class
from detector.findings import Finding
from detector.step_numerics import _NAN
from detector.steps.common import (
    _GROSS_MARGIN,
    _GROSS_MARGIN_Z,
    _WANDER_GROSS_NODES,
    _WANDER_MIN_STEPS,
    _smoothed,
    _StepBuffer,
)
from models.numpy_c import count_nonzero
from models.peer_stats import median

# A warm-up step compared with its peers as a whole counts as gross only this many noise units
# out (blind5 E4); 3 blocked a GPU 45 % slow under +-20 % sequence imbalance (issue 10: gross
# from the start within 3 steps; tests/test_detect_gross_batch.py).
_GROSS_NOISE_Z = 2.0

# A recurring straggler's count no likelier than this if the job's outlier steps fell on its
# units alike (JobMonitor._recur_chance): one false page in a thousand looks at a workload's
_RECUR_CHANCE = 1e-3

# A sustained slowdown under wide step-to-step spread (JobMonitor._check_sustained): each rank's
# deviation over its bias, averaged with weights decaying by _SUS_ALPHA a step (~2 / _SUS_ALPHA
# steps' worth), against its standard error from the spread of the ranks' own deviations.
_SUS_ALPHA = 1.0 / 64.0
_SUS_SPREAD = 0.05   # in force where a rank's deviation spreads >= 5 % a step (jitter: 1-3 %)
_SUS_Z = 4.0         # its mean this many standard errors over the job's typical rank's
_SUS_CLEAR_Z = 2.0   # and it clears back under this many
_SUS_MIN_N = 24.0    # once its mean is worth this many independent steps
_SUS_EVERY = 8       # steps between looks at the ranks' median spread while it is under
# ... and its sums kept only once the job's deviations spread this share of _SUS_SPREAD across
# its ranks (their root mean square a step, smoothed): ordinary jitter (1-3 %) never pays for
# them; a spread that makes the test needed does from its first steps (blind5 E5: ~0.35).
# The ranks' mean square is the mean of their own variances (and means squared), at least
# half the median rank's variance: a median spread of _SUS_SPREAD is an RMS >= 0.71 of it.
_SUS_GATE = 0.6


def _binomial_tail(n: int, p: float, c: int) -> float:
    """P(X >= c) for X ~ Binomial(n, p) (summed from c: the terms fall from there when c is
    over the mean; at or under it, 1 is near enough for a test of a high count).  A first
    term under the smallest float is the sum's (the rest fall from it): 0, at once -- the sum
    ran on to n, 0 < 1e-12 x 0 never true (review25: 400,000 terms, 0.15-0.3 s, at n = 1e6).

    >>> round(_binomial_tail(18, 1 / 8, 8), 6), _binomial_tail(18, 1 / 8, 2)
    (0.000811, 1.0)
    """
    if c <= n * p:
        return 1.0
    if c > n:
        return 0.0
    lp, lq, top = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    total = 0.0
    for k in range(c, n + 1):
        term = math.exp(top - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * lp + (n - k) * lq)
        total += term
        if term <= 1e-12 * total:
            break
    return min(total, 1.0)


def _others_lower_median(x: np.ndarray, groups: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """For each position ``i`` of ``idx``: the lower median of the OTHER members of its peer
    group (``x[j]``, ``groups[j] == groups[i]``, ``j != i``); NaN alone in its group.

    A value at or below it is one that half the rank's peers or more are at or below
    (JobMonitor._check_burst: a node that is half its group)."""
    out = np.full(len(idx), _NAN)
    gi = groups[idx]
    for grp in np.unique(gi).tolist():
        vals = np.sort(x[groups == grp])
        n = len(vals)
        if n < 2:
            continue
        at = gi == grp
        m = (n - 2) // 2  # (the lower median's place among n - 1 others)
        above = np.searchsorted(vals, x[idx[at]], side="left") > m
        out[at] = np.where(above, vals[m], vals[m + 1])
    return out


def _gross_prior(self, step: int, r: np.ndarray, d: np.ndarray, ts: np.ndarray,
                 med: np.ndarray, sigma: float, buf: _StepBuffer, pos: np.ndarray,
                 decided_ts: float, out: list[Finding]) -> None:
    """Warm-up: report ranks far slower than their peers without waiting for history.

    Peer comparison needs no history for a gross outlier: >= 30 % slower than the peer
    median is far beyond jitter or a one-step stall (hence two steps in a row).  Per-step
    sequence-length imbalance is not: it slows a whole replica, every rank of it on
    every node it spans, by a share drawn anew each step -- two draws in a row can put a
    replica 30-40 % behind its peers.  A bad GPU slows itself, a bad node its own ranks,
    at every step.  So a rank is compared with what its replica shares on *other* nodes
    (:meth:`_replica_elsewhere`); a replica on one node cannot be told from its node by
    place, so a gross slowdown of that whole replica must last ``gross_steps + 1``
    steps (still within 3 steps of the start): the batch moves on, a node does not.
    The rank enters its CUSUM already alarmed, so it clears through the same hysteresis
    as any other slow rank once it keeps pace.

    The prior is for a rank slow from its start (a job landing on a bad GPU, DESIGN's "from
    the job's first step"): a rank that kept its peers' pace -- under half the limit over
    them -- for ``gross_steps`` warm-up steps before its gross run has no such start, and a
    change after it is judged by its CUSUM as after the warm-up.  A host stall pauses every
    process of a node for the same second or two: a fine-tune's two ranks there x2.2 for its
    steps 9-10 of 1 s, at pace before and after, escalated GPU 6 (tenant41 H1, blind28's
    one-step host stall on a shared node).
    """
    cfg = self.cfg
    limit = math.log1p(cfg.gross_slowdown)
    elsewhere, whole = self._replica_elsewhere(d, buf, pos)
    has = ~np.isnan(elsewhere)
    g = np.where(has, d - np.where(has, elsewhere, 0.0), d)
    # A rank compared with its peers as a whole (its replica on one node, or no replicas
    # known) carries its replica's batch in ``d``: where batches spread widely from step
    # to step, 30 % over the median is what the workload does.  Such a step counts only
    # when it is also clearly slow in the job's own noise (the peers' spread, ``sigma``, 2x):
    # one replica of a long-context job (each replica's compute x lognormal(0, 0.42) a
    # step, noise ~0.2) drew +104 %, +57 %, +33 % on three steps and its node was paged
    # (blind5 E4).  With ordinary jitter (1-3 %) 2 sigma is far below 30 %: no change.
    # A step within the job's noise of the limit counts (_GROSS_MARGIN_Z): the limit names
    # the slowdown, a measured step carries its jitter either side of it.
    floor = limit - min(_GROSS_MARGIN_Z * sigma, _GROSS_MARGIN)
    gross = (g >= floor) & (has | (g >= _GROSS_NOISE_Z * sigma))
    first = gross & (self._gross[r] == 0)
    self._gross_onset[r[first]] = ts[first]
    self._gross[r] = np.where(gross, self._gross[r] + 1, 0)
    self._paced[r] += g < 0.5 * limit
    need = np.where(~has & (whole >= floor), cfg.gross_steps + 1, cfg.gross_steps)
    new = gross & (self._gross[r] >= need) & ~self._reported[r] & (
        self._paced[r] < cfg.gross_steps)
    if count_nonzero(gross) and len(self._gross_nodes) < _WANDER_GROSS_NODES:
        hw, seen = self._hw, self._gross_nodes
        for s in r[gross].tolist():  # (bounded: _WANDER_GROSS_NODES names at most)
            if hw[s] is not None and len(seen) < _WANDER_GROSS_NODES:
                seen.add(hw[s][0])
    if not new.any():
        return
    if len(self._gross_nodes) >= _WANDER_GROSS_NODES or self._wandering:
        # Gross steps on three nodes or more in one warm-up: a fault is on one unit (a GPU,
        # a node); a slowness that visits unit after unit is the workload's (MoE routing
        # caught mid-run, blind8 H1: 11 nodes >= 30 % over their replica elsewhere on the
        # second step, 3 others later).  Held: the ranks stay in their CUSUMs, judged after
        # the warm-up as the job's wandering lets (_wander_update).
        return
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    bank = self._slow
    for i in np.flatnonzero(new).tolist():
        s = int(r[i])  # a slot; the finding names the rank
        rank = self._rank_of[s]
        n = int(self._gross[s])
        bank.score[s], bank.alarmed[s] = bank.h_cap, True
        bank.onset_ts[s] = self._gross_onset[s]
        self._run_sum[s], self._run_n[s] = float(d[i]) * n, n
        self._run_own[s] = float(d[i]) * n
        self._reported[s] = True
        ratio = math.exp(float(d[i]))
        out.append(self._finding(
            rank, dp_of[rank], "slow_rank", "slow_node", "unknown", decided_ts,
            float(self._gross_onset[s]), True, min(0.95, 0.5 + (ratio - 1.0) * 3),
            {"step": step, "rank": rank, "compute_ratio_to_peers": round(ratio, 4),
             "mean_ratio_over_run": round(ratio, 4), "run_steps": n,
             "peer_median_compute_ms": round(math.exp(float(med[i])), 2),
             "noise_sigma": round(sigma, 4), "gross_outlier": True,
             **({"replica_elsewhere_ratio": round(math.exp(float(elsewhere[i])), 4)}
                if has[i] else {}),
             "rule": f">= {cfg.gross_slowdown:.0%} slower than the peer median for "
                     f"{cfg.gross_steps} steps during warm-up (no history needed)"}))


def _check_burst(self, step: int, r: np.ndarray, g: np.ndarray, ts: np.ndarray,
                 med: np.ndarray, buf: _StepBuffer, decided_ts: float,
                 out: list[Finding],
                 peers: tuple[np.ndarray, np.ndarray] | None = None) -> None:
    """After warm-up: a burst -- a rank ``gross_slowdown`` slower than its peers (over its
    own learned bias ``g``) for ``gross_steps`` steps in a row, not reported slow -- is
    evidence (``slow_burst``), never a verdict; cleared on its first step back.

    An intermittent fault (a power brake in bursts of 12-30 s) slows a rank 2x for a few
    steps a burst: the CUSUM clips each step and the burst is over before it alarms, so
    no slow_rank is ever found (blind2 F3).  With a never-routine throttle seen on the
    rank's GPU or node meanwhile, the correlator takes it as the rank measurably slower
    than its peers (Correlator._burst_impact); alone it pages nobody.  The warm-up's
    gross-prior counters count it (unused after warm-up).

    "Its peers" is the group's median -- or, ``peers`` given (each rank's deviation from
    its group median ``med`` and its peer group; not under replica imbalance, where a
    replica's batch is no evidence), the lower median of its OTHER peers: a rank that
    much slower than half of them or more.  A node that is half its group (TP8 x DP2 on
    two nodes; a pipeline stage of 16 ranks on two nodes) puts the group's median
    between the halves: its ranks braked 1.6x were 1.26x the median, under the rule, and
    a brake seen on the one poll inside a burst explained nothing (blind14 psu-brake:
    fleet-s2 gx-11, pipe-s2 hx01, held pipe-s7 hx02 never paged).  The other half, at
    its normal pace, is the reference; more than half the group slow alike is the
    group's pace, no burst.
    """
    cfg = self.cfg
    limit = math.log1p(cfg.gross_slowdown)
    gross = g >= limit
    if peers is not None and len(g) and float(g.max()) >= 0.5 * limit:
        # (a rank half-way there: the usual step has none)
        near = np.flatnonzero(~gross & (g >= 0.5 * limit))
        if len(near):
            ref = _others_lower_median(peers[0] + med, peers[1], near)
            lift = med[near] - ref  # (NaN alone in its group: no lift)
            lift = np.where(lift > 0.0, lift, 0.0)
            if count_nonzero(g[near] + lift >= limit):
                g, med = g.copy(), med.copy()
                g[near] += lift
                med[near] -= lift
                gross = g >= limit
    counts = self._gross
    if not count_nonzero(gross) and not count_nonzero(counts):
        return  # (the usual step: no rank in a burst)
    prev = counts[r]
    first = gross & (prev == 0)
    self._gross_onset[r[first]] = ts[first]
    now = np.where(gross, prev + 1, 0)
    counts[r] = now
    told = (now == cfg.gross_steps) & ~self._reported[r]
    ended = ~gross & (prev >= cfg.gross_steps)
    if not count_nonzero(told) and not count_nonzero(ended):
        return
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    for i in np.flatnonzero(told | ended).tolist():
        s = int(r[i])  # a slot; the finding names the rank
        rank = self._rank_of[s]
        if not told[i]:
            f = self._finding(rank, dp_of[rank], "slow_burst", "slow_node", "unknown",
                              decided_ts, decided_ts, False, 0.0, {"step": step})
        else:
            f = self._finding(
                rank, dp_of[rank], "slow_burst", "slow_node", "unknown", decided_ts,
                float(self._gross_onset[s]), True, 0.3,
                {"step": step, "rank": rank,
                 "compute_ratio_to_peers": round(math.exp(float(g[i])), 4),
                 "run_steps": int(now[i]),
                 **({"step_period_s": round(self._period, 3)}
                    if math.isfinite(self._period) else {}),
                 "peer_median_compute_ms": round(math.exp(float(med[i])), 2),
                 "rule": f">= {cfg.gross_slowdown:.0%} slower than the peer median for "
                         f"{cfg.gross_steps} steps in a row: evidence, not a verdict"})
        out.append(f._replace(verdict=False))


def _check_recurring(self, step: int, r: np.ndarray, z: np.ndarray, g: np.ndarray,
                     ts: np.ndarray, med: np.ndarray, buf: _StepBuffer, decided_ts: float,
                     out: list[Finding]) -> None:
    """After warm-up: a rank that is its group's clear outlier on a fixed share of its
    steps (a GPU slow on one step in five, +35-40 %, fine between) is slow
    (``slow_rank``), though no run of steps is.

    The CUSUM clips each step at ``slow_z_clip`` and drains on the steps between, by
    design (a one-off spike -- a GC pause, a loader stall -- pages nobody), so it never
    alarms on such a rank (blind3 B5: 13 of 16 never found, 3 after 194-287 s).  What
    chance spikes do not do is recur on the same rank: each rank keeps a count of its
    clear-outlier steps (z at the clip and ``slow_recur_min`` slower than its peers
    over its learned bias ``g``; the first of a run of them only, and none while the
    CUSUM has it slow: a sustained slowdown is the CUSUM's, and is one) decaying with a
    half-life of ``slow_recur_half_life_steps``; at ``slow_recur_count`` -- and
    ``slow_recur_ratio`` times the other ranks' mean count, so a workload that makes any
    rank the outlier now and then (sequence-length imbalance) raises no one -- the rank
    is reported as the gradient detector reports repeated spikes.  It clears when its
    count decays under ``slow_recur_clear``.
    """
    cfg = self.cfg
    recur = self._recur
    if self._recur_live:
        recur *= 0.5 ** (1.0 / cfg.slow_recur_half_life_steps)
    hit = z >= cfg.slow_z_clip
    if count_nonzero(hit):
        hit &= g >= math.log1p(cfg.slow_recur_min)
    last = self._recur_last
    if count_nonzero(hit) or count_nonzero(last):
        # An outlier step counts when the rank's step before was none (a slowdown's first
        # step: a sustained one, the CUSUM's, counts once), unless the CUSUM has it slow.
        was = last[r]
        last[r] = hit
        hit &= ~was & (self._recurring[r] | ~self._reported[r])
    if count_nonzero(hit):
        hr = r[hit]
        fresh = recur[hr] < 0.5
        self._recur_onset[hr[fresh]] = ts[hit][fresh]
        recur[hr] += 1.0
        self._recur_live = True
        top = hr[(recur[hr] >= cfg.slow_recur_count) & ~self._reported[hr]]
        if len(top):
            # (against the ranks that count: one told slow by another rule counts none,
            # and five such among ten halved the others' mean -- Alibaba job 4)
            n = len(self._rank_of)
            counting = self._recurring[:n] | ~self._reported[:n]
            total, n = float(recur[:n][counting].sum()), int(count_nonzero(counting))
            rising = [s for s in top.tolist() if n < 2 or recur[s] >= cfg.slow_recur_ratio
                      * (total - recur[s]) / (n - 1)]
            if rising:
                rising = [s for s in rising
                          if self._recur_chance(s, buf, counting) < _RECUR_CHANCE]
        else:
            rising = []
    elif not self._recur_live:
        return  # (the usual step: no count)
    else:
        rising = []
    falling = ((recur < cfg.slow_recur_clear) & self._recurring).nonzero()[0].tolist() \
        if count_nonzero(self._recurring) else []
    if not rising and not falling:
        if not count_nonzero(recur >= 0.01):
            recur[:] = 0.0
            self._recur_live = False
        return
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    at = {int(s): i for i, s in enumerate(r.tolist())}
    for s in rising:
        rank = self._rank_of[s]
        self._reported[s] = self._recurring[s] = True
        i = at[s]
        out.append(self._finding(
            rank, dp_of[rank], "slow_rank", "slow_node", "unknown", decided_ts,
            float(self._recur_onset[s]), True, 0.6,
            {"step": step, "rank": rank,
             "compute_ratio_to_peers": round(math.exp(float(self._slow_dev[s])), 4),
             "peer_median_compute_ms": round(math.exp(float(med[i])), 2),
             "recent_outlier_steps": round(float(recur[s]), 2),
             "baseline_ratio": round(math.exp(float(self._base[s])), 4),
             "rule": f"its peers' clear outlier (>= {cfg.slow_recur_min:.0%} slower, "
                     f"z >= {cfg.slow_z_clip:g}) on a recurring share of steps: a "
                     f"count decaying over {cfg.slow_recur_half_life_steps:g} steps "
                     f">= {cfg.slow_recur_count:g}"}))
    for s in falling:
        self._rule_cleared(s, self._recurring, step, dp_of, decided_ts, out)


def _recur_chance(self, s: int, buf: _StepBuffer, counting: np.ndarray) -> float:
    """The chance that the job's recent clear-outlier steps, falling on its units alike,
    leave one of them with as many as slot ``s``'s unit has (Bonferroni over the units).

    A unit is a tensor-parallel group (its ranks' stage and replica: a TP group steps at
    its slowest member's pace, so one rank's pause makes every member an outlier at once;
    its count is its members' highest); the count of outlier steps is the units' recurring
    counts summed.  Uncoordinated Python GC (blind14 N6: each rank +150-400 ms on 1 step
    in ~45, a TP4 group held up on ~9 % of steps) gives every unit outlier steps at one
    rate, and over ~50 steps one of eight reaches 8.6 while the others' mean is 1.4 -- 4x
    it, 0.6 % by this chance: the job's workload.  A straggler among quiet units holds
    nearly all of them (8 of 8: 5e-7)."""
    units: dict[tuple[Any, Any], float] = {}
    mine = None
    recur = self._recur
    for rank, pp, dp in zip(buf.ranks, buf.pp, buf.dp, strict=True):
        sl = self._slot.get(rank)
        if sl is None or sl >= len(counting) or not counting[sl]:
            continue
        key = (pp, rank if dp is None else dp)
        v = float(recur[sl])
        if v > units.get(key, -1.0):
            units[key] = v
        if sl == s:
            mine = key
    k = len(units)
    if mine is None or k < 2:
        return 0.0
    return min(1.0, k * _binomial_tail(int(round(sum(units.values()))), 1.0 / k,
                                       int(units[mine])))


def _check_sustained(self, step: int, r: np.ndarray, g: np.ndarray, ts: np.ndarray,
                     med: np.ndarray, buf: _StepBuffer, decided_ts: float,
                     out: list[Finding]) -> None:
    """After warm-up: a rank slower than its peers on average, step after step, by more
    than the job's step-to-step spread lets chance make (``slow_rank``), where that spread
    hides it from the CUSUM.

    Under a wide per-step spread -- a long-context job's replicas each drawing a
    document of 2-5x the compute, the slowest replica changing every step -- a GPU 30 %
    slower is ~0.6 noise units a step: under the CUSUM's allowance, so it never alarms,
    and no run of steps is gross (blind5 E5: h100n004 GPU 2, 25-35 % slower for ~100
    steps, never found).  What chance does not do is keep the SAME rank slow: the mean
    of its deviations over its learned bias ``g`` (weights decaying by ``_SUS_ALPHA``
    a step) has a standard error of its step-to-step spread over the square root of the
    steps it weighs, and shrinks as the steps add up while a real slowdown's does not.
    The mean is taken over the job's typical rank's (the median of the ranks' means: a
    skewed workload makes every rank's mean over its median alike) and its spread is
    the larger of its own and the ranks' median spread.  A rank whose mean stands
    ``_SUS_Z`` standard errors out, and by ``slow_min_effect`` with ``slow_effect_z``
    of them to spare, is reported; it clears when it falls back under ``_SUS_CLEAR_Z``.
    In force only where the ranks' median spread is ``_SUS_SPREAD`` or more: under
    ordinary jitter the CUSUM finds a 3 % slowdown within tens of steps.
    """
    cfg = self.cfg
    if not self._sus_on:
        # Off until the job's spread says the test may be needed (one dot product a step;
        # the sums below were +3.4 % of the step path on every step of every job).  Once
        # on, on for the job's life: the test as it was, from the first step kept.
        self._sus_ms = _smoothed(self._sus_ms, float(g @ g) / len(g), cfg.slow_sigma_alpha)
        if self._sus_ms < (_SUS_GATE * _SUS_SPREAD) ** 2:
            return
        self._sus_on = True
    keep = 1.0 - _SUS_ALPHA
    # (one gather and one scatter a step, on every step of a job whose spread is wide)
    acc = self._sus[r]
    acc *= keep
    acc[:, 0] += 1.0
    acc[:, 1] += g
    acc[:, 2] += g * g
    self._sus[r] = acc
    live = count_nonzero(self._sustained)
    if not live and self._sus_spread < _SUS_SPREAD and self._evaluated % _SUS_EVERY:
        return  # (the usual job, ordinary jitter, the CUSUM's: looked at now and then)
    w, s1, s2 = acc[:, 0], acc[:, 1], acc[:, 2]
    # The weights' squares sum to what the weights' sum says (weights keep ** j, j < k):
    # 1 - keep ** k = w (1 - keep), so sum of squares = (1 - (1 - w (1 - keep)) ** 2) /
    # (1 - keep ** 2); the mean weighs as many independent steps as w ** 2 / that.
    left = 1.0 - w * _SUS_ALPHA
    n_eff = w * w * (1.0 - keep * keep) / np.maximum(1.0 - left * left, 1e-12)
    ready = n_eff >= _SUS_MIN_N
    if not count_nonzero(ready) and not live:
        return  # (the first steps after a (re)start: too few to weigh)
    mean = s1 / w
    spread = np.sqrt(np.maximum(s2 / w - mean * mean, 0.0))
    job_spread = median(spread[ready], scratch=True) if count_nonzero(ready) else 0.0
    self._sus_spread = job_spread
    if job_spread < _SUS_SPREAD and not live:
        return
    se = np.maximum(spread, job_spread) / np.sqrt(n_eff)
    over = self._class_over(r, mean, se, ready) if count_nonzero(ready) else mean
    t = over / np.maximum(se, 1e-12)
    standing = ready & (t >= 1.0)
    onset = self._sus_onset
    rs = r[standing]
    onset[rs] = np.where(onset[rs] == 0.0, ts[standing], onset[rs])
    onset[r[~standing]] = 0.0
    # (not before the job's wandering is known: under MoE routing, whose runs last tens
    # of steps, the standard error of i.i.d. steps pages the hot ranks, blind8 H2)
    free = ready & ~self._reported[r] & (job_spread >= _SUS_SPREAD) \
        & (self._wander_n >= _WANDER_MIN_STEPS)
    rising = r[free & (t >= _SUS_Z)
               & (np.expm1(over - cfg.slow_effect_z * se) >= cfg.slow_min_effect)]
    falling = r[self._sustained[r] & (t < _SUS_CLEAR_Z)] if live else r[:0]
    if not len(rising) and not len(falling):
        return
    at = {int(s): i for i, s in enumerate(r.tolist())}
    if len(rising):
        rising = self._sustained_alike(rising, r, free & (t >= 0.5 * _SUS_Z), over, at)
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    nodes = Counter(self._hw[s][0] for s in rising.tolist() if self._hw[s] is not None)
    for s in rising.tolist():
        rank, i = self._rank_of[s], at[s]
        self._reported[s] = self._sustained[s] = True
        hw = self._hw[s]
        alike = nodes[hw[0]] if hw is not None else 0
        ratio = math.exp(float(over[i]))
        out.append(self._finding(
            rank, dp_of[rank], "slow_rank", "slow_node", "unknown", decided_ts,
            float(onset[s]) or decided_ts, True, min(0.95, 0.5 + (ratio - 1.0) * 3),
            {"step": step, "rank": rank,
             "compute_ratio_to_peers": round(math.exp(float(self._slow_dev[s])), 4),
             "mean_ratio_over_run": round(ratio, 4),
             "steps_weighed": round(float(n_eff[i]), 1),
             "standard_errors": round(float(t[i]), 2),
             "step_spread": round(float(max(spread[i], job_spread)), 4),
             "peer_median_compute_ms": round(math.exp(float(med[i])), 2),
             "baseline_ratio": round(math.exp(float(self._base[s])), 4),
             **({"node_wide": alike} if alike >= 2 else {}),
             "rule": f"its mean over its peers' median, weighed over ~"
                     f"{2.0 / _SUS_ALPHA - 1.0:.0f} steps, >= {_SUS_Z:g} standard errors "
                     f"of the job's step-to-step spread over the typical rank's"}))
    for s in falling.tolist():
        self._rule_cleared(s, self._sustained, step, dp_of, decided_ts, out)


def _class_over(self, r: np.ndarray, mean: np.ndarray, se: np.ndarray,
                ready: np.ndarray) -> np.ndarray:
    """Each rank's long ``mean`` over the job's typical rank, less its class's offset
    (detector.sku_class): the typical rank is the median of the ready ranks' means with
    each class's offset taken out; a rank's first look (its mean just weighs enough) is
    kept, and a whole node in no class joins one, or forms one with another whole node
    or more, when it stands out alike and where it stood at its first look (a second GPU
    model in the job, slower from the start).  A rank in no class is judged as before;
    a class's rank against its class's median."""
    cls = self._sku[r]
    over = mean - median((mean - self._sku_off[r])[ready], scratch=True)
    seen = self._sku_seen[r]
    new = ready & ~seen
    if count_nonzero(new):
        rn = r[new]
        self._sku_first[rn] = over[new]
        self._sku_first_se[rn] = se[new]
        self._sku_seen[rn] = True
        seen = seen | new
    free = seen & ready & (cls == 0)
    off, known = sku_class.offsets(cls - 1, over, se, ready)
    if count_nonzero(free):
        hw = self._hw
        nodes = [None if hw[s] is None else hw[s][0] for s in r.tolist()]
        found = sku_class.find(nodes, over - off, se, self._sku_first[r],
                               self._sku_first_se[r], free, known)
        if found:
            k = np.array([found.get(n, -1) if n is not None else -1 for n in nodes])
            cls = np.where(k >= 0, k + 1, cls)
            self._sku[r] = cls
            off, _ = sku_class.offsets(cls - 1, over, se, ready)
    if not count_nonzero(cls):
        return over
    self._sku_off[r] = off
    return over - off


def _rule_cleared(self, s: int, mine: np.ndarray, step: int, dp_of: dict[int, int | None],
                  decided_ts: float, out: list[Finding]) -> None:
    """Slot ``s``, reported slow by the rule whose flags are ``mine``, is no longer slow by
    it: cleared, unless another rule (the CUSUM, the recurring, sustained or wandering
    job's rule) still has it slow -- that one clears it."""
    mine[s] = False
    if (self._slow.alarmed[s] or self._recurring[s] or self._sustained[s]
            or self._wander_rep[s] or self._twin_rep[s] or self._pair_rep[s]
            or self._tp_rep[s]):
        return
    rank = self._rank_of[s]
    self._reported[s] = False
    out.append(self._finding(rank, dp_of.get(rank), "slow_rank", "slow_node", "unknown",
                             decided_ts, decided_ts, False, 0.0, {"step": step}))


def _sustained_alike(self, rising: np.ndarray, r: np.ndarray, near: np.ndarray,
                     over: np.ndarray, at: dict[int, int]) -> np.ndarray:
    """``rising`` (slots) with the ranks on their nodes whose mean stands half as far out
    (``near``) and is at least half theirs: found with them, as :meth:`_node_alike` does
    for the CUSUM (TP inside a node: its ranks at the pace of its slowest GPU cross a
    step apart, and the first found alone was a GPU page beside its node's)."""
    hw = self._hw
    mine = {hw[s][0]: float(over[at[s]]) for s in rising.tolist() if hw[s] is not None}
    if not mine:
        return rising
    cand = r[near]
    more = [s for s in cand.tolist() if hw[s] is not None and hw[s][0] in mine
            and float(over[at[s]]) >= 0.5 * mine[hw[s][0]]]
    return np.unique(np.concatenate([rising, np.array(more, dtype=rising.dtype)]))


def _reset_sustained(self, m: np.ndarray | None) -> None:
    """Forget the sustained-shift sums of slots ``m`` (None: all), as a restart does."""
    at = slice(None) if m is None else m
    self._sus[at] = 0.0
    self._sus_onset[at] = 0.0
    self._sustained[at] = False
    if m is None:
        self._sus_spread = 0.0
