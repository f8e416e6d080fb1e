"""PagerDuty Events API v2 against a local server that checks every event against the schema.

The server answers 429, then 500, then 202: the sink backs off and retries, the
trigger lands once, and neither a redelivered message, a re-fired alert nor a
restart of the pager sends a second trigger for the same dedup_key.
"""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client import CollectorRegistry

from detector.alerts import ESCALATION
from detector.metrics import PagerMetrics
from detector.pager.config import PagerConfig
from detector.pager.core import FileDeadLetters, Pager
from detector.pager.testing import (
    Receiver,
    alert,
    resolved,
    triggers,
    validate_pagerduty_event,
)

# A local HTTP server stands in for PagerDuty's public endpoint: no `servers` mark.

KEY = "R0ut1ngKeyR0ut1ngKeyR0ut1ngKey00"


def make_pager(tmp: Path, url: str, routing_key: str = KEY
               ) -> tuple[Pager, CollectorRegistry]:
    cfg = PagerConfig.from_dict({
        "sinks": {"pagerduty": {"url": url + "/v2/enqueue", "routing_key": routing_key,
                                "backoff_initial_s": 0.02, "backoff_max_s": 0.1,
                                "storm": {"enabled": False}}},
        "deadletter_file": str(tmp / "dead.jsonl"), "state_dir": str(tmp / "state")}, env={})
    reg = CollectorRegistry()
    pager = Pager(cfg, PagerMetrics(reg, cfg.sinks), FileDeadLetters(tmp / "dead.jsonl"))
    pager.start()
    return pager, reg


def wait_idle(pager: Pager) -> None:
    from servers_harness import wait_for
    wait_for("the pager to finish its deliveries", pager.idle, 20)


def test_retries_429_and_500_then_triggers_once_and_resolves(tmp_path: Path) -> None:
    esc = alert("node-007", topic=ESCALATION, kind="unattributed", cause="unknown",
                evidence={"signals": [{"signal": "slow_rank", "ratio": 1.12}] * 20000,
                          "next_diagnostic": "`dcgmi diag -r 3` on node-007"},
                summary="slow rank with no hardware signal; " + "ruled out: thermal. " * 200)
    with Receiver(answers=[429, 500], default=202,
                  validate=validate_pagerduty_event) as pd:
        pager, reg = make_pager(tmp_path, pd.url)
        try:
            pager.submit(esc, None)
            pager.submit(esc, None)  # the same message again (a redelivery)
            pager.submit(alert("node-007", topic=ESCALATION, kind="unattributed",
                               cause="unknown", detected_ts=1767225700.0), None)  # re-fired
            wait_idle(pager)
            assert [r.status for r in pd.requests] == [429, 500, 202]
            assert triggers(pd.bodies(202)) == [esc.dedup_key]
            ev = pd.bodies(202)[0]
            assert ev["routing_key"] == KEY and ev["payload"]["severity"] == "critical"
            assert ev["payload"]["source"] == "node-007"
            assert len(ev["payload"]["summary"]) == 1024  # cut to PagerDuty's limit
            details = ev["payload"]["custom_details"]
            assert details["next_diagnostic"] == "`dcgmi diag -r 3` on node-007"
            assert isinstance(details["evidence"], str) and "cut:" in details["evidence"]
            assert len(pd.requests[-1].body) < 512 * 1024

            pager.submit(resolved(esc), None)
            pager.submit(resolved(esc), None)
            wait_idle(pager)
            assert [b["event_action"] for b in pd.bodies(202)] == ["trigger", "resolve"]
            assert reg.get_sample_value("faultline_pager_retries_total",
                                        {"sink": "pagerduty"}) == 2
            assert reg.get_sample_value("faultline_pager_held_back_total",
                                        {"sink": "pagerduty", "reason": "duplicate"}) == 3
        finally:
            pager.close(5)

        # A restart remembers what was delivered: an old trigger read again is not sent,
        # a new alert is, and so is the same problem firing again later.
        again, _ = make_pager(tmp_path, pd.url)
        try:
            other = alert("node-008", topic=ESCALATION, kind="sdc", cause="unknown",
                          level="gpu", gpu=4)
            again.submit(esc, None)
            again.submit(other, None)
            wait_idle(again)
            assert triggers(pd.bodies(202)) == [esc.dedup_key, other.dedup_key]
            again.submit(alert("node-007", topic=ESCALATION, kind="unattributed",
                               cause="unknown", detected_ts=1767229200.0), None)
            wait_idle(again)
            assert triggers(pd.bodies(202)) == [esc.dedup_key, other.dedup_key, esc.dedup_key]
        finally:
            again.close(5)


def test_a_400_is_dead_lettered_with_the_reason_and_the_next_alert_goes_out(
        tmp_path: Path) -> None:
    with Receiver(default=202, validate=validate_pagerduty_event) as pd:
        pager, reg = make_pager(tmp_path, pd.url, routing_key="too-short")
        try:
            pager.submit(alert("node-001", topic=ESCALATION, kind="sdc", cause="unknown"), None)
            wait_idle(pager)
        finally:
            pager.close(5)
        assert [r.status for r in pd.requests] == [400]  # no retry of a 400
        (dead,) = [json.loads(line)["value"] for line in
                   (tmp_path / "dead.jsonl").read_text().splitlines()]
        assert dead["sink"] == "pagerduty" and dead["event"] == "trigger"
        assert "HTTP 400" in dead["reason"] and "routing_key must be a 32-character" \
            in dead["reason"]
        assert dead["alerts"][0]["value"]["kind"] == "sdc"
        assert reg.get_sample_value("faultline_pager_failures_total",
                                    {"sink": "pagerduty", "reason": "rejected"}) == 1

        fixed, _ = make_pager(tmp_path, pd.url)
        try:
            fixed.submit(alert("node-002", topic=ESCALATION, kind="sdc", cause="unknown"), None)
            wait_idle(fixed)
        finally:
            fixed.close(5)
        assert [r.status for r in pd.requests] == [400, 202]
