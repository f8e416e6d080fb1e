"""One worker's pipeline, Kafka-free: fetched batches in, findings, dead letters and alerts out.

:class:`PipelineWorker` owns what a ``faultline serve`` worker holds between
fetches: a :class:`~detector.pipeline.source.SourcePartition` per telemetry
partition assigned to it (decode, dead letters, Monitors, the findings
codec), a :class:`~detector.pipeline.correlator.CorrelatorPartition` per
findings partition (the watermark-ordered Correlator), the watermarks and the
idle advance a heartbeat sends.  The Faust adapter (:mod:`detector.service`)
hands it batches and produces its :class:`WorkerOutput`; the stage tests drive
it over in-memory partitions the same way.  Every record is processed under a
guard (see the stages): one that fails becomes a dead letter or a counted
error, and its partition goes on.

Partitions are keyed by ``(topic, partition)`` (Faust's ``TP`` is such a
tuple); records are ``(offset, key, value, arrival)`` tuples in offset order.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from detector.alerts import Alert
from detector.events import MAX_AHEAD_S
from detector.pipeline.arrival import (
    ARRIVAL_RESOLUTION_S,
    EXPLAIN_LATE_S,
    OUT_OF_ORDER_S,
    ArrivalClock,
    Lateness,
    median,
)
from detector.pipeline.clusters import home_of, other_topologies
from detector.pipeline.correlator import CorrelatorPartition
from detector.pipeline.source import DeadLetter, Emit, SourcePartition, watermarks
from detector.statecodec import UNSIGNED, StateCodec
from detector.thresholds import Thresholds
from detector.topology import Topology

log = logging.getLogger("faultline.pipeline")

TopicPartition = tuple[str, int]
Record = tuple[int, bytes | None, bytes | None, float | None]
# at_end(tp, offset): when the request of the fetch that found ``tp`` at its end with
# ``offset`` processed was sent (epoch seconds), or None (not at its end, or not known).
AtEnd = Callable[[Any, int], "float | None"]


@dataclass
class WorkerOutput:
    """What one batch (or heartbeat) produced, for the adapter to send."""

    findings: list[Emit] = field(default_factory=list)       # to the findings topic
    # findings partition -> the key prefix to produce ``findings`` to it with: this worker's
    # correlator there took them in memory already (see PipelineWorker.local_findings)
    local: dict[int, bytes] = field(default_factory=dict)
    dead: list[tuple[str, DeadLetter]] = field(default_factory=list)  # (input topic, letter)
    alerts: list[tuple[Alert, float | None]] = field(default_factory=list)  # (alert, arrival)
    events: dict[str, int] = field(default_factory=dict)     # telemetry records per topic
    stale: int = 0                                           # records of partitions not held
    errors: int = 0                                          # batches that failed as a whole
    correlator_errors: int = 0                               # findings/timers it failed on
    # With stage tracing: per alert (parallel to ``alerts``), the wall times of its way
    # through the stages (see StageTrace.stamps), or None for one a timer decided.
    stages: list[dict[str, float | None] | None] = field(default_factory=list)


class StageTrace:
    """Wall-clock stamps (epoch seconds) of the way from an input record to its alert.

    Off by default (``PipelineWorker(trace=None)``): the hot path then pays one
    ``is None`` test per batch and per finding.  On, for an alert answering
    a finding, :meth:`stamps` gives

    - ``fetched``: the input's fetch response reached the consumer,
    - ``handed``: its batch was handed to the pipeline,
    - ``found``: the finding was produced (its findings message's Kafka timestamp),
    - ``findings_fetched`` / ``findings_handed``: the same for the findings message,
    - ``decided``: the correlator's clock released it and the alert was made;

    and ``source``: the input's partition ("telemetry.ecc:3"), ``offset`` its offset;
    ``held_by``: the sources whose clocks were behind the finding's tag just before the release
    that decided it (the lowest first, at most :attr:`HOLDERS`; empty when time
    let it go: an idle, timed-out or empty source's grace), so a slow
    "correlator clock" stage names the partition it waited for.

    Inputs and findings are looked up in this worker's memory, so a finding made by
    another worker has only the correlator's stamps.  Bounded: old entries are dropped.
    """

    BATCHES = 256           # remembered per source
    FINDINGS = 100_000      # remembered findings not yet released
    HOLDERS = 3             # sources named in held_by

    def __init__(self) -> None:
        # source -> (first offset, last offset, fetched, handed) of its recent batches
        self.inputs: dict[str, deque[tuple[int, int, float | None, float]]] = {}
        # (source, input offset, index) -> (found, findings fetched, findings handed, tag)
        self.findings: OrderedDict[tuple[str, int, int], tuple[
            float | None, float | None, float, float]] = OrderedDict()
        self._current: tuple[float | None, float | None, float] = (None, None, 0.0)

    def batch(self, source: str, first: int, last: int, fetched: float | None,
              handed: float) -> None:
        q = self.inputs.get(source)
        if q is None:
            q = self.inputs[source] = deque(maxlen=self.BATCHES)
        q.append((first, last, fetched, handed))

    def taken(self, source: str, fid: tuple[int, int], tag: float = math.inf) -> None:
        f = self.findings
        f[(source, fid[0], fid[1])] = (*self._current, tag)
        if len(f) > self.FINDINGS:
            f.popitem(last=False)

    def stamps(self, cause: tuple[str, int, int], decided: float,
               clocks: Mapping[str, float] | None = None) -> dict[str, Any]:
        """``clocks``: the clock of every source holding the correlator (not idle) just
        before the release, for ``held_by``."""
        source, offset = cause[0], cause[1]
        fetched = handed = None
        for first, last, f, h in reversed(self.inputs.get(source, ())):
            if first <= offset <= last:
                fetched, handed = f, h
                break
        found, ffetched, fhanded, tag = self.findings.pop(cause, (None, None, None, None))
        held = [] if tag is None or not clocks else sorted(
            (wm, name) for name, wm in clocks.items() if wm < tag)[:self.HOLDERS]
        return {"source": source, "offset": offset, "fetched": fetched, "handed": handed,
                "found": found, "findings_fetched": ffetched, "findings_handed": fhanded,
                "decided": decided, "held_by": [name for _, name in held]}


def holding(part: CorrelatorPartition) -> dict[str, float]:
    """Stage tracing: the clock of each source of ``part`` that holds it: every source with a
    clock, and an empty one not idle (-inf)."""
    return {name: -math.inf if src.wm is None else src.wm
            for name, src in part.sources.items() if src.wm is not None or not src.idle}


class PipelineWorker:
    """The stages of one worker over the partitions it holds."""

    def __init__(self, *, telemetry_topics: Mapping[str, str], findings_topic: str,
                 findings_partitions: int, expected_sources: Iterable[str] = (),
                 thresholds: Thresholds | None = None, topology: Topology | None = None,
                 hold_back_s: float = 0.25, idle_advance_s: float = 5.0,
                 source_timeout_s: float = 30.0, wall_clock: Callable[[], float] | None = None,
                 codec: StateCodec = UNSIGNED, trace: StageTrace | None = None,
                 local_findings: bool = False, home_cluster: str | None = None,
                 topologies: Mapping[str, Topology] | None = None) -> None:
        self.telemetry_topics = dict(telemetry_topics)  # topic name -> contract name
        self.findings_topic = findings_topic
        self.findings_partitions = findings_partitions
        self.expected_sources = list(expected_sources)
        self.thresholds = thresholds or Thresholds()
        self.topology = topology
        # The `cluster` value the topology describes, and records without one join: every
        # stage's home (detector.pipeline.clusters); None: each stage's first value read.
        self.home_cluster = home_cluster
        # other clusters' topologies, by value (checked here: a worker refuses to start)
        self.topologies = other_topologies(home_of(home_cluster), topologies)
        self.hold_back_s = hold_back_s
        self.idle_advance_s = idle_advance_s
        self.source_timeout_s = source_timeout_s
        self.wall_clock = wall_clock
        self.codec = codec
        self.trace = trace
        # A batch's findings and watermarks go straight to the correlators of findings
        # partitions this worker holds, not only through the topic and back (produce,
        # the broker's append, a fetch and a hand-over each: 50-60 ms p50 / 170 ms p99 on
        # a quiet 2-core box, seconds without a CPU; bench/kafka_throughput.py --stages).
        # The adapter then keys those messages with the correlator's local_tag (see
        # WorkerOutput.local) and the copies read back are passed over.
        self.local_findings = local_findings
        self._handed = 0.0                       # stage tracing: the current batch's
        self._fetched: Mapping[Any, float] = {}  # hand-over and fetch times
        self.sources: dict[Hashable, SourcePartition] = {}
        self.correlators: dict[Hashable, CorrelatorPartition] = {}
        # Event time this worker's inputs had reached by when they reached Kafka: what a
        # source fetched to its end can have got to (see reported_clock).  Not state.
        self.arrivals = ArrivalClock()
        self._at_end: dict[Hashable, float] = {}  # source -> its at_end (see process)
        # Per source, how far its batches were behind in event time: behind the worker's
        # inputs (net of _ahead), and behind their own arrival times; and how far the inputs'
        # event time ran ahead of their arrival times (see reported_clock).  Not state.
        self._late: dict[Hashable, tuple[Lateness, Lateness]] = {}
        self._ahead = Lateness()
        # Per source, (offset, t): a fetch sent at t (wall) found it at its end with `offset`
        # processed, so a record after `offset` reached Kafka after t whatever its timestamp
        # says (see _telemetry).  Without fetch ends, t is the hand-over that found it caught
        # up, less hold_back_s.  Not state.
        self._ended: dict[Hashable, tuple[int, float]] = {}
        self._fetch_ends = False  # the current batch came with at_end (see process)

    # -- partitions ----------------------------------------------------------------------

    def is_findings(self, tp: TopicPartition) -> bool:
        return tp[0] == self.findings_topic

    def new_partition(self, tp: TopicPartition, now: float
                      ) -> SourcePartition | CorrelatorPartition:
        """A fresh stage for ``tp`` (not yet held: the caller puts it in place)."""
        if self.is_findings(tp):
            return self._wired(CorrelatorPartition(
                tp[1], self.thresholds, self.topology, expected=self.expected_sources, now=now,
                source_timeout_s=self.source_timeout_s, empty_grace_s=self.idle_advance_s,
                fed_grace_s=self.hold_back_s, home=self.home_cluster,
                topologies=self.topologies))
        return SourcePartition(self.telemetry_topics[tp[0]], tp[1], self.findings_partitions,
                               self.thresholds, self.topology, now=now,
                               wall_clock=self.wall_clock, home=self.home_cluster,
                               topologies=self.topologies)

    def restore_partition(self, tp: TopicPartition, offset: int, blob: bytes, now: float
                          ) -> SourcePartition | CorrelatorPartition:
        """The stage a snapshot saved; raises (SnapshotRefused, ...) if it is not one of ours."""
        if self.is_findings(tp):
            return self._wired(CorrelatorPartition.restore(
                tp[1], offset, blob, self.topology, expected=self.expected_sources, now=now,
                source_timeout_s=self.source_timeout_s, empty_grace_s=self.idle_advance_s,
                fed_grace_s=self.hold_back_s, codec=self.codec, home=self.home_cluster,
                topologies=self.topologies, wall_clock=self.wall_clock))
        return SourcePartition.restore(self.telemetry_topics[tp[0]], tp[1],
                                       self.findings_partitions, offset, blob, self.topology,
                                       now=now, codec=self.codec, wall_clock=self.wall_clock,
                                       home=self.home_cluster, topologies=self.topologies)

    def _wired(self, part: CorrelatorPartition) -> CorrelatorPartition:
        """``part`` with this worker's wall clock (a watermarks message's ``ended`` is wall
        time, the stages' ``now`` the service's monotonic clock) and stage tracing."""
        part.wall_clock = self.wall_clock
        if self.trace is not None:
            part.taken = self.trace.taken
        return part

    # -- input ---------------------------------------------------------------------------

    def process(self, by_tp: Mapping[Any, list[Record]], now: float,
                caught_up: Callable[[Any, int], bool], *, arrivals_per_s: float = 1.0,
                fetched: Mapping[Any, float] | None = None,
                at_end: AtEnd | None = None) -> WorkerOutput:
        """One fetched batch: records by partition, each in offset order.

        ``caught_up(tp, offset)``: nothing after ``offset`` is in the partition yet
        (as far as the fetcher knows).  ``arrival`` is when a record reached
        Kafka, in units of ``1 / arrivals_per_s`` seconds (Kafka's ms: 1000).
        ``fetched``: with stage tracing, when each partition's fetch response came
        (epoch seconds; see :class:`StageTrace`).  ``at_end``: see :data:`AtEnd` and
        :meth:`reported_clock` (None: no source is let go that way).
        """
        out = WorkerOutput()
        touched = False
        trace = self.trace
        if trace is not None:
            self._stamp(by_tp, fetched or {}, arrivals_per_s)
        self._fetch_ends = at_end is not None
        for tp, records in by_tp.items():
            try:
                if self.is_findings(tp):
                    self._findings(tp, records, now, out)
                else:
                    touched |= self._telemetry(tp, records, now, caught_up, arrivals_per_s, out)
            except Exception:  # noqa: BLE001 - every record is guarded; this is a last net
                out.errors += 1
                log.exception("batch of %d records from %s failed", len(records), tp)
        if touched:
            # After every finding of the batch: the correlator may go as far as these.
            # All of this worker's sources, not only those touched: one left out would
            # hold the correlator's clock until the next heartbeat, with nothing new.
            # An empty one says afresh whether it is fetched to its end: the correlator
            # lets it go once it says so a moment after its topic had data (see
            # CorrelatorPartition), so what it says must be no older than this batch.
            for tp, part in self.sources.items():
                if part.clock == -math.inf:
                    self._caught_up(tp, part, caught_up, now)
            self._note_ends(at_end)
            out.findings.append(self._watermarks(now))
        if self.local_findings and out.findings:
            self._take_local(out, now)
        return out

    def _note_ends(self, at_end: AtEnd | None) -> None:
        """Every source's at_end afresh: a source with nothing new in this batch may have
        been found at its end by fetches since its last one."""
        ends = self._at_end
        ends.clear()
        if at_end is None:
            return
        ended = self._ended
        for tp, part in self.sources.items():
            sent = at_end(tp, part.offset)
            if sent is not None:
                ends[tp] = sent
                ended[tp] = (part.offset, sent)

    def _caught_up(self, tp: Hashable, part: SourcePartition, caught_up: Callable[[Any, int], bool],
                   now: float) -> None:
        """``part.caught_up`` afresh; without fetch ends, a partition caught up was at its end
        as of this hand-over, less ``hold_back_s`` (the fetch before it: see _ended)."""
        up = part.caught_up = caught_up(tp, part.offset)
        if up and not self._fetch_ends:
            wall = self.wall_clock() if self.wall_clock is not None else now
            ended = self._ended
            if len(ended) > len(self.sources):  # partitions gone with a rebalance
                self._ended = ended = {k: v for k, v in ended.items() if k in self.sources}
            ended[tp] = (part.offset, wall - self.hold_back_s)

    def _note_arrival(self, tp: Hashable, clock: float, arrival: float, now: float) -> None:
        """A batch of ``tp`` whose last record reached Kafka at ``arrival`` took its clock to
        ``clock``: into the ArrivalClock, and how far behind it was (see reported_clock)."""
        arrivals = self.arrivals
        arrivals.note(arrival, clock)
        if clock == -math.inf:
            return
        reached = arrivals.reached(arrival)  # >= clock: this batch is in it (unless folded)
        if reached == -math.inf:
            return
        if reached - arrival > MAX_AHEAD_S:
            # Event time further ahead of the arrival than any clock may be of another's (the
            # guard's bound): no arrival time but a producer's made-up CreateTime (1970).
            return
        late = self._late.get(tp)
        if late is None:
            if len(self._late) > len(self.sources):  # partitions gone with a rebalance
                self._late = {k: v for k, v in self._late.items() if k in self.sources}
            late = self._late[tp] = (Lateness(), Lateness())
        ahead = reached - arrival if reached > arrival else 0.0
        self._ahead.note(now, ahead)
        # Behind what had reached Kafka *before* this batch's last record: Kafka stamps in
        # milliseconds, so what is stamped in the same one is not known to have come first
        # -- a collector that paused and then sent everything at once stamps a burst in a
        # millisecond or a few, and its partitions whose last record came early in it were
        # measured as late as the burst was long, and waited for that long every time they
        # had nothing new, for the 30-60 s the Lateness keeps it (bench/clock_hold.py
        # --feed-stall): a burst, not a late delivery.
        before = arrivals.reached(arrival - ARRIVAL_RESOLUTION_S)
        late[0].note(now, (before - clock if before > clock else 0.0) - ahead)
        late[1].note(now, arrival - clock)

    def late_caps(self) -> tuple[float, float, float, float]:
        """The most a source is taken to be behind (see reported_clock): ``OUT_OF_ORDER_S``
        past the median of the sources' lateness -- behind the inputs, behind the arrival
        times -- and of the arrival times' own (0: a collector's or the broker's clock, not
        a node's); then the same two ``EXPLAIN_LATE_S`` past it, for the clock a wait for an
        explanation is held on.  Behind the arrival times, of two middle values the higher:
        a replay's event time, days behind them, is no clock that lags."""
        behind, lag = [0.0], [0.0]
        sources = self.sources
        for tp, (b, g) in self._late.items():
            if tp in sources:
                behind.append(b.value)
                lag.append(g.value)
        mid, mid_lag = median(behind), median(lag, upper=True)
        return (mid + OUT_OF_ORDER_S, mid_lag + OUT_OF_ORDER_S,
                mid + EXPLAIN_LATE_S, mid_lag + EXPLAIN_LATE_S)

    def reported_clock(self, tp: Hashable, part: SourcePartition, now: float,
                       caps: tuple[float, float, float, float] = (
                           math.inf, math.inf, math.inf, math.inf),
                       reached_by: dict[float, float] | None = None) -> tuple[float, float]:
        """The clocks a source's watermark reports: its own, or, when it has nothing new, the
        event time its next records must be past, if that is further -- once with the
        lateness capped at ``caps[:2]`` (the correlator's clock), once at ``caps[2:]`` (the
        clock a slow rank's wait for an explanation is held on: review round 12, C1).

        A source is known to have nothing new as of ``sent`` when a fetch sent then found
        it at its end (``at_end``), or, without that, ``hold_back_s`` before the wall clock
        when it is idle (caught up, quiet for ``hold_back_s``).  Its next records reach
        Kafka after ``sent``, less ``hold_back_s`` (the producers' skew, a linger), and are
        no further behind than its batches of the last ``Lateness.window_s`` were, per
        source -- never one clock for all: a collector delivering 2 s after event time is
        reported 2 s behind (DESIGN allows 5 s of disorder: the correlator waits for its
        records).  Two measures, the further of the two reported:

        - behind the event time the worker's inputs had reached by their arrival
          (:class:`ArrivalClock`): what follows a replay's time, however fast it is fed.
          A node whose clock is 10 s ahead takes that clock 10 s ahead of the arrival
          times: that much (``_ahead``, the highest of the window) is added to every
          source's lateness, kept net of it, so the node moves nobody's report but its
          own, even a source measured before its clock jumped;
        - behind the arrival times themselves (the collectors' or the broker's clocks):
          what goes on with time when the prompt sources fall quiet.

        Bounded: a source more than 5 s further behind than most (``late_caps``) is a
        clock that lags, not a delivery -- reported that far behind, it does not hold
        every alert of the cluster for as long as it lags.  A source that never had a
        record keeps the correlator's start-up rules; one with records fetched and not
        yet processed is not at its end, and holds at its own clock.  ``reached_by``: the
        ArrivalClock's answers of this hand-over (its sources share their fetches).
        """
        clock = part.clock
        if clock == -math.inf:
            return clock, clock
        late = self._late.get(tp)
        if late is None:
            return clock, clock  # no arrival noted for it: nothing to go on
        sent = self._at_end.get(tp)
        if sent is None:
            # Not known to be at its end.  With fetch ends that is what the fetches say (the
            # last one found records past its offset, or none answered yet): it holds --
            # its caught-up flag is as of its last hand-over, and a worker back from a stall
            # hands over some partitions' records before others', their inputs reaching far
            # past its clock (svc37: a thermal partition's watermark taken 20 s past records
            # of it in Kafka, a slow rank escalated unknown before its throttle arrived).
            if self._fetch_ends or not part.is_idle(now, self.hold_back_s):
                return clock, clock
            sent = self.wall_clock() if self.wall_clock is not None else now
            sent -= self.hold_back_s
        since = sent - self.hold_back_s
        if reached_by is None:
            reached = self.arrivals.reached(since)
        else:
            reached = reached_by.get(since)
            if reached is None:
                reached = reached_by[since] = self.arrivals.reached(since)
        behind, lag = late[0].value, late[1].value
        reached -= self._ahead.value
        main = reached - (behind if behind < caps[0] else caps[0])
        passed = since - (lag if lag < caps[1] else caps[1])
        if passed > main:
            main = passed
        if main <= clock:
            main = clock
        if behind <= caps[0] and lag <= caps[1]:
            return main, main  # (no lateness beyond the caps: the usual case)
        wait = reached - (behind if behind < caps[2] else caps[2])
        passed = since - (lag if lag < caps[3] else caps[3])
        if passed > wait:
            wait = passed
        return main, wait if wait > clock else clock

    def _watermarks(self, now: float) -> Emit:
        """The watermarks of every source (see reported_clock), with when the fetch that found
        each empty one at its end was sent (``ended``: the correlator lets an empty source go
        on what a fetch sent after the feed began found, not on when it was told: a starved
        fetcher's answers come seconds late -- svc37)."""
        ended = None
        if self._at_end:
            sources = self.sources
            ended = {sources[tp].source: sent for tp, sent in self._at_end.items()
                     if tp in sources and sources[tp].clock == -math.inf}
        if not self._late:
            return watermarks(self.sources.values(), now, self.hold_back_s, ended=ended)
        caps = self.late_caps()
        reached_by: dict[float, float] = {}
        return watermarks(self.sources.values(), now, self.hold_back_s,
                          [self.reported_clock(tp, part, now, caps, reached_by)
                           for tp, part in self.sources.items()], ended)

    def _take_local(self, out: WorkerOutput, now: float) -> None:
        """Hand ``out.findings`` to the correlators held here, in order, then release them."""
        targets = []
        topic = self.findings_topic
        for p in range(self.findings_partitions):
            part = self.correlators.get((topic, p))
            if part is not None:
                targets.append((p, part))
        if not targets:
            return
        trace = self.trace
        clocks = {p: holding(part) for p, part in targets} if trace is not None else {}
        if trace is not None:
            stamp = time.time()  # found, "fetched" and handed over at once
            trace._current = (stamp, stamp, stamp)
        for p, part in targets:
            for e in out.findings:
                if e.partition is None or e.partition == p:
                    part.take_local(e.value, now)
            out.local[p] = part.local_tag
        for p, part in targets:
            self._release(part, now, out, clocks.get(p))

    def _stamp(self, by_tp: Mapping[Any, list[Record]], fetched: Mapping[Any, float],
               arrivals_per_s: float) -> None:
        """Stage tracing: note when this batch's records were fetched and handed over."""
        trace = self.trace
        assert trace is not None
        handed = time.time()
        for tp, records in by_tp.items():
            if not records:
                continue
            if self.is_findings(tp):
                continue  # stamped per finding as the correlator takes it (see _findings)
            part = self.sources.get(tp)
            if part is not None:
                trace.batch(part.source, records[0][0], records[-1][0], fetched.get(tp), handed)
        self._handed = handed
        self._fetched = fetched

    def _telemetry(self, tp: Any, records: list[Record], now: float,
                   caught_up: Callable[[Any, int], bool], arrivals_per_s: float,
                   out: WorkerOutput) -> bool:
        part = self.sources.get(tp)
        if part is None:
            # Fetched before a rebalance took the partition: its new owner reads it.
            out.stale += len(records)
            return False
        dead: list[DeadLetter] = []
        ended = self._ended.get(tp)
        part.process(records, now, out.findings, dead, arrivals_per_s=arrivals_per_s)
        self._caught_up(tp, part, caught_up, now)
        if records:
            arrived = records[-1][3]
            if arrived is not None and arrived >= 0:
                arrived /= arrivals_per_s
                if ended is not None and ended[1] > arrived and records[0][0] > ended[0]:
                    # Not there when a fetch sent at ended[1] found the partition at its end:
                    # it reached Kafka after that, whatever its timestamp says.  A producer
                    # may stamp CreateTime with the metric's own time (Telegraf's
                    # outputs.kafka does by default, producer_timestamp = "metric"; Kafka
                    # Connect keeps a source's timestamps): taken for its arrival, a
                    # collector delivering 2 s late looked 0 s late (review round 12, C2).
                    # Topics created with LogAppendTime (kafka_io.topic_plan) need no floor.
                    arrived = ended[1]
                self._note_arrival(tp, part.clock, arrived, now)
        out.dead.extend((tp[0], d) for d in dead)
        out.events[tp[0]] = out.events.get(tp[0], 0) + len(records)
        return True

    def _findings(self, tp: Any, records: list[Record], now: float, out: WorkerOutput) -> None:
        part = self.correlators.get(tp)
        if part is None:
            out.stale += len(records)
            return
        trace = self.trace
        if trace is None:
            for offset, key, value, _ in records:
                part.on_message(offset, value, now, key)
            self._release(part, now, out)
        else:
            clocks = holding(part)  # before this batch's watermarks move them
            fetched = self._fetched.get(tp)
            for offset, key, value, ts in records:
                # The findings message's Kafka timestamp: when stage 1 produced it (ms).
                trace._current = (None if ts is None or ts < 0 else ts / 1000.0, fetched,
                                  self._handed)
                part.on_message(offset, value, now, key)
            self._release(part, now, out, clocks)

    def _release(self, part: CorrelatorPartition, now: float, out: WorkerOutput,
                 clocks: Mapping[str, float] | None = None) -> None:
        alerts: list[Alert] = []
        arrivals: list[float | None] = []
        errors = part.errors
        trace = self.trace
        if trace is None:
            part.release(now, alerts, arrivals)
        else:
            causes: list[tuple[str, int, int] | None] = []
            if clocks is None:
                clocks = holding(part)
            part.release(now, alerts, arrivals, causes)
            decided = time.time()
            out.stages.extend(None if c is None else trace.stamps(c, decided, clocks)
                              for c in causes)
        out.correlator_errors += part.errors - errors
        out.alerts.extend(zip(alerts, arrivals, strict=True))

    # -- time ----------------------------------------------------------------------------

    def heartbeat(self, now: float, caught_up: Callable[[Any, int], bool],
                  at_end: AtEnd | None = None) -> WorkerOutput:
        """Idle advance and the watermarks of every source, then every correlator's release."""
        out = WorkerOutput()
        self._fetch_ends = at_end is not None
        for tp, part in self.sources.items():
            self._caught_up(tp, part, caught_up, now)
            part.idle_advance(now, self.idle_advance_s, out.findings)
        if self.sources:
            self._note_ends(at_end)
            out.findings.append(self._watermarks(now))
        if self.local_findings and out.findings:
            self._take_local(out, now)
        return out

    def assigned(self, now: float, caught_up: Callable[[Any, int], bool],
                 at_end: AtEnd | None = None) -> WorkerOutput:
        """The sources announced at a (re)assignment, before anything of them is fetched, so
        no correlator runs ahead of one: each one's input taken as of now (a kept partition's
        quiet time starts over), then :meth:`heartbeat` -- its caught-up flag and fetch end
        asked afresh, the clocks reported as every heartbeat reports them.  The service's own
        message said an empty kept source idle on its flag from before the rebalance with no
        ``ended``: the correlator took the word as of when it heard it, let the source go
        while a lagging fetch had not yet seen its records, and a slow rank was escalated
        unknown before its throttle sample came (svc39: bench.metamorphic.Starved's
        ``rebalance_s``)."""
        for part in self.sources.values():
            part.last_input = now
        return self.heartbeat(now, caught_up, at_end)

    def release_all(self, now: float) -> WorkerOutput:
        out = WorkerOutput()
        for part in self.correlators.values():
            self._release(part, now, out)
        return out
