"""What several of the correlator's concerns share: :class:`Problem` and the helpers and
constants read in more than one module of detector.correlate.
"""

from __future__ import annotations

import math
from typing import Any

from detector.alerts import Scope
from detector.findings import Finding
from detector.playbook import reach
from detector.steps import _NODE_ALARMED
from detector.steps import _TP_LOCKED as TP_LOCKED
from detector.xid import REMAP_PENDING_XID, lookup

# Findings of throttling a slow rank's escalation never calls ruled out while recent.
_THROTTLES = ("throttle", "throttle_seen", "power_cap")

# The causes of a slow_node isolation standing on a GPU's clock held down: a power limit or
# brake, heat, or the GPU's own hardware (HW slowdown 0x8 with neither: detector.thermal's
# GpuThermal._own_cause; a clock stuck with no reason: detector.stuck_clock).  Its node's
# ranks slow alike with it are its consequence (Correlator._mates_cause), and a power or heat
# one raised at a GPU whose rank shares its replica inside the node is raised at the node
# (Correlator._gpu_unconfirmed; problems._NODE_HELD -- a GPU's own hardware stays the GPU's).
_HELD_CLOCK = ("power", "thermal", "gpu_hardware")

# NVML recovery actions that drain the node (detector.playbook.action_for)
_DRAINS = ("node_reboot", "drain_and_reset")
# Records of one ts are one instant: a row remap pending that would open a page (a reset at
# the job's end) waits this long of the stream's clock -- from its ts, or from the clock when
# its record came late -- for a worse verdict of the same instant (blind3: XID 92's record 20
# records after the flag's, the clock 1.5 s ahead of both), which then names the page's first
# message; else it is paged this much after its ts (_why_due).  Half of DESIGN's 1 s for a
# hardware event.
REMAP_INSTANT_S = 0.5


class Problem:
    """One problem: what fired, on which unit, backed by which active findings."""

    __slots__ = ("key", "topic", "kind", "cause", "scope", "onset_ts", "status", "active",
                 "evidence", "confidence", "job", "tenant", "cluster", "latched",
                 "quiet_since", "xid", "recovery_action", "extra")

    def __init__(self, key: str, topic: str, kind: str, cause: str, scope: Scope,
                 f: Finding, latched: bool) -> None:
        self.key, self.topic, self.kind, self.cause, self.scope = key, topic, kind, cause, scope
        self.onset_ts = f.onset_ts
        self.status = "firing"
        self.active: set[str] = set()
        self.evidence: list[dict[str, Any]] = []
        self.confidence = f.severity
        self.job, self.tenant, self.cluster = f.job, f.tenant, f.cluster
        self.latched = latched
        self.quiet_since = math.inf
        self.xid: int | None = None
        self.recovery_action: str | None = None
        self.extra: dict[str, Any] = {}

    def add(self, f: Finding, limit: int) -> None:
        """Record ``f`` as evidence (bounded: the first ``limit - 1`` items and the latest)."""
        item = {"signal": f.signal, "unit": f.scope.key, "ts": round(f.ts, 3), **f.evidence}
        first = not self.evidence
        if len(self.evidence) >= limit:
            self.evidence[-1] = item
        else:
            self.evidence.append(item)
        self.confidence = max(self.confidence, f.severity)
        if f.onset_ts < self.onset_ts:
            self.onset_ts = f.onset_ts
        code = (f.evidence.get("xid") if f.signal == "xid" else
                REMAP_PENDING_XID if f.signal == "row_remap_pending" else None)
        if (self.xid == REMAP_PENDING_XID and f.verdict and f.kind == "hardware"
                and code != REMAP_PENDING_XID and f.signal != "sbe_burst"):
            # (a row remap pending -- XID 63 or its flag -- names the action, a reset at the
            # job's end, only while it is the problem's only verdict: an SBE burst resting on
            # it needs that reset too; any other verdict names its own -- remap32)
            self.xid = None
        if code is not None and (first or code != REMAP_PENDING_XID) and (
                self.xid is None or reach(lookup(code).action) > reach(lookup(self.xid).action)):
            # (the XID whose remedy reaches furthest names the action: a GPU off the bus
            # under an open PCIe-replay isolation drains its node -- blind10 K6)
            self.xid = code
        if f.signal == "recovery_action" and self.recovery_action not in _DRAINS:
            # (never narrowed while open: the action only widens, so a recovery action
            # flapping on the GPU re-fires its page once, not at every flap)
            self.recovery_action = f.evidence.get("recovery_action")
        if self.job is None and f.job is not None and self.scope.level != "domain":
            # (an NVLink domain carries several jobs' and tenants' work: it names none)
            self.job, self.tenant = f.job, f.tenant


# How long a deep cap's onset is kept, in cap half-lives: the sustained-cap verdict comes a
# decayed count of cap_samples samples after its onset (~55 s at 5 s, ~140 s at 10 s).
FACILITY_CAP_MEMORY = 4.0


_CAP_SIGNALS = ("throttle_seen", "throttle_minor", "throttle")  # (Correlator._capped)
_CAPPING = ("throttle_minor", "throttle_seen", "power_cap")  # (Correlator._note_capping)


def _alike(f: Finding, mate: Finding) -> bool:
    """Whether slow ranks ``f`` and ``mate`` deviate from their peers alike (within
    ``TP_LOCKED`` of the larger deviation)."""
    a = math.log(max(float(f.evidence.get("compute_ratio_to_peers") or 1.0), 1e-9))
    b = math.log(max(float(mate.evidence.get("compute_ratio_to_peers") or 1.0), 1e-9))
    return a > 0.0 and b > 0.0 and abs(a - b) <= TP_LOCKED * max(a, b)


def _node_of(unit: str) -> str | None:
    """The node of a ``gpu:NODE/G``, ``nic:NODE/NIC[:PORT]`` or ``node:NODE`` unit key."""
    level, _, rest = unit.partition(":")
    if level not in ("gpu", "nic", "node") or not rest:
        return None
    return rest.split("/", 1)[0] if level != "node" else rest


def _reason_bits(seen: Finding) -> int:
    """A throttle_seen finding's reasons as NVML's bit mask (findings.EVIDENCE_FORMS: hex)."""
    return int(str(seen.evidence.get("throttle_reasons", "0x0")), 16)


def _remap_pending(f: Finding) -> bool:
    """A row remap pending: XID 63 or the flag (detector.gpu_health)."""
    return f.kind == "hardware" and (f.signal == "row_remap_pending" or (
        f.signal == "xid" and f.evidence.get("xid") == REMAP_PENDING_XID))


def _found_alike(f: Finding) -> bool:
    """Whether the GPU's slow rank ``f`` was found with other ranks of its job on its node
    slow alike (``node_wide``, detector.steps' JobMonitor._node_alike: how many of the node's
    ranks, itself counted), whether or not their own findings have reached the correlator.

    A hold in detector.steps can take the mates' findings back while the first one's goes
    on: the write-back hold after a checkpoint (JobMonitor._hold_after_event) holds a rank
    whose node's others are slow by half its own deviation, which the first found one's
    were not yet -- blind23 D2 (loop-s2): a host CPU throttle's gpu07/2 found with 2 mates
    at +3.1 %, the mates held 90 s, the GPU escalated alone and the node when they came,
    two pages for one host.  Two ranks or more slow alike are the node's (the rule for
    ranks found together), told at the first one's decision.

    So are ``_NODE_ALARMED`` ranks (itself counted) in alarmed slow runs alike (detector.steps'
    ``node_alarmed``: each over its own noise, at least half the found rank's excess, the
    mates waiting only on their effect size): a host fault ramping up, its first rank over
    the bar escalated at its GPU and the node 17 s later (blind23 D2, loop-s3: gpu08/6 at
    +3.1 %, its 7 mates alarmed at +1.4-2.3 %).  One mate alarmed is not enough: a lone GPU's
    fault with a healthy mate's chance run beside it stays the GPU's."""
    if f.scope.level != "gpu" or f.scope.node is None:
        return False
    wide, alarmed = f.evidence.get("node_wide"), f.evidence.get("node_alarmed")
    return ((type(wide) is int and wide >= 2)
            or (type(alarmed) is int and alarmed >= _NODE_ALARMED))


def _gpus_told(p: Problem) -> list[int]:
    """The GPUs a node's power or heat page was raised for (:meth:`Correlator._gpu_unconfirmed`):
    ``gpus_in_telemetry`` once a second joined it, else its one ``gpu_in_telemetry``."""
    first = p.extra.get("gpu_in_telemetry")
    return p.extra.get("gpus_in_telemetry") or ([] if first is None else [first])
