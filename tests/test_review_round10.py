"""Room review, round 10: cases the round's changes get wrong (issue 10).

Each finding is a strict xfail: it states what an operator needs, fails on main today, and
turns into an unexpected pass (a failure) the moment the detector is fixed -- then drop the
mark and keep the reason as a comment "(Was a strict xfail: ...)".  Beside each, where one
exists, a plain test of the neighbouring case that passes (the control).  Nothing here was
tuned on the blind or simulated corpora; findings: /work/helpers/review10-findings.md.
"""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.testing import T0, feed
from detector.topology import Topology
from tests.test_review_round9 import RAIL, SLURM, fleet, isolations

# -- fabric: a node's every port down in a rail fabric is one node alert ---------------------


def node_reset(t_fail: float, node: str = "node-003", samples: int = 1) -> list:
    """16 nodes x 8 NICs every 10 s; every port of ``node`` down for ``samples`` samples from
    ``t_fail`` and back after (a NIC firmware reset -- mlxfwreset -- or a driver reload:
    every port of the node retrains at once, 10-30 s)."""
    return fleet(16, 8, t_fail + 300.0, period=lambda n: 10.0, first=lambda n: T0 + 0.7 * n,
                 down=lambda nd, name, i, ts: nd == node and t_fail <= ts < t_fail + 10.0 * samples)


@pytest.mark.xfail(strict=True, reason=(
    "review round 10 (room fabric's R9 fix, Correlator._node_down_across_parts): it gathers "
    "only link downs still active (`not f.active -> False`, `g.active`), so a node whose every "
    "port was down for one 10 s sample -- over before the rail windows closed -- is 8 NIC "
    "isolations in a rail fabric (topologies/h100-128.topo), where under a Slurm topology.conf "
    "_whole_node_down counts the cleared ones too and makes it one node alert"))
def test_every_port_of_a_node_down_for_one_sample_is_one_node_alert_in_a_rail_fabric() -> None:
    alerts = feed(Engine(topology=RAIL), node_reset(T0 + 300.0))
    assert sorted(set(isolations(alerts))) == [("nic", "node:node-003")]


def test_every_port_of_a_node_down_for_one_sample_is_one_node_alert_under_one_leaf() -> None:
    # The control: the same reset under a Slurm topology.conf (every NIC under the node's leaf).
    alerts = feed(Engine(topology=SLURM), node_reset(T0 + 300.0))
    assert sorted(set(isolations(alerts))) == [("nic", "node:node-003")]



def test_every_port_of_a_node_down_for_two_samples_is_one_node_alert_in_a_rail_fabric() -> None:
    # The control: still down when the windows close -- one node alert.
    alerts = feed(Engine(topology=RAIL), node_reset(T0 + 300.0, samples=2))
    assert sorted(set(isolations(alerts))) == [("nic", "node:node-003")]


def old_port_then_node_reset(t_old: float, t_reset: float, t_back: float) -> list:
    """16 nodes x 8 NICs every 10 s; node-003's mlx5_2 down from ``t_old`` for good (a cable
    waiting for its replacement), its 7 other ports down from ``t_reset`` to ``t_back`` (its
    NIC driver crashed and was reloaded)."""
    def down(node: str, name: str, i: int, ts: float) -> bool:
        if node != "node-003":
            return False
        return ts >= t_old if name == "mlx5_2" else t_reset <= ts < t_back

    return fleet(16, 8, t_back + 900.0, period=lambda n: 10.0, first=lambda n: T0 + 0.7 * n,
                 down=down)


def still_firing(alerts: list) -> list[str]:
    """The scopes whose latest alert message is a firing one."""
    last = {}
    for a in alerts:
        last[a.dedup_key] = a
    return sorted(a.scope.key for a in last.values() if a.status == "firing")


@pytest.mark.xfail(strict=True, reason=(
    "review round 10 (room fabric, ef6b852: Correlator._node_down_across_parts): the node "
    "event gathers the node's link downs already raised (self._device) and _node_down takes "
    "them (_own), so a cable down for 10 min with its own NIC isolation is moved into "
    "node:node-003 when the node's 7 other ports go down: nic:node-003/mlx5_2 resolves while "
    "its port is still down, and node:node-003 never resolves after the 7 ports come back "
    "(the old port's finding keeps it active); so too under a Slurm topology.conf and with no "
    "topology, where main made 7 NIC isolations that resolved"))
@pytest.mark.parametrize("topology", [RAIL, SLURM, None], ids=["rail", "slurm", "none"])
def test_a_port_down_before_its_node_s_other_ports_keeps_its_own_alert(
        topology: Topology | None) -> None:
    t = T0 + 300.0
    alerts = feed(Engine(topology=topology), old_port_then_node_reset(t, t + 600.0, t + 800.0))
    # Once the node's 7 ports are back: the cable's alert is the one still open.
    assert still_firing(alerts) == ["nic:node-003/mlx5_2:1"]


def unit_fails_after_a_cable(gap: float) -> list:
    """16 nodes x 8 NICs every 10 s (node n at phase 0.7 n s).  node-005's mlx5_3 cable
    fails on its sample at +293.5 s (its own fault: it opens rail3-leaf0's window, 13.5 s);
    ``gap`` s later every rail leaf of the first unit (leaf0 of rails 0-7: nodes 000-007)
    loses power at once (one rack, one PDU)."""
    t_cable, t_unit = T0 + 293.5, T0 + 293.5 + gap

    def down(node: str, name: str, i: int, ts: float) -> bool:
        if node == "node-005" and name == "mlx5_3" and ts >= t_cable:
            return True
        return node < "node-008" and ts >= t_unit

    return fleet(16, 8, T0 + 600.0, period=lambda n: 10.0, first=lambda n: T0 + 0.7 * n,
                 down=down)


@pytest.mark.xfail(strict=True, reason=(
    "review round 10 (room fabric, ef6b852: Correlator._node_down_across_parts): rail3-leaf0's "
    "window, opened by node-005's own cable 10 s before the unit's 8 rail leaves lose power, "
    "closes 3.5 s into the outage with 3 of its 8 nodes sampled; their mlx5_3 downs are decided "
    "alone and the node event asks _failing of the 7 other rails, whose windows opened 0-2 s "
    "before -- counted over every node heard from, as R6 was -- 'not failing': node-005, "
    "node-006 and node-007 are drained (node alerts) beside the 8 switch alerts.  Before it "
    "(main b3e50ca) the same early window made 3 NIC isolations, no drain"))
def test_a_unit_s_rail_leaves_failing_drain_no_node() -> None:
    alerts = feed(Engine(topology=RAIL), unit_fails_after_a_cable(10.0))
    found = sorted(set(isolations(alerts)))
    assert [s for _, s in found if s.startswith("node:")] == []
    assert [s for _, s in found if s.startswith("switch:")] == [
        f"switch:rail{k}-leaf0" for k in range(8)]


def test_a_unit_s_rail_leaves_failing_alone_are_eight_switch_alerts() -> None:
    # The control: the outage first (the cable goes with it) -- the 8 switches, no node.
    alerts = feed(Engine(topology=RAIL), unit_fails_after_a_cable(-100.0))
    assert sorted(set(isolations(alerts))) == [
        ("switch", f"switch:rail{k}-leaf0") for k in range(8)]
