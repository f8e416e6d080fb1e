"""A rank judged against its twins (peers whose deviation moves with its own),
and jobs of two ranks.
"""

from __future__ import annotations

import math

import numpy as np

from detector.findings import Finding
from detector.step_numerics import _NAN
from detector.steps.common import (
    _GROSS_MARGIN,
    _TWIN_CORR,
    _TWIN_EVERY,
    _TWIN_FIRST,
    _TWIN_GROUP_MAX,
    _TWIN_MAX,
    _TWIN_MIN,
    _TWIN_WINDOW,
    _WANDER_MIN_EFFECT,
    _arange,
    _floats,
    _smoothed,
    _StepBuffer,
)
from models.peer_stats import MAD_TO_SIGMA, layout, median

# A job of two ranks (DP 2, JobMonitor._check_pair): no median referees, the collective does --
# the slow rank computes longer and its partner waits for it (comm_ms up on the fast one only).
# Slow: >= _PAIR_RATIO its partner's compute with the partner's extra wait making up at least
# _PAIR_WAIT_SHARE of the gap, on _PAIR_STEPS steps in a row (a batch imbalance picks either
# rank at random: 2^-19 a step for a run of 20); cleared after as many steps under half that.
_PAIR_RATIO = 1.2
_PAIR_WAIT_SHARE = 0.5
_PAIR_STEPS = 20
# ... or, gross (>= gross_slowdown, less _GROSS_MARGIN) and steady, on _PAIR_GROSS_STEPS steps in
# a row whose log ratios lie within _PAIR_STEADY of each other: a GPU's slowdown holds its
# ratio (+- its jitter, 1-3 %), a batch draws anew each step -- a job whose batches make either
# rank up to 1.5x the other (lognormal 0.2 a rank) draws five such steps in a row about once
# in 10^5 (a gross slow GPU of a DP2 job from its first step: 20 steps before, issue 10's
# target 3).
_PAIR_GROSS_STEPS = 5
_PAIR_STEADY = 0.06
_TWIN_ALPHA = 0.2          # a rank's deviation from its twins' median, smoothed over ~5 steps
_TWIN_BASE_ALPHA = 0.02    # its own offset from them, learned over ~50 steps
_TWIN_Z = 8.0              # slow: that mean over the offset >= _WANDER_MIN_EFFECT and this many
#                            of its noise (the ranks' spread of it, smoothed as the mean is)
# A step adds at most this many times that bar to the mean (the CUSUM's slow_z_clip, here): one
# step's excursion is no slowdown -- blind37 F2: a one-step loader stall's 7 node mates wait for
# it inside their all-gathers, compute x1.45-1.52 for that step alone, which took the ~5-step
# mean over the 7 % bar at once (0.2 x log 1.47 = 0.077): 4 escalations.  At 2.5 a step no run
# under three steps reaches it (0.5, 0.9, 1.22 of the bar); a slowdown under 2.5 bars (x1.18 at
# the 7 % floor) is judged as before.
_TWIN_CLIP = 2.5


def _correlations(h: np.ndarray) -> np.ndarray:
    """The correlation of every pair of rows of ``h`` (0 with a constant row)."""
    h = h - h.mean(axis=1, keepdims=True)
    norm = np.sqrt(np.einsum("ij,ij->i", h, h))
    norm[norm == 0.0] = math.inf
    return (h @ h.T) / (norm[:, None] * norm[None, :])  # (np.outer's product, no wrapper)


def _group_correlations(h: np.ndarray) -> np.ndarray:
    """:func:`_correlations` of each ``h[g]`` of a 3-d ``h``, in one pass: the same values
    bit for bit (each group's mean, sums of squares and product taken over its own rows as
    the 2-d calls take them: tests/test_perf43.py)."""
    h = h - h.mean(axis=2, keepdims=True)
    norm = np.sqrt(np.einsum("gij,gij->gi", h, h))
    norm[norm == 0.0] = math.inf
    return (h @ h.transpose(0, 2, 1)) / (norm[:, :, None] * norm[:, None, :])


def _row_nanmedians(vals: np.ndarray) -> np.ndarray:
    """``np.nanmedian(vals, axis=1)`` of a 2-d float64 array, bit for bit, at a sixth of
    the cost: numpy takes the median of rows under 600 long through a masked array
    (``np.ma.median`` of ``vals`` masked where NaN: ~1.4 ms for 128 rows of 7 on this box),
    whose steps these are without it -- each row sorted with its NaNs filled as +inf (the
    same argsort: the same order of equal values, a real inf among them), its two middle
    values of its ``n`` numbers (one, twice, when ``n`` is odd) summed as numpy sums them
    (a reduction from +0.0: -0.0 twice is +0.0) and halved; a row of NaNs only is NaN."""
    nan = np.isnan(vals)
    filled = np.where(nan, np.inf, vals)
    srt = np.take_along_axis(filled, filled.argsort(axis=1), axis=1)
    n = vals.shape[1] - np.count_nonzero(nan, axis=1)
    hi = n // 2
    lo = np.where(n % 2 == 1, hi, hi - 1)
    at = _arange(len(vals))
    out = np.add.reduce(np.stack((srt[at, lo], srt[at, hi]), axis=1), axis=1)
    out /= 2.0
    if not n.all():
        out[n == 0] = np.nan
    return out


def _check_pair(self, step: int, slots: np.ndarray, compute: np.ndarray, buf: _StepBuffer,
                decided_ts: float, out: list[Finding]) -> None:
    """A job of two ranks (DP 2): with two peers the median is no referee, but the
    collective is -- the rank that computes longer makes its partner wait for it, so the
    fast one's ``comm_ms`` rises by about the gap and the slow one's does not (blind12 B5:
    a GPU 1.22-1.38x slower went 183-369 steps unflagged).  A rank that is the waited-for
    one, ``_PAIR_RATIO`` slower, ``_PAIR_STEPS`` steps in a row is slow; cleared after as
    many steps under half that ratio -- or ``_PAIR_GROSS_STEPS`` steps gross and steady
    (:meth:`_pair_steady`)."""
    comm = _floats(buf.comm) if len(slots) == 2 else None
    if comm is None or np.isnan(comm).any():
        return
    run, rep = self._pair_run, self._pair_rep
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    for i in (0, 1):
        s, o = int(slots[i]), int(slots[1 - i])
        ratio = float(compute[i] / compute[1 - i])
        gap = float(compute[i] - compute[1 - i])
        waited = float(comm[1 - i] - comm[i])
        if not rep[s]:
            waits = waited >= _PAIR_WAIT_SHARE * gap
            slow = ratio >= _PAIR_RATIO and waits
            run[s] = run[s] + 1 if slow else 0
            gross = self._pair_steady(s, math.log(ratio) if waits and ratio > 0 else 0.0)
            if (run[s] >= _PAIR_STEPS or gross) and not self._reported[s]:
                rep[s] = self._reported[s] = True
                run[s] = self._pair_gross[s] = 0
                rank = self._rank_of[s]
                rule = (f">= {self.cfg.gross_slowdown:.0%} slower, steady, "
                        f"{_PAIR_GROSS_STEPS}" if gross else
                        f">= {_PAIR_RATIO - 1.0:.0%} slower {_PAIR_STEPS}")
                out.append(self._rule_finding(
                    rank, dp_of.get(rank), decided_ts, ratio, step, math.log(ratio),
                    {"pair_ratio": round(ratio, 4), "partner": self._rank_of[o],
                     "partner_wait_ms": round(waited, 2),
                     **({"gross_outlier": True} if gross else {}),
                     "rule": f"of a job of two ranks, the one its partner waits for in "
                             f"the collective, {rule} steps in a row"}))
        else:
            run[s] = run[s] + 1 if ratio < 1.0 + 0.5 * (_PAIR_RATIO - 1.0) else 0
            if run[s] >= _PAIR_STEPS:
                run[s] = 0
                self._rule_cleared(s, rep, step, dp_of, decided_ts, out)


def _pair_steady(self, s: int, lr: float) -> bool:
    """Slot ``s`` of a job of two ranks at log ratio ``lr`` to its partner (which waits for
    it): whether its run of gross steps within ``_PAIR_STEADY`` of each other has reached
    ``_PAIR_GROSS_STEPS`` (a step out of the band starts a run of its own)."""
    n, lo, hi = int(self._pair_gross[s]), float(self._pair_lo[s]), float(self._pair_hi[s])
    if lr < math.log1p(self.cfg.gross_slowdown) - _GROSS_MARGIN:
        n = 0
    elif n and max(hi, lr) - min(lo, lr) <= _PAIR_STEADY:
        n, lo, hi = n + 1, min(lo, lr), max(hi, lr)
    else:
        n, lo, hi = 1, lr, lr
    self._pair_gross[s], self._pair_lo[s], self._pair_hi[s] = n, lo, hi
    return n >= _PAIR_GROSS_STEPS


def _twin_update(self, step: int, r: np.ndarray, groups: np.ndarray, d: np.ndarray,
                 med: np.ndarray, buf: _StepBuffer, decided_ts: float,
                 out: list[Finding]) -> None:
    """A rank judged against its twins, step by step: the peers whose deviation moves
    with its own (:meth:`_twin_pick`).  A slowdown that is the GPU's follows the GPU; a
    routing wander follows the tokens, which make the ranks holding one expert in every
    EP group hot together (blind8 rail-moe: 4 ranks a peer group, their deviations
    correlated 0.95, others' <= 0.5).  So a rank's deviation from its twins' median stays
    at its offset (+-1.5 % a step) while its expert warms and cools, and steps up by the
    slowdown when its GPU slows, whatever its expert does: blind8 H2's GPU, cold by routing
    (-0.15) when it turned 1.16x slower, was found by the wandering job's 100-step mean
    140-440 s after its onset; against its twins the step is 10 noise units at once.

    Where deviations are i.i.d. no rank has twins (64 steps: 0 +- 0.13 each, and the twins must
    correlate with each other too): nothing is paid for but the ring and a look every
    ``_TWIN_EVERY`` steps (groups of at most ``_TWIN_GROUP_MAX``).  Slow: the deviation over the
    offset, smoothed over ~5 steps (``_TWIN_ALPHA``), >= ``_WANDER_MIN_EFFECT`` and >=
    ``_TWIN_Z`` of its noise (the ranks' spread of it); cleared under half that.  The twins of a
    rank reported slow are kept (its slowdown lowers their correlation: picked again, they
    would be lost)."""
    col = self._twin_n % _TWIN_WINDOW
    self._twin_hist[r, col] = d
    self._twin_n += 1
    live = np.count_nonzero(self._twin_rep)
    if self._twin_n < _TWIN_FIRST:
        return
    if self._twin_n % _TWIN_EVERY == 0:
        self._twin_pick(r, groups, min(self._twin_n, _TWIN_WINDOW))
    tw = self._twins[r]
    if not np.count_nonzero(tw):
        return
    cur = np.full(len(self._base) + 1, _NAN)  # (by slot + 1: 0, no twin, reads NaN)
    cur[r + 1] = d
    vals = cur[tw]
    ok = np.count_nonzero(~np.isnan(vals), axis=1) >= _TWIN_MIN
    if not np.count_nonzero(ok):
        return
    ro = r[ok]
    res = d[ok] - _row_nanmedians(vals[ok])  # (np.nanmedian(.., axis=1), a sixth)
    base = self._twin_base[ro]
    over = res - base
    cfg = self.cfg
    self._twin_sigma = _smoothed(self._twin_sigma,
                                 median(np.abs(over), scratch=True) * MAD_TO_SIGMA,
                                 cfg.slow_sigma_alpha)
    sigma = max(self._twin_sigma, cfg.slow_sigma_floor)
    need = max(math.log1p(_WANDER_MIN_EFFECT),
               _TWIN_Z * sigma * math.sqrt(_TWIN_ALPHA / (2.0 - _TWIN_ALPHA)))
    short = self._twin_short[ro]
    short += _TWIN_ALPHA * (np.minimum(over, _TWIN_CLIP * need) - short)
    self._twin_short[ro] = short
    learn = ~self._reported[ro] & (np.abs(over) < 3.0 * sigma)
    self._twin_base[ro] = np.where(learn, base + _TWIN_BASE_ALPHA * over, base).clip(
        -cfg.slow_baseline_clip, cfg.slow_baseline_clip)
    rising = ro[(short >= need) & ~self._reported[ro]]
    falling = ro[self._twin_rep[ro] & (short < 0.5 * need)] if live else ro[:0]
    if not len(rising) and not len(falling):
        return
    at = {int(s): i for i, s in enumerate(r.tolist())}
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    rank_of = self._rank_of
    for s in rising.tolist():
        rank, i = rank_of[s], at[s]
        self._reported[s] = self._twin_rep[s] = True
        ratio = math.exp(float(self._twin_short[s]))
        twins = [rank_of[t - 1] for t in self._twins[s].tolist() if t]
        out.append(self._rule_finding(
            rank, dp_of[rank], decided_ts, ratio, step, float(d[i]),
            {"twin_ratio": round(ratio, 4), "twins": twins,
             "twin_offset": round(math.exp(float(self._twin_base[s])), 4),
             "peer_median_compute_ms": round(math.exp(float(med[i])), 2),
             "rule": f"against its twins (the peers on other nodes whose compute moves "
                     f"with its own, correlation >= {_TWIN_CORR}): their median's pace "
                     f"over its offset, weighed over ~{1.0 / _TWIN_ALPHA:.0f} steps, "
                     f">= {_WANDER_MIN_EFFECT:.0%} slower"}))
    for s in falling.tolist():
        self._rule_cleared(s, self._twin_rep, step, dp_of, decided_ts, out)


def _twin_pick(self, r: np.ndarray, groups: np.ndarray, n: int) -> None:
    """Each rank's twins: the peers of its group on another node whose deviations over
    the last ``n`` steps (at most ``_TWIN_WINDOW``) change from step to step as its own
    does, and as each other's (correlations >= ``_TWIN_CORR``), the most alike
    ``_TWIN_MAX`` of them, on ``_TWIN_MIN`` nodes at least (else none).  A rank's offset
    from a new set's median is learned anew from the window, within +-slow_baseline_clip
    (twins do the same work: a rank 9 % faster than its "twins" and back at their pace is
    no slowdown).  Not
    for a rank reported slow (its twins kept), nor in groups of more than
    ``_TWIN_GROUP_MAX`` ranks."""
    hist = self._twin_hist[:, :n]
    last = (self._twin_n - 1) % _TWIN_WINDOW  # (the ring's newest column: no change across it)
    wrapped = n == _TWIN_WINDOW and last < n - 1
    rows = layout(groups)
    if rows is not None and rows.k:
        # Peer groups of one size (the usual job): every group's correlations in one pass of
        # a (groups, ranks, steps) array -- a group a row of the layout, in the loop's order
        # below (groups sorted, a group's ranks in input order) -- instead of ~20 numpy calls
        # a group; only a group with a rank to look at goes on to _twin_pick_group.
        k = rows.k
        if k <= _TWIN_MIN or k > _TWIN_GROUP_MAX:
            return
        members = r[rows.perm]
        h3 = hist[members]
        dh = h3[:, :, 1:] - h3[:, :, :-1]
        if wrapped:
            dh = np.concatenate((dh[:, :, :last], dh[:, :, last + 1:]), axis=2)
        corr = _group_correlations(dh)
        close = corr >= _TWIN_CORR
        diag = _arange(k)
        close[:, diag, diag] = False
        look = close.any(axis=2) | self._twins[members].any(axis=2)
        for g in look.any(axis=1).nonzero()[0].tolist():
            self._twin_pick_group(members[g], h3[g], corr[g], look[g].tolist())
        return
    # (np.unique, np.diff, np.delete and np.fill_diagonal as the set, subtraction, slices
    # and strided store they come to: no Python wrappers, the same values -- cpu29)
    for g in sorted(set(groups.tolist())):
        idx = r[groups == g]
        k = len(idx)
        if k <= _TWIN_MIN or k > _TWIN_GROUP_MAX:
            continue
        h = hist[idx]
        dh = h[:, 1:] - h[:, :-1]
        if wrapped:
            dh = np.concatenate((dh[:, :last], dh[:, last + 1:]), axis=1)
        corr = _correlations(dh)
        # The ranks with no peer correlated enough (the usual, i.i.d. deviations) and no
        # twins now: the loop below would find none and change nothing.  One matrix
        # compare for the group instead of ~20 Python and numpy calls a rank (cpu28:
        # bench/steps_callgrind.py whole, 36,966 -> 34,396 instructions a step record).
        close = corr >= _TWIN_CORR
        close.flat[::k + 1] = False  # (the diagonal)
        look = (close.any(axis=1) | self._twins[idx].any(axis=1)).tolist()
        self._twin_pick_group(idx, h, corr, look)


def _twin_pick_group(self, idx: np.ndarray, h: np.ndarray, corr: np.ndarray,
                     look: list[bool]) -> None:
    """:meth:`_twin_pick` of one peer group: its slots ``idx``, their deviations' window ``h``,
    the correlations of their changes ``corr``, and whether each is looked at (``look``:
    a peer correlated enough, or twins now)."""
    hw = self._hw
    clip = self.cfg.slow_baseline_clip
    node = [None if hw[s] is None else hw[s][0] for s in idx.tolist()]
    for i, s in enumerate(idx.tolist()):
        if self._reported[s] or not look[i]:
            continue
        c = corr[i]
        cand = [j for j in np.flatnonzero(c >= _TWIN_CORR).tolist()
                if j != i and (node[i] is None or node[j] != node[i])]
        cand.sort(key=lambda j: -c[j])
        chosen: list[int] = []
        for j in cand:
            if len(chosen) < _TWIN_MAX and all(corr[j, t] >= _TWIN_CORR for t in chosen):
                chosen.append(j)
        new = np.zeros(_TWIN_MAX, dtype=np.int64)
        if len({node[j] for j in chosen}) >= _TWIN_MIN:
            new[:len(chosen)] = idx[chosen] + 1
        if np.array_equal(new, self._twins[s]):
            continue
        self._twins[s] = new
        self._twin_short[s] = 0.0
        self._twin_base[s] = 0.0 if not new[0] else float(np.clip(np.mean(
            h[i] - np.median(h[chosen], axis=0)), -clip, clip))
