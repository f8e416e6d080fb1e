"""Where collected telemetry goes: an incident log, or Kafka with a bounded buffer.

Both take ``send(topic, value)`` with a contract topic name and value.  The
log writes its topology record first (DESIGN.md): the one given, or one the
sink makes from the GPUs and NICs it has seen by its first write.
"""

from __future__ import annotations

import contextlib
import gzip
import logging
import os
from collections.abc import Callable, Iterable
from typing import IO, Any

import orjson

from detector.events import STEP
from detector.topology import Topology, TopologyError

log = logging.getLogger(__name__)


def observed_topology(name: str, records: Iterable[tuple[str, dict[str, Any]]]
                      ) -> Topology | None:
    """A faultline topology of the nodes, GPUs and NICs these records name (None if it cannot).

    It knows no switch: a node-local view, enough for ``replay LOG`` to list the
    node's GPUs and NICs.  A node name the topology format cannot hold leaves it out.
    """
    gpus: dict[str, int] = {}
    nics: dict[str, set[str]] = {}
    for topic, v in records:
        node = v.get("node")
        if not isinstance(node, str) or topic == STEP:
            continue
        if isinstance(v.get("gpu"), int):
            gpus[node] = max(gpus.get(node, 0), v["gpu"] + 1)
        if isinstance(v.get("nic"), str):
            nics.setdefault(node, set()).add(v["nic"])
    lines = [f"Topology={name} Version=1"]
    for node in sorted(gpus):  # the format needs a node's GPU count: NIC-only nodes stay out
        if not all(c.isalnum() or c in "-_." for c in node):
            continue
        nic_list = ",".join(sorted(n for n in nics.get(node, ()) if
                                   all(c.isalnum() or c in "-_." for c in n)))
        lines.append(f"NodeSet={node} Gpus={gpus[node]}" +
                     (f" Nics={nic_list}" if nic_list else ""))
    if len(lines) == 1:
        return None
    try:
        return Topology.from_text("\n".join(lines) + "\n", source=f"<{name}>", fmt="faultline")
    except TopologyError as exc:
        log.warning("no topology record for the log: %s", exc)
        return None


class LogSink:
    """Writes an incident log (gzip when the name ends in .gz), topology record first.

    Without a given topology the head is made from what was seen: the sink holds the
    first batches back until one names a GPU (dcgm-exporter may be down at the start),
    at most ``head_wait`` batches.
    """

    def __init__(self, path: str | os.PathLike[str], *, topology: Topology | None = None,
                 name: str = "collect", head_wait: int = 6) -> None:
        self.path = path
        self._topology = topology
        self._name = name
        self._raw = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._out: IO[bytes] = self._raw
        if str(path).endswith(".gz"):
            self._out = gzip.GzipFile(fileobj=self._raw, mode="wb", mtime=0)  # type: ignore[assignment]
        self._head_written = False
        self._held: list[tuple[str, dict[str, Any]]] = []
        self._held_batches = 0
        self._head_wait = head_wait
        self.sent = 0
        self.dropped = 0

    def send_batch(self, batch: list[tuple[str, dict[str, Any]]]) -> None:
        if not batch:
            return
        if not self._head_written:
            self._held.extend(batch)
            self._held_batches += 1
            if self._topology is None and self._held_batches < self._head_wait and not any(
                    "gpu" in v for _, v in self._held):
                return
            self._write_head()
            batch, self._held = self._held, []
        self._write(batch)

    def _write_head(self) -> None:
        topo = self._topology or observed_topology(self._name, self._held)
        if topo is not None:
            self._out.write(orjson.dumps(topo.record()) + b"\n")
        self._head_written = True

    def _write(self, batch: list[tuple[str, dict[str, Any]]]) -> None:
        for topic, value in batch:
            self._out.write(orjson.dumps({"topic": topic, "value": value}))
            self._out.write(b"\n")
            self.sent += 1
        self._out.flush()

    def poll(self) -> None:
        pass

    def buffered(self) -> int:
        return 0

    def close(self, timeout_s: float = 10.0) -> int:
        if not self._head_written and self._held:
            self._write_head()
            self._write(self._held)
        self._out.close()
        self._raw.close()
        return 0


class KafkaSink:
    """An idempotent confluent-kafka producer with a bounded buffer; never blocks the agent.

    librdkafka holds up to ``buffer_messages`` unsent messages while the broker
    is away; past that a message is dropped and counted, and so is one it could
    not deliver within ``message_timeout_s``.  Keys follow DESIGN.md: ``node``
    for the hardware topics, ``job`` for steps.

    Messages are counted from their own delivery reports, never from
    ``len(producer)``: librdkafka's out-queue length also holds its log lines
    and error events waiting to be served (a broker that is away queues one at
    every reconnect attempt), so it would count those as unsent messages.
    """

    def __init__(self, kafka_config: dict[str, Any], topics: dict[str, str], *,
                 buffer_messages: int = 100_000, message_timeout_s: float = 300.0,
                 linger_ms: float = 50.0, on_drop: Callable[[int], None] | None = None) -> None:
        from confluent_kafka import KafkaError, Producer

        self._purge_codes = frozenset((KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT))
        self._topics = topics
        self._on_drop = on_drop
        self.sent = 0
        self.dropped = 0
        self.failed = 0
        self.delivered = 0
        self._purged = 0
        self._closed = False
        self.first_error: str | None = None
        self._producer = Producer({
            # librdkafka's own lines go through faultline's log filters (rate-limited,
            # redacted) rather than straight to stderr.
            "logger": logging.getLogger("librdkafka"),
            **kafka_config,
            "enable.idempotence": True,
            # A producer must not create the topics with the broker's default partitions
            # before `faultline serve` creates them with the planned ones.
            "allow.auto.create.topics": False,
            "linger.ms": linger_ms,
            "compression.type": "lz4",  # the service reads every codec (aiokafka's extras)
            "queue.buffering.max.messages": buffer_messages,
            "message.timeout.ms": int(message_timeout_s * 1000),
            "on_delivery": self._delivered,
            "delivery.report.only.error": False,  # a success report counts it as gone
        })

    def _drop(self, n: int = 1) -> None:
        self.dropped += n
        if self._on_drop is not None:
            self._on_drop(n)

    def _delivered(self, err: Any, msg: Any) -> None:
        if self._closed:
            return  # counted when the sink closed
        if err is None:
            self.delivered += 1
        elif err.code() in self._purge_codes:
            self._purged += 1  # close() gave up on it
            self._drop()
        else:
            self.failed += 1
            if self.first_error is None:
                self.first_error = f"{msg.topic()}: {err}"
            self._drop()

    def send_batch(self, batch: list[tuple[str, dict[str, Any]]]) -> None:
        for topic, value in batch:
            key = value.get("job" if topic == STEP else "node")
            try:
                self._producer.produce(self._topics[topic], orjson.dumps(value),
                                       key.encode() if isinstance(key, str) else None)
            except BufferError:
                self._drop()  # the buffer is full: the broker has been away a while
                continue
            self.sent += 1
        self._producer.poll(0)

    def poll(self) -> None:
        self._producer.poll(0)

    def buffered(self) -> int:
        """Messages handed to librdkafka whose delivery report has not been served yet."""
        return self.sent - self.delivered - self.failed - self._purged

    def close(self, timeout_s: float = 10.0) -> int:
        """Deliver what is buffered (up to ``timeout_s``); returns how many were left (dropped).

        What is left is purged, and counted once from its purge reports; nothing is
        counted again when librdkafka lets go of the producer later.
        """
        from confluent_kafka import KafkaException

        before = self.dropped
        self._producer.flush(timeout_s)
        if self.buffered():
            with contextlib.suppress(KafkaException):  # purge refused: counted below
                self._producer.purge(in_queue=True, in_flight=True, blocking=True)
            self._producer.poll(0)  # serve the purge reports (blocking purge queued them)
        left = self.buffered()
        if left:
            self._purged += left
            self._drop(left)
        self._closed = True
        return self.dropped - before
