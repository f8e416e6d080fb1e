"""The development broker carries keyed messages end to end, each exactly once."""

from __future__ import annotations

import time
import uuid
from collections import Counter

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.kafka

N_MESSAGES = 100
PARTITIONS = 3


def test_keyed_messages_round_trip_once(kafka_bootstrap: str) -> None:
    topic = f"test.broker.{uuid.uuid4().hex}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[
        topic
    ].result(timeout=30)

    producer = confluent_kafka.Producer(
        {"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True}
    )
    sent = {f"value-{i}": f"node-{i % 7}" for i in range(N_MESSAGES)}
    for value, key in sent.items():
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0, "messages still undelivered after 30 s"

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": f"test-broker-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    received: Counter[str] = Counter()
    partitions_of_key: dict[str, set[int]] = {}
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        # Keep polling a little after the last expected message, so a duplicate shows.
        quiet_until = deadline
        while time.monotonic() < min(deadline, quiet_until):
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            value, key = msg.value().decode(), msg.key().decode()
            assert sent.get(value) == key, f"unexpected message {key!r}: {value!r}"
            received[value] += 1
            partitions_of_key.setdefault(key, set()).add(msg.partition())
            if sum(received.values()) == N_MESSAGES:
                quiet_until = time.monotonic() + 2
    finally:
        consumer.close()

    assert set(received) == set(sent), f"missing: {sorted(set(sent) - set(received))[:10]}"
    assert [v for v, n in received.items() if n > 1] == []
    # Keyed messages: one partition per key, and the keys spread over several partitions.
    assert all(len(p) == 1 for p in partitions_of_key.values())
    assert len(set().union(*partitions_of_key.values())) > 1
