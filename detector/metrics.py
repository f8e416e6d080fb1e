"""Prometheus metrics of the worker and the pager: an injected registry, bounded labels.

Every metric is defined against a registry the caller passes in (never the
global one), and every label value comes from a fixed set — topics, kinds,
causes, statuses, sinks, a small set of invalid-input reasons — so a cluster
of 100,000 GPUs makes the same few hundred series as one of eight.  Children
are bound once (at construction, or on the first sight of a bounded label
combination), never with ``.labels()`` per event.

>>> from prometheus_client import CollectorRegistry
>>> reg = CollectorRegistry()
>>> m = WorkerMetrics(reg)
>>> m.events("telemetry.step", 500)
>>> m.invalid("telemetry.step: field 'step_ms': must be a finite number, got nan (job=j)")
>>> reg.get_sample_value("faultline_events_total", {"topic": "telemetry.step"})
500.0
>>> reg.get_sample_value("faultline_invalid_events_total", {"reason": "non_finite"})
1.0
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from detector.alerts import ALERT_TOPICS, CAUSES, KINDS
from detector.events import TELEMETRY_TOPICS
from detector.statecodec import REASONS as SNAPSHOT_REFUSALS

STATUSES = ("firing", "resolved")
OTHER = "other"
# Monitors.unreadable's kinds: values taken as no reading (DCGM blanks, impossible readings)
UNREADABLE_KINDS = ("counter_blank", "counter_implausible", "thermal")

# Why a message was dead-lettered, as a label: a small fixed set, never the message text.
INVALID_REASONS = ("not_json", "not_object", "no_value", "unknown_topic", "missing_field",
                   "wrong_type", "non_finite", "out_of_range", "bad_value", "inconsistent",
                   "engine_error", "too_large", "too_deep", "bad_name", "ts_out_of_range",
                   "codec", OTHER)
# (pattern in the reason text, label); the first that matches wins.
_REASON_PATTERNS = (
    ("internal error in the engine", "engine_error"),
    ("ts_out_of_range", "ts_out_of_range"),
    ("cannot be decompressed", "codec"),
    ("bytes is over the limit of", "too_large"),
    ("nested too deep", "too_deep"),
    ("must be a name of", "bad_name"),
    ("not valid JSON", "not_json"),
    ("must be a JSON object", "not_object"),
    ("has no value", "no_value"),
    ("unknown topic", "unknown_topic"),
    ("is required", "missing_field"),
    ("come all three or none", "inconsistent"),
    ("must be >= compute_ms + comm_ms", "inconsistent"),
    ("must be a finite number", "non_finite"),
    (re.compile(r"got (?:str|float|bool|list|dict|NoneType|int) "), "wrong_type"),
    ("must be true or false", "wrong_type"),
    ("must be >=", "out_of_range"),
    ("must be an integer >= 0", "out_of_range"),
    ("must be one of", "bad_value"),
    ("must be a non-empty string", "bad_value"),
)

# Detection latency is event time: hardware events are due within 1 s, slow ranks
# within ~10 steps, escalations after a short wait.
DETECTION_BUCKETS_S = (0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0)
# Arrival to alert produced, wall time: the target is p99 <= 250 ms.
PROCESSING_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
DELIVERY_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


def invalid_reason(text: str) -> str:
    """The bounded label for a dead-letter reason (the text itself goes to the dead-letter topic).

    >>> invalid_reason("telemetry.ecc: not valid JSON: unexpected character")
    'not_json'
    >>> invalid_reason("telemetry.step: field 'gpu': must be an integer >= 0, got str 'x'")
    'wrong_type'
    >>> invalid_reason("something nobody foresaw")
    'other'
    """
    for pattern, label in _REASON_PATTERNS:
        if isinstance(pattern, str):
            if pattern in text:
                return label
        elif pattern.search(text):
            return label
    return OTHER


class _AlertLike(Protocol):
    kind: str
    cause: str
    status: str

    @property
    def detection_latency_s(self) -> float: ...


def _bounded(value: str, allowed: Iterable[str]) -> str:
    return value if value in allowed else OTHER


class ConsumerLag:
    """Messages behind the partition ends, per topic, over the partitions this process holds."""

    def __init__(self, registry: CollectorRegistry, topics: Iterable[str]) -> None:
        self._gauge = Gauge("faultline_consumer_lag_messages",
                            "Messages not yet consumed, over the partitions this process holds",
                            ["topic"], registry=registry)
        self._children = {t: self._gauge.labels(t) for t in topics}
        self._by_tp: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    def set(self, tp: tuple[str, int] | Any, n: int) -> None:
        """Lag of one (topic, partition): a pair, or anything with .topic and .partition."""
        key = _tp_key(tp)
        with self._lock:
            self._by_tp[key] = max(0, int(n))
            self._refresh(key[0])

    def forget(self, tp: tuple[str, int] | Any) -> None:
        """A partition this process no longer holds."""
        key = _tp_key(tp)
        with self._lock:
            if self._by_tp.pop(key, None) is not None:
                self._refresh(key[0])

    def _refresh(self, topic: str) -> None:
        child = self._children.get(topic)
        if child is None:  # a topic not named at construction: bounded by the subscription
            child = self._children[topic] = self._gauge.labels(topic)
        child.set(sum(n for (t, _), n in self._by_tp.items() if t == topic))


class _HoldsPartitions:
    """Consumer lag of a process that holds Kafka partitions (the worker, the pager)."""

    _lag: ConsumerLag

    def lag(self, tp: tuple[str, int] | Any, n: int) -> None:
        """Messages behind the end of one partition this process holds."""
        self._lag.set(tp, n)

    def forget_partition(self, tp: tuple[str, int] | Any) -> None:
        """A partition revoked: its lag is no longer this process's."""
        self._lag.forget(tp)


def _tp_key(tp: tuple[str, int] | Any) -> tuple[str, int]:
    if isinstance(tp, tuple):
        return str(tp[0]), int(tp[1])
    return str(tp.topic), int(tp.partition)


class WorkerMetrics(_HoldsPartitions):
    """What ``faultline serve`` reports: input, bad input, alerts, latency, state, lag.

    ``topics`` are the topic names as the worker sees them (with a prefix, if
    any); telemetry topics not listed count under ``other``.
    """

    def __init__(self, registry: CollectorRegistry, *,
                 topics: Iterable[str] = TELEMETRY_TOPICS) -> None:
        topics = tuple(topics)
        events = Counter("faultline_events", "Telemetry messages consumed (valid or not)",
                         ["topic"], registry=registry)
        self._events = {t: events.labels(t) for t in (*topics, OTHER)}
        invalid = Counter("faultline_invalid_events", "Telemetry messages dead-lettered, by "
                          "reason", ["reason"], registry=registry)
        self._invalid = {r: invalid.labels(r) for r in INVALID_REASONS}
        self._alerts_family = Counter("faultline_alerts", "Alert messages produced",
                                      ["kind", "cause", "status"], registry=registry)
        self._alerts: dict[tuple[str, str, str], Any] = {}
        detection = Histogram("faultline_detection_latency_seconds",
                              "Event time from the onset of a problem to its first firing alert",
                              ["kind"], buckets=DETECTION_BUCKETS_S, registry=registry)
        self._detection = {k: detection.labels(k) for k in (*KINDS, OTHER)}
        self._processing = Histogram(
            "faultline_processing_latency_seconds",
            "Wall time from the arrival of the input an alert depends on to the alert produced",
            buckets=PROCESSING_BUCKETS_S, registry=registry)
        self._state_bytes = Gauge("faultline_engine_state_bytes",
                                  "Size of this worker's engine state (its latest snapshots)",
                                  registry=registry)
        self._gpus = Gauge("faultline_tracked_gpus", "GPUs this worker keeps models for",
                           registry=registry)
        unreadable = Gauge("faultline_unreadable_values", "Telemetry values taken as no reading "
                           "by the units this worker tracks, by kind: DCGM blank sentinels in "
                           "counters, counter jumps no hardware counts, temperatures, powers "
                           "and clocks no GPU reads", ["kind"], registry=registry)
        self._unreadable = {k: unreadable.labels(k) for k in UNREADABLE_KINDS}
        self._lag = ConsumerLag(registry, topics)
        refused = Counter("faultline_snapshot_refused", "State snapshots not restored (the "
                          "partition started afresh from its committed position), by reason",
                          ["reason"], registry=registry)
        self._refused = {r: refused.labels(r) for r in (*SNAPSHOT_REFUSALS, OTHER)}
        self._correlator_errors = Counter(
            "faultline_correlator_errors", "Findings and timers the correlator failed on "
            "(each logged and skipped: its findings partition went on)", registry=registry)
        # Seen at scrape time: a faultline that stopped reading shows as no increase.
        for kind in KINDS:
            for cause in CAUSES:
                for status in STATUSES:
                    self._alerts[(kind, cause, status)] = self._alerts_family.labels(
                        kind, cause, status)

    def events(self, topic: str, n: int = 1) -> None:
        """``n`` messages consumed from ``topic`` (invalid ones included)."""
        (self._events.get(topic) or self._events[OTHER]).inc(n)

    def invalid(self, reason: str) -> None:
        """One message dead-lettered; ``reason`` is its text (or already a label)."""
        label = reason if reason in self._invalid else invalid_reason(reason)
        self._invalid[label].inc()

    def alert(self, alert: _AlertLike, processing_s: float | None = None) -> None:
        """One alert produced; its detection latency is observed when it first fires."""
        key = (_bounded(alert.kind, KINDS), _bounded(alert.cause, CAUSES),
               _bounded(alert.status, STATUSES))
        child = self._alerts.get(key)
        if child is None:  # an unknown kind/cause/status: still a bounded set (x other)
            child = self._alerts[key] = self._alerts_family.labels(*key)
        child.inc()
        if alert.status == "firing":
            self._detection[key[0]].observe(max(0.0, alert.detection_latency_s))
        if processing_s is not None:
            self._processing.observe(max(0.0, processing_s))

    def state(self, state_bytes: int, gpus: int) -> None:
        """The engine state this worker holds now: bytes (of its snapshots) and GPUs tracked."""
        self._state_bytes.set(state_bytes)
        self._gpus.set(gpus)

    def unreadable(self, counts: dict[str, int]) -> None:
        """Values taken as no reading, by kind (Monitors.unreadable, summed over partitions)."""
        for kind, child in self._unreadable.items():
            child.set(counts.get(kind, 0))

    def snapshot_refused(self, reason: str) -> None:
        """One partition's snapshot refused (see detector.statecodec.REASONS)."""
        (self._refused.get(reason) or self._refused[OTHER]).inc()

    def correlator_errors(self, n: int) -> None:
        """``n`` findings or timers the correlator stage failed on (a bug: see the log)."""
        self._correlator_errors.inc(n)


PAGER_OUTCOMES = ("rejected", "exhausted")
HELD_REASONS = ("grouped", "rate_limited", "duplicate", "cleared", "withdrawn")


class PagerMetrics(_HoldsPartitions):
    """What ``faultline pager`` reports, by sink: deliveries, retries, failures, dead letters."""

    def __init__(self, registry: CollectorRegistry, sinks: Iterable[str], *,
                 topics: Iterable[str] = ALERT_TOPICS) -> None:
        sinks = tuple(sinks)
        topics = tuple(topics)
        alerts = Counter("faultline_pager_alerts", "Alert messages consumed by the pager",
                         ["topic", "status"], registry=registry)
        self._topics = frozenset(topics)
        self._alerts = {(t, s): alerts.labels(t, s) for t in (*topics, OTHER)
                        for s in (*STATUSES, OTHER)}
        self._invalid = Counter("faultline_pager_invalid", "Messages on the alert topics that "
                                "were not alert envelopes (dead-lettered)", registry=registry)
        self._unrouted = Counter("faultline_pager_unrouted", "Alerts no route sent anywhere",
                                 registry=registry)
        self._cleared_in_backlog = Counter(
            "faultline_pager_cleared_in_backlog", "Firing alerts read from a backlog whose "
            "resolve was in it too: only the resolve went on", registry=registry)
        self._in_flight = Gauge("faultline_pager_in_flight", "Alert messages consumed and not "
                                "yet delivered or dead-lettered (held at max_in_flight)",
                                registry=registry)
        self._in_flight_peak = Gauge("faultline_pager_in_flight_peak", "The most alert "
                                     "messages in flight at once since the pager started",
                                     registry=registry)
        per_sink: dict[str, dict[str, Any]] = {s: {} for s in sinks}

        def family(kind: type, name: str, text: str, extra: tuple[str, ...] = (),
                   values: tuple[str, ...] = (), **kw: Any) -> None:
            m = kind(name, text, ["sink", *extra], registry=registry, **kw)
            for s in sinks:
                per_sink[s][name] = ({v: m.labels(s, v) for v in values} if extra
                                     else m.labels(s))

        family(Counter, "faultline_pager_deliveries", "Notifications a sink accepted")
        family(Counter, "faultline_pager_retries", "Delivery attempts repeated after a 429, "
               "a 5xx, a timeout or a refused connection")
        family(Counter, "faultline_pager_failures", "Notifications given up: rejected by the "
               "sink (4xx) or out of retries; each is dead-lettered", ("reason",), PAGER_OUTCOMES)
        family(Counter, "faultline_pager_deadletters", "Notifications written to the dead-letter "
               "topic or file")
        family(Counter, "faultline_pager_held_back", "Alerts not sent on their own: folded into "
               "a group, held by the rate limit, already delivered, cleared before sending, or "
               "withdrawn: resolved inside storm control's hold",
               ("reason",), HELD_REASONS)
        family(Gauge, "faultline_pager_active_alerts", "Firing alerts a sink keeps re-sending "
               "(Alertmanager) or remembers as triggered")
        family(Gauge, "faultline_pager_queued", "Notifications waiting for or in delivery")
        family(Gauge, "faultline_pager_failing_since", "Unix time since which every attempt "
               "to reach the sink failed transiently (being retried); 0 while it answers")
        family(Gauge, "faultline_pager_deadletters_outstanding", "Alerts dead-lettered by the "
               "sink and not delivered since (a later delivery clears them)")
        family(Histogram, "faultline_pager_delivery_seconds", "Wall time to deliver a "
               "notification, retries included", buckets=DELIVERY_BUCKETS_S)
        self._sink = per_sink
        self._lag = ConsumerLag(registry, topics)

    def consumed(self, topic: str, status: str) -> None:
        key = (topic if topic in self._topics else OTHER,
               status if status in STATUSES else OTHER)
        self._alerts[key].inc()

    def invalid(self) -> None:
        self._invalid.inc()

    def unrouted(self) -> None:
        self._unrouted.inc()

    def cleared_in_backlog(self) -> None:
        self._cleared_in_backlog.inc()

    def in_flight(self, n: int, peak: int) -> None:
        self._in_flight.set(n)
        self._in_flight_peak.set(peak)

    def delivered(self, sink: str, seconds: float) -> None:
        m = self._sink[sink]
        m["faultline_pager_deliveries"].inc()
        m["faultline_pager_delivery_seconds"].observe(max(0.0, seconds))

    def retry(self, sink: str) -> None:
        self._sink[sink]["faultline_pager_retries"].inc()

    def failed(self, sink: str, reason: str) -> None:
        """``reason``: ``rejected`` (the sink said no) or ``exhausted`` (out of retries)."""
        self._sink[sink]["faultline_pager_failures"][reason].inc()

    def dead_letter(self, sink: str) -> None:
        self._sink[sink]["faultline_pager_deadletters"].inc()

    def held_back(self, sink: str, reason: str, n: int = 1) -> None:
        self._sink[sink]["faultline_pager_held_back"][reason].inc(n)

    def active(self, sink: str, n: int) -> None:
        self._sink[sink]["faultline_pager_active_alerts"].set(n)

    def failing_since(self, sink: str, since: float) -> None:
        self._sink[sink]["faultline_pager_failing_since"].set(since)

    def deadletters_outstanding(self, sink: str, n: int) -> None:
        self._sink[sink]["faultline_pager_deadletters_outstanding"].set(n)

    def queued(self, sink: str, n: int) -> None:
        self._sink[sink]["faultline_pager_queued"].set(n)

class MetricsServer:
    """An HTTP ``/metrics`` endpoint for one registry, on a thread; ``port=0`` picks a free port."""

    def __init__(self, registry: CollectorRegistry, port: int, addr: str = "127.0.0.1") -> None:
        self._server, self._thread = start_http_server(port, addr=addr, registry=registry)

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_metrics(registry: CollectorRegistry, port: int, addr: str = "127.0.0.1") -> MetricsServer:
    """Start serving ``registry`` on ``addr:port``/metrics; ``close()`` stops it."""
    return MetricsServer(registry, port, addr)


def metric_names(registry: CollectorRegistry) -> set[str]:
    """Every sample name the registry exposes (``_total``, ``_bucket``, ... included)."""
    names: set[str] = set()
    for family in registry.collect():
        names.add(family.name)
        for sample in family.samples:
            names.add(sample.name)
    return names
