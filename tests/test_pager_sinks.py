"""The webhook and Alertmanager sinks against a local HTTP receiver; the pager's offset tickets."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from detector.alerts import ESCALATION, ISOLATION
from detector.metrics import PagerMetrics
from detector.pager.config import PagerConfig
from detector.pager.core import FileDeadLetters, OffsetTracker, Pager, SinkWorker
from detector.pager.notification import Notification
from detector.pager.payloads import pd_dedup_key as pd_key
from detector.pager.sinks import AlertmanagerSink, PagerDutySink, WebhookSink
from detector.pager.testing import FakeClock, Receiver, alert, resolved

FAST = {"backoff_initial_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0}


def config(sinks: dict[str, dict[str, Any]], tmp: Path, **pager: Any) -> PagerConfig:
    return PagerConfig.from_dict({"sinks": sinks, "deadletter_file": str(tmp / "dead.jsonl"),
                                  "state_dir": str(tmp / "state"), **pager}, env={})


def metrics(cfg: PagerConfig) -> tuple[CollectorRegistry, PagerMetrics]:
    reg = CollectorRegistry()
    return reg, PagerMetrics(reg, cfg.sinks)


def webhook_worker(rx: Receiver, tmp: Path) -> tuple[CollectorRegistry, SinkWorker]:
    """A webhook sink "w" to ``rx`` on a delivery worker run on the caller's thread."""
    cfg = config({"w": {"type": "webhook", "url": rx.url, **FAST}}, tmp)
    reg, m = metrics(cfg)
    stop = threading.Event()
    return reg, SinkWorker(WebhookSink(cfg.sinks["w"], m, state_dir=None, stop=stop), m,
                           FileDeadLetters(tmp / "dead.jsonl"), stop=stop)


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
        reg, worker = webhook_worker(rx, tmp_path)
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


def test_transient_failures_are_retried_for_retry_for_s_then_dead_lettered(
        tmp_path: Path) -> None:
    mono, wall = FakeClock(0.0), FakeClock(1767225600.0)
    with Receiver(default=502) as rx:
        cfg = config({"w": {"type": "webhook", "url": rx.url, "retry_for_s": 3600,
                            "backoff_max_s": 60}}, tmp_path)
        _, m = metrics(cfg)
        out = WebhookSink(cfg.sinks["w"], m, state_dir=None, stop=threading.Event(),
                          rng=random.Random(1), monotonic=mono, wall=wall,
                          sleep=mono.sleeper(also=wall)).deliver(note(alert()))
        assert (out.delivered, out.failure) == (False, "exhausted")
        assert 3000 <= mono() <= 3600  # it kept trying for the hour, and stopped there
        assert len(rx.requests) > 60 and "HTTP 502" in out.reason


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


# -- a page is never dropped for a transient failure ----------------------------------------


def _sample(reg: CollectorRegistry, name: str, sink: str) -> float | None:
    return reg.get_sample_value(name, {"sink": sink})


def test_503_for_five_minutes_then_200_delivers_every_page_once(tmp_path: Path) -> None:
    """Real HTTP servers and the real delivery threads; only the clock is fast-forwarded."""
    mono, wall = FakeClock(0.0), FakeClock(1767225600.0)
    stop = threading.Event()

    def outage() -> int:
        return 503 if mono() < 300.0 else 200

    with Receiver(decide=outage) as hook, Receiver(decide=outage) as am:
        cfg = config({"w": {"type": "webhook", "url": hook.url, "storm": {"enabled": False}},
                      "am": {"type": "alertmanager", "url": am.url}}, tmp_path)
        reg, m = metrics(cfg)
        pager = Pager(cfg, m, FileDeadLetters(tmp_path / "dead.jsonl"), clock=mono, wall=wall,
                      sleep=mono.sleeper(stop, also=wall), rng=random.Random(7))
        pager.stop = stop
        for w in pager.workers.values():
            w.stop = stop
        pager.start()
        tracker = OffsetTracker()
        nodes = [f"node-{i:03d}" for i in range(5)]
        try:
            for offset, node in enumerate(nodes):
                pager.submit(alert(node), tracker.ticket("alerts.isolation", 0, offset))
            hook.wait_for("a 503", lambda reqs: reqs)
            assert tracker.positions() == {("alerts.isolation", 0): 0}  # nothing committable
            hook.wait_for("every page", lambda reqs: len([r for r in reqs if r.status == 200])
                          == len(nodes), timeout_s=30)
            am.wait_for("every alert", lambda reqs: len([r for r in reqs if r.status == 200])
                        >= len(nodes), timeout_s=30)
            wait_until(lambda: tracker.positions() == {("alerts.isolation", 0): len(nodes)})
        finally:
            assert pager.close(5.0)
        assert mono() >= 300.0
        delivered = [b["alert"]["scope"]["node"] for b in hook.bodies(200)]
        assert sorted(delivered) == nodes  # each once, none lost
        am_nodes = [x["labels"]["node"] for b in am.bodies(200) for x in b]
        assert sorted(set(am_nodes)) == nodes
        assert not (tmp_path / "dead.jsonl").exists()
        for sink in ("w", "am"):
            assert _sample(reg, "faultline_pager_failing_since", sink) == 0.0  # healthy again
            assert (_sample(reg, "faultline_pager_retries_total", sink) or 0) > 5


def test_failing_since_is_set_while_a_sink_fails(tmp_path: Path) -> None:
    mono, wall = FakeClock(0.0), FakeClock(1767225600.0)
    seen: list[float | None] = []
    with Receiver(answers=[503, 503, 200]) as rx:
        cfg = config({"w": {"type": "webhook", "url": rx.url}}, tmp_path)
        reg, m = metrics(cfg)

        def sleep(seconds: float) -> bool:
            seen.append(_sample(reg, "faultline_pager_failing_since", "w"))
            mono.advance(seconds)
            return False

        sink = WebhookSink(cfg.sinks["w"], m, state_dir=None, stop=threading.Event(),
                           monotonic=mono, wall=wall, sleep=sleep)
        assert sink.deliver(note(alert())).delivered
    assert seen == [1767225600.0, 1767225600.0]
    assert _sample(reg, "faultline_pager_failing_since", "w") == 0.0


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_a_permanent_error_is_dead_lettered_at_once(tmp_path: Path, status: int) -> None:
    with Receiver(answers=[status]) as rx:
        reg, worker = webhook_worker(rx, tmp_path)
        worker.deliver(note(alert()))
        assert len(rx.requests) == 1
        (dead,) = (tmp_path / "dead.jsonl").read_text().splitlines()
        assert f"HTTP {status}" in json.loads(dead)["value"]["reason"]
        assert _sample(reg, "faultline_pager_deadletters_outstanding", "w") == 1


@pytest.mark.parametrize("header", ["7", "Thu, 01 Jan 2026 00:00:07 GMT"])
def test_retry_after_is_honoured(tmp_path: Path, header: str) -> None:
    mono, wall = FakeClock(0.0), FakeClock(1767225600.0)
    waits: list[float] = []
    with Receiver(answers=[429], retry_after=header) as rx:
        cfg = config({"w": {"type": "webhook", "url": rx.url, **FAST}}, tmp_path)
        _, m = metrics(cfg)

        def sleep(seconds: float) -> bool:
            waits.append(seconds)
            return False

        sink = WebhookSink(cfg.sinks["w"], m, state_dir=None, stop=threading.Event(),
                           monotonic=mono, wall=wall, sleep=sleep)
        assert sink.deliver(note(alert())).delivered
    assert len(waits) == 1 and waits[0] == pytest.approx(7.0)  # not the 0.01-0.05 s backoff


def test_alertmanager_pair_gets_every_alert_on_both(tmp_path: Path) -> None:
    with Receiver() as one, Receiver(answers=[503]) as two:
        cfg = config({"am": {"type": "alertmanager", "url": [one.url, two.url],
                             "resend_interval_s": 60, **FAST}}, tmp_path)
        _, m = metrics(cfg)
        mono = FakeClock(0.0)
        sink = AlertmanagerSink(cfg.sinks["am"], m, state_dir=None, stop=threading.Event(),
                                monotonic=mono)
        a = alert("node-001")
        assert sink.deliver(note(a, "am")).delivered  # one of the pair took it
        assert [len(one.requests), len(two.requests)] == [1, 1]
        mono.advance(60.0)
        sink.idle()  # the re-send reaches the one that missed it
        assert [x["labels"]["node"] for x in two.bodies(200)[0]] == ["node-001"]
        assert sink.deliver(note(resolved(a), "am")).delivered
        for rx in (one, two):
            assert rx.bodies(200)[-1][0]["labels"]["node"] == "node-001"
            assert rx.bodies(200)[-1][0]["endsAt"] < rx.bodies(200)[0][0]["endsAt"]


def test_no_resolve_for_a_trigger_that_never_went_out(tmp_path: Path) -> None:
    with Receiver(answers=[400]) as rx:
        cfg = config({"pd": {"type": "pagerduty", "url": rx.url, "routing_key": "R" * 32,
                             **FAST}}, tmp_path)
        reg, m = metrics(cfg)
        stop = threading.Event()
        sink = PagerDutySink(cfg.sinks["pd"], m, state_dir=tmp_path / "state", stop=stop)
        worker = SinkWorker(sink, m, FileDeadLetters(tmp_path / "dead.jsonl"), stop=stop)
        a = alert("node-001")
        worker.deliver(note(a, "pd"))  # 400: dead-lettered
        assert _sample(reg, "faultline_pager_deadletters_outstanding", "pd") == 1
        worker.deliver(note(resolved(a), "pd"))
        assert len(rx.requests) == 1  # no resolve for it
        # A later trigger of the same alert goes out, and clears the dead letter's count.
        worker.deliver(note(a, "pd"))
        assert [b["event_action"] for b in rx.bodies(202) + rx.bodies(200)] == ["trigger"]
        assert _sample(reg, "faultline_pager_deadletters_outstanding", "pd") == 0
        # A resolve of an alert PagerDuty never heard of (its trigger met it in a backlog)
        # is not sent either.
        worker.deliver(note(resolved(alert("node-002")), "pd"))
        assert len(rx.requests) == 2


def wait_until(condition: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_a_backlog_sends_an_already_resolved_alert_once_as_resolved_or_not_at_all(
        tmp_path: Path) -> None:
    with Receiver() as am, Receiver(default=202) as pd:
        cfg = config({"am": {"type": "alertmanager", "url": am.url, **FAST},
                      "pd": {"type": "pagerduty", "url": pd.url, "routing_key": "R" * 32,
                             **FAST, "storm": {"enabled": False}}}, tmp_path)
        reg, m = metrics(cfg)
        pager = Pager(cfg, m, FileDeadLetters(tmp_path / "dead.jsonl"))
        pager.start()
        tracker = OffsetTracker()
        gone, still = alert("node-001"), alert("node-002")
        try:
            for offset, (a, behind) in enumerate([(gone, True), (still, True),
                                                  (resolved(gone), True)]):
                pager.submit(a, tracker.ticket("alerts.isolation", 0, offset), backlog=behind)
            assert pager.backlog_size() == 1 and am.requests == []  # held, not sent
            assert pager.release_backlog() == 1
            wait_until(lambda: tracker.positions() == {("alerts.isolation", 0): 3})
        finally:
            assert pager.close(5.0)
        posted = [(x["labels"]["node"], x["endsAt"] > x["startsAt"]) for b in am.bodies()
                  for x in b]
        assert sorted(n for n, _ in posted) == ["node-001", "node-002"]  # each once
        assert [b["dedup_key"] for b in pd.bodies()] == [pd_key(still.dedup_key)]
        assert [b["event_action"] for b in pd.bodies()] == ["trigger"]
        assert reg.get_sample_value("faultline_pager_cleared_in_backlog_total") == 1


def test_outgoing_payloads_carry_no_escapes_controls_or_huge_names(tmp_path: Path) -> None:
    import dataclasses
    import unicodedata

    from detector.alerts import FiredAlert, Scope
    from detector.pager.testing import envelope

    nasty = "node-1\x1b[31mRED\x1b[0m\u202eevil\x07\r\n" + "x" * (1 << 20)
    # Reading an envelope refuses such a name (Scope.from_dict); the sinks do not rely on
    # it: an alert that got one anyway is still paged clean.
    with pytest.raises(ValueError, match="printable name"):
        FiredAlert.from_record(ISOLATION, envelope(nasty))
    a = dataclasses.replace(alert("node-1", summary="\x1b]0;pwned\x07summary\u200b"),
                            scope=Scope.of_nic(nasty, "mlx5_0"))
    with Receiver() as am, Receiver(default=202) as pd, Receiver() as hook:
        cfg = config({"am": {"type": "alertmanager", "url": am.url, **FAST},
                      "pd": {"type": "pagerduty", "url": pd.url, "routing_key": "R" * 32,
                             **FAST},
                      "w": {"type": "webhook", "url": hook.url, **FAST}}, tmp_path)
        _, m = metrics(cfg)
        stop = threading.Event()
        for sink in (AlertmanagerSink(cfg.sinks["am"], m, state_dir=None, stop=stop),
                     PagerDutySink(cfg.sinks["pd"], m, state_dir=None, stop=stop),
                     WebhookSink(cfg.sinks["w"], m, state_dir=None, stop=stop)):
            assert sink.deliver(note(a, sink.name)).delivered
        bodies = {"am": am.requests[0].body, "pd": pd.requests[0].body,
                  "w": hook.requests[0].body}
    for name, raw in bodies.items():
        assert len(raw) < 512 * 1024, name  # a 1 MiB name does not make a 1 MiB page

        def strings(v: Any) -> Any:
            if isinstance(v, str):
                yield v
            elif isinstance(v, dict):
                for k, x in v.items():
                    yield k
                    yield from strings(x)
            elif isinstance(v, list):
                for x in v:
                    yield from strings(x)

        for s in strings(json.loads(raw)):
            bad = [c for c in s if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf")]
            assert not bad, (name, s[:80], bad[:5])
            assert "[31m" not in s and "pwned" not in s
    labels = json.loads(bodies["am"])[0]["labels"]
    assert all(len(v) <= 256 for v in labels.values())
    assert labels["node"].startswith("node-1REDevil xx")


def test_the_ledger_is_a_journal_that_survives_a_torn_line_and_the_old_format(
        tmp_path: Path) -> None:
    from detector.pager.sinks import Ledger

    path = tmp_path / "ledger.json"
    path.write_text(json.dumps({"fl:a": ["triggered", 5.0], "fl:b": ["resolved", 6.0]}))
    led = Ledger(path)  # the former format, read and rewritten
    assert (led.state("fl:a"), led.state("fl:b"), led.triggered()) == ("triggered", "resolved", 1)
    led.set("fl:a", "resolve", 7.0)
    led.set("fl:c", "trigger", 8.0)
    with path.open("ab") as f:
        f.write(b'["fl:d", "trig')  # a crash in mid-append
    again = Ledger(path)
    assert [again.state(k) for k in ("fl:a", "fl:b", "fl:c", "fl:d")] == [
        "resolved", "resolved", "triggered", None]
    assert again.triggered() == 1 and not again.wanted("fl:a", "resolve", 9.0)
    for i in range(3000):  # compaction keeps the file near one line per key
        again.set("fl:c", "trigger" if i % 2 else "resolve", 10.0 + i)
    assert len(path.read_bytes().splitlines()) < 1100
    assert Ledger(path).state("fl:c") == "triggered"


def test_loopback_sinks_bypass_the_proxy_and_others_go_through_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A pager behind an HTTP proxy still reaches an Alertmanager on this host, and reaches
    remote sinks through the proxy (here a local receiver stands in for the proxy)."""
    from detector.pager.sinks import post_json

    for var in ("http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    with Receiver() as proxy, Receiver() as local:
        monkeypatch.setenv("http_proxy", proxy.url)
        assert post_json(local.url + "/api/v2/alerts", b"[]", {}, 5.0).status == 200
        assert len(local.requests) == 1 and proxy.requests == []
        assert post_json("http://alertmanager.example.invalid:9093/api/v2/alerts", b"[]", {},
                         5.0).status == 200
        (via,) = proxy.requests
        assert via.path == "http://alertmanager.example.invalid:9093/api/v2/alerts"


def test_a_full_ledger_forgets_the_key_least_recently_delivered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key that fired long ago but resolved just now is kept over one untouched since: a
    forgotten key's next redelivered trigger would page again."""
    from detector.pager import sinks

    monkeypatch.setattr(sinks, "LEDGER_MAX", 3)
    ledger = sinks.Ledger(tmp_path / "ledger.jsonl")
    for i, key in enumerate("abc"):
        ledger.set(key, "trigger", float(i))
    ledger.set("a", "resolve", 3.0)
    ledger.set("d", "trigger", 4.0)
    assert [ledger.state(k) for k in "abcd"] == ["resolved", None, "triggered", "triggered"]
    assert ledger.triggered() == 2
    again = sinks.Ledger(tmp_path / "ledger.jsonl")  # what it kept, kept after a restart
    assert [again.state(k) for k in "acd"] == ["resolved", "triggered", "triggered"]


def test_a_restarted_sink_still_counts_its_dead_letters_and_active_alerts(tmp_path: Path) -> None:
    """faultline_pager_deadletters_outstanding and _active_alerts come back from the ledger
    after a restart (FaultlinePagerDeliveryFailed reads the first), and a later delivery of
    the dead-lettered alert clears it."""
    with Receiver(answers=[202, 400], default=202) as rx:
        cfg = config({"pd": {"type": "pagerduty", "url": rx.url, "routing_key": "R" * 32,
                             **FAST}}, tmp_path)
        stop = threading.Event()
        _, m = metrics(cfg)
        sink = PagerDutySink(cfg.sinks["pd"], m, state_dir=tmp_path / "state", stop=stop)
        worker = SinkWorker(sink, m, FileDeadLetters(tmp_path / "dead.jsonl"), stop=stop)
        paged, refused = alert("node-001"), alert("node-002")
        worker.deliver(note(paged, "pd"))
        worker.deliver(note(refused, "pd"))  # 400: dead-lettered
        reg, m = metrics(cfg)  # a new process: new metrics, the same state folder
        again = PagerDutySink(cfg.sinks["pd"], m, state_dir=tmp_path / "state", stop=stop)
        assert _sample(reg, "faultline_pager_deadletters_outstanding", "pd") == 1
        assert _sample(reg, "faultline_pager_active_alerts", "pd") == 1
        assert again.deliver(note(refused, "pd")).delivered  # its trigger, sent after all
        assert _sample(reg, "faultline_pager_deadletters_outstanding", "pd") == 0
        assert _sample(reg, "faultline_pager_active_alerts", "pd") == 2


def test_alertmanager_back_after_an_outage_clears_the_dead_letter_on_its_resend(
        tmp_path: Path) -> None:
    """A firing alert given up during an outage is dead-lettered but kept active: the first
    re-send that gets through delivers it, and it no longer counts as outstanding."""
    mono = FakeClock(0.0)
    status = [503]
    with Receiver(decide=lambda: status[0]) as rx:
        cfg = config({"am": {"type": "alertmanager", "url": rx.url, "retry_for_s": 0.001,
                             "resend_interval_s": 60, **FAST}}, tmp_path)
        reg, m = metrics(cfg)
        stop = threading.Event()
        sink = AlertmanagerSink(cfg.sinks["am"], m, state_dir=None, stop=stop, monotonic=mono)
        worker = SinkWorker(sink, m, FileDeadLetters(tmp_path / "dead.jsonl"), stop=stop)
        worker.deliver(note(alert("node-001"), "am"))  # exhausted: dead-lettered
        assert _sample(reg, "faultline_pager_deadletters_outstanding", "am") == 1
        assert _sample(reg, "faultline_pager_active_alerts", "am") == 1
        status[0] = 200
        mono.advance(60.0)
        sink.idle()
        assert [x["labels"]["node"] for x in rx.bodies(200)[-1]] == ["node-001"]
        assert _sample(reg, "faultline_pager_deadletters_outstanding", "am") == 0
        # Refused (400), then the same alert sent again and taken: not outstanding either.
        status[0] = 400
        worker.deliver(note(alert("node-002"), "am"))
        assert _sample(reg, "faultline_pager_deadletters_outstanding", "am") == 1
        status[0] = 200
        worker.deliver(note(alert("node-002"), "am"))
        assert _sample(reg, "faultline_pager_deadletters_outstanding", "am") == 0


def test_the_ledger_journal_stays_short_however_often_a_key_flaps(tmp_path: Path) -> None:
    from detector.pager.sinks import Ledger

    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path)
    for i in range(1500):  # one problem firing and resolving, over and over
        ledger.set("flapper", "trigger" if i % 2 == 0 else "resolve", float(i))
    assert len(path.read_bytes().splitlines()) <= 2 * 1 + 1000 + 1  # compacted on the way
    assert Ledger(path).state("flapper") == "resolved"


def test_in_flight_counts_messages_not_deliveries_and_forgets_a_revoked_partition() -> None:
    """What max_in_flight pauses consuming on: a message owed to three sinks is one, and a
    revoked partition's messages stop counting (and never count below zero when they finish)."""
    t = OffsetTracker()
    a = t.ticket("alerts.isolation", 0, 5)
    a.hold(2)  # routed to two sinks besides the caller's own hold
    b = t.ticket("alerts.isolation", 1, 9)
    assert t.in_flight() == 2
    a.done()
    a.done()
    assert t.in_flight() == 2 and t.positions()[("alerts.isolation", 0)] == 5
    a.done()
    assert t.in_flight() == 1 and t.positions()[("alerts.isolation", 0)] == 6
    t.forget(("alerts.isolation", 1))
    assert t.in_flight() == 0 and ("alerts.isolation", 1) not in t.positions()
    b.done()  # its delivery finishes after the revocation
    assert t.in_flight() == 0 and t.peak == 2


def test_the_pager_sends_storm_groups_when_due_and_its_threads_re_send_to_alertmanager(
        tmp_path: Path) -> None:
    """Through the real Pager and its delivery threads (the Kafka loop calls tick() and
    submit()): a storm group leaves on tick() once due and is one notification, its
    offsets commit only then; Alertmanager's active set is re-sent by the sink's own
    thread; after a restart the delivered group still resolves as one."""
    clock = FakeClock(0.0)
    with Receiver() as hook, Receiver() as am:
        def make() -> Pager:
            cfg = config({"tickets": {"type": "webhook", "url": hook.url, **FAST,
                                      "storm": {"group_wait_s": 5.0}},
                          "am": {"type": "alertmanager", "url": am.url, **FAST,
                                 "resend_interval_s": 60}}, tmp_path)
            _, m = metrics(cfg)
            return Pager(cfg, m, FileDeadLetters(tmp_path / "dead.jsonl"), clock=clock)

        pager = make()
        pager.start()
        tracker = OffsetTracker()
        alerts = [alert(f"node-{i:03d}") for i in range(3)]
        try:
            for offset, a in enumerate(alerts):
                pager.submit(a, tracker.ticket("alerts.isolation", 0, offset))
            am.wait_for("Alertmanager's three", lambda reqs: len(reqs) == 3)
            pager.tick()
            assert hook.requests == [] and tracker.positions()[("alerts.isolation", 0)] == 0
            clock.advance(5.0)
            pager.tick()
            (group,) = hook.wait_for("the group", lambda reqs: reqs)
            assert len(group.json()["grouped"]) == 2
            wait_until(lambda: tracker.positions() == {("alerts.isolation", 0): 3})
            clock.advance(60.0)
            resent = am.wait_for("a re-send", lambda reqs: reqs[3:])[0].json()
            assert sorted(x["labels"]["node"] for x in resent) == [
                "node-000", "node-001", "node-002"]
        finally:
            assert pager.close(5.0)
        pager = make()  # a restart: the group is remembered
        pager.start()
        try:
            for a in alerts:
                pager.submit(resolved(a), None)
            hook.wait_for("the group's resolve", lambda reqs: reqs[1:])
        finally:
            assert pager.close(5.0)
        assert [b["event"] for b in hook.bodies()] == ["trigger", "resolve"]
        # ... when the last of its alerts resolved (not the first, as an unknown group would)
        assert hook.bodies()[1]["alert"]["scope"]["node"] == "node-002"


def test_a_sink_that_answers_again_is_not_failing_even_when_it_says_no(tmp_path: Path) -> None:
    """faultline_pager_failing_since (FaultlinePagerSinkFailing after 5 min) goes back to 0
    once the sink answers at all: a 400 after a 503 is a refusal, not an outage."""
    with Receiver(answers=[503, 400]) as rx:
        reg, worker = webhook_worker(rx, tmp_path)
        worker.deliver(note(alert()))
        assert [r.status for r in rx.requests] == [503, 400]
        assert _sample(reg, "faultline_pager_failing_since", "w") == 0.0
