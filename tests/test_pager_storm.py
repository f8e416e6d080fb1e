"""Storm control on a fake clock: grouping, resolves of groups, the rate limit and its summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from detector.alerts import ESCALATION
from detector.pager.config import StormConfig
from detector.pager.notification import Notification
from detector.pager.storm import StormControl, TokenBucket
from detector.pager.testing import FakeClock, alert, resolved
from detector.topology import Topology


class Ticket:
    def __init__(self) -> None:
        self.count = 0

    def done(self) -> None:
        self.count += 1


def storm(clock: FakeClock, **cfg: object) -> tuple[StormControl, list[tuple[str, int]]]:
    held: list[tuple[str, int]] = []
    s = StormControl("oncall", StormConfig(**cfg), now=clock(),  # type: ignore[arg-type]
                     on_held=lambda reason, n: held.append((reason, n)))
    return s, held


def test_a_leaf_switch_failure_is_one_page_not_sixty_four() -> None:
    clock = FakeClock(1000.0)
    s, held = storm(clock, group_wait_s=10.0)
    tickets = [Ticket() for _ in range(64)]
    out: list[Notification] = []
    for i, t in enumerate(tickets):
        out += s.offer(alert(f"node-{i:03d}"), "warning", t, now=clock.advance(0.05))
    assert out == []  # the first waits for the others
    assert s.due(clock.advance(5.0)) == []
    (note,) = s.due(clock.advance(5.0))
    assert note.event == "trigger" and len(note.alerts()) == 64
    assert note.dedup_key == "fl:c1:iso:network:nic:node-000/mlx5_0"  # the first alert's own key
    assert note.summary.startswith("64 alerts alike (64 network/nic): nic:node-000/mlx5_0, ")
    assert note.summary.endswith("(+44 more)")
    assert held == [("grouped", 63)]
    assert all(t.count == 0 for t in tickets)  # done only once delivered
    note.done()
    assert all(t.count == 1 for t in tickets)

    # Resolves: nothing until the last one, then one resolve under the page's key.
    out = []
    resolves = [Ticket() for _ in range(64)]
    for i, t in enumerate(resolves):
        out += s.offer(resolved(alert(f"node-{i:03d}")), "warning", t, now=clock.advance(1))
    assert [(n.event, n.dedup_key) for n in out] == [
        ("resolve", "fl:c1:iso:network:nic:node-000/mlx5_0")]
    # Each resolve that sends nothing is done at once; the last rides with the notification.
    assert [t.count for t in resolves] == [1] * 63 + [0]


def test_groups_are_by_the_configured_fields_and_the_most_severe_leads() -> None:
    clock = FakeClock()
    s, _ = storm(clock, group_wait_s=1.0, group_by=("cluster", "kind"))
    s.offer(alert("node-001"), "warning", None, now=clock())
    s.offer(alert("node-002", topic=ESCALATION, kind="network", cause="unknown"), "critical",
            None, now=clock())
    s.offer(alert("node-003", kind="hardware", cause="gpu_memory", level="gpu"), "warning",
            None, now=clock())
    s.offer(alert("node-004", cluster="c2"), "warning", None, now=clock())
    notes = s.due(clock.advance(1.0))
    assert sorted((n.dedup_key, n.severity, len(n.members)) for n in notes) == [
        ("fl:c1:esc:network:node:node-002", "critical", 1),
        ("fl:c1:iso:hardware:gpu:node-003/0", "warning", 0),
        ("fl:c2:iso:network:nic:node-004/mlx5_0", "warning", 0)]


def test_grouping_by_switch_uses_the_topology() -> None:
    topo = Topology.from_text(
        "Topology=t\nNodeSet=node-[000-003] Gpus=8 Nics=mlx5_0\n"
        "SwitchName=leaf-[0-1] Nodes=node-[000-003]\n")
    clock = FakeClock()
    s = StormControl("oncall", StormConfig(group_by=("cluster", "switch", "kind"),
                                           group_wait_s=1.0), now=0.0, topology=topo)
    for i in range(4):
        s.offer(alert(f"node-{i:03d}"), "warning", None, now=clock())
    notes = s.due(clock.advance(1.0))
    assert sorted(sorted(a.scope.node for a in n.alerts()) for n in notes) == [
        ["node-000", "node-001"], ["node-002", "node-003"]]


def test_grouping_by_domain_uses_the_topology_and_a_domain_scope_names_its_own() -> None:
    topo = Topology.from_text(
        "Topology=t\nNodeSet=nvl-r[0-1]-n[00-01] Gpus=4 Nics=mlx5_0\n"
        "Domain=rack-[0-1] Nodes=nvl-r[0-1]-n[00-01]\n")
    s = StormControl("oncall", StormConfig(group_by=("domain",), group_wait_s=1.0), now=0.0,
                     topology=topo)
    for node in ("nvl-r0-n00", "nvl-r0-n01", "nvl-r1-n00"):
        s.offer(alert(node, kind="hardware", cause="nvlink", level="gpu", gpu=0), "warning",
                None, now=0.0)
    s.offer(alert("rack-1", kind="hardware", cause="nvlink", level="domain", domain="rack-1"),
            "warning", None, now=0.0)
    notes = s.due(1.0)
    assert sorted(sorted(a.scope.key for a in n.alerts()) for n in notes) == [
        ["domain:rack-1", "gpu:nvl-r1-n00/0"], ["gpu:nvl-r0-n00/0", "gpu:nvl-r0-n01/0"]]
    # Without a topology a node is its own domain.
    alone = StormControl("oncall", StormConfig(group_by=("domain",), group_wait_s=1.0), now=0.0)
    for node in ("nvl-r0-n00", "nvl-r0-n01"):
        alone.offer(alert(node), "warning", None, now=0.0)
    assert len(alone.due(1.0)) == 2


def test_later_alerts_of_a_group_wait_for_the_group_interval() -> None:
    clock = FakeClock()
    s, held = storm(clock, group_wait_s=10.0, group_interval_s=300.0)
    s.offer(alert("node-000"), "warning", None, now=clock())
    (first,) = s.due(clock.advance(10.0))
    assert s.offer(alert("node-001"), "warning", None, now=clock.advance(20.0)) == []
    s.offer(alert("node-002"), "warning", None, now=clock.advance(20.0))
    assert s.due(clock.advance(200.0)) == []
    assert s.next_due(clock()) == 310.0
    (second,) = s.due(clock.advance(60.0))
    assert second.dedup_key == "fl:c1:iso:network:nic:node-001/mlx5_0"
    assert [a.scope.node for a in second.alerts()] == ["node-001", "node-002"]


def test_a_blip_resolved_before_it_was_sent_pages_nobody() -> None:
    clock = FakeClock()
    s, held = storm(clock, group_wait_s=10.0)
    t_fire, t_resolve = Ticket(), Ticket()
    a = alert("node-000")
    s.offer(a, "warning", t_fire, now=clock())
    assert s.offer(resolved(a), "warning", t_resolve, now=clock.advance(3.0)) == []
    assert s.due(clock.advance(30.0)) == []
    assert (t_fire.count, t_resolve.count) == (1, 1)  # both done: their offsets may be committed
    assert held == [("cleared", 1)]


def test_a_refired_alert_is_not_sent_again_and_its_ticket_is_done_at_once() -> None:
    clock = FakeClock()
    s, held = storm(clock, group_wait_s=0.0)
    (note,) = s.offer(alert("node-000"), "warning", Ticket(), now=clock())
    again = Ticket()
    assert s.offer(alert("node-000", detected_ts=1767225700.0), "warning", again,
                   now=clock.advance(5)) == []
    assert again.count == 1 and held == [("duplicate", 1)]


def test_an_unknown_resolve_passes_through() -> None:
    s, _ = storm(FakeClock())
    (note,) = s.offer(resolved(alert("node-009")), "warning", None, now=0.0)
    assert (note.event, note.dedup_key) == ("resolve", "fl:c1:iso:network:nic:node-009/mlx5_0")


def test_rate_limit_holds_back_and_summarizes_when_it_opens_again() -> None:
    clock = FakeClock()
    s, held = storm(clock, group_wait_s=0.0, group_by=("cluster", "kind", "cause", "node"),
                    burst=2, per_minute=1.0)
    tickets = [Ticket() for _ in range(5)]
    sent: list[Notification] = []
    for i, t in enumerate(tickets):
        sent += s.offer(alert(f"node-{i:03d}", kind="hardware", cause="gpu_memory",
                              level="gpu", gpu=i), "error", t, now=clock.advance(0.1))
    assert [n.alert.scope.node for n in sent if n.alert] == ["node-000", "node-001"]
    assert held == [("rate_limited", 1)] * 3
    assert s.due(clock.advance(30.0)) == []  # half a token
    assert s.next_due(clock()) == pytest.approx(60.1)  # a token a minute since the 2nd
    (summary,) = s.due(clock.advance(30.0))
    assert summary.alert is None and len(summary.held_back) == 3
    assert summary.summary == (
        "faultline held back 3 alerts (rate limit of oncall): 3 hardware/gpu_memory; "
        "gpu:node-002/2, gpu:node-003/3, gpu:node-004/4")
    assert summary.dedup_key.startswith("faultline:held-back:") and summary.severity == "error"
    assert [t.count for t in tickets[2:]] == [0, 0, 0]
    summary.done()
    assert [t.count for t in tickets] == [0, 0, 1, 1, 1]
    # The summary resolves when everything it held back has resolved.
    out = []
    for i in (2, 3, 4):
        out += s.offer(resolved(alert(f"node-{i:03d}", kind="hardware", cause="gpu_memory",
                                      level="gpu", gpu=i)), "error", None, now=clock())
    assert [(n.event, n.dedup_key) for n in out] == [("resolve", summary.dedup_key)]


def test_resolves_are_never_rate_limited() -> None:
    clock = FakeClock()
    s, _ = storm(clock, group_wait_s=0.0, group_by=("node",), burst=1, per_minute=0.001)
    a, b = alert("node-000"), alert("node-001")
    (na,) = s.offer(a, "warning", None, now=clock())
    held_b, resolve_b = Ticket(), Ticket()
    assert s.offer(b, "warning", held_b, now=clock()) == []  # held
    (ra,) = s.offer(resolved(a), "warning", None, now=clock())
    assert ra.event == "resolve"
    assert s.offer(resolved(b), "warning", resolve_b, now=clock()) == []  # held, then cleared
    assert (held_b.count, resolve_b.count) == (1, 1)  # both offsets may be committed
    assert s.due(clock.advance(1e6)) == []


def test_token_bucket_refills_to_its_burst_only() -> None:
    b = TokenBucket(burst=3, per_minute=60.0, now=0.0)
    assert [b.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert [b.take(1000.0) for _ in range(4)] == [True, True, True, False]


def test_after_a_restart_a_delivered_group_still_resolves_as_one(tmp_path: Path) -> None:
    path = tmp_path / "groups.json"
    clock = FakeClock()
    first = StormControl("oncall", StormConfig(group_wait_s=1.0), now=0.0, state_path=path)
    alerts = [alert(f"node-{i:03d}") for i in range(4)]
    for a in alerts:
        first.offer(a, "warning", None, now=clock())
    (delivered,) = first.due(clock.advance(1.0))
    delivered.delivered()
    other = alert("node-100", kind="hardware", cause="gpu_memory", level="gpu")
    first.offer(other, "warning", None, now=clock())
    (lost,) = first.due(clock.advance(1.0))  # made, never delivered: the process died

    again = StormControl("oncall", StormConfig(group_wait_s=1.0), now=0.0, state_path=path)
    # The undelivered one comes again (its offset was not committed) and is sent.
    again.offer(other, "warning", None, now=clock())
    assert [n.dedup_key for n in again.due(clock.advance(1.0))] == [lost.dedup_key]
    out = []
    for a in alerts:
        out += again.offer(resolved(a), "warning", None, now=clock())
    assert [(n.event, n.dedup_key) for n in out] == [("resolve", delivered.dedup_key)]


def test_a_group_half_resolved_before_a_restart_resolves_with_its_last_alert_after(
        tmp_path: Path) -> None:
    path = tmp_path / "groups.json"
    first = StormControl("oncall", StormConfig(group_wait_s=1.0), now=0.0, state_path=path)
    alerts = [alert(f"node-{i:03d}") for i in range(3)]
    for a in alerts:
        first.offer(a, "warning", None, now=0.0)
    (delivered,) = first.due(1.0)
    delivered.delivered()
    assert first.offer(resolved(alerts[0]), "warning", None, now=2.0) == []
    assert first.offer(resolved(alerts[1]), "warning", None, now=3.0) == []

    again = StormControl("oncall", StormConfig(group_wait_s=1.0), now=0.0, state_path=path)
    (note,) = again.offer(resolved(alerts[2]), "warning", None, now=4.0)
    assert (note.event, note.dedup_key) == ("resolve", delivered.dedup_key)
    # ... and then it is gone from the state: a third process remembers no group.
    third = StormControl("oncall", StormConfig(group_wait_s=1.0), now=0.0, state_path=path)
    (passed,) = third.offer(resolved(alerts[2]), "warning", None, now=5.0)
    assert passed.dedup_key == alerts[2].dedup_key
