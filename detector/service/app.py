"""``faultline serve``: the Faust worker that runs the engine beside a cluster.

Two stages (see :mod:`detector.pipeline.source` for why two):

- stage 1 consumes the four telemetry topics; each topic-partition has its
  own Monitors; findings and watermarks go to the findings topic, invalid
  messages to the dead-letter topic (original bytes and key, the reason in
  headers);
- stage 2 consumes the findings topic; each partition has its own
  Correlator; alerts go to ``alerts.isolation`` / ``alerts.escalation`` keyed
  by ``dedup_key``.

How records reach the stages is the ``delivery`` setting:

- ``batch`` (default): Faust runs the consumer group, the assignment, the
  rebalance signals and the worker's life, but records are handed to the
  stages one fetched batch at a time, straight from Faust's consumer
  (:mod:`detector.service.faust_io`).  Faust's stream path costs about 180 µs a
  message on a 2-core machine (its fetcher awaits two new tasks per message,
  then a queue, a stream and a buffer): 5,600 messages/s with an agent that
  does nothing, against 375,000/s for the same fetches delivered in batches;
  the target is 50,000 events/s per worker;
- ``agents``: the textbook Faust way, one agent per stage
  (``stream.take_events``, concurrency 1 for faust-streaming #606).  Same
  results, a tenth of the throughput.

**Where a partition resumes is its snapshot, not Faust's commit.**  Our topics
are consumed with Faust acks off, so Faust never commits them; the service
commits ``offset + 1`` itself right after each snapshot is delivered, and on
every assignment before Faust seeks to the committed offsets (the
``on_rebalance_complete`` signal runs just before that seek).  So the
committed offset always equals the newest snapshot's position: a partition
that moves, or a worker that was killed, resumes exactly after the state it
restores, and lag tools still see an honest position.  Output made after the
last snapshot is made again — at-least-once; the ``dedup_key`` (and the
correlator's dropping of repeated finding ids) make repeats harmless.

Snapshots go to a compacted topic (:mod:`detector.service.state_store`) every
``snapshot_interval_s``, on partitions revoked, and on shutdown; each is
written only after everything the captured state produced is delivered.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import faust
from faust.types import TP

from detector.alerts import ESCALATION, ISOLATION
from detector.audit import audited
from detector.events import TELEMETRY_TOPICS
from detector.monitors import tracked_gpus, unreadable
from detector.pipeline.correlator import CorrelatorPartition, alert_message
from detector.pipeline.source import DeadLetter, Emit, SourcePartition
from detector.pipeline.worker import PipelineWorker, StageTrace, WorkerOutput
from detector.service import faust_io
from detector.service.faust_io import (
    FETCH_ENDS,
    FETCHED_AT,
    ServiceWorker,
    check_supported,
    commit_offsets,
    credentials,
    install_batch_delivery,
)
from detector.service.kafka_io import (
    DEADLETTER,
    FINDINGS,
    STATE,
    OutputProducer,
    client_ids,
    ensure_topics,
)
from detector.service.state_store import StateStore, encode_value, snapshot_key, start_positions
from detector.settings import Settings
from detector.statecodec import SnapshotRefused
from detector.topology import Topology, load_by_cluster

if TYPE_CHECKING:
    from detector.metrics import WorkerMetrics

log = logging.getLogger("faultline.service")

STATUS_FILE = "status.json"
# with trace_stages: hand-overs, fetch responses, snapshots' and heartbeats' flushes and the
# output producer's librdkafka statistics (bench/kafka_throughput.py --stages)
TRACE_FILE = "trace.jsonl"
# (offset, key, value, timestamp in ms) of an aiokafka record, at C speed
_RECORD_FIELDS = attrgetter("offset", "key", "value", "timestamp")
ARRIVED_HEADER = "faultline-arrived"  # on an alert: epoch seconds its input reached Kafka
# on an alert, with trace_stages: JSON of the wall times of its way (StageTrace.stamps)
STAGES_HEADER = "faultline-stages"


class DetectorService:
    """The worker's partitions, output and snapshots, wired to a Faust app."""

    def __init__(self, settings: Settings, *, topology: Topology | None = None,
                 topologies: Mapping[str, Topology] | None = None,
                 partitions: dict[str, int], metrics: WorkerMetrics | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.metrics = metrics
        self.wall = wall
        self.topology = topology
        self.thresholds = settings.engine_thresholds()
        self.clock = clock
        self.workdir = Path(settings.state_dir)
        self.telemetry_topics = {settings.topic(t): t for t in TELEMETRY_TOPICS}
        self.findings_topic = settings.topic(FINDINGS)
        self.alert_topics = {ISOLATION: settings.topic(ISOLATION),
                             ESCALATION: settings.topic(ESCALATION)}
        self.deadletter_topic = settings.topic(DEADLETTER)
        self.findings_partitions = partitions[self.findings_topic]
        # Every stage-1 source there is: a correlator waits for each (or its timeout).
        self.expected_sources = [f"{contract}:{p}" for real, contract in
                                 self.telemetry_topics.items() for p in range(partitions[real])]
        # Stage tracing: librdkafka's statistics of the output producer and the snapshots'
        # phases, written to TRACE_FILE with the hand-overs (see _write_trace).
        self._stats_log: list[Any] | None = [] if settings.trace_stages else None
        output_id, state_id = client_ids(settings)
        self.out = audited(OutputProducer(
            settings, client_id=output_id,
            stats=self._producer_stats if settings.trace_stages else None),
            settings, self.alert_topics)
        # Snapshots on a connection of their own (see detector.service.kafka_io): an alert
        # never waits behind a snapshot's produce requests.
        self.state_out = OutputProducer(settings, client_id=state_id)
        self.store = StateStore(settings.topic(STATE), settings.kafka_config(), settings.group_id,
                                settings.max_snapshot_bytes)
        self.codec = settings.state_codec()
        self.pipeline = PipelineWorker(
            telemetry_topics=self.telemetry_topics, findings_topic=self.findings_topic,
            findings_partitions=self.findings_partitions, expected_sources=self.expected_sources,
            thresholds=self.thresholds, topology=topology, hold_back_s=settings.hold_back_s,
            idle_advance_s=settings.idle_advance_s, source_timeout_s=settings.source_timeout_s,
            wall_clock=wall, codec=self.codec,
            trace=StageTrace() if settings.trace_stages else None, local_findings=True,
            home_cluster=settings.home_cluster, topologies=topologies)
        self._held: dict[TP, SourcePartition | CorrelatorPartition] = {}
        self._snapped: dict[TP, tuple[int, float]] = {}
        self._state_bytes: dict[TP, int] = {}
        self._lock = asyncio.Lock()
        self.stopping = False
        self.counts = {"events": 0, "deadletters": 0, "findings_messages": 0, "alerts": 0,
                       "snapshots": 0, "restored": 0, "refused": 0, "stale_skipped": 0,
                       "batch_errors": 0}
        # (wall, process CPU) when the first telemetry batch came and the last one was done:
        # what bench/kafka_throughput.py divides by, read from the status file.
        self._input_first: tuple[float, float] | None = None
        self._input_last: tuple[float, float] | None = None
        self._frozen = 0  # objects of the start-up moved out of the collector's way
        # Stage tracing: one entry per hand-over (see _log_batch), written out each heartbeat
        # with the fetch log (faust_io.trace_fetches) to TRACE_FILE; None: off.
        self._batch_log: list[tuple[Any, ...]] | None = None
        if settings.trace_stages:
            self._batch_log = []
            faust_io.trace_fetches()
        self.app = self._build_app()

    # The partitions held, in the pipeline (the stages live there; this adapter only
    # moves batches in and output out).
    @property
    def sources(self) -> dict[TP, SourcePartition]:
        return self.pipeline.sources  # type: ignore[return-value]

    @sources.setter
    def sources(self, parts: dict[TP, SourcePartition]) -> None:
        self.pipeline.sources = parts  # type: ignore[assignment]

    @property
    def correlators(self) -> dict[TP, CorrelatorPartition]:
        return self.pipeline.correlators  # type: ignore[return-value]

    @correlators.setter
    def correlators(self, parts: dict[TP, CorrelatorPartition]) -> None:
        self.pipeline.correlators = parts  # type: ignore[assignment]

    # -- the Faust app -------------------------------------------------------------------

    def _build_app(self) -> faust.App:
        s = self.settings
        app = faust.App(
            s.group_id,
            broker=[f"kafka://{h.strip()}" for h in s.bootstrap_servers.split(",") if h.strip()],
            broker_credentials=credentials(s),
            value_serializer="raw", key_serializer="raw",
            web_enabled=False, autodiscover=False, store="memory://",
            datadir=str(self.workdir / "faust"),
            consumer_auto_offset_reset=s.auto_offset_reset,
            broker_session_timeout=s.session_timeout_s,
            broker_heartbeat_interval=min(3.0, s.session_timeout_s / 5),
            broker_request_timeout=max(90.0, s.session_timeout_s * 1.5),
            stream_recovery_delay=0.0,
            # Bounds one fetched batch, so one handler call never holds the loop for long.
            broker_max_poll_records=s.batch_size,
            topic_replication_factor=max(1, s.replication_factor),
        )
        telemetry = app.topic(*self.telemetry_topics, value_serializer="raw",
                              key_serializer="raw", acks=False)
        findings = app.topic(self.findings_topic, value_serializer="raw", key_serializer="raw",
                             acks=False)
        if s.delivery == "batch":
            install_batch_delivery(app, self.on_records, frozenset(
                [*self.telemetry_topics, self.findings_topic]), first=frozenset(
                    [self.findings_topic]))
            app.topics.add(telemetry)  # subscribed without a stream reading them
            app.topics.add(findings)
        else:
            batch, within = s.batch_size, s.batch_within_s

            async def telemetry_agent(stream: faust.StreamT) -> None:
                async for events in stream.take_events(batch, within=within):
                    self.on_events(events)

            async def correlate_agent(stream: faust.StreamT) -> None:
                async for events in stream.take_events(batch, within=within):
                    self.on_events(events)

            app.agent(telemetry, name="telemetry", concurrency=1)(telemetry_agent)
            app.agent(findings, name="correlate", concurrency=1)(correlate_agent)
        app.timer(s.heartbeat_interval_s)(self.heartbeat)
        app.timer(s.snapshot_interval_s)(self.periodic_snapshot)
        app.on_partitions_revoked.connect(self.on_revoked)
        app.on_rebalance_complete.connect(self.on_assigned)
        app.on_before_shutdown.connect(self.on_shutdown)
        return app

    # -- input ---------------------------------------------------------------------------

    def on_events(self, events: list[faust.EventT]) -> None:
        """A batch from an agent (``delivery = "agents"``)."""
        by_tp: dict[TP, list[Any]] = {}
        for ev in events:
            m = ev.message
            by_tp.setdefault(m.tp, []).append((m.offset, m.key, m.value, m.timestamp))
        self.on_records(by_tp, arrivals_per_s=1.0)  # Faust's message timestamps: seconds

    def on_records(self, by_tp: dict[TP, list[Any]], arrivals_per_s: float = 1000.0) -> None:
        """Records by partition, in offset order: the fetcher's (faust_io.Fetched, or
        aiokafka's records), or (offset, key, value, timestamp) tuples; timestamps in
        ``1 / arrivals_per_s`` seconds (Kafka's: ms)."""
        now = self.clock()
        if self._batch_log is not None:
            started, cpu0 = self.wall(), time.thread_time()
        if self._input_first is None and any(tp.topic != self.findings_topic for tp in by_tp):
            self._input_first = (self.wall(), time.process_time())
        first = next(iter(by_tp.values()), None)
        if first and not isinstance(first[0], tuple):  # aiokafka's records
            by_tp = {tp: list(map(_RECORD_FIELDS, recs)) for tp, recs in by_tp.items()}
        findings_topic = self.findings_topic
        findings_n = sum(len(r) for tp, r in by_tp.items() if tp.topic == findings_topic)
        n_parts = len(by_tp)
        if findings_topic in {tp.topic for tp in by_tp} and len(by_tp) > 1:
            # The findings first, and their alerts out before the batch's telemetry is
            # processed: an alert decided here waited for the rest of the batch (up to
            # 2,000 records, 40-60 ms p50 at half load, bench/kafka_throughput.py --stages).
            self._emit(self.pipeline.process(
                {tp: r for tp, r in by_tp.items() if tp.topic == findings_topic}, now,
                self._caught_up, arrivals_per_s=arrivals_per_s, fetched=FETCHED_AT))
            by_tp = {tp: r for tp, r in by_tp.items() if tp.topic != findings_topic}
        out = self.pipeline.process(by_tp, now, self._caught_up, arrivals_per_s=arrivals_per_s,
                                    fetched=FETCHED_AT, at_end=self._at_end)
        self._emit(out)
        if out.events:
            self._input_last = (self.wall(), time.process_time())
        self.out.poll()
        if self._batch_log is not None:
            self._log_batch(started, cpu0, by_tp, findings_n, n_parts)

    def _log_batch(self, started: float, cpu0: float, by_tp: dict[TP, list[Any]],
                   findings_n: int, n_parts: int) -> None:
        """Stage tracing: (start, end, the thread's CPU s, telemetry records, findings
        records, partitions, the oldest telemetry record's Kafka timestamp in s, the
        process's seconds waiting for a CPU so far, messages in the output producer's
        queue) of one hand-over."""
        assert self._batch_log is not None
        oldest = min((r[0][3] for tp, r in by_tp.items()
                      if r and tp.topic != self.findings_topic and r[0][3] >= 0), default=None)
        tel = sum(len(r) for tp, r in by_tp.items() if tp.topic != self.findings_topic)
        self._batch_log.append((started, self.wall(), time.thread_time() - cpu0, tel,
                                findings_n, n_parts,
                                None if oldest is None else oldest / 1000.0, _cpu_wait_s(),
                                self.out.queued()))

    def _write_trace(self) -> None:
        """Stage tracing: the hand-overs, fetch responses, snapshots, heartbeat flushes and
        producer statistics since the last call, appended to TRACE_FILE as JSON lines
        ({"batch": [...]}, {"fetch": [...]}, {"snap": [began, captured, flushed, produced,
        delivered, partitions, bytes]}, {"beat": [began, flushed]}, {"stats": [...]})."""
        batches, self._batch_log = self._batch_log or [], []
        stats, self._stats_log = self._stats_log or [], []
        fetches = faust_io.FETCH_LOG or []
        taken = fetches[:]
        del fetches[:len(taken)]
        with open(self.workdir / TRACE_FILE, "ab") as f:
            for b in batches:
                f.write(json.dumps({"batch": b}).encode() + b"\n")
            for x in taken:
                f.write(json.dumps({"fetch": x}).encode() + b"\n")
            for x in stats:
                f.write(json.dumps(x).encode() + b"\n")

    def _producer_stats(self, raw: str) -> None:
        """Stage tracing: the output producer's queues and request times, every 100 ms."""
        if self._stats_log is None:
            return
        st = json.loads(raw)
        brokers = {name: {k: b.get(k) for k in (
            "outbuf_cnt", "outbuf_msg_cnt", "waitresp_cnt", "waitresp_msg_cnt", "tx",
            "txbytes")} | {f"{k}_max": (b.get(k) or {}).get("max") for k in (
                "int_latency", "outbuf_latency", "rtt")}
            for name, b in (st.get("brokers") or {}).items() if b.get("nodeid", -1) >= 0}
        topics = {name: sum((p.get("msgq_cnt") or 0) + (p.get("xmit_msgq_cnt") or 0)
                            for p in (t.get("partitions") or {}).values())
                  for name, t in (st.get("topics") or {}).items()}
        self._stats_log.append({"stats": [self.wall(), st.get("msg_cnt"), st.get("msg_size"),
                                          brokers, topics]})

    def _emit(self, out: WorkerOutput) -> None:
        """Produce what the pipeline made: findings, dead letters, alerts; count them."""
        self._send(out.findings, out.local)
        for topic, d in out.dead:
            self._dead_letter(d, topic)
        self.counts["deadletters"] += len(out.dead)
        if out.alerts:
            self._alerts(out.alerts, out.stages)
        for topic, n in out.events.items():
            self.counts["events"] += n
            if self.metrics is not None:
                self.metrics.events(topic, n)
        self.counts["stale_skipped"] += out.stale
        self.counts["batch_errors"] += out.errors
        if out.correlator_errors and self.metrics is not None:
            self.metrics.correlator_errors(out.correlator_errors)

    def _caught_up(self, tp: TP, offset: int) -> bool:
        try:
            high = self.app.consumer.highwater(tp)
        except Exception:  # noqa: BLE001 - not assigned any more
            return False
        return high is not None and offset + 1 >= high  # None: not fetched yet

    def _at_end(self, tp: TP, offset: int) -> float | None:
        """When the fetch that found ``tp`` at its end (``offset`` processed) was sent, or None
        (faust_io.FETCH_ENDS; empty with ``delivery = "agents"``)."""
        end = FETCH_ENDS.get(tp)
        return end[0] if end is not None and offset + 1 >= end[1] else None

    def _report_lag(self, tp: TP, offset: int) -> None:
        try:
            high = self.app.consumer.highwater(tp)
        except Exception:  # noqa: BLE001 - not assigned any more
            return
        if high is not None and self.metrics is not None:
            self.metrics.lag(tp, max(0, high - offset - 1))

    def _send(self, emits: list[Emit], local: dict[int, bytes] | None = None) -> None:
        """To the findings topic; ``local``: partition -> key prefix of the messages this
        worker's correlator there took in memory (WorkerOutput.local)."""
        topic = self.findings_topic
        produce = self.out.produce
        local = local or {}
        for e in emits:
            if e.partition is None:
                for p in range(self.findings_partitions):
                    tag = local.get(p)
                    produce(topic, e.value, e.key if tag is None else tag + e.key, p)
            else:
                tag = local.get(e.partition)
                produce(topic, e.value, e.key if tag is None else tag + e.key, e.partition)
        self.counts["findings_messages"] += len(emits)

    def _dead_letter(self, d: DeadLetter, real_topic: str) -> None:
        self.out.produce(self.deadletter_topic, d.value, d.key, headers=[
            ("faultline-reason", d.reason.encode()),
            ("faultline-topic", real_topic.encode()),
            ("faultline-partition", str(d.partition).encode()),
            ("faultline-offset", str(d.offset).encode())])
        if self.metrics is not None:
            self.metrics.invalid(d.reason)

    # -- stage 2 -------------------------------------------------------------------------

    def _alerts(self, alerts: list[tuple[Any, float | None]],
                stages: list[dict[str, float | None] | None] | None = None) -> None:
        wall = self.wall()
        for i, (a, arrived) in enumerate(alerts):
            key, value = alert_message(a)
            # When the input behind it reached Kafka: with the alert's own timestamp, the
            # end-to-end latency, measurable by whoever reads the topic.
            headers = None if arrived is None else [(ARRIVED_HEADER, repr(arrived).encode())]
            if headers and stages and stages[i] is not None:
                headers.append((STAGES_HEADER, json.dumps(stages[i]).encode()))
            self.out.produce(self.alert_topics[a.topic], value, key, headers=headers)
            log.info("%s %s %s/%s on %s", a.status, a.topic, a.kind, a.cause, a.scope.key)
            if self.metrics is not None:
                self.metrics.alert(a, wall - arrived if arrived is not None else None)
        self.counts["alerts"] += len(alerts)

    # -- timers --------------------------------------------------------------------------

    async def heartbeat(self) -> None:
        """Watermarks of every source, idle advance, correlator clocks, the status file."""
        if self.stopping:
            return
        now = self.clock()
        if self.metrics is not None:
            for tp, part in self.sources.items():
                self._report_lag(tp, part.offset)
        self._emit(self.pipeline.heartbeat(now, self._caught_up, self._at_end))
        self._emit(self.pipeline.release_all(now))
        if self._batch_log is not None:
            self._write_trace()
        # The status file tells what is delivered, not merely enqueued.
        status = self.stats(now)
        began = self.wall()
        await self.out.flush()
        if self._stats_log is not None:
            self._stats_log.append({"beat": [began, self.wall()]})
        self._write_status(status)

    async def periodic_snapshot(self) -> None:
        if not self.stopping:
            await self.snapshot(list(self.sources) + list(self.correlators), turns=True)

    async def snapshot(self, tps: list[TP], *, force: bool = False, turns: bool = False
                       ) -> None:
        """Snapshot these partitions (unchanged ones skipped), then commit their positions.

        ``turns``: let the event loop run (a fetched batch be handled) between two
        partitions' captures.  Encoding every partition's state in one go held the
        loop, and with it every batch and alert, for 36-56 ms every
        ``snapshot_interval_s`` (bench/kafka_throughput.py's log, 26 partitions); one
        partition takes 8-18 ms.  Each capture is still whole, and the flush below
        covers what any of them produced, so a snapshot never stands for lost output.
        """
        async with self._lock:
            began = self.wall()
            captured: list[tuple[TP, int, bytes]] = []
            for tp in tps:
                if turns and captured:
                    await asyncio.sleep(0)
                part = self.sources.get(tp) or self.correlators.get(tp)
                if part is None:
                    continue
                # Idle advance moves clocks every heartbeat; only new input or new
                # findings make a source's snapshot worth writing again.
                mark = (part.offset, part.monitors.counts["findings"]
                        if isinstance(part, SourcePartition) else part.released)
                if not force and self._snapped.get(tp) == mark:
                    continue
                offset, blob = part.snapshot(self.codec)
                captured.append((tp, offset, blob))
                self._snapped[tp] = mark
            if not captured:
                return
            # Everything the captured states have produced must be delivered first:
            # a snapshot must never stand for output that was lost.
            phases = [began, self.wall()]
            await self.out.flush()
            phases.append(self.wall())
            state_topic = self.store.topic
            for tp, offset, blob in captured:
                key = snapshot_key(self.settings.group_id, tp.topic, tp.partition)
                self.state_out.produce(state_topic, encode_value(offset, blob), key.encode())
            phases.append(self.wall())
            await self.state_out.flush()
            phases.append(self.wall())
            if self._stats_log is not None:
                self._stats_log.append({"snap": [*phases, len(captured),
                                                 sum(len(b) for _, _, b in captured)]})
            self.counts["snapshots"] += len(captured)
            if self.metrics is not None:
                self._state_bytes.update({tp: len(blob) for tp, _, blob in captured})
                self.metrics.state(sum(self._state_bytes.values()), tracked_gpus(
                    p.monitors for p in self.sources.values()))
                self.metrics.unreadable(unreadable(p.monitors for p in self.sources.values()))
            await self._commit({tp: offset + 1 for tp, offset, _ in captured if offset >= 0})

    async def _commit(self, offsets: dict[TP, int]) -> None:
        if not offsets:
            return
        try:
            await commit_offsets(self.app, offsets)
        except Exception as exc:  # noqa: BLE001 - the snapshot is what counts
            log.warning("commit of %d partitions failed (the snapshots stand): %s",
                        len(offsets), exc)

    # -- rebalancing ---------------------------------------------------------------------

    async def on_revoked(self, sender: Any, revoked: set[TP], **kwargs: Any) -> None:
        """Before partitions go: snapshot and commit all of them, keep them until assignment."""
        if not self.sources and not self.correlators:
            return
        await self.snapshot(list(self.sources) + list(self.correlators), force=True)
        self._held = {**self.sources, **self.correlators}
        self.sources, self.correlators = {}, {}
        log.info("partitions revoked: %d held until the new assignment", len(self._held))

    async def on_assigned(self, sender: Any, **kwargs: Any) -> None:
        """After a rebalance, before Faust seeks to the committed offsets: restore, commit."""
        if not self._frozen:
            self._frozen = freeze_startup_objects()
        assigned = set(self.app.consumer.assignment())
        now = self.clock()
        held, self._held = self._held, {}
        mine = [tp for tp in assigned if tp.topic in self.telemetry_topics
                or tp.topic == self.findings_topic]
        need = [tp for tp in mine if tp not in held]
        keys = {snapshot_key(self.settings.group_id, tp.topic, tp.partition): tp for tp in need}
        snaps, starts = await asyncio.get_running_loop().run_in_executor(
            None, self._read_positions, keys, [tp for tp in need])
        sources: dict[TP, SourcePartition] = {}
        correlators: dict[TP, CorrelatorPartition] = {}
        for tp in mine:
            part = held.get(tp)
            if part is None:
                part = self._restore(tp, snaps.get(
                    snapshot_key(self.settings.group_id, tp.topic, tp.partition)), now)
                if part.offset < 0 and (tp.topic, tp.partition) in starts:
                    part.offset = starts[(tp.topic, tp.partition)] - 1
            if isinstance(part, SourcePartition):
                sources[tp] = part
            else:
                correlators[tp] = part
        self.sources, self.correlators = sources, correlators
        self._snapped = {tp: m for tp, m in self._snapped.items() if tp in assigned}
        self._state_bytes = {tp: n for tp, n in self._state_bytes.items() if tp in assigned}
        if self.metrics is not None:
            for tp in held.keys() - set(mine):
                self.metrics.forget_partition(tp)
        # Faust seeks to the committed offsets right after this: make them the snapshots'.
        await self._commit({tp: p.offset + 1 for tp, p in {**sources, **correlators}.items()
                            if p.offset >= 0})
        # Announce the sources at once, so no correlator runs ahead of one not yet fetched.
        if sources:
            self._emit(self.pipeline.assigned(now, self._caught_up, self._at_end))
        self.out.poll()
        log.info("assigned: %d telemetry partitions, %d findings partitions (%d restored)",
                 len(sources), len(correlators), len(snaps))

    def _read_positions(self, keys: dict[str, TP], need: list[TP]
                        ) -> tuple[dict[str, tuple[int, bytes]], dict[tuple[str, int], int]]:
        snaps = self.store.read(keys)
        # Every partition's committed position, also of those with a snapshot: one that
        # is refused on restore starts afresh from there (its own offset is not trusted).
        starts = start_positions(self.settings.kafka_config(), self.settings.group_id,
                                 [(tp.topic, tp.partition) for tp in need],
                                 self.settings.auto_offset_reset)
        return snaps, starts

    def _restore(self, tp: TP, snap: tuple[int, bytes] | None, now: float
                 ) -> SourcePartition | CorrelatorPartition:
        if snap is not None:
            try:
                part = self.pipeline.restore_partition(tp, snap[0], snap[1], now)
                self.counts["restored"] += 1
                return part
            except Exception as exc:  # noqa: BLE001 - start afresh from the commit
                self._refused(tp, exc)
        # A refused snapshot's offset is no more trusted than its state: the partition
        # starts from the group's committed position (set by the caller).
        return self.pipeline.new_partition(tp, now)

    def _refused(self, tp: TP, exc: Exception) -> None:
        reason = exc.reason if isinstance(exc, SnapshotRefused) else "malformed"
        self.counts["refused"] += 1
        log.error("snapshot of %s refused (%s), starting the partition afresh from its "
                  "committed position: %s", f"{tp.topic}:{tp.partition}", reason, str(exc)[:300])
        if self.metrics is not None:
            self.metrics.snapshot_refused(reason)

    # -- shutdown ------------------------------------------------------------------------

    async def on_shutdown(self, sender: Any, **kwargs: Any) -> None:
        """Consumption has stopped: snapshot everything, commit, flush."""
        self.stopping = True
        parts = list(self.sources) + list(self.correlators)
        if parts:
            await self.snapshot(parts, force=True)
        await self.out.flush()
        self._write_status(self.stats(self.clock()), stopped=True)
        log.info("stopped: %d partitions snapshotted", len(parts))

    # -- status --------------------------------------------------------------------------

    def stats(self, now: float) -> dict[str, Any]:
        return {
            "pid": os.getpid(), "group": self.settings.group_id,
            "counts": dict(self.counts), "produced": self.out.sent + self.state_out.sent,
            "failed": self.out.failed + self.state_out.failed,
            "sources": {p.source: p.stats() for p in self.sources.values()},
            "correlators": {str(tp.partition): p.stats(now)
                            for tp, p in self.correlators.items()},
            "gc": {"frozen": self._frozen, "collections": [g["collections"]
                                                              for g in gc.get_stats()]},
            "input": None if self._input_first is None or self._input_last is None else {
                "first_wall": self._input_first[0], "first_cpu_s": self._input_first[1],
                "last_wall": self._input_last[0], "last_cpu_s": self._input_last[1]},
        }

    def _write_status(self, stats: dict[str, Any], *, stopped: bool = False) -> None:
        """A small JSON file for operators and tests: what this worker holds and how far it is."""
        status = {**stats, "wall_time": time.time(), "stopped": stopped}
        path = self.workdir / STATUS_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(status, default=_json_default))
        tmp.replace(path)


def freeze_startup_objects() -> int:
    """Move what exists once the worker is up out of the cyclic collector's scans; returns
    how many objects that is.

    A started worker holds ~87,000 objects the collector tracks (the modules, classes and
    functions of Faust, aiokafka, mode, msgspec, ...), nearly all of them for good, and
    every full (generation 2) collection walked them all: 4 of them in a 10 s feed at half
    load, each stopping both of the worker's threads for 58-297 ms on the bench's loaded
    2-core box (bench/kafka_throughput.py with a gc-callback probe); with them frozen,
    1-30 ms (the state the engine grows is mostly untracked: floats, gc=False records).
    Collected first, so no garbage of the start-up is kept.  Done once, at the first
    assignment (restored state comes after it, and is not frozen).
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


# How long a thread may hold the GIL while another waits for it (CPython's default: 5 ms).
# The worker has two Python threads: the handler (decode, Monitors, correlator: CPU-bound
# batches of 20-40 ms at half load) and aiokafka's consumer thread, whose fetch round is
# mostly I/O -- each socket read, send and loop wake-up gives the GIL up and waits to take
# it back, up to a whole interval while a batch is being processed (CPython's "convoy"
# effect): a partition is fetched again only after that round.  Of the lead's slow alerts
# (round 26, 167 over 250 ms in runs that kept the rate) a third of the time was "appended,
# no fetch out for its partition" and another third "fetched, waiting in the consumer's
# buffer" (bench/kafka_throughput.py --stages).  bench/gil_convoy.py, the pipeline busy in
# one thread and fetch-like round trips in another: 5 ms -> 0.5 ms took the round trips
# p50 / p90 ~28 / ~58 -> 22 / 36 ms and their count +30 %, for +4 % of the handler's CPU an
# event (a loaded box; BENCHMARKS.md, lat26).
SWITCH_INTERVAL_S = 0.0005


def tune_interpreter() -> None:
    """The worker process's interpreter settings (see SWITCH_INTERVAL_S); at start."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def _cpu_wait_s() -> float:
    """Seconds all of this process's threads have been runnable but waiting for a CPU
    (/proc/self/task/*/schedstat; 0.0 where that is not there)."""
    total = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0.0
    for t in tasks:
        try:
            with open(f"/proc/self/task/{t}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def _json_default(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return str(obj)


def run(settings: Settings, *, on_force: Callable[[int], None]) -> int:
    """Create missing topics, start the worker, block until it stops; returns an exit code."""
    if settings.delivery == "batch":
        check_supported()  # loudly, before anything starts: the batch path leans on internals
    tune_interpreter()
    topology = Topology.load(settings.topology) if settings.topology else None
    topologies = load_by_cluster(settings.cluster_topologies)
    Path(settings.state_dir).mkdir(parents=True, exist_ok=True)
    partitions = ensure_topics(settings)
    metrics = None
    if settings.metrics_port:
        from prometheus_client import CollectorRegistry

        from detector.metrics import WorkerMetrics, serve_metrics

        registry = CollectorRegistry()
        metrics = WorkerMetrics(registry, topics=[settings.topic(t) for t in TELEMETRY_TOPICS])
        serve_metrics(registry, settings.metrics_port, settings.metrics_addr)
        log.info("metrics on %s:%d/metrics", settings.metrics_addr, settings.metrics_port)
    service = DetectorService(settings, topology=topology, topologies=topologies,
                              partitions=partitions, metrics=metrics)
    # override_logging=False: keep detector.logs' handler (caps, redaction, rate limit)
    # instead of mode's, which would print aiokafka's SASL exchange at debug.
    worker = ServiceWorker(service.app, loglevel=settings.log_level.upper(), quiet=True,
                     override_logging=False,
                     redirect_stdouts=False, on_force=on_force)
    log.info("faultline serve: group %s, %d telemetry partitions per topic, bootstrap %s",
             settings.group_id, partitions[settings.topic(TELEMETRY_TOPICS[0])],
             settings.bootstrap_servers)
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
