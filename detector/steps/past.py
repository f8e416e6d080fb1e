"""A rank against its own past pace, where its peers' median moved with it: the peers that
are slow are most of them.

The step rules judge a rank against its peer group's median (same tp_rank and pp_rank).
When half or more of a group turns slow, the median is a slow one: blind32 F3 -- two of a
stage's three data-parallel peers slow (a hidden x1.07-1.10 GPU and a power limit left low,
x1.12, 10 s apart), the median moved to the slower pace, neither paged in minutes.  Each
node's own history still says it changed, and the job's other ranks say the work did not.

So each rank keeps its own level of ``log(compute)`` (``_past_base``) against the job's
common change (``m``: the median over every rank of the job of its change from its level --
a save, a context extension, a new data phase move it, not a rank's ratio).  A rank whose
change over ``m``, smoothed over ~5 steps, is ``_PAST_EFFECT``, ``_PAST_Z`` of the job's noise
and ``_PAST_WANDER_Z`` of its own wander (its group's, if larger: a stage whose work follows
its data wanders by 5-15 %, blind31's vision stage), ``_PAST_STEPS`` steps in a row, is slow
when its peer group moved with it (the group's median of the same is at least half that:
else the peer rule judges it) and a peer of the group held its pace (the group's least
changed is that much under it: a stage's work that changed moves every peer of it alike --
blind31's data mix, a context doubling's stage that scales more).
Groups of three ranks or more (DP 2: two replicas that disagree are the pair's and the
replica split's).  A job-wide change (``m`` off its level by ``_PAST_JOB_MOVE``) is the job's
work (blind32 G4: a context doubling x1.55-1.75 on every rank): the levels are taken anew (a
told rank's with its excess) and nothing is judged for ``_PAST_HOLD`` steps.
"""

from __future__ import annotations

import math

import numpy as np

from detector.findings import Finding
from detector.steps.common import _WANDER_GROSS_NODES, _StepBuffer
from models.numpy_c import count_nonzero
from models.peer_stats import MAD_TO_SIGMA, median

_PAST_ALPHA = 0.2         # a rank's change over the job's, smoothed over ~5 steps
_PAST_BASE_ALPHA = 0.02   # its own level, learned over ~50 steps
_PAST_FIRST = 30          # steps of its own level learned before it is judged
_PAST_EFFECT = 0.05       # at least this much slower than its own past (log1p)
_PAST_Z = 8.0             # ... and this many of the smoothed change's noise
_PAST_STEPS = 3           # ... this many steps in a row
_PAST_GROUP_MIN = 3       # peer groups of at least this many ranks
_PAST_JOB_MOVE = 0.03     # the job's common change off its level by this: the work changed
_PAST_HOLD = 10           # steps after it with the levels learned fast, nothing judged
_PAST_WANDER_Z = 6.0      # slow: this many of its own smoothed change's wander, too
_PAST_VAR_ALPHA = 0.02    # that wander's mean square, over ~50 steps (its first: their mean)
_PAST_CLIP = 2.0          # one step's change counts at most this many times the bar


def _past_update(self, step: int, r: np.ndarray, groups: np.ndarray, x: np.ndarray,
                 buf: _StepBuffer, decided_ts: float, out: list[Finding]) -> None:
    """Slots ``r`` of this step at log compute ``x``, peer groups ``groups``: their own
    past's rule (the module's docstring)."""
    n = self._past_n[r]
    new = n == 0
    base = self._past_base[r]
    n_new = count_nonzero(new)
    if not n_new:  # (every rank has its level: the usual step, no masks)
        m = median(x - base, scratch=True)
    else:
        known = ~new
        m = median(x[known] - base[known]) if n_new < len(new) else 0.0
        base = np.where(new, x - m, base)
    self._past_n[r] = n + 1
    change = x - base - m
    cfg = self.cfg
    reported = self._reported[r]
    if abs(m - self._past_level) > _PAST_JOB_MOVE:
        # (the job's work changed: levels anew -- a rank's told slow at its excess over its
        # own past carried over: a stage whose work changed otherwise than the job's moves
        # its told and untold ranks alike)
        told = reported | self._past_rep[r]
        self._past_base[r] = np.where(told, x - m - self._past_short[r], x - m)
        self._past_short[r] = np.where(told, self._past_short[r], 0.0)
        self._past_run[r] = 0
        self._past_gross[r] = 0
        self._past_level = m
        self._past_hold = _PAST_HOLD
        return
    self._past_level += _PAST_ALPHA * (m - self._past_level)
    # (its steps in a row gross_slowdown over its own past, unclipped and unsmoothed: a gross
    # change is a fault's, not one slowness visiting nodes -- steps.holds._gross_start)
    gross = self._past_gross[r]
    self._past_gross[r] = np.where(change >= math.log1p(cfg.gross_slowdown), gross + 1, 0)
    spread = median(np.abs(change), scratch=True) * MAD_TO_SIGMA
    self._past_sigma = spread if self._past_sigma == 0.0 else self._past_sigma + (
        cfg.slow_sigma_alpha * (spread - self._past_sigma))
    sigma = max(self._past_sigma, cfg.slow_sigma_floor)
    floor = max(math.log1p(_PAST_EFFECT),
                _PAST_Z * sigma * math.sqrt(_PAST_ALPHA / (2.0 - _PAST_ALPHA)))
    # Each rank's own wander of its smoothed change (a stage whose work follows its data --
    # blind31's vision stage, video batches in runs -- wanders by 5-15 %, a stage of text
    # batches by well under 1 %): measured over its first _PAST_FIRST steps whatever it did,
    # then while it is not on its way to slow (a slowdown is no wander of its work).
    var = self._past_var[r]
    need = np.maximum(floor, _PAST_WANDER_Z * np.sqrt(var))
    # (one step weighs at most _PAST_CLIP of the bar, as the CUSUM clips a step: a burst --
    # a PSU brake's 2-4 steps at 1.6x -- is the burst rule's evidence, named by the throttle
    # a poll shows; unclipped, its 3 steps were a verdict here, escalated unknown minutes
    # before the poll that names it: blind14 pipe-s2, s5, s7)
    short = self._past_short[r]
    short += _PAST_ALPHA * (np.minimum(change, _PAST_CLIP * need) - short)
    self._past_short[r] = short
    hot = short >= 0.5 * need
    rep = self._past_rep[r]  # (read once: nothing below sets it before the findings)
    untold = ~(reported | rep)
    cool = ~hot
    wander = ((n < _PAST_FIRST) | cool) & untold
    self._past_var[r] = np.where(wander, var + np.maximum(_PAST_VAR_ALPHA, 1.0 / (n + 1.0)) * (
        short * short - var), var)
    learn = cool & untold
    if self._past_hold > 0:
        # (levels taken on one step are learned fast -- but not a rank's that turns slow
        # meanwhile, nor a rank's told slow: blind32 zb-s0, a GPU x1.10 five steps after the
        # context doubling, its stage peer capped before it)
        self._past_hold -= 1
        learn &= change < 0.5 * need
        self._past_base[r] = np.where(learn, base + _PAST_ALPHA * change, base)
        return
    rising = np.zeros(len(r), dtype=bool)
    look = hot  # (a told rank's group too: its mates may be half told, half not)
    if count_nonzero(look):
        for g in set(groups[look].tolist()):
            at = groups == g
            vals = short[at]
            if len(vals) < _PAST_GROUP_MIN:
                learn |= at & untold
                continue
            # (a group's peers do one work: the most its ranks wander, by their median, is
            # each one's -- a rank whose wander was measured calm is not judged tighter)
            need_g = np.maximum(need[at], _PAST_WANDER_Z * math.sqrt(median(var[at], scratch=True)))
            low = float(vals.min())
            if low >= 0.5 * float(need_g.min()):  # (the whole group moved: its work, learned)
                learn |= at & untold
                continue
            if median(vals) >= 0.5 * median(need_g):
                # (and slow on this step: one spike's smoothed tail is no slowdown, and a
                # few on a group's ranks in a row -- 1.5-3x one-step spikes, one in six steps
                # of DP 8 -- lifted its median for steps on end: tests/test_steps_round11.py)
                rising[at] = (vals >= need_g) & (vals - low >= need_g) & (
                    change[at] >= 0.5 * need_g)
    self._past_base[r] = np.where(learn, base + _PAST_BASE_ALPHA * change, base)
    eligible = rising & (n >= _PAST_FIRST) & ~reported & (self._evaluated > cfg.warmup_steps)
    run = self._past_run[r]
    self._past_run[r] = np.where(eligible, run + 1, 0)
    now = eligible & (run + 1 >= _PAST_STEPS)
    if count_nonzero(now):
        # (its node's other ranks on the way there, half-way at least, are told with it: a TP
        # group slows alike, and one GPU told a step before its mates was paged alone, then
        # its node)
        hw = self._hw
        nodes = {hw[s][0] for s in r[now].tolist() if hw[s] is not None}
        mates = np.fromiter((hw[s] is not None and hw[s][0] in nodes for s in r.tolist()),
                            dtype=bool, count=len(r))
        now |= hot & ~reported & (n >= _PAST_FIRST) & mates
    due = r[now]
    falling = r[rep & (short < 0.5 * need)]
    if not len(due) and not len(falling):
        return
    at = {int(s): i for i, s in enumerate(r.tolist())}
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    rank_of = self._rank_of
    for s in due.tolist():
        rank, i = rank_of[s], at[s]
        self._reported[s] = self._past_rep[s] = True
        ratio = math.exp(float(short[i]))
        gross = int(self._past_gross[s])
        out.append(self._rule_finding(
            rank, dp_of[rank], decided_ts, ratio, step, float(short[i]),
            {"past_ratio": round(ratio, 4), "job_change": round(math.exp(m), 4),
             **({"past_gross_steps": gross} if gross >= _PAST_STEPS else {}),
             "rule": f"against its own past pace over the job's: >= {_PAST_EFFECT:.0%} "
                     f"slower, weighed over ~{1.0 / _PAST_ALPHA:.0f} steps, "
                     f"{_PAST_STEPS} steps in a row, with most of its peers slower alike "
                     f"(their median moved) and one at its pace"}))
    for s in falling.tolist():
        self._rule_cleared(s, self._past_rep, step, dp_of, decided_ts, out)


def _past_gross_start(self) -> bool:
    """Whether the ranks ``gross_slowdown`` over their own past on their last ``_PAST_STEPS``
    steps or more are on fewer than ``_WANDER_GROSS_NODES`` nodes: a slow rank told so
    (``past_gross_steps``) is no slowness visiting nodes (steps.holds' :meth:`_gross_start`).

    The own-past rule finds a stage's peers that are most of their group slow together (the
    median moved with them); two of three at once are on two nodes of two replicas, read as
    slowness visiting nodes and held while the job's wander could not be read yet (its first
    130 steps): revA44 F7, two of a stage's three peers 1.6x or 2x from step 80, paged 50
    steps late (tests/test_revA44.py).  A gross change that stays on its unit is a fault's, as
    the warm-up's gross prior's is; routing caught mid-run is gross on 3 nodes or more."""
    ranks = len(self._rank_of)
    at = np.flatnonzero(self._past_gross[:ranks] >= _PAST_STEPS).tolist()
    hw = self._hw
    return len({hw[s][0] for s in at if hw[s] is not None}) < _WANDER_GROSS_NODES

