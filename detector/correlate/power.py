"""SW power caps: routine capping, a node capped alone, a site's cap wave, and
the power a slow rank's GPU lost.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from itertools import islice, pairwise
from typing import Any

from detector.alerts import ISOLATION, Alert, Scope
from detector.correlate.common import (
    _CAP_SIGNALS,
    _CAPPING,
    _THROTTLES,
    FACILITY_CAP_MEMORY,
    Problem,
    _found_alike,
    _reason_bits,
)
from detector.findings import Finding
from detector.statecodec import is_map_of, is_time
from detector.thermal import LOW_LIMIT_SHARE, power_deficit


def check_power_restored(corr: Any) -> str | None:
    """The first of a restored correlator's power-cap fields that is malformed (None: all
    sound): ``_cap_waves`` node -> [onset, depth, last capped] (a list: kept up to date in
    place), ``_fleet_held`` unit -> when, ``_site_withdrawn`` node -> wave onset,
    ``_deep_caps`` (onset, node) sorted by onset (it is bisected), ``_routine_cap`` GPU ->
    its non-empty slots (first, last, drop), ``_cap_since`` GPU -> (since, last seen),
    ``_cap_resumed`` GPU -> when its capping began anew.
    Each was checked as a map (a list) alone: a wave ``[t, d]`` failed ``_fleet_cap``'s
    unpacking on every 0x4 finding, a string time every prune (revB31 4) -- refused now
    instead."""
    waves = getattr(corr, "_cap_waves", None)
    if not (type(waves) is dict and all(
            type(n) is str and type(w) is list and len(w) == 3 and is_time(w[0])
            and _is_drop(w[1]) and is_time(w[2]) for n, w in waves.items())):
        return "_cap_waves"
    held = getattr(corr, "_fleet_held", None)
    if not (is_map_of(held, str, (float, int)) and all(map(is_time, held.values()))):
        return "_fleet_held"
    withdrawn = getattr(corr, "_site_withdrawn", None)
    if not (is_map_of(withdrawn, str, (float, int)) and all(map(is_time, withdrawn.values()))):
        return "_site_withdrawn"
    deep = getattr(corr, "_deep_caps", None)
    if not (type(deep) is list and all(
            type(c) is tuple and len(c) == 2 and is_time(c[0]) and type(c[1]) is str
            for c in deep) and all(a <= b for a, b in pairwise(deep))):
        return "_deep_caps"
    routine = getattr(corr, "_routine_cap", None)
    if not (type(routine) is dict and all(
            type(u) is str and type(seen) is list and seen and all(
                type(c) is tuple and len(c) == 3 and is_time(c[0]) and is_time(c[1])
                and _is_drop(c[2]) for c in seen) for u, seen in routine.items())):
        return "_routine_cap"
    resumed = getattr(corr, "_cap_resumed", None)
    if not (is_map_of(resumed, str, (float, int)) and all(map(is_time, resumed.values()))):
        return "_cap_resumed"
    since = getattr(corr, "_cap_since", None)
    if not (type(since) is dict and all(
            type(u) is str and type(c) is tuple and len(c) == 2 and is_time(c[0])
            and is_time(c[1]) and c[0] <= c[1] for u, c in since.items())):
        return "_cap_since"
    return None


def _is_drop(x: Any) -> bool:
    """A clock drop as told (a finite share)."""
    return type(x) in (float, int) and math.isfinite(x)


def _baseline(slow: Finding) -> float:
    """A slow rank's own slowness from the job's start (its learned baseline, >= 1).

    A GPU a little slower than its peers from the start (a speed offset) was so before
    anything else happened to it: a cause found later explains only the change beyond it.
    """
    return max(float(slow.evidence.get("baseline_ratio") or 1.0), 1.0)


def _explained(routine: float, drop: float) -> float:
    """The pace a SW cap ``drop`` deep explains (>= 1), beyond the ``routine`` clock loss its
    GPU showed costing the job nothing: work slows at most in proportion to the clock."""
    return (1.0 - min(routine, drop)) / (1.0 - min(drop, 0.5))


def _grown_pace(slow: Finding) -> float | None:
    """A run told again grown (``grown_from``: detector.steps' _grown_runs, its pace past
    twice the told excess on several steps in a row): its pace now, its latest step's
    ratio, when that is a number above its run's mean (None otherwise).  A run begun under a
    cap's few percent and grown past it (a fault under the cap) has a mean over its whole run
    that the cap's steps dilute: revA39 F5, a GPU 20 % slow from 100 s into a site's 6 % cap,
    told again at 1.30x with a run mean of 1.066x -- within the cap's 1.064x and two points,
    held as the site's for good (a2e2c2e: isolated power, the cap's cause for a slowdown
    three times its depth)."""
    mean, now = slow.evidence.get("mean_ratio_over_run"), slow.evidence.get(
        "compute_ratio_to_peers")
    if slow.evidence.get("grown_from") and _is_drop(now) and (
            not _is_drop(mean) or now > mean):
        return float(now)
    return None


def _past_cap_now(slow: Finding, drop: float) -> bool:
    """A run told again grown whose pace now (:func:`_grown_pace`, one step: three of its
    steps' ``noise_sigma`` allowed, two points at least) is past what a SW cap ``drop`` deep
    explains: a cap slows work at most as its clock."""
    now = _grown_pace(slow)
    if now is None:
        return False
    sigma = min(max(float(slow.evidence.get("noise_sigma") or 0.0), 0.0), _MAX_NOISE_SIGMA)
    return now / _baseline(slow) > _explained(0.0, drop) * (1.0 + max(0.02, 3.0 * sigma))


def _within_cap(slow: Finding, drop: float) -> bool:
    """Whether a rank's slowdown beyond its baseline (its run's mean pace, else its latest
    step's; a run grown past the cap since it was told: not, :func:`_past_cap_now`) is
    within what a SW cap ``drop`` deep explains, two points allowed, no routine discount --
    a site's cap (Correlator._power_impact, _site_explains).  A pace not told (None, 0) is
    within; one that is no number (NaN) explains nothing (_site_explains read it as within,
    and withdrew a page on it)."""
    if _past_cap_now(slow, drop):
        return False  # (grown past the cap since it was told: _grown_pace)
    ratio = slow.evidence.get("mean_ratio_over_run") or slow.evidence.get(
        "compute_ratio_to_peers")
    return not ratio or ratio / _baseline(slow) - 1.0 <= _explained(0.0, drop) - 1.0 + 0.02


def _cap_explains(self, slow: Finding, drop: float) -> bool:
    """:func:`_within_cap` as the Correlator's method, for the concerns that read it (slow.py's
    clock policy: a clock held ``drop`` low explains a slowdown as a cap that deep does)."""
    return _within_cap(slow, drop)


def _pace_noise(slow: Finding) -> float:
    """How far a slow rank's measured pace may stand above the pace its cause explains by
    noise alone, as a factor: 2 %, or three standard errors of its run's mean ratio (its
    steps' ``noise_sigma`` over ``run_steps``) when they are more.  A step's noise scales its
    time, so it is a share of the pace, not points of it: the thirtieth reporting corpus's
    scenario-overlap-s3002-f01, a GPU capped 28.9 % (1.4065x explained) under a rank 1.4326x
    over 4 steps (sigma 0.014: its steps 1.437-1.480x), was escalated 'unknown' beyond 2
    points (1.4265x) and isolated power by the sustained rule 3.6 s later."""
    sigma = min(max(float(slow.evidence.get("noise_sigma") or 0.0), 0.0), _MAX_NOISE_SIGMA)
    steps = int(slow.evidence.get("run_steps") or 0) if slow.evidence.get(
        "mean_ratio_over_run") else 1
    return max(0.02, 3.0 * sigma / math.sqrt(max(steps, 1)))


# A step noise past this (a share of the step) is no rank's: a forged or broken finding's, so
# it cannot make every cap explain every slowdown (revB31 3).
_MAX_NOISE_SIGMA = 0.2


# A step this much slower than its peers is a spike (detector.steps' burst rule takes two in a
# row for a slowdown): a lone one ending a slow run is no measure of the run's pace (_pace).
_SPIKE_RATIO = 1.3


def _pace(slow: Finding) -> float:
    """A slow rank's pace against its peers: its latest step's ratio -- or, when that step is
    a lone spike crossing a run of at least three steps, the run's geometric mean without it.

    A one-step spike is the workload's (a garbage collection, an uneven batch: DESIGN's
    workload effects page nobody), but it can be the step that carries a run's CUSUM over:
    a power cap trimming a GPU's clock 2.6 % had its rank 3 % slow for nine steps, then one
    step at 2.4x crossed, and the cap -- which explains 3 % -- was weighed against the
    spike's 2.4x (sixteenth reporting corpus, pure_dp s1602: node-002 GPU 3 escalated 12 s
    after GPU 1's DBE isolation, a benign cap and a benign spike, no fault of its own)."""
    last = slow.evidence.get("compute_ratio_to_peers")
    last = math.inf if last is None else float(last)
    mean = float(slow.evidence.get("mean_ratio_over_run") or 0.0)
    runs = int(slow.evidence.get("run_steps") or 0)
    if not _SPIKE_RATIO <= last < math.inf or mean <= 0.0 or runs < 3:
        return last
    rest = (runs * math.log(mean) - math.log(last)) / (runs - 1)
    return math.exp(rest) if rest < math.log(last) else last


# A SW power cap is evidence; with the rank measurably slower than its peers by no more than
# the cap explains, it is the GPU's fault: the one cap rule, _power_impact.

def _on_power_cap(self, f: Finding, out: list[Alert]) -> None:
    if not f.active:
        self._cleared(f, out)
        return
    slow = self._device.get(f.scope.key, {}).get("slow_rank")
    if slow is not None:
        self._power_impact(slow, f.ts, out)


def _note_cap(self, unit: str, f: Finding) -> None:
    """Remember SW power capping on a GPU whose rank is not slow meanwhile (routine), and
    deep capping on any GPU (:meth:`_facility_cap`)."""
    if f.scope.node is not None and f.signal != "throttle_minor" and float(
            f.evidence.get("clock_drop", 0.0)) >= self.cfg.cap_clock_drop:
        caps = self._deep_caps
        horizon = f.ts - FACILITY_CAP_MEMORY * self.cfg.cap_half_life_s
        if caps and caps[0][0] < horizon:
            del caps[:bisect_left(caps, (horizon,))]
        insort(caps, (f.onset_ts, f.scope.node))
    if "slow_rank" in self._device.get(unit, {}):
        return
    drop = float(f.evidence.get("clock_drop", 0.0))
    seen = self._routine_cap.get(unit)
    if seen is None:
        seen = self._routine_cap[unit] = []
    if seen and f.ts < seen[-1][0] + self.cfg.routine_cap_slot_s:
        first, _, worst = seen[-1]  # one slot: (first ts, last ts, largest drop)
        seen[-1] = (first, f.ts, max(worst, drop))
    else:
        seen.append((f.ts, f.ts, drop))
        if len(seen) > self.cfg.routine_cap_slots:
            del seen[0]


def _facility_cap(self, f: Finding) -> bool:
    """A SW power cap's sustained verdict (detector.thermal: the clock held
    ``cap_clock_drop`` down, "a supply that cannot keep up") while caps as deep began on
    ``facility_cap_nodes`` nodes within ``impact_onset_s`` of it: a site's or a rack's
    power limit lowered, every rank slower together -- facility power management, not
    each GPU's fault (blind2 nvl72-mixed-30-5 s00: 25 GPU isolations once an idle clock
    stopped hiding the cap).  A rank slower than its peers under it is still its GPU's
    fault (:meth:`_power_impact`); never-routine reasons are never facility."""
    if f.scope.level != "gpu" or _reason_bits(f) != 0x4:
        return False
    nodes = {f.scope.node}
    window = self.cfg.impact_onset_s
    caps = self._deep_caps  # (by onset: only those within the window are read -- a
    # second wave's verdicts walked the whole first wave, review round 11's R8)
    for k in range(bisect_left(caps, (f.onset_ts - window,)), len(caps)):
        onset, node = caps[k]
        if onset > f.onset_ts + window:
            break
        nodes.add(node)
        if len(nodes) >= self.cfg.facility_cap_nodes:
            return True
    return False


def _node_cap(self, f: Finding, now: float, out: list[Alert], decide: bool = False
              ) -> None:
    """A SW cap's sustained verdict on a GPU whose node's busy GPUs are all under the same
    cap (detector.thermal: ``gpus_under_cap`` of them): whose limit is it?

    Another node's cap as deep begun within ``impact_onset_s`` of it: a rack's or the
    site's (facility power management, blind3 B2) -- evidence, nobody paged.  Else the
    node's alone: with busy GPUs of other nodes running free beside it (its jobs' nodes;
    no job known, its rack's by the topology; neither, every node heard from), one node-scope
    power page -- a PSU lost and the BMC capping the node, a DCMI/EDPp cap left on: one
    node fault, not 8 GPU faults (review round 12 P1).  The node's only busy GPU under a
    cap no other node's began with (the same poll) is that GPU's own, as before (its
    siblings idle: thermal13).  A node's decided once the other nodes' caps of the same
    minute can have been seen: ``impact_onset_s`` and a 30 s interval after the verdict
    came, by the newest record's time -- not by the node's own clock, which may be
    minutes behind the others' (blind5 ops: a job-wide ``nvidia-smi -pl`` on 4 nodes, one
    of them 60-200 s behind, its job-mates sampled every 30 s: "capped alone" for a
    minute); a lone GPU's one interval after its onset (its page as early as before: a
    rack's cap reaches its nodes' GPUs on the same poll)."""
    node = f.scope.node
    if node is None:
        return
    window = self.cfg.impact_onset_s
    gpus = int(f.evidence.get("gpus_under_cap") or 0)
    interval = self._cadence(node)
    if gpus > 1 and not decide:
        self._timer(max(self._clock, now) + window + 1.25 * max(
            interval, self.cfg.unknown_cadence_s), "cap", f.scope.key)
        return
    due = f.onset_ts + 1.25 * interval
    if gpus <= 1 and now < due:
        self._timer(due, "cap", f.scope.key)
        return
    caps = self._deep_caps
    for k in range(bisect_left(caps, (f.onset_ts - window,)), len(caps)):
        onset, other = caps[k]
        if onset > f.onset_ts + window:
            break
        if other != node:
            self._attach_if_firing(f)  # the same cap on another node: not this one's
            return
    wave = self._cap_waves.get(node)
    if self._fleet_cap(node, wave[0] if wave is not None else f.onset_ts, float(
            f.evidence.get("clock_drop") or 0.0), now):
        self._attach_if_firing(f)  # (a cap as shallow begun with another node's: the same)
        return
    free = self._running_free(node) if gpus > 1 else []
    if gpus > 1 and not free:
        self._attach_if_firing(f)  # no node to compare with runs free: a shared limit
        return
    scope = f.scope if gpus <= 1 else Scope.of_node(node)
    because = str(f.evidence.get("recommended_because")) if gpus <= 1 else (
        f"SW power cap on every busy GPU of {node} ({gpus}) begun together, the clock "
        f"{float(f.evidence.get('clock_drop') or 0.0):.1%} down, while busy GPUs of "
        f"{len(free)} other node(s) ({', '.join(free[:4])}{', ...' if len(free) > 4 else ''}"
        f") run free and no other node's cap began within {window:.0f} s: the node's own "
        f"power limit (a power supply lost and its BMC capping the node, a DCMI cap left "
        f"on) -- one node fault, not {gpus} GPU faults")
    p = self._raise(ISOLATION, "slow_node", "power", scope, f, out, detected_ts=now,
                    extra={"recommended_because": because})
    self._explain_waiting(scope, p, out)


def _running_free(self, node: str) -> list[str]:
    """The nodes compared with ``node`` that have a busy GPU and no SW power cap on any
    GPU: its jobs' nodes (the same load); no job known, its rack's by the topology;
    neither, every node heard from.  (Not the rack beside the job: a job-wide
    ``nvidia-smi -pl`` holds the job's nodes and no other job's -- blind5 ops, with one of
    the job's nodes' clock 60-200 s behind, so their onsets could not be compared.)"""
    peers: set[str] = set()
    placement = self._placement
    for job in {j for j, _ in placement.on_node.get(node, {})}:
        peers.update(n for n, _, _ in placement.ranks.get(job, {}).values())
    topo = self.topology
    rack = topo.rack_of(node) if topo is not None and not peers else None
    if rack is not None and topo is not None:
        peers.update(n for n in topo.nodes() if topo.rack_of(n) == rack)
    peers.discard(node)
    return sorted(n for n in (peers or self._busy) if n != node and n in self._busy
                  and not self._capped(n)
                  and (self.seen is None or self.seen(n, "thermal")))


def _capped(self, node: str) -> bool:
    """A SW power cap (0x4) on any GPU of ``node`` (raised, seen, or minor)."""
    for unit in self._units_of_node.get(node, ()):
        signals = self._device.get(unit, {})
        if "power_cap" in signals or any(
                _reason_bits(signals[s]) & 0x4 for s in _CAP_SIGNALS if s in signals):
            return True
    return False


# -- the one cap rule (issue 10) ---------------------------------------------------------------


def _power_impact(self, slow: Finding, now: float, out: list[Alert],
                  cap: Finding | None = None) -> bool:
    """Issue 10's cap rule for a slow rank: whether a SW power cap (0x4) is why its rank is
    slower than its peers -- decided (True: paged power, or held) or not (False: the rank
    goes on to the other causes).

    DESIGN: a throttle reason is evidence; 0x4 at the board's power limit is normal operation
    and raises nothing on its own; it becomes a recommendation when the unit measurably hurts
    the job.  A rank found slow (a slow_rank finding: CUSUM alarm and ``slow_min_effect``)
    under a cap is the cap's, and its GPU is isolated slow_node/power, when the cap explains
    the slowdown by one of two measures, each bounding what a cap can take from the work:

    1. **its clock** (the GPU's own ``power_cap`` finding, or ``cap`` told: a throttle seen,
       :meth:`_throttle_impact`) -- :meth:`_clock_explains`: work slows at most as the clock
       does, so the rank's pace beyond its baseline must be within the clock loss beyond the
       GPU's routine capping (capping that cost the job nothing before), begun with the
       slowdown.  Several of its node's GPUs capped together with its ranks slow alike are
       the node's limit: one node page (:meth:`_capped_with`), held for the poll's other
       samples first (:meth:`_hold_for_poll`).  A site's cap (its node's wave begun with
       other nodes') explains the rank within the clock with no routine discount, and pages
       nobody (:meth:`_fleet_explains`).
    2. **its power** -- :meth:`_own_limit`: a GPU at 0x4 drawing ``LOW_LIMIT_SHARE`` or more
       below its node's free mates is held by a limit of its own (the sampled clock
       understates what such a cap takes): the rank up to twice the power deficit slower.

    A rank slower than both measures explain has something else wrong: not decided here."""
    cap = cap or self._device.get(slow.scope.key, {}).get("power_cap")
    if cap is not None and self._clock_explains(slow, cap, now, out):
        return True
    return self._own_limit(slow, now, out)


def _clock_explains(self, slow: Finding, cap: Finding, now: float, out: list[Alert]) -> bool:
    """The cap rule's clock measure (:meth:`_power_impact`, 1): page ``cap``'s GPU (or its
    node) power when the clock loss ``cap`` shows explains the rank's slowdown, or hold the
    rank for a site's cap; False when the clock does not explain it."""
    ratio = slow.evidence.get("mean_ratio_over_run") or slow.evidence.get(
        "compute_ratio_to_peers")
    base = _baseline(slow)
    if ratio:
        ratio = ratio / base
    drop = cap.evidence.get("clock_drop", 0.0)
    if _reason_bits(cap) == 0x4 and _within_cap(slow, drop) and self._fleet_explains(
            slow, cap, float(drop), now):
        return True  # (a site's cap: no routine discount -- its own capping is no routine)
    # A GPU capped before its rank slowed down, the rank at its peers' speed meanwhile,
    # showed what its routine capping costs the job: nothing.  Only the clock loss beyond
    # that routine loss can explain the slowdown (a cap's slowdown is bounded by it).
    # "Before" is a few steps before the run's onset (the CUSUM's onset can trail the real
    # change): the cap that came with the slowdown is not routine.
    routine = self._routine_loss(slow)
    if routine and self._capped_alone(slow, cap):
        # A cap cap_clock_drop deep on this GPU alone, its node's other GPUs free of any
        # SW cap, is not the routine capping its GPU showed before: the peers' comparison
        # (its siblings, the same load and supply) rules that out, so the whole clock loss
        # counts (twenty-ninth reporting corpus, seed 2902: a 19.3 % cap begun with the
        # slowdown, the rank 23.1 % slow -- within the 23.9 % the clock explains, but past
        # the 20.7 % left after a 2.6 % routine dip minutes before: escalated 'unknown'
        # "no throttling" until the sustained rule isolated it 3.7 s later).
        routine = 0.0
    if ratio and ratio > _explained(routine, drop) * (1.0 + _pace_noise(slow)) or (
            _past_cap_now(slow, float(drop) if _is_drop(drop) else 0.0)):
        # Work slows at most in proportion to the clock: a rank slower than its clock
        # loss explains (beyond its steps' noise) has something else wrong with it.
        return False
    if self._cap_began_apart(slow, cap, ratio, routine) or self._before_fleet_cap(
            slow, cap, float(drop), now):
        return False  # the cap did not start with the slowdown: routine capping, not why
    because = (f"impact: rank {slow.rank} runs {ratio - 1.0:.1%} slower than its peers "
               + (f"beyond its own baseline ({base - 1.0:.1%} from the start) "
                  if base > 1.0 else "")
               + f"while its GPU is power-capped (clock {drop:.1%} below baseline)"
               ) if ratio else "impact: rank slower than its peers"
    gpus = self._capped_with(slow, cap)
    if len(gpus) < 2:
        if self._hold_for_poll(slow, cap, now):
            return True
        p = self._raise(ISOLATION, "slow_node", "power", cap.scope, cap, out,
                        detected_ts=max(now, cap.ts, slow.ts),
                        extra={"recommended_because": because})
        self._explain_waiting(cap.scope, p, out)
        return True
    # Several GPUs of the node capped as deep on the same poll, the node's ranks slow
    # alike: one limit set on the node (`nvidia-smi -pl` on the host, its BMC capping it),
    # not as many GPU faults -- one node page, which its other ranks join (_mates_cause;
    # blind5 E2b: GPUs 1, 3 and 6 isolated, the five capped since their first sample --
    # no clock baseline to measure a drop against -- escalated as the node 'unknown').
    scope = Scope.of_node(slow.scope.node)  # type: ignore[arg-type]
    p = self._raise(ISOLATION, "slow_node", "power", scope, cap, out,
                    detected_ts=max(now, cap.ts, slow.ts), extra={
                        "recommended_because": f"{because}; the same SW power cap began "
                        f"on GPUs {gpus} of {slow.scope.node} within "
                        f"{self.cfg.impact_onset_s:.0f} s and the node's ranks are slow "
                        "alike: the node's power limit, one node fault"})
    p.add(slow, self.cfg.evidence_items)
    self._own(slow, p)
    self._slow_wait.pop(slow.scope.key, None)
    return True


def _own_limit(self, slow: Finding, now: float, out: list[Alert]) -> bool:
    """The cap rule's power measure (:meth:`_power_impact`, 2): page the GPU whose own power
    limit is set below what its node's free GPUs draw, when the slow rank is its (or slow
    alike with its node's others, ``node_wide``: a TP group waits for its slowest GPU) and
    the capping began with the slowdown; False otherwise.

    Under one limit -- the board's, a rack's, a site's -- a capped GPU draws its limit and its
    free mates less, so it draws as much as they do or more: routine, DESIGN's 0x4 "at the
    board's power limit" (blind27 F1's busiest GPU at 700 W, blind21's demand-response caps,
    a site's waves: every GPU under them alike, none below a free mate).  A GPU at 0x4 drawing
    LOW_LIMIT_SHARE or more *below* its free mates doing the same work is held by a limit of
    its own (``nvidia-smi -pl`` left at 440-480 W): DESIGN's 0x4 that measurably hurts the job
    (blind32 F1: z-08/3 at 476 W beside mates at 523 W, clock -4 %, its TP group x1.10,
    escalated slow_node/unknown -- the clock measure, :meth:`_clock_explains`, bounds a cap's
    slowdown by its sampled clock, 1.04x here, and its 3.8 % dip was read as power
    management's routine few percent).  The sampled SM clock under a cap understates what
    the cap takes (the driver dithers clock and voltage between samples, and the memory clock
    with them), so the bound here is the power lost: a rank up to twice the GPU's power
    deficit slower (its pace noise allowed) is the limit's; slower than that, something
    else is wrong and the rank goes on to the other rules.  A cap begun ``impact_onset_s`` or
    more apart from the slowdown did not start it (routine capping, :meth:`_cap_began_apart`).
    """
    node = slow.scope.node
    if node is None or slow.scope.level != "gpu":
        return False
    units = [slow.scope.key]
    if slow.evidence.get("node_wide"):
        mine = self._job_units(node, slow.job)
        units += [u for u in sorted(self._units_of_node.get(node, ()))
                  if u != slow.scope.key and u.startswith("gpu:") and self._of_job(slow, u, mine)]
    window = self.cfg.impact_onset_s
    ratio = _pace(slow) / _baseline(slow)
    for unit in units:
        cap = self._low_limit_cap(unit)
        if cap is None or any(u != unit and u.startswith("gpu:") and self._capping_now(u)
                              for u in self._units_of_node.get(node, ())):
            continue  # (its mates capped since: the node's own limit rolled out, _node_cap's
            #           -- blind19 R3, a BMC capping a node's GPUs one poll after another)
        since = self._cap_since.get(unit)
        began = min(cap.onset_ts, since[0]) if since is not None else cap.onset_ts
        if abs(began - slow.onset_ts) > window:
            continue  # (capped long before or after the slowdown began: not why)
        deficit = power_deficit(cap.evidence)
        if ratio > (1.0 + 2.0 * deficit) * (1.0 + _pace_noise(slow)):
            continue
        because = (f"impact: rank {slow.rank} runs {ratio - 1.0:.1%} slower than its peers"
                   + ("" if unit == slow.scope.key else
                      f", its node's ranks slow alike with {cap.scope.key}'s")
                   + f" while {cap.scope.key} is held at its SW power cap drawing "
                   f"{float(cap.evidence['power_w']):.0f} W, {deficit:.1%} below the "
                   f"{float(cap.evidence['mates_power_w']):.0f} W its node's uncapped busy "
                   "GPUs draw: a power limit of its own set low (`nvidia-smi -q -d POWER`: "
                   "its enforced limit), not the board's or the site's")
        p = self._raise(ISOLATION, "slow_node", "power", cap.scope, cap, out,
                        detected_ts=max(now, cap.ts, slow.ts),
                        extra={"recommended_because": because})
        if self._owner.get(slow.key) != p.key:
            p.add(slow, self.cfg.evidence_items)
            self._own(slow, p)
        self._slow_wait.pop(slow.scope.key, None)
        self._explain_waiting(cap.scope, p, out)
        return True
    return False


def _low_limit_cap(self, unit: str) -> Finding | None:
    """The SW power cap finding active on GPU ``unit`` (0x4 alone, any depth) told drawing
    LOW_LIMIT_SHARE or more below its free mates (detector.thermal.power_deficit); None: none."""
    signals = self._device.get(unit, {})
    for s in _CAPPING:
        g = signals.get(s)
        if (g is not None and g.active and _reason_bits(g) == 0x4
                and power_deficit(g.evidence) >= LOW_LIMIT_SHARE):
            return g
    return None


def _note_capping(self, f: Finding, gone: Finding | None) -> None:
    """Follow a GPU's SW power capping (``_cap_since``): a SW cap finding (0x4 alone:
    ``throttle_minor`` at 1 % of clock or more, ``throttle_seen`` / ``power_cap`` at
    ``clock_drop``) goes on the GPU's capping begun before unless it comes more than
    ``throttle_clear_samples`` samples after that capping was last seen with none of it
    left on the GPU -- the gap after which detector.thermal calls a cap over; one
    cleared (``gone``) was seen until now."""
    unit = f.scope.key
    since = self._cap_since.get(unit)
    if f.active and _reason_bits(f) == 0x4:
        gap = self.cfg.throttle_clear_samples * self._cadence(f.scope.node or "")
        if since is None or (f.onset_ts > since[1] + gap and not self._capping_now(
                unit, but=f.signal)):
            since = (f.onset_ts, f.ts)
        self._cap_since[unit] = (since[0], max(since[1], f.ts))
    elif since is not None and gone is not None and _reason_bits(gone) == 0x4:
        self._cap_since[unit] = (since[0], max(since[1], f.ts))


def _capping_now(self, unit: str, but: str = "") -> bool:
    """A SW power cap finding (0x4 alone) active on ``unit``, ``but`` that signal."""
    signals = self._device.get(unit, {})
    return any(s != but and s in signals and _reason_bits(signals[s]) == 0x4
               for s in _CAPPING)


def _cap_began_apart(self, slow: Finding, cap: Finding, ratio: float | None,
                     routine: float) -> bool:
    """Whether the SW cap ``cap`` and the rank's slowdown began more than
    ``impact_onset_s`` apart -- the cap did not start it: routine capping, not why.

    The cap begins when the GPU's capping did (:meth:`_note_capping`), not only at its
    ``clock_drop`` run's first sample: a cap that creeps (a board's draw rising into its
    limit, the clock giving way a point or two a minute) slows its rank from its first
    points, and the CUSUM finds that run while the clock is 1-4 % down -- 100-190 s
    before the clock is 5 % down (blind24 P1: rank 47 found from +243 s, its GPU capped
    1.5 % from +232 s, 5 % only at +352 s, a save's idle sample between them restarting
    the run: escalated 'unknown' at a 6.8 % clock loss, isolated power 265 s later by
    the sustained verdict at 12.9 %).  Capping that went on long before the slowdown is
    still routine (:meth:`_routine_loss` says what it cost: nothing).

    Begun with the capping but found before the cap was this deep, the rank's pace was
    measured (``ratio``, at ``slow.ts``) under the capping of then: it must be within what
    that capping explains (:meth:`_cap_depth_at`), not only within today's deeper cap --
    a rank 8 % slower found under a 1.5 % cap is not explained by the 5 % its GPU
    reaches three minutes later."""
    window = self.cfg.impact_onset_s
    if abs(cap.onset_ts - slow.onset_ts) <= window:
        return False
    unit = slow.scope.key
    since = self._cap_since.get(unit)
    if since is None or since[0] > cap.onset_ts or abs(since[0] - slow.onset_ts) > window:
        return True
    depth = self._cap_depth_at(unit, slow.ts)
    return bool(ratio) and ratio > _explained(routine, depth) * (1.0 + _pace_noise(slow))


def _cap_depth_at(self, unit: str, ts: float) -> float:
    """The deepest SW power cap (0x4 alone) told on ``unit`` at ``ts`` or before and not
    cleared before ``ts``: a cap finding on the GPU, or its last minor cap or throttle
    gone since (``_benign``, ``_throttled``) -- 0.0 when none is known."""
    signals = self._device.get(unit, {})
    told = [(g, math.inf) for s, g in signals.items() if s in _CAPPING]
    for kept in (self._benign.get(unit), self._throttled.get(unit)):
        if kept is not None:
            told.append(kept)
    return max((float(g.evidence.get("clock_drop") or 0.0) for g, ended in told
                if g.ts <= ts <= ended and _reason_bits(g) == 0x4), default=0.0)


def _hold_for_poll(self, slow: Finding, cap: Finding, now: float) -> bool:
    """Hold the page of a capped GPU whose rank is slow alike with its node's others
    (``node_wide``) and a replica of its own there (the page would stay at the GPU:
    :meth:`_gpu_unconfirmed`) until ``why_wait_s`` after the cap's sample -- the allowed
    disorder: its siblings' samples of the same poll may still be on their way.  A
    second GPU's cap begun with it raises the node's page on that sample
    (:meth:`_power_impact`, the same detected_ts); none, and the GPU is paged when the
    wait ends.  The node's other slow ranks wait with it (:meth:`_slow_due`), so they
    join the page rather than escalate the node before it.  blind19 R3: a BMC capping
    all eight GPUs of a node, their eight TP1 ranks x1.12, was isolated at the GPU whose
    sample came first, the node 20 s later, and the GPU's page stayed (finer than the
    fault: a false positive no later resolve undoes).  A rank slow alone on its capped
    GPU is paged at once, as before."""
    node = slow.scope.node
    until = cap.ts + self.cfg.why_wait_s
    if (node is None or now >= until or not slow.evidence.get("node_wide")
            or slow.key in self._owner or self._firing_on(cap.scope, "slow_node")
            or self._gpu_unconfirmed(cap.scope) is not None):
        return False
    self._slow_wait[slow.scope.key] = slow
    self._poll_hold[node] = max(until, self._poll_hold.get(node, until))
    self._timer(until, "slow", slow.scope.key)
    return True


def _note_wave(self, f: Finding) -> bool:
    """A GPU's SW power cap (0x4 alone, ``clock_drop`` or deeper) told: when most of its
    node's busy GPUs (two at least) are under such a cap begun within ``impact_onset_s``
    of it, the node's cap wave (``_cap_waves``): begun then, this deep.  A wave begun
    ``impact_onset_s`` after the one kept replaces it (the node capped anew).  True when
    a wave begins (a site's cap may have reached another node: :meth:`_site_joined`)."""
    node = f.scope.node
    if node is None:
        return False
    window = self.cfg.impact_onset_s
    caps = []
    for unit in self._units_of_node.get(node, ()):
        begun = self._cap_begun(unit)
        if begun is None:
            continue
        g, onset = begun
        if g.scope.level == "gpu" and _reason_bits(g) == 0x4 and abs(onset - f.onset_ts) <= window:
            caps.append((onset, float(g.evidence.get("clock_drop") or 0.0)))
    busy = {g for g, _ in self._placement.on_node.get(node, {}).values()}
    wave = self._cap_waves.get(node)
    if len(caps) < max(2, (len(busy) + 1) // 2):
        if wave is not None:
            wave[2] = max(wave[2], f.ts)
        return False
    onset = min(o for o, _ in caps)
    depth = sum(d for _, d in caps) / len(caps)
    if wave is None or onset > wave[0] + window:
        self._cap_waves[node] = [onset, depth, f.ts]
        return True
    if abs(onset - wave[0]) <= window:
        wave[1], wave[2] = depth, max(wave[2], f.ts)
    return False


def _note_resumed(self, unit: str, f: Finding) -> None:
    """A ``throttle_seen`` told on GPU ``unit`` with none standing before it (``f``): when it
    is a SW cap (0x4 alone) begun ``impact_onset_s`` or more after the GPU's last
    ``throttle_seen`` at 0x4 was let go (``_throttled``), while the ``power_cap`` verdict of
    the capping before still stands (it clears only after ``throttle_clear_samples`` samples
    without: 150 s at 30 s polls), the GPU's capping began anew then (``_cap_resumed``,
    :meth:`_cap_begun`).  Only a fresh telling: a ``throttle_seen`` told again over a standing
    one (its told reasons changed -- a cap deepening past ``cap_clock_drop`` and back) carries
    a new onset but is the same capping going on."""
    cap = self._device.get(unit, {}).get("power_cap")
    gone = self._throttled.get(unit)
    if (cap is not None and gone is not None and f.scope.level == "gpu"
            and _reason_bits(f) == 0x4 and gone[0].signal == "throttle_seen"
            and _reason_bits(gone[0]) == 0x4
            and cap.onset_ts < gone[1] <= f.onset_ts - self.cfg.impact_onset_s):
        self._cap_resumed[unit] = f.onset_ts


def _cap_begun(self, unit: str) -> tuple[Finding, float] | None:
    """The cap finding on GPU ``unit`` its node's wave reads (:meth:`_note_wave`) and when its
    capping began: its sustained ``power_cap`` verdict's onset -- or, when the capping began
    anew after a minute or more let go with that verdict still standing (``_cap_resumed``),
    then -- else its ``throttle_seen``'s.  revA38 F1: a site's waves 30-200 s apart at 30 s
    polls -- nodes 3 and 6 capped 825-963 s and again from 1,090 s kept their first wave's
    onset (840 s), so node-002's wave of 1,110 s had no partners and it was escalated.  Not
    every newer ``throttle_seen``: one re-told as its reasons change is the same cap going on
    (blind21 tune facility-s1 dc04's demand-response cap, 0x4 at 1,770-1,815 MHz crossing
    ``cap_clock_drop`` back and forth after a save's two idle samples, its throttle_seen re-told
    60 s after the let-go: cap39's every-newer-throttle_seen reading, and a first try of this
    one on the told onset, replaced its wave and isolated the node power)."""
    signals = self._device.get(unit, {})
    cap, seen = signals.get("power_cap"), signals.get("throttle_seen")
    if cap is None:
        return None if seen is None else (seen, seen.onset_ts)
    resumed = self._cap_resumed.get(unit)
    if resumed is not None and resumed > cap.onset_ts and seen is not None:
        return seen, resumed
    return cap, cap.onset_ts


def _site_joined(self, node: str, now: float, out: list[Alert]) -> None:
    """``node``'s cap wave began: a node paged for its own cap (its join wait over with
    no other node's wave) whose wave began within ``impact_onset_s`` of this one may now
    be the site's.  Its page is withdrawn -- resolved at once, saying why -- when the
    site's cap on ``facility_cap_nodes`` nodes or more (with it) explains every slow rank
    it holds, as :meth:`_fleet_explains` would have had the wave been seen before the
    page; the ranks are held as the site's from then on.  revB32 4: a site's cap rolled
    out node by node (a BMC/Redfish loop), its second node 45 s after its first, paged
    the first at +49.7 s and nothing undid it -- a four-node site cap pages nobody.  A
    wait of ``impact_onset_s`` would undo no page, but hold every node capped alone
    ~15 s more (blind19 replicas-s0/s2); this costs a page that fires for seconds on a
    slow roll-out only.  Two nodes' caps stay each node's own (revB31 2's S2)."""
    wave = self._cap_waves.get(node)
    if wave is None:
        return
    window = self.cfg.impact_onset_s
    near = {n for n, (onset, _, _) in self._cap_waves.items()
            if n != node and abs(onset - wave[0]) <= window}
    if len(near) + 1 < self.cfg.facility_cap_nodes:
        return  # (no site's yet)
    for p in [p for p in self.problems.values() if p.scope.node in near
              and p.scope.level == "node" and p.status == "firing"
              and p.topic == ISOLATION and p.kind == "slow_node" and p.cause == "power"]:
        self._withdraw_for_site(p, now, out)


def _withdraw_for_site(self, p: Problem, now: float, out: list[Alert]) -> None:
    """Resolve ``p``, a node's power page, at once when the site's cap explains all it
    holds now (:meth:`_site_joined`); its slow ranks go back to the site's hold, and stay
    there while the node's cap wave lasts (``_site_withdrawn``): the site's caps ending
    before the node's re-fired the page -- fire / resolve / fire on one key for one cap
    (revA33 2).  A new wave on the node may page it again."""
    if p.latched:
        return
    slows: list[tuple[Finding, Finding]] = []
    partners: list[str] = []
    for key in p.active:
        signal, _, unit = key.partition("@")
        g = self._device.get(unit, {}).get(signal)
        if g is None:
            continue
        if signal == "slow_rank":
            cap = self._device.get(unit, {}).get("power_cap")
            site = self._site_explains(g, cap, now) if cap is not None else []
            if not site or cap is None:
                return  # (a rank the site does not explain: the page stands)
            slows.append((g, cap))
            partners = site
        elif not (signal in _THROTTLES and _reason_bits(g) == 0x4):
            return  # (anything else under the page: it stands)
    if not slows:
        return
    for key in p.active:
        self._owner.pop(key, None)
    node = p.scope.node
    self._resolve_now(p, now, out, "resolved_because", (
        f"withdrawn: SW power caps as deep began on {', '.join(partners)} within "
        f"{self.cfg.impact_onset_s:.0f} s of {node}'s, seen after this page -- the "
        f"site's power management rolled out node by node, not {node}'s own limit: "
        f"nothing to drain"))
    wave = self._cap_waves.get(node or "")
    if wave is not None:
        self._site_withdrawn[node or ""] = wave[0]
    for slow, cap in slows:
        self._fleet_explains(slow, cap, float(cap.evidence.get("clock_drop") or 0.0), now)


def _site_explains(self, slow: Finding, cap: Finding, now: float) -> list[str]:
    """The other nodes of a site's cap (``facility_cap_nodes`` with the slow rank's) that
    explain ``slow`` under its GPU's SW cap ``cap``, by :meth:`_power_impact` and
    :meth:`_fleet_explains`'s terms ([] when it does not)."""
    node = slow.scope.node
    wave = self._cap_waves.get(node or "")
    drop = float(cap.evidence.get("clock_drop") or 0.0)
    window = self.cfg.impact_onset_s
    if (node is None or wave is None or _reason_bits(cap) != 0x4
            or not _found_alike(slow) or not _within_cap(slow, drop)
            or drop > wave[1] + self.cfg.cap_clock_drop
            or slow.onset_ts < wave[0] - window or abs(wave[0] - cap.onset_ts) > window):
        return []
    partners = self._fleet_cap(node, wave[0], drop, now)
    return partners if len(partners) + 1 >= self.cfg.facility_cap_nodes else []


def _fleet_cap(self, node: str, onset: float, depth: float, now: float) -> list[str]:
    """Other nodes whose cap wave (:meth:`_note_wave`) began within ``impact_onset_s``
    of ``onset``, is not ``cap_clock_drop`` shallower than ``depth``, overlaps this one
    and lasts (capped at ``now``, or last capped at ``onset`` or after and within
    ``impact_onset_s`` of ``now``) and is no node's own power page (at most 4).  A wave
    that ended before this one began shares no limit with it: kept up to
    ``FACILITY_CAP_MEMORY`` half-lives for the sustained rule, it read a node's own BMC
    cap 25 s after another node's routine dip as the site's and held its page ~12 min,
    past the cap's end (the lead's round-31 review, revB31 1); a node paged for its own
    cap is no partner of a site's (revB31 2).  Nor is one whose cap ended a minute ago
    while this one goes on: the site let go, what stays capped is the node's own (it was
    held as the site's until the ended waves were pruned, 480-1380 s later -- cap32's
    open item).  Ended within ``impact_onset_s`` and the cap-clear telling delay
    (``throttle_clear_samples`` samples) of this node's own cap's end as told, or of
    ``now`` while it is capped: both ends are told that late, so a site let go node by
    node 100 s apart paged its last node 9 s after its own cap ended (revA33 3)."""
    window, alike = self.cfg.impact_onset_s, depth - self.cfg.cap_clock_drop
    own = self._cap_waves.get(node)
    ref = now if own is None or self._capped(node) else min(now, own[2])
    recent = max(onset, ref - window - self.cfg.throttle_clear_samples * self._cadence(node))
    near = [n for n, (o, d, last) in self._cap_waves.items()
            if n != node and abs(o - onset) <= window and d >= alike
            and (last >= recent or self._capped(n)) and not self._own_power_page(n)]
    rolled = self._rolled_with(node, onset, depth, recent, set(near))
    if len(near) + len(rolled) + 1 >= self.cfg.facility_cap_nodes:
        near += rolled
    return near[:4]


def _rolled_with(self, node: str, onset: float, depth: float, recent: float,
                 but: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The nodes (not ``but``) whose cap wave is ``node``'s site's cap rolled over their job's
    nodes though begun ``impact_onset_s`` or more apart (or paged as its node's own): the
    two overlap (the other capped now, or last capped since ``recent`` -- :meth:`_fleet_cap`),
    as deep within half ``cap_clock_drop`` (the same limit), on nodes of one job.

    A site's cap rolling over a job's 8 nodes -- each capped 150 s, the next 60 s after --
    never has two nodes begun together, so each node was paged as its own limit 44 s into its
    cap, node-000..004 one by one (revA45 F5, tests/test_revA45.py): a wave lasts while any
    of its nodes is capped, and a node capped alike meanwhile joins it, its first node's own
    page or not.  Counted only with ``facility_cap_nodes`` nodes in all (:meth:`_fleet_cap`):
    two nodes' caps 45 s apart stay two pages (tests/test_cap33.py, revB31 2's S2), a node
    with one such partner waits ``impact_onset_s`` more for a third (:meth:`_fleet_explains`).
    Not a cap that ended before this one began (revB31 1), nor one twice as deep (revB31 2:
    a node's own 18 % beside an 8.5 %)."""
    placement = self._placement
    jobs = {j for j, _ in placement.on_node.get(node, {})}
    if not jobs:
        return []
    half = self.cfg.cap_clock_drop / 2
    return [n for n, (o, d, last) in self._cap_waves.items()
            if n != node and n not in but and abs(d - depth) <= half
            and (last >= recent or self._capped(n))
            and any(j in jobs for j, _ in placement.on_node.get(n, {}))]


def _own_power_page(self, node: str) -> bool:
    """An isolation slow_node/power firing on ``node`` (its own cap, brake or PSU)."""
    p = self._firing_isolation(Scope.of_node(node), "slow_node")
    return p is not None and p.cause == "power"


def _fleet_explains(self, slow: Finding, cap: Finding, drop: float, now: float) -> bool:
    """Whether a slow rank whose GPU's SW power cap (0x4 alone) explains it is left
    unpaged for the site's power management: True when explained so, or held until
    that can be told.

    A limit lowered on most busy GPUs of several nodes at once -- a demand-response
    event, a rack's PDU budget, a scheduler's power capping -- is a facility action, no
    node's fault: isolating a node takes work out and the cap stays (blind21 D1: a row's
    GPUs capped to ~500 W within 25 s for 12-15 min, each GPU's depth following its own
    demand, isolated node by node as 'the node's power limit').  So a cap that is part of
    its node's wave, begun within ``impact_onset_s`` of another node's wave as deep (two
    nodes: a shared limit, as :meth:`_node_cap` reads it), explains a rank slow alike
    with its node's others (``node_wide``, or ``node_alarmed`` -- what a run told again
    grown carries, its mates no longer new: common._found_alike; revA38 F1, a site's cap on
    3 of 8 nodes at 30 s polls: a rank held as the site's, told again at 1.09x on one
    noisy step, was isolated power at its GPU -- the node's clock, not one GPU's), slow since
    the wave began (``impact_onset_s`` allowed) and within the clock loss -- with no
    routine discount: capping noted as routine during the wave, before the rank was found
    slow under its moving peer median, is the wave's.  Nobody is paged; the rank is
    looked at again every ``benign_grace_s`` / 2 until its run ends, and paged if still
    slow ``flap_window_s`` after a cap on ``facility_cap_nodes`` nodes or more last
    explained it (_slow_due).  Two nodes' caps begun together explain it for
    ``flap_window_s`` from the first explanation, then each is its node's own (this
    explained nothing more: :meth:`_power_impact` pages the node's power limit) -- the
    hold was re-armed at every look before, so a node's own cap begun with one
    unrelated node's was never paged while both lasted (revB31 2); blind21 D1's row caps
    (4-5 nodes) last 12-15 min, its ranks' runs 1-80 s more.

    Not the site's: a cap ``cap_clock_drop`` deeper than its node's wave (a GPU's own), a
    GPU capped alone on its node (pcap29), a rank slow alone under its node's shared cap
    (power round 12), any never-routine reason (0x80: blind21 G2's PSU).  Held: the
    node's wave with no other yet -- ``site_cap_join_s`` and its next sample after that
    for another node's wave to be seen (a site's cap reaches its nodes within ~25 s:
    blind21 D1's tune logs show the first partner wave 1-5 s after the first, the last
    30 s; it waited ``impact_onset_s``, as the sustained-cap rule :meth:`_node_cap`
    does, before -- blind19 replicas-s0/s2 a node's own cap paged 76-80 s after it
    began, 2.7-6.5 s before d1cap); a GPU's cap while its node has no wave
    (yet) -- ``why_wait_s`` for its siblings' samples of the same poll (the page is its
    node's anyway: its ranks are slow alike), as a TP1 node's (:meth:`_hold_for_poll`).
    A node capped alone is paged so ~44 s after its cap's sample (at 10 s; ~69 s at
    30 s), a GPU capped alone in a TP node 3 s after; the site's other nodes' waves
    begun within ``impact_onset_s`` of its own but seen after that withdraw the node's
    page (:meth:`_site_joined`: a cap rolled out node by node, revB32 4)."""
    node, unit = slow.scope.node, slow.scope.key
    if node is None:
        return False
    if not (_found_alike(slow) or self._mates_found_alike(slow)):
        return self._hold_for_mates(slow, cap, now)
    window = self.cfg.impact_onset_s
    active = self._device.get(unit, {}).get("slow_rank") is slow
    wave = self._cap_waves.get(node)
    if wave is not None and drop <= wave[1] + self.cfg.cap_clock_drop and (
            slow.onset_ts >= wave[0] - window) and (
            abs(wave[0] - cap.onset_ts) <= window or unit in self._fleet_held):
        partners = self._fleet_cap(node, wave[0], drop, now)
        withdrawn = self._site_withdrawn.get(node) == wave[0]
        if partners or withdrawn:
            held = self._fleet_held.get(unit)
            if held is None or len(partners) + 1 >= self.cfg.facility_cap_nodes:
                self._fleet_held[unit] = now
            elif now >= held + self.cfg.flap_window_s:
                # (two nodes' caps this long: each its own -- revB31 2; a withdrawn node
                # capped on flap_window_s past the site's last say: its own, paged again)
                return False
            if (active or self._slow_wait.get(unit) is slow) and slow.key not in self._owner:
                # (the waiting finding looked at again, its run told again since -- slow
                # alone on its node, detector.steps.alone: held on, not dropped untimed)
                self._slow_wait[unit] = slow
                self._timer(now + self.cfg.benign_grace_s / 2, "slow", unit)
            return True
        interval = self._cadence(node)
        until = wave[0] + self.cfg.site_cap_join_s + 1.25 * interval + 1.0
        if self._rolled_with(node, wave[0], drop, wave[0]):
            until += window  # (a site's cap rolling on: a third node's wave may come)
    elif wave is None or cap.onset_ts > wave[0] + window:
        # (no wave of this cap yet: the node's last ended before it, its new one is formed
        # when its siblings' samples of the same poll come -- revA38 F1 seed 2, two of a
        # node's eight GPUs told first and the node isolated power beside the site's wave)
        until = cap.ts + self.cfg.why_wait_s
    else:
        return False
    if not active or slow.key in self._owner or max(now, self._clock) >= until:
        return False
    self._slow_wait[unit] = slow
    self._poll_hold[node] = max(until, self._poll_hold.get(node, until))
    self._timer(until, "slow", unit)
    return True


def _mates_found_alike(self, slow: Finding) -> bool:
    """Whether another rank of ``slow``'s job on its node is slow now, found alike with its
    node's others (:func:`_found_alike`): the node's ranks are slow together, ``slow`` told
    before them (:meth:`_hold_for_mates`)."""
    node = slow.scope.node
    for unit in self._units_of_node.get(node or "", ()):
        g = self._device.get(unit, {}).get("slow_rank")
        if g is not None and g is not slow and g.job == slow.job and _found_alike(g):
            return True
    return False


# Steps of a rank's own a node's mates are given to be found slow with it under its node's
# new cap wave (:meth:`_hold_for_mates`).
_MATES_STEPS = 3


def _hold_for_mates(self, slow: Finding, cap: Finding, now: float) -> bool:
    """Hold a rank found slow alone (not ``node_wide``) whose GPU's SW cap (0x4 alone) came
    with its node's others' -- its node's wave (:meth:`_note_wave`) begun with it, or a
    sibling's cap begun with it told and the poll's other samples still on their way
    (``why_wait_s``) -- until its node's ranks, slowed alike by the same cap, can be found
    slow too: ``_MATES_STEPS`` of its steps and a sampling interval after the wave began.
    Then :meth:`_fleet_explains` reads it with them (:meth:`_mates_found_alike`).

    blind21 tune facility-s3: a demand-response cap reached dc09's eight GPUs on one poll
    (its first node, 4-24 s before the row's others); rank 3, in a noise run since 20 s
    before, was told slow alone on the cap's first step and its GPU isolated power at once;
    its seven mates were found slow alike 2.5 s later.  A rank still alone when the hold
    ends is paged as before (its cap is its GPU's own: pcap29)."""
    node, unit = slow.scope.node or "", slow.scope.key
    if (self._device.get(unit, {}).get("slow_rank") is not slow or slow.key in self._owner
            or _reason_bits(cap) != 0x4):
        return False
    busy = {g for g, _ in self._placement.on_node.get(node, {}).values()}
    if len(busy) < 2:
        return False
    wave = self._cap_waves.get(node)
    if wave is not None and abs(wave[0] - cap.onset_ts) <= self.cfg.impact_onset_s:
        runs = int(slow.evidence.get("run_steps") or 0)
        period = (slow.ts - slow.onset_ts) / (runs - 1) if runs > 1 else 1.0
        until = max(cap.ts + self.cfg.why_wait_s,
                    wave[0] + 1.25 * self._cadence(node) + _MATES_STEPS * period)
    elif self._sibling_capped_with(unit, cap):
        until = cap.ts + self.cfg.why_wait_s
    else:
        return False  # (capped alone so far: its GPU's own, paged at once -- cap19)
    if max(now, self._clock) >= until:
        return False
    self._slow_wait[unit] = slow
    self._poll_hold[node] = max(until, self._poll_hold.get(node, until))
    self._timer(until, "slow", unit)
    return True


def _sibling_capped_with(self, unit: str, cap: Finding) -> bool:
    """Whether another GPU of ``unit``'s node is under a SW cap (0x4 alone) begun within
    ``impact_onset_s`` of ``cap``'s (:meth:`_cap_begun`)."""
    node = cap.scope.node
    for other in self._units_of_node.get(node or "", ()):
        begun = self._cap_begun(other) if other != unit else None
        if begun is not None and _reason_bits(begun[0]) == 0x4 and abs(
                begun[1] - cap.onset_ts) <= self.cfg.impact_onset_s:
            return True
    return False


def _grown_past_cap(self, slow: Finding, now: float) -> bool:
    """A run told again grown past what its GPU's SW power cap explains
    (:func:`_past_cap_now`) -- no longer the site's: a rank slowed twice a site's 6 % cap has a
    fault of its own (revA39 F5: held as the site's, looked at again until ``flap_window_s``
    past the cap's last say, and never paged).  A run within the cap (a ramp the cap's depth
    explains, blind21 D1's row caps, a capped rank's two noisy steps) stays held as before.

    The cap's depth is the deepest told on the GPU when it grew (:meth:`_cap_depth_at`) or
    told by the GPU's first sample after its growth began (:meth:`_cap_deepened`): a site
    whose budget is cut again deepens every capped GPU's cap at once -- the same move a
    second time, the clock and every capped rank's pace stepping together -- and the run's
    growth is that step, not a fault (revA40 F5: a site's 6 % wave deepened to 12 %, its
    ranks told grown at 1.15x against the 6 % told when the wave began: 1-3 capped nodes
    escalated slow_node/unknown in 8 of 8 runs, at the growth (30 s polls: the step's rows
    came before the sample showing the deeper clock) or at the wave's end (10 s polls: the
    deeper cap's verdict, cleared, no longer counted)).  So a grown run on a GPU still
    capped (0x4) is not past its cap ``now`` while :meth:`_deepening_wait` holds it -- until
    that sample when its node's mates or its wave grew with it, a growth's telling more
    alone: one sampling interval at most, and only where the GPU's reason is a SW power cap;
    a fault grown under a cap that stays as deep is paged when the sample shows it.  What must
    not page: a site's cap deepened or re-tightened on every GPU of its wave alike."""
    if not slow.evidence.get("grown_from"):
        return False
    unit = slow.scope.key
    grew = _grew_at(slow)
    due = self._sample_due(slow.scope.node or "", grew)
    depth = max(self._cap_depth_at(unit, slow.ts), self._cap_deepened(unit, grew, due))
    return _past_cap_now(slow, depth) and self._deepening_wait(slow, now) is None


def _deepening_wait(self, slow: Finding, now: float) -> float | None:
    """Until when a run grown past its GPU's SW cap as told (:meth:`_grown_past_cap`) stays
    the site's while the cap may have deepened with it (None: not held).

    A site's budget cut again deepens its wave's every capped GPU at once, and every capped
    rank's pace steps with it: another capped rank of the job held as the site's lately
    (``_fleet_held``) told grown past its own cap since the GPU's last sample before the
    growth (:meth:`_wave_grew_with`) is the wave moving -- held until the GPU's first sample
    after its growth is here (its depth then: :meth:`_cap_deepened`).  None yet: held a
    growth's telling more (``_GROWN_BACK_STEPS`` of its steps) for the wave's other ranks'
    growth to be told -- a fault of the GPU's own grows alone, and is paged then.  Only while
    the GPU is still capped (0x4) and that sample is not in.  Its node's other ranks stepped
    up with it (``node_grown``, detector.steps) are the same move seen on one node."""
    node, unit = slow.scope.node or "", slow.scope.key
    grew = _grew_at(slow)
    due = self._sample_due(node, grew)
    if due is None or now >= due or not self._capping_now(unit):
        return None
    if slow.evidence.get("node_grown") or self._wave_grew_with(slow, grew - self._cadence(node)):
        return due
    told = slow.ts + (slow.ts - grew)  # (as long again as its growth took to be told)
    return told if now < told else None


# Ranks held as a site's (``_fleet_held``) read for a wave's growth (a bound per look).
_WAVE_RANKS = 4096


def _wave_grew_with(self, slow: Finding, since: float) -> bool:
    """Whether another rank of ``slow``'s job held as a site's lately (``_fleet_held``) was
    told grown past its GPU's SW cap as told (:func:`_past_cap_now`) at ``since`` or later:
    the site's wave moving, not one GPU (:meth:`_deepening_wait`)."""
    for unit in islice(self._fleet_held, _WAVE_RANKS):
        g = self._device.get(unit, {}).get("slow_rank")
        if (g is not None and g is not slow and g.job == slow.job and g.ts >= since
                and g.evidence.get("grown_from")
                and _past_cap_now(g, self._cap_depth_at(unit, g.ts))):
            return True
    return False


def _site_look(self, slow: Finding, now: float) -> float:
    """When a slow rank held as the site's (:meth:`_held_for_site`) is looked at again: every
    ``benign_grace_s`` / 2, or sooner when its growth's hold ends (:meth:`_deepening_wait`)."""
    again = now + self.cfg.benign_grace_s / 2
    until = self._deepening_wait(slow, now)
    return again if until is None else min(again, until)


# A run is told grown after detector.steps' _GROWN_STEPS (2) steps in a row past twice its
# told excess: its growth began about this many of its steps before the finding's time (the
# step before the first counted one allowed for).
_GROWN_BACK_STEPS = 3


def _grew_at(slow: Finding) -> float:
    """About when a run told again grown (``grown_from``) began its growth: its finding's time
    less :data:`_GROWN_BACK_STEPS` of its steps (its run's mean step period)."""
    runs = int(slow.evidence.get("run_steps") or 0)
    period = (slow.ts - slow.onset_ts) / (runs - 1) if runs > 1 else 0.0
    return slow.ts - _GROWN_BACK_STEPS * period


def _cap_deepened(self, unit: str, grew: float, due: float | None) -> float:
    """The deepest SW power cap (0x4 alone) on ``unit`` begun by the GPU's first sample after
    ``grew`` (``due``: when that sample is here; None: any) and on, or let go, at ``grew`` or
    after -- a cap finding on the GPU (its sustained ``throttle`` verdict too), or the last
    one cleared (``_benign``, ``_throttled``, kept with when it ended): the cap a run grown
    at ``grew`` ran under (:meth:`_grown_past_cap`).  0.0 when none is known."""
    signals = self._device.get(unit, {})
    told = [(g, math.inf) for s, g in signals.items() if s in _CAPPING or s == "throttle"]
    for kept in (self._benign.get(unit), self._throttled.get(unit)):
        if kept is not None:
            told.append(kept)
    last = math.inf if due is None else due
    return max((float(g.evidence.get("clock_drop") or 0.0) for g, ended in told
                if ended >= grew and g.onset_ts <= last and _reason_bits(g) == 0x4),
               default=0.0)


def _held_for_site(self, slow: Finding, now: float) -> bool:
    """A slow rank a site's cap explained lately (``_fleet_held``: within ``flap_window_s``
    of its last say, :meth:`_fleet_explains`) and not grown past it since
    (:meth:`_grown_past_cap`): the site's, no fault -- looked at again, never grouped with a
    rank paged beside it (revA39 F5: a GPU's hidden fault on a node of a site's cap wave,
    its seven capped mates held as the site's, was escalated as the node)."""
    held = self._fleet_held.get(slow.scope.key)
    return (held is not None and now < held + self.cfg.flap_window_s
            and not self._grown_past_cap(slow, now) and not self._site_let_go(slow, now))


def _site_let_go(self, slow: Finding, now: float) -> bool:
    """Whether the site's cap that held ``slow`` (its node's wave and the waves begun within
    ``impact_onset_s`` of it) let go everywhere ``impact_onset_s`` or more before ``now``: no
    node of it capped now (any 0x4 on any GPU: :meth:`_capped`), each last told capped that
    long ago.  A rank still slow then is no cap's: its run outlived the whole site's cap by a
    minute (cap40: a hidden +9 % under a site's 6 % cap, never told grown past it, was held
    ``flap_window_s`` past the cap's last say and paged as its node 640-740 s after the cap
    let go).  The whole site's, not the node's alone: a demand-response cap on a node whose
    saves' idle samples clear its throttle for minutes goes on on the other nodes (blind21
    tune facility-s1 dc04: released on its node's let-go, gpu:dc04/2 was escalated 12 s
    before its run ended)."""
    node = slow.scope.node
    wave = self._cap_waves.get(node or "")
    if node is None or wave is None:
        return False
    window = self.cfg.impact_onset_s
    for n, (onset, _, last) in self._cap_waves.items():
        if (n == node or abs(onset - wave[0]) <= window) and (
                last > now - window or self._capped(n)):
            return False
    return True


def _site_lately(self, slow: Finding, now: float) -> bool:
    """A slow rank a site's cap explained within ``flap_window_s`` (``_fleet_held``): the
    node mates it was found slow alike with (``node_wide``, ``node_alarmed``) were the
    cap's, so that is no host fault's sign -- paged, it is its GPU's (revA39 F5: a hidden
    fault grown past a site's cap, or still slow a minute after the cap let go, was
    escalated as its node, its mates capped with it and explained)."""
    held = self._fleet_held.get(slow.scope.key)
    return held is not None and now < held + self.cfg.flap_window_s


def _before_fleet_cap(self, slow: Finding, cap: Finding, drop: float, now: float) -> bool:
    """The slow rank was found slow (``slow.ts``) a sampling interval or more before its
    node's share of a site's cap began (its wave, another node's as deep begun with it,
    the GPU's cap part of it): the cap did not start its slowdown, so it explains
    nothing -- its page stays what it was (blind21 tune s3: a rank's noise run escalated
    at dc09/3 20 s before the row's cap reached dc09, then isolated slow_node/power there
    on the cap's verdict)."""
    node = slow.scope.node
    wave = self._cap_waves.get(node or "")
    if node is None or wave is None or abs(wave[0] - cap.onset_ts) > self.cfg.impact_onset_s:
        return False
    interval = self._cadence(node)
    return slow.ts < wave[0] - interval and bool(self._fleet_cap(node, wave[0], drop, now))


def _capped_with(self, slow: Finding, cap: Finding) -> list[int]:
    """The GPUs of the slow rank's node whose SW power cap (0x4 alone, ``clock_drop`` or
    deeper) began within ``impact_onset_s`` of ``cap``'s, when the rank is slow alike with
    its node's others (``node_wide``); [] otherwise."""
    node = slow.scope.node
    if not slow.evidence.get("node_wide") or node is None:
        return []
    window, deep = self.cfg.impact_onset_s, self.cfg.clock_drop
    gpus = []
    for unit in self._units_of_node.get(node, ()):
        for g in self._device.get(unit, {}).values():
            if (g.scope.level == "gpu" and g.signal in ("power_cap", "throttle_seen")
                    and _reason_bits(g) == 0x4
                    and float(g.evidence.get("clock_drop") or 0.0) >= deep
                    and abs(g.onset_ts - cap.onset_ts) <= window):
                gpus.append(g.scope.gpu)
                break
    return sorted(gpus)


def _capped_alone(self, slow: Finding, cap: Finding) -> bool:
    """The slow rank's GPU under a SW power cap (0x4 alone) ``cap_clock_drop`` or deeper
    while no other GPU of its node heard from shows a SW cap within ``cap_clock_drop`` of
    its depth: none at all (pcap29), or only the shallow routine capping of a fleet-wide
    limit -- a sibling's cap 10 points shallower is not the same limit (detector.thermal
    reads depth so: NodeTemps.cap_shared, P2/P5).  Twenty-ninth reporting corpus,
    powercap-fleet-s2902: node-005/4 at 0x4 28 % down, its rank 38 % slow, a 2.6 %
    routine dip 100 s before and GPU 3 beside it capped 3.5 % all along -- escalated
    'unknown' past the 34.7 % the discount left, isolated power 2 s later."""
    depth = float(cap.evidence.get("clock_drop") or 0.0)
    if _reason_bits(cap) != 0x4 or depth < self.cfg.cap_clock_drop:
        return False
    node, own = slow.scope.node, slow.scope.key
    if node is None:
        return False
    alike = depth - self.cfg.cap_clock_drop  # a sibling's cap this deep: the same limit
    for unit in self._units_of_node.get(node, ()):
        if unit == own or not unit.startswith("gpu:"):
            continue
        signals = self._device.get(unit, {})
        for s in ("power_cap", *_CAP_SIGNALS):
            g = signals.get(s)
            if g is not None and (s == "power_cap" or _reason_bits(g) & 0x4) and float(
                    g.evidence.get("clock_drop") or 0.0) >= alike:
                return False
    return True


def _routine_loss(self, slow: Finding) -> float:
    """The largest clock loss SW capping caused on the slow rank's GPU, before its run,
    while the rank kept its peers' pace (0.0: none seen)."""
    runs = int(slow.evidence.get("run_steps") or 0)
    period = (slow.ts - slow.onset_ts) / (runs - 1) if runs > 1 else 1.0
    before = slow.onset_ts - max(2.0, 3.0 * period)
    return max((d for _, last, d in self._routine_cap.get(slow.scope.key, ())
                if before - self.cfg.unit_idle_s <= last < before), default=0.0)


def _benign_explanation(self, f: Finding, now: float) -> Finding | None:
    """Power management on the same GPU, recent and large enough to explain a slow rank.

    A SW power cap that dips the clock 3 % makes a rank a few percent slower than its
    peers; that is the GPU doing its job, not a fault to page anyone about -- unless the
    dip is no deeper than the GPU's routine capping (:meth:`_routine_loss`), which cost
    the job nothing before.
    """
    minor, ended = self._benign.get(f.scope.key, (None, 0.0))
    if minor is None or ended < now - self.cfg.benign_grace_s:
        return None
    ratio = _pace(f) / _baseline(f)
    drop = minor.evidence.get("clock_drop", 0.0)
    if drop <= self._routine_loss(f):
        # The GPU ran through as deep a cap before, its rank at its peers' pace: the cap
        # costs this job nothing, so it explains no slowdown (powercap-fleet tuning
        # reproducer s9117: a GPU capped 6-7 % all along, an intermittent 10 % slowdown
        # excused by its 4 % cap at every look until its run ended, never paged).
        return None
    return minor if ratio - 1.0 <= 2.0 * drop + 0.03 else None
