"""Slow ranks taken back on the step they were found: a job-wide event, a place
slow on other nodes too, a wandering or shared slowness.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np

from detector.findings import Finding
from detector.steps.common import (
    _AFTER_EVENT_RATIO,
    _AFTER_EVENT_S,
    _BESIDE_Z,
    _NODE_ALARMED,
    _PLACE_MARGIN,
    _PLACE_NODES,
    _PLACE_NOW,
    _PLACE_SHARE,
    _RECENT,
    _SHARED_PEERS,
    _SHARED_SHARE,
    _WANDER_GROSS_NODES,
    _WANDER_NODES,
    _WANDER_NODES_KEPT,
    _WANDER_PLACE_STEPS,
    _ints,
)

# A GPU that joined the job after its warm-up is judged as from its start this many steps
# (_gross_joiner): its cold steps (a rank joining cold: _cold_steps) and a few steps past them
_JOIN_STEPS = 20

# A node mate told slow on a run this many steps longer than a rank's was slow on its own
# before the rank's run began (JobMonitor._slow_before): about the smoothed window (_wshort,
# ~10 steps); a host fault's ranks begin their runs within a few steps of each other
_OWN_RUN_STEPS = 10
# Slow ranks found on this many nodes at most, each node found again and again for this many
# steps with no node new since, are faults that stay, not slowness visiting nodes (_visiting).
_SETTLED_NODES = 3
_SETTLED_STEPS = 8


def _holdable(f: Finding) -> bool:
    """A slow rank told on this step that a hold may take back (_hold_wandering,
    _hold_shared, _same_place / _hold_same_place): active, found by a rule other than the
    wandering job's and the twins' (those are already the workload's reading), and than the
    TP mates' (detector.steps.phases: a rank over its own TP group's lockstep mates, which
    its peers elsewhere sharing its slowness or not says nothing of)."""
    return (f.signal == "slow_rank" and f.active and "wander_mean_ratio" not in f.evidence
            and "twin_ratio" not in f.evidence and "tp_mates_ratio" not in f.evidence)


def _hold_after_event(self, out: list[Finding], mark: int, now: float) -> None:
    """Take back a slow rank found on this step (``out[mark:]``) that looks like the
    write-back following a job-wide host step (a checkpoint's snapshot) until
    ``_AFTER_EVENT_S`` after that step: its run began after the step (or a few steps
    before it), it is under ``_AFTER_EVENT_RATIO`` slower than its peers, its node's
    ranks are slow with it (:meth:`_node_slow`: the write-back contends for the node's
    PCIe and memory, every GPU it feeds) and their host time is not up
    (:meth:`_host_up`).  The write-back, node by node, fades (blind10 K3); a rank still
    slow then is found again and reported (a node's ranks together: one hold for all).

    A fault is reported at once: one GPU slow among its node's mates (a thermal or
    power slowdown that began during a checkpoint; round 20's hold took every one under
    1.10x for up to 120 s: the reporting corpus' 10-15 % slowdowns median 7 -> 10
    steps), or a node whose ranks arrive late (its host path: blind3's host faults,
    held 10-30 s by round 20's hold)."""
    kept = []
    events = self._event_ts
    for f in out[mark:]:
        s = self._slot.get(f.rank) if f.rank is not None else None
        ev = f.evidence
        ratio = ev.get("mean_ratio_over_run", ev.get("compute_ratio_to_peers"))
        onset = f.onset_ts
        if (s is None or f.signal != "slow_rank" or not f.active or ratio is None
                or ratio >= _AFTER_EVENT_RATIO or not any(
                    0.0 <= onset - e <= _AFTER_EVENT_S and now - e < _AFTER_EVENT_S
                    for e in events) or not self._node_slow(s) or self._host_up(s)):
            kept.append(f)
            continue
        self._reported[s] = self._sustained[s] = self._recurring[s] = False
    out[mark:] = kept


def _alarmed_without_places(self, out: list[Finding], mark: int, slots: np.ndarray,
                            groups: np.ndarray) -> None:
    """Tell the slow ranks found on this step (``out[mark:]``) ``node_alarmed`` counting no
    mate whose place is slow alike on other nodes (:meth:`_place_slow`): an MoE expert's
    GPUs, alarmed on every node that holds it, are the workload's, not evidence that the
    node is slow (moe34: a GPU 4.5 % slow for good beside a +2.5 % expert's two GPUs of its
    node, told node_alarmed 3, was paged at its node by the correlator's node rule) -- unless
    its node's other ranks are slow beside them (:meth:`_slow_beside`, revB34 F2: a host
    fault reads on the expert's GPUs too)."""
    def placed(m: int) -> bool:
        return self._place_slow(m, slots, groups)

    for i in range(mark, len(out)):
        f = out[i]
        s = self._slot.get(f.rank) if f.rank is not None else None
        if s is None or not f.evidence.get("node_alarmed"):
            continue
        k = self._node_alarmed(s, placed)
        if k < f.evidence["node_alarmed"] and self._slow_beside(s, placed):
            k = f.evidence["node_alarmed"]  # (its node slow beside its place mates)
        ev = {key: v for key, v in f.evidence.items() if key != "node_alarmed"}
        if k >= _NODE_ALARMED:
            ev["node_alarmed"] = k
        out[i] = f._replace(evidence=ev)


def _visiting(self, out: list[Finding], mark: int) -> bool:
    """Whether the slow ranks found on this step (``out[mark:]``) make the job's slowness
    one that visits unit after unit: found on ``_WANDER_NODES`` nodes or more, of more
    than one replica, within ``_WANDER_PLACE_STEPS`` steps (a few: routing finds the ranks of
    one expert together; two faults of one job 20 steps apart are two pages,
    tests/conftest.py's service incident).  A fault is on one unit (a
    GPU, a node; a TP group spanning nodes is one replica, tests/test_review_round13.py);
    MoE routing caught before its wandering is measurable (:meth:`_wander_update` needs
    ~100 steps) found the ranks holding one expert in two EP groups, two nodes, on one
    step, and 7 nodes in 15 s (blind8 H1)."""
    found = self._found_nodes
    since = self._found_since
    now = self._evaluated
    for f in out[mark:]:
        if f.signal == "slow_rank" and f.active and f.scope.node is not None \
                and not self._gross_start(f):
            if found.pop(f.scope.node, None) is None:
                since[f.scope.node] = now
            found[f.scope.node] = (now, -1 if f.dp_rank is None else f.dp_rank)
    while found and (now - next(iter(found.values()))[0] > _WANDER_PLACE_STEPS
                     or len(found) > _WANDER_NODES_KEPT):
        del found[next(iter(found))]
    if len(since) > len(found):
        for node in [n for n in since if n not in found]:
            del since[node]
    return len(found) >= _WANDER_NODES and len({dp for _, dp in found.values()}) > 1


def _settled(self, f: Finding) -> bool:
    """Whether ``f``'s node, found slow on end for ``_SETTLED_STEPS`` steps among at most
    ``_SETTLED_NODES`` nodes found lately, is a fault that stays on its unit, not slowness
    visiting it (:meth:`_hold_wandering` keeps its finding before the job's wandering is
    known): routing moves on within a few steps (blind8 H1: 7 nodes in 15 s); a fault a node
    stays -- blind36's colocated RL job, a GPU slow, one hot in decodes and one capped, on
    three nodes of a 30-step log, was held as visiting to its end, the job's wander index
    unreadable before its 130th step (rl46).  Only in a job whose noise is its replicas'
    batches (``_imbalanced``: a rank found against its replica's lockstep mates, a fault's
    reading; blind34's MoE jobs are not, and their hot experts stay on two nodes for tens of
    steps -- ep-s0..s2 paged 1-3 GPUs each when it was not asked) and whose slowness is no
    expert's moving (:meth:`_experts_moving`)."""
    found = self._found_nodes
    node = f.scope.node
    return (self._imbalanced and not self._wandering and node is not None and node in found
            and len(found) <= _SETTLED_NODES
            and self._evaluated - self._found_since.get(node, self._evaluated) >= _SETTLED_STEPS
            and self._experts_moving(f.ts) is None)


def _hold_wandering(self, out: list[Finding], mark: int, slots: np.ndarray,
                    groups: np.ndarray) -> None:
    """Take back the slow ranks the other rules found on this step of a wandering job
    (``out[mark:]``; the step's ``slots`` and their ``groups``): not reported, so found again
    while they stay slow, and reported only by the wandering job's rule
    (:meth:`_wander_update`) -- but a run clear of the job's measured wander
    (:meth:`_clear_of_wander`), told ``node_wide`` only of its node's ranks kept with it
    (a wandering mate found alike with it is taken back: revA40 F10 seed 2, node_wide 2
    escalated the node)."""
    kept = []
    clear = False
    for f in out[mark:]:
        if not _holdable(f) or f.rank is None or f.rank not in self._slot or (
                not self._wandering and self._gross_start(f)):
            kept.append(f)
            continue
        if self._wandering and self._clear_of_wander(f, slots, groups):
            kept.append(f)
            clear = True
            continue
        if self._settled(f):
            kept.append(f)
            clear = True  # (its node_wide counts only its node's ranks kept with it, below)
            continue
        s = self._slot[f.rank]
        self._reported[s] = self._sustained[s] = self._recurring[s] = False
    if clear and len(kept) < len(out) - mark:
        wide = Counter(f.scope.node for f in kept if "node_wide" in f.evidence)
        kept = [f if "node_wide" not in f.evidence or wide[f.scope.node] >= f.evidence[
            "node_wide"] else f._replace(evidence={
                **{k: v for k, v in f.evidence.items() if k != "node_wide"},
                **({"node_wide": wide[f.scope.node]} if wide[f.scope.node] >= 2 else {})})
            for f in kept]
    out[mark:] = kept


def _gross_start(self, f: Finding) -> bool:
    """Whether ``f`` is the warm-up's gross prior's (a rank >= 30 % slower than its peers from
    the job's first steps) while the warm-up's gross steps are on fewer than
    ``_WANDER_GROSS_NODES`` nodes: :meth:`_gross_prior` judged it a fault, and neither
    :meth:`_visiting` nor :meth:`_hold_wandering` takes it back.

    The gross prior tells the workload by its spread -- routing caught mid-run is gross on
    3 nodes or more at once (blind8 H1: 11 on the second step) -- and a fault by staying on
    its unit.  Two GPUs gross from the start on two nodes are two faults (DESIGN: each paged
    within 3 steps); read as slowness visiting two nodes, both were held until the job's
    wandering could be read (130 steps: tests/test_elastic37.py, 390 s at 3 s a step)."""
    if f.evidence.get("gross_outlier"):
        return len(self._gross_nodes) < _WANDER_GROSS_NODES
    if f.evidence.get("past_gross_steps"):
        return self._past_gross_start()
    return self._gross_joiner(f)


def _gross_joiner(self, f: Finding) -> bool:
    """Whether ``f`` tells slow a GPU that joined the job after its warm-up (a new VM the job
    grew onto: :meth:`_track_hardware`'s ``_joined``) at most ``_JOIN_STEPS`` steps ago,
    ``gross_slowdown`` slower than its peers on every step of its run (its gross count as long
    as its run) -- while such joiners are on fewer than ``_WANDER_GROSS_NODES`` nodes.

    A VM that joins late is "from its start" (DESIGN's <= 3 steps for >= 30 %): judged as
    the warm-up's gross prior judges a job's first steps.  Found on the same steps as
    another GPU turning slow at that re-form, the pair read as slowness visiting two nodes
    and was held until the job's wandering could be read (blind27 held churn-s4: the new
    VM's GPU x1.4 and sp-03's x1.11 both 492.7 s late; tests/test_elastic37.py E1)."""
    joined = self._joined
    s = self._slot.get(f.rank) if f.rank is not None else None
    if not joined or s is None or s >= len(self._hw):
        return False
    at = joined.get(self._hw[s])
    if at is None or self._evaluated - at > _JOIN_STEPS:
        return False
    mean = f.evidence.get("mean_ratio_over_run")
    if mean is None or mean < 1.0 + self.cfg.gross_slowdown or self._gross[s] < self._run_n[s]:
        return False
    nodes = {h[0] for h, t in joined.items() if self._evaluated - t <= _JOIN_STEPS}
    return len(nodes) < _WANDER_GROSS_NODES


def _hold_shared(self, out: list[Finding], mark: int, slots: np.ndarray,
                 groups: np.ndarray) -> None:
    """Before a job's wandering can be decided (its first ``_WANDER_MIN_STEPS +
    _WANDER_HOLD_STEPS`` steps), or while its index says it may wander, take back a slow rank
    found on this step (``out[mark:]``) whose slowness peers of its group on other nodes share:
    ``_SHARED_PEERS`` of them with a smoothed z (``_wshort``, ~10 steps) at least
    ``_SHARED_SHARE`` of its own.  Routing makes the ranks holding one expert in every EP group
    hot together: blind8 rail-moe's early pages, a node's TP pair found by the CUSUM at steps
    28-35 of the monitor, before the index is read (30 steps; it read 0.7-1.2 there, over 2 from
    step ~90) or the regime entered, while its expert's 3 other ranks ran as slow on 3 other
    nodes.  A fault is on its own unit, its peers elsewhere at their pace; a rank held is found
    again on its next step and reported once its peers are not slow with it (as
    :meth:`_hold_wandering`)."""
    kept = []
    hw, ws = self._hw, self._wshort
    for f in out[mark:]:
        s = self._slot.get(f.rank) if f.rank is not None else None
        if s is None or not _holdable(f) or ws[s] <= 0.0:
            kept.append(f)
            continue
        at = np.flatnonzero(slots == s)
        node = hw[s][0] if hw[s] is not None else None
        peers = [p for p in slots[groups == groups[at[0]]].tolist() if p != s and (
            node is None or hw[p] is None or hw[p][0] != node)] if len(at) else []
        if sum(ws[p] >= _SHARED_SHARE * ws[s] for p in peers) < _SHARED_PEERS:
            kept.append(f)
            continue
        self._reported[s] = self._sustained[s] = self._recurring[s] = False
    out[mark:] = kept


def _same_place(self, out: list[Finding], mark: int, slots: np.ndarray,
                groups: np.ndarray) -> list[int]:
    """The slots of the slow ranks found on this step (``out[mark:]``) whose place is slow
    on other nodes too: the ranks of its peer group on the same GPU index of other nodes
    -- ``_PLACE_NODES`` distinct nodes and ``_PLACE_SHARE`` of those holding that index --
    with a smoothed z (``_wshort``, ~10 steps) at least ``_SHARED_SHARE`` of its own and
    within ``_PLACE_MARGIN`` of it, while its own node's other ranks of the group are not
    (fewer than half of them at that share; a node holding one rank of the group has no
    place to tell).  Nodes, not ranks: two processes on one GPU of a node slow as a whole
    are one node.  A share: a large pure-DP job's noise lifts 2 of 127 peers over half a
    real slowdown's early smoothed z.  The margin: a place explains its rank up to its
    own level, not a fault on top of it (revA31 4, tests/test_tail32.py).

    An MoE router makes one expert hot at a time, the same EP index in every EP group:
    with EP over the data-parallel ranks (EP rank = dp % 8) and four replicas to a node,
    the same two GPUs of four nodes, each node's other replicas at their pace, for 10-40
    steps, then another index (blind21 M1: escalated slow_node/unknown at the four nodes
    at once, 41 times in 5 of 8 logs, in a job whose wander index read calm -- one expert
    in eight leaves the median rank where it is -- so neither the wandering rules nor the
    stir test held it).  DESIGN has no ep_rank: the place is read from the hardware the
    ranks report.  A fault is on its own unit: one GPU, one node (its other ranks slow with
    it), a TP group; it does not slow the same GPU of three nodes together and leave their
    other GPUs alone."""
    place: list[int] = []
    for f in out[mark:]:
        s = self._slot.get(f.rank) if f.rank is not None else None
        if s is not None and s not in place and _holdable(f) and self._place_slow(
                s, slots, groups):
            place.append(s)
    return place


# Another node's ranks of a peer group off a place, at least, for that node to be read slow as
# a whole (_place_slow): fewer cannot tell a node from two experts' GPUs on it.
_WHOLE_NODE_RANKS = 3


def _place_slow(self, s: int, slots: np.ndarray, groups: np.ndarray) -> bool:
    """Whether slot ``s``'s place is slow alike on other nodes, its node's other ranks of
    its peer group not (:meth:`_same_place`'s test, for one slot of this step's).

    A mate is slow with ``s`` when its smoothed z and the mean of its latest
    ``_PLACE_NOW`` steps' are both at the bar: a fault that slows the node slows each of
    its steps, while an expert that left a mate's GPU leaves it at its pace at once and its
    smoothed z fading for ~10 steps.  An expert moving every ~10 steps (the smoothed
    window) put the last expert's GPU over the bar with the next one's -- beside a GPU
    slow for good, half the mates -- and the next expert's GPU was found beside the slow
    GPU, its node paged 30-40 s after it (tests/test_moe34.py).  Nor is a mate slow on its
    own from well before ``s``'s run (:meth:`_slow_before`: a GPU's fault paged alone)."""
    hw, ws = self._hw, self._wshort
    if hw[s] is None or ws[s] <= 0.0:
        return False
    at = np.flatnonzero(slots == s)
    if not len(at):
        return False
    node, gpu = hw[s]
    bar = _SHARED_SHARE * ws[s]
    alike = max(bar, ws[s] - _PLACE_MARGIN)
    mates = slow_mates = 0
    nodes: set[str] = set()
    elsewhere: set[str] = set()
    others: dict[str, list[int]] = {}  # another node -> its other ranks of the group, slow
    for p in slots[groups == groups[at[0]]].tolist():
        h = hw[p]
        if p == s or h is None:
            continue
        if h[0] == node:  # (a mate slow now, not one its last expert left: below)
            mates += 1
            slow_mates += (ws[p] >= bar and self._z_now(p) >= bar
                           and not self._slow_before(p, s))
        elif h[1] == gpu:
            nodes.add(h[0])
            if ws[p] >= alike:
                elsewhere.add(h[0])
        else:
            k = others.setdefault(h[0], [0, 0])
            k[0] += 1
            k[1] += ws[p] >= bar and self._z_now(p) >= bar
    # A node slow as a whole -- _WHOLE_NODE_RANKS or more other ranks of the group, every one
    # slow now with its place's -- is its node's slowness, no place's: a site's cap wave on
    # two nodes held a hidden fault's GPU index on a third as its place's for 80 steps
    # (revA39 F6, cap44).  An expert's GPUs, the last one's fading beside the next, leave
    # most of their node's other ranks at their pace (tests/test_moe35.py).
    elsewhere = {n for n in elsewhere if (k := others.get(n)) is None
                 or k[0] < _WHOLE_NODE_RANKS or k[1] < k[0]}
    return bool(mates and 2 * slow_mates < mates and len(elsewhere) >= max(
        _PLACE_NODES, math.ceil(_PLACE_SHARE * len(nodes))))


def _slow_before(self, mate: int, slot: int) -> bool:
    """Whether node mate ``mate`` was told slow (a finding of its own, still alarmed) on a run
    ``_OWN_RUN_STEPS`` or more steps longer than ``slot``'s: slow on its own well before
    ``slot``'s run began, so no evidence that their node slowed ``slot``.

    A host fault (a CPU throttle, a NUMA mis-binding) slows its ranks from the same step: their
    runs begin within a few steps of each other, however a ramp spreads their alarms.  A GPU
    slow for good was found alone, paged at its GPU; an MoE expert landing on its node 30-40
    steps later read the faulty GPU as a mate slow with it (:meth:`_place_slow`), and on 4-GPU
    nodes under TP 2 -- two ranks of a peer group a node -- that mate was half the node's, the
    expert's GPUs were not taken back as their place's and were found with the faulty one
    (``node_wide`` 3): the node was paged after the GPU, 11 of 12 probe runs (revA35 7)."""
    n = self._run_n
    return bool(self._reported[mate] and self._slow.alarmed[mate]
                and n[mate] >= n[slot] + _OWN_RUN_STEPS)


def _hold_same_place(self, out: list[Finding], mark: int, place: list[int]) -> None:
    """Take back the slow ranks found on this step whose place is slow on other nodes too
    (``place``: :meth:`_same_place`'s slots), whichever rule found them, and start their
    runs anew (the CUSUMs and the run's sums at zero), held by another rule already or
    not: the place's slowness is its workload's, not a run to carry past the expert's
    move.  Held alarmed (as :meth:`_hold_shared` holds), the run went on scoring the
    rank's noise after the expert moved, and was reported on a later noise step over
    slow_k, its run's mean the expert's (blind21 model-s3: mx04's GPUs 4-5, an expert's
    for 40 steps, reported 10 steps after it moved).  A fault on a held rank is found on
    its new run once its place is no more slow elsewhere."""
    kept = []
    gone: Counter[str | None] = Counter()
    for f in out[mark:]:
        s = self._slot.get(f.rank) if f.rank is not None else None
        if s not in place or not _holdable(f):
            kept.append(f)
        elif f.evidence.get("node_wide"):
            gone[f.scope.node] += 1
    out[mark:] = kept
    # (read before the runs below are reset: a node slow beside its place mates, revB34 F2)
    placed = set(place).__contains__
    beside = {f.rank: self._slow_beside(s, placed) for f in kept
              if gone[f.scope.node] and (s := self._slot.get(f.rank)) is not None}
    m = _ints(place)
    self._reported[m] = self._sustained[m] = self._recurring[m] = False
    self._reset_slow(m)
    self._run_sum[m] = self._run_own[m] = self._run_since[m] = 0.0
    self._run_n[m] = 0
    if gone:  # (moe34: mates taken back as their place's are not its node's ...)
        out[mark:] = [f if beside.get(f.rank) else  # (... unless its node is slow)
                      self._alike_without(f, gone[f.scope.node]) for f in kept]


def _slow_beside(self, slot: int, place: Callable[[int], bool]) -> bool:
    """Whether the job's other ranks on ``slot``'s node -- neither ``slot`` nor one
    ``place`` says True of (slow as its place on other nodes, :meth:`_place_slow`) -- are
    slow beside it: at least one and half of them each in a slow run averaging
    ``slow_min_effect`` or more, its CUSUM half way to the alarm (over its own noise) or
    its latest steps (up to ``_PLACE_NOW``) ``_BESIDE_Z`` noise units or more over its
    pace (:meth:`_z_now`: a run's first step).

    A host fault (a CPU throttle, a NUMA mis-binding) slows every rank its host feeds, an
    MoE expert's GPUs on it too: those read host + expert, their node mates the host's
    share, so a share of the expert's GPUs' slowness leaves the mates under any bar their
    place's tests put (:meth:`_place_slow`), and the expert's GPUs read as their place's.
    With the node's other ranks slow beside them they are evidence of the node as much as
    of the workload, and are not discounted from it (revB34 F2: the expert's two GPUs taken
    back as their place's, the rank found first with them told alone -- a healthy GPU paged
    3 s before its node).  Not relative to ``slot``'s own run: an expert's GPU found with
    its host's slowness reads both.  A host fault slows the mates on the same steps, so
    from its first step: an expert's GPU found on it was paged alone before its mates'
    runs were two steps long.  An expert beside one slow GPU leaves the node's other ranks
    at their pace: one of them past ``_BESIDE_Z`` on a step is a few in a thousand, in a
    run half way to the alarm past the effect floor a few in a hundred, three of five at
    once <= 1e-4 -- discounted, the GPU is paged (tests/test_moe34.py)."""
    hw = self._hw
    node = hw[slot][0] if hw[slot] is not None else None
    if node is None:
        return False
    at = [m for m, h in enumerate(hw[:len(self._rank_of)])
          if h is not None and h[0] == node and m != slot and not place(m)]
    if not at:
        return False
    n = self._run_n[at]
    mean = self._run_sum[at] / np.maximum(n, 1)
    bank = self._slow
    slow = (n >= 1) & (mean >= math.log1p(self.cfg.slow_min_effect))
    k = sum(bool(ok) and (score >= 0.5 * bank.h or self._z_now(m, int(n_m)) >= _BESIDE_Z)
            for m, ok, n_m, score in zip(at, slow, n, bank.score[at], strict=True))
    return 2 * k >= len(at) and k > 0


def _z_now(self, slot: int, run: int = _PLACE_NOW) -> float:
    """The mean of ``slot``'s latest steps' deviations in noise units (the CUSUM's), at
    most ``_PLACE_NOW`` of them and at most ``run`` (its run's: steps before it are at its
    pace)."""
    col = self._evaluated % _RECENT
    k = max(1, min(run, _PLACE_NOW))
    return float(self._recent[slot, [(col - j) % _RECENT for j in range(k)]].mean())


def _alike_without(self, f: Finding, gone: int) -> Finding:
    """``f`` found with ``gone`` fewer node mates slow alike (``node_wide``): they were
    taken back as their place's (:meth:`_hold_same_place`), the workload's, not the node's.
    Under two it is alone: told ``node_alarmed`` as one found alone is (moe34: a GPU slow
    for good found with a moving MoE expert's two GPUs of its node, node_wide 3, was paged
    at the node by the correlator's node rule, Correlator._slow_due)."""
    wide = f.evidence.get("node_wide")
    s = self._slot.get(f.rank) if f.rank is not None else None
    if not gone or not wide or s is None:
        return f
    ev = {k: v for k, v in f.evidence.items() if k != "node_wide"}
    if wide - gone >= 2:
        ev["node_wide"] = wide - gone
    elif (k := self._node_alarmed(s)) >= _NODE_ALARMED:
        ev["node_alarmed"] = k
    return f._replace(evidence=ev)
