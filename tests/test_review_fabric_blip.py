"""No topology: NIC trouble on every NIC of half the nodes is one escalation, also when it
was over before the window closed (review, 2026-12-02: 2cc4754 counts such trouble towards a
switch the topology names; ``_group_due``'s fabric branch did not, so a one-sample blip
was one isolation per NIC -- 16 here -- where the same outage lasting 30 s is one page)."""

from __future__ import annotations

from detector.engine import Engine
from detector.testing import feed
from tests.test_issue10_regressions import links_down

HALF = {f"node-{n:03d}" for n in range(8)}  # of 16, two NICs each


def firing(end: int) -> list[tuple[str, str]]:
    alerts = feed(Engine(), links_down(HALF, 20, end, 60))
    return sorted((a.topic, a.scope.key) for a in alerts if a.status == "firing")


def test_an_outage_on_half_the_nodes_without_a_topology_is_one_escalation() -> None:
    assert firing(50) == [("alerts.escalation", "switch:unknown")]


def test_a_blip_on_half_the_nodes_without_a_topology_is_one_escalation_too() -> None:
    assert firing(21) == [("alerts.escalation", "switch:unknown")]



def test_a_blip_on_one_nic_of_each_of_half_the_nodes_is_their_nics() -> None:
    """A shared part takes a node's NICs with it: one port a node, cleared or not, is as many
    independent NIC faults (the fabric rule's >= 2 NICs a node, for cleared trouble too)."""
    alerts = feed(Engine(), links_down(HALF, 20, 21, 60, nics=1))
    scopes = {a.scope.key for a in alerts if a.status == "firing"}
    assert scopes == {f"nic:{n}/mlx5_0:1" for n in HALF}
