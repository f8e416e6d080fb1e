"""Metrics: an injected registry, children bound once, bounded series; deploy files agree."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase

from detector.alerts import Action, Alert, Scope
from detector.decoding import InvalidMessage, decode, decode_value
from detector.metrics import (
    INVALID_REASONS,
    PagerMetrics,
    WorkerMetrics,
    invalid_reason,
    metric_names,
    serve_metrics,
)

ROOT = Path(__file__).resolve().parent.parent


def make_alert(node: str, gpu: int, *, status: str = "firing", kind: str = "hardware",
               cause: str = "gpu_memory", latency_s: float = 0.5) -> Alert:
    return Alert("alerts.isolation", f"fl:iso:{kind}:gpu:{node}/{gpu}", status, kind, cause,
                 Scope.of_gpu(node, gpu), Action("drain_gpu", "d", "r"), 100.0,
                 100.0 + latency_s, 0.9)


def series(reg: CollectorRegistry) -> int:
    return sum(len(f.samples) for f in reg.collect())


def test_worker_metrics_count_what_the_worker_sees() -> None:
    reg = CollectorRegistry()
    m = WorkerMetrics(reg)
    m.events("telemetry.step", 1000)
    m.events("telemetry.ecc", 16)
    m.events("some.other.topic", 2)
    m.alert(make_alert("node-007", 3, latency_s=0.4), processing_s=0.012)
    m.alert(make_alert("node-007", 3, status="resolved", latency_s=50.0), processing_s=0.02)
    m.state(state_bytes=3 * 1024 * 1024, gpus=1024)
    m.lag(("telemetry.step", 0), 120)
    m.lag(("telemetry.step", 1), 30)
    m.lag(("telemetry.nic", 0), 5)
    m.correlator_errors(2)

    def v(name: str, **labels: str) -> float | None:
        return reg.get_sample_value(name, labels)

    assert v("faultline_events_total", topic="telemetry.step") == 1000
    assert v("faultline_events_total", topic="other") == 2
    assert v("faultline_alerts_total", kind="hardware", cause="gpu_memory", status="firing") == 1
    assert v("faultline_alerts_total", kind="hardware", cause="gpu_memory",
             status="resolved") == 1
    # Detection latency is observed once, when the problem first fires.
    assert v("faultline_detection_latency_seconds_count", kind="hardware") == 1
    assert v("faultline_detection_latency_seconds_bucket", kind="hardware", le="0.5") == 1
    assert v("faultline_processing_latency_seconds_count") == 2
    assert v("faultline_engine_state_bytes") == 3 * 1024 * 1024
    assert v("faultline_tracked_gpus") == 1024
    assert v("faultline_consumer_lag_messages", topic="telemetry.step") == 150
    assert v("faultline_correlator_errors_total") == 2
    m.forget_partition(("telemetry.step", 0))
    assert v("faultline_consumer_lag_messages", topic="telemetry.step") == 30


def test_series_do_not_grow_with_the_cluster() -> None:
    reg = CollectorRegistry()
    m = WorkerMetrics(reg)
    m.alert(make_alert("node-0000", 0))
    before = series(reg)
    for n in range(2000):  # 16,000 GPUs
        for g in range(8):
            m.alert(make_alert(f"node-{n:04d}", g))
            m.events("telemetry.thermal")
    m.invalid("telemetry.step: field 'rank': is required (job=job-9 step=1)")
    m.invalid("a reason nobody wrote a pattern for, with an id 12345")
    assert series(reg) == before


def test_children_are_bound_once_never_per_event(monkeypatch: pytest.MonkeyPatch) -> None:
    worker = WorkerMetrics(CollectorRegistry())
    pager = PagerMetrics(CollectorRegistry(), ["oncall", "tickets"])

    def refuse(self: Any, *a: Any, **k: Any) -> None:
        raise AssertionError(".labels() called on the hot path")

    monkeypatch.setattr(MetricWrapperBase, "labels", refuse)
    for _ in range(3):
        worker.events("telemetry.nic", 10)
        worker.invalid("telemetry.nic: not valid JSON: x")
        worker.alert(make_alert("node-1", 2), processing_s=0.01)
        worker.state(10, 1)
        pager.consumed("alerts.escalation", "firing")
        pager.delivered("oncall", 0.2)
        pager.retry("tickets")
        pager.failed("oncall", "exhausted")
        pager.dead_letter("oncall")
        pager.held_back("oncall", "grouped", 63)
        pager.active("tickets", 4)
        pager.queued("oncall", 1)


def test_library_code_never_touches_the_global_registry() -> None:
    WorkerMetrics(CollectorRegistry())
    PagerMetrics(CollectorRegistry(), ["x"])
    assert not any(n.startswith("faultline") for n in metric_names(prometheus_client.REGISTRY))


def _invalid_messages() -> list[str]:
    reasons = []
    raws: list[tuple[str, Any]] = [
        ("telemetry.thermal", b"{"),
        ("telemetry.thermal", b"[1]"),
        ("telemetry.thermal", b'{"ts": 1.0, "gpu": 0}'),
        ("telemetry.thermal", b'{"ts": "soon", "node": "n", "gpu": 0}'),
        ("telemetry.thermal", b'{"ts": 1.0, "node": "n", "gpu": -1}'),
        ("telemetry.thermal", {"ts": 1.0, "node": "n", "gpu": 0, "gpu_temp_c": float("nan")}),
        ("telemetry.nic", b'{"ts": 1.0, "node": "n", "nic": "m", "port": 1, "link_state": "x"}'),
        ("telemetry.step", b'{"ts": 1.0, "job": "j", "step": 1, "rank": 0, "node": "n", '
                           b'"gpu": 0, "step_ms": 10, "compute_ms": 20}'),
        ("telemetry.step", b'{"ts": 1.0, "job": "j", "step": 1, "rank": 0, "node": "n", '
                           b'"gpu": 0, "step_ms": 10, "tp_rank": 0}'),
        ("telemetry.nope", b"{}"),
    ]
    for topic, raw in raws:
        try:
            decode_value(topic, raw) if isinstance(raw, dict) else decode(topic, raw)
        except InvalidMessage as exc:
            reasons.append(str(exc))
        else:
            raise AssertionError(f"{raw!r} decoded")
    return reasons


def test_every_decoder_rejection_gets_a_bounded_reason_other_than_other() -> None:
    labels = [invalid_reason(r) for r in _invalid_messages()]
    assert labels == ["not_json", "not_object", "missing_field", "wrong_type", "out_of_range",
                      "non_finite", "bad_value", "inconsistent", "inconsistent",
                      "unknown_topic"]
    assert set(labels) <= set(INVALID_REASONS)
    assert invalid_reason("telemetry.ecc: internal error in the engine: KeyError: 'x'") == \
        "engine_error"


def test_metrics_endpoint_serves_the_injected_registry() -> None:
    reg = CollectorRegistry()
    WorkerMetrics(reg).events("telemetry.step", 7)
    with serve_metrics(reg, 0, "127.0.0.1") as server, \
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as r:
        text = r.read().decode()
    assert 'faultline_events_total{topic="telemetry.step"} 7.0' in text
    assert "python_gc_objects_collected_total" not in text  # not the global registry


def _all_names() -> set[str]:
    worker, pager = CollectorRegistry(), CollectorRegistry()  # two processes
    WorkerMetrics(worker)
    PagerMetrics(pager, ["oncall"])
    return metric_names(worker) | metric_names(pager)


_NAME = re.compile(r"\bfaultline_[a-z_]+")


def test_the_dashboard_shows_only_metrics_that_exist() -> None:
    dash = json.loads((ROOT / "deploy/grafana/faultline-dashboard.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    used = {n for e in exprs for n in _NAME.findall(e)}
    assert len(used) >= 15
    assert used <= _all_names(), sorted(used - _all_names())
    # Every metric of the worker and the pager has a panel.
    families = {f.name for f in _registry_families()}
    shown = {n.removesuffix("_bucket").removesuffix("_count").removesuffix("_total")
             for n in used}
    assert families <= shown, sorted(families - shown)


def _registry_families() -> list[Any]:
    worker, pager = CollectorRegistry(), CollectorRegistry()
    WorkerMetrics(worker)
    PagerMetrics(pager, ["oncall"])
    return list(worker.collect()) + list(pager.collect())


def test_the_alert_rules_use_only_metrics_that_exist() -> None:
    text = (ROOT / "deploy/prometheus/faultline-rules.yml").read_text()
    used = set(_NAME.findall(text))
    assert len(used) >= 8
    assert used <= _all_names(), sorted(used - _all_names())
