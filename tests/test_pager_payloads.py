"""What a person paged reads: the action line with its approval and rollback, and a storm
group's or a rate-limit summary's contents, in each sink's payload."""

from __future__ import annotations

from detector.pager.notification import Notification
from detector.pager.payloads import (
    alertmanager_alert,
    details,
    pagerduty_event,
    webhook_body,
)
from detector.pager.testing import alert

NOW = 1767225700.0


def test_the_action_says_it_needs_approval_and_how_to_roll_it_back() -> None:
    a = alert("node-003")
    assert a.action is not None and a.action.requires_approval and a.action.rollback
    ann = alertmanager_alert(a, "warning", wall_now=NOW, ttl_s=240.0,
                             extra_summary="3 alerts alike")["annotations"]
    assert ann["action"].endswith(f" (requires approval); rollback: {a.action.rollback}")
    assert ann["grouped"] == "3 alerts alike"
    assert ann["job"] == a.job


def test_a_group_and_a_held_back_summary_list_their_alerts_in_every_payload() -> None:
    lead, *others = [alert(f"node-{i:03d}") for i in range(3)]
    group = Notification("s", "trigger", lead.dedup_key, "warning", lead,
                         members=tuple(others), summary="3 alerts alike (3 network/nic)")
    held = Notification("s", "trigger", "faultline:held-back:1", "warning", None,
                        held_back=tuple(others), summary="faultline held back 2 alerts")
    for n, key, count in ((group, "grouped", 2), (held, "held_back", 2)):
        d = details(n, 65536)
        assert d["storm"] == n.summary and len(d[key]) == count
        body = webhook_body(n, wall_now=NOW, details_max_bytes=65536)
        assert body["storm"] == n.summary and len(body[key]) == count
        assert {x["dedup_key"] for x in body[key]} == {o.dedup_key for o in others}
    pd = pagerduty_event(group, "R" * 32, source=None, wall_now=NOW, details_max_bytes=65536)
    assert pd["payload"]["summary"].endswith(" [3 alerts alike (3 network/nic)]")
    pd = pagerduty_event(held, "R" * 32, source=None, wall_now=NOW, details_max_bytes=65536)
    assert pd["payload"]["summary"] == "faultline held back 2 alerts"
    assert pd["payload"]["component"] == others[0].scope.key
