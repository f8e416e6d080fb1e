"""Kafka plumbing of the service: topics created when missing, and the producers of its output.

Output (findings, watermarks, alerts, dead letters) goes through one
confluent-kafka producer rather than Faust's: ``produce`` only enqueues, so a
batch's findings and the watermark after them are enqueued with no ``await``
in between — nothing else of the worker can slip a message between them — and
idempotence keeps them in that order on the partition.  That order is what the
correlator's clock relies on.

Snapshots go through a second producer of the same kind, on a connection of
their own.  librdkafka puts one partition in a produce request, and the broker
answers a connection's requests one at a time, in order: on the output's
connection a snapshot (one message per ``faultline.state`` partition, 8) was 8
requests in series in front of any alert decided while it was delivered, and
when the broker was short of a CPU each took 6-45 ms (its request log), so the
alert's produce took 226-600 ms instead of 5-10 (bench/kafka_throughput.py
--stages, class (d); BENCHMARKS.md "latency, round 10").  The two identify as
``GROUP-output`` and ``GROUP-state`` (``client_ids``): a broker quota on the second
bounds the snapshots' traffic without holding an alert.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaError, Producer

from detector.alerts import ESCALATION, ISOLATION
from detector.events import TELEMETRY_TOPICS
from detector.kafka.admin import KafkaSetupError
from detector.kafka.admin import ensure_topics as _ensure_topics
from detector.settings import Settings

log = logging.getLogger(__name__)

FINDINGS = "faultline.findings"
STATE = "faultline.state"
DEADLETTER = "telemetry.deadletter"
_SNAPSHOT_SLACK = 1 << 16  # headers and key around the largest snapshot


ServiceKafkaError = KafkaSetupError  # the name the service's callers use


def client_ids(settings: Settings) -> tuple[str, str]:
    """The ``client.id`` of the worker's output producer and of its snapshots' producer."""
    return f"{settings.group_id}-output", f"{settings.group_id}-state"


def topic_plan(settings: Settings) -> dict[str, tuple[int, dict[str, str]]]:
    """Every topic the service uses: real name -> (partitions, topic configs) if created."""
    plan: dict[str, tuple[int, dict[str, str]]] = {}
    for t in TELEMETRY_TOPICS:
        # Stamped when the broker appends a record, not with the producer's CreateTime: the
        # worker measures each source's lateness by when its records reached Kafka, and a
        # collector may stamp CreateTime with the metric's own time (Telegraf's outputs.kafka
        # does by default), which makes a collector delivering late look prompt (review round
        # 12, C2).  Topics a site made itself keep theirs: the worker floors a record's
        # arrival at the last fetch that found its partition at its end (PipelineWorker).
        plan[settings.topic(t)] = (settings.partitions_telemetry,
                                   {"message.timestamp.type": "LogAppendTime"})
    for t in (ISOLATION, ESCALATION):
        plan[settings.topic(t)] = (settings.partitions_alerts, {})
    plan[settings.topic(DEADLETTER)] = (settings.partitions_deadletter, {})
    plan[settings.topic(FINDINGS)] = (settings.partitions_findings, {})
    plan[settings.topic(STATE)] = (settings.partitions_state, {
        "cleanup.policy": "compact",
        "max.message.bytes": str(settings.max_snapshot_bytes + _SNAPSHOT_SLACK),
        # Snapshots are rewritten every few seconds: let compaction catch up soon.
        "segment.ms": str(3600_000), "min.cleanable.dirty.ratio": "0.1"})
    return plan


def ensure_topics(settings: Settings, topics: Mapping[str, tuple[int, dict[str, str]]] | None
                  = None, timeout_s: float = 30.0) -> dict[str, int]:
    """Create the service's missing topics (``topic_plan`` unless ``topics`` is given)."""
    return _ensure_topics(settings, topics if topics is not None else topic_plan(settings),
                          timeout_s)


class OutputProducer:
    """A producer of the worker's; ``produce`` never blocks, ``flush`` runs off the event loop."""

    def __init__(self, settings: Settings, *, client_id: str | None = None,
                 linger_ms: float = 5.0, stats: Callable[[str], None] | None = None) -> None:
        extra: dict[str, Any] = {}
        if client_id is not None:  # the broker's request metrics and quotas name it
            extra["client.id"] = client_id
        if stats is not None:  # a diagnostic (stage tracing): librdkafka's own view
            extra.update({"statistics.interval.ms": 100, "stats_cb": stats})
        self._producer = Producer({
            **extra,
            **settings.kafka_config(),
            "enable.idempotence": True,
            "linger.ms": linger_ms,
            # aiokafka (Faust's consumer) reads lz4/snappy/zstd only with extra packages.
            "compression.type": "none",
            "message.max.bytes": settings.max_snapshot_bytes + _SNAPSHOT_SLACK,
            "queue.buffering.max.kbytes": 262144,
            # A report (a Python callback) only for a message that failed, not for each
            # watermark delivered.
            "on_delivery": self._delivered,
            "delivery.report.only.error": True,
        })
        self.sent = 0
        self.failed = 0
        self.first_error: str | None = None

    def _delivered(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self.failed += 1
            if self.first_error is None:
                self.first_error = f"{msg.topic()}[{msg.partition()}]: {err}"
            log.error("delivery to %s failed: %s", msg.topic(), err)

    def produce(self, topic: str, value: bytes | None, key: bytes | None = None,
                partition: int | None = None,
                headers: list[tuple[str, bytes]] | None = None) -> None:
        part = -1 if partition is None else partition  # -1: the partitioner decides
        while True:
            try:
                if headers:
                    self._producer.produce(topic, value, key, part, headers=headers)
                else:
                    self._producer.produce(topic, value, key, part)
                break
            except BufferError:
                self._producer.poll(0.05)  # queue full: let librdkafka drain it
        self.sent += 1

    def poll(self) -> None:
        self._producer.poll(0)

    def queued(self) -> int:
        """Messages and requests not yet delivered (librdkafka's out queue)."""
        return len(self._producer)

    async def flush(self, timeout_s: float = 30.0) -> None:
        """Wait until everything produced so far is delivered; raise if anything failed."""
        left = await asyncio.get_running_loop().run_in_executor(
            None, self._producer.flush, timeout_s)
        if left:
            raise RuntimeError(f"{left} messages still undelivered after {timeout_s:.0f}s")
        self.check()

    def check(self) -> None:
        if self.failed:
            raise RuntimeError(f"{self.failed} output messages were not delivered; first: "
                               f"{self.first_error}")

    def flush_blocking(self, timeout_s: float = 10.0) -> int:
        return int(self._producer.flush(timeout_s))


def read_to_end(config: Mapping[str, Any], topic: str, timeout_s: float = 30.0) -> list[Any]:
    """Every message of ``topic`` from each partition's low offset to its end as of now.

    For tools and tests that check what the service wrote (alerts, findings):
    ``config`` is a confluent-kafka client configuration (bootstrap servers and
    security); a fresh reader group, nothing committed.  Raises (see
    :func:`detector.service.state_store.messages_to_end`) if it cannot read to the end.
    """
    import uuid

    from confluent_kafka import Consumer

    from detector.service.state_store import messages_to_end

    consumer = Consumer({**config, "group.id": f"faultline-reader-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        return list(messages_to_end(consumer, topic, timeout_s))
    finally:
        consumer.close()
