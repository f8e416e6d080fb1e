"""The service's two stages without Kafka: telemetry partitions to findings, findings to alerts.

The in-process :class:`~detector.engine.Engine` is Monitors (events to
findings) plus a Correlator (findings to alerts) sharing one clock.  The
service splits them across a topic (see notes/service-spec.md):

- a :class:`SourcePartition` per telemetry topic-partition runs a
  :class:`~detector.monitors.Monitors` over that partition's messages and turns
  them into *findings messages*, each tagged with the partition's event-time
  clock when it was made, plus *watermarks* (the clock itself);
- a ``CorrelatorPartition`` (:mod:`detector.pipeline.correlator`) per findings
  partition merges the findings of every source in tag order and runs the
  :class:`~detector.correlate.Correlator` on the slowest live source's clock,
  so its timers (switch windows, escalation waits) see every finding made
  before they fire, whatever order the partitions are consumed in.  That is
  what makes the service raise the same problems as the in-process replay.

Both are plain objects driven by the Faust adapter (:mod:`detector.service.app`)
and tested without a broker: wall time comes in as ``now``, output goes out
as lists.  Both snapshot to data (:mod:`detector.statecodec`, never pickle), for
the snapshots that let a partition move.

Findings-topic messages (orjson), all with ``type``, and all but ``watermarks``
with ``source`` ("telemetry.ecc:3"):

- ``finding``: ``id`` [input offset, index] (unique per source, the same when
  the input is reprocessed, so repeats are dropped), ``tag`` (the source's
  clock when it was made), ``arrived`` (wall time, epoch seconds, at which
  the input record reached Kafka, for the end-to-end latency of the alerts it
  causes) and ``finding`` (:meth:`Finding.to_dict`);
- ``watermarks``: ``clocks``, a list of [source, ts, idle] — each source's
  clock (null before any input) and whether it is idle (caught up and quiet:
  it holds nobody back).  A worker sends one for all the sources a fetched
  batch touched, and one for all of its sources each heartbeat: one message,
  not one per partition, so the output producer and the correlator see a few
  messages a batch, not dozens;
- ``seen``: ``node`` and ``what`` (ecc, thermal, nic) — telemetry from that
  node reached the monitors, which the correlator cites in escalations;
- ``forget``: ``node`` and ``what`` — that node's monitors were pruned after
  ``unit_idle_s`` of silence (a fleet churns), so it is no longer "seen".
"""

from __future__ import annotations

import logging
import math
import zlib
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import orjson

from detector.decoding import decode
from detector.events import (
    ECC,
    NIC,
    THERMAL,
    InvalidMessage,
)
from detector.findings import Finding
from detector.monitors import Monitors
from detector.statecodec import UNSIGNED, SnapshotRefused, StateCodec
from detector.thresholds import Thresholds
from detector.topology import Topology

log = logging.getLogger(__name__)

DEFAULT_CLUSTER = "default"
# Findings made by an idle advance (no input record) are numbered after the
# record they follow: offset, then this plus a counter.
_IDLE_BASE = 1 << 30
_HW_SOURCE = {ECC: "ecc", THERMAL: "thermal", NIC: "nic"}
SNAPSHOT_VERSION = 1


class Undecodable(bytes):
    """The value of a record batch the Kafka client could not decompress (see faust_io)."""

    reason: str

    def __new__(cls, reason: str) -> Undecodable:
        obj = super().__new__(cls)
        obj.reason = reason
        return obj


class Emit(NamedTuple):
    """A message for the findings topic; ``partition`` None means every partition."""

    partition: int | None
    key: bytes
    value: bytes


class DeadLetter(NamedTuple):
    """An input message that broke the contract, with why and where it came from."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    reason: str


def findings_partition(cluster: str | None, partitions: int) -> int:
    """The findings partition of a cluster: all of a cluster's findings meet in one correlator."""
    return zlib.crc32((cluster or DEFAULT_CLUSTER).encode()) % partitions


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY, default=_fallback)


def _fallback(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    try:
        return float(obj)
    except (TypeError, ValueError):
        return str(obj)


def finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def partition_state(codec: StateCodec, blob: bytes, context: str, part: str, cls: type,
                    what: str) -> dict[str, Any]:
    """A stage's snapshot: :class:`SnapshotRefused` unless it holds a ``cls`` at ``part``."""
    state = codec.decode(blob, context)
    if type(state) is not dict or state.get("v") != SNAPSHOT_VERSION or type(
            state.get(part)) is not cls:
        raise SnapshotRefused("malformed", what)
    return state


# -- stage 1 ---------------------------------------------------------------------------


class SourcePartition:
    """One telemetry topic-partition: its Monitors, and how far into the partition they are."""

    def __init__(self, topic: str, partition: int, findings_partitions: int,
                 thresholds: Thresholds | None = None, topology: Topology | None = None,
                 *, now: float = 0.0, wall_clock: Callable[[], float] | None = None) -> None:
        self.topic = topic                  # the contract name, e.g. "telemetry.ecc"
        self.partition = partition
        self.source = f"{topic}:{partition}"
        self.findings_partitions = findings_partitions
        # wall_clock (epoch seconds): a partition's first records may not be far ahead of it
        self.monitors = Monitors(thresholds, topology, wall_clock=wall_clock)
        self.offset = -1                    # last input offset processed
        self._idle_seq = 0                  # findings made by idle advances since that offset
        self.last_input = now               # wall time of the last input (or of assignment)
        self._advanced_at = now             # wall time the clock was last moved by idleness
        self.caught_up = False              # the caller's view: nothing left to read for now
        self.events = 0
        self.invalid = 0

    # -- state ---------------------------------------------------------------------------

    def snapshot(self, codec: StateCodec = UNSIGNED) -> tuple[int, bytes]:
        """(last processed offset, state bytes); the topology is not included."""
        state = {"v": SNAPSHOT_VERSION, "monitors": self.monitors, "idle_seq": self._idle_seq,
                 "events": self.events, "invalid": self.invalid}
        return self.offset, codec.encode(state, f"{self.source}@{self.offset}")

    @classmethod
    def restore(cls, topic: str, partition: int, findings_partitions: int, offset: int,
                blob: bytes, topology: Topology | None = None, *, now: float = 0.0,
                codec: StateCodec = UNSIGNED,
                wall_clock: Callable[[], float] | None = None) -> SourcePartition:
        """The partition a snapshot saved; :class:`SnapshotRefused` if it is not one of ours."""
        state = partition_state(codec, blob, f"{topic}:{partition}@{offset}", "monitors",
                                Monitors, "not a telemetry partition's state")
        part = cls(topic, partition, findings_partitions, now=now)
        part.monitors = state["monitors"]
        part.monitors.attach(topology, wall_clock)
        part.offset = offset
        part._idle_seq = state["idle_seq"]
        part.events, part.invalid = state["events"], state["invalid"]
        return part

    @property
    def clock(self) -> float:
        return self.monitors.clock

    # -- processing ----------------------------------------------------------------------

    def process(self, records: Iterable[tuple[int, bytes | None, bytes | None, float | None]],
                now: float, emits: list[Emit], dead: list[DeadLetter], *,
                arrivals_per_s: float = 1.0) -> None:
        """Feed (offset, key, value, arrival) records in partition order; output is appended.

        ``arrival`` is when the record reached Kafka (its timestamp: epoch
        seconds, or ``arrivals_per_s`` units a second) or None.
        """
        mon = self.monitors
        topic, source = self.topic, self.source
        hw = _HW_SOURCE.get(topic)
        found: list[Finding] = []
        n_in = 0
        for offset, key, raw, arrived in records:
            if offset <= self.offset:
                continue  # already in the state (a fetch repeated after a seek)
            n_in += 1
            try:
                if raw is None or type(raw) is not bytes:
                    if isinstance(raw, Undecodable):
                        raise InvalidMessage(topic, raw.reason)
                    if raw is None:
                        raise InvalidMessage(topic, "message has no value (a tombstone?)")
                ev = decode(topic, raw)
                new_node = hw is not None and not mon.was_seen(ev.node, hw)
                mon.process(ev, found)  # InvalidMessage too: ts out of range
            except InvalidMessage as exc:
                self.invalid += 1
                dead.append(DeadLetter(topic, self.partition, offset, key, raw, str(exc)))
                if exc.nonfinite is not None:
                    try:
                        mon.process_nonfinite(exc.nonfinite, found)
                    except Exception as err:  # noqa: BLE001 - see _engine_error
                        self._engine_error(err, offset, key, raw, dead)
            except Exception as err:  # noqa: BLE001 - see _engine_error
                self._engine_error(err, offset, key, raw, dead)
            else:
                self.events += 1
                if new_node:
                    emits.append(Emit(findings_partition(ev.cluster, self.findings_partitions),
                                      b"seen", dumps({"type": "seen", "source": source,
                                                       "node": ev.node, "what": hw})))
            self.offset = offset
            self._idle_seq = 0
            if mon.forgotten:
                self._emit_forgotten(emits)
            if found:
                self._emit_findings(found, offset, 0, emits,
                                    None if arrived is None else arrived / arrivals_per_s)
                found.clear()
        if n_in:
            self.last_input = now
            self._advanced_at = now

    def _engine_error(self, exc: Exception, offset: int, key: bytes | None, raw: bytes | None,
                      dead: list[DeadLetter]) -> None:
        # A record the engine chokes on is dead-lettered like bad input: one poison
        # message must not stop a partition (and with it every job keyed there).
        log.error("engine failed on %s offset %d", self.source, offset, exc_info=exc)
        dead.append(DeadLetter(self.topic, self.partition, offset, key, raw,
                               f"{self.topic}: internal error in the engine: "
                               f"{type(exc).__name__}: {exc}"[:500]))

    def _emit_findings(self, found: list[Finding], offset: int, first: int,
                       emits: list[Emit], arrived: float | None = None) -> None:
        clock = self.monitors.clock
        parts = self.findings_partitions
        for k, f in enumerate(found, first):
            cluster = f.cluster or DEFAULT_CLUSTER
            # A NaN loss from a stream with no valid record yet has no clock: its own time.
            tag = clock if clock > -math.inf else f.ts
            emits.append(Emit(findings_partition(cluster, parts), cluster.encode(), dumps(
                {"type": "finding", "source": self.source, "id": [offset, k], "tag": tag,
                 "arrived": arrived, "finding": f.to_dict()})))

    def _emit_forgotten(self, emits: list[Emit]) -> None:
        # The node's cluster is not known any more: every correlator hears it.
        for node, what in self.monitors.forgotten:
            emits.append(Emit(None, b"seen", dumps({"type": "forget", "source": self.source,
                                                    "node": node, "what": what})))
        self.monitors.forgotten.clear()

    def idle_advance(self, now: float, idle_after_s: float, emits: list[Emit]) -> None:
        """With no input for ``idle_after_s`` (wall), let event time run on with the wall clock.

        Steps still waiting for ranks get decided, and the correlator's timers
        fire, when a stream goes quiet (at the end of a replay, or when a job
        stops) — in process, ``Engine.finish`` does this.
        """
        if not self.is_idle(now, idle_after_s) or not math.isfinite(self.monitors.clock):
            return
        found: list[Finding] = []
        self.monitors.advance(self.monitors.clock + (now - self._advanced_at), found)
        self._advanced_at = now
        if self.monitors.forgotten:
            self._emit_forgotten(emits)
        if found:
            self._emit_findings(found, self.offset, _IDLE_BASE + self._idle_seq, emits)
            self._idle_seq += len(found)

    def is_idle(self, now: float, idle_after_s: float) -> bool:
        """Caught up and quiet: its clock should hold no other source back."""
        if not self.caught_up:
            return False
        if not math.isfinite(self.monitors.clock):
            return True  # nothing ever read and nothing to read: nothing to wait for
        return now - self.last_input >= idle_after_s

    def clock_entry(self, now: float, idle_after_s: float) -> list[Any]:
        return [self.source, finite(self.monitors.clock), self.is_idle(now, idle_after_s)]

    def stats(self) -> dict[str, Any]:
        return {"offset": self.offset, "clock": finite(self.monitors.clock),
                "events": self.events, "invalid": self.invalid,
                "findings": self.monitors.counts["findings"]}


def watermarks(parts: Iterable[SourcePartition], now: float, idle_after_s: float) -> Emit:
    """The clocks of several sources in one message, for every findings partition."""
    return Emit(None, b"watermark", dumps({
        "type": "watermarks", "clocks": [p.clock_entry(now, idle_after_s) for p in parts]}))
