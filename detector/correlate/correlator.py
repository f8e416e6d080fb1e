"""The correlator: its state, its entry points (findings in, timers, prune) and the
idle/busy GPUs its sources tell.

:class:`Correlator` owns every piece of state (made in ``__init__``, snapshot whole by
detector.statecodec) and routes each finding in :meth:`~Correlator.on_finding`; what
it decides is in the concern modules (listed in detector/correlate/__init__.py),
whose functions its class body binds as its methods.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any

from detector import host_node, job_pace, lemon, nic_cnp
from detector.alerts import ESCALATION, Alert, Scope
from detector.cadence import MAX_JITTER_S
from detector.correlate.common import (
    _CAP_SIGNALS,
    _CAPPING,
    _THROTTLES,
    FACILITY_CAP_MEMORY,
    REMAP_INSTANT_S,
    Problem,
    _node_of,
    _reason_bits,
    _remap_pending,
)
from detector.correlate.ports import _without_mates
from detector.domain_brake import on_seen as _domain_seen
from detector.findings import Finding
from detector.gpu_missing import MAX_NODES as _MAX_GONE
from detector.gpu_missing import TOPICS as _GONE_TOPICS
from detector.gpu_missing import page_extra as _gone_extra
from detector.hang import on_gpus_busy, on_job_gone, on_long_stop
from detector.liveness import on_silent as _on_silent
from detector.liveness import prune as _prune_silent
from detector.part_window import PartWindows
from detector.recovery import Placement
from detector.thermal import MAX_IDLE_TOLD, PAUSE_S
from detector.thresholds import Thresholds
from detector.topology import Topology

# Evidence of a leaf congested by another workload (detector.network's ``congested`` port)
# and of a job waiting in its collectives (detector.job_comm's ``comm_wait``): joined at the
# leaf (Correlator._on_congestion), never counted as a part's trouble.
_CONGESTION = frozenset({"congested", "comm_wait"})
# The idle-GPU sets busy nodes are told with (Correlator._idle), one object each: a fleet's
# nodes idle alike -- none, or the same few GPUs -- so a node holds a reference, not a set of
# its own (review25: 216 B a node with none idle, 728 B with 8, 2,384 B with 64; 65,536
# nodes).  At most _IDLE_KINDS sets are shared; a topic naming more kinds keeps its own.
_IDLE_KINDS = 1024
_IDLE_SETS: dict[frozenset[int], frozenset[int]] = {}
_NEVER = -math.inf  # (one float for every "since before it was told": _note_slept)


def _shared_idle(idle: frozenset[int]) -> frozenset[int]:
    """The one shared object equal to ``idle`` (see _IDLE_SETS), or ``idle`` itself."""
    got = _IDLE_SETS.get(idle)
    if got is None:
        got = idle
        if len(_IDLE_SETS) < _IDLE_KINDS:
            _IDLE_SETS[idle] = idle
    return got


def _says_what_not_why(f: Finding) -> bool:
    """NVML's recovery action (and XID 154 announcing it) names a remedy, not a cause."""
    return f.kind == "hardware" and (f.signal == "recovery_action" or (
        f.signal == "xid" and f.evidence.get("xid") == 154))



class Correlator(PartWindows):
    """Turns findings into alerts; pure, event-time driven, snapshot-able (detector.statecodec)."""

    def __init__(self, cfg: Thresholds, topology: Topology | None = None,
                 seen: Callable[[str, str], bool] | None = None) -> None:
        self.cfg = cfg
        self.topology = topology
        self.seen = seen  # (node, source) -> whether that telemetry was ever received
        self.problems: dict[str, Problem] = {}
        self._owner: dict[str, str] = {}                     # finding key -> problem key
        self._device: dict[str, dict[str, Finding]] = {}     # unit key -> signal -> finding
        self._units_of_node: dict[str, set[str]] = {}
        self._timers: list[tuple[float, int, str, str]] = []
        self._seq = 0
        self._slow_wait: dict[str, Finding] = {}             # gpu unit key -> slow finding
        # finding key -> ("switch" | "domain", name, finding) held for a shared-part window
        self._group_wait: dict[str, tuple[str, str, Finding]] = {}
        self._group_open: set[tuple[str, str]] = set()
        self._benign: dict[str, tuple[Finding, float]] = {}  # gpu -> (minor throttle, ended)
        # gpu -> recent SW power capping its rank ran through at its peers' speed, one
        # (first ts, last ts, largest clock drop) per routine_cap_slot_s: what capping
        # routinely costs that GPU's clock, and the job nothing (_note_cap, _routine_loss)
        self._routine_cap: dict[str, list[tuple[float, float, float]]] = {}
        # (onset, node) of SW power caps seen at cap_clock_drop or deeper, by onset,
        # kept FACILITY_CAP_MEMORY half-lives: many nodes at once is facility power management
        self._deep_caps: list[tuple[float, str]] = []
        # node -> [onset, depth, last capped] of the SW power cap begun together on most of
        # its busy GPUs (its cap's wave), kept while the node is capped and
        # FACILITY_CAP_MEMORY half-lives after: several nodes' waves begun together are the
        # site's power management (_fleet_cap); gpu -> when such a cap on facility_cap_nodes
        # nodes or more last explained its slow rank, or two nodes' cap first did
        # (_fleet_explains), the rank held unpaged meanwhile
        self._cap_waves: dict[str, list[float]] = {}
        self._fleet_held: dict[str, float] = {}
        # gpu -> (since when, last seen) its SW power capping (0x4 alone: throttle_minor's 1 %
        # or deeper) has gone on, gaps shorter than a cap's clearing allowed: the capping a
        # creeping cap's slowdown began with (_note_capping, _cap_began_apart)
        self._cap_since: dict[str, tuple[float, float]] = {}
        # gpu -> when its SW capping began anew, a minute or more after its last was let go,
        # while the power_cap verdict of that last one still stood (_note_resumed, _cap_begun)
        self._cap_resumed: dict[str, float] = {}
        # node -> the onset of its cap wave whose node page was withdrawn as the site's
        # (_withdraw_for_site): its ranks stay the site's while that wave lasts (revA33 2)
        self._site_withdrawn: dict[str, float] = {}
        # node -> since when it has a busy GPU (detector.thermal's gpus_busy): the nodes that
        # may run free beside one whose busy GPUs are all under one cap (_node_cap)
        self._busy: dict[str, float] = {}
        # node in _busy -> its idle GPUs, as its source told them (gpus_busy's ``idle_gpus``):
        # which of a job's GPUs wait busy for a lost peer (detector.liveness._LayoutView)
        self._idle: dict[str, frozenset[int]] = {}
        # node in _busy -> GPU -> when it left the node's idle GPUs (told idle, then busy while
        # the node stayed busy; at most MAX_IDLE_TOLD): a GPU's busy run began then, the
        # others' when the node's did (_busy) -- busy_since
        self._woke: dict[str, dict[int, float]] = {}
        # node -> GPU -> when it joined the node's idle GPUs (told busy, then idle; -inf: idle
        # since before its node's busy run, or its source's first word); kept while the node
        # is in _busy or _calm, for the GPUs of its last told idle set (at most MAX_IDLE_TOLD)
        # -- idle_since
        self._slept: dict[str, dict[int, float]] = {}
        # node that had a busy GPU, its idle GPUs told, and has none any more -> since when:
        # its GPUs not in _slept idle since then -- idle_since
        self._calm: dict[str, float] = {}
        # Jobs whose hung rank was named (detector.hang): job -> [its scope, cluster].
        self._hangs: dict[str, list[Any]] = {}
        self._clock = -math.inf  # the newest record time fire_due was given (_node_cap)
        self._why_wait: dict[str, Finding] = {}   # recovery actions waiting for their cause
        self._heat_wait: dict[str, Finding] = {}  # gpu -> its thermal verdict, held (_hold_heat)
        # node -> until when a capped GPU's page waits for its siblings' samples of the same
        # poll, the node's other slow ranks with it (_hold_for_poll)
        self._poll_hold: dict[str, float] = {}
        # node -> the ts of the sample that brought in the last poll a GPU braked alone on
        # (detector.thermal's poll_in): a brake seen then waits for no sibling (_throttle_impact)
        self._polled: dict[str, float] = {}
        # node -> finding key -> NVLink verdict held while its mates may join (_hold_board)
        self._board_wait: dict[str, dict[str, Finding]] = {}
        # gpu or node -> (its last throttle finding, when it cleared): throttling a slow rank's
        # GPU showed within flap_window_s of its run is never "ruled out" (_ruled_out)
        self._throttled: dict[str, tuple[Finding, float]] = {}
        # (cluster, tenant, rack) -> nodes with a thermal throttle at node scope (_cooling)
        self._cooling_nodes: dict[tuple[str, str, str], dict[str, None]] = {}
        self._interval: dict[str, tuple[float, float]] = {}  # node -> (thermal interval s, ts)
        # node -> GPU -> the ts of the sample that told its cadence: a collector may sample a
        # node's GPUs each at its own phase (correlate.slow's _rank_sample)
        self._phases: dict[str, dict[int, float]] = {}
        # node -> GPU -> the interval it told with that sample: its own, where GPUs told apart
        # (a jittered collector's first gaps) make the node's the last one told (revA45 F3)
        self._cadences: dict[str, dict[int, float]] = {}
        self._nic_interval: dict[str, tuple[float, float]] = {}  # node -> (NIC interval s, ts)
        # node -> the most one of its thermal rows was seen behind its source's clock (s, at
        # most lateness_s): a slow rank's wait for a sample covers its delivery (_note_late_row)
        self._late_rows: dict[str, float] = {}
        # node -> the most one of its GPUs' rows was seen off their grid (detector.cadence's
        # jitter, ``sample_jitter_s``): a slow rank's wait for a sample covers it too
        self._jitter: dict[str, float] = {}
        self._placement = Placement()  # where ranks run: for each alert's granularity
        self._next_prune = -math.inf
        # node -> topic -> its ``silent`` finding: a node gone dark (detector.liveness)
        self._silent: dict[str, dict[str, Finding]] = {}
        # GPU -> topic -> its active gpu_missing finding (detector.gpu_missing; in the service
        # each topic's source tells its own; at most gpu_missing.MAX_NODES GPUs)
        self._gone: dict[str, dict[str, Finding]] = {}
        self._lemon = lemon.new_state()  # GPUs failing job after job (detector.lemon)
        # node -> job -> its rise of host time there (detector.host_node, _on_host_rise)
        self._host_rise = host_node.new_state()
        # leaf -> NIC unit -> its port's ``congested`` finding (bounded by the topology's
        # ports); job -> its ``comm_wait`` finding (at most MAX_COMM_WAITS): _on_congestion
        self._congested: dict[str, dict[str, Finding]] = {}
        self._comm_wait: dict[str, Finding] = {}
        # finding key -> a port's nic_throughput verdict dropped for its jobs keeping their
        # pace, until one is told waiting (correlate.ports._hold_for_pace; at most MAX_PACED)
        self._paced: dict[str, Finding] = {}
        # finding key -> a port's told ``cnp_sent`` / ``cnp_handled`` (at most
        # nic_cnp.MAX_KEPT): a NIC its job waits on (detector.nic_cnp)
        self._cnp: dict[str, Finding] = {}
        # gpu -> (its busy SM clock with no clock-event reason, when told): a slow rank's
        # clock against its job's other GPUs' (_held_clock); gone with the node's thermal
        # monitors (prune)
        self._clocks: dict[str, tuple[float, float]] = {}
        # job -> its compute stepped up on every rank alike (``job_pace``), and the GPU paged
        # for it (detector.job_pace; at most MAX_PACES jobs each)
        self._paces: dict[str, Finding] = {}
        self._pace_paged: dict[str, Finding] = {}
        # job -> when a GPU's finding may next look at its GPUs, and whether a look is set for
        # then (detector.job_pace.on_gpu: at most one look a LOOK_S, as many jobs as _paces)
        self._pace_look: dict[str, tuple[float, bool]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = {k: getattr(self, k) for k in self.__dict__}
        state["topology"] = None  # injected again on restore, never snapshotted
        state["seen"] = None
        return state

    # -- entry points --------------------------------------------------------------------

    def due(self) -> float:
        """Event time of the next timer (inf when none)."""
        return self.next_due

    @property
    def next_due(self) -> float:
        return self._timers[0][0] if self._timers else math.inf

    def fire_due(self, ts: float, out: list[Alert], hold: float | None = None) -> None:
        """Before the findings of a record at ``ts``: fire the timers due by then.

        The ordering rule of every way of running faultline (applied per
        finding tag by :meth:`CorrelatorPartition.release_to`, which the
        service and the in-process Engine both run): a timer due before a
        record is decided on what came before it.
        """
        if ts > self._clock:
            self._clock = ts
        timers = self._timers
        if timers and timers[0][0] <= ts:
            self.advance(ts, out, hold)

    def attach(self, topology: Topology | None,
               seen: Callable[[str, str], bool] | None) -> None:
        """Give a restored correlator what a snapshot never holds (see detector.statecodec)."""
        self.topology = topology
        self.seen = seen
        self._idle = {n: _shared_idle(v) for n, v in self._idle.items()}  # (decoded apart)

    def advance(self, now: float, out: list[Alert], hold: float | None = None) -> None:
        """Fire every timer due at or before ``now`` -- but a slow rank's wait for an
        explanation due after ``hold``: kept for a later call (a late source may still bring
        the explanation: CorrelatorPartition.release_to)."""
        if now >= self._next_prune:
            self.prune(now)
        timers = self._timers
        kept = None
        while timers and timers[0][0] <= now:
            entry = heapq.heappop(timers)
            due, _, what, key = entry
            if hold is not None and due > hold and what == "slow":
                if kept is None:
                    kept = []
                kept.append(entry)
                continue
            if what == "slow":
                self._slow_due(key, due, out)
            elif what in ("switch", "domain", "fabric"):
                self._group_due(what, key, due, out)
            elif what == "member":
                self._member_due(key, due, out)
            elif what == "congest":
                self._congestion_due(key, due, out)
            elif what == "cnp":
                nic_cnp.on_due(self, key, due, out)
            elif what == "forget":
                self._forget_due(key, due)
            elif what == "why":
                self._why_due(key, due, out)
            elif what == "heat":
                self._heat_due(key, due, out)
            elif what == "board":
                self._board_due(key, due, out)
            elif what == "hostnode":
                self._host_node_due(key, due, out)
            elif what == "pcie":
                self._pcie_due(key, due, out)
            elif what == "pace":
                job_pace.on_due(self, key, due, out)
            elif what == "cap":
                f = self._device.get(key, {}).get("throttle")
                if f is not None and "gpus_under_cap" in f.evidence:
                    self._node_cap(f, due, out, decide=True)
            else:
                self._resolve_due(key, due, out)
        if kept is not None:
            for entry in kept:
                heapq.heappush(timers, entry)

    def on_finding(self, f: Finding, out: list[Alert]) -> None:
        if f.signal == "sampling" and f.kind == "network":  # how often a NIC port is sampled
            interval = float(f.evidence.get("sample_interval_s", 0.0))
            if f.scope.node is not None and 0.0 < interval < PAUSE_S:
                # (a shared part's window waits for it: _may_be_failing; bounded there)
                self._nic_interval[f.scope.node] = (interval, f.ts)
            return
        if f.signal == "sampling":  # how often a GPU's thermal telemetry comes
            interval = float(f.evidence.get("sample_interval_s", 0.0))
            if f.scope.node is not None and interval < PAUSE_S:
                # (A gap of PAUSE_S or more is a pause, never told as a cadence
                # (detector.thermal): one on the findings topic is a forgery, and a slow rank
                # on the node would wait 1.25 of it for an explanation -- for ever at 1e300.)
                self._interval[f.scope.node] = (interval, f.ts)
                jitter = f.evidence.get("sample_jitter_s")
                if isinstance(jitter, (int, float)) and 0.0 < jitter <= MAX_JITTER_S and (
                        jitter > self._jitter.get(f.scope.node, 0.0)):
                    self._jitter[f.scope.node] = float(jitter)
                if f.scope.gpu is not None:
                    self._phases.setdefault(f.scope.node, {})[f.scope.gpu] = f.ts
                    self._cadences.setdefault(f.scope.node, {})[f.scope.gpu] = interval
                # Slow ranks on this node that waited as for an unknown cadence: the wait is
                # known now (their first timer, if later, finds them decided).
                for unit in sorted(self._units_of_node.get(f.scope.node, ())):
                    waiting = self._slow_wait.get(unit)
                    if waiting is not None:
                        self._timer(waiting.ts + self._explanation_wait(waiting), "slow", unit)
            return
        if f.signal == "link_up_beside":  # a port up beside a link down (detector.network)
            self._up_beside(f, out)
            return
        if f.signal == "nic_throughput" and f.active:
            if self._demand_unknown(f):
                return  # its Gb/s is its own GPUs' demand, not its mates' (correlate.ports)
            f = _without_mates(f)
        elif f.signal == "nic_throughput" and self._paced:
            self._paced.pop(f.key, None)
        if f.signal in _CONGESTION:  # a leaf congested, a job waiting: _on_congestion
            self._on_congestion(f, out)
            if f.signal == "comm_wait" and f.active:
                self._jobs_began_waiting(f, out)  # (ports dropped for its pace: correlate.ports)
            return
        if f.signal in nic_cnp.SIGNALS:  # a port's CNPs far above its siblings' (nic_cnp)
            nic_cnp.on_finding(self, f, out)
            return
        if f.signal == "silent":  # a node's records stopped on a topic (detector.liveness)
            if f.scope.level == "job" and "hang_s" in f.evidence:
                on_long_stop(self, f, out)  # (a job silent long: a hung rank? detector.hang)
                return
            _on_silent(self, f, out)
            if f.active and f.scope.level == "job" and "last_step_ts" in f.evidence:
                self._ports_lost_job(f, out)  # (ports low since its end: correlate.ports)
            return
        if f.signal == "poll_in":  # a poll a GPU braked alone on is in (detector.thermal)
            self._poll_in(f, out)
            return
        if f.signal == "gpu_missing":  # a GPU gone while its siblings report (gpu_missing)
            self._on_gpu_missing(f, out)
            return
        if f.signal == "sm_clock":  # a busy GPU's clock with no clock-event reason
            clock = f.evidence.get("sm_clock_mhz")
            if f.scope.level == "gpu" and isinstance(clock, (int, float)) and clock > 0:
                self._clocks[f.scope.key] = (float(clock), f.ts)
                job_pace.on_gpu(self, f, out)
            return
        if f.signal == "job_pace":  # a job's compute stepped up alike (detector.job_pace)
            job_pace.on_pace(self, f, out)
            return
        if f.signal == "gpus_busy":  # a node has a busy GPU, or has none any more
            node = f.scope.node
            if node is not None and f.active:
                before = self._idle.get(node) if node in self._busy else None
                self._busy.setdefault(node, f.ts)  # (since: told again as its idle GPUs change)
                idle = f.evidence.get("idle_gpus")
                if type(idle) is list and len(idle) <= MAX_IDLE_TOLD and all(
                        type(g) is int for g in idle):
                    now = self._idle[node] = _shared_idle(frozenset(idle))
                    self._note_woke(node, before, now, f.ts)
                    self._note_slept(node, before, now, f.ts)
                else:  # (a source before round 22, or too many to name: the node's only)
                    self._idle.pop(node, None)
                    self._woke.pop(node, None)
                    self._slept.pop(node, None)
                self._calm.pop(node, None)
            elif node is not None:
                self._busy.pop(node, None)
                if self._idle.pop(node, None) is not None:
                    self._calm[node] = f.ts  # (the rest of its GPUs idle from now: _slept)
                else:
                    self._calm.pop(node, None)
                    self._slept.pop(node, None)
                self._woke.pop(node, None)
            if node is not None and self._hangs:
                on_gpus_busy(self, node, f.ts)
            return
        if f.signal == "job_layout":  # where a job's ranks run (or, inactive: it ended)
            if f.job is not None and f.active:
                self._placement.learn(f.job, f.evidence.get("placement"), f.ts)
            elif f.job is not None:
                self._placement.forget(f.job)
                host_node.forget_job(self._host_rise, f.job)
                on_job_gone(self, f.job, f.ts)
                job_pace.on_job_gone(self, f.job, f.ts, out)
            return
        if f.signal == "host_rise":  # a job's host time risen on a node: _on_host_rise
            self._on_host_rise(f, out)
            return
        if f.signal in ("app_xid", "replica_split"):  # a GPU failing job after job
            self._lemon_strike(f, out)
            if f.signal == "replica_split":
                return
        unit = f.scope.key
        if f.ts >= self._next_prune:
            self.prune(f.ts)
        gone: Finding | None = None
        if f.active:
            signals = self._device.setdefault(unit, {})
            if f.signal == "throttle_seen" and f.signal not in signals:
                self._note_resumed(unit, f)  # (a GPU's SW capping begun anew: _cap_begun)
            signals[f.signal] = f
            if f.scope.node is not None:
                self._units_of_node.setdefault(f.scope.node, set()).add(unit)
        else:
            signals = self._device.get(unit)
            if signals is not None:
                gone = signals.pop(f.signal, None)
                if gone is not None and f.signal in _THROTTLES:
                    self._throttled[unit] = (gone, f.ts)
                    if f.signal == "power_cap":
                        self._cap_resumed.pop(unit, None)
                wave = self._cap_waves.get(f.scope.node or "")
                if wave is not None and gone is not None and (f.signal == "power_cap" or (
                        f.signal in _CAP_SIGNALS and _reason_bits(gone) & 0x4)):
                    wave[2] = max(wave[2], f.ts)  # (its cap let go then: _fleet_cap)
                if not signals:
                    del self._device[unit]
        if f.scope.level == "node" and f.signal in ("throttle", "throttle_seen"):
            self._note_cooling(f)
        if f.signal in _CAPPING and f.scope.level == "gpu":
            self._note_capping(f, gone)
        if f.active and (f.signal == "power_cap" or (
                f.signal in ("throttle_seen", "throttle_minor")
                and f.evidence.get("throttle_reasons") == hex(0x4))):
            # (A minor cap too: a GPU capped 2-5 % on and off all along, its rank at its
            # peers' pace, showed that depth of capping costs the job nothing, so it excuses
            # no later slowdown -- _benign_explanation; ninth reporting corpus, powercap=fleet:
            # a 10.4 % ramp on such a GPU excused at every look until its run ended.)
            self._note_cap(unit, f)
        if f.active and f.signal in ("throttle_seen", "power_cap") and f.scope.level == "gpu":
            job_pace.on_gpu(self, f, out)  # (a GPU capped as its job stepped up alike)
            if _reason_bits(f) == 0x4 and self._note_wave(f):
                self._site_joined(f.scope.node or "", f.ts, out)
        if f.signal == "throttle_seen" and f.active:
            self._bursts_under(f, out)
            if f.scope.level == "node":
                _domain_seen(self, f, out)  # (its NVLink domain braking: detector.domain_brake)
        if f.signal == "throttle_minor":
            self._benign[unit] = (f, math.inf) if f.active else (
                self._benign.get(unit, (f, 0.0))[0], f.ts)
        elif f.signal == "gpu_reset":
            self._gpu_reset(f, out)
        elif f.signal == "slow_rank":
            self._on_slow(f, out)
        elif f.signal == "power_cap":
            self._on_power_cap(f, out)
        elif f.signal == "throttle_seen" and f.active and unit in self._slow_wait:
            if unit in self._heat_wait and f.evidence.get("node_warm") is not True:
                self._heat_due(unit, f.ts, out)  # (its verdict, held for its mates: now)
            self._throttle_impact(self._slow_wait[unit], f.ts, out)
        elif f.signal == "throttle_seen" and f.active and unit in self._heat_wait and (
                f.evidence.get("node_warm") is not True):
            self._heat_due(unit, f.ts, out)  # (its mates shown level: its verdict now)
        elif f.signal == "throttle_seen" and f.active and f.scope.level == "node" and (
                self._heat_joined(f, out)):
            pass  # (a GPU's slow rank held for its node's heat: its node's page now)
        elif f.signal == "hot" and f.active and not f.verdict:
            self._on_hot(f, out)
        elif f.signal == "slow_burst" and f.active:
            self._on_burst(f, out)
        elif f.signal == "pcie_seen" and f.active:
            self._on_pcie_seen(f)
        elif f.kind == "network":
            self._on_network(f, out)
        elif f.signal in ("host_share", "host_events") and f.active:
            self._on_host_share(f, out)
        elif not f.active:
            self._group_wait.pop(f.key, None)
            self._cleared(f, out)
        elif f.signal == "host_late" and "lasting_s" in f.evidence:
            self._host_lasting(f, out)
        elif f.signal == "throttle" and "gpus_under_cap" in f.evidence:
            self._node_cap(f, f.ts, out)  # a cap on every busy GPU of its node: which nodes?
        elif f.signal == "throttle" and self._facility_cap(f):
            self._attach_if_firing(f)  # evidence, not a page: _facility_cap
        elif self._group_of(f) is not None:
            self._hold_for_group(f, out)
        elif f.verdict and f.kind == "sdc" and self._sdc_joins_gpu(f):
            pass  # (a one-GPU replica's SDC: evidence of its GPU's open page)
        elif f.verdict and f.kind == "sdc" and f.active and self._sdc_tie(f, out):
            pass  # (a DP-2 tie judged: its job page narrowed to the GPU, or widened back)
        elif f.verdict and _says_what_not_why(f) and not self._firing_on(f.scope, "hardware"):
            self._why_wait[f.key] = f
            self._timer(f.ts + self.cfg.why_wait_s, "why", f.key)
        elif f.verdict and f.active and _remap_pending(f) and not self._firing_on(
                f.scope, "hardware"):
            # A row remap pending opening a page (reset at the job's end) waits out the rest of
            # its instant: a worse verdict of the same ts (blind3: XID 92's record after the
            # flag's sample) names the action of the first message (REMAP_INSTANT_S) -- rail33
            self._why_wait[f.key] = f
            self._timer(max(f.ts, self._clock) + REMAP_INSTANT_S, "why", f.key)
        elif f.verdict:
            if not self._hold_heat(f, out):
                self._raise_verdict(f, out)
                if f.signal == "throttle" and f.scope.level == "node":
                    self._take_gpu_brakes(f, f.ts, out)  # (its GPUs paged alone before)
        else:
            self._attach_if_firing(f)

    def _on_gpu_missing(self, f: Finding, out: list[Alert]) -> None:
        """A GPU that stopped reporting while its siblings go on (detector.gpu_missing): one
        escalation at the GPU, resolved when it reports again or its node left the fleet --
        or, under an open hardware isolation of it (XID 79), that isolation's evidence."""
        if f.scope.level != "gpu" or f.scope.node is None:
            return
        p = self.problems.get(self.dedup_key(ESCALATION, "unattributed", f.scope, f.cluster))
        told = f.evidence.get("topics")
        topics = [t for t in told if t in _GONE_TOPICS] if type(told) is list else []
        unit = f.scope.key
        if not f.active:
            entry = self._gone.get(unit)
            if entry is not None:
                for t in topics:
                    entry.pop(t, None)
                if not entry:
                    del self._gone[unit]
            if p is not None and p.status == "firing":
                p.add(f, self.cfg.evidence_items)
                p.extra["resolved_because"] = (
                    f"no telemetry from {f.scope.node} for {self.cfg.unit_idle_s:g} s: it left "
                    "the fleet" if f.evidence.get("dropped") is True else
                    f"GPU {f.scope.gpu} of {f.scope.node} reported again")
                self._schedule_resolve(p, f.ts)
            else:
                self._attach_if_firing(f)
            return
        entry = self._gone.get(unit)
        if entry is None:
            if not topics or len(self._gone) >= _MAX_GONE:
                return
            entry = self._gone[unit] = {}
        for t in topics:
            entry[t] = f
        if any(t not in entry for t in _GONE_TOPICS):
            # Another topic's source still hears it (the service: one source a topic), or it
            # never reported there: a GPU whose thermal rows alone stop may be a blank DCGM
            # field under a rank that steps on (review round 13's four-GPU node) -- a card
            # that does not enumerate sends neither.
            return
        if self._firing_on(f.scope, "hardware"):
            self._attach_if_firing(f)  # the GPU off the bus is that isolation's evidence
        elif p is None or p.status != "firing":
            self._raise(ESCALATION, "unattributed", "unknown", f.scope, f, out, detected_ts=f.ts,
                        extra={**_gone_extra(f), "missing_on": sorted(entry)}, own=False)

    def prune(self, now: float) -> None:
        """Drop per-unit memory no decision can use any more: state stays bounded as a fleet churns.

        Findings only clear when their unit reports again, so a unit that
        left with a signal raised would be remembered for ever: after
        ``unit_fault_idle_s`` its signals go, unless a firing problem stands on
        them (a latched hardware problem waits for its GPU's reset).  Power
        management that ended, and node indexes of units with nothing active,
        go at once.
        """
        cfg = self.cfg
        self._next_prune = now + cfg.unit_idle_s / 4
        old = now - cfg.unit_fault_idle_s
        for unit in list(self._device):
            signals = self._device[unit]
            for signal in [s for s, f in signals.items() if f.ts < old]:
                key = self._owner.get(signals[signal].key)
                p = self.problems.get(key) if key else None
                if p is None or p.status != "firing":
                    self._owner.pop(signals.pop(signal).key, None)
            if not signals:
                del self._device[unit]
        for node in list(self._units_of_node):
            units = self._units_of_node[node]
            units.intersection_update(self._device)
            if not units:
                del self._units_of_node[node]
        idle = now - cfg.unit_idle_s
        seen = self.seen
        for cadence, source in ((self._interval, "thermal"), (self._nic_interval, "nic")):
            for node in [n for n, (_, ts) in cadence.items()
                         if ts < idle and (seen is None or not seen(n, source))]:
                # Told once per GPU (NIC port), so its age says nothing of the node: gone once
                # its monitors are (the source forgets them after unit_idle_s of silence;
                # review round 10: a 10 s node's cadence dropped an hour into a job, its slow
                # ranks then escalated as on a 30 s one).  Without that view, after
                # unit_idle_s.
                del cadence[node]
        for node in [n for n in self._late_rows if n not in self._interval]:
            del self._late_rows[node]  # (a node's delivery told with its cadence: gone with it)
        for node in [n for n in self._jitter if n not in self._interval]:
            del self._jitter[node]  # (the same)
        for node in [n for n in self._phases if n not in self._interval]:
            del self._phases[node]  # (its GPUs' phases, told with its cadence: the same)
            self._cadences.pop(node, None)
        nic_cnp.prune(self, idle, now)
        for node in [n for n, ts in self._busy.items()
                     if ts < idle and (seen is None or not seen(n, "thermal"))]:
            del self._busy[node]  # (told on a change only: gone with its monitors)
            self._idle.pop(node, None)
            self._woke.pop(node, None)
            self._slept.pop(node, None)
        for node in [n for n, ts in self._calm.items()
                     if ts < idle and (seen is None or not seen(n, "thermal"))]:
            del self._calm[node]  # (the same)
            self._slept.pop(node, None)
        for unit in [u for u, (_, ts) in self._clocks.items() if ts < idle and (
                seen is None or not seen(_node_of(u) or "", "thermal"))]:
            del self._clocks[unit]  # (the same)
        for unit in [u for u, seen in self._routine_cap.items() if seen[-1][1] < idle]:
            del self._routine_cap[unit]
        for unit in [u for u in self._cap_resumed if "power_cap" not in self._device.get(u, {})]:
            del self._cap_resumed[unit]
        for unit, (since, last) in list(self._cap_since.items()):
            if self._capping_now(unit):
                self._cap_since[unit] = (since, now)
            elif last < idle:
                del self._cap_since[unit]
        over = now - FACILITY_CAP_MEMORY * cfg.cap_half_life_s
        for node, wave in list(self._cap_waves.items()):
            if self._capped(node):
                wave[2] = now
            elif wave[2] < over:
                del self._cap_waves[node]
                self._site_withdrawn.pop(node, None)
        for unit in [u for u, ts in self._fleet_held.items() if ts < idle]:
            del self._fleet_held[unit]
        for node in [n for n, until in self._poll_hold.items() if until < now]:
            del self._poll_hold[node]
        for node in [n for n, ts in self._polled.items() if ts < now - self.cfg.why_wait_s]:
            del self._polled[node]  # (a brake seen by then waited its why_wait_s out)
        for rack, group in list(self._cooling_nodes.items()):
            for node in [n for n in group if Scope.of_node(n).key not in self._device]:
                del group[node]  # (its findings pruned above)
            if not group:
                del self._cooling_nodes[rack]
        for unit in [u for u, (_, ended) in self._throttled.items()
                     if ended < now - cfg.flap_window_s]:
            del self._throttled[unit]
        recent = now - cfg.benign_grace_s
        for unit in [u for u, (f, ended) in self._benign.items() if ended < recent or f.ts < old]:
            del self._benign[unit]
        for fkey in [k for k, p in self._owner.items() if p not in self.problems]:
            del self._owner[fkey]
        if self._silent:
            _prune_silent(self, now)
        if self.seen is None:
            return
        # A latched hardware problem waits for its GPU's reset.  A GPU whose monitors
        # were dropped (no telemetry for unit_fault_idle_s: it left the fleet) will
        # never be seen reset, so the problem resolves instead of firing for ever.
        for p in self.problems.values():
            if (p.status == "firing" and p.latched and p.kind == "hardware"
                    and p.scope.level in ("gpu", "node") and p.scope.node is not None
                    and not self.seen(p.scope.node, "ecc")):
                p.latched = False
                for fkey in p.active:
                    self._owner.pop(fkey, None)
                p.active.clear()
                p.extra["resolved_because"] = (
                    f"no telemetry from {p.scope.node} for {cfg.unit_fault_idle_s:g} s")
                self._schedule_resolve(p, now)

    # -- problems ------------------------------------------------------------------------

    def gpu_idle(self, node: str, gpu: int) -> bool | None:
        """Whether ``gpu`` of ``node`` idles by its source's word (``gpus_busy``); None for a
        busy node whose idle GPUs were not told (a source before round 22, or too many)."""
        if node not in self._busy:
            return True
        idle = self._idle.get(node)
        return None if idle is None else gpu in idle

    def busy_since(self, node: str, gpu: int) -> float | None:
        """Since when ``gpu`` of ``node`` has been busy without a break its source told
        (``gpus_busy``): when it left the node's idle GPUs, or when the node got a busy GPU;
        None when it idles or its idle state is not told (:meth:`gpu_idle`)."""
        if self.gpu_idle(node, gpu) is not False:
            return None
        return self._woke.get(node, {}).get(gpu, self._busy[node])

    def idle_since(self, node: str, gpu: int) -> float | None:
        """Since when ``gpu`` of ``node`` has idled without a break its source told
        (``gpus_busy``): when it joined the node's idle GPUs, or when the node's last busy GPU
        idled; -inf when it idled before its source first told it; None when it is busy or
        that is not told (:meth:`gpu_idle`)."""
        if node in self._busy:
            return self._slept.get(node, {}).get(gpu) if self.gpu_idle(node, gpu) else None
        calm = self._calm.get(node)
        return None if calm is None else self._slept.get(node, {}).get(gpu, calm)

    def _note_slept(self, node: str, before: frozenset[int] | None, now: frozenset[int],
                    ts: float) -> None:
        """A busy node's idle GPUs told (``before``: those told last while it was busy; None:
        it was not, or they were not told): those that joined them idled at ``ts``; at the
        start of a busy run, those idle keep their time from the node's calm (_calm), if any."""
        slept = self._slept.get(node)
        if before is None:
            calm = self._calm.get(node)
            old = slept if calm is not None and slept is not None else {}
            if now:
                since = _NEVER if calm is None else calm
                self._slept[node] = {g: old.get(g, since) for g in now}
            elif slept is not None:
                del self._slept[node]  # (no GPU idle: no map kept -- proportionate, review25)
            return
        if slept is None:
            if not now - before:
                return
            slept = self._slept[node] = {}
        for g in before - now:
            slept.pop(g, None)
        for g in now - before:
            slept[g] = ts
        if not slept:
            del self._slept[node]

    def _note_woke(self, node: str, before: frozenset[int] | None, now: frozenset[int],
                   ts: float) -> None:
        """A busy node's idle GPUs told again (``before``: those told last while it was
        busy; None: it was not, or they were not told): those that left them woke at ``ts``."""
        woke = self._woke.get(node)
        if before is None:  # (every GPU of it busy since the node's busy run began: _busy)
            if woke is not None:
                del self._woke[node]
            return
        if woke is None:
            if not before - now:
                return  # (none woke: no map kept)
            woke = self._woke[node] = {}
        for g in now:
            woke.pop(g, None)
        for g in before - now:
            if g in woke or len(woke) < MAX_IDLE_TOLD:
                woke[g] = ts
        if not woke:
            del self._woke[node]

    # Its other methods, a module a concern (see detector/correlate/__init__.py): functions of those
    # modules bound here -- one class, one MRO, every lookup as when they stood here.
    from detector.correlate.explain import (
        _explain_node,
        _explain_waiting,
        _repage,
        _resolve_now,
        _supersede,
        _superseded,
    )
    from detector.correlate.hardware import (
        _board_due,
        _board_page,
        _board_reset,
        _board_troubled,
        _fold_gpu_pages,
        _hold_board,
        _hold_for_ecc,
        _join_board,
        _lemon_strike,
        _lone_dropped,
        _lone_due,
        _on_pcie_seen,
        _pcie_due,
        _pcie_impact,
        _pcie_page,
        _pcie_troubled,
        _pcie_verdict,
    )
    from detector.correlate.narrow import _narrow_node_page
    from detector.correlate.ports import (
        _demand_unknown,
        _jobs_began_waiting,
        _ports_lost_job,
        _stop_wait,
        _tenants_apart,
    )
    from detector.correlate.power import (
        _before_fleet_cap,
        _benign_explanation,
        _cap_began_apart,
        _cap_begun,
        _cap_deepened,
        _cap_depth_at,
        _cap_explains,
        _capped,
        _capped_alone,
        _capped_with,
        _capping_now,
        _clock_explains,
        _deepening_wait,
        _facility_cap,
        _fleet_cap,
        _fleet_explains,
        _grown_past_cap,
        _held_for_site,
        _hold_for_mates,
        _hold_for_poll,
        _low_limit_cap,
        _mates_found_alike,
        _node_cap,
        _note_cap,
        _note_capping,
        _note_resumed,
        _note_wave,
        _on_power_cap,
        _own_limit,
        _own_power_page,
        _power_impact,
        _rolled_with,
        _routine_loss,
        _running_free,
        _sibling_capped_with,
        _site_explains,
        _site_joined,
        _site_lately,
        _site_let_go,
        _site_look,
        _wave_grew_with,
        _withdraw_for_site,
    )
    from detector.correlate.problems import (
        _action_of,
        _alert,
        _apart_from_node_page,
        _attach_if_firing,
        _cadence,
        _cleared,
        _firing_isolation,
        _firing_on,
        _forget_due,
        _gpu_page_returns,
        _gpu_reset,
        _gpu_unconfirmed,
        _interval_of,
        _join_remedies,
        _named_by_node_page,
        _own,
        _quiet_needed,
        _raise,
        _raise_domain,
        _raise_verdict,
        _resolve_due,
        _schedule_resolve,
        _sdc_joins_gpu,
        _sdc_tie,
        _timer,
        _why_due,
        dedup_key,
    )
    from detector.correlate.slow import (
        _clock_policy,
        _ended_throttle,
        _explanation,
        _explanation_wait,
        _held_by_setting,
        _held_clock,
        _host_lasting,
        _host_node_due,
        _job_gpus,
        _job_units,
        _lone_clock,
        _mates_cause,
        _node_escalated,
        _node_sample_due,
        _node_verdict,
        _note_late_row,
        _of_job,
        _on_host_rise,
        _on_host_share,
        _on_slow,
        _open_brake,
        _open_hardware,
        _replica_across,
        _ruled_out,
        _sample_due,
        _slow_due,
        _slow_with,
        _throttled_near,
        _throttled_now,
        _unexplained_slow,
        _units_told,
    )
    from detector.correlate.thermal import (
        _brake_until,
        _burst_impact,
        _burst_sample_due,
        _bursts_under,
        _cooling,
        _cooling_key,
        _covers,
        _heat_due,
        _heat_held,
        _heat_joined,
        _heat_until,
        _hold_heat,
        _impact,
        _mate_heat_held,
        _node_heat_page,
        _node_throttle,
        _note_cooling,
        _on_burst,
        _on_hot,
        _poll_in,
        _rack,
        _take_gpu_brakes,
        _throttle_impact,
        _throttling_at,
        _warming,
    )
    from detector.correlate.trays import (
        _group_cause,
        _group_pending,
        _group_spans,
        _page_lone_reason,
        _pipe_cause,
        _tp_partners,
    )
