"""b15fix (round 24): a node whose every port errs with a failing leaf's signature, from the same
moment, is that leaf's (the topology file is stale), not one NIC isolation a port (blind15 O1:
pp04, listed on leaf-a, re-cabled to leaf-b: 8 NIC isolations beside leaf-b's).  A node with a
port or two erring keeps its NICs' isolations; a node erring alone, no leaf failing, too."""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.testing import feed
from detector.topology import Topology
from tests.test_nic_window import fabric, firing

# The project's format, NICs named: leaf0 faces node-000..007, leaf1 node-008..015.
TOPO = Topology.from_text("""Topology=stale Version=1
NodeSet=node-[000-015] Gpus=8 Nics=mlx5_[0-1]
SwitchName=leaf0 Nodes=node-[000-007]
SwitchName=leaf1 Nodes=node-[008-015]
SwitchName=spine0 Switches=leaf[0-1]
""")

LEAF1 = {(f"node-{n:03d}", f"mlx5_{k}"): [10, 11] for n in range(8, 16) for k in range(2)}


def _alerts(errors: dict) -> list:
    return feed(Engine(topology=TOPO), fabric(10.0, 400, errors=errors, down={}))


@pytest.mark.parametrize("moved", ["node-003", "node-007"])
def test_a_node_erring_on_every_port_with_a_failing_leaf_is_that_leafs_not_nic_pages(
        moved: str) -> None:
    # ``moved`` (node-003 samples before leaf1's nodes, so its own leaf's window closes while
    # leaf1's is open; node-007 after) errs on both ports at leaf1's samples: was leaf1 plus
    # two NIC isolations, one a port; now leaf1's page, re-sent naming the node and the file's
    # leaf for it.
    alerts = _alerts({**LEAF1, **{(moved, f"mlx5_{k}"): [10, 11] for k in range(2)}})
    assert firing(alerts) == [("network", "switch", "switch:leaf1")]
    last = [a for a in alerts if a.scope.key == "switch:leaf1" and a.status == "firing"][-1]
    assert [(b["node"], b["ports"], b["stated_switch"])
            for b in last.evidence["nodes_beside_map"]] == [(moved, 2, "leaf0")]
    assert "stale" in last.evidence["nodes_beside_map"][0]["why"]


def test_control_one_bad_cable_beside_a_failing_leaf_keeps_its_nic_isolation() -> None:
    alerts = _alerts({**LEAF1, ("node-003", "mlx5_1"): [10, 11]})
    assert sorted(firing(alerts)) == [("network", "nic", "nic:node-003/mlx5_1:1"),
                                      ("network", "switch", "switch:leaf1")]


def test_control_a_node_erring_long_after_the_leaf_began_keeps_its_own_pages() -> None:
    # The same node's both ports, 20 samples (200 s) after leaf1's trouble began, while its
    # isolation still fires (held open by its quiet time): not "from the same moment".
    late = {**LEAF1, **{("node-003", f"mlx5_{k}"): [30, 31] for k in range(2)}}
    assert sorted(firing(_alerts(late))) == [("network", "nic", "nic:node-003/mlx5_0:1"),
                                             ("network", "nic", "nic:node-003/mlx5_1:1"),
                                             ("network", "switch", "switch:leaf1")]


def test_control_a_node_erring_on_every_port_with_no_leaf_failing_is_unchanged() -> None:
    alone = {("node-003", f"mlx5_{k}"): [10, 11] for k in range(2)}
    assert sorted(firing(_alerts(alone))) == [("network", "nic", "nic:node-003/mlx5_0:1"),
                                              ("network", "nic", "nic:node-003/mlx5_1:1")]
