"""Room fabric13, round 13: a spine's failing ports are the spine, not its leaves (blind4 D1).

A pod spine with failing ports errs on a *fraction* of the ports of every node under several
of its leaves at once (ECMP hashes each flow leaving a leaf over the leaf's uplinks; only the
flows through the failing ports err), while a leaf's own failure errs on all ports of its
nodes.  faultline isolated each leaf (four healthy switches drained) and never named the spine.
Now: leaves failing together with that shape under one switch are that switch's, one alert;
a single leaf failing (whatever its shape) stays the leaf's, and so do two leaves failing on
all their ports at once (two faults overlapping).  Parent chains of any depth (a core over
two spines), the project's .topo format, several switches over the same leaves (a fat tree:
one escalation naming them), and no topology at all (one ``switch:unknown`` escalation, as
before).
"""

from __future__ import annotations

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.testing import T0, feed, nic
from detector.topology import Topology
from tests.test_fabric_round11 import firing
from tests.test_review_round9 import fleet

NICS = 8
LEAVES = 6  # leaf0-3 under spine0, leaf4-5 under spine1; 4 nodes a leaf

TIERS = Topology.from_text("".join(
    f"SwitchName=leaf{k} Nodes=node-[{4 * k:03d}-{4 * k + 3:03d}]\n" for k in range(LEAVES))
    + "SwitchName=spine0 Switches=leaf[0-3]\nSwitchName=spine1 Switches=leaf[4-5]\n"
    + "SwitchName=core0 Switches=spine[0-1]\n")


def leaves_of(nodes: range) -> set[str]:
    return {f"node-{n:03d}" for n in nodes}


def erring(ports: dict[str, set[int]], from_i: int = 20, to_i: int = 50):
    """Errors (20 symbol + 20 receive a sample) on ``ports[node]`` from sample ``from_i``."""
    def errors(node: str, name: str, i: int) -> int:
        return 20 if from_i <= i < to_i and int(name[-1]) in ports.get(node, ()) else 0
    return errors


def run(ports: dict[str, set[int]], topology: Topology | None = TIERS,
        nodes: int = 4 * LEAVES) -> list:
    records = fleet(nodes, NICS, T0 + 700.0, period=lambda n: 10.0,
                    first=lambda n: T0 + 0.37 * n, down=lambda *a: False,
                    errors=erring(ports))
    return feed(Engine(topology=topology), records)


def partial(nodes: set[str], share: int = 3) -> dict[str, set[int]]:
    """``share`` of 8 ports erring on each node, a different set on each (ECMP's hashing)."""
    return {n: {(int(n[-3:]) + k) % NICS for k in range(share)} for n in nodes}


def whole(nodes: set[str]) -> dict[str, set[int]]:
    return {n: set(range(NICS)) for n in nodes}


def scopes(alerts: list) -> list[tuple[str, str]]:
    return sorted({(a.topic, a.scope.key) for a in alerts if a.status == "firing"})


def test_a_spine_erring_on_a_share_of_every_node_s_ports_is_the_spine() -> None:
    alerts = run(partial(leaves_of(range(16))))
    assert scopes(alerts) == [("alerts.isolation", "switch:spine0")]
    first = next(a for a in alerts if a.scope.key == "switch:spine0")
    assert first.action.name == "drain_switch"
    assert first.evidence["leaves"] == ["leaf0", "leaf1", "leaf2", "leaf3"]
    assert first.evidence["ports_erring_per_leaf"]["leaf2"] == "12 of 32 ports of 4 of 4 nodes"
    assert "spine0's port counters" in first.evidence["next_diagnostic"]
    # named when the first leaf's window closes: errors from sample 20, seen on the 2nd sample
    assert first.detected_ts - (T0 + 200.0) < 10.0 + 13.5 + 4 * 0.37 + 1.0


def test_a_spine_erring_under_two_of_its_leaves_is_the_spine() -> None:
    # spine1's traffic crosses only the leaves its jobs span: leaf4 and leaf5 of its two.
    assert scopes(run(partial(leaves_of(range(16, 24))))) == [
        ("alerts.isolation", "switch:spine1")]


def test_one_leaf_erring_on_a_share_of_its_ports_stays_the_leaf() -> None:
    # The same shape under one leaf alone, its siblings clean: its uplinks' optics, the leaf.
    assert scopes(run(partial(leaves_of(range(4, 8))))) == [("alerts.isolation", "switch:leaf1")]


def test_two_leaves_failing_on_every_port_at_once_stay_two_leaves() -> None:
    # Two faults overlapping on different units (DESIGN): all ports of every node of leaf0 and
    # of leaf2 -- each leaf's own shape.
    alerts = run(whole(leaves_of(range(4)) | leaves_of(range(8, 12))))
    assert scopes(alerts) == [("alerts.isolation", "switch:leaf0"),
                              ("alerts.isolation", "switch:leaf2")]


def test_a_spine_beside_a_leaf_of_the_other_spine_is_the_spine_and_that_leaf() -> None:
    # spine0's share on leaf0-3 and, under spine1, leaf4 alone: the core is not failing (one
    # of its spines is), and leaf4 is its own.
    alerts = run(partial(leaves_of(range(20))))
    assert scopes(alerts) == [("alerts.isolation", "switch:leaf4"),
                              ("alerts.isolation", "switch:spine0")]


def test_a_core_erring_under_both_spines_is_the_core() -> None:
    assert scopes(run(partial(leaves_of(range(24))))) == [("alerts.isolation", "switch:core0")]


def test_switches_over_the_same_leaves_are_one_escalation_naming_them() -> None:
    # A fat tree: spine0 and spine1 each over leaf0-3; host counters cannot tell which errs.
    fat = Topology.from_text("".join(
        f"SwitchName=leaf{k} Nodes=node-[{4 * k:03d}-{4 * k + 3:03d}]\n" for k in range(4))
        + "SwitchName=spine[0-1] Switches=leaf[0-3]\n")
    alerts = run(partial(leaves_of(range(16))), fat, nodes=16)
    assert scopes(alerts) == [(ESCALATION, "switch:spine[0-1]")]
    esc = next(a for a in alerts if a.status == "firing")
    assert esc.cause == "switch" and "spine[0-1]" in esc.evidence["next_diagnostic"]


def test_the_project_format_with_nics_named_is_the_same() -> None:
    topo = Topology.from_text(
        "Topology=pod\nNodeSet=node-[000-015] Gpus=8 Nics=mlx5_[0-7]\n"
        + "".join(f"SwitchName=leaf{k} Nodes=node-[{4 * k:03d}-{4 * k + 3:03d}]\n"
                  for k in range(4))
        + "SwitchName=spine0 Switches=leaf[0-3]\n")
    assert scopes(run(partial(leaves_of(range(16))), topo, nodes=16)) == [
        ("alerts.isolation", "switch:spine0")]
    # ... and a whole leaf there is still the leaf
    assert scopes(run(whole(leaves_of(range(4))), topo, nodes=16)) == [
        ("alerts.isolation", "switch:leaf0")]


def test_without_a_topology_it_is_one_escalation_naming_no_switch() -> None:
    alerts = run(partial(leaves_of(range(16))), None, nodes=16)
    assert scopes(alerts) == [(ESCALATION, "switch:unknown")]


def two_waves() -> list:
    """spine0's share of ports erring from sample 20, then other ports of the same nodes from
    sample 30 (a second wave, after the spine was named), all until sample 50."""
    first = partial(leaves_of(range(16)))
    later = {n: {(p + 4) % NICS for p in ps} for n, ps in first.items()}

    def errors(node: str, name: str, i: int) -> int:
        k = int(name[-1])
        return 20 if (20 <= i < 50 and k in first.get(node, ())) or (
            30 <= i < 50 and k in later.get(node, ())) else 0

    return fleet(16, NICS, T0 + 700.0, period=lambda n: 10.0,
                 first=lambda n: T0 + 0.37 * n, down=lambda *a: False, errors=errors)


def test_later_errors_under_a_named_spine_join_it() -> None:
    # More of the spine's incident, not leaf or NIC alerts.
    alerts = feed(Engine(topology=TIERS), two_waves())
    assert sorted(firing(alerts)) == ["switch:spine0"]


# -- a PFC pause storm from one NIC (blind4 D7) -------------------------------------------------


def storm(topology: Topology, *, low: set[tuple[str, str]], trickle: tuple[str, str]) -> list:
    """8 nodes x 8 NICs every 10 s, 100 Gb/s a port each way; from sample 20 the ports in
    ``low`` carry 3 % of it (a NIC that stopped draining its receive queue, link up) and every
    other port of node-000..003 half (paused by the storm); at sample 24 ``trickle`` counts 2
    errors (a RoCE sequence-error trickle at chance)."""
    out = []
    for n in range(8):
        node = f"node-{n:03d}"
        for k in range(NICS):
            name, total, err = f"mlx5_{k}", 0, 0
            for i in range(60):
                ts = T0 + 0.37 * n + 10.0 * i + 0.01 * k
                share = 1.0
                if i >= 20 and (node, name) in low:
                    share = 0.03
                elif i >= 20 and n < 4:
                    share = 0.5
                total += int(100e9 / 8 * 10.0 * share)
                err += 2 if i == 24 and (node, name) == trickle else 0
                out.append(nic(ts, node, name, tx=total, rx=total, errors=err))
    return sorted(out, key=lambda e: e.ts)


POD = Topology.from_text("SwitchName=leaf0 Nodes=node-[000-003]\n"
                         "SwitchName=leaf1 Nodes=node-[004-007]\n"
                         "SwitchName=spine0 Switches=leaf[0-1]\n")


def test_a_pause_storm_from_one_nic_is_that_nic_not_its_leaf() -> None:
    # Its leaf's other ports are paused (halved alike on each node: none low against its own
    # node), and another node of the leaf counts 2 errors meanwhile: the one port low against
    # its siblings -- which face the same leaf -- is its own NIC's (main: switch:leaf0).
    alerts = feed(Engine(topology=POD), storm(POD, low={("node-002", "mlx5_1")},
                                               trickle=("node-000", "mlx5_0")))
    assert sorted(firing(alerts)) == ["nic:node-002/mlx5_1:1"]


RAIL = Topology.from_text(
    "Topology=rails\nNodeSet=node-[000-007] Gpus=8 Nics=mlx5_[0-7]\n"
    + "".join(f"SwitchName=rail{k}-leaf0 Nodes=node-[000-007] Nics=mlx5_{k}\n"
              for k in range(NICS)))


def test_ports_low_on_one_rail_of_a_rail_fabric_are_still_its_rail_leaf() -> None:
    # The control: a rail leaf faces one port of each node, so a port low against its
    # node's other ports (other rails) can be the rail leaf's -- 4 of its 8 nodes: the leaf.
    low = {(f"node-00{n}", "mlx5_1") for n in range(4)}
    alerts = feed(Engine(topology=RAIL), storm(RAIL, low=low, trickle=("node-005", "mlx5_0")))
    assert "switch:rail1-leaf0" in firing(alerts)


def test_a_named_spine_survives_a_snapshot() -> None:
    # Snapshot and restore right after the spine was named (a worker moved): the later
    # errors under its leaves still join it, nothing new is paged.
    records = two_waves()
    cut = next(i for i, r in enumerate(records) if r.ts > T0 + 240.0)
    engine = Engine(topology=TIERS)
    alerts = feed(engine, records[:cut], finish=False)
    assert sorted(firing(alerts)) == ["switch:spine0"]
    engine = Engine.restore(engine.snapshot(), TIERS)
    after = feed(engine, records[cut:])
    assert firing(after) == {}
    assert [(a.status, a.scope.key) for a in after] == [("resolved", "switch:spine0")]
