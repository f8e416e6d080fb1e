"""Issue 10's three failures on telemetry faultline did not write, as regression tests."""

from __future__ import annotations

from detector.alerts import ESCALATION, ISOLATION, Alert
from detector.engine import Engine
from detector.testing import T0, feed, nic
from detector.topology import Topology


def firing(alerts: list[Alert]) -> list[tuple[str, str, str, str]]:
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


# -- 1. a whole-leaf failure on a plain Slurm topology.conf (no NICs named) ----------------

SLURM = Topology.from_text("""
SwitchName=leaf0 Nodes=node-[000-007]
SwitchName=leaf1 Nodes=node-[008-015]
SwitchName=spine0 Switches=leaf[0-1]
""")


def leaf_stream(down: set[str], *, nics: int = 8, seconds: int = 40, start_bad: int = 20,
                ) -> list:
    """NIC samples of 16 nodes at 1 Hz; every NIC of the ``down`` nodes loses its link."""
    out = []
    for t in range(seconds):
        for n in range(16):
            node = f"node-{n:03d}"
            for k in range(nics):
                bad = node in down and t >= start_bad
                tx = t * 2_500_000_000
                out.append(nic(T0 + t + 0.01 * k, node, f"mlx5_{k}", tx=tx, rx=tx,
                               link_downed=int(bad), up=not bad))
    return out


def test_a_whole_leaf_failing_on_a_slurm_topology_is_one_switch_isolation() -> None:
    assert SLURM.nics_under("leaf0") == ()  # Slurm names no NICs: membership is by node
    leaf0 = {f"node-{n:03d}" for n in range(8)}
    alerts = feed(Engine(topology=SLURM), leaf_stream(leaf0))
    assert firing(alerts) == [(ISOLATION, "network", "switch", "switch:leaf0")]
    assert alerts[0].evidence["nodes_affected"] == 8
    assert alerts[0].detection_latency_s <= 5.0


def test_one_node_losing_its_links_on_a_slurm_topology_is_not_the_switch() -> None:
    alerts = feed(Engine(topology=SLURM), leaf_stream({"node-003"}, nics=2))
    assert sorted(firing(alerts)) == [
        (ISOLATION, "network", "nic", f"nic:node-003/mlx5_{k}:1") for k in range(2)]
