"""``faultline pager``: consume the alert topics, deliver, commit only what was delivered.

A plain confluent-kafka consumer (no Faust: the pager has no state to
partition, only offsets to hold back).  Auto-commit is off; every second the
pager commits, per partition, the oldest offset whose alert is not yet
delivered (:class:`~detector.pager.core.OffsetTracker`).  On a rebalance the
revoked partitions are committed first, and the alerts from them that storm control still
holds are dropped (the new owner reads them again).  On SIGTERM/SIGINT (``stop`` set)
consumption stops, queued deliveries finish (up to ``drain_timeout_s``),
the delivered offsets are committed, and the process exits 0; alerts still
held by storm control are read again by the next run.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from prometheus_client import CollectorRegistry

from detector.alerts import ALERT_TOPICS, FiredAlert
from detector.audit import AuditLog
from detector.metrics import PagerMetrics, serve_metrics
from detector.pager.config import PagerConfig
from detector.pager.core import DeadLetters, FileDeadLetters, OffsetTracker, Pager
from detector.settings import Settings
from detector.topology import Topology

log = logging.getLogger("faultline.pager")

LAG_INTERVAL_S = 5.0
RAW_MAX_BYTES = 65536  # of an invalid message, kept in its dead letter


class KafkaDeadLetters:
    """Dead letters on a topic (key: dedup_key; the reason and sink also in headers)."""

    def __init__(self, settings: Settings, topic: str) -> None:
        self.topic = topic
        self._producer = Producer({**settings.kafka_config(), "enable.idempotence": True,
                                   "linger.ms": 5})

    def write(self, key: str, value: dict[str, Any], reason: str, sink: str) -> None:
        errors: list[Any] = []

        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(err)

        self._producer.produce(self.topic, orjson.dumps(value, default=str), key.encode(),
                               headers=[("faultline-reason", reason[:1000].encode()),
                                        ("faultline-sink", sink.encode())],
                               on_delivery=on_delivery)
        if self._producer.flush(30) or errors:
            raise RuntimeError(f"dead letter to {self.topic} not delivered: "
                               f"{errors[0] if errors else 'timed out'}")

    def close(self) -> None:
        self._producer.flush(10)


def run(settings: Settings, config: PagerConfig, *, stop: threading.Event,
        registry: CollectorRegistry | None = None) -> int:
    """Consume, deliver and commit until ``stop`` is set; returns the exit code."""
    registry = registry if registry is not None else CollectorRegistry()
    real_topics = {settings.topic(t): t for t in ALERT_TOPICS}
    metrics = PagerMetrics(registry, config.sinks)
    topology = Topology.load(settings.topology) if settings.topology else None
    if config.state_dir:
        Path(config.state_dir).mkdir(parents=True, exist_ok=True)

    from detector.kafka.admin import ensure_topics

    plan = {real: (settings.partitions_alerts, {}) for real in real_topics}
    dl_topic = settings.topic_prefix + config.deadletter_topic if not config.deadletter_file \
        else None
    if dl_topic:
        plan[dl_topic] = (1, {})
    ensure_topics(settings, plan)
    deadletters: DeadLetters = (FileDeadLetters(config.deadletter_file)
                                if config.deadletter_file
                                else KafkaDeadLetters(settings, dl_topic or ""))
    server = (serve_metrics(registry, config.metrics_port, config.metrics_addr)
              if config.metrics_port else None)
    audit = (AuditLog(config.audit_file,
                      key=config.audit_key.reveal().encode() if config.audit_key else None)
             if config.audit_file else None)
    pager = Pager(config, metrics, deadletters, topology=topology, audit=audit)
    pager.start()
    loop = _Loop(settings, config, pager, metrics, deadletters, real_topics, audit)
    try:
        loop.run(stop)
    finally:
        drained = pager.close(config.drain_timeout_s)
        loop.close(drained)
        if isinstance(deadletters, KafkaDeadLetters):
            deadletters.close()
        if server is not None:
            server.close()
        if audit is not None:
            audit.close()
    return 0


class _Loop:
    def __init__(self, settings: Settings, config: PagerConfig, pager: Pager,
                 metrics: PagerMetrics, deadletters: DeadLetters,
                 real_topics: dict[str, str], audit: AuditLog | None = None) -> None:
        self.config = config
        self.audit = audit
        self.pager = pager
        self.metrics = metrics
        self.deadletters = deadletters
        self.real_topics = real_topics
        self.tracker = OffsetTracker()
        self.committed: dict[tuple[str, int], int] = {}
        self.paused = False
        # Firing alerts held from a backlog (waiting to see whether their resolve follows):
        # at most half of max_in_flight, so that holding never stalls consumption.
        self.backlog_max = max(1, config.max_in_flight // 2)
        self.consumer = Consumer({
            **settings.kafka_config(), "group.id": config.group_id,
            "enable.auto.commit": False, "auto.offset.reset": settings.auto_offset_reset,
            "session.timeout.ms": int(settings.session_timeout_s * 1000),
            "client.id": f"faultline-pager-{config.group_id}"})
        self.consumer.subscribe(list(real_topics), on_assign=self._on_assign,
                                on_revoke=self._on_revoke, on_lost=self._on_revoke)

    # -- rebalancing ---------------------------------------------------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        log.info("assigned %s", ", ".join(f"{p.topic}[{p.partition}]" for p in partitions))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.commit(only={(p.topic, p.partition) for p in partitions})
        for p in partitions:
            self.tracker.forget((p.topic, p.partition))
            self.committed.pop((p.topic, p.partition), None)
            self.metrics.forget_partition((self.real_topics.get(p.topic, p.topic), p.partition))
        # Their alerts still held or waiting here are uncommitted: the new owner reads them
        # again and sends them (or sees their resolve): dropped here (revA34 F3).
        dropped = self.pager.drop_revoked()
        if dropped:
            log.info("revoked: %d alerts held or waiting dropped (the new owner reads them)",
                     dropped)

    # -- the loop ------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        last_commit = last_lag = time.monotonic()
        log.info("faultline pager: group %s, topics %s, sinks %s", self.config.group_id,
                 ", ".join(self.real_topics), ", ".join(self.config.sinks))
        while not stop.is_set():
            wait = max(0.0, min(0.2, self.pager.next_due() - time.monotonic()))
            msg = self.consumer.poll(0.0 if self.pager.backlog_size() else wait)
            if msg is not None:
                self._handle(msg)
            elif self.pager.backlog_size():
                self.pager.release_backlog()  # caught up with what is there
            self.pager.tick()
            self._flow_control()
            now = time.monotonic()
            if now - last_commit >= self.config.commit_interval_s:
                last_commit = now
                self.commit()
            if now - last_lag >= LAG_INTERVAL_S:
                last_lag = now
                self._lag()

    def _handle(self, msg: Message) -> None:
        err = msg.error()
        if err is not None:
            if err.code() != KafkaError._PARTITION_EOF:
                log.warning("consumer: %s", err)
            return
        if self.paused:
            # Fetched before the pause took hold: read it again once there is room.
            try:
                self.consumer.seek(TopicPartition(msg.topic(), msg.partition(), msg.offset()))
                return
            except KafkaException as exc:  # e.g. revoked meanwhile: take it now instead
                log.warning("could not seek back %s[%d]@%d: %s", msg.topic(), msg.partition(),
                            msg.offset(), exc)
        topic = msg.topic()
        contract = self.real_topics.get(topic or "")
        ticket = self.tracker.ticket(topic or "", msg.partition() or 0, msg.offset() or 0)
        raw = msg.value()
        try:
            if raw is None:
                raise ValueError("message has no value")
            alert = FiredAlert.from_record(contract or str(topic), orjson.loads(raw))
            if alert.status not in ("firing", "resolved"):
                raise ValueError(f"status must be firing or resolved, got {alert.status!r}")
        except (ValueError, TypeError) as exc:
            text = str(exc)
            self._invalid(msg, text if "not an alert envelope" in text
                          else f"{contract or topic}: not an alert envelope: {text}", raw)
            ticket.done()
            return
        self.pager.submit(alert, ticket, backlog=self._behind(msg))
        if self.pager.backlog_size() >= self.backlog_max:
            self.pager.release_backlog()

    def _behind(self, msg: Message) -> bool:
        """Whether newer messages are already on this message's partition (catching up)."""
        try:
            _, high = self.consumer.get_watermark_offsets(
                TopicPartition(msg.topic(), msg.partition()), cached=True)
        except KafkaException:
            return False
        return high is not None and high - (msg.offset() or 0) > 1

    def _invalid(self, msg: Message, reason: str, raw: bytes | None) -> None:
        self.metrics.invalid()
        log.error("%s [%d] offset %d dead-lettered: %s", msg.topic(), msg.partition(),
                  msg.offset(), reason)
        value = {"sink": None, "reason": reason, "topic": msg.topic(),
                 "partition": msg.partition(), "offset": msg.offset(),
                 "raw": (raw or b"")[:RAW_MAX_BYTES].decode(errors="replace")}
        key = (msg.key() or b"").decode(errors="replace")
        try:
            self.deadletters.write(key, value, reason, "pager")
        except Exception:  # noqa: BLE001 - logged above with the reason
            log.exception("writing the dead letter failed")
        if self.audit is not None:
            try:
                self.audit.append("dead_lettered", {k: v for k, v in value.items()
                                                    if k != "raw"})
            except Exception:  # noqa: BLE001 - paging goes on
                log.exception("appending to the audit file failed")

    def commit(self, only: set[tuple[str, int]] | None = None) -> None:
        todo = {tp: o for tp, o in self.tracker.positions().items()
                if self.committed.get(tp) != o and (only is None or tp in only)}
        if not todo:
            return
        try:
            self.consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in todo.items()],
                                 asynchronous=False)
            self.committed.update(todo)
        except KafkaException as exc:
            log.warning("commit failed (retried on the next round): %s", exc)

    def _flow_control(self) -> None:
        """Hold ``max_in_flight``: checked after every message, resumed below 90 % of it."""
        n = self.tracker.in_flight()
        self.metrics.in_flight(n, self.tracker.peak)
        limit = self.config.max_in_flight
        busy = n >= limit if not self.paused else n > max(limit * 0.9, limit - 1)
        if busy and self.pager.backlog_size():
            self.pager.release_backlog()
        if busy != self.paused:
            assignment = self.consumer.assignment()
            (self.consumer.pause if busy else self.consumer.resume)(assignment)
            self.paused = busy
            log.warning("%s consuming: %d alerts in flight (max_in_flight %d)",
                        "paused" if busy else "resumed", n, limit)

    def _lag(self) -> None:
        positions = self.tracker.positions()
        for tp in self.consumer.assignment():
            try:
                _, high = self.consumer.get_watermark_offsets(tp, timeout=1.0)
            except KafkaException:
                continue
            pos = positions.get((tp.topic, tp.partition), self.committed.get(
                (tp.topic, tp.partition)))
            if pos is not None and high >= 0:
                contract = self.real_topics.get(tp.topic, tp.topic)
                self.metrics.lag((contract, tp.partition), high - pos)

    def close(self, drained: bool) -> None:
        if not drained:
            log.warning("stopping with deliveries unfinished: their alerts are read again "
                        "by the next run")
        self.commit()
        shown = ", ".join(f"{t}[{p}]@{o}" for (t, p), o in sorted(self.committed.items()))
        self.consumer.close()
        log.info("stopped; committed %s", shown or "nothing")
