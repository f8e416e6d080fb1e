"""Room fabric, round 11: a shared part's window and what it counts (issue 10).

- A node's NIC sampling interval is told to the correlator when it changes (detector.network,
  as detector.thermal tells a GPU's), and a switch's window waits for its healthy nodes' own
  NIC cadence: a leaf seen first by a fast collector is one switch alert
  (tests/test_fabric_round10.py, round 10's strict xfail).
- Trouble behind a switch counts for the switch only when it began since the part may have
  failed: a port trained at half rate, or low against its siblings, for minutes is its own
  NIC's verdict, not a node in trouble when an unrelated fault opens the leaf's window.
"""

from __future__ import annotations

from collections.abc import Callable

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.events import NicSample
from detector.findings import Finding
from detector.network import NodeNics
from detector.testing import T0, feed
from detector.thresholds import Thresholds
from detector.topology import Topology
from tests.test_review_round9 import SLURM

# Two leaves of four nodes (a small leaf: two nodes in trouble are half of it).
LEAF4 = Topology.from_text("""
SwitchName=leaf0 Nodes=node-[000-003]
SwitchName=leaf1 Nodes=node-[004-007]
SwitchName=spine0 Switches=leaf[0-1]
""")

Port = Callable[[str, str, float], bool]


def small_leaves(t_end: float, *, down: Port = lambda node, name, ts: False,
                 rate: Callable[[str, str, float], float] = lambda node, name, ts: 400.0,
                 slow: Port = lambda node, name, ts: False, period: float = 10.0) -> list:
    """8 nodes x 4 NICs every ``period`` s at phases 0.7 s apart, each port carrying 40 Gb/s
    (4 Gb/s where ``slow``), negotiated at ``rate`` Gb/s, down where ``down``."""
    out = []
    for n in range(8):
        node = f"node-{n:03d}"
        for k in range(4):
            name, tx, downs = f"mlx5_{k}", 0, 0
            ts = T0 + 0.7 * n
            while ts < t_end:
                is_down = down(node, name, ts)
                downs += is_down
                tx += int(period * (0.25e9 if slow(node, name, ts) else 2.5e9))
                out.append(NicSample(ts + 0.01 * k, node, name, 1, "down" if is_down else "up",
                                     rate(node, name, ts), tx, tx, 0, downs, 0, 0, 0, 0, 0,
                                     0, 0))
                ts += period
    return sorted(out, key=lambda e: e.ts)


def firing(alerts: list) -> dict[str, float]:
    """Each isolation's unit -> when it was first paged."""
    first: dict[str, float] = {}
    for a in alerts:
        if a.status == "firing" and a.topic == ISOLATION:
            first.setdefault(a.scope.key, a.detected_ts)
    return first


# -- a lasting verdict behind a small leaf -------------------------------------------------

T_OLD, T_NEW = T0 + 60.0, T0 + 660.0  # a lasting verdict's start; the new fault, 10 min on


def test_a_port_at_half_rate_for_minutes_does_not_make_a_nic_fault_a_switch() -> None:
    # node-001's mlx5_1 trained at 200 Gb/s from its first sample (blind2's F2: link_rate, its
    # own NIC alert ~1 min in), then 11 minutes on node-002's mlx5_0 goes down: one more NIC
    # alert -- not switch:leaf0, which would drain the leaf's four nodes for a cable and an
    # old degraded link.
    alerts = feed(Engine(topology=LEAF4), small_leaves(
        T_NEW + 200.0,
        rate=lambda node, name, ts: 200.0 if (node, name) == ("node-001", "mlx5_1") else 400.0,
        down=lambda node, name, ts: (node, name) == ("node-002", "mlx5_0") and ts >= T_NEW))
    first = firing(alerts)
    assert sorted(first) == ["nic:node-001/mlx5_1:1", "nic:node-002/mlx5_0:1"]
    assert first["nic:node-001/mlx5_1:1"] < T_NEW
    # ... at its own window (node-002 samples at +1.4 s: 1.25 x 10 + 1 after), not held.
    assert first["nic:node-002/mlx5_0:1"] - T_NEW <= 1.4 + 13.5 + 0.1


def test_a_port_low_against_its_siblings_for_minutes_does_not_make_a_nic_fault_a_switch(
        ) -> None:
    # node-001's mlx5_1 carries a tenth of its siblings' traffic for 10 minutes
    # (nic_throughput), then node-002's mlx5_0 goes down: two NIC alerts, no switch.
    alerts = feed(Engine(topology=LEAF4), small_leaves(
        T_NEW + 200.0,
        slow=lambda node, name, ts: (node, name) == ("node-001", "mlx5_1") and ts >= T_OLD,
        down=lambda node, name, ts: (node, name) == ("node-002", "mlx5_0") and ts >= T_NEW))
    first = firing(alerts)
    assert sorted(first) == ["nic:node-001/mlx5_1:1", "nic:node-002/mlx5_0:1"]
    assert first["nic:node-002/mlx5_0:1"] - T_NEW <= 1.4 + 13.5 + 0.1


def test_the_leaf_failing_beside_an_old_degraded_port_is_still_one_switch_alert() -> None:
    # The side: with the same old half-rate port, leaf0 itself fails (every port of its four
    # nodes down): node-001's new link downs are trouble of the window -- one switch alert.
    alerts = feed(Engine(topology=LEAF4), small_leaves(
        T_NEW + 200.0,
        rate=lambda node, name, ts: 200.0 if (node, name) == ("node-001", "mlx5_1") else 400.0,
        down=lambda node, name, ts: node < "node-004" and ts >= T_NEW))
    first = firing(alerts)
    assert sorted(first) == ["nic:node-001/mlx5_1:1", "switch:leaf0"]


def test_two_nodes_failing_together_on_a_small_leaf_are_still_its_switch() -> None:
    # The rule the lasting verdict was wrongly let into: trouble that begins together on two
    # of a leaf's four nodes is the leaf (switch_min_fraction), as before.
    alerts = feed(Engine(topology=LEAF4), small_leaves(
        T_NEW + 200.0,
        down=lambda node, name, ts: name == "mlx5_0" and node in ("node-001", "node-002")
        and ts >= T_NEW))
    assert sorted(firing(alerts)) == ["switch:leaf0"]


# -- the NIC sampling finding ---------------------------------------------------------------

def _samples(node: NodeNics, times: list[float], ports: int = 1) -> list[Finding]:
    cfg, out = Thresholds(), []
    for i, ts in enumerate(times):
        for k in range(ports):
            s = NicSample(ts + 0.01 * k, node.node, f"mlx5_{k}", 1, "up", 400.0, i * 10**9,
                          i * 10**9, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            if not node.quiet(s, cfg):  # (the batch path's order: quiet first, then update)
                node.update(s, cfg, out)
    return [f for f in out if f.signal == "sampling"]


def test_a_node_s_nic_sampling_interval_is_told_once_and_again_when_it_changes() -> None:
    node = NodeNics("node-000")
    # 8 ports every 30 s, with a collector's jitter, for 10 minutes; then every 5 s.
    times = [T0 + 30.0 * i + (0.2 if i % 2 else -0.2) for i in range(20)]
    times += [times[-1] + 5.0 * i for i in range(1, 40)]
    told = _samples(node, times, ports=8)
    # Once per node (its ports share a collector), not per port.
    assert [(f.kind, f.scope.key, f.evidence["sample_interval_s"]) for f in told] == [
        ("network", "node:node-000", 29.6), ("network", "node:node-000", 5.0)]
    assert not any(f.verdict for f in told)
    # (told on the third sample at each cadence: two like gaps make a rate, not a pause)
    assert [f.ts for f in told] == [times[2], times[21]]


def test_a_pause_and_a_missed_sample_are_not_a_cadence() -> None:
    node = NodeNics("node-000")
    times = [T0 + 10.0 * i for i in range(10)]
    times += [times[-1] + 20.0]                               # one sample missed
    times += [times[-1] + 400.0 + 10.0 * i for i in range(5)]  # a pause, then 10 s again
    told = _samples(node, times)
    assert [f.evidence["sample_interval_s"] for f in told] == [10.0]


def test_a_leaf_seen_first_by_a_fast_collector_at_other_phases_is_one_switch_alert() -> None:
    # Round 10's open case on other data: leaf0 of SLURM (8 nodes, 4 NICs carrying traffic),
    # its 7 other nodes and leaf1's 8 sampled every 30 s, node-007 every 5 s; leaf0 fails
    # at t, node-007 sees it first (t + 1) and node-001 next (t + 3): at node-007's window
    # (7.25 s) two nodes of eight are in trouble, one fast and one slow.  The healthy nodes'
    # own NIC cadence (30 s) holds the window: one switch alert, no node's.
    t = T0 + 900.0
    phase = {0: -0.5, 1: 3.0, 2: 9.0, 3: 14.0, 4: 18.0, 5: 22.0, 6: 26.0, 7: 1.0}
    out = []
    for n in range(16):
        node, period = f"node-{n:03d}", 5.0 if n == 7 else 30.0
        for k in range(4):
            ts, tx, downs = t + phase.get(n, 0.9 * n) - 20 * period, 0, 0
            while ts < t + 150.0:
                is_down = n < 8 and t <= ts < t + 120.0
                downs += is_down
                tx += int(period * 2.5e9)
                out.append(NicSample(ts + 0.01 * k, node, f"mlx5_{k}", 1,
                                     "down" if is_down else "up", 400.0, tx, tx, 0, downs, 0,
                                     0, 0, 0, 0, 0, 0))
                ts += period
    alerts = feed(Engine(topology=SLURM), sorted(out, key=lambda e: e.ts))
    first = firing(alerts)
    assert sorted(first) == ["switch:leaf0"]
    # (decided once the part's slow nodes were sampled: 1.25 x 30 + 1 after its first onset)
    assert first["switch:leaf0"] - t <= 1.0 + 38.5 + 0.1
