"""The webhook and Alertmanager sinks against a local HTTP receiver; the pager's offset tickets."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from detector.alerts import ESCALATION
from detector.metrics import PagerMetrics
from detector.pager.config import PagerConfig
from detector.pager.core import FileDeadLetters, OffsetTracker, Pager, SinkWorker
from detector.pager.notification import Notification
from detector.pager.sinks import AlertmanagerSink, WebhookSink
from detector.pager.testing import FakeClock, Receiver, alert, resolved

FAST = {"backoff_initial_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0}


def config(sinks: dict[str, dict[str, Any]], tmp: Path, **pager: Any) -> PagerConfig:
    return PagerConfig.from_dict({"sinks": sinks, "deadletter_file": str(tmp / "dead.jsonl"),
                                  "state_dir": str(tmp / "state"), **pager}, env={})


def metrics(cfg: PagerConfig) -> tuple[CollectorRegistry, PagerMetrics]:
    reg = CollectorRegistry()
    return reg, PagerMetrics(reg, cfg.sinks)


def note(a: Any, sink: str = "w", severity: str = "warning") -> Notification:
    return Notification(sink, "trigger" if a.status == "firing" else "resolve", a.dedup_key,
                        severity, a)


def test_webhook_posts_the_envelope_once_per_trigger_even_after_a_restart(tmp_path: Path) -> None:
    with Receiver() as rx:
        cfg = config({"w": {"type": "webhook", "url": rx.url + "/tickets",
                            "bearer_token": "tok", **FAST}}, tmp_path)
        _, m = metrics(cfg)
        stop = threading.Event()
        sink = WebhookSink(cfg.sinks["w"], m, state_dir=tmp_path / "state", stop=stop)
        a = alert("node-001", topic=ESCALATION, kind="unattributed", cause="unknown")
        assert sink.deliver(note(a)).delivered
        assert sink.deliver(note(a)).skipped  # a redelivered message: no second ticket
        again = WebhookSink(cfg.sinks["w"], m, state_dir=tmp_path / "state", stop=stop)
        assert again.deliver(note(a)).skipped  # the ledger is on disk
        assert again.deliver(note(resolved(a))).delivered
        (trigger, resolve) = rx.bodies()
        assert rx.requests[0].path == "/tickets"
        assert rx.requests[0].headers["Authorization"] == "Bearer tok"
        assert trigger["event"] == "trigger" and trigger["alert"] == a.raw
        assert trigger["severity"] == "warning" and trigger["topic"] == ESCALATION
        assert resolve["event"] == "resolve" and resolve["alert"]["status"] == "resolved"


def test_webhook_retries_503_then_dead_letters_a_400_and_goes_on(tmp_path: Path) -> None:
    with Receiver(answers=[503, 503, 400, 200]) as rx:
        cfg = config({"w": {"type": "webhook", "url": rx.url, **FAST}}, tmp_path)
        reg, m = metrics(cfg)
        stop = threading.Event()
        worker = SinkWorker(WebhookSink(cfg.sinks["w"], m, state_dir=None, stop=stop), m,
                            FileDeadLetters(tmp_path / "dead.jsonl"), stop=stop)
        first, second = (note(alert(n)) for n in ("node-001", "node-002"))
        done: list[str] = []
        for n in (first, second):
            n.tickets = [type("T", (), {"done": lambda self, k=n.dedup_key: done.append(k)})()]
            worker.deliver(n)
        assert [r.status for r in rx.requests] == [503, 503, 400, 200]
        assert done == [first.dedup_key, second.dedup_key]  # both let go: the offsets move on
        (dead,) = [json.loads(line) for line in (tmp_path / "dead.jsonl").read_text().splitlines()]
        assert dead["value"]["sink"] == "w" and "HTTP 400" in dead["value"]["reason"]
        assert dead["value"]["alerts"][0]["value"]["dedup_key"] == first.dedup_key

        def val(name: str, **labels: str) -> float | None:
            return reg.get_sample_value(name, {"sink": "w", **labels})

        assert val("faultline_pager_retries_total") == 2
        assert val("faultline_pager_failures_total", reason="rejected") == 1
        assert val("faultline_pager_deadletters_total") == 1
        assert val("faultline_pager_deliveries_total") == 1


def test_retries_are_bounded(tmp_path: Path) -> None:
    with Receiver(default=502) as rx:
        cfg = config({"w": {"type": "webhook", "url": rx.url, "max_attempts": 3, **FAST}},
                     tmp_path)
        _, m = metrics(cfg)
        out = WebhookSink(cfg.sinks["w"], m, state_dir=None, stop=threading.Event(),
                          rng=random.Random(1)).deliver(note(alert()))
        assert (out.delivered, out.failure, len(rx.requests)) == (False, "exhausted", 3)
        assert "gave up after 3 attempts" in out.reason


def test_alertmanager_active_alerts_are_resent_before_they_expire(tmp_path: Path) -> None:
    with Receiver() as rx:
        cfg = config({"am": {"type": "alertmanager", "url": rx.url, "resend_interval_s": 60,
                             **FAST}}, tmp_path)
        _, m = metrics(cfg)
        wall, mono = FakeClock(1767225700.0), FakeClock(0.0)
        sink = AlertmanagerSink(cfg.sinks["am"], m, state_dir=tmp_path / "state",
                                stop=threading.Event(), wall=wall, monotonic=mono)
        a, b = alert("node-001"), alert("node-002")
        assert sink.deliver(note(a, "am")).delivered and sink.deliver(note(b, "am")).delivered
        assert [r.path for r in rx.requests] == ["/api/v2/alerts"] * 2
        posted = rx.bodies()[0][0]
        assert posted["endsAt"] == "2026-01-01T00:05:40.000Z"  # wall + alert_ttl_s (240 s)
        assert posted["labels"]["node"] == "node-001" and posted["labels"]["nic"] == "mlx5_0"
        mono.advance(30.0)
        sink.idle()
        assert len(rx.requests) == 2  # not yet
        mono.advance(30.0)
        wall.advance(60.0)
        sink.idle()
        resent = rx.bodies()[-1]
        assert sorted(x["labels"]["node"] for x in resent) == ["node-001", "node-002"]
        assert all(x["endsAt"] == "2026-01-01T00:06:40.000Z" for x in resent)  # pushed on
        # A restart keeps the active set (or Alertmanager would expire them in 4 minutes).
        again = AlertmanagerSink(cfg.sinks["am"], m, state_dir=tmp_path / "state",
                                 stop=threading.Event(), wall=wall, monotonic=mono)
        assert sorted(again.active) == sorted([a.dedup_key, b.dedup_key])
        assert again.deliver(note(resolved(a), "am")).delivered
        assert rx.bodies()[-1][0]["endsAt"] == "2026-01-01T00:02:40.000Z"  # ended now
        mono.advance(60.0)
        again.idle()
        assert [x["labels"]["node"] for x in rx.bodies()[-1]] == ["node-002"]


def test_alertmanager_ends_the_old_identity_when_an_alert_changes_cause(tmp_path: Path) -> None:
    with Receiver() as rx:
        cfg = config({"am": {"type": "alertmanager", "url": rx.url, **FAST}}, tmp_path)
        _, m = metrics(cfg)
        sink = AlertmanagerSink(cfg.sinks["am"], m, state_dir=None, stop=threading.Event())
        first = alert("node-001", kind="slow_node", cause="unknown", dedup_key="fl:k")
        later = alert("node-001", kind="slow_node", cause="thermal", dedup_key="fl:k")
        sink.deliver(note(first, "am"))
        sink.deliver(note(later, "am"))
        ended, firing = rx.bodies()[-1]
        assert (ended["labels"]["cause"], firing["labels"]["cause"]) == ("unknown", "thermal")
        assert ended["endsAt"] < firing["endsAt"]


def test_offsets_are_committable_only_after_delivery(tmp_path: Path) -> None:
    gate = threading.Event()
    with Receiver() as rx:
        original = rx._answer

        def slow(body: bytes) -> tuple[int, bytes]:
            gate.wait(10)
            return original(body)

        rx._answer = slow  # type: ignore[method-assign]
        cfg = config({"w": {"type": "webhook", "url": rx.url, **FAST,
                            "storm": {"enabled": False}}}, tmp_path)
        _, m = metrics(cfg)
        pager = Pager(cfg, m, FileDeadLetters(tmp_path / "dead.jsonl"))
        pager.start()
        tracker = OffsetTracker()
        try:
            for offset, node in enumerate(("node-001", "node-002")):
                pager.submit(alert(node), tracker.ticket("alerts.isolation", 0, offset))
            assert tracker.positions() == {("alerts.isolation", 0): 0}
            gate.set()
            rx.wait_for("two deliveries", lambda reqs: len(reqs) == 2)
            deadline = 50
            while tracker.positions() != {("alerts.isolation", 0): 2} and deadline:
                deadline -= 1
                threading.Event().wait(0.05)
            assert tracker.positions() == {("alerts.isolation", 0): 2}
        finally:
            assert pager.close(5.0)
