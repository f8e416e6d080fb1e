"""Findings: what a per-device or per-job monitor tells the correlator.

A monitor watches one stream (a job's steps, a GPU's ECC/XID or thermal
samples, a node's NIC ports) and reports *changes of state* — a signal becoming
active, getting worse, or clearing — never one message per event.  The
correlator turns findings into problems and alerts; keeping findings sparse is
what lets it sit on a single partition in the Kafka deployment.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Any, Literal, NamedTuple

import msgspec
from msgspec import Meta

from detector.alerts import CAUSES, KINDS, Scope
from detector.decoding import MAX_MESSAGE_BYTES
from detector.events import MAX_AHEAD_S, Finite, Name, OptFinite, OptIndex, OptName


class Finding(NamedTuple):
    """One change of state of one signal on one unit."""

    ts: float            # event time of the evidence that caused this change
    onset_ts: float      # event time of the first sample of the anomalous run
    signal: str          # what was seen: "xid", "dbe", "throttle", "slow_rank", "link_down", ...
    kind: str            # the alert kind this points to: hardware, network, slow_node, sdc
    cause: str           # the cause it names (``unknown`` when it names none)
    scope: Scope         # the unit it is about (gpu, nic, node, job ...)
    active: bool         # False: the signal cleared
    verdict: bool        # True: enough on its own to raise a problem; False: evidence only
    severity: float      # 0..1, how sure / how bad; feeds the alert's confidence
    evidence: dict[str, Any]
    job: str | None = None
    tenant: str | None = None
    cluster: str | None = None
    rank: int | None = None
    dp_rank: int | None = None
    escalate: bool = False  # needs a human even though the cause is known
    # A rank's place in tensor and pipeline parallelism (the step records' fields; None: not a
    # rank's finding): its TP group is the ranks of its job, replica and stage (stage44: the
    # correlator's detector.correlate.trays gathers a group spanning nodes by them).
    tp_rank: int | None = None
    pp_rank: int | None = None

    @property
    def key(self) -> str:
        """Identity of the signal on its unit: a later finding with the same key replaces it."""
        return f"{self.signal}@{self.scope.key}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, for the findings topic between the monitors and the correlator."""
        d = self._asdict()
        d["scope"] = self.scope.to_dict()
        return d


# -- the findings topic: what a correlator reads from the stages ---------------------------
#
# Workers read each other's findings from a Kafka topic, so a findings message is untrusted
# input like telemetry (DESIGN.md, "Bounds"): typed and bounded in one msgspec call, names
# printable, before it has any effect -- a refused message registers no source, moves no
# clock and joins no problem.  The evidence is free-form per signal; the keys the
# correlator reads must have the types it reads them as (EVIDENCE_TYPES).

MAX_EVIDENCE_ITEMS = 64           # keys of one finding's evidence
MAX_EVIDENCE_LIST = 1 << 17       # items of one evidence list (a 100k-rank job's layout)
_Key = Annotated[str, Meta(min_length=1, max_length=64)]
_Text = Annotated[str, Meta(max_length=4096)]
# an integer a snapshot can hold (msgpack: 64 bits, signed here); 10**30 was taken, and the
# next snapshot of the correlator holding it refused (revA34 F4)
_Int = Annotated[int, Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
_Scalar = Finite | _Int | bool | None | _Text
_Item = _Scalar | Annotated[list[_Scalar], Meta(max_length=64)]
_List = Annotated[list[_Item], Meta(max_length=MAX_EVIDENCE_LIST)]
# ... and a record of a few named numbers (a host_late run's line: steps' JobMonitor._host_trend;
# refused, the worker dropped the finding telling a leak's growth that the replay escalates on)
_Record = Annotated[dict[_Key, _Scalar], Meta(max_length=16)]
_Evidence = Annotated[dict[_Key, _Scalar | _List | _Record],
                      Meta(max_length=MAX_EVIDENCE_ITEMS)]
_Id = Annotated[int, Meta(ge=-(1 << 62), le=1 << 62)]
_Severity = Annotated[float, Meta(ge=0.0, le=1.0)]

# The evidence keys the correlator reads, and what it reads them as (int is a float too).
EVIDENCE_TYPES: dict[str, tuple[type, ...]] = {
    "baseline_ratio": (float, int), "clearly_slow_since": (float, int), "clock_drop": (float, int),
    "compute_ratio_to_peers": (float, int), "mean_ratio_over_run": (float, int),
    "raw_confidence": (float, int), "sample_interval_s": (float, int), "run_steps": (int,),
    "sample_jitter_s": (float, int),  # a GPU's rows off their grid (detector.cadence)
    "noise_sigma": (float, int),  # a slow rank's step noise (correlate._pace_noise)
    "xid": (int,), "gross_outlier": (bool,), "recovery_action": (str,),
    # a job's compute stepped up alike (detector.job_pace)
    "compute_ms": (float, int), "usual_compute_ms": (float, int),
    "throttle_reasons": (str,), "next_diagnostic": (str,), "recommended_because": (str,),
    "placement": (list,), "gpus_under_cap": (int,), "node_ports": (int,),
    # a rank's told slowness grew with its node's others (detector.steps.slow._node_grown)
    "node_grown": (int,),
    "node_ports_down": (int,),
    # a node's silence on a topic (detector.liveness)
    "topic": (str,), "last_ts": (float, int), "nodes_heard_since": (int,), "jobs": (list,),
    # ... quiet at the fast bound where no steps are seen; a job's stop (dark20)
    "quiet": (str,), "last_step_ts": (float, int), "quiet_s": (float, int),
    "interval_s": (float, int), "bound_s": (float, int),
    # a job's slow replica of two (detector.steps.replica_split, read by detector.lemon)
    "replica_gpus": (list,),
    # a busy GPU's clock with no clock-event reason (detector.throttle, read by _held_clock)
    "sm_clock_mhz": (float, int),
    # a SW-capped GPU's draw beside its node's uncapped busy GPUs' (detector.thermal's
    # _below_mates, read by correlate.power's _own_limit)
    "power_w": (float, int), "mates_power_w": (float, int),
    # a busy node's idle GPUs (detector.thermal's gpus_busy, read by liveness._LayoutView)
    "idle_gpus": (list,),
    # -- the rest of what the correlator side reads (perf41: every ``f.evidence`` key read
    # outside the monitors' own modules is declared; tests/test_perf41.py fails on one not)
    # a slow rank's node: its mates alike / alarmed, their count (detector.steps)
    "node_wide": (int,), "node_alarmed": (int,), "node_mates": (int,), "alone_on_node": (int,),
    "grown_from": (float, int), "step": (int,), "basis": (str,),
    "host_excess_ms": (float, int), "host_excess_share": (float, int),
    # a NIC port's throughput verdict and its mates (detector.network, read by correlate.ports)
    "gbps": (float, int), "own_gbps": (float, int), "node_median_gbps": (float, int),
    "demand": (str,), "mates_gbps": (list,), "cnps_per_s": (float, int),
    "mates_sank": (list,),  # its mates that sank with it (odd42: correlate.ports._fell_alone)
    # a link's retrain / flap (detector.network, read by part_window)
    "rate_gbps": (float, int), "rate_before_gbps": (float, int), "beside_nic": (str,),
    "beside_port": (int,), "nic": (str,), "port": (int,), "since_down_s": (float, int),
    "comm_ratio": (float, int),  # a job's comm time over its usual (detector.job_comm)
    # heat and brakes (detector.thermal; gpus: the GPUs braking, or a node's GPU count)
    "gpu_temp_c": (float, int), "node_median_c": (float, int), "node_warm": (bool,),
    "throttling_since": (float, int), "gpus": (list, int),
    "rests_on": (str,),  # a corrected-error burst's grounds (detector.gpu_health)
    # a GPU's or a job's silence (detector.gpu_missing, detector.liveness)
    "topics": (list,), "dropped": (bool,), "step_period_s": (float, int),
    "nic_idle_ts": (float, int),  # a dark node's ports quiet since (liveness._idle_past_stop)
    "nodes_left": (list,), "left_step_ts": (float, int), "nodes_absent": (list,),
    "dark_with": (list,), "still_dark": (bool,), "confirm": (bool,), "job_stalled": (bool,),
    "steps_seen": (bool,),
    # the clusters a GPU row naming none may be of (pipeline.source's _unnamed, read by
    # pipeline.correlator: no cluster's key)
    "clusters_named": (list,),
}
# ... and the strings it parses, the form they must have (detector.thermal writes hex()).
EVIDENCE_FORMS: dict[str, re.Pattern[str]] = {"throttle_reasons": re.compile(r"0x[0-9a-f]{1,16}")}


class _WireFinding(msgspec.Struct, forbid_unknown_fields=True):
    ts: Finite
    onset_ts: Finite
    signal: Name
    kind: Literal[KINDS]  # type: ignore[valid-type]  (the contract's sets, from alerts)
    cause: Literal[CAUSES]  # type: ignore[valid-type]
    scope: dict[_Key, OptName | OptIndex]
    active: bool
    verdict: bool
    severity: _Severity
    evidence: _Evidence
    job: OptName = None
    tenant: OptName = None
    cluster: OptName = None
    rank: OptIndex = None
    dp_rank: OptIndex = None
    escalate: bool = False
    tp_rank: OptIndex = None
    pp_rank: OptIndex = None


class FindingMessage(msgspec.Struct, tag="finding", tag_field="type", forbid_unknown_fields=True):
    """A finding of ``source``, its id there (offset, index) and the event time it is
    correlated at (``tag``); ``arrived``: when its input reached Kafka."""

    source: Name
    id: tuple[_Id, _Id]
    tag: Finite
    finding: _WireFinding
    arrived: OptFinite = None


class WatermarksMessage(msgspec.Struct, tag="watermarks", tag_field="type",
                        forbid_unknown_fields=True):
    """Each source's clock (None: no record yet) and whether it is idle; ``explain``: of the
    sources later than the correlator's clock waits for, how far a wait for an explanation
    waits for them (lower than their clock; see CorrelatorPartition.release_to); ``ended``:
    of the idle sources with no record yet, when the fetch that found each at its end was
    sent (wall, epoch seconds; see CorrelatorPartition._said)."""

    clocks: Annotated[list[tuple[Name, OptFinite, bool]], Meta(max_length=1 << 16)]
    explain: Annotated[list[tuple[Name, Finite]], Meta(max_length=1 << 16)] = []
    ended: Annotated[list[tuple[Name, Finite]], Meta(max_length=1 << 16)] = []


class _NodeNote(msgspec.Struct, tag_field="type", forbid_unknown_fields=True):
    source: Name
    node: Name
    # ("steps": a step record of the node named ``cluster``, its first -- where the node runs,
    # for its rows naming none: CorrelatorPartition.cluster_of; seen only, never forgotten)
    what: Literal["ecc", "nic", "thermal", "steps"]
    # The node's cluster (clusters27: a correlator partition may keep clusters apart).
    cluster: Name | None = None


class SeenMessage(_NodeNote, tag="seen"):
    """Telemetry of kind ``what`` from ``node`` reached a monitor of ``source``."""


class ForgetMessage(_NodeNote, tag="forget"):
    """``source`` pruned ``node``'s ``what`` monitors after silence."""


class RewoundMessage(msgspec.Struct, tag="rewound", tag_field="type", forbid_unknown_fields=True):
    """``source``'s clock went back to ``ts``: its first clock was one node's, ahead of the
    others (Monitors._first_node); see CorrelatorPartition.rewound."""

    source: Name
    ts: Finite


FindingsMessage = FindingMessage | WatermarksMessage | SeenMessage | ForgetMessage | RewoundMessage
_DECODER = msgspec.json.Decoder(FindingsMessage)


def decode_message(raw: bytes | None, wall_s: float | None = None) -> FindingsMessage:
    """One findings-topic message, typed and checked; ValueError (with the reason) if it is
    not one a stage could have written.

    Its times are bounded by the wall clock (``wall_s``; the system's by default), here
    where a message is refused before it has any effect: a source's event time is never
    more than ``MAX_AHEAD_S`` ahead of it.  A telemetry partition takes its first clock only
    within that of the wall clock and never jumps past it (DESIGN.md "Bounds",
    ``Monitors.check_ahead``), and a replayed or simulated log is history.  So a watermark,
    a finding's tag or times, or an arrival further ahead is no stage's (but for a producer
    creeping ahead up to 300 s a record, whose times are as wrong): a forgery.  A watermark
    of 1e300 under a real source's name moved the correlator's clock there and erased every
    fault before it (room harden, 2026-12-02).  The correlator's own clock cannot bound
    them: it is the sources' watermarks, and in a replay or a test it is not wall time.
    """
    if raw is None:
        raise ValueError("message has no value")
    if len(raw) > MAX_MESSAGE_BYTES:
        raise ValueError(f"message of {len(raw):,} bytes (at most {MAX_MESSAGE_BYTES:,})")
    try:
        msg = _DECODER.decode(raw)
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc)) from None
    except msgspec.DecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    t = type(msg)
    latest = (time.time() if wall_s is None else wall_s) + MAX_AHEAD_S
    if t is WatermarksMessage:
        for name, ts, _ in msg.clocks:
            _printable("source", name)
            _not_ahead("watermark", ts, latest)
        for name, ts in msg.explain:
            _printable("source", name)
            _not_ahead("watermark", ts, latest)
        for name, _ in msg.ended:  # (a wall time: the correlator takes it no later than now)
            _printable("source", name)
        return msg
    _printable("source", msg.source)
    if t is RewoundMessage:
        _not_ahead("rewound", msg.ts, latest)
        return msg
    if t is not FindingMessage:
        _printable("node", msg.node)
        return msg
    f = msg.finding
    for what, ts in (("tag", msg.tag), ("ts", f.ts), ("onset_ts", f.onset_ts),
                     ("arrived", msg.arrived)):
        _not_ahead(what, ts, latest)
    _printable("signal", f.signal)
    for k in ("job", "tenant", "cluster"):
        _printable(k, getattr(f, k))
    # (a rank's place, as a monitor writes it -- JobMonitor._finding: both or neither, of a
    # rank; one alone would make a finding of no stage, trays' partner of every stage)
    if (f.tp_rank is None) is not (f.pp_rank is None) or (
            f.tp_rank is not None and f.rank is None):
        raise ValueError("tp_rank and pp_rank come both or neither, and only with a rank")
    # (the scope's names: Scope.from_dict, in finding_of)
    for k, v in f.evidence.items():
        _printable("evidence key", k)
        want = EVIDENCE_TYPES.get(k)
        if want is not None and v is not None and (type(v) not in want):
            raise ValueError(f"evidence {k!r} must be {' or '.join(w.__name__ for w in want)}, "
                             f"got {type(v).__name__}")
        if type(v) is dict:
            for kk, vv in v.items():
                _printable(f"evidence {k!r} key", kk)
                if type(vv) is str:
                    _printable(f"evidence {k!r}", vv)
        elif type(v) is str:
            _printable(f"evidence {k!r}", v)
            form = EVIDENCE_FORMS.get(k)
            if form is not None and not form.fullmatch(v):
                raise ValueError(f"evidence {k!r} must match {form.pattern}, got {v[:40]!r}")
    return msg


def _not_ahead(what: str, ts: float | None, latest: float) -> None:
    if ts is not None and ts > latest:
        raise ValueError(f"ts_out_of_range: {what} {ts!r} is more than {MAX_AHEAD_S:g} s ahead "
                         f"of the wall clock ({latest - MAX_AHEAD_S:.3f})")


def _printable(what: str, name: str | None) -> None:
    if name is not None and not name.isprintable():
        raise ValueError(f"{what} {name[:40]!r} holds control or bidirectional characters")


def finding_of(w: _WireFinding) -> Finding:
    """The :class:`Finding` of a decoded findings-topic message (ValueError: a bad scope)."""
    return Finding(w.ts, w.onset_ts, w.signal, w.kind, w.cause, Scope.from_dict(w.scope),
                   w.active, w.verdict, w.severity, w.evidence, w.job, w.tenant, w.cluster,
                   w.rank, w.dp_rank, w.escalate, w.tp_rank, w.pp_rank)


def keep_by_job(kept: dict[str, Finding], f: Finding, limit: int) -> str:
    """Keep an active job-scope finding ``f`` as its job's latest in ``kept`` (at most
    ``limit`` jobs, the oldest dropped first), or forget its job's (``f`` inactive): its job."""
    job = f.job or f.scope.job or ""
    kept.pop(job, None)
    if f.active:
        if len(kept) >= limit:
            del kept[next(iter(kept))]
        kept[job] = f
    return job
