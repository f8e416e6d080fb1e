"""A node whose ranks carry their job's excess host time, recurring for minutes: a page.

A rank's time in neither compute nor collectives, ``step_ms - compute_ms - comm_ms`` (DESIGN:
data loading, checkpoint I/O; also launch overhead and host-to-device copies), is its host's
share of the step; every other rank of the job waits for it in the next collective.  A node's
failing local NVMe (the data cache) stalls its loader in a growing share of steps (blind10
K1: 13 of 56 steps, 1.15 s each on 5.8 s steps); ranks bound to the wrong socket add a few
hundred milliseconds to every step from the first (K2: 283 ms against its DP peer's 35).
:mod:`detector.steps` ``host_late`` (a per-rank CUSUM over a learned offset) misses both: K2's
excess is learned as the ranks' own offset in the warm-up, K1's stalls come and go.

Here the unit is a node's share of one peer set: its ranks of one pipeline stage and one
data-parallel replica (a TP group on the node; a job without tensor parallelism: the node's
ranks of the stage).  Per step a unit's host time is the lower median of its ranks' (one
rank's own extra -- rank 0's logging -- moves nothing; a host's trouble hits every rank it
feeds), compared with the lower median of its stage's units (stages load and copy
differently; with two units, the lower: host time is only ever added), in shares of the
job's median ``step_ms``, clipped at ``CLIP``, and smoothed over ~``1 / ALPHA`` steps.  A run
begins at a step whose excess is ``ON`` or more and lasts while the smoothed excess stays
``OFF`` or more; once its hot steps span ``page_s`` (Thresholds.host_node_page_s, 240 s: longer
than blind2's healthy 3-minute stall of one node's input pipeline) with the smoothed excess
still ``ON`` or more -- or half that for stalls that come and go (``RECUR_MIN``, at most
``RECUR_SHARE`` of its steps) -- the node is a ``host_share`` finding (a verdict: the
correlator escalates it to a human, slow_node/unknown, Correlator._on_host_share).  It
clears when the smoothed excess falls under ``OFF``.

Short runs that recur page too (blind14 N7: a node's cron job, its 8 ranks +80-200 ms in the
loader for 23-38 s every ~5.5 minutes; each run far under ``page_s``, and a run's smoothed
excess ends it within ~16 steps, so nothing added up across runs).  ``EPISODE_HOT`` hot steps in
a row are an episode; ``REPEATS`` episodes, each within ``REPEAT_GAP_S`` of the one before, on
a node whose units hold ``SHARE_X`` times the mean episodes of the other nodes' units, raise it
(a recurrence: cleared once ``REPEAT_GAP_S`` passes without one).  Counted are all hot streaks,
not runs already found alarming, and the reference is the job's other nodes counted the same
way: what the job does to every node (a checkpoint, an evaluation, a site agent on every
node) moves the stage's reference or every node's count.  A save's one long step, one rank's
loader stall (a unit's lower median) or GC (compute) is no streak.

A job with one rank a node (DP 4-16 on one-GPU nodes) has units of one rank, whose lower
median is that rank's own loader: a lasting run of one rank is its own link's or shard's
(host_late and :mod:`detector.host_straggler` judge it, the lone rule pages it at its node) and
is not raised here.  Its recurrence is (revA38 F3: a node's loader stalling +8-20 % of a step
for 3-6 steps every 2-4 minutes was never paged, 0 of 12 runs, against 18 of 18 with two ranks
a node): an operator reads a node whose rank is hit by short stalls again and again, far more
often than the other nodes' ranks, as that host's trouble (its loader, CPUs, page cache)
whatever its GPU count -- the node is the unit, as Correlator._host_alone pages a lone rank's
lasting run.  So a one-rank unit alone on its node (no other unit of the job there) is judged
for recurrences only, among the job's other such units when there are ``LONE_MIN`` of them, each
over the lower median of its stage's *other* units (:func:`_over_others`: one loader's own time
as its reference would read 0 one step in n and shrink the units' spreads below a loader's
jitter -- every loader +-30 % i.i.d. then paged a node in 2 of 6 runs of 3,000 steps).  What it
must not page: a save or an evaluation pause, a shared filesystem's hiccup (every node at once:
the others' median moves with it), one loader's wide jitter or wander (its own spread and the
other nodes' chance streaks), an AR(1)-wandering GPU (compute, not host time).

A step is hot at ``ON`` of the job's step and beyond the job's own noise: ``NOISE_K`` times
the lower median of its units' spreads (each one's mean absolute move of its excess from its
smoothed level, ~``1 / ALPHA`` steps).  Streaks are only a fault's signature when chance does
not make them: a job whose every loader wanders +-30 % i.i.d. moves a node's lower median ~2.5 %
of its step, step to step -- over ``ON`` one step in four, so streaks of three are routine and
three of them fell on one of three nodes in 2 of 8 runs (loader36, a node escalated with no
fault).  The lower median is the healthy units' noise: a faulty unit's own spread (a stall
that comes and goes) moves it not, and a job whose host time is steady (the usual: spreads
well under ``ON / NOISE_K``) is judged at ``ON`` as before.

Physics, not tuning on the faults: a loader stall recurs on its node and grows; a write-back
after an async checkpoint (blind10 K3) is compute, fades within tens of steps and moves to
another node; a checkpoint, an evaluation pass, a batch ramp or a restart is every rank's
(the stage's reference moves with it); one stall adds at most ``CLIP * ALPHA`` and spans no
time.  A job whose collectors send no ``compute_ms`` or ``comm_ms`` tells no host time: not
judged (detector.steps calls this only when every rank sent both).

A run is one unit's steps in a row: when a job re-forms (an elastic job renumbers its
replicas) a unit whose ranks left it ends its run (:func:`end_runs`) -- left standing, it joined
a one-step stall before the re-form to one ~400 s later, when the node came back to that
replica, as a run "recurring for 400 s" of two hot steps (blind27 F4).

State is plain data on the job's monitor (detector/statecodec.py walks it): the units' keys
(a list of strings, at most ``MAX_UNITS``) and one row of floats a unit.

>>> import numpy as np
>>> keys = ["n1", "n2", "n3", "n4"]              # four nodes, two ranks each, one stage
>>> table = grow(np.zeros((0, NCOLS)), 4, np.zeros(4))
>>> u = np.array([0, 0, 1, 1, 2, 2, 3, 3])
>>> found = []
>>> for step in range(200):                      # 2 s steps from ts 100
...     host = np.array([30.0, 32, 31, 33, 30, 31, 32, 30])
...     host[4:6] += 600.0                       # n3: every step 600 ms late
...     if step % 3 == 0:                        # n4: its loader stalls every third step
...         host[6:] += 600.0
...     found += [(step, keys[i], up, at) for i, up, at in
...               judge(table, u, host, 2000.0, 100.0 + 2.0 * step, 240.0)]
>>> found        # n4 at 120 s (stalls that recur), n3 at 240 s (late all along)
[(60, 'n4', True, 100.0), (120, 'n3', True, 100.0)]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from models.numpy_c import clip, count_nonzero

MAX_UNITS = 4096   # units a job (a node's ranks of one stage and replica); more are not judged
ALPHA = 1 / 16     # the excess smoothed over ~16 steps
ON = 0.02          # a step 2 % of the job's step late by this unit's host: hot; the smoothed
#                    excess this high keeps a run pageable
OFF = 0.01         # the run ends when the smoothed excess falls below this
MAX_HOST_MS = 1e12  # a host time over this is taken as this (31 years: forged, never real)
CLIP = 0.5         # one step's excess counts at most this (a 40 s first step on one node)
# Stalls that come and go -- at least RECUR_MIN hot steps, at most RECUR_SHARE of the run's
# steps -- page once they span RECUR_SPAN of page_s: a device that blocks again and again
# (blind10 K1: 1 step in 60, growing to 1 in 3), not an input pipeline catching up (blind2's
# healthy stall: every step, 3 minutes; tests/test_steps17.py: 60 % of steps, 3 minutes).
RECUR_MIN = 6
RECUR_SHARE = 0.4
RECUR_SPAN = 0.5
# Short runs that recur on one node (a cron job: blind14 N7, 23-38 s every ~5.5 min): EPISODE_HOT
# hot steps in a row are an episode (one an episode until the unit has been cool for QUIET
# steps: ~1 / ALPHA); REPEATS episodes, each within REPEAT_GAP_S of the one before, on a node
# whose units hold SHARE_X times the mean episodes of the other nodes' units (none elsewhere:
# any), page -- raised as a recurrence (RAISED 2.0), cleared when REPEAT_GAP_S passes with none.
EPISODE_HOT = 3
QUIET = 16
REPEATS = 3
REPEAT_GAP_S = 600.0
SHARE_X = 4.0
# A step is hot only beyond the job's own noise too: NOISE_K times the lower median of its units'
# spreads (loader36: every rank's loader +-30 % i.i.d. moves a unit's lower median ~2.5 % of the
# step, step to step -- over ON one step in four, streaks of three routine, three of them on one
# of three nodes by chance).  A job whose host time is steady (the usual: spreads well under ON)
# is judged at ON.
NOISE_K = 2.5
# A unit of one rank (a job with one rank a node) is judged for recurrences only, among the
# job's other one-rank units alone on their nodes, when there are LONE_MIN of them or more
# (its reference the median of three at least: another node's, never its own).
LONE_MIN = 3
# ... and its recurrence one the other nodes' mean count of episodes makes a chance of at most
# LONE_ALPHA, shared among the units (Poisson's tail: :func:`_by_chance`).  One rank's loader is
# the unit's: its routine bursts (a batch of big samples, a page-cache miss: 2-6 steps at +5-15 %
# every minute or two, on every node alike) are episodes on every node, where a unit of several
# ranks -- a lower median -- sees none; at small counts SHARE_X alone let chance pile three on
# one node (3 against 5 on seven others: 1 run in 2 of 8-16 one-rank nodes).
LONE_ALPHA = 0.01
# A unit's row: smoothed excess, ts of the run's first hot step (NaN: no run), ts of its latest
# hot step, raised (1.0; 2.0 as a recurrence) or not, hot steps in the run, its pipeline stage,
# steps in the run; episodes in its chain, ts of the chain's first episode (its first hot step;
# NaN: none) and of its latest, its streak (hot steps in a row; < 0: cool steps in a row) and
# the ts the streak began, 1.0 while its current episode is counted, its node (an id in the job),
# its spread (the mean absolute step-to-step move of its excess, smoothed as the excess is).
(EWMA, RUN_FROM, LAST_HOT, RAISED, HOT, STAGE, STEPS, EPISODES, EP_FROM, EP_LAST, STREAK,
 STREAK_FROM, EP_IN, NODE, SPREAD) = range(15)
NCOLS = 15


def grow(table: np.ndarray, n: int, stages: np.ndarray,
         nodes: np.ndarray | None = None) -> np.ndarray:
    """``table`` with rows for units up to ``n`` (new ones: no run, in ``stages``' stage and
    on ``nodes``' node ids; without them each unit its own node)."""
    old = len(table)
    if n <= old:
        return table
    more = np.zeros((n - old, NCOLS))
    more[:, RUN_FROM] = math.nan
    more[:, EP_FROM] = math.nan
    more[:, STAGE] = stages
    more[:, NODE] = np.arange(old, n) if nodes is None else nodes
    return np.concatenate([table, more])


def unit_key(node: str, pp: int, dp: int | None) -> str:
    """A unit's name: node, stage and (with tensor parallelism) replica; names hold no control
    characters (DESIGN's bounds), so the separator is unambiguous."""
    return f"{node}\x1f{pp}" if dp is None else f"{node}\x1f{pp}\x1f{dp}"


def node_of(key: str) -> str:
    return key.split("\x1f", 1)[0]


def _lower_medians(values: np.ndarray, groups: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group (sorted ids, >= 0): its id, its lower median of ``values`` (>= 0), its size.

    One float sort of ``group + value / (max + 1)`` orders by group, then by value within it
    (np.lexsort of the two keys costs ~10x: measured in BENCHMARKS "host20")."""
    top = 2.0 * float(values.max()) + 1.0  # (each value / top < 1/2: its group's floor)
    key = groups + values / top
    key.sort()  # (np.sort is a copy and this sort behind a Python wrapper)
    g = np.floor(key)
    # Where each group starts and its size: np.flatnonzero and np.diff(np.append(...)) as the
    # methods and slices they run (six Python frames a call, twice a step: cpu29).
    first = np.empty(len(g), dtype=bool)
    first[0] = True
    np.not_equal(g[1:], g[:-1], out=first[1:])
    starts = first.nonzero()[0]
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1] = len(g)
    sizes = ends - starts
    at = starts + (sizes - 1) // 2
    return g[starts], (key[at] - g[at]) * top, sizes


def judge(table: np.ndarray, units: np.ndarray, host_ms: np.ndarray, step_ms: float,
          ts: float, page_s: float) -> list[tuple[int, bool, float]]:
    """One step: each rank's unit (-1: none) and host time; returns the units raised (True)
    or cleared (False) at this step, with the ts their run began (raised) or ``ts``."""
    if not step_ms > 0.0:
        return []
    if units.min() < 0:
        ok = units >= 0
        units, host_ms = units[ok], host_ms[ok]
    if len(units) < 4:
        return []
    # (at most MAX_HOST_MS: a forged step's time never overflows the sort's key)
    uid, val, size = _lower_medians(clip(host_ms, 0.0, MAX_HOST_MS), units)
    uid = uid.astype(np.intp)
    if size.min() >= 2:
        return judge_units(table, uid, val, step_ms, ts, page_s)
    # A unit of one rank: its run is its own link or shard's (detector.steps host_late); alone
    # on its node (no other unit of the job there) its recurrence is its node's (LONE_MIN).
    two = size >= 2
    node = table[uid, NODE].astype(np.intp)
    alone = ~two & (np.bincount(node)[node] == 1)
    found = _judge_units(table, uid[two], val[two], step_ms, ts, page_s)
    if count_nonzero(alone) >= LONE_MIN:
        found += _judge_units(table, uid[alone], val[alone], step_ms, ts, page_s, runs=False)
    if count_nonzero(table[:, RAISED] == 2.0):
        found += [(i, False, ts) for i in _lapse(table, ts)]
    return found


def regular(code: np.ndarray) -> tuple[np.ndarray, np.ndarray, int] | None:
    """A job whose every slot has a unit and whose units are all ``k`` >= 2 ranks (the usual
    layout): its slots ordered by unit, the units in that order and ``k`` -- a step with every
    rank then takes its units' lower medians from one (units, k) view (:func:`judge_regular`);
    None otherwise."""
    if len(code) < 4 or code.min() < 0:
        return None
    counts = np.bincount(code)
    k = int(counts.max())
    if k < 2 or count_nonzero(counts) * k != len(code):
        return None
    perm = np.argsort(code, kind="stable")
    return perm, code[perm[::k]].astype(np.intp), k


def judge_regular(table: np.ndarray, layout: tuple[np.ndarray, np.ndarray, int],
                  slots: np.ndarray, host_ms: np.ndarray, step_ms: float, ts: float,
                  page_s: float) -> list[tuple[int, bool, float]]:
    """:func:`judge` for a step with every rank of a :func:`regular` job (``slots``: each
    rank's slot, a permutation)."""
    if not step_ms > 0.0:
        return []
    perm, uid, k = layout
    by_slot = np.empty(len(perm))
    by_slot[slots] = host_ms
    mid = (k - 1) // 2
    val = np.partition(by_slot[perm].reshape(len(uid), k), mid, axis=1)[:, mid]
    return judge_units(table, uid, clip(val, 0.0, MAX_HOST_MS), step_ms, ts, page_s)


def judge_units(table: np.ndarray, uid: np.ndarray, val: np.ndarray, step_ms: float,
                ts: float, page_s: float) -> list[tuple[int, bool, float]]:
    """The units ``uid`` (of two ranks or more) and their host times this step: each one's
    excess over its stage's, smoothed, its run and its episodes (:func:`judge`'s return)."""
    found = _judge_units(table, uid, val, step_ms, ts, page_s)
    if count_nonzero(table[:, RAISED] == 2.0):
        found += [(i, False, ts) for i in _lapse(table, ts)]
    return found


def _judge_units(table: np.ndarray, uid: np.ndarray, val: np.ndarray, step_ms: float,
                 ts: float, page_s: float, runs: bool = True) -> list[tuple[int, bool, float]]:
    """:func:`judge_units` but for the lapse of recurrences; without ``runs`` (units of one
    rank) only their recurrences are raised, not their runs."""
    if len(uid) < 2:
        return []
    rows = table[uid]
    stage = rows[:, STAGE]
    if not runs:
        excess = _over_others(val, stage) / step_ms
    elif stage.min() == stage.max():  # (one stage: the usual job)
        k = (len(val) - 1) // 2
        excess = (val - np.partition(val, k)[k]) / step_ms
    else:
        sid, ref, n = _lower_medians(val, stage)
        at = np.searchsorted(sid, stage)
        excess = np.where(n[at] >= 2, (val - ref[at]) / step_ms, 0.0)
    clip(excess, -CLIP, CLIP, out=excess)
    ewma = rows[:, EWMA]
    spread = rows[:, SPREAD]
    spread += ALPHA * (np.abs(excess - ewma) - spread)
    ewma += ALPHA * (excess - ewma)
    k = (len(spread) - 1) // 2
    hot = excess >= max(ON, NOISE_K * float(np.partition(spread, k)[k]))
    live = ~np.isnan(rows[:, RUN_FROM])
    if not count_nonzero(hot) and not count_nonzero(live):
        table[uid, EWMA] = ewma
        table[uid, SPREAD] = spread
        streak = table[uid, STREAK]
        if streak.max() > -QUIET:  # (cooling down from a streak: counted to QUIET, then still)
            _cool(table, uid, streak)
        return []
    rows[:, EWMA] = ewma
    rows[hot, LAST_HOT] = ts
    rows[hot, HOT] += 1.0
    start = hot & ~live
    rows[start, RUN_FROM] = ts
    live |= start
    rows[live, STEPS] += 1.0
    out: list[tuple[int, bool, float]] = []
    streak = rows[:, STREAK]
    rows[hot & (streak <= 0.0), STREAK_FROM] = ts
    streak[:] = np.where(hot, np.maximum(streak, 0.0) + 1.0, _cooled(streak))
    rows[streak == -QUIET, EP_IN] = 0.0
    counted = (streak >= EPISODE_HOT) & (rows[:, EP_IN] == 0.0)
    if count_nonzero(counted):
        _episode(rows, counted, ts)
    hot_n = rows[:, HOT]
    over = live & (ewma < OFF)
    if count_nonzero(over):
        for i in np.flatnonzero(over & (rows[:, RAISED] == 1.0)).tolist():
            out.append((int(uid[i]), False, ts))
        rows[over, RUN_FROM] = math.nan
        rows[over & (rows[:, RAISED] == 1.0), RAISED] = 0.0
        rows[over, HOT] = 0.0
        rows[over, STEPS] = 0.0
    span = rows[:, LAST_HOT] - rows[:, RUN_FROM]
    due = (runs & (rows[:, RAISED] == 0.0) & (ewma >= ON)
           & ((span >= page_s) | ((span >= RECUR_SPAN * page_s) & (hot_n >= RECUR_MIN)
                                  & (hot_n <= RECUR_SHARE * rows[:, STEPS]))))
    if count_nonzero(due):
        for i in np.flatnonzero(due).tolist():
            out.append((int(uid[i]), True, float(rows[i, RUN_FROM])))
        rows[due, RAISED] = 1.0
    if count_nonzero(counted):
        for i in _recurring(rows, counted, runs).tolist():
            out.append((int(uid[i]), True, float(rows[i, EP_FROM])))
            rows[i, RAISED] = 2.0
    table[uid] = rows
    return out


def _over_others(val: np.ndarray, stage: np.ndarray) -> np.ndarray:
    """Each unit's value over the lower median of its stage's *other* units' (0 in a stage of
    under three): one rank's own time is never its reference (a one-rank unit at its stage's
    lower median would read 0 one step in n, and the units' spreads, shrunk so, would let
    a single loader's routine jitter through as hot steps)."""
    out = np.zeros(len(val))
    for s in np.unique(stage).tolist():
        at = np.flatnonzero(stage == s)
        n = len(at)
        if n < 3:
            continue
        order = at[np.argsort(val[at], kind="stable")]
        k = (n - 2) // 2  # (the lower median of the n - 1 others)
        sv = val[order]
        # the others' k-th: the k-th of all below a unit's own place, the (k + 1)-th above
        ref = np.where(np.arange(n) > k, sv[k], sv[k + 1])
        out[order] = sv - ref
    return out


def _cooled(streak: np.ndarray) -> np.ndarray:
    """Streaks after a cool step: a hot run ends (0), a cool one counts down to -QUIET."""
    return np.maximum(np.minimum(streak, 0.0) - 1.0, -QUIET)


def _cool(table: np.ndarray, uid: np.ndarray, streak: np.ndarray) -> None:
    """A step on which none of ``uid`` is hot: their streaks cool (to -QUIET, where a unit's
    episode is over)."""
    streak = _cooled(streak)
    table[uid, STREAK] = streak
    done = uid[streak == -QUIET]
    table[done, EP_IN] = 0.0


def _episode(rows: np.ndarray, counted: np.ndarray, ts: float) -> None:
    """Count the current hot streaks of ``rows[counted]`` as episodes: each joins its unit's
    chain, or begins a new one when the chain's latest episode is over REPEAT_GAP_S old."""
    gone = counted & ~(ts - rows[:, EP_LAST] <= REPEAT_GAP_S)
    rows[gone, EPISODES] = 0.0
    rows[gone, EP_FROM] = rows[gone, STREAK_FROM]
    rows[counted, EPISODES] += 1.0
    rows[counted, EP_LAST] = ts
    rows[counted, EP_IN] = 1.0


def _recurring(rows: np.ndarray, counted: np.ndarray, runs: bool = True) -> np.ndarray:
    """Indices of ``rows`` just counted an episode that make a recurrence on their node: not
    raised, REPEATS episodes in the chain, and SHARE_X times the mean episodes of the units on
    the job's other nodes (in this step's rows; their chains may be stale: a stale one only
    counts against the unit) -- for units of one rank (not ``runs``) a count the other nodes'
    mean makes a chance under LONE_ALPHA among the units too (:func:`_by_chance`)."""
    at = np.flatnonzero(counted & (rows[:, RAISED] == 0.0) & (rows[:, EPISODES] >= REPEATS))
    if not len(at):
        return at
    node, eps = rows[:, NODE].astype(np.intp), rows[:, EPISODES]
    # the other nodes' units: all of them less the unit's node's (counts are whole numbers:
    # the differences are exact), one pass over the rows rather than one a unit counted
    units, total = np.bincount(node), np.bincount(node, weights=eps)
    n = len(rows) - units[node[at]]
    mean = np.divide(float(eps.sum()) - total[node[at]], n, out=np.zeros(len(at)), where=n > 0)
    keep = eps[at] >= SHARE_X * mean
    if not runs:
        keep &= [_by_chance(int(k), m) * len(rows) <= LONE_ALPHA
                 for k, m in zip(eps[at].tolist(), mean.tolist(), strict=True)]
    return at[keep]


def _by_chance(k: int, rate: float) -> float:
    """The chance of ``k`` episodes or more on a node whose episodes come as the other nodes'
    do, at ``rate`` (their mean) in the same time: Poisson's upper tail (0 at rate 0).

    >>> round(_by_chance(3, 5 / 7), 3), _by_chance(3, 0.0)   # (bursty loaders: 3 vs 5 in 7)
    (0.036, 0.0)
    """
    if rate <= 0.0:
        return 0.0
    term, below = math.exp(-rate), 0.0
    for i in range(k):
        below += term
        term *= rate / (i + 1)
    return max(1.0 - below, 0.0)


def _lapse(table: np.ndarray, ts: float) -> list[int]:
    """Units raised as a recurrence whose chain has had no episode for REPEAT_GAP_S by ``ts``:
    cleared (their chains end); returned."""
    gone = np.flatnonzero((table[:, RAISED] == 2.0) & (ts - table[:, EP_LAST] > REPEAT_GAP_S))
    table[gone, RAISED] = 0.0
    table[gone, EPISODES] = 0.0
    table[gone, EP_FROM] = math.nan
    return gone.tolist()


def end_runs(table: np.ndarray, units: np.ndarray) -> None:
    """The runs and streaks of ``units`` that are not raised end: their ranks left them (a
    job's re-form), so their next step is judged as a first one.  Their chains of episodes
    stay (the chain is the node's, judged by its gaps in time)."""
    idle = units[table[units, RAISED] == 0.0]
    table[idle, EWMA] = 0.0
    table[idle, RUN_FROM] = math.nan
    table[idle, HOT] = 0.0
    table[idle, STEPS] = 0.0
    table[idle, STREAK] = 0.0
    table[idle, EP_IN] = 0.0


def late(row: np.ndarray) -> bool:
    """Whether a unit's host time is up now: a run of two steps or more, most of them hot --
    a host feeding its ranks late step after step (a slow CPU or input path: blind3's host
    faults, 16-20 % of a step on every step), not one step's jitter.  An async checkpoint's
    write-back is not this (it slows the node's compute, the module's docstring)."""
    hot = float(row[HOT])
    return not math.isnan(row[RUN_FROM]) and hot >= 2.0 and 2.0 * hot >= float(row[STEPS])


def evidence(key: str, row: np.ndarray, step_ms: float) -> dict[str, Any]:
    """What a raised unit's finding says (its numbers and where to look)."""
    node = node_of(key)
    parts = key.split("\x1f")
    return {
        "signal": "host_share", "basis": "host_time", "stage": int(parts[1]),
        **({"dp_rank": int(parts[2])} if len(parts) > 2 else {}),
        "host_excess_share": round(float(row[EWMA]), 4),
        "host_excess_ms": round(float(row[EWMA]) * step_ms, 1),
        "host_spread_share": round(float(row[SPREAD]), 4),
        "job_step_ms": round(step_ms, 1), "hot_steps": int(row[HOT]),
        "recurring_for_s": round(float(row[LAST_HOT] - row[RUN_FROM]), 1),
        **({"episodes": int(row[EPISODES]),
            "episodes_for_s": round(float(row[EP_LAST] - row[EP_FROM]), 1),
            "episode_rule": (f"{REPEATS} runs or more of >= {EPISODE_HOT} hot steps, each "
                             f"within {REPEAT_GAP_S:.0f} s of the one before, on this node "
                             f"alone (>= {SHARE_X:g}x the other nodes' units' mean): short "
                             "runs that recur -- a cron job, a periodic agent")}
           if row[RAISED] == 2.0 else {}),
        "rule": (f"time in neither compute nor collectives (step_ms - compute_ms - comm_ms) "
                 f"of its ranks over its stage's other ranks, >= {ON:.0%} of the job's step "
                 f"(a hot step: that and >= {NOISE_K:g}x the units' step-to-step spread) "
                 f"smoothed over ~{round(1 / ALPHA)} steps, recurring for the time given: "
                 "its host (data loader and local disk, CPU binding), not its GPUs"),
        "next_diagnostic": (
            f"on {node}: the data loader's storage (`nvme smart-log /dev/nvme0`, `iostat -x 5`:"
            " await and utilisation of the data cache), the ranks' CPU and memory binding "
            "(`numactl --show` and `taskset -cp` of each rank, `nvidia-smi topo -m` for the "
            "GPUs' sockets), the CPUs' clocks (`turbostat`)"),
    }


def widen(table: Any) -> Any:
    """A restored table of a snapshot before round 37 (no SPREAD column) with its units'
    spreads none yet (learnt again in ~1 / ALPHA steps; ON judges meanwhile); any other
    value as it is (check_restored judges it)."""
    if isinstance(table, np.ndarray) and table.ndim == 2 and table.shape[1] == SPREAD:
        return np.concatenate([table, np.zeros((len(table), NCOLS - SPREAD))], axis=1)
    return table


def check_restored(keys: Any, table: Any) -> bool:
    """Whether a restored job's units have this module's shape and bounds."""
    return (type(keys) is list and len(keys) <= MAX_UNITS
            and all(type(k) is str and len(k) <= 1024 for k in keys)
            and isinstance(table, np.ndarray) and table.dtype == np.float64
            and table.ndim == 2 and table.shape[1] == NCOLS and len(table) >= len(keys)
            and len(table) <= MAX_UNITS
            and bool(np.isfinite(np.delete(table, (RUN_FROM, EP_FROM), axis=1)).all())
            and _in_domains(table))


_MAX_COUNT = float(1 << 53)  # (a count past this is no float's whole number: forged)


def _in_domains(table: np.ndarray) -> bool:
    """Whether each column of a restored table holds what a step can write there (review26:
    a RAISED of 3.0 -- neither 0, a run's 1 nor a recurrence's 2 -- held a unit unjudged for
    good; a chain of 1e300 episodes, a node id of -1).  Finite but for the two run starts,
    which are NaN (none) or finite; checked by check_restored."""
    def whole(col: int, lo: float, hi: float) -> bool:
        x = table[:, col]
        return bool(((x >= lo) & (x <= hi) & (x == np.floor(x))).all())

    return (bool(np.isin(table[:, RAISED], (0.0, 1.0, 2.0)).all())
            and bool(np.isin(table[:, EP_IN], (0.0, 1.0)).all())
            and bool((np.abs(table[:, EWMA]) <= CLIP).all())
            and bool(((table[:, SPREAD] >= 0.0) & (table[:, SPREAD] <= 2.0 * CLIP)).all())
            and all(whole(c, 0.0, _MAX_COUNT) for c in (HOT, STEPS, EPISODES))
            and whole(STREAK, -QUIET, _MAX_COUNT) and whole(NODE, 0.0, MAX_UNITS - 1)
            and not np.isinf(table[:, (RUN_FROM, EP_FROM)]).any())
