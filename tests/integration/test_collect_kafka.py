"""The collector's Kafka sink against the real broker: it never creates topics itself."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient

from detector.collect.sinks import KafkaSink
from detector.events import ECC

pytestmark = pytest.mark.kafka


def test_a_missing_topic_is_not_created_by_the_agent_and_its_messages_count_as_dropped(
        kafka_bootstrap: str) -> None:
    topic = f"it-{uuid.uuid4().hex[:10]}.telemetry.ecc"
    sink = KafkaSink({"bootstrap.servers": kafka_bootstrap}, {ECC: topic},
                     message_timeout_s=2.0)
    sink.send_batch([(ECC, {"ts": 1.0, "node": "n", "gpu": g}) for g in range(5)])
    assert sink.close(5.0) == 0 or sink.dropped == 5
    assert sink.dropped == 5  # timed out in the buffer, or left at close: counted either way
    topics = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10).topics
    assert topic not in topics  # the broker auto-creates; serve must create it, planned
