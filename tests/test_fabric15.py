"""Room fabric15, round 15: a leaf's trouble is counted in the ports it serves, and a bounce
between two samples is evidence.

A leaf's fault shows on many of the ports it serves -- all of a node's, a share of each, or the
same port of every node (a port group) -- where two cables of it erring together are two ports
of 32 (blind5 E1: isolated as the leaf).  A leaf that flaps for a few seconds is seen down only
by the node whose sample fell inside the flap; the others' next samples show link_downed moved
on every port, link up (blind5 E8: isolated as that one node).
"""

from __future__ import annotations

from collections.abc import Callable

from detector.engine import Engine
from detector.events import NicSample
from detector.network import FLAP_SEEN_S, NodeNics
from detector.testing import T0, feed, nic
from detector.thresholds import Thresholds
from detector.topology import Topology
from tests.test_fabric_round11 import firing

# A Slurm topology.conf (no NIC named): every port of a node faces its leaf.
LEAVES = Topology.from_text("SwitchName=leaf0 Nodes=node-[000-003]\n"
                            "SwitchName=leaf1 Nodes=node-[004-007]\n"
                            "SwitchName=spine0 Switches=leaf[0-1]\n")

Sample = Callable[[str, str, float], tuple[int, int, bool]]


def fleet(t_end: float, sample: Sample, *, period: Callable[[str], float] = lambda n: 10.0
          ) -> list[NicSample]:
    """8 nodes x 8 ports carrying 40 Gb/s, node n sampled every ``period(node)`` s from
    T0 + 0.37 n; ``sample(node, nic, ts)`` -> (errors so far, link_downed so far, up)."""
    out = []
    for n in range(8):
        node = f"node-{n:03d}"
        ts = T0 + 0.37 * n
        while ts < t_end:
            tx = int((ts - T0) * 2_500_000_000)
            for k in range(8):
                errors, downed, up = sample(node, f"mlx5_{k}", ts)
                out.append(nic(ts + 0.01 * k, node, f"mlx5_{k}", tx=tx, rx=tx, errors=errors,
                               link_downed=downed, up=up))
            ts += period(node)
    return sorted(out, key=lambda e: e.ts)


def erring(ports: set[tuple[str, str]]) -> Sample:
    """20 symbol + 20 receive errors a second on ``ports`` from 300 s to 500 s."""
    def sample(node: str, name: str, ts: float) -> tuple[int, int, bool]:
        t = min(max(ts - T0 - 300.0, 0.0), 200.0)
        return (int(20 * t) if (node, name) in ports else 0), 0, True
    return sample


def test_two_cables_of_one_leaf_erring_together_are_two_nics() -> None:
    # blind5 E1's shape: one port of node-000 and a different one of node-001 (2 of the 32
    # ports leaf0 serves).  (On main before this room: switch:leaf0, 4 nodes drained.)
    alerts = feed(Engine(topology=LEAVES), fleet(T0 + 700.0, erring(
        {("node-000", "mlx5_3"), ("node-001", "mlx5_7")})))
    assert sorted(firing(alerts)) == ["nic:node-000/mlx5_3:1", "nic:node-001/mlx5_7:1"]


def test_two_nodes_erring_on_several_ports_each_are_still_the_leaf() -> None:
    # The control: two of leaf0's four nodes erring on 3 ports each (switch_min_fraction).
    ports = {(f"node-00{n}", f"mlx5_{k}") for n in (0, 1) for k in (1, 4, 6)}
    alerts = feed(Engine(topology=LEAVES), fleet(T0 + 700.0, erring(ports)))
    assert sorted(firing(alerts)) == ["switch:leaf0"]


def test_the_same_port_erring_on_most_nodes_of_a_leaf_is_the_leaf() -> None:
    # The control: mlx5_2 of three of leaf0's four nodes (a port group of the leaf).
    ports = {(f"node-00{n}", "mlx5_2") for n in (0, 1, 3)}
    alerts = feed(Engine(topology=LEAVES), fleet(T0 + 700.0, erring(ports)))
    assert sorted(firing(alerts)) == ["switch:leaf0"]


# leaf0 down for 0.8 s: inside node-000's sample at 300.0 s (every 30 s from T0) only -- node-001..3
# (every 10 s) sample at 300.37, 300.74, 301.11 s.
FLAP = (T0 + 299.5, T0 + 300.3)


def flap(seen_down: set[str]) -> Sample:
    """leaf0's ports go down for FLAP: a node sampled inside it sees them down; every node of
    leaf0 counts link_downed +1 from it on; ``seen_down`` only: the nodes flapped at all."""
    def sample(node: str, name: str, ts: float) -> tuple[int, int, bool]:
        if node not in seen_down:
            return 0, 0, True
        return 0, int(ts >= FLAP[0]), not (FLAP[0] <= ts < FLAP[1])
    return sample


def test_a_leaf_flap_only_one_node_sampled_is_the_leaf() -> None:
    # blind5 E8's shape: node-000 sampled every 30 s, inside the flap, the other nodes every
    # 10 s, none of their samples inside it.  (On main before this
    # room: node:node-000, the leaf's other nodes' link_downed +1 counted nowhere.)
    alerts = feed(Engine(topology=LEAVES), fleet(
        T0 + 700.0, flap({f"node-00{n}" for n in range(4)}),
        period=lambda n: 30.0 if n == "node-000" else 10.0))
    assert sorted(firing(alerts)) == ["switch:leaf0"]


def test_a_node_down_for_one_sample_alone_is_its_node() -> None:
    # The control: node-000's ports alone go down for the same 0.8 s (its NIC driver): no other
    # node's link_downed moved -- one node event, as before.
    alerts = feed(Engine(topology=LEAVES), fleet(
        T0 + 700.0, flap({"node-000"}), period=lambda n: 30.0 if n == "node-000" else 10.0))
    assert sorted(firing(alerts)) == ["node:node-000"]


def _one_port(samples: list[tuple[float, int, bool]]) -> list[tuple[float, str, bool, bool]]:
    node, cfg, out = NodeNics("node-000"), Thresholds(), []
    for ts, downed, up in samples:
        node.update(nic(ts, "node-000", "mlx5_0", link_downed=downed, up=up), cfg, out)
    return [(f.ts - T0, f.signal, f.active, f.verdict) for f in out if f.signal != "sampling"]


def test_link_downed_moving_while_up_is_told_as_evidence_until_it_settles() -> None:
    times = [T0 + 10.0 * i for i in range(30)]
    told = _one_port([(ts, int(i >= 5), True) for i, ts in enumerate(times)])
    # Told at the first sample that shows it (evidence: no verdict), cleared on the first
    # sample FLAP_SEEN_S after it.
    clear = 50.0 + 10.0 * -(-FLAP_SEEN_S // 10.0)
    assert told == [(50.0, "flap_seen", True, False), (clear, "flap_seen", False, False)]


def test_a_bounce_seen_down_or_after_a_reporting_gap_is_not_told() -> None:
    # Seen down: the link_down finding says it.  Back from a 5-minute gap (a reboot): when the
    # link bounced is unknown.
    down = _one_port([(T0, 0, True), (T0 + 10.0, 0, True), (T0 + 20.0, 1, False),
                      (T0 + 30.0, 1, True)])
    assert [s for _, s, _, _ in down] == ["link_down", "link_down"]
    gap = _one_port([(T0, 0, True), (T0 + 10.0, 0, True), (T0 + 310.0, 1, True),
                     (T0 + 320.0, 1, True)])
    assert gap == []
