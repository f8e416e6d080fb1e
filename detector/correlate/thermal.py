"""Throttles and heat: a never-routine brake under a slow rank, a GPU's thermal
verdict held for its node's mates, a rack's cooling, bursts of slow steps.
"""

from __future__ import annotations

import math
from itertools import islice
from typing import Any

from detector.alerts import ESCALATION, ISOLATION, Alert, Scope
from detector.correlate.common import _THROTTLES, Problem, _found_alike, _reason_bits
from detector.findings import Finding
from detector.statecodec import is_time
from detector.throttle import APP_CLOCKS


def _node_wide_reason(seen: Finding) -> bool:
    """A throttle a node's power supply or board asserts on all its GPUs (detector.thermal):
    HW power brake 0x80, or HW slowdown 0x8 on a GPU that is not hot -- told ``power``, or
    ``gpu_hardware`` while none of its siblings brakes with it (GpuThermal._own_cause: the
    first GPU of a node's brake is told before its siblings' samples of the poll)."""
    return seen.cause in ("power", "gpu_hardware") and bool(_reason_bits(seen) & 0x88)


def _app_alone(seen: Finding) -> bool:
    """A GPU's application clocks told as holding it (detector.thermal's _app_held: 0x2, most
    of its node's GPUs free of them) -- its node's other GPUs' samples of the poll may yet
    show the same setting on them (the node's, revA44 F4): a slow rank on it waits for them
    as one on a GPU's brake does (:meth:`_brake_until`)."""
    return seen.scope.level == "gpu" and bool(_reason_bits(seen) & APP_CLOCKS)


def _app_clocks_shared(self, slow: Finding) -> bool:
    """Whether another node of the slow rank's job (its layout, ``job_layout``) has two GPUs
    or more held by application clocks too (``throttle_seen`` at node scope, 0x2): a setting
    the job's nodes share is its power profile, a policy -- no explanation of one node's
    slowness (revA44's guards: 0x2 on a whole job, half a fleet, half of each node)."""
    ranks = self._placement.ranks.get(slow.job or "", {})
    for other in sorted({where[0] for where in ranks.values()} - {slow.scope.node}):
        seen = self._device.get(Scope.of_node(other).key, {}).get("throttle_seen")
        if seen is not None and _reason_bits(seen) & APP_CLOCKS:
            return True
    return False


def _harmless_heat(hot: Finding) -> bool:
    """A GPU's ``hot`` evidence of its own heat (detector.thermal: not a recommendation yet),
    not that of a hotter sibling's fault warming it (``hotter_gpu``)."""
    return "hotter_gpu" not in hot.evidence


def _above(hot: Finding) -> str:
    """How far a ``hot`` finding's GPU stands above its node's median, in whole degrees."""
    t, m = hot.evidence.get("gpu_temp_c"), hot.evidence.get("node_median_c")
    return f"{t - m:.0f}" if isinstance(t, float | int) and isinstance(m, float | int) else "?"


def _node_throttle(self, f: Finding) -> Finding | None:
    """The node-wide throttle seen (GPUs of the node braking, or heating, with ``f``'s) on
    ``f``'s node."""
    if f.scope.node is None:
        return None
    seen = self._device.get(Scope.of_node(f.scope.node).key, {}).get("throttle_seen")
    return seen if seen is not None and self._covers(f, seen) else None


def _throttling_at(self, node: str, f: Finding) -> bool:
    """Whether node ``node``'s throttling was still on when slow rank ``f``'s run began:
    a throttle signal of the node is on now, or the last one let go after the onset
    (none let go: nothing says it ended).  A rank whose slow run began after the node's
    cap or heat let go is its own fault, however alike its slowdown
    (tests/test_cooling_round11.py, the rank found at 460 s from 340 s)."""
    key = Scope.of_node(node).key
    if any(s in _THROTTLES for s in self._device.get(key, {})):
        return True
    return f.onset_ts <= self._throttled.get(key, (None, math.inf))[1]


def _covers(self, f: Finding, node: Finding) -> bool:
    """Whether a node-scope throttle ``node`` speaks for ``f``'s GPU: a node's brake or heat
    only on the GPUs braking or throttling thermally with it (those it names, or one whose
    own throttle of the same kind is seen) -- a slow rank on a cool GPU beside two hot ones
    is its own (review round 11), and so is one running free beside GPUs braking (the brake
    is the node's from two GPUs on: detector.node_temps.BRAKE_MIN_GPUS)."""
    if node.scope.level != "node" or f.scope.gpu is None:
        return True
    if f.scope.gpu in node.evidence.get("gpus", ()):
        return True
    own = self._device.get(f.scope.key, {})
    if node.cause == "thermal":
        return any(g.cause == "thermal" for s, g in own.items()
                   if s in ("throttle", "throttle_seen"))
    return any(_node_wide_reason(g) for s, g in own.items()
               if s in ("throttle", "throttle_seen"))


def _cooling(self, f: Finding) -> dict[str, Any]:
    """For a node's thermal fault (several GPUs of it throttling thermally at once,
    detector.thermal): its rack, and the other nodes whose GPUs throttle so now -- of its
    rack when the topology names racks -- so the operator calls facilities once for the
    room's or rack's cooling rather than replacing GPUs node by node.  {} otherwise."""
    node = f.scope.node
    if f.scope.level != "node" or f.cause != "thermal" or node is None:
        return {}
    group = self._cooling_nodes.get(self._cooling_key(f), {})
    rack = self._rack(node)
    # (At most 16 named, counted in O(1): a hall's cooling failing on N nodes must not
    # cost each node's alert a pass over the others -- review round 11, R9.)
    heating = sorted(islice((n for n in group if n != node), 16))
    count = len(group) - (node in group)
    where = f"rack {rack}" if rack else "the room"
    return {"rack": rack, "other_nodes_throttling": heating, "call_facilities": (
        f"{count + 1} nodes of {where} throttle thermally at once ({node}"
        f"{', ' + ', '.join(heating[:8]) if heating else ''}"
        f"{' ...' if count > 8 else ''}): check the cooling of {where} (inlet air, CDU, "
        "fans) before replacing anything"
        if count else f"check {node}'s cooling (inlet air, fans) and {where}'s")}


def _rack(self, node: str) -> str | None:
    return self.topology.rack_of(node) if self.topology is not None else None


def _cooling_key(self, f: Finding) -> tuple[str, str, str]:
    """Nodes named together: one cluster, one tenant (evidence never mixes tenants), one
    rack when the topology names racks."""
    return (f.cluster or "", f.tenant or "", self._rack(f.scope.node or "") or "")


def _note_cooling(self, f: Finding) -> None:
    """Keep the index of nodes with a thermal throttle at node scope (by rack) current."""
    node = f.scope.node
    if node is None:
        return
    hot = any(g.cause == "thermal" and g.signal in ("throttle", "throttle_seen")
              for g in self._device.get(f.scope.key, {}).values())
    key = self._cooling_key(f)
    if hot:
        self._cooling_nodes.setdefault(key, {})[node] = None
    elif node in self._cooling_nodes.get(key, {}):
        del self._cooling_nodes[key][node]
        if not self._cooling_nodes[key]:
            del self._cooling_nodes[key]


def _hold_heat(self, f: Finding, out: list[Alert]) -> bool:
    """Hold a GPU's thermal throttle verdict while its node's mates may be throttling
    thermally with it: True when held, or joined to its node's thermal page.

    The thermal monitor decides a GPU on its own sample, before its mates' samples of the
    same poll; a node's cooling failing (a fan wall, its inlet air) heats the GPU nearest
    it first, and the node's verdict needs a GPU's next sample once its mates throttle
    too (detector.thermal).  So the verdict waits ``why_wait_s`` (the same poll's samples,
    the allowed disorder) and, if by then a thermal reason shows on its mates at once
    (the node's ``throttle_seen``), until the node's verdict can have come: one page for
    the node's cooling, the GPU's verdict its evidence -- not a GPU page 0.8 s before the
    node's (blind7 G6: a failed fan wall held all 8 GPUs of hgx-02 at 87 C with 0x20, GPU
    3 paged first) -- or, its mates not shown level at their load, as long as its slow
    rank would be (:meth:`_heat_until`; revB34 F1: a node whose cooling fails slowly, its
    mates four samples behind at 10 s).  A node's thermal page firing takes it at once.
    Held only when the thermal monitor says its mates are warm with it (``node_warm``: it
    is not ``hot_delta_c`` over their median, and they are not shown level at their
    load): a GPU hot against its node's others (its own heat sink or fan), one beside
    mates level at their load, or one whose mates report no temperature, is its own and
    pages at once."""
    node = f.scope.node
    if f.signal != "throttle" or f.cause != "thermal" or f.scope.level != "gpu" or (
            node is None):
        return False
    p = self._node_heat_page(f)
    if p is not None:
        p.add(f, self.cfg.evidence_items)
        self._own(f, p)
        return True
    if f.evidence.get("node_warm") is not True:
        return False
    self._heat_wait[f.scope.key] = f
    self._timer(f.ts + self.cfg.why_wait_s, "heat", f.scope.key)
    return True


def _heat_due(self, unit: str, due: float, out: list[Alert]) -> None:
    """A GPU's thermal verdict held by :meth:`_hold_heat`: join its node's thermal page,
    wait on while its mates throttle thermally with it, or page the GPU."""
    f = self._heat_wait.pop(unit, None)
    if f is None or self._device.get(unit, {}).get("throttle") != f:
        return  # (cleared, or the GPU reset, meanwhile)
    p = self._node_heat_page(f)
    if p is not None:
        p.add(f, self.cfg.evidence_items)
        self._own(f, p)
        return
    seen = self._node_throttle(f)
    if seen is not None and seen.cause == "thermal" and len(seen.evidence.get("gpus", ())) > 1:
        interval = self._interval.get(f.scope.node or "", (0.0, 0.0))[0] or (
            self.cfg.unknown_cadence_s)
        until = f.ts + 1.25 * interval + 1.0  # (the node's verdict: on the GPU's next sample)
        if due < until:
            self._heat_wait[unit] = f
            self._timer(until, "heat", unit)
            return
    own = self._device.get(unit, {}).get("throttle_seen")
    until = self._heat_until(f, own) if own is not None else None
    if until is not None and due < until:
        # Its mates still not shown level at their load (detector.thermal's
        # ``node_warm``): waits for them as its slow rank does (_heat_held) -- a node
        # whose cooling fails slowly has its mates a few samples behind (revB34 F1: at
        # 10 s, four samples behind, the GPU's verdict paged it, then the node).  Told
        # level meanwhile, it is paged then (_on_finding: the GPU's throttle_seen anew).
        self._heat_wait[unit] = f
        self._timer(until, "heat", unit)
        return
    self._raise_verdict(f, out, detected_ts=due)


def _node_heat_page(self, f: Finding) -> Problem | None:
    """The thermal isolation firing on ``f``'s node, if any."""
    p = self.problems.get(self.dedup_key(ISOLATION, "slow_node", Scope.of_node(
        f.scope.node or ""), f.cluster))
    return p if p is not None and p.status == "firing" and p.cause == "thermal" else None


def _throttle_impact(self, slow: Finding, now: float, out: list[Alert]) -> bool:
    """A never-routine throttle seen on the slow rank's GPU explains it: recommend.

    When it is on two GPUs or more of the node at once (a power brake the node's supply or
    board asserts: detector.thermal), the node is the unit: one node isolation takes every slow
    rank on it.  A rank slow alike with its node's others joins the throttle isolation
    firing on its node (:meth:`_mates_cause`).
    """
    mates = self._mates_cause(slow)
    if mates is not None:
        mates.add(slow, self.cfg.evidence_items)
        self._own(slow, mates)
        self._slow_wait.pop(slow.scope.key, None)
        return True
    seen = self._device.get(slow.scope.key, {}).get("throttle_seen")
    node = self._node_throttle(slow)
    if node is not None and _reason_bits(node) & APP_CLOCKS and _app_clocks_shared(self, slow):
        node = None  # (the job's power profile: its GPU's own told setting, if any, decides)
    if node is None and seen is not None and (_node_wide_reason(seen) or _app_alone(seen)):
        until = self._brake_until(seen)
        if until is not None and now < until:
            self._slow_wait[slow.scope.key] = slow
            self._timer(until, "slow", slow.scope.key)
            return True
    if node is not None:
        self._impact(slow, node, now, out)
        return True
    if seen is None:
        hot = self._device.get(slow.scope.key, {}).get("hot")
        if (hot is None or hot.verdict or not _harmless_heat(hot)
                or self._group_spans(slow, now)):
            # (nor a rank of a TP group that spans nodes, or may: heat at full clock names
            # no GPU of a group slow alike on another node -- correlate.trays, revA44 F2)
            return self._mate_heat_held(slow, now) or _mate_app_clocks(self, slow, now, out)
        self._impact(slow, hot, now, out)  # its heat hurts the job now: issue 10's impact
        return True
    if seen.evidence.get("throttle_reasons") == hex(0x4):
        return self._power_impact(slow, now, out, seen)  # routine unless it explains
    if self._heat_held(slow, seen, now):
        return True
    self._impact(slow, seen, now, out)
    return True


def _brake_until(self, seen: Finding) -> float | None:
    """Until when a slow rank on a GPU braking alone (``seen``: a reason a node's supply or
    board asserts, detector.thermal -- 0x80, or 0x8 on a GPU that is not hot) waits for its
    siblings: None once they are in with none braking beside it.

    A brake on two or more GPUs of a node at once is the node's (BRAKE_MIN_GPUS,
    detector.node_temps).  Its siblings' samples of the same poll may still be on their way
    (the allowed disorder): the rank waits for them -- their samples all in (``poll_in``,
    detector.thermal), or ``why_wait_s`` after ``seen``.  HW slowdown (0x8) on one cool GPU
    alone, told ``gpu_hardware`` (its own regulator or board: GpuThermal._own_cause), waits
    for the node's next poll too: a board or supply failing shows 0x8 on one GPU after
    another, a poll apart, and the two readings' remedies differ (reset the GPU, or drain the
    node for its power) -- revA37 F3: 0x8 spreading one GPU a poll paged GPU 0 gpu_hardware,
    then power, GPUs 1-4, then the node, 7 pages for one fault.  Still alone then, it is the
    GPU's own, paged a poll later than at its first sample (its own verdict takes
    ``throttle_samples`` polls anyway).  0x80 names the external brake itself, which a
    board asserts on its GPUs together: its poll's samples decide (int30, xf30)."""
    node = seen.scope.node or ""
    polled = self._polled.get(node, -math.inf)
    if _app_alone(seen):
        # (its mates' samples taken after its own, each: one interval at most -- a setting
        # applied to the node shows on each GPU's next sample; detector.thermal's poll of
        # application clocks begins at the GPU's sample)
        return None if polled >= seen.ts else seen.ts + self._cadence(node) + (
            self.cfg.why_wait_s)
    if seen.cause != "gpu_hardware":
        return None if polled >= seen.ts else seen.ts + self.cfg.why_wait_s
    interval = self._cadence(node)
    if polled > seen.ts + 0.5 * interval:
        return None
    return seen.ts + 1.25 * interval + self.cfg.why_wait_s


def _heat_held(self, slow: Finding, seen: Finding, now: float) -> bool:
    """Hold a slow rank whose GPU throttles thermally while its mates are warm with it
    (detector.thermal's ``node_warm``: it is not ``hot_delta_c`` above their median) while
    they may join it: True when held.

    A node's cooling failing (its coolant flow restricted, its fan, its rack's CDU) heats
    its GPUs together, and the first to reach its slowdown point shows its reason a scrape
    slot or a few polls before its mates: its slow rank paged at that GPU, the node's page
    following 0-48 s later, was two pages for one fault (blind23 D1: 8 of 48 node thermal
    faults).  DESIGN's unit is the smallest that contains the fault, and throttling begun
    within ``impact_onset_s`` of each other is one (as a cap's is): the rank waits that
    long from its GPU's first throttling sample (``throttling_since``; at least its node's
    next poll), and the node's heat naming the GPU meanwhile takes it to the node's page
    (:meth:`_heat_joined`).  A GPU still throttling alone then is its own fault; its
    throttle verdict meanwhile waits as long (:meth:`_hold_heat`, :meth:`_heat_due`).
    A GPU hot against cool mates (a failed thermal interface) is paged at once, as
    before; so is one beside mates shown level at their load (no ``node_warm``, or its
    ``throttle_seen`` told again without it: therm35, blind24's hot HBM)."""
    until = self._heat_until(slow, seen)
    if until is None or now >= until:
        return False
    self._slow_wait[slow.scope.key] = slow
    self._timer(until, "slow", slow.scope.key)
    return True


def _heat_until(self, slow: Finding, seen: Finding) -> float | None:
    """Until when :meth:`_heat_held` holds ``slow`` on its GPU's thermal ``seen``, or None."""
    if (seen.scope.level != "gpu" or seen.cause != "thermal"
            or seen.evidence.get("node_warm") is not True):
        return None
    since = seen.evidence.get("throttling_since")
    since = since if is_time(since) and since <= seen.ts else seen.ts
    interval = self._interval.get(slow.scope.node or "", (0.0, 0.0))[0] or (
        self.cfg.unknown_cadence_s)
    return since + max(self.cfg.impact_onset_s, interval) + 0.25 * interval + 1.0


def _mate_heat_held(self, slow: Finding, now: float) -> bool:
    """A slow rank with no heat or cap of its own, slow alike with its node's others
    (``node_wide``), while a mate's rank is held by :meth:`_heat_held` for the node's heat:
    held as long (True), so the node's thermal page takes it rather than an escalation
    with no cause a few seconds in (revC33: blind16 fleet-s1's CDU-hot node escalated
    slow_node/unknown 6.9 s in, its thermal page 39.7 s later, once therm33 held the
    first throttling GPU's rank -- the node's page at 0.0 s before)."""
    node = slow.scope.node
    if node is None or not slow.evidence.get("node_wide"):
        return False
    until = -math.inf
    for unit in sorted(self._units_of_node.get(node, ())):
        held = self._slow_wait.get(unit)
        seen = self._device.get(unit, {}).get("throttle_seen")
        if unit != slow.scope.key and held is not None and seen is not None:
            until = max(until, self._heat_until(held, seen) or -math.inf)
    if now >= until:
        return False
    self._slow_wait[slow.scope.key] = slow
    self._timer(until, "slow", slow.scope.key)
    return True


def _mate_app_clocks(self, slow: Finding, now: float, out: list[Alert]) -> bool:
    """A slow rank with no throttle or heat of its own, slow alike with its node's others
    (common._found_alike: TP inside the node, every rank at its slowest GPU's pace), while a
    GPU of its node shows its application clocks holding it (detector.thermal's _app_held:
    0x2, its mates free of them): that GPU's page, this rank its consequence (True).  Its own
    rank need not be the first decided -- blind33 held profiles-s4/s6: a mate's rank came
    first, found no cause on its own GPU and escalated the node slow_node/unknown 10 s after
    GPU 4's 0x2 was told."""
    node = slow.scope.node
    if node is None or not _found_alike(slow):
        return False
    for unit in sorted(self._units_of_node.get(node, ())):
        seen = self._device.get(unit, {}).get("throttle_seen")
        if (unit != slow.scope.key and seen is not None and seen.active
                and seen.scope.level == "gpu" and _reason_bits(seen) & APP_CLOCKS):
            until = self._brake_until(seen)
            if until is not None and now < until:
                # (its node's other GPUs' samples may yet show the setting on them: the
                # node's, decided then -- revA44 F4)
                self._slow_wait[slow.scope.key] = slow
                self._timer(until, "slow", slow.scope.key)
                return True
            p = self._impact(slow, seen, now, out)
            p.add(slow, self.cfg.evidence_items)
            self._own(slow, p)
            self._slow_wait.pop(slow.scope.key, None)
            return True
    return False


def _heat_joined(self, f: Finding, out: list[Alert]) -> bool:
    """A node's heat told (``throttle_seen`` at node scope, thermal): the slow ranks held
    on its GPUs it names (:meth:`_heat_held`) are decided now -- its page, not their
    GPUs' a timer later.  True when one was."""
    node, named = f.scope.node, f.evidence.get("gpus")
    if node is None or f.cause != "thermal" or type(named) is not list:
        return False
    decided = False
    for unit in sorted(self._units_of_node.get(node, ())):
        slow = self._slow_wait.get(unit)
        seen = self._device.get(unit, {}).get("throttle_seen")
        if (slow is not None and seen is not None and slow.scope.gpu in named
                and seen.evidence.get("node_warm") is True):
            decided = self._throttle_impact(slow, f.ts, out) or decided
    return decided


def _poll_in(self, f: Finding, out: list[Alert]) -> None:
    """Every GPU of a node has sent its sample of a poll on which one or more of them
    braked and the others did not (detector.thermal's ``poll_in``): a slow rank waiting
    on a GPU's brake for its siblings' samples (:meth:`_throttle_impact`) has them all --
    the brake is its GPU's, decided now, not ``why_wait_s`` after the sample (int30: at
    30 s every GPU of a node comes in one scrape, and the wait cost 3 steps)."""
    node = f.scope.node
    if node is None:
        return
    self._polled[node] = max(f.ts, self._polled.get(node, f.ts))
    for unit in sorted(self._units_of_node.get(node, ())):
        slow = self._slow_wait.get(unit)
        seen = self._device.get(unit, {}).get("throttle_seen")
        if slow is not None and seen is not None and (
                _node_wide_reason(seen) or _app_alone(seen)) and seen.ts <= f.ts:
            self._throttle_impact(slow, f.ts, out)


def _impact(self, slow: Finding, seen: Finding, now: float, out: list[Alert]) -> Problem:
    """Recommend isolating the unit of a never-routine throttle seen (``seen``: on the
    slow rank's GPU, or on every GPU of its node) that explains ``slow``: a slow rank, or
    a burst of slow steps (:meth:`_burst_impact`)."""
    burst = slow.signal == "slow_burst"
    how = (f"rank {slow.rank} {slow.evidence.get('compute_ratio_to_peers')}x its peers' "
           f"compute for {slow.evidence.get('run_steps')} steps in a row" if burst else
           f"rank {slow.rank} slower than its peers")
    reasons = seen.evidence.get("throttle_reasons")
    if seen.signal == "hot":
        because = (f"impact: {how} while its GPU runs {seen.evidence.get('gpu_temp_c')} C, "
                   f"{_above(seen)} C above its node's median (no clock-event reason)")
    elif seen.scope.level != "node" and _reason_bits(seen) & APP_CLOCKS:
        # (detector.thermal's _app_held: 0x2, its application clocks holding it, its node's
        # other GPUs free of them -- a clock setting left on it; reset_clocks mends it)
        because = (f"impact: {how} while its GPU's application clocks hold its clock "
                   f"({reasons}: applications clocks setting) and its node's other GPUs run "
                   "free of them: a clock setting left on this GPU -- a power profile's "
                   "application clocks not restored")
    elif seen.scope.level != "node":
        because = (f"impact: {how} while its GPU reports never-routine throttle reason "
                   f"{reasons}")
    elif _reason_bits(seen) & APP_CLOCKS:
        # (detector.thermal's "clocks": 0x2 on two GPUs or more of the node, the job's other
        # nodes free of such a setting -- one setting on the node; revA44 F4)
        because = (f"impact: {how} while application clocks hold GPUs "
                   f"{seen.evidence.get('gpus')} of {slow.scope.node} ({reasons}: "
                   "applications clocks setting) and the job's other nodes run free of "
                   "them: one clock setting left on the node -- a power profile or a tool "
                   "run on it, not restored")
    elif seen.cause == "thermal":
        because = (f"impact: {how} while GPUs {seen.evidence.get('gpus')} of "
                   f"{slow.scope.node} report never-routine thermal reasons ({reasons}): "
                   "the node's cooling")
    else:
        because = (f"impact: {how} while every GPU of {slow.scope.node} reports "
                   f"never-routine power reason {reasons}")
    extra = {"recommended_because": because, **self._cooling(seen)}
    if seen.signal == "throttle_seen" and _reason_bits(seen) & APP_CLOCKS:
        extra["clocks_held"] = "application"  # (its action: reset_clocks, playbook)
    p = self._raise(ISOLATION, "slow_node", seen.cause, seen.scope, seen, out,
                    detected_ts=max(now, seen.ts), extra=extra)
    if burst:
        # Evidence, not owned: the problem stands on the throttle, which clears on the
        # next clean sample; a burst ends by itself.
        p.add(slow, self.cfg.evidence_items)
    elif seen.scope.level == "node":
        p.add(slow, self.cfg.evidence_items)
        self._own(slow, p)
        self._slow_wait.pop(slow.scope.key, None)
        self._take_gpu_brakes(seen, max(now, seen.ts), out)
    else:
        self._explain_waiting(seen.scope, p, out)
    return p


def _take_gpu_brakes(self, seen: Finding, now: float, out: list[Alert]) -> None:
    """The node's brake paged (``seen``: its finding at node scope, naming the GPUs braking):
    the power pages still firing on those GPUs for their own brake -- raised while each
    braked alone, a poll or more before a sibling joined (0x80 is decided at its poll:
    :meth:`_brake_until`) -- are superseded by the node's page, which takes what stands on
    them: one fault, one page open (revA37 F3's shape under 0x80: GPU 2 paged at its poll,
    the node a poll later).  Not taken: a page standing on another unit's finding, latched,
    or of another cause (a GPU's heat beside its node's brake is another fault)."""
    node = seen.scope.node
    if node is None or seen.cause != "power":
        return
    p = self._firing_isolation(Scope.of_node(node), "slow_node")
    if p is None or p.cause != "power":
        return
    for g in seen.evidence.get("gpus", ()):
        if type(g) is not int:
            continue
        unit = Scope.of_gpu(node, g).key
        q = self.problems.get(self.dedup_key(ISOLATION, "slow_node", Scope.of_gpu(node, g),
                                             seen.cluster))
        if (q is None or q is p or q.status != "firing" or q.latched
                or q.cause not in ("power", "gpu_hardware")
                or not all(k.endswith("@" + unit) for k in q.active)):
            continue
        self._superseded(q, p, now, out)


def _on_hot(self, f: Finding, out: list[Alert]) -> None:
    """A GPU hot against its node's others told as evidence (detector.thermal: at its
    clock, no reason, below ``hot_limit_c``): a slow rank on it -- waiting for a cause, or
    escalated while the heat built up -- is the impact that makes the heat a
    recommendation (:meth:`_throttle_impact`); otherwise it joins what fires there."""
    unit = f.scope.key
    slow = self._slow_wait.get(unit) or self._device.get(unit, {}).get("slow_rank")
    if slow is not None and _harmless_heat(f):
        owner = self.problems.get(self._owner.get(slow.key, ""))
        if (owner is None or owner.topic == ESCALATION) and self._throttle_impact(
                slow, f.ts, out):
            return
    self._attach_if_firing(f)


# A burst of slow steps (steps.JobMonitor._check_burst: a rank >= 30 % slower than its
# peers for two steps in a row, over before the CUSUM alarms) is the rank measurably
# slower than its peers while an intermittent never-routine throttle is on (blind2 F3:
# power-brake bursts of 12-30 s, one 30 s sample in some of them).

def _on_burst(self, f: Finding, out: list[Alert]) -> None:
    p = self._explanation(f)
    if p is not None:
        p.add(f, self.cfg.evidence_items)
    else:
        self._burst_impact(f, f.ts, out)


def _bursts_under(self, seen: Finding, out: list[Alert]) -> None:
    """A never-routine throttle seen: bursts of slow steps on its unit (a GPU, or every GPU
    of a node) that it may explain."""
    units = (self._units_of_node.get(seen.scope.node or "", ()) if seen.scope.level == "node"
             else (seen.scope.key,))
    for unit in sorted(units):
        burst = self._device.get(unit, {}).get("slow_burst")
        if burst is not None and self._explanation(burst) is None:
            self._burst_impact(burst, seen.ts, out)


def _burst_impact(self, burst: Finding, now: float, out: list[Alert]) -> bool:
    """Recommend isolating the unit whose never-routine throttle, seen by a sample taken
    during ``burst``, explains it; routine SW power capping (0x4 alone) never does."""
    seen = self._node_throttle(burst) or self._device.get(burst.scope.key, {}).get(
        "throttle_seen")
    if seen is None or not _reason_bits(seen) & ~(0x4 | APP_CLOCKS):  # (a setting: steady)
        return False
    # During the burst: a sample at most two steps before its first slow step ended (a
    # step partly braked may not count), or before the burst's second sample is due (one
    # is taken within any burst longer than an interval, which the finding tells early).
    interval = self._interval.get(burst.scope.node or "", (0.0, 0.0))[0] or (
        self.cfg.unknown_cadence_s)
    runs = int(burst.evidence.get("run_steps") or 2)
    period = float(burst.evidence.get("step_period_s") or 0.0) or (
        (burst.ts - burst.onset_ts) / max(runs - 1, 1))  # (no period known: the burst's)
    if not burst.onset_ts - 2.0 * period <= seen.ts <= burst.ts + 1.25 * interval + 1.0:
        return False
    if seen.scope.level == "gpu" and _node_wide_reason(seen):
        # A reason a node's supply or board asserts: decided at node scope once every GPU
        # of the node shows it (_bursts_under), however late its siblings' samples of
        # the same poll arrive -- a wait of why_wait_s made 3 GPU isolations beside the
        # node's on room blind's corpus (hgx4-128-i30 s9: GPU 0's sample came later).
        # On one GPU only, its own throttle verdict (3 samples) decides, as before.
        return False
    self._impact(burst, seen, now, out)
    return True


def _warming(self, slow: Finding, due: float) -> bool:
    """The slow rank's GPU stood out hot against its node's others on its latest sample
    (detector.thermal's ``hot_seen``: warming faster, or a hot run short of its verdict):
    wait for its next sample -- a thermal reason, the ``hot`` verdict, or the GPU back
    with its node -- before paging a human; never past ``hot_samples`` more samples.

    A rank slow alike with its node's others (common._found_alike: TP inside the node, its
    ranks computing at the pace of its slowest GPU) waits so for any GPU of its node hot
    on its latest sample: the heat of one GPU is the whole node's pace, and the rank whose
    wait ends first need not be the hot GPU's (blind29 F6: a TP8 node of a power-capped
    site, its GPU 2 at 83 C beside mates at 60 C, escalated slow_node/unknown 'no thermal
    or power throttling on the GPU' from GPU 4's rank, 13 s before GPU 2's thermal page)."""
    warm = self._device.get(slow.scope.key, {}).get("hot_seen")
    node = slow.scope.node
    if warm is None and node is not None and _found_alike(slow):
        warm = max((g for unit in self._units_of_node.get(node, ())
                    if (g := self._device.get(unit, {}).get("hot_seen")) is not None
                    and g.active), key=lambda g: g.ts, default=None)
    if warm is None:
        return False
    interval = 1.25 * (self._interval.get(slow.scope.node or "", (0.0, 0.0))[0]
                       or self.cfg.unknown_cadence_s) + 1.0
    until = warm.ts + interval
    if due >= until or until > slow.ts + self._explanation_wait(slow) + (
            self.cfg.hot_samples * interval):
        return False
    self._timer(until, "slow", slow.scope.key)
    return True


def _burst_sample_due(self, slow: Finding, due: float) -> bool:
    """Hold a slow rank whose GPU -- or, slow alike with its node's others
    (common._found_alike), a GPU of its node -- is in a burst of gross slow steps
    (``slow_burst``, detector.steps' rules): until the node's first sample taken during the
    burst is here (correlate.slow's _sample_due, by its cadence: one sampling interval at
    most).  True when held.

    A limit that acts on the GPU's load -- a PSU brake (0x80) or a cap asserted only on a
    job's heavy batches -- slows the heavy steps 1.3x and more and leaves the light ones
    alone, and only a sample taken under load names it: the sample after the slowdown began
    may fall between bursts, showing no reason (blind31 F5: a diffusion node's brake on its
    heavy buckets only, its 8 ranks escalated slow_node/unknown 0.7 s before the poll that
    showed 0x84 and isolated it power -- two pages, the first with the wrong cause).  What
    must not wait: a rank with no burst in its run (a steady slowdown is named by any
    sample), or one whose burst its node's poll has sampled already, showing no reason."""
    node = slow.scope.node
    if node is None:
        return False
    units = self._units_of_node.get(node, ()) if _found_alike(slow) else (slow.scope.key,)
    onsets = [b.onset_ts for unit in units
              if (b := self._device.get(unit, {}).get("slow_burst")) is not None]
    if not onsets:
        return False
    until = self._sample_due(node, min(onsets))
    if until is None or due >= until:
        return False
    self._timer(until, "slow", slow.scope.key)
    return True
