"""Topics created when missing, and their partition counts: used by the service and the pager."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from detector.settings import Settings

log = logging.getLogger(__name__)


class KafkaSetupError(RuntimeError):
    """Kafka could not be reached, or refused what a process needs (topics, metadata)."""


def ensure_topics(settings: Settings, topics: Mapping[str, tuple[int, dict[str, str]]],
                  timeout_s: float = 30.0) -> dict[str, int]:
    """Create the missing topics; return the partition count of each (existing ones as found)."""
    plan = dict(topics)
    admin = AdminClient(settings.kafka_config())
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            existing = admin.list_topics(timeout=min(2.0, timeout_s)).topics
            break
        except KafkaException as exc:
            # Serve librdkafka's log lines (its `logger` is faultline's, rate-limited).
            admin.poll(0)
            if time.monotonic() >= deadline:
                raise KafkaSetupError(f"cannot reach Kafka at {settings.bootstrap_servers}: "
                                      f"{exc.args[0]}") from None
            log.warning("cannot reach Kafka at %s yet: %s", settings.bootstrap_servers,
                        exc.args[0].str())
    missing = [NewTopic(name, num_partitions=n, replication_factor=settings.replication_factor,
                        config=conf)
               for name, (n, conf) in plan.items() if name not in existing]
    if missing:
        futures = admin.create_topics(missing, operation_timeout=timeout_s)
        for name, fut in futures.items():
            try:
                fut.result(timeout=timeout_s)
                log.info("created topic %s (%d partitions)", name, plan[name][0])
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:  # a racing worker
                    raise KafkaSetupError(f"cannot create topic {name!r}: {exc.args[0]}"
                                          ) from None
    return partition_counts(admin, list(plan), timeout_s)


def partition_counts(admin: AdminClient, names: list[str], timeout_s: float) -> dict[str, int]:
    """Partitions of each topic, waiting until metadata shows all of them with a leader."""
    deadline = time.monotonic() + timeout_s
    while True:
        topics = admin.list_topics(timeout=timeout_s).topics
        counts = {n: len(topics[n].partitions) for n in names
                  if n in topics and topics[n].error is None and topics[n].partitions
                  and all(p.leader >= 0 for p in topics[n].partitions.values())}
        if len(counts) == len(names):
            return counts
        if time.monotonic() > deadline:
            raise KafkaSetupError(
                f"topics without metadata: {sorted(set(names) - set(counts))}")
        time.sleep(0.1)
