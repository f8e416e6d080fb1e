"""A page withdrawn seconds after it fired wakes nobody (pager34, issue 10/14's reliability row).

The correlator takes a page back shortly after it fired -- superseded by the coarser unit,
withdrawn when a site's power cap shows (5-11 s on a slow roll-out), withdrawn when a rail
retrains (up to ~25-30 s) -- naming why in the resolved message.  Alertmanager hides a
trigger resolved inside its group_wait (its notify pipeline's dedup stage sends nothing
for a group never notified whose alerts are all resolved); the direct PagerDuty path sent
the trigger at once, or after storm control's group_wait, and the resolve after.

Storm control now holds a firing alert ``hold_s`` (20 s by default) before it groups it; a
resolve inside the hold drops both, counted as ``faultline_pager_held_back_total{reason=
"withdrawn"}``.  A hardware event's page (XID, DBE, link down, checksum mismatch) is never
held: DESIGN's <= 1 s for hardware events.  The hold is delivery's: the detector's alerts,
their ``detected_ts`` and the scoring are unchanged (nothing outside detector/pager/ moved).

Every wait here is on a condition (a FakeClock, the receiver's requests, Alertmanager's
own log), never on wall-clock sleeps.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from detector.alerts import ESCALATION
from detector.metrics import PagerMetrics
from detector.pager.config import PagerConfig, StormConfig
from detector.pager.core import FileDeadLetters, Pager
from detector.pager.hold import held
from detector.pager.storm import StormControl
from detector.pager.testing import (
    FakeClock,
    Receiver,
    alert,
    resolved,
    triggers,
    validate_pagerduty_event,
)

sys.path.insert(0, str(Path(__file__).parent / "integration"))
from servers_harness import Server, alertmanager, wait_for  # noqa: E402
from test_servers_alertmanager import AM_CONFIG  # noqa: E402 - its route and receiver

KEY = "R0ut1ngKeyR0ut1ngKeyR0ut1ngKey00"


def power(node: str = "node-007", **kw: Any) -> Any:
    """A node's power page (slow_node/power): the kind a site's cap withdraws."""
    return alert(node, kind="slow_node", cause="power", level="node",
                 evidence={"signals": [{"signal": "slow_rank"}, {"signal": "throttle"}]}, **kw)


def rail_nic(node: str = "node-007", **kw: Any) -> Any:
    """A NIC page on a link retrained lower (network/nic link_rate): a rail's retrain
    withdraws it."""
    return alert(node, evidence={"signals": [{"signal": "link_rate"}]}, **kw)


def xid(node: str = "node-007", **kw: Any) -> Any:
    """An XID 79 escalation at a GPU: a hardware event."""
    return alert(node, topic=ESCALATION, kind="hardware", cause="gpu_hardware", level="gpu",
                 gpu=3, evidence={"signals": [{"signal": "xid", "xid": 79}]}, **kw)


def link_down(node: str = "node-007", **kw: Any) -> Any:
    return alert(node, evidence={"signals": [{"signal": "link_down"}]}, **kw)


def storm(**kw: Any) -> tuple[StormControl, list[tuple[str, int]]]:
    held_back: list[tuple[str, int]] = []
    s = StormControl("pd", StormConfig(**kw), now=0.0,
                     on_held=lambda reason, n: held_back.append((reason, n)))
    return s, held_back


def sent(notes: list[Any]) -> list[tuple[str, str]]:
    return [(n.event, n.dedup_key) for n in notes]


# -- which pages the hold applies to ---------------------------------------------------


def test_the_hold_applies_to_pages_the_detector_can_take_back_not_to_hardware_events() -> None:
    assert held(power()) and held(rail_nic())
    # (revA34 F2, pagerfix34: only pages a withdrawal path takes back are held; an
    # unattributed escalation is not one -- tests/test_pagerfix34.py)
    assert not held(alert("n1", topic=ESCALATION, kind="unattributed", cause="unknown",
                          evidence={"signals": [{"signal": "slow_rank"}]}))
    assert not held(xid()) and not held(link_down())
    assert not held(alert("n1", kind="sdc", cause="gpu_hardware", level="gpu",
                          evidence={"signals": [{"signal": "checksum_mismatch"}]}))
    assert not held(alert("n1", kind="hardware", cause="gpu_memory", level="gpu",
                          evidence={"signals": [{"signal": "sbe_burst"}]}))
    # a page whose evidence names a link down among other signals is a hardware event's
    assert not held(alert("n1", evidence={"signals": [{"signal": "nic_errors"},
                                                      {"signal": "link_down"}]}))


# -- storm control's hold ---------------------------------------------------------------


def test_a_page_resolved_inside_the_hold_is_never_sent_and_counted_withdrawn() -> None:
    s, held_back = storm()  # the defaults: hold_s 20, group_wait_s 10
    assert s.config.hold_s == 20.0
    a = power()
    assert s.offer(a, "warning", None, now=0.0) == []
    assert s.next_due(0.0) == 20.0
    assert s.due(19.9) == []
    # the site's cap shows on other nodes 11 s after the page: withdrawn
    assert s.offer(resolved(a), "warning", None, now=11.0) == []
    assert held_back == [("withdrawn", 1)]
    assert s.due(1000.0) == [] and s.next_due(1000.0) == float("inf")


def test_a_page_that_stands_goes_out_after_the_hold_and_its_group_wait_then_resolves() -> None:
    s, held_back = storm()
    a = rail_nic()
    assert s.offer(a, "warning", None, now=0.0) == []
    assert s.due(20.0) == []  # out of the hold into its group: group_wait_s from there
    assert s.next_due(20.0) == 30.0
    assert sent(s.due(30.0)) == [("trigger", a.dedup_key)]
    assert sent(s.offer(resolved(a), "warning", None, now=600.0)) == [("resolve", a.dedup_key)]
    assert held_back == []


def test_a_resolve_after_the_hold_but_inside_the_group_wait_still_sends_nothing() -> None:
    s, held_back = storm()
    a = rail_nic()
    s.offer(a, "warning", None, now=0.0)
    assert s.due(20.0) == []
    # 27 s: the rail's retrain (railfix33: up to ~25-30 s) -- past the hold, inside the wait
    assert s.offer(resolved(a), "warning", None, now=27.0) == []
    assert held_back == [("cleared", 1)] and s.due(1000.0) == []


def test_a_late_tick_counts_the_group_wait_from_the_release_not_from_the_tick() -> None:
    s, _ = storm()
    a = power()
    s.offer(a, "warning", None, now=0.0)
    # nobody looked for 45 s: the hold ended at 20, its group wait at 30 -- out now
    assert sent(s.due(45.0)) == [("trigger", a.dedup_key)]


def test_a_hardware_event_is_not_held_its_page_goes_out_as_without_a_hold() -> None:
    for make in (xid, link_down):
        with_hold, _ = storm()
        without, _ = storm(hold_s=0.0)
        times = []
        for s in (with_hold, without):
            a = make()
            assert s.offer(a, "critical", None, now=0.0) == []
            assert s.next_due(0.0) == 10.0  # its group wait alone, as before the hold
            assert sent(s.due(10.0)) == [("trigger", a.dedup_key)]
            times.append(10.0)
        assert times[0] == times[1]
        # and with no group wait, it goes out the moment it is offered
        s, _ = storm(group_wait_s=0.0)
        a = make()
        assert sent(s.offer(a, "critical", None, now=0.0)) == [("trigger", a.dedup_key)]


def test_a_held_page_re_fired_as_a_hardware_event_goes_on_at_once_with_its_news() -> None:
    s, held_back = storm(group_wait_s=0.0)
    a = power("node-003")
    s.offer(a, "warning", None, now=0.0)
    # the same problem re-fired 5 s later, its evidence now naming an XID
    refire = alert("node-003", kind="slow_node", cause="power", level="node",
                   detected_ts=a.detected_ts + 5.0,
                   evidence={"signals": [{"signal": "slow_rank"}, {"signal": "xid", "xid": 79}]})
    out = s.offer(refire, "warning", None, now=5.0)
    assert sent(out) == [("trigger", a.dedup_key)]
    assert out[0].alert.detected_ts == refire.detected_ts  # the newest evidence
    assert held_back == [("duplicate", 1)]


def test_a_re_sent_page_in_the_hold_is_one_page_with_the_newest_evidence() -> None:
    s, held_back = storm(group_wait_s=0.0)
    a = power("node-003")
    s.offer(a, "warning", None, now=0.0)
    again = power("node-003", detected_ts=a.detected_ts + 8.0)
    assert s.offer(again, "warning", None, now=8.0) == []
    out = s.due(20.0)
    assert sent(out) == [("trigger", a.dedup_key)]
    assert out[0].alert.detected_ts == again.detected_ts
    assert held_back == [("duplicate", 1)]


def test_pages_of_one_group_held_together_still_go_out_as_one() -> None:
    s, held_back = storm()
    nics = [rail_nic(f"node-{i:03d}") for i in range(8)]
    for i, a in enumerate(nics):
        assert s.offer(a, "warning", None, now=0.1 * i) == []
    s.offer(resolved(nics[0]), "warning", None, now=12.0)  # one withdrawn inside the hold
    out = s.due(40.0)
    assert len(out) == 1 and out[0].event == "trigger" and len(out[0].members) == 6
    assert ("withdrawn", 1) in held_back


def test_the_hold_is_a_setting_of_storm_control_and_zero_turns_it_off() -> None:
    cfg = PagerConfig.from_dict({"sinks": {
        "pagerduty": {"routing_key": KEY},
        "oncall": {"type": "pagerduty", "routing_key": KEY, "storm": {"hold_s": 45}},
        "tickets": {"type": "webhook", "url": "http://127.0.0.1:1/x",
                    "storm": {"hold_s": 0}}}}, env={})
    assert cfg.sinks["pagerduty"].storm.hold_s == 20.0
    assert cfg.sinks["oncall"].storm.hold_s == 45.0
    assert cfg.sinks["tickets"].storm.hold_s == 0.0
    assert "hold_s = 45.0" in cfg.to_toml()
    with pytest.raises(ValueError, match="hold_s"):
        PagerConfig.from_dict({"sinks": {"pagerduty": {"routing_key": KEY,
                                                       "storm": {"hold_s": -1}}}}, env={})
    s, _ = storm(hold_s=0.0, group_wait_s=0.0)
    a = power()
    assert sent(s.offer(a, "warning", None, now=0.0)) == [("trigger", a.dedup_key)]


# -- the direct PagerDuty path, against PagerDuty's documented Events v2 schema ----------


def make_pager(tmp: Path, sinks: dict[str, Any], clock: FakeClock | None = None
               ) -> tuple[Pager, CollectorRegistry]:
    cfg = PagerConfig.from_dict({"sinks": sinks, "deadletter_file": str(tmp / "dead.jsonl"),
                                 "state_dir": str(tmp / "state")}, env={})
    reg = CollectorRegistry()
    return Pager(cfg, PagerMetrics(reg, cfg.sinks), FileDeadLetters(tmp / "dead.jsonl"),
                 **({"clock": clock} if clock is not None else {})), reg


def pd_pager(tmp: Path, url: str, clock: FakeClock, **storm_cfg: Any
             ) -> tuple[Pager, CollectorRegistry]:
    pager, reg = make_pager(tmp, {"pagerduty": {
        "url": url + "/v2/enqueue", "routing_key": KEY, "backoff_initial_s": 0.02,
        "backoff_max_s": 0.1, "storm": storm_cfg}}, clock)
    pager.start()
    return pager, reg


def test_pagerduty_hears_nothing_of_a_withdrawn_page_and_trigger_then_resolve_of_a_real_one(
        tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    with Receiver(default=202, validate=validate_pagerduty_event) as pd:
        pager, reg = pd_pager(tmp_path, pd.url, clock)
        try:
            gone, real = power("node-001"), power("node-002", cluster="c2")
            pager.submit(gone, None)
            pager.submit(real, None)
            clock.advance(11.0)
            pager.tick()
            pager.submit(resolved(gone), None)  # the site's cap: withdrawn 11 s after
            clock.advance(9.5)                   # past the hold: into the group wait
            pager.tick()
            assert pager.next_due() == pytest.approx(1030.0)
            clock.advance(9.5)
            pager.tick()
            real_trigger = pd.wait_for("the real page's trigger",
                                       lambda rs: triggers(r.json() for r in rs))
            assert real_trigger == [real.dedup_key]
            pager.submit(resolved(real), None)
            pd.wait_for("the real page's resolve", lambda rs: len(rs) == 2)
            wait_for("the pager to finish", pager.idle, 20)
            assert [r.status for r in pd.requests] == [202, 202]  # both valid Events v2
            assert [(b["event_action"], b["dedup_key"]) for b in pd.bodies()] == [
                ("trigger", real.dedup_key), ("resolve", real.dedup_key)]
            assert reg.get_sample_value("faultline_pager_held_back_total",
                                        {"sink": "pagerduty", "reason": "withdrawn"}) == 1
        finally:
            pager.close(5)


def test_pagerduty_gets_a_hardware_event_at_once_while_a_held_page_waits(tmp_path: Path
                                                                        ) -> None:
    clock = FakeClock(1000.0)
    with Receiver(default=202, validate=validate_pagerduty_event) as pd:
        pager, _ = pd_pager(tmp_path, pd.url, clock, group_wait_s=0.0)
        try:
            slow, hw = power("node-001"), xid("node-002")
            pager.submit(slow, None)
            pager.submit(hw, None)  # no clock moved: the XID is not held
            pd.wait_for("the XID's trigger", lambda rs: triggers(r.json() for r in rs))
            wait_for("the pager to finish", pager.idle, 20)
            assert triggers(pd.bodies(202)) == [hw.dedup_key]
            clock.advance(20.0)
            pager.tick()
            pd.wait_for("the held page's trigger", lambda rs: len(rs) == 2)
            assert triggers(pd.bodies(202)) == [hw.dedup_key, slow.dedup_key]
        finally:
            pager.close(5)


# -- the real Alertmanager: a fire + resolve inside its group_wait notifies nobody -------

# test_servers_alertmanager's route (one webhook receiver, send_resolved), its group wait
# long enough for the pager's fire and resolve to land inside it on a loaded machine.
AM_HOLD_CONFIG = AM_CONFIG.replace("group_wait: 1s", "group_wait: 3s")


def _flushes(am: Server) -> list[str]:
    return [line for line in am.log_path.read_text(errors="replace").splitlines()
            if 'msg=flushing' in line]


@pytest.mark.servers
def test_alertmanager_sends_nothing_for_a_fire_and_resolve_inside_its_group_wait(
        tmp_path: Path) -> None:
    assert "group_wait: 3s" in AM_HOLD_CONFIG
    with Receiver() as rx, alertmanager(tmp_path, AM_HOLD_CONFIG.format(url=rx.url),
                                        log_level="debug") as am:
        pager, _ = make_pager(tmp_path, {"alertmanager": {"url": am.url,
                                                          "backoff_initial_s": 0.05}})
        try:
            # Live alerts (detected now: one older than group_wait is flushed at once).
            gone = power("node-001", detected_ts=time.time())
            pager.submit(gone, None)
            pager.submit(resolved(gone), None)  # both queued before the sink's thread runs
            pager.start()
            wait_for("the pager to post both", pager.idle, 20)
            # Its group's first flush holds it resolved (the resolve came inside group_wait).
            (flush,) = wait_for("the withdrawn page's group to flush", lambda: _flushes(am),
                                30, on_timeout=am.log_tail)
            assert "[resolved]" in flush and "[active]" not in flush, flush
            # A page of the same group after that flush: its group's pipeline runs in order,
            # so once its notification is in, the flush before it has sent all it would.
            real = power("node-002", detected_ts=time.time())
            pager.submit(real, None)
            body = rx.wait_for("the real page's notification", lambda _: [
                b for b in rx.bodies() if b["status"] == "firing"], 30)[-1]
            assert [a["labels"]["dedup_key"] for a in body["alerts"]] == [real.dedup_key]
            pager.submit(resolved(real), None)
            rx.wait_for("the real page's resolve", lambda _: [
                b for b in rx.bodies() if b["status"] == "resolved"], 30)
            told = [a["labels"]["dedup_key"] for b in rx.bodies() for a in b["alerts"]]
            assert gone.dedup_key not in told and set(told) == {real.dedup_key}
        finally:
            pager.close(5)
