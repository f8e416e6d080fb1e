"""``faultline replay LOG --to-kafka``: produce an incident log's telemetry into Kafka.

Records go to their telemetry topic (prefix applied) keyed as the data
contract says — ``job`` for steps, ``node`` for the rest — so a peer group
shares a partition and a node's hardware streams share one.  As fast as
possible, or paced by event time (``speed`` 10 = ten times real time).
Labels and alert records are not telemetry: they are counted and skipped.
Values are re-serialized with orjson as read (a replay, not a byte copy).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import orjson

from detector.alerts import ALERT_TOPICS
from detector.events import STEP, TELEMETRY_TOPICS
from detector.service.kafka_io import OutputProducer, ensure_topics
from detector.settings import Settings
from replay.log import InvalidRecord, read_records


@dataclass
class ProduceResult:
    """What a produce run sent, skipped and took."""

    sent: int = 0
    per_topic: dict[str, int] = field(default_factory=dict)
    labels: int = 0
    alerts: int = 0
    invalid: int = 0
    unkeyed: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.sent / self.seconds if self.seconds > 0 else 0.0


def produce_logs(paths: Iterable[str | os.PathLike[str]], settings: Settings, *,
                 speed: float | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic,
                 create_topics: bool = True) -> ProduceResult:
    """Produce every telemetry record of the logs, in file order; flushes before returning."""
    if speed is not None and not speed > 0:
        raise ValueError(f"--speed must be > 0, got {speed}")
    topics = {t: settings.topic(t) for t in TELEMETRY_TOPICS}
    if create_topics:
        plan = {name: (settings.partitions_telemetry, {}) for name in topics.values()}
        ensure_topics(settings, plan)
    out = OutputProducer(settings, linger_ms=20.0)
    res = ProduceResult()
    start = clock()
    first_ts: float | None = None
    for path in paths:
        for rec in read_records(path):
            if isinstance(rec, InvalidRecord):
                res.invalid += 1
                continue
            topic = rec.topic
            if topic not in topics:
                if topic == "labels":
                    res.labels += 1
                elif topic in ALERT_TOPICS:
                    res.alerts += 1
                else:
                    res.invalid += 1
                continue
            value = rec.value
            key = value.get("job" if topic == STEP else "node") if isinstance(value, dict) else None
            if not isinstance(key, str):
                res.unkeyed += 1  # still produced: the service dead-letters it with the reason
                key = None
            if speed is not None and isinstance(value, dict):
                ts = value.get("ts")
                if isinstance(ts, (int, float)):
                    if first_ts is None:
                        first_ts = float(ts)
                    wait = start + (ts - first_ts) / speed - clock()
                    if wait > 0.001:
                        out.poll()
                        sleep(wait)
            out.produce(topics[topic], orjson.dumps(value), key.encode() if key else None)
            res.sent += 1
            res.per_topic[topic] = res.per_topic.get(topic, 0) + 1
            if res.sent % 10_000 == 0:
                out.poll()
    left = out.flush_blocking(60.0)
    out.check()
    if left:
        raise RuntimeError(f"{left} records still undelivered after 60 s")
    res.seconds = clock() - start
    return res
