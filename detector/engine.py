"""The detection engine: telemetry records in, alerts out, no I/O.

The engine is the service's pipeline (:mod:`detector.pipeline`) with one
source and one correlator partition in one process: a
:class:`~detector.pipeline.source.SourcePartition` (the event-time guard, the
:class:`~detector.monitors.Monitors`: events to findings) hands its findings
in memory, where the service puts them on the findings topic, to a
:class:`~detector.pipeline.correlator.CorrelatorPartition` (the
:class:`~detector.correlate.Correlator`: findings to alerts, timers fired
before the findings of a later time).  Its one source's clock -- the newest
``ts`` seen -- is the correlator's, so every record is decided as it comes.
Its whole state goes to bytes and back as data (detector.statecodec).

>>> from detector.events import EccSample
>>> eng = Engine()
>>> sample = EccSample(100.0, "node-007", 3, 0, 1, 0, 1, True, False, 48, 0, 0, 0, 0, "none",
...                    None, None)
>>> [(a.kind, a.cause, a.scope.key, a.detection_latency_s) for a in eng.process(sample)]
[('hardware', 'gpu_memory', 'gpu:node-007/3', 0.0)]
>>> len(Engine.restore(eng.snapshot()).correlator.problems)
1
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from detector.alerts import Alert
from detector.correlate import Correlator
from detector.decoding import decode_value
from detector.events import MAX_AHEAD_S, Event, InvalidMessage, NonFinite
from detector.findings import Finding
from detector.monitors import Monitors
from detector.pipeline.correlator import CorrelatorPartition, check_times
from detector.pipeline.source import SourcePartition, checked_state, finding_tag
from detector.quiet import quiet_run
from detector.statecodec import UNSIGNED, SnapshotRefused, StateCodec
from detector.thresholds import Thresholds
from detector.topology import Topology

SOURCE = "engine"  # the name of the engine's one source (a service's are "telemetry.ecc:3")


class Engine:
    """The pipeline in one process: telemetry records in, alerts out."""

    def __init__(self, thresholds: Thresholds | None = None,
                 topology: Topology | None = None, home_cluster: str | None = None,
                 topologies: Mapping[str, Topology] | None = None) -> None:
        """``home_cluster``: the `cluster` value of the records ``topology`` describes (and
        of those without one); None: the first value read (detector.pipeline.clusters).
        ``topologies``: other clusters' topologies, by `cluster` value (home_cluster named)."""
        self.cfg = thresholds or Thresholds()
        self.topology = topology
        # A log has its own time: records far ahead of it wait for others to agree (admit).
        self.source = SourcePartition(SOURCE, 0, 1, self.cfg, topology, hold_ahead=True,
                                      home=home_cluster, topologies=topologies)
        self.stage = CorrelatorPartition(0, self.cfg, topology, expected=(self.source.source,),
                                         home=home_cluster, topologies=topologies)
        self._src = self.stage.sources[self.source.source]
        self._found: list[Finding] = []  # process()'s, reused (one allocation less per record)
        # Alerts of findings made before a record was refused (running other clusters on to
        # the stream's time: SourcePartition._give_back_spent, _catch_up), which process()
        # raising could not return: the caller gets them from ingest() or finish().  Not state.
        self._kept: list[Alert] = []

    @property
    def monitors(self) -> Monitors:
        return self.source.monitors

    @property
    def correlator(self) -> Correlator:
        return self.stage.correlator

    @property
    def clock(self) -> float:
        return self.source.clock

    @property
    def rejected(self) -> list[InvalidMessage]:
        """Records held far ahead of the clock and then refused (the caller drains this)."""
        return self.source.refused

    def was_seen(self, node: str, what: str) -> bool:
        """Whether telemetry of kind ``what`` from ``node`` is known (what escalations cite)."""
        return self.stage.was_seen(node, what)

    def process(self, ev: Event) -> list[Alert]:
        """Feed one decoded telemetry record; returns the alerts it (or the time it carries)
        caused.  A record far ahead of the clock waits for others to agree on the jump
        (:meth:`SourcePartition.admit`); refused ones go to :attr:`rejected`."""
        src = self.source
        mon = src.monitors
        if ev.ts - mon.clock > MAX_AHEAD_S or src.held:
            admitted = src.admit(ev)
            if len(admitted) != 1:  # held, or let in with the ones held before it
                return self._process_all(admitted)
        c = ev.cluster
        alerts: list[Alert] = []
        found = self._found
        if found:
            found.clear()  # left by a record the monitors raised on
        if c is not None and c != src.clusters.cluster:  # (a unit is (cluster, node))
            try:
                mon = src.feed(ev, found)
            except InvalidMessage:
                if found:  # (the service emits them with its dead letter: _one)
                    self._correlate(found, self._kept)
                    found.clear()
                raise
            finally:
                if self.stage.cluster is None:  # the topology's cluster: the same in both
                    self.stage.cluster = src.cluster
        else:
            mon = src.feed(ev, found)
        if mon.heard or mon.forgotten or mon.rewound or src._parting or src._told:
            self._pass_seen()
        if found:
            self._correlate(found, alerts)
            found.clear()
        else:
            stage = self.stage
            clock = mon.clock if not src.others else src.clock
            if clock >= stage.due_at:
                stage.release_to(clock, alerts)
            elif clock > stage.released:  # nothing due: release_to would only do this
                stage.released = clock
        return alerts

    def process_many(self, events: list[Event]) -> list[Alert]:
        """Feed decoded records in order: the alerts :meth:`process` one by one would return.

        Runs of records that make no finding (healthy samples, step messages that only wait
        for their step's other ranks) go in through one loop
        (:func:`detector.quiet.quiet_run`: the same state), each run ending before the
        correlator has anything due; every other record goes through :meth:`process`.  An
        exception leaves the records after the one that raised unprocessed, as a loop over
        :meth:`process` would.
        """
        alerts: list[Alert] = []
        src = self.source
        mon = src.monitors
        stage = self.stage
        n = len(events)
        i = 0
        batch = src.batch_of_one_cluster(events)  # (else every record through process())
        if self.stage.cluster is None:
            self.stage.cluster = src.cluster
        while i < n:
            if batch and not src.held:
                due = src.run_on_due  # (a quiet cluster's run-on: at the same record)
                j = quiet_run(mon, events, i, due if due < stage.due_at else stage.due_at)
                if j > i:
                    if src._first is not None:  # (no home known yet: it may be now)
                        src.took(events, i, j)
                        if stage.cluster is None:
                            stage.cluster = src.cluster
                    # What process() does after a record with no finding, nothing due.
                    if mon.clock > stage.released:
                        stage.released = mon.clock
                    i = j
                    if i == n:
                        break
            alerts += self.process(events[i])
            i += 1
        return alerts

    def _process_all(self, events: tuple[Event, ...]) -> list[Alert]:
        alerts: list[Alert] = []
        for e in events:  # each within MAX_AHEAD_S of the clock the one before it set
            try:
                alerts += self.process(e)
            except InvalidMessage as exc:
                self.source.refused.append(exc)
        return alerts

    def ingest(self, topic: str, value: Any, alerts: list[Alert]) -> Event:
        """One record's value as read from a log (parsed JSON): decoded as the service
        decodes a message, then :meth:`process`'d; alerts are appended to ``alerts``.

        Raises :class:`InvalidMessage` for a record that breaks the contract, after
        what it salvages (a NaN loss) went in, as the service dead-letters it.
        """
        found: list[Finding] = []
        try:
            ev = self.source.decode(topic, value, found, decode_value)
        finally:
            if found:
                self._correlate(found, alerts)
        try:
            alerts.extend(self.process(ev))
        finally:
            if self._kept:
                alerts.extend(self._kept)
                self._kept.clear()
        return ev

    def _pass_seen(self) -> None:
        """The monitors' notices to the correlator partition in memory (the findings topic's
        ``rewound``, ``seen`` and ``forget`` messages: SourcePartition.pass_notices)."""
        stage = self.stage
        self.source.pass_notices(lambda clock: stage.rewound(SOURCE, clock),
                                 lambda cluster, node, what: stage.seen(node, what, cluster),
                                 lambda cluster, node, what: stage.forget(node, what, cluster))

    def _correlate(self, found: list[Finding], alerts: list[Alert]) -> None:
        """Findings to the correlator partition in memory (the findings topic's work)."""
        src, stage = self.source, self.stage
        clock = src.clock
        # Ids only order one source's findings: a count of the records that made any.
        src.offset = offset = src.offset + 1
        name, state = src.source, self._src
        tag = clock
        for k, f in enumerate(found):
            tag = finding_tag(clock, f)
            stage.take(state, name, (offset, k), tag, f, None)
        stage.release_to(max(clock, tag), alerts)

    def process_nonfinite(self, nf: NonFinite, cluster: str | None = None) -> list[Alert]:
        """A step dead-lettered for a NaN/inf loss or grad_norm (see events.NonFinite), of
        the `cluster` value ``cluster`` (InvalidMessage.cluster; NonFinite has none)."""
        found: list[Finding] = []
        mon = self.source.monitors_of(cluster, make=False)  # (none: a cluster with no units)
        if mon is not None:
            mon.process_nonfinite(nf, found)
            if self.stage.cluster is None:
                self.stage.cluster = self.source.cluster
        alerts: list[Alert] = []
        self._correlate(found, alerts)
        return alerts

    def finish(self) -> list[Alert]:
        """End of input: time runs on to the end (SourcePartition.run_on), every waiting
        step and timer is decided."""
        found: list[Finding] = []
        self.source.run_on(math.inf, found)
        alerts, self._kept = self._kept, []
        self._correlate(found, alerts)
        self.stage.run_out(alerts)
        return alerts

    # -- state ---------------------------------------------------------------------------

    def snapshot(self, codec: StateCodec = UNSIGNED) -> bytes:
        """All state as bytes (the topology is not included: it is injected on restore):
        the two stages' own states, as the service snapshots them."""
        state = {"offset": self.source.offset,
                 "source": self.source.state(), "correlator": self.stage.state()}
        return codec.encode(state, "engine")

    @classmethod
    def restore(cls, blob: bytes, topology: Topology | None = None,
                codec: StateCodec = UNSIGNED, home_cluster: str | None = None,
                topologies: Mapping[str, Topology] | None = None) -> Engine:
        """The engine a :meth:`snapshot` saved; :class:`SnapshotRefused` if it is not one."""
        what = "not an engine's state"
        state = codec.decode(blob, "engine")
        if type(state) is not dict or type(state.get("offset")) is not int:
            raise SnapshotRefused("malformed", what)
        source = checked_state(state.get("source"), "monitors", Monitors, what)
        stage = checked_state(state.get("correlator"), "correlator", Correlator, what)
        eng = cls.__new__(cls)
        eng.source = SourcePartition.from_state(source, SOURCE, 0, 1, state["offset"],
                                                topology, hold_ahead=True, home=home_cluster,
                                                topologies=topologies)
        eng.stage = CorrelatorPartition.from_state(stage, 0, -1, topology,
                                                   expected=(eng.source.source,),
                                                   home=home_cluster, topologies=topologies)
        # (the correlator is fed by the source alone: none of its times past the source's
        # clocks -- each cluster's monitors keep their own)
        clock = max(m.clock for m in (eng.source.monitors, *eng.source.others.values()))
        check_times(stage, clock + MAX_AHEAD_S if clock > -math.inf else None)
        eng.cfg = eng.source.monitors.cfg
        eng.topology = topology
        eng._src = eng.stage.sources[eng.source.source]
        eng._found = []
        eng._kept = []
        return eng

    def stats(self) -> dict[str, Any]:
        stats = {**self.monitors.stats(), "problems": len(self.correlator.problems)}
        if self.source.others:
            stats["clusters"] = 1 + len(self.source.others)
            stats["too_many_clusters"] = self.source.too_many_clusters
            stats["problems"] = self.stage.stats(0.0)["problems"]
        return stats
