"""A job whose slowness moves from rank to rank (MoE hot experts): its runs held for a cause.

In a mixture-of-experts job the router decides, step by step, how many tokens each expert
gets, and an expert-parallel rank's work is its experts' share: the rank holding the hot
expert computes more (+4-12 % for tens to hundreds of steps, bounded by the capacity
factor), its EP group's all-to-all waits for it -- a straggler's shape -- then the expert
cools and another rank's warms (bench/blind34: one hot rank an EP group at a time, 20-90
steps, then another; ~300 at most).  Workload, as sequence-length imbalance is (DESIGN).

The twins rule (detector.steps.twins) reads routing that makes the ranks holding one
expert in every EP group hot together (blind8); the wandering index
(detector.steps.noise._wander_update) reads a job whose median rank wanders.  Where each EP
group routes on its own and a few ranks of a peer group are hot at a time (blind34 F1: 4 of
32; F1b: 2 of 16), neither holds: the median rank is steady, no rank has twins, and every
hot expert was escalated slow_node/unknown after its run's first 7-25 steps -- at its GPU,
its node (two hot ranks of one node), its replica.

What tells it apart is that it moves: the job's own history.  Each CUSUM alarm that ends --
the rank back at its peers' pace, unpaged or not -- is an *episode*: its longest run and
its runs' highest mean deviation are kept on its slot (``_ep_end``, ``_ep_len``, ``_ep_mean``).  A
job whose episodes of ``_EP_MIN_STEPS`` steps or more, ended within ``_EP_WINDOW`` steps, and
whose runs alarmed now, are on ``_EP_RANKS`` ranks of ``_EP_NODES`` nodes at as many different
times is a job whose slowness moves (:meth:`_experts_moving`).  There a slow run no longer and
no larger than its slowness -- under ``_EP_LEN_X`` times the longest episode
(``_EP_HOLD_MIN`` steps at least), its mean (less its standard error margin) under the
largest mean plus ``_EP_OVER`` -- is held for a cause (the ``noise_hold`` evidence the
correlator pages with a cause only, detector.steps.slow._held_runs): its GPU's heat, a
brake or an error page it at once with that cause; with none it is told again as a verdict
once it has outlasted the episodes or outgrown them (a slow GPU stays on its rank).  A node
whose ranks slowed on one step (more than half the job's ranks on it, ``_EP_NODE_RANKS`` at
least, within ``_EP_NODE_STEPS``), or all of whose ranks are slow now, is no expert moving:
not held (tests/test_moe35.py: a host fault of 3 % on a 4-GPU node, its TP pairs' runs begun
29 steps apart).

What an expert can make is bounded (moe45): its rank's extra work is the capacity factor's
share at most (``_EP_CAP``, +12.5 %: a run past it, less its margin, is no expert's -- the
reporting corpus of round 44's 16.6 % silent slowdown, held as one), an episode under +3 %
(``_EP_FLOOR``) is a dense job's noise wandering, a run told slow alone in its job (no other
node's rank slow beside it: ``_ep_with``) is a fault paged, not an expert that cooled (faults
come one at a time; an EP group's experts are hot beside the other groups'), and a run going
now does not count for itself (tests/test_moe45.py: three faults paged, then a fourth).

A slow GPU with no cause in such a job waits for its run to outlast the job's episodes
(hundreds of steps where experts stay hot for a hundred) unless it is slower than any
expert was: the price of a workload that makes any rank 10 % slow for 90 steps.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from detector.findings import Finding
from detector.steps.common import _NODE_ALARMED, _PLACE_NOW, _RECENT
from models.numpy_c import count_nonzero

# An episode: a CUSUM alarm whose longest run lasted this many steps or more (a noise
# excursion lasts about one memory of the noise: blind28 F4's 4 steps, PAI's ~4; a hot
# expert tens)
_EP_MIN_STEPS = 15
# ... and its size: its run's highest mean over this many steps or more
_EP_PEAK_STEPS = 5
# ... and no larger than this (log ratio): an expert's extra work is bounded by the capacity
# factor (blind34: <= +12.5 % of compute); a straggler 1.3x its peers is no expert (Alibaba
# PAI job 3's workers 6-9, tests/test_alibaba_pages.py).  (An episode's size is its highest
# 5-step mean, which the noise lifts over its true mean: a margin over _EP_CAP.)
_EP_BOUND = math.log(1.15)
# The most an expert makes its rank slower (log ratio): the capacity factor lets an expert take
# 1.25x its even share of tokens, and the expert FFN is half a rank's compute at most -- +12.5 %
# of compute; of a rank's own time without ``compute_ms`` (step_ms - comm_ms, its host time
# in it too) less.  A run whose mean, less its margin, is past it is no expert's, whatever the
# job's episodes were (the reporting corpus of round 44: a 16.6 % silent slowdown held,
# tests/test_moe45.py)
_EP_CAP = math.log(1.125)
# ... and no smaller than this (log ratio): a hot expert's extra tokens are a share of its
# rank's expert work (>= +8 % of half its compute in blind34: +4 %); a noise excursion of a
# dense job wanders 1-3 % for tens of steps (blind23 loop-s3's lm-d: episodes of 1.4-2.8 %
# on seven nodes, a host CPU throttle's ranks then held as experts, its node paged 13 s after
# one of its GPUs)
_EP_FLOOR = math.log(1.03)
# ... counted while it ended this many steps ago or less
_EP_WINDOW = 2000
# ... or a start offset of this much or more (log ratio) left: its rank's latest steps this many
# noise units under it on average (_experts_offsets_left)
_EP_OFFSET = math.log(1.03)
_EP_LEFT_Z = 2.5
# A job whose slowness moves: episodes on this many ranks, of this many nodes, ended at
# this many different times (_EP_APART steps apart: a node's ranks recovering together are
# one event)
_EP_RANKS = 3
_EP_NODES = 2
_EP_APART = 5
# There a run is held while it is under this many times the longest episode (an EP group
# may draw the same rank again: two or three experts' turns in a row on one rank) ...
_EP_LEN_X = 3.0
# ... and at least this many steps (a job's first episodes are its shortest: blind34 ep's
# hot experts stay 20-90 steps)
_EP_HOLD_MIN = 100
# ... and its mean (less its margin) under the largest mean plus this (log ratio)
_EP_OVER = math.log(1.03)
# Not held: a run beside its node's ranks whose runs began within this many steps of its own,
# this many and more than half the job's ranks there (a node slowed on one step: an EP group's
# experts are hot one at a time, so a node holding two ranks of each group has half of them
# hot at most -- blind34 ep seed 1: three groups' new experts on one node within 3 steps)
_EP_NODE_RANKS = 3
_EP_NODE_STEPS = 10
# A relay: a run begun from this many steps before another rank's episode ended to this many
# after it -- the slowness handed from that rank to this one (an EP group always has a busiest
# rank: as one expert cools another warms.  blind34: the next run's CUSUM onset 2-5 steps
# before the last one's end, which trails the expert's cooling by the score's drain, up to 14
# behind a run told before)
_EP_RELAY_BEFORE = 20
_EP_RELAY_AFTER = 5


def _experts_note(self, r: np.ndarray, cleared: np.ndarray) -> None:
    """Keep each alarmed slot's longest run so far and its highest mean (``_ep_n``,
    ``_ep_peak``) and, for ``cleared`` (alarms that ended this step), those as the slot's
    latest episode (``_ep_end``: the job's evaluated count then; ``_ep_len``, ``_ep_mean``)."""
    alarmed = self._slow.alarmed[r]
    if np.count_nonzero(alarmed):
        a = r[alarmed]
        n = self._run_n[a]
        self._ep_n[a] = np.maximum(self._ep_n[a], n)
        # (its mean at its highest, over _EP_PEAK_STEPS steps at least: a run's mean at its
        # longest takes in the steps its score drained on after the expert left)
        self._ep_peak[a] = np.where(n >= _EP_PEAK_STEPS, np.maximum(
            self._ep_peak[a], self._run_sum[a] / np.maximum(n, 1)), self._ep_peak[a])
        if len(a) >= _EP_NODE_RANKS:
            self._experts_node_runs(a)
        if len(a) > 1:  # (slow beside another node's run of _EP_PEAK_STEPS steps or more)
            hw = self._hw
            long = {hw[m][0] for m in a[n >= _EP_PEAK_STEPS].tolist() if hw[m] is not None}
            if long:
                for m in a.tolist():
                    h = hw[m]
                    if h is not None and not self._ep_with[m] and long - {h[0]}:
                        self._ep_with[m] = True
    if self.start_offsets and self.cfg.warmup_steps < self._evaluated <= _EP_WINDOW:
        self._experts_offsets_left()
    if len(cleared):
        # (a run its rank was told slow for -- paged at its GPU, with a cause or escalated
        # without one -- alone in the job is a fault that ended, not an expert that cooled: no
        # episode, and the slot's earlier one goes with it.  Experts are hot in every EP group
        # at once, so a job's first experts, told before its slowness was seen to move, were
        # slow beside another node's (_ep_with); faults come one at a time.  A run held for a
        # cause only, noise_hold, is one)
        told = self._reported[cleared] & ~self._held[cleared] & ~self._ep_with[cleared]
        if count_nonzero(told):
            # (... but a run another rank's took over from -- begun within _EP_RELAY_BEFORE
            # steps of this end -- was handed on: a relay, an expert's, :func:`_experts_relay`)
            told[told] = ~_experts_handed_on(self, cleared[told])
        told |= self._ep_node[cleared]  # (a node's run: no expert's, _experts_node_runs)
        self._ep_end[cleared] = np.where(told, 0, self._evaluated)
        self._ep_len[cleared] = np.where(told, 0, self._ep_n[cleared])
        self._ep_mean[cleared] = np.where(told, 0.0, self._ep_peak[cleared])
        self._ep_n[cleared] = 0
        self._ep_peak[cleared] = 0.0
        self._ep_with[cleared] = False
        self._ep_node[cleared] = False
        self._ep_rhold[cleared] = 0
        self._ep_rtop[cleared] = 0.0
        self._ep_rranks[cleared] = self._ep_rnodes[cleared] = 0


def _experts_handed_on(self, ended: np.ndarray) -> np.ndarray:
    """Per slot of ``ended`` (runs ending on this step): whether another rank's run, alarmed
    now and not a node's (``_ep_node``), began within ``_EP_RELAY_BEFORE`` steps before this
    step -- the slowness handed on to it (:func:`_experts_relay`)."""
    n = len(self._rank_of)
    now = np.flatnonzero(self._slow.alarmed[:n] & ~self._ep_node[:n])
    out = np.zeros(len(ended), dtype=bool)
    if not len(now):
        return out
    young = now[self._run_n[now] <= _EP_RELAY_BEFORE].tolist()
    for i, m in enumerate(ended.tolist()):
        out[i] = any(o != m for o in young)
    return out


def _experts_relay(self, s: int, n: int) -> tuple[int, float, int, int] | None:
    """Whether slot ``s``'s run (``n`` steps so far) took over from another rank's: an
    episode (``_EP_MIN_STEPS`` long, between ``_EP_FLOOR`` and ``_EP_BOUND``) that ended from
    ``_EP_RELAY_AFTER`` steps before the run began to ``_EP_RELAY_BEFORE`` after -- as
    :meth:`_experts_moving` says it, from those episodes: (the steps the run is held for, their
    largest mean, 1 + their ranks, their nodes and its own); None when none.

    A job's first experts are hot before any has moved, and were told (blind34 F1b: the two
    experts hot from a fast job's first step, one an EP group, each hands its slowness to
    another rank of its group when it cools; 1-4 escalations a log before a moving history
    was seen).  What an expert does that a fault does not is hand over: as its expert cools
    the next one warms -- an EP group's all-to-all always waits for its busiest rank.  A fault
    begun with another rank's episode ending is a coincidence of ~20 steps, and it is still
    paged at once with a cause, or once it outlasts or outgrows what it took over."""
    k = len(self._rank_of)
    end = self._ep_end[:k]
    began = self._evaluated - n
    ended = np.flatnonzero((end > 0) & (end >= began - _EP_RELAY_AFTER)
                           & (end <= began + _EP_RELAY_BEFORE)
                           & (self._ep_len[:k] >= _EP_MIN_STEPS)
                           & (self._ep_mean[:k] <= _EP_BOUND) & (self._ep_mean[:k] >= _EP_FLOOR))
    ended = ended[ended != s]
    lens = self._ep_len[ended].tolist()
    means = self._ep_mean[ended].tolist()
    before = ended.tolist()
    if n <= _EP_RELAY_BEFORE:
        # (... or a run alarmed still, an episode's length and size so far, whose rank is back
        # at its peers' pace -- its run over, its score draining, or its latest steps at their
        # pace: the next expert warms as it cools.  Told slow or not: a fault's end with
        # another rank's slowness begun on it is the coincidence above)
        cols = [(self._evaluated % _RECENT - j) % _RECENT for j in range(_PLACE_NOW)]
        cooled = np.flatnonzero(self._slow.alarmed[:k] & ~self._ep_node[:k]
                                & (self._ep_n[:k] >= _EP_MIN_STEPS)
                                & (self._ep_peak[:k] >= _EP_FLOOR)
                                & (self._ep_peak[:k] <= _EP_BOUND))
        for m in cooled.tolist():
            if m != s and (self._run_n[m] == 0
                           or float(self._recent[m, cols].mean()) <= 0.0):
                before.append(m)
                lens.append(int(self._ep_n[m]))
                means.append(float(self._ep_peak[m]))
    if not before:
        return None
    hw = self._hw
    nodes = {hw[m][0] for m in [*before, s] if hw[m] is not None}
    return (max(int(_EP_LEN_X * max(lens)), _EP_HOLD_MIN), float(max(means)), len(before) + 1,
            len(nodes))


def _experts_node_runs(self, a: np.ndarray) -> None:
    """Mark (``_ep_node``) the alarmed runs of ``a`` (slots) begun with most of their node's:
    ``_EP_NODE_RANKS`` ranks and more than half the job's ranks on a node whose runs began
    within ``_EP_NODE_STEPS`` steps of one another.  A node slowed on one step is its host's,
    its board's or its power's -- a site's cap reaching its nodes one by one, each node's
    GPUs together (tests/test_cap33.py) -- never an EP group's experts, hot one at a time:
    such a run ends no episode, counts for no moving job, and is not held (moe45's hold read a
    site cap let go node by node as moving slowness and isolated GPUs of a capped node at
    their own power, out of their node's wave)."""
    hw = self._hw
    by: dict[str, list[int]] = {}
    for m in a.tolist():
        h = hw[m]
        if h is not None:
            by.setdefault(h[0], []).append(m)
    span = _EP_NODE_STEPS * max(self._period, 1e-3)
    onset = self._slow.onset_ts
    for node, ms in by.items():
        if len(ms) < _EP_NODE_RANKS:
            continue
        here = sum(1 for h in hw[:len(self._rank_of)] if h is not None and h[0] == node)
        ms.sort(key=lambda m: float(onset[m]))
        lo = 0
        for hi in range(len(ms)):
            while float(onset[ms[hi]]) - float(onset[ms[lo]]) > span:
                lo += 1
            k = hi - lo + 1
            if k >= _EP_NODE_RANKS and 2 * k > here:
                self._ep_node[ms[lo:hi + 1]] = True


def _experts_offsets_left(self) -> None:
    """A rank slower than its peers from the job's start (its learned offset,
    ``start_offsets``) back at their pace -- its latest ``_PLACE_NOW`` steps
    ``_EP_LEFT_Z`` noise units under its offset on average -- is an episode that ended, as
    long as the job's start: an expert hot from the first step is learned as its rank's
    offset in the warm-up, and no alarm of it ever ends (blind34: the eight hot experts of
    the job's first steps).  A GPU slower for good from the start keeps its offset."""
    cols = [(self._evaluated % _RECENT - j) % _RECENT for j in range(_PLACE_NOW)]
    for rank, offset in self.start_offsets.items():
        s = self._slot.get(rank)
        if s is None or self._ep_end[s] or offset < math.expm1(_EP_OFFSET):
            continue
        if float(self._recent[s, cols].mean()) <= -_EP_LEFT_Z:
            self._ep_end[s] = self._ep_len[s] = self._evaluated
            self._ep_mean[s] = math.log1p(offset)


def _experts_moving(self, now_ts: float, without: int | None = None
                    ) -> tuple[int, float | None, int, int] | None:
    """The job's recent slowness when it moves (see the module's docstring): (the steps a run
    of it is held for, the largest mean of its ended episodes (log ratio; None: none ended),
    on how many ranks, of how many nodes) -- None when it does not.

    Its ranks: those whose episode ended within ``_EP_WINDOW`` steps, ``_EP_MIN_STEPS`` long
    at least, and those slow now (alarmed, other than ``slot``): at a job's start no episode
    has ended yet, while its hot experts are slow on several nodes at once, each run begun at
    its own step (blind34 ep seed 3: 5 ranks on 4 nodes alarmed at step 73, none ended until
    step 132) -- a node's fault begins on one step, its ranks' runs together.  The hold is
    ``_EP_LEN_X`` times the longest episode that ended, ``_EP_HOLD_MIN`` at least: never the
    runs still going, so two faults slow at once do not hold each other up for good.
    ``now_ts``: the step's time (runs' onsets are times); ``without``: a slot whose run going
    now is not counted (the run judged: a run does not vouch for itself)."""
    n = len(self._rank_of)
    end = self._ep_end[:n]
    ended = np.flatnonzero((end > 0) & (self._evaluated - end <= _EP_WINDOW)
                           & (self._ep_len[:n] >= _EP_MIN_STEPS)
                           & (self._ep_mean[:n] <= _EP_BOUND) & (self._ep_mean[:n] >= _EP_FLOOR))
    # (runs alarmed now: not a rank told slow for good -- a fault is no expert -- nor one
    # past what an expert makes)
    runs = np.maximum(self._run_n[:n], 1)
    now = np.flatnonzero(self._slow.alarmed[:n] & (~self._reported[:n] | self._held[:n])
                         & ~self._ep_node[:n]
                         & (self._run_sum[:n] <= _EP_BOUND * runs)
                         & (self._run_sum[:n] >= _EP_FLOOR * runs))
    if without is not None:
        now = now[now != without]
    if len(ended) + len(now) < _EP_RANKS:
        return None
    hw = self._hw
    ranks = set(ended.tolist()) | set(now.tolist())
    if len(ranks) < _EP_RANKS:
        return None
    nodes = {hw[s][0] for s in ranks if hw[s] is not None}
    if len(nodes) < _EP_NODES:
        return None
    # at different times: episodes' ends, and runs' onsets (in steps back from now)
    period = max(self._period, 1e-3)
    # (the runs going now a node at a time: a host fault's ramp begins its ranks' runs
    # steps apart -- blind23 D2's CPU throttle, 8 runs on gpu08 over 13 steps)
    began: dict[str | None, float] = {}
    for m in now.tolist():
        node = hw[m][0] if hw[m] is not None else None
        began[node] = max(began.get(node, -math.inf),
                          (now_ts - float(self._slow.onset_ts[m])) / period)
    times = sorted([*(self._evaluated - end[ended]).tolist(), *began.values()])
    apart, last = 0, -math.inf
    for t in times:
        if t - last > _EP_APART:
            apart += 1
            last = t
    if apart < _EP_RANKS:
        return None
    if not len(ended):
        return _EP_HOLD_MIN, None, len(ranks), len(nodes)
    return (max(int(_EP_LEN_X * self._ep_len[ended].max()), _EP_HOLD_MIN),
            float(self._ep_mean[ended].max()), len(ranks), len(nodes))


def _experts_held(self, waiting: np.ndarray, n: np.ndarray, mean: np.ndarray,
                  margin: np.ndarray, now_ts: float
                  ) -> tuple[np.ndarray, dict[int, dict[str, Any]]]:
    """Per slot of ``waiting`` (alarmed, not told; ``n`` its run's steps, ``mean`` its mean
    deviation, ``margin`` that mean's standard error margin; ``now_ts`` the step's time):
    whether it is held as an expert's run in a job whose slowness moves, and the held ones'
    evidence."""
    held = np.zeros(len(waiting), dtype=bool)
    out: dict[int, dict[str, Any]] = {}
    moving = self._experts_moving(now_ts)
    k = len(self._rank_of)
    if moving is None and not count_nonzero(self._ep_end[:k]) and not count_nonzero(
            self._ep_n[:k] >= _EP_MIN_STEPS) and not count_nonzero(self._ep_rhold[:k]):
        return held, out  # (the usual step: no episode, no relay)
    hw = self._hw
    onset = self._slow.onset_ts
    period = max(self._period, 1e-3)
    alarmed = np.flatnonzero(self._slow.alarmed[:len(self._rank_of)]).tolist()
    runs = {m: float(self._run_sum[m]) / max(int(self._run_n[m]), 1) for m in alarmed
            if (not self._reported[m] or self._held[m]) and not self._ep_node[m]}
    runs = {m: v for m, v in runs.items() if _EP_FLOOR <= v <= _EP_BOUND}
    for i, s in enumerate(waiting.tolist()):
        # (the job's slowness moving without this run: a run that counted is asked again
        # without it -- the job's earlier faults paged and one more run are not experts)
        mv = moving if s not in runs or moving is None else self._experts_moving(
            now_ts, without=s)
        if mv is None:
            # (not moving yet: its run took over from another rank's, a relay)
            mv = _experts_relay(self, s, int(n[i]))
        if mv is None and not self._ep_rhold[s]:
            continue
        if mv is not None:
            hold, ended_top, ranks, nodes = mv
            # (how slow the job's experts make a rank: its ended episodes; none yet, the other
            # runs going now -- never the run's own; and never past what an expert can make)
            top = ended_top if ended_top is not None else max(
                (v for m, v in runs.items() if m != s), default=-math.inf)
        else:
            hold, top = 0, -math.inf
        if self._ep_rhold[s]:
            # (held as an expert's already: while its run lasts, within the most it was held
            # for -- the job's history moving on under it does not tell it alone)
            hold, top = max(hold, int(self._ep_rhold[s])), max(top, float(self._ep_rtop[s]))
        if n[i] >= hold or mean[i] - margin[i] >= min(top + _EP_OVER, _EP_CAP) or (
                self._ep_node[s]):
            continue
        if hw[s] is not None:
            node = hw[s][0]
            mates = [m for m in alarmed if m != s and hw[m] is not None and hw[m][0] == node]
            together = 1 + sum(1 for m in mates
                               if abs(onset[m] - onset[s]) <= _EP_NODE_STEPS * period)
            here = sum(1 for h in hw[:len(self._rank_of)] if h is not None and h[0] == node)
            if (together >= _EP_NODE_RANKS and 2 * together > here) or (
                    len(mates) + 1 >= max(here, _EP_NODE_RANKS)):
                continue  # (a node slowed: on one step, or every rank of it now)
        held[i] = True
        if mv is not None:
            self._ep_rranks[s], self._ep_rnodes[s] = ranks, nodes
        self._ep_rhold[s], self._ep_rtop[s] = hold, top
        ranks, nodes = int(self._ep_rranks[s]), int(self._ep_rnodes[s])
        out[s] = {"steps": int(n[i]), "ranks": ranks, "nodes": nodes, "hold_steps": hold,
                  "largest_ratio": round(math.exp(top), 4),
                  "for": f"a cause on its GPU or node only: the job's slowness moves from rank "
                         f"to rank (MoE hot experts: {ranks} ranks of {nodes} nodes slow at "
                         f"their own times lately, for up to {hold / _EP_LEN_X:.0f} steps, up to "
                         f"{math.exp(top) - 1.0:+.1%}); escalated without a cause once it has "
                         f"lasted {hold} steps ({_EP_LEN_X:g}x the longest, {_EP_HOLD_MIN} at "
                         f"least), or its mean stands {math.exp(_EP_OVER) - 1.0:.0%} over the "
                         f"largest or {math.exp(_EP_CAP) - 1.0:.1%} over its peers (the most an "
                         f"expert makes)"}
    return held, out


def _experts_hold_rules(self, out: list[Finding], mark: int, now_ts: float) -> None:
    """Take back the slow ranks found on this step (``out[mark:]``) by a rule of a rank's
    share of outlier steps or of its long mean (detector.steps.rules' recurring and sustained
    stragglers, a rank against its own past, the wandering job's 100-step mean) while the
    job's slowness moves and the rank's run is within what its experts do (under the hold's
    steps and the largest mean plus ``_EP_OVER``, :meth:`_experts_moving`): an expert that
    comes back to a rank makes it its peers' clear outlier again and again, and one hot for
    ~100 steps lifts its 100-step mean 7 % over the ranks' (the synthetic job of
    tests/test_moe44.py: a recurring straggler at step 611, a wandering one at 641, both
    experts).  Not the twins' (experts hot in every EP group together are read there)."""
    moving = self._experts_moving(now_ts)
    if moving is None:
        return
    hold, top, _, _ = moving

    def within(m: int) -> bool:  # (its run no longer nor larger than the experts')
        n = int(self._run_n[m])
        mean = float(self._run_sum[m]) / max(n, 1)
        return n < hold and mean < _EP_BOUND and (top is None or mean < top + _EP_OVER)

    kept = []
    for f in out[mark:]:
        s = self._slot.get(f.rank) if f.rank is not None else None
        if (s is not None and f.signal == "slow_rank" and f.active and "rule" in f.evidence
                and "twin_ratio" not in f.evidence and within(s)):
            self._reported[s] = self._sustained[s] = self._recurring[s] = False
            self._wander_rep[s] = False
            continue
        if s is not None and f.evidence.get("node_alarmed"):
            # (its node's alarmed mates counted without the experts' runs: the correlator
            # pages a rank at its node on node_alarmed, a host fault's sign)
            hw = self._hw
            node = hw[s][0] if hw[s] is not None else None
            k = sum(1 for m in np.flatnonzero(self._slow.alarmed[:len(self._rank_of)]).tolist()
                    if m != s and hw[m] is not None and hw[m][0] == node and not within(m))
            if k < _NODE_ALARMED:
                f = f._replace(evidence={key: v for key, v in f.evidence.items()
                                         if key != "node_alarmed"})
        kept.append(f)
    out[mark:] = kept
