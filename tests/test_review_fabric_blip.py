"""No topology: NIC trouble on every NIC of half the nodes is one escalation, also when it
was over before the window closed (review, 2026-12-02: 2cc4754 counts such trouble towards a
switch the topology names; ``_group_due``'s fabric branch did not, so a one-sample blip
was one isolation per NIC -- 16 here -- where the same outage lasting 30 s is one page)."""

from __future__ import annotations

from detector.engine import Engine
from detector.testing import T0, feed, nic
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
    independent NIC faults (the fabric rule's >= 2 NICs a node, for cleared trouble too) --
    when they are different ports: mlx5_0 on four of the nodes, mlx5_1 on the other four."""
    blips = {f"node-{n:03d}": f"mlx5_{n % 2}" for n in range(8)}
    records = [nic(T0 + t + 0.01 * k, f"node-{n:03d}", f"mlx5_{k}", tx=t * 2_500_000_000,
                   rx=t * 2_500_000_000, up=not (blips.get(f"node-{n:03d}") == f"mlx5_{k}"
                                                 and t == 20))
               for t in range(60) for n in range(16) for k in range(2)]
    alerts = feed(Engine(), records)
    scopes = {a.scope.key for a in alerts if a.status == "firing"}
    assert scopes == {f"nic:{n}/{k}:1" for n, k in blips.items()}


def test_a_blip_on_the_same_nic_of_half_the_nodes_is_one_escalation() -> None:
    """The same port of half the nodes at once is a rail switch's signature (it takes ONE NIC
    of every node): one escalation naming no switch (review round 12, F2; until round 14
    this case was 8 NIC isolations, "one port a node is as many independent faults")."""
    alerts = feed(Engine(), links_down(HALF, 20, 21, 60, nics=1))
    assert [(a.topic, a.scope.key) for a in alerts if a.status == "firing"] == [
        ("alerts.escalation", "switch:unknown")]
    assert alerts[0].evidence["rail"] == "mlx5_0 on 8 of 16 nodes"
