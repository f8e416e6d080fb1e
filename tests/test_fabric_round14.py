"""Room fabric14, round 14: review round 12's F1-F4 -- what a node's ports, a rail and older
trouble tell a switch (issue 10).

- F4: most of a node's ports retrained lower together mid-job is the node's (its HCAs'
  firmware or driver, its switch ports' configuration): one node finding and one node
  alert, as every port of a node down at once -- not nothing (all 8) nor 6 NIC pages (6).
- F2: no topology, the same port name in trouble on a share of the nodes at once is a rail
  switch's signature (it takes ONE NIC of every node): one escalation naming no switch.
- F1: older still-rising trouble supports a switch's count only where it looks like the
  switch's: on most of the node's ports facing it; never a flap; behind a rail leaf (one
  port of each node) only when the onsets chain.
- F3 (a Slurm topology.conf, half rate on 5 of 16): tests/test_review_round12.py; its
  boundary (another port count is another node model): tests/test_lead_round11.py.

Then fabric13's open shapes: a spine whose leaves cross the line more than a window apart
(named at the second leaf; the first leaf's alert resolves into it), a rail-optimised
fabric's spine (ECMP errors on a share of every node's ports, each on its own rail leaf:
one page, not 48 NIC isolations), and a spine dead with every node under it silent
(nothing is reported: pinned, open).
"""

from __future__ import annotations

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.events import NicSample
from detector.testing import T0, feed
from tests.test_fabric_round11 import firing
from tests.test_fabric_round13 import TIERS, partial, scopes
from tests.test_review_round9 import RAIL, SLURM, fleet
from tests.test_review_round11 import rates


def node_downshift(ports: set[int], *, nodes: int = 8, back_s: float | None = None,
                   slow: set[str] = frozenset({"node-003"})) -> list:
    """``nodes`` nodes x 8 NICs (mlx5_0..7) at 400 Gb/s every 10 s, busy; at +300 s the
    ``ports`` of the ``slow`` nodes retrain live to 200 Gb/s (no flap, link up), back to 400
    at ``back_s``."""
    out = []
    for n in range(nodes):
        node = f"node-{n:03d}"
        for k in range(8):
            tx, ts = 0, T0 + 0.7 * n
            while ts < T0 + 900.0:
                low = node in slow and k in ports and ts >= T0 + 300.0 and (
                    back_s is None or ts < T0 + back_s)
                tx += int(10.0 * 2.5e9)
                out.append(NicSample(ts + 0.01 * k, node, f"mlx5_{k}", 1, "up",
                                     200.0 if low else 400.0, tx, tx, 0, 0, 0, 0, 0, 0, 0, 0, 0))
                ts += 10.0
    return sorted(out, key=lambda e: e.ts)


def fired(alerts: list) -> list[tuple[str, str]]:
    return [(a.topic, a.scope.key) for a in alerts if a.status == "firing"]


# -- F4: a node's ports retrained lower together ----------------------------------------------


def test_six_of_a_node_s_eight_ports_retrained_together_are_one_node_alert() -> None:
    # (Review round 12: 6 NIC isolations at +376 s.)
    alerts = feed(Engine(), node_downshift({0, 1, 2, 3, 4, 5}))
    assert fired(alerts) == [(ISOLATION, "node:node-003")]
    first = next(a for a in alerts if a.status == "firing")
    signal = first.evidence["signals"][0]
    assert signal["ports_retrained"] == "6 of the node's 8 ports of its name family"
    assert (signal["held_gbps"], signal["rate_gbps"]) == (400.0, 200.0)


def test_half_of_a_node_s_ports_retrained_are_four_degraded_links() -> None:
    # The boundary: 4 of 8 is not "most": each port below siblings at its old rate.
    assert sorted(key for _, key in fired(feed(Engine(), node_downshift({0, 1, 2, 3})))) == [
        f"nic:node-003/mlx5_{k}:1" for k in range(4)]


def test_a_node_s_ports_retrained_together_with_a_slurm_topology_are_one_node_alert() -> None:
    assert fired(feed(Engine(topology=SLURM), node_downshift(set(range(8))))) == [
        (ISOLATION, "node:node-003")]


def test_a_node_s_ports_back_at_their_rate_resolve_its_alert() -> None:
    alerts = feed(Engine(), node_downshift(set(range(8)), back_s=600.0))
    assert [(a.status, a.scope.key) for a in alerts if a.scope.key == "node:node-003"][:1] == [
        ("firing", "node:node-003")]
    assert alerts[-1].scope.key == "node:node-003" and alerts[-1].status == "resolved"


def test_every_node_s_ports_retrained_together_page_no_node() -> None:
    # The fabric's configuration (every node alike): the name's share decides, as before --
    # no node of eight is the exception.
    every = {f"node-{n:03d}" for n in range(8)}
    assert fired(feed(Engine(), node_downshift(set(range(8)), slow=every))) == []


# -- F2: the same port of every node, no topology ---------------------------------------------


def test_one_port_name_down_on_every_node_at_once_is_one_escalation() -> None:
    # mlx5_3 DOWN on all 16 nodes (its rail switch lost power): 16 NIC isolations before.
    alerts = feed(Engine(), fleet(16, 8, T0 + 400.0, period=lambda n: 10.0,
                                  first=lambda n: T0 + 0.7 * n,
                                  down=lambda node, name, i, ts: name == "mlx5_3"
                                  and ts >= T0 + 200.0))
    assert fired(alerts) == [(ESCALATION, "switch:unknown")]
    first = next(a for a in alerts if a.status == "firing")
    assert first.evidence["rail"] == "mlx5_3 on 16 of 16 nodes"
    assert "switch ports facing mlx5_3" in first.evidence["next_diagnostic"]


def test_one_port_name_retrained_on_three_nodes_of_sixteen_stays_three_links() -> None:
    low = {"node-002", "node-007", "node-011"}
    assert sorted(firing(feed(Engine(), rates(16, low, t_end=T0 + 900.0, from_s=300.0,
                                             flap=False)))) == [
        f"nic:{n}/mlx5_3:1" for n in sorted(low)]


# -- F1 in a rail fabric: one port of each node faces a rail leaf ----------------------------


def rail_errors(start: dict[str, float]) -> list:
    """h100-128's 16 nodes x 8 NICs every 10 s; from ``start[node]`` that node's mlx5_3
    (rail3-leaf0 for node-000..007) counts 20 more symbol and receive errors a sample."""
    def errors(node: str, name: str, i: int) -> int:
        ts = T0 + 0.7 * int(node[-3:]) + 10.0 * i
        return 20 if name == "mlx5_3" and node in start and ts >= start[node] else 0

    return fleet(16, 8, max(start.values()) + 200.0, period=lambda n: 10.0,
                 first=lambda n: T0 + 0.7 * n, down=lambda *a: False, errors=errors)


def test_rail_cables_failing_minutes_apart_are_their_nics() -> None:
    # Two old cables of rail3-leaf0 (5 and 10 minutes before), then three ports at once: 3 of
    # 8 begun in the window are below half the leaf, and the old two do not chain to them.
    t = T0 + 660.0
    start = {"node-000": T0 + 60.0, "node-001": T0 + 360.0, "node-002": t, "node-004": t,
             "node-006": t}
    first = firing(feed(Engine(topology=RAIL), rail_errors(start)))
    assert sorted(first) == [f"nic:{n}/mlx5_3:1" for n in sorted(start)]


def test_a_rail_leaf_whose_errors_spread_node_by_node_is_named() -> None:
    # The other side: the errors reach rail3-leaf0's nodes 40 s apart, each still erring --
    # the onsets chain: switch:rail3-leaf0 once half of it errs.
    start = {f"node-{n:03d}": T0 + 600.0 + 40.0 * n for n in range(8)}
    first = firing(feed(Engine(topology=RAIL), rail_errors(start)))
    assert "switch:rail3-leaf0" in first
    assert not any(k.startswith(("nic:node-004", "nic:node-005", "nic:node-006",
                                 "nic:node-007")) for k in first)


# -- fabric13's open shapes: a spine whose leaves cross the line apart; a spine dead ---------


def staggered(gap_samples: int, leaves: range = range(4)) -> list:
    """TIERS (4 nodes a leaf; spine0 over leaf0-3, spine1 over leaf4-5): 3 of 8 ports of every
    node under ``leaves`` err (ECMP through a failing spine), leaf k's from sample 20 +
    ``gap_samples`` x k (10 s samples) -- the flows through the spine reach its leaves at
    different rates."""
    ports = partial({f"node-{n:03d}" for k in leaves for n in range(4 * k, 4 * k + 4)})
    start = {node: 20 + gap_samples * (int(node[-3:]) // 4 - leaves.start) for node in ports}

    def errors(node: str, name: str, i: int) -> int:
        return 20 if node in ports and start[node] <= i < 60 and int(name[-1]) in ports[
            node] else 0

    return fleet(24, 8, T0 + 800.0, period=lambda n: 10.0, first=lambda n: T0 + 0.37 * n,
                 down=lambda *a: False, errors=errors)


def test_a_spine_whose_leaves_err_forty_seconds_apart_is_the_spine() -> None:
    # leaf0 crosses the line alone (its window closes with nothing beside it: a leaf
    # isolation); leaf1's window, 40 s on, counts it -- spine0 named, leaf0's alert resolves
    # (its trouble is the spine's now), leaf2 and leaf3 join the spine.
    alerts = feed(Engine(topology=TIERS), staggered(4))
    assert scopes(alerts) == [(ISOLATION, "switch:leaf0"), (ISOLATION, "switch:spine0")]
    spine = next(a for a in alerts if a.scope.key == "switch:spine0")
    assert spine.evidence["leaves"] == ["leaf0", "leaf1"]
    assert [a.status for a in alerts if a.scope.key == "switch:leaf0"] == ["firing", "resolved"]


def test_a_spine_over_two_leaves_erring_forty_seconds_apart_is_the_spine() -> None:
    alerts = feed(Engine(topology=TIERS), staggered(4, range(4, 6)))
    assert scopes(alerts) == [(ISOLATION, "switch:leaf4"), (ISOLATION, "switch:spine1")]


def test_two_leaves_erring_minutes_apart_stay_two_leaves() -> None:
    # The boundary: 5 minutes apart (beyond two look-backs, 152 s) is two leaves' own.
    alerts = feed(Engine(topology=TIERS), staggered(30, range(4, 6)))
    assert scopes(alerts) == [(ISOLATION, "switch:leaf4"), (ISOLATION, "switch:leaf5")]


# (Was a strict xfail: "round 17: silent17's liveness pages each of the 16 nodes gone silent
# under the dead spine (16 unattributed node escalations); a part of the fleet going dark
# together should be one page naming the part -- open".  silent18: no job runs on these
# nodes (no step records), so nothing is lost and nothing pages -- 16 nodes taken out
# together look the same; with a job on them it is one page at spine0,
# tests/test_liveness.py.)
def test_a_spine_dead_with_every_node_under_it_silent_pages_nothing() -> None:
    # What is reported when spine0 dies and its 16 nodes' telemetry goes with it (collected
    # over the fabric): nothing -- silence is no finding (no node-liveness rule; the jobs'
    # own step streams stopping are "the job stopped", a withdrawal), and the 8 nodes still
    # reporting under spine1 are fine.  Not 16 node alerts, not a leaf each.  (Open: a
    # part's nodes going silent together, the others reporting, is not named.)
    records = fleet(24, 8, T0 + 900.0, period=lambda n: 10.0, first=lambda n: T0 + 0.37 * n,
                    down=lambda *a: False)
    dead = {f"node-{n:03d}" for n in range(16)}
    silent = [r for r in records if not (r.node in dead and r.ts >= T0 + 300.0)]
    assert feed(Engine(topology=TIERS), silent) == []


# -- a rail-optimised fabric's spine ----------------------------------------------------------


def rail_fabric(ports: dict[str, set[int]]) -> list:
    """h100-128 (a rail leaf per rail and half of the 16 nodes; spine[0-1] over all 16): 20
    symbol and receive errors a sample on ``ports[node]`` (mlx5_k, k in the set) from
    sample 20 to 50."""
    def errors(node: str, name: str, i: int) -> int:
        return 20 if 20 <= i < 50 and int(name[-1]) in ports.get(node, ()) else 0

    return fleet(16, 8, T0 + 700.0, period=lambda n: 10.0, first=lambda n: T0 + 0.37 * n,
                 down=lambda *a: False, errors=errors)


def test_a_rail_fabric_spine_erring_on_a_share_of_every_node_s_ports_is_one_page() -> None:
    # ECMP through failing spine ports: 3 of each node's 8 ports err, each on its own rail
    # leaf -- 3 of every rail leaf's 8 nodes, below half: 48 NIC isolations before.  Both
    # spines sit over every rail leaf (host counters cannot tell which): one escalation.
    alerts = feed(Engine(topology=RAIL), rail_fabric(partial({f"node-{n:03d}"
                                                               for n in range(16)})))
    assert scopes(alerts) == [(ESCALATION, "switch:spine[0-1]")]
    first = next(a for a in alerts if a.status == "firing")
    assert first.cause == "switch" and len(first.evidence["leaves"]) == 16
    assert first.evidence["ports_erring_per_leaf"]["rail3-leaf0"] == (
        "3 of 8 ports of 3 of 8 nodes")


def test_two_rail_leaves_failing_at_once_stay_two_rail_leaves() -> None:
    # The boundary: every node of rail3-leaf0 and rail5-leaf0 erring on those two rails --
    # two ports of each node, but two rails: two faults overlapping, not a spine.
    alerts = feed(Engine(topology=RAIL), rail_fabric({f"node-{n:03d}": {3, 5}
                                                      for n in range(8)}))
    assert scopes(alerts) == [(ISOLATION, "switch:rail3-leaf0"),
                              (ISOLATION, "switch:rail5-leaf0")]


def test_a_node_erring_on_three_of_its_rails_is_its_own() -> None:
    # One node's three ports (its own HCAs, or three cables): its NICs, not the spine.
    alerts = feed(Engine(topology=RAIL), rail_fabric({"node-004": {1, 3, 6}}))
    assert scopes(alerts) == [(ISOLATION, f"nic:node-004/mlx5_{k}:1") for k in (1, 3, 6)]
