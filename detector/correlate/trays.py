"""A TP group spanning nodes: its slow ranks are one GPU's consequence, decided together.

A GB200 NVL72 compute tray holds 4 GPUs, so a TP 8 group spans two trays (two host names)
over NVLink.  One GPU of it slowed -- a power ramp limited, a cold plate losing flow, a
tray's supply braking -- slows all 8 ranks alike from the same step: the other tray's ranks
wait inside the same all-reduce and show nothing of their own.  The unit is the GPU whose
DCGM rows say why (its node), not the replica, and not the other tray (blind33 F1: a limited
ramp's group escalated at its replica, the tray never paged, 14 of 17 false positives; F2:
the other tray of a hot GPU's group escalated as a node beside the GPU's thermal page).

Partners are slow ranks of the same TP group -- job, replica and pipeline stage (the step
records' ``dp_rank`` and ``pp_rank``, carried by a rank's finding) -- on another node, found
within a few steps with the same deviation (TP partners' ``compute_ms`` are one: _near_step).
A pipeline's other stages are not: every stage waits for the slowest, so a stage's slow GPU
paces its replica's other stages alike, and tray43's partners by replica and pace took them
for its group -- its decision waited for every stage's GPUs' rows (blind15 stage-gpu-clock:
paged 22.5-31.4 s after onset, 11.1-11.8 s before; stage44).  A whole replica slow for no reason any
of its GPUs shows stays the replica's (peer42's REPLICA_ONSET_S, review13 S3): this only
waits for, and joins, a cause shown on a node of the group.
"""

from __future__ import annotations

import math
from itertools import islice

from detector.alerts import ISOLATION, Alert, Scope
from detector.correlate.common import (
    _CAPPING,
    _HELD_CLOCK,
    _THROTTLES,
    Problem,
    _alike,
    _found_alike,
    _reason_bits,
)
from detector.findings import Finding
from detector.thermal import power_deficit

# Ranks read for a slow rank's partners (a bound per decision: the correlator's slow ranks
# of the job's replica, a TP x PP group's worth in practice).
_PARTNERS_MAX = 512
# Steps apart two trays' ranks of one TP group may be found (_near_step), or two stages'
# ranks of one replica (_near_stage) ...
PARTNER_STEPS = 3
# ... and how far apart the two stages' deviations from their peers may be, a share of the
# larger (log ratios): a stage paced by another is slow by about as much, not exactly ...
PIPE_ALIKE = 0.5
# ... and how many steps apart their slow runs may have begun (_paced): a stage paced by
# another's GPU is slow from the same step.
PIPE_ONSET_STEPS = 1
# Samples of a throttling GPU of the group its decision waits for, past its own wait
# (_throttle_look): a reason's first rows may not yet name it a cause.
GROUP_LOOKS = 2.5
# The one GPU of a group showing why (_lone_reason): its free mates in the group at least,
# and for a SW power cap alone its clock loss and its draw under its free mates at least.
LONE_FREE = 3
LONE_DROP = 0.02
LONE_DEFICIT = 0.02
# What a GPU shows that may yet be named its group's cause: a clock-event reason, or a die
# standing out hot against its node before any reason bit (detector.thermal's hot_seen: a
# cold plate losing flow, EDPp taking boost first -- blind33's flow faults, the replica
# escalated 4-10 s before the GPU's thermal page on tune smooth-s1..s3).
_HEAT = ("hot_seen", "hot")
_SHOWS = tuple(dict.fromkeys(_CAPPING + _THROTTLES)) + _HEAT


def _shows(s: Finding) -> bool:
    """Whether a GPU's signal ``s`` (one of _SHOWS) shows what may yet be named its group's
    cause: active, with a clock-event reason or heat -- not a ``hot`` told harmless
    (detector.thermal's _hot_harm: at its full clock, no reason, under the limit).  A GPU at
    full clock cannot be why its TP group is slow: revA44 F2, a TP8 group slowed 9 % with
    nothing shown, a GPU of the other tray warm at 76 C -- that tray was isolated thermal
    and the group's replica never paged (4 of 4 seeds)."""
    if not s.active:
        return False
    if s.signal in _HEAT:
        return s.signal != "hot" or s.verdict
    return bool(_reason_bits(s))


def _near_step(f: Finding, g: Finding) -> bool:
    """Whether slow ranks ``f`` and ``g`` were found within PARTNER_STEPS steps of each other
    deviating alike (``_alike``): a TP group's ranks, locked in one all-reduce, are found on
    one step (``_in_step``); a rank's own jitter on top of the group's pace can put the CUSUM
    of one tray's ranks a step behind the other's."""
    a, b = f.evidence.get("step"), g.evidence.get("step")
    return (type(a) is int and type(b) is int and abs(a - b) <= PARTNER_STEPS
            and _alike(f, g))


def _near_stage(f: Finding, g: Finding) -> bool:
    """Whether slow ranks ``f`` and ``g`` of one replica's different stages were found within
    PARTNER_STEPS steps of each other, each deviating from its peers within PIPE_ALIKE of the
    larger deviation: a stage paced by another's slow GPU waits for it, but its own compute
    and noise are its stage's -- not locked as a TP group's are (_alike: stage44's probe,
    the paced stage 1.090x, the held one 1.063x on the step each was found)."""
    a, b = f.evidence.get("step"), g.evidence.get("step")
    if not (type(a) is int and type(b) is int and abs(a - b) <= PARTNER_STEPS):
        return False
    x = math.log(max(float(f.evidence.get("compute_ratio_to_peers") or 1.0), 1e-9))
    y = math.log(max(float(g.evidence.get("compute_ratio_to_peers") or 1.0), 1e-9))
    return x > 0.0 and y > 0.0 and abs(x - y) <= PIPE_ALIKE * max(x, y)


def _paced(f: Finding, g: Finding) -> bool:
    """Whether slow ranks ``f`` and ``g`` of one replica's different stages began their slow
    runs within PIPE_ONSET_STEPS steps of each other (each finding's ``step`` less its
    ``run_steps``; True when either is not told): every stage waits for the slowest from the
    step it slowed on, so a stage paced by another's GPU is slow from that step.  A stage
    slowed on its own a few steps later is its own fault (revA44 F9: replica 1's stage 1
    slowed by a hot GPU, its stage 0 slowed 3 steps later with nothing shown -- taken for
    stage 1's pipeline mates, it joined the thermal page and was never paged)."""
    a, b = f.evidence.get("step"), g.evidence.get("step")
    x, y = f.evidence.get("run_steps"), g.evidence.get("run_steps")
    if not all(type(v) is int for v in (a, b, x, y)):
        return True
    return abs((a - x) - (b - y)) <= PIPE_ONSET_STEPS  # type: ignore[operator]


def _same_group(f: Finding, g: Finding) -> bool:
    """Whether slow ranks ``f`` and ``g`` may be of one TP group: the same job, replica and
    pipeline stage (a finding with no stage told -- one from before stage44 -- is taken to be
    of any)."""
    return (g.job == f.job and g.dp_rank == f.dp_rank
            and (f.pp_rank is None or g.pp_rank is None or g.pp_rank == f.pp_rank))


def _tp_partners(self, f: Finding) -> tuple[list[Finding], list[Finding]]:
    """The slow ranks of ``f``'s TP group (_same_group) on other nodes found near its step
    deviating alike (_near_step): its group's ranks across a node boundary; and its pipeline
    mates: those of its replica's other stages found near its step slow about as much
    (_near_stage).  Both empty for a
    rank with no replica told, or none such."""
    node = f.scope.node
    if f.job is None or f.dp_rank is None or node is None or f.scope.level != "gpu":
        return [], []
    out: list[Finding] = []
    pipe: list[Finding] = []
    for signals in self._device.values():
        g = signals.get("slow_rank")
        if (g is not None and g.active and g.job == f.job and g.dp_rank == f.dp_rank
                and g is not f):
            if not _same_group(f, g):
                if _near_stage(f, g) and _paced(f, g):
                    pipe.append(g)
            elif g.scope.node != node and (
                    _near_stage(f, g) if f.pp_rank is not None and g.pp_rank is not None
                    else _near_step(f, g)):
                # (its stage told: a rank of its TP group for certain, found in the same
                # episode -- its own jitter over the group's pace is no test of that)
                out.append(g)
            if len(out) + len(pipe) >= _PARTNERS_MAX:
                break
    return out, pipe


def _group_spans(self, f: Finding, now: float) -> bool:
    """Whether slow rank ``f``'s TP group spans nodes (its partners found: _tp_partners), or
    may yet be found to while its wait for a cause lasts (_explanation_wait): found alike with
    its node's others (``node_wide``) while its replica has ranks on another node.

    A GPU hot against its node at its full clock with no reason (detector.thermal's harmless
    ``hot``) is taken for its slow rank's cause on impact (blind32's hot-h-09: 30 C over its
    node, its replica's 8 ranks on that node slow alike).  Of a group spanning two trays it
    names neither the group's GPU nor its node: revA44 F2, a TP8 group slowed 9 % with
    nothing shown, a GPU of the other tray warm at 76 C -- that tray isolated thermal at
    once, its partners joining, the group's replica never paged.  The other tray's ranks may
    be found after this one's (a step's records in rank order): until its wait is over, a
    rank found with its node's mates on a replica spanning nodes is not decided on heat."""
    if self._tp_partners(f)[0]:
        return True
    node = f.scope.node
    if (not _found_alike(f) or f.job is None or f.dp_rank is None or node is None
            or now >= f.ts + self._explanation_wait(f)):
        return False
    ranks = self._placement.ranks.get(f.job, {})
    return any(n != node and dp == f.dp_rank
               for n, _, dp in islice(ranks.values(), _PARTNERS_MAX))


def _group_cause(self, f: Finding, partners: list[Finding]) -> Problem | None:
    """The firing isolation for a held clock (power, heat, the GPU's own slowdown) or the
    GPU's hardware that stands on a GPU of ``f``'s TP group spanning nodes: one that took a
    partner's slow rank, or one standing on a signal of a GPU of the job on a node of the
    group (``f``'s own node too when its ranks there were found alike).  None if none.

    The signal, not a key: the owner map ties a finding to its problem whatever key it was
    raised under (DCGM rows without ``cluster``, step records with it: blind33 F6)."""
    for g in partners:
        p = _isolation_of(self, g)
        if p is not None:
            return p
    nodes = sorted({g.scope.node for g in partners if g.scope.node is not None})
    if _found_alike(f) and f.scope.node is not None:
        nodes.append(f.scope.node)
    for node in nodes:
        for unit in sorted(self._job_units(node, f.job)) + [Scope.of_node(node).key]:
            for signal, g in self._device.get(unit, {}).items():
                if signal != "slow_rank" and (g.verdict or signal in _THROTTLES):
                    p = _isolation_of(self, g)
                    if p is not None:
                        return p
    return None


def _pipe_cause(self, pipe: list[Finding]) -> Problem | None:
    """The firing isolation for a held clock or hardware that took a slow rank of ``pipe``
    (a slow rank's pipeline mates: _tp_partners): every stage waits for the slowest, so a
    stage's GPU held slow paces its replica's other stages alike -- theirs is its cause.
    None if none."""
    for g in pipe:
        p = _isolation_of(self, g)
        if p is not None:
            return p
    return None


def _isolation_of(self, g: Finding) -> Problem | None:
    """The firing isolation that owns finding ``g``, when it is a held clock's or hardware's."""
    key = self._owner.get(g.key)
    p = self.problems.get(key) if key else None
    if p is None or p.status != "firing" or p.topic != ISOLATION:
        return None
    if p.kind == "hardware" or (p.kind == "slow_node" and p.cause in _HELD_CLOCK):
        return p
    return None


def _group_pending(self, f: Finding, partners: list[Finding], due: float,
                   pipe: list[Finding]) -> float | None:
    """When the last slow rank of ``f``'s TP group spanning nodes (``partners`` and ``f``'s
    node mates found near its step alike) still waiting for a cause is due (_group_wait), or
    the last of its pipeline mates (``pipe``) still waiting is due on its own wait
    (_explanation_wait), if after ``due``; else when a GPU of the group or of the pipeline
    mates' nodes showing a reason or heat has its next row in (_throttle_look); None when
    none of these.

    Each rank waits for its own node's next sample (_explanation_wait); the tray whose GPU
    shows the cause is polled on its own phase, up to an interval after its partner's.  The
    first rank due decided for the whole group took the cause's rank with it into a replica
    escalation a fraction of a second before that GPU's row (blind33 F1, smooth-s2: the
    replica at 116.1 s, the limited GPU's 0x4 below its mates' power at 116.4 s).  A stage
    paced by another's GPU is decided no sooner than that stage's ranks' own waits, and
    only theirs: tray43's whole wait for a group's every row, taken for a pipeline's stages
    (partners by replica and pace), held blind15's stage-gpu-clock 22.5-31.4 s; with none,
    the paced stage's ranks, due first, took the held stage's ranks into a replica
    escalation before its GPU's row (stage44's probe: TP 8 x PP 2, a power ramp, the replica
    escalated 5.5 s after onset, the GPU's power page 28 s)."""
    group = list(partners)
    node = f.scope.node
    if partners:
        for unit in sorted(self._units_of_node.get(node or "", ())):
            g = self._slow_wait.get(unit)
            if g is not None and g is not f and _same_group(f, g) and _near_step(f, g):
                group.append(g)
    last = None
    for mates, wait in ((group, _group_wait), (pipe, type(self)._explanation_wait)):
        for g in mates:
            if self._slow_wait.get(g.scope.key) is not g:
                continue
            end = g.ts + wait(self, g)
            if end > due and (last is None or end > last):
                last = end
    if last is None and not (partners and _lone_reason(self, f, partners + pipe) is not None):
        # (the one GPU showing why already shows enough: no later row is needed to name it)
        last = _throttle_look(self, f, group + pipe, due, bool(partners))
    return last


def _group_wait(self, g: Finding) -> float:
    """How long a slow rank of a TP group spanning nodes waits for a cause: its own wait
    (_explanation_wait), or, where its node's cadence is known, a whole interval and a
    quarter plus a second (and its rows' lateness) -- every GPU of the group has sent a row
    taken after the slowdown by then.  A rank's own wait ends at its node's next sample, but
    a collector may poll a tray's GPUs on phases of their own (blind33's rows: one GPU of a
    tray 3 s after another), and the GPU that slows the group is the one that counts."""
    own = self._explanation_wait(g)
    interval = self._interval.get(g.scope.node or "", (0.0, 0.0))[0]
    if interval <= 0.0:
        return own
    late = self._late_rows.get(g.scope.node or "", 0.0)
    return max(own, self.cfg.escalate_after_s, 1.25 * interval + 1.0 + late)


def _throttle_look(self, f: Finding, group: list[Finding], due: float,
                   tp: bool = True) -> float | None:
    """When the next sample of a GPU of the group that shows a clock-event reason or heat its
    group's other GPUs do not is in, while the group's decision may wait for it (GROUP_LOOKS
    of that node's intervals past ``f``'s group wait); None otherwise.  ``tp`` False: the
    group is ``f``'s pipeline mates (no TP group of it spans nodes) -- a reason only, and
    past ``f``'s own wait: a held stage's TP mates run hotter than their node's others, and
    the look at them held blind15's stage-gpu-clock for GROUP_LOOKS intervals (stage44).

    A GPU that slows its group shows its reason before any rule can name it a cause: a power
    ramp limited reads 0x4 at ~1,000 W under a 1,200 W limit, its draw against its tray
    mates' noisy from one 10 s row to the next (blind33 F1, smooth-s2: 0 %, 5.0 %, then 8.8 %
    below them -- power._own_limit's 5 % on the third row).  Its rank is looked at again on
    each sample (it is held with the group); all GPUs of the group throttling alike (a demand
    response, a site's cap) localize nothing and hold nothing."""
    nodes = sorted({g.scope.node for g in group if g.scope.node is not None}
                   | {f.scope.node} - {None})  # type: ignore[operator]
    throttling, free = [], 0
    for node in nodes:
        for unit in sorted(self._job_units(node, f.job)):
            signals = self._device.get(unit, {})
            if any(_shows(s) and (tp or name not in _HEAT) for name in _SHOWS
                   if (s := signals.get(name)) is not None):
                throttling.append(node)
            else:
                free += 1
    if not throttling or not free:
        return None
    first = f.ts + (_group_wait(self, f) if tp else self._explanation_wait(f))
    looks = []
    for node in sorted(set(throttling)):
        nxt = self._sample_due(node, due)
        if nxt is not None and nxt > due and nxt <= first + GROUP_LOOKS * self._cadence(node):
            looks.append(nxt)
    return min(looks) if looks else None


def _lone_reason(self, f: Finding, partners: list[Finding]) -> Finding | None:
    """The one GPU of ``f``'s TP group spanning nodes (the job's GPUs on the nodes of ``f``
    and its ``partners``) showing a clock-event reason or heat its LONE_FREE or more mates of
    the group do not -- its signal, when it names a held clock's cause (power, heat, the
    GPU's own slowdown) and, for a SW power cap alone (0x4, which a board at its limit shows
    routinely), a clock LONE_DROP or more below its baseline and, where its draw beside its
    free mates' was told (detector.thermal's _below_mates), LONE_DEFICIT or more below
    theirs.  None otherwise.

    The group's ranks are slow alike, and the steps cannot say which of its 8 GPUs sets the
    pace; the one GPU whose DCGM rows show a reason the others do not is the candidate,
    located by elimination -- as a replica's one GPU under its peers' clock is
    (slow._lone_clock).  blind33 F1: a power ramp limited, 0x4 at 2.9-5.4 % of clock and
    0-9 % under its tray mates' draw from one 10 s row to the next, short of
    power._own_limit's 5 % on the rows the group's decision had (our seeds 430201..430206:
    smooth-s430203's limited GPU at 3.7 % when its group was escalated at the replica)."""
    nodes = sorted({g.scope.node for g in partners if g.scope.node is not None}
                   | {f.scope.node} - {None})  # type: ignore[operator]
    shown: list[Finding] = []
    free = 0
    for node in nodes:
        for unit in sorted(self._job_units(node, f.job)):
            signals = self._device.get(unit, {})
            mine = [s for name in _SHOWS if (s := signals.get(name)) is not None
                    and _shows(s)]
            if mine:
                shown.append(max(mine, key=lambda s: s.ts))  # (its latest row's)
            else:
                free += 1
    if len(shown) != 1 or free < min(LONE_FREE, _group_ranks(self, f, partners) - 1):
        return None  # (a pair's one other GPU free is all the elimination it has: revA44 F3)
    s = shown[0]
    if s.cause not in _HELD_CLOCK:
        return None
    if s.signal not in _HEAT and _reason_bits(s) == 0x4:
        drop = s.evidence.get("clock_drop")
        if not (type(drop) in (float, int) and drop >= LONE_DROP) or (
                "mates_power_w" in s.evidence
                and power_deficit(s.evidence) < LONE_DEFICIT):
            return None  # (a clock barely down, or drawing as its free mates do: a limit
            #              they share, the board's -- DESIGN's routine 0x4)
    return s


def _group_ranks(self, f: Finding, partners: list[Finding]) -> int:
    """The slow ranks of ``f``'s group: itself, its ``partners`` and its node mates still
    waiting found near its step alike."""
    return 1 + len(partners) + sum(
        1 for unit in self._units_of_node.get(f.scope.node or "", ())
        if (g := self._slow_wait.get(unit)) is not None and g is not f and _same_group(f, g)
        and _near_step(f, g))


def _page_lone_reason(self, f: Finding, partners: list[Finding], due: float,
                      out: list[Alert]) -> bool:
    """Recommend isolating the one GPU of ``f``'s TP group that shows why (_lone_reason),
    ``f`` its evidence (its partners join on their own decision: _group_cause).  True when
    paged."""
    s = _lone_reason(self, f, partners)
    if s is None:
        return False
    ranks = _group_ranks(self, f, partners)
    nodes = sorted({g.scope.node for g in partners if g.scope.node} | {f.scope.node or ""})
    reasons = s.evidence.get("throttle_reasons")
    what = (f"throttle reason {reasons}, clock {float(s.evidence.get('clock_drop') or 0):.1%} "
            "below its baseline" + (
                f", drawing {power_deficit(s.evidence):.1%} below its mates"
                if power_deficit(s.evidence) else "")
            if reasons else f"{s.evidence.get('gpu_temp_c')} C, hot against its node")
    because = (f"impact: {ranks} ranks of {f.job}'s TP group across {', '.join(nodes)} slow "
               f"alike ({f.evidence.get('compute_ratio_to_peers')}x their peers), and "
               f"{s.scope.key} is its one GPU showing why ({what}); the group's other GPUs "
               "free of any reason: the group runs at its pace")
    p = self._raise(ISOLATION, "slow_node", s.cause, s.scope, s, out,
                    detected_ts=max(due, s.ts), extra={"recommended_because": because})
    del self._slow_wait[f.scope.key]
    if self._owner.get(f.key) != p.key:
        p.add(f, self.cfg.evidence_items)
        self._own(f, p)
    return True
