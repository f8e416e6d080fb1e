"""m2-23 (round 23): a link down is decided when a sibling port of its node, which the topology
file states faces the same switch, is sampled up after it (blind13 M2: a NIC paged 13.5 s after
its down sample, the switch window; DESIGN's hardware target is 1 s).  Only the file's word: a
Slurm topology.conf names no NICs, and a rail fabric's siblings face other leaves -- there the
window still decides."""

from __future__ import annotations

from detector.engine import Engine
from detector.network import NodeNics
from detector.testing import T0, feed, nic
from detector.thresholds import Thresholds
from detector.topology import Topology
from tests.test_fabric_round11 import T_NEW, small_leaves
from tests.test_nic_window import SLURM, fabric, firing

# The project's format, NICs named: each node's mlx5_0 and mlx5_1 face its leaf (no Nics= on
# the switch: all of them do) -- the operator's word that a node's two ports share a leaf.
STATED = Topology.from_text("""Topology=stated Version=1
NodeSet=node-[000-015] Gpus=8 Nics=mlx5_[0-1]
SwitchName=leaf[0-1] Nodes=node-[000-015]
SwitchName=spine0 Switches=leaf[0-1]
""")

# The same nodes rail-optimised: mlx5_0 faces rail0-leaf0, mlx5_1 rail1-leaf0.
RAIL = Topology.from_text("""Topology=rail Version=1
NodeSet=node-[000-015] Gpus=8 Nics=mlx5_[0-1]
SwitchName=rail0-leaf0 Nodes=node-[000-015] Nics=mlx5_0
SwitchName=rail1-leaf0 Nodes=node-[000-015] Nics=mlx5_1
SwitchName=spine0 Switches=rail[0-1]-leaf0
""")


def _pages(topology: Topology, down: dict) -> tuple[list, float]:
    """Firing isolations of 10 s telemetry with ``down``, and the first one's latency."""
    alerts = feed(Engine(topology=topology), fabric(10.0, 400, errors={}, down=down))
    pages = [a for a in alerts if a.status == "firing"]
    return firing(alerts), pages[0].detected_ts - pages[0].onset_ts if pages else -1.0


def test_a_link_down_beside_a_stated_sibling_up_on_its_leaf_is_paged_at_the_siblings_sample(
        ) -> None:
    # node-005's mlx5_0 down at sample 10; its mlx5_1 (leaf0 by the file) is sampled up 0.01 s
    # later: leaf0 is up, the link is the port's own (was 13.5 s, the window).
    pages, latency = _pages(STATED, {("node-005", "mlx5_0"): [10]})
    assert pages == [("network", "nic", "nic:node-005/mlx5_0:1")]
    assert 0.0 < latency <= 1.0


def test_control_on_a_slurm_topology_the_sibling_is_an_assumption_and_the_window_decides(
        ) -> None:
    # The same down under a topology.conf (nodes only): "mlx5_1 faces leaf0 too" is the
    # fallback's, and the file may describe rail leaves -- the port waits the window.
    pages, latency = _pages(SLURM, {("node-005", "mlx5_0"): [10]})
    assert pages == [("network", "nic", "nic:node-005/mlx5_0:1")]
    assert latency > 10.0


def test_control_a_rail_fabrics_sibling_faces_another_switch_and_the_window_decides() -> None:
    pages, latency = _pages(RAIL, {("node-005", "mlx5_0"): [10]})
    assert pages == [("network", "nic", "nic:node-005/mlx5_0:1")]
    assert latency > 10.0


def test_control_a_failing_leaf_is_one_switch_alert_not_nic_pages() -> None:
    # leaf0 loses power at sample 10 for two samples: every port of node-000..007 down (a
    # node's siblings too, so none is sampled up beside a down): one switch alert.
    down = {(f"node-{n:03d}", f"mlx5_{k}"): [10, 11] for n in range(8) for k in range(2)}
    assert _pages(STATED, down)[0] == [("network", "switch", "switch:leaf0")]


def test_control_a_node_whose_every_port_goes_down_is_one_node_alert() -> None:
    down = {("node-005", f"mlx5_{k}"): [10, 11] for k in range(2)}
    assert _pages(STATED, down)[0] == [("network", "nic", "node:node-005")]


def test_a_leaf_failing_in_part_after_a_link_down_was_paged_at_once_supersedes_it() -> None:
    # A line card or port group of leaf0 fails: mlx5_0 of node-001 and node-002 goes down,
    # their mlx5_1..3 (leaf0 too, by the file) stay up.  node-001's is paged at its sibling's
    # sample (the rule cannot know the part spares siblings); when the window shows two of the
    # leaf's four nodes in trouble the switch is paged and the NIC page resolves pointing at it
    # -- one incident, one open page (rack22's superseded_by).
    topo = Topology.from_text("""Topology=small Version=1
NodeSet=node-[000-007] Gpus=8 Nics=mlx5_[0-3]
SwitchName=leaf[0-1] Nodes=node-[000-007]
SwitchName=spine0 Switches=leaf[0-1]
""")
    alerts = feed(Engine(topology=topo), small_leaves(
        T_NEW + 200.0,
        down=lambda node, name, ts: name == "mlx5_0" and node in ("node-001", "node-002")
        and ts >= T_NEW))
    told = [(a.status, a.scope.key) for a in alerts]
    assert told == [("firing", "nic:node-001/mlx5_0:1"), ("firing", "switch:leaf0"),
                    ("resolved", "nic:node-001/mlx5_0:1")]
    nic, switch, gone = alerts
    assert nic.detected_ts - T_NEW <= 1.0 and nic.evidence["decided_beside"]["nic"] == "mlx5_1"
    assert gone.evidence["superseded_by"] == switch.dedup_key
    assert gone.detected_ts == switch.detected_ts


def _beside(bounced: bool) -> list:
    """One node's 8 ports at 1 Hz for 120 s, mlx5_0 down from 20 s to 80 s (``bounced``: its
    siblings' link_downed moved on their samples just after it -- they bounced too): the
    link_up_beside findings its NIC monitor tells."""
    node, out, cfg = NodeNics("n1"), [], Thresholds()
    for t in range(120):
        for k in range(8):
            down = k == 0 and 20 <= t < 80
            flaps = int(k == 0 and t >= 20) + int(bounced and k > 0 and t >= 20)
            node.update(nic(T0 + t + 0.01 * k, "n1", f"mlx5_{k}", tx=t * 10**9, rx=t * 10**9,
                            link_downed=flaps, up=not down), cfg, out)
    return [f for f in out if f.signal == "link_up_beside"]


def test_each_sibling_is_told_once_a_down_and_not_when_it_bounced_too() -> None:
    # A port down for 60 s at 1 Hz beside 7 siblings up: 7 findings (one each, at their first
    # sample after the down), not 7 a second -- the findings topic stays sparse.
    told = _beside(bounced=False)
    assert sorted(f.evidence["nic"] for f in told) == [f"mlx5_{k}" for k in range(1, 8)]
    assert {f.scope.key for f in told} == {"nic:n1/mlx5_0:1"}
    assert max(f.evidence["since_down_s"] for f in told) <= 0.07
    # Siblings whose link_downed moved since their last sample went down and up themselves
    # (their switch rebooting its ports?): no word that the switch is up -- until their next.
    assert min(f.evidence["since_down_s"] for f in _beside(bounced=True)) > 1.0
