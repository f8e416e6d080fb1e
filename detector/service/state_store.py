"""Partition snapshots in a compacted Kafka topic: where each partition's state and position live.

One message per partition of the service's input, keyed
``<group>|<topic>:<partition>`` (the consumer group in the key keeps two
deployments sharing a state topic apart); the value is the offset of the last
input message the state includes (8 bytes, big-endian, signed) followed by the
state bytes.  Compaction keeps the newest snapshot of each key.

The snapshot, not Kafka's committed offset, says where a partition resumes:
the worker that gets a partition reads its snapshot, restores the state and
resumes at the next offset (see :mod:`detector.service.app`).

>>> offset, blob = decode_value(encode_value(41, b"state"))
>>> offset, blob
(41, b'state')
"""

from __future__ import annotations

import logging
import struct
import time
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">q")


def snapshot_key(group: str, topic: str, partition: int) -> str:
    return f"{group}|{topic}:{partition}"


def encode_value(offset: int, blob: bytes) -> bytes:
    return _HEADER.pack(offset) + blob


def decode_value(value: bytes) -> tuple[int, bytes]:
    if len(value) < _HEADER.size:
        raise ValueError(f"snapshot of {len(value)} bytes is shorter than its header")
    return _HEADER.unpack_from(value)[0], value[_HEADER.size:]


class StateStore:
    """Reads the newest snapshots of some keys from the compacted state topic (blocking)."""

    def __init__(self, topic: str, kafka_config: dict[str, Any], group: str,
                 max_snapshot_bytes: int) -> None:
        self.topic = topic
        self.group = group
        self._conf = {
            **kafka_config,
            # assign() only: this consumer never joins a group nor commits.
            "group.id": f"{group}.state-reader.{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "fetch.max.bytes": max(52428800, max_snapshot_bytes * 2),
            "receive.message.max.bytes": max(100000000, max_snapshot_bytes * 3),
        }

    def read(self, keys: Iterable[str], timeout_s: float = 60.0) -> dict[str, tuple[int, bytes]]:
        """The newest (offset, state bytes) of each of ``keys`` that has a snapshot."""
        wanted = {k.encode() for k in keys}
        found: dict[bytes, bytes | None] = {}
        if not wanted:
            return {}
        consumer = Consumer(self._conf)
        try:
            for msg in messages_to_end(consumer, self.topic, timeout_s):
                key = msg.key()
                if key in wanted:
                    found[key] = msg.value()  # later messages win, as compaction will decide
        finally:
            consumer.close()
        out: dict[str, tuple[int, bytes]] = {}
        for key, value in found.items():
            if value is None:
                continue  # a tombstone: the state was dropped on purpose
            try:
                out[key.decode()] = decode_value(value)
            except ValueError as exc:
                log.warning("state topic %s: ignoring snapshot %s: %s", self.topic, key, exc)
        return out


def messages_to_end(consumer: Consumer, topic: str, timeout_s: float) -> Iterator[Any]:
    """Every message of ``topic``, each partition from its low offset to its end as of now.

    ``consumer`` has ``enable.partition.eof`` set and is assigned here.  Raises
    RuntimeError if the topic is missing or a read fails, TimeoutError if a
    partition is not read to its end within ``timeout_s``.
    """
    meta = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
    if meta is None or meta.error is not None:
        raise RuntimeError(f"topic {topic!r} is missing: "
                           f"{meta.error if meta else 'not in metadata'}")
    ends: dict[int, int] = {}
    starts: list[TopicPartition] = []
    for p in meta.partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)
        if high > low:
            ends[p] = high
            starts.append(TopicPartition(topic, p, low))
    if not ends:
        return
    consumer.assign(starts)
    deadline = time.monotonic() + timeout_s
    while ends:
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic!r}: not read to its end in {timeout_s:.0f}s "
                               f"(partitions left: {sorted(ends)})")
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        err = msg.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                ends.pop(msg.partition(), None)
                continue
            raise RuntimeError(f"topic {topic!r}: {err}")
        yield msg
        if msg.offset() + 1 >= ends.get(msg.partition(), 0):
            ends.pop(msg.partition(), None)


def start_positions(kafka_config: dict[str, Any], group: str, partitions: Iterable[tuple[str, int]],
                    reset: str, timeout_s: float = 30.0) -> dict[tuple[str, int], int]:
    """Where a consumer of ``group`` starts each partition that has no snapshot (blocking).

    The committed offset, or else the earliest or latest offset as ``reset``
    says: what Faust's seek will pick, so a fresh partition knows its position
    (and whether it is caught up) before its first message.
    """
    tps = [TopicPartition(t, p) for t, p in partitions]
    if not tps:
        return {}
    # Reads the group's committed offsets without joining the group (no subscribe).
    consumer = Consumer({**kafka_config, "group.id": group, "enable.auto.commit": False})
    try:
        out: dict[tuple[str, int], int] = {}
        for tp in consumer.committed(tps, timeout=timeout_s):
            if tp.offset >= 0:
                out[(tp.topic, tp.partition)] = tp.offset
                continue
            low, high = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition),
                                                       timeout=timeout_s)
            out[(tp.topic, tp.partition)] = low if reset == "earliest" else high
        return out
    finally:
        consumer.close()
