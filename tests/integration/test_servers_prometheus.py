"""Prometheus scrapes faultline's metrics, a deploy rule fires, Alertmanager passes it on.

The pager's metrics are served from this process (the registry a real pager
uses, fed by a real PagerDuty sink); the sink is made to fail — the local
"PagerDuty" refuses every event — and FaultlinePagerDeliveryFailed, from
deploy/prometheus/faultline-rules.yml unchanged, must reach a webhook through
Alertmanager.  The dashboard's queries are checked against the same server.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from servers_harness import DEPLOY, alertmanager, prometheus, promql, wait_for

from detector.alerts import ESCALATION
from detector.metrics import PagerMetrics, WorkerMetrics, serve_metrics
from detector.pager.config import PagerConfig
from detector.pager.core import FileDeadLetters, Pager
from detector.pager.testing import Receiver, alert

pytestmark = pytest.mark.servers

PROMETHEUS = """
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - {rules}
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:{am_port}"]
scrape_configs:
  - job_name: faultline-serve
    static_configs:
      - targets: ["127.0.0.1:{serve_port}"]
  - job_name: faultline-pager
    static_configs:
      - targets: ["127.0.0.1:{pager_port}"]
"""

ALERTMANAGER = """
route:
  receiver: hook
  group_by: [alertname]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: {url}/
"""


def test_a_failing_sink_fires_the_pager_rule_through_prometheus_and_alertmanager(
        tmp_path: Path) -> None:
    pager_reg, worker_reg = CollectorRegistry(), CollectorRegistry()
    worker = WorkerMetrics(worker_reg)
    worker.events("telemetry.step", 100)
    with Receiver() as hook, Receiver(default=400) as pagerduty, \
            serve_metrics(pager_reg, 0, "127.0.0.1") as pager_http, \
            serve_metrics(worker_reg, 0, "127.0.0.1") as worker_http, \
            alertmanager(tmp_path, ALERTMANAGER.format(url=hook.url)) as am:
        cfg = PagerConfig.from_dict({
            "sinks": {"pagerduty": {"url": pagerduty.url, "routing_key": "x" * 32,
                                    "storm": {"enabled": False}}},
            "deadletter_file": str(tmp_path / "dead.jsonl")}, env={})
        pager = Pager(cfg, PagerMetrics(pager_reg, cfg.sinks),
                      FileDeadLetters(tmp_path / "dead.jsonl"))
        pager.start()
        config = PROMETHEUS.format(rules=DEPLOY / "prometheus" / "faultline-rules.yml",
                                   am_port=am.port, serve_port=worker_http.port,
                                   pager_port=pager_http.port)
        with prometheus(tmp_path, config) as prom:
            try:
                # The failure counter must be seen at 0 before it moves, or increase() is blind.
                wait_for("two scrapes of the pager at zero failures", lambda: _value(
                    prom, 'count_over_time(faultline_pager_failures_total'
                          '{sink="pagerduty", reason="rejected"}[1m])') >= 2, 30,
                    on_timeout=prom.log_tail)
                # Both targets up: waited for, not read once (one late scrape on a loaded box
                # reads `up` 0 for that target until the next one).
                wait_for("both faultline targets up", lambda: _value(
                    prom, 'sum(up{job=~"faultline-.*"})') == 2, 30, on_timeout=prom.log_tail)

                pager.submit(alert("node-007", topic=ESCALATION, kind="sdc",
                                   cause="unknown"), None)
                wait_for("the delivery to fail", pager.idle, 20)

                body = hook.wait_for(
                    "FaultlinePagerDeliveryFailed at the webhook, through Alertmanager",
                    lambda _: [b for b in hook.bodies() if b["status"] == "firing"], 60)[0]
                (fired,) = body["alerts"]
                assert fired["labels"] == {
                    "alertname": "FaultlinePagerDeliveryFailed", "severity": "critical",
                    "component": "faultline", "job": "faultline-pager",
                    "instance": f"127.0.0.1:{pager_http.port}", "sink": "pagerduty"}
                assert fired["annotations"]["summary"] == (
                    "faultline's pager gave up on notifications to pagerduty")
                # Nothing else of faultline's health is wrong.  Waited for, not read once: on
                # a loaded box one late scrape marks the pager's series stale, and for that
                # evaluation ALERTS is empty (CI on a box running a healthy fleet beside it).
                wait_for("only FaultlinePagerDeliveryFailed firing",
                         lambda: _firing(prom) == {"FaultlinePagerDeliveryFailed"}, 30,
                         on_timeout=lambda: f"firing: {_firing(prom)}\n{prom.log_tail()}")

                # Every dashboard query parses and runs against a real Prometheus.
                _check_dashboard_queries(prom)
            finally:
                pager.close(5)


def _value(prom: object, expr: str) -> float:
    res = promql(prom, expr)  # type: ignore[arg-type]
    assert res["status"] == "success", res
    result = res["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def _firing(prom: object) -> set[str]:
    res = promql(prom, 'ALERTS{alertstate="firing"}')  # type: ignore[arg-type]
    return {r["metric"]["alertname"] for r in res["data"]["result"]}


def _check_dashboard_queries(prom: object) -> None:
    dash = json.loads((DEPLOY / "grafana" / "faultline-dashboard.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert exprs
    for e in exprs:
        q = re.sub(r"\$__rate_interval", "1m", e).replace("$job", ".*")
        res = promql(prom, q)  # type: ignore[arg-type]
        assert res["status"] == "success", f"{e}: {res.get('error')}"
