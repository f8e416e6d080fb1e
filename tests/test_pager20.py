"""A widened action reaches the human on every sink (blind10 K6, the pager's half).

The correlator re-fires an open isolation, same dedup_key, when an XID 79 (the GPU fell
off the bus) widens its drain_gpu to drain_node (tests/test_page20.py).  PagerDuty de-dups
a trigger for an open dedup_key without notifying, and Alertmanager sends nothing for a
changed annotation: each sink must notify again, naming the old action, and a re-fire
with the same action must stay quiet.  The alerts here are the engine's own.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from detector.alerts import FiredAlert
from detector.engine import Engine
from detector.metrics import PagerMetrics
from detector.pager.config import PagerConfig
from detector.pager.core import FileDeadLetters, Pager
from detector.pager.sinks import Ledger
from detector.pager.testing import Receiver, resolved, validate_pagerduty_event
from detector.testing import T0, ecc, feed, healthy_job

sys.path.insert(0, str(Path(__file__).parent / "integration"))
from servers_harness import alertmanager, wait_for  # noqa: E402
from test_servers_alertmanager import AM_CONFIG  # noqa: E402 - its route: 1 s groups

NODE, GPU = "node-000", 3
ISO_KEY = f"fl:iso:hardware:gpu:{NODE}/{GPU}"
KEY = "R0ut1ngKeyR0ut1ngKeyR0ut1ngKey00"


def _engine_alerts(xid_at: float | None) -> list[FiredAlert]:
    """The engine on a replay storm on node-000 GPU 3 (drain_gpu), an XID 79 at ``xid_at``."""
    out, total, t = [], 0, 15.0
    while t < 600.0:
        total += 600 if t - 30.0 < 40.0 <= t else 0
        out.append(ecc(T0 + t, NODE, GPU, pcie=total))
        t += 30.0
    if xid_at is not None:
        out.append(ecc(T0 + xid_at, NODE, GPU, pcie=total, xid=79))
    alerts = feed(Engine(), sorted([*healthy_job(steps=500), *out], key=lambda e: e.ts))
    return [a for a in alerts if a.dedup_key == ISO_KEY]


@pytest.fixture(scope="module")
def widened() -> list[FiredAlert]:
    got = _engine_alerts(300.0)
    assert [(a.status, a.action.name) for a in got if a.status == "firing"] == [
        ("firing", "drain_gpu"), ("firing", "drain_node")], got
    return got


def _now(a: FiredAlert, dt: float = 0.0) -> FiredAlert:
    """``a`` as a live message (detected now), for Alertmanager's clock."""
    return FiredAlert.from_record(a.topic, {**a.raw, "detected_ts": time.time() + dt,
                                            "onset_ts": time.time() - 60.0 + dt})


def _pager(tmp: Path, sinks: dict[str, Any]) -> Pager:
    cfg = PagerConfig.from_dict({"sinks": sinks, "deadletter_file": str(tmp / "dead.jsonl"),
                                 "state_dir": str(tmp / "state")}, env={})
    pager = Pager(cfg, PagerMetrics(CollectorRegistry(), cfg.sinks),
                  FileDeadLetters(tmp / "dead.jsonl"))
    pager.start()
    return pager


def _idle(pager: Pager) -> None:
    wait_for("the pager to finish its deliveries", pager.idle, 20)


def _pd(rx: Receiver) -> list[dict[str, Any]]:
    """The PagerDuty events received, each checked against the Events API v2 schema."""
    return [validate_pagerduty_event(r.body) for r in rx.requests if r.path.startswith("/v2/")]


def _pd_sinks(url: str) -> dict[str, Any]:
    # Storm control on (PagerDuty's default), with no wait: a re-fire meets it as in service.
    return {"pagerduty": {"url": url + "/v2/enqueue", "routing_key": KEY,
                          "backoff_initial_s": 0.02, "backoff_max_s": 0.1,
                          "storm": {"group_wait_s": 0, "group_interval_s": 0}},
            "hook": {"type": "webhook", "url": url + "/hook", "backoff_initial_s": 0.02,
                     "storm": {"enabled": False}}}


def test_pagerduty_and_webhook_page_again_when_the_action_widens(
        tmp_path: Path, widened: list[FiredAlert]) -> None:
    # (Fails on main: the ledger skips a second trigger for a triggered key, and storm
    # control drops a re-fire of a key it sent: drain_node reaches nobody.)
    first, wider = (a for a in widened if a.status == "firing")
    with Receiver(default=202) as rx:
        pager = _pager(tmp_path, _pd_sinks(rx.url))
        try:
            pager.submit(first, None)
            _idle(pager)
            pager.submit(first, None)   # a redelivery / a re-send with the same action
            _idle(pager)
            pd = _pd(rx)
            assert [(e["event_action"], e["dedup_key"]) for e in pd] == [("trigger", ISO_KEY)]
            pager.submit(wider, None)
            pager.submit(wider, None)   # the widened message redelivered: nothing more
            _idle(pager)
            pd = _pd(rx)
            assert [(e["event_action"], e["dedup_key"]) for e in pd] == [
                ("trigger", ISO_KEY), ("trigger", f"{ISO_KEY}~drain_node"),
                ("resolve", ISO_KEY)]
            page = pd[1]["payload"]
            assert "drain_gpu -> drain_node" in page["summary"]
            assert page["custom_details"]["action_was"] == "drain_gpu"
            assert page["custom_details"]["action"]["name"] == "drain_node"
            hook = [r.json() for r in rx.requests if r.path == "/hook"]
            assert [(h["event"], (h["alert"] or {})["action"]["name"]) for h in hook] == [
                ("trigger", "drain_gpu"), ("trigger", "drain_node")]
            assert hook[1]["action_was"] == "drain_gpu"

            # The problem ends (the engine's resolve, or one made as the engine makes it
            # when this replay ends before the node comes back): the open key is resolved.
            end = [a for a in widened if a.status == "resolved"] or [resolved(wider)]
            pager.submit(end[-1], None)
            _idle(pager)
            pd = _pd(rx)
            assert [(e["event_action"], e["dedup_key"]) for e in pd[3:]] == [
                ("resolve", f"{ISO_KEY}~drain_node")]
            assert [h["event"] for h in (r.json() for r in rx.requests if r.path == "/hook")
                    ][2:] == ["resolve"]
        finally:
            pager.close(5)


def test_a_same_action_refire_is_nothing_even_after_a_restart(tmp_path: Path) -> None:
    got = _engine_alerts(None)
    (first,) = (a for a in got if a.status == "firing")
    again = FiredAlert.from_record(first.topic, {
        **first.raw, "detected_ts": first.detected_ts + 100.0,
        "evidence": {**first.evidence, "action_was": "drain_gpu"}})  # said, not widened
    with Receiver(default=202) as rx:
        pager = _pager(tmp_path, _pd_sinks(rx.url))
        try:
            pager.submit(first, None)
            _idle(pager)
        finally:
            pager.close(5)
        pager = _pager(tmp_path, _pd_sinks(rx.url))
        try:
            pager.submit(first, None)
            pager.submit(again, None)
            _idle(pager)
        finally:
            pager.close(5)
        assert [(r.path, r.json()["event"] if r.path == "/hook" else
                 r.json()["event_action"]) for r in rx.requests] in (
            [("/v2/enqueue", "trigger"), ("/hook", "trigger")],
            [("/hook", "trigger"), ("/v2/enqueue", "trigger")])


def test_the_ledger_journal_keeps_the_action_and_refuses_garbage(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    led = Ledger(path)
    led.set("k", "trigger", 1.0, action="drain_gpu")
    assert led.widened("k", "trigger", "drain_node") == "drain_gpu"
    led.set("k", "trigger", 2.0, action="drain_node", open_key="k~drain_node")
    assert led.widened("k", "trigger", "drain_node") is None
    with open(path, "ab") as f:  # garbage lines: wrong types, states, lengths, sizes
        f.write(b'["j", "triggered", "2.0", "x", ""]\n["j", "pwned", 1.0]\n{"j": 1}\n'
                b'["j", "triggered", 1.0, "' + b"a" * 100 + b'", ""]\n[1, 2, 3]\n')
    back = Ledger(path)
    assert back.open_key("k") == "k~drain_node" and back.widened("k", "trigger",
                                                                 "drain_node") is None
    assert back.state("j") is None and back.triggered() == 1
    old = tmp_path / "v1.json"  # the former journal's lines: read, the action unknown
    old.write_bytes(b'["k", "triggered", 1.0]\n')
    v1 = Ledger(old)
    assert v1.open_key("k") == "k" and v1.widened("k", "trigger", "drain_node") is None
    assert v1.widened("k", "trigger", "drain_node", "drain_gpu") == "drain_gpu"


@pytest.mark.servers
def test_alertmanager_notifies_a_widened_action_and_not_a_same_action_refire(
        tmp_path: Path, widened: list[FiredAlert]) -> None:
    # (Fails on main: the same labels with a new action annotation: Alertmanager sends no
    # second notification, and drain_node reaches nobody.)
    first, wider = (a for a in widened if a.status == "firing")
    with Receiver() as rx, alertmanager(tmp_path, AM_CONFIG.format(url=rx.url)) as am:
        pager = _pager(tmp_path, {"alertmanager": {"url": am.url, "backoff_initial_s": 0.05}})
        try:
            pager.submit(_now(first), None)

            def firing_actions() -> list[list[str]]:
                return [sorted(a["labels"].get("action", "") + ":" + a["status"]
                               for a in b["alerts"]) for b in rx.bodies()
                        if b.get("status") == "firing"]

            rx.wait_for("the first notification", lambda _: firing_actions(), 20)
            pager.submit(_now(first, 1.0), None)   # the same action again
            time.sleep(4.0)                        # > group_wait + 2 group_intervals
            assert firing_actions() == [["drain_gpu:firing"]]

            pager.submit(_now(wider, 2.0), None)
            rx.wait_for("a notification naming drain_node", lambda _: [
                b for b in rx.bodies() if any(a["labels"].get("action") == "drain_node"
                                              and a["status"] == "firing"
                                              for a in b["alerts"])], 20)
            note = next(b for b in rx.bodies() if any(
                a["labels"].get("action") == "drain_node" for a in b["alerts"]))
            new = next(a for a in note["alerts"] if a["labels"].get("action") == "drain_node")
            assert new["annotations"]["action_was"] == "drain_gpu"
            assert new["annotations"]["action"].startswith("drain_node")
            wait_for("the drain_gpu alert ended", lambda: not [
                a for a in _active(am.url) if a["labels"].get("action") == "drain_gpu"], 20)
        finally:
            pager.close(5)


def _active(url: str) -> Any:
    from servers_harness import http_json
    return http_json(url + "/api/v2/alerts?active=true&silenced=false")


def test_blind10_k6_replayed_pages_drain_node_on_pagerduty(tmp_path: Path) -> None:
    # blind10's K6 case through `faultline replay`, its alerts in order into the pager.
    # (Fails on main: one trigger for the isolation, drain_gpu; drain_node never pages.)
    import contextlib
    import io

    from bench.blind10.score import alerts_of
    from detector.cli import main as cli_main

    case = Path(__file__).parents[1] / "bench/blind10/cases/K6-xid79-under-open-isolation.jsonl.gz"
    out = tmp_path / "k6.alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli_main(["replay", str(case), "--alerts-out", str(out), "--quiet"]) in (0, None)
    alerts = [FiredAlert.from_record(t, a) for t, a in alerts_of(out)]
    iso = "fl:iso:hardware:gpu:hgx-b06/0"
    with Receiver(default=202) as rx:
        pager = _pager(tmp_path, _pd_sinks(rx.url))
        try:
            for a in alerts:
                pager.submit(a, None)
                _idle(pager)
        finally:
            pager.close(5)
        got = [(e["event_action"], e["dedup_key"]) for e in _pd(rx)
               if e["dedup_key"].startswith(iso)]
        assert got == [("trigger", iso), ("trigger", f"{iso}~drain_node"), ("resolve", iso)]
        page = next(e for e in _pd(rx) if e["dedup_key"] == f"{iso}~drain_node")
        assert page["payload"]["summary"].startswith("ACTION WIDENED drain_gpu -> drain_node:")
