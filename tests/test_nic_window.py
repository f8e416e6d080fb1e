"""NIC trouble that is over before a switch window closes is still decided (issue 10, 10-30 s).

With a topology every NIC's trouble waits for its switch's window (one interval and a
quarter at 10-30 s telemetry) to tell a leaf failing from one NIC.  A link that went down
and came back within that window, sampled every 10-30 s, must neither stay "active" in a
switch incident for ever (swallowing every later fault behind that leaf) nor vanish
unreported when it was one NIC's fault.
"""

from __future__ import annotations

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, link_down_behind_a_rarely_sampled_port, nic
from detector.topology import Topology

SLURM = Topology.from_text("""
SwitchName=leaf0 Nodes=node-[000-007]
SwitchName=leaf1 Nodes=node-[008-015]
SwitchName=spine0 Switches=leaf[0-1]
""")


def fabric(interval: float, seconds: int, *, errors: dict[tuple[str, str], list[int]],
           down: dict[tuple[str, str], list[int]]) -> list:
    """2 NICs on each of 16 nodes sampled every ``interval`` s, each node at its own phase.
    ``errors[(node, nic)]``: sample indices at which 500 more errors are counted;
    ``down[(node, nic)]``: sample indices at which the link is down."""
    out = []
    for n in range(16):
        node = f"node-{n:03d}"
        for k in range(2):
            name, err, downs = f"mlx5_{k}", 0, 0
            for i in range(int(seconds / interval)):
                if i in errors.get((node, name), ()):
                    err += 500
                is_down = i in down.get((node, name), ())
                downs += int(is_down and (i - 1) not in down.get((node, name), ()))
                tx = i * int(interval * 2_500_000_000)
                out.append(nic(T0 + 0.7 * n + 0.01 * k + i * interval, node, name, tx=tx, rx=tx,
                               errors=err, link_downed=downs, up=not is_down))
    return sorted(out, key=lambda e: e.ts)


def firing(alerts: list) -> list[tuple[str, str, str]]:
    return [(a.kind, a.cause, a.scope.key) for a in alerts
            if a.status == "firing" and a.topic == ISOLATION]


def test_a_link_back_up_within_the_switch_window_does_not_hold_the_switch_incident_open() -> None:
    # 30 s telemetry: leaf0 fails at sample 10 (every NIC behind it counts errors for two
    # samples) and node-002/mlx5_1's link is down at that sample only, back up before the
    # 38.5 s window closes.  At sample 30 (~10 min later, inside the flap window but after
    # the leaf recovered) node-000/mlx5_0 starts failing on its own: its own isolation.
    leaf = {(f"node-{n:03d}", f"mlx5_{k}"): [10, 11] for n in range(8) for k in range(2)}
    leaf[("node-000", "mlx5_0")] = [10, 11, 30, 31, 32, 33, 34]
    alerts = feed(Engine(topology=SLURM),
                  fabric(30.0, 1500, errors=leaf, down={("node-002", "mlx5_1"): [10]}))
    assert firing(alerts) == [("network", "switch", "switch:leaf0"),
                              ("network", "nic", "nic:node-000/mlx5_0:1")]
    assert [a.status for a in alerts if a.scope.key == "switch:leaf0"] == ["firing", "resolved"]


def test_an_intermittent_link_seen_down_one_sample_at_a_time_is_isolated() -> None:
    # 10 s telemetry: node-005/mlx5_1 is seen down at one sample, up at the next, three
    # times; each time the link is back before the 13.5 s switch window closes.
    # Decided when the first window closes (was: only once two flaps made a link_flap,
    # at the third episode -- and never for one episode alone).
    for downs in ([10], [10, 14, 18]):
        alerts = feed(Engine(topology=SLURM),
                      fabric(10.0, 400, errors={}, down={("node-005", "mlx5_1"): downs}))
        assert firing(alerts) == [("network", "nic", "nic:node-005/mlx5_1:1")], downs
        first = alerts[0]
        assert first.detected_ts - T0 <= 0.7 * 5 + 100 + 13.5 + 1.0, downs


def test_a_nic_failing_just_after_its_leaf_recovered_is_its_own_fault() -> None:
    # 30 s telemetry: leaf0 fails at samples 10-11 (every NIC behind it counts errors) and
    # recovers; node-000/mlx5_0 goes on counting errors (its own fault, from sample 12) so
    # its errors finding from the leaf's failure never clears, and its link goes down at
    # samples 14 and 16.  The leaf's problem, still firing in its flap window, held only
    # that one NIC's finding: the link trouble was taken as "more of the same incident"
    # and the NIC fault was never paged (tuning reproducer interval-30 s9611).
    leaf = {(f"node-{n:03d}", f"mlx5_{k}"): [10, 11] for n in range(8) for k in range(2)}
    leaf[("node-000", "mlx5_0")] = list(range(10, 20))
    alerts = feed(Engine(topology=SLURM),
                  fabric(30.0, 900, errors=leaf, down={("node-000", "mlx5_0"): [14, 16]}))
    assert firing(alerts) == [("network", "switch", "switch:leaf0"),
                              ("network", "nic", "nic:node-000/mlx5_0:1")]


def test_a_rarely_sampled_port_holds_other_nodes_link_down_at_most_a_capped_window() -> None:
    """A port sampled once every 3,000 s (a broken exporter) goes down first and opens the
    shared part's window (no topology: the whole cluster's).  The window waits 1.25 x the
    sampling interval + 1 s for the other nodes behind the part -- of a collector's cadence,
    capped at 60 s: node-001's link down (1 s sampling) is alerted within 1.25 x 60 + 1 s and
    a few seconds, not 3,736 s later (room harden's finding; their strict xfail asks for the
    window of node-001's own cadence, which this does not give)."""
    events, t_down = link_down_behind_a_rarely_sampled_port(3000.0)
    alerts = feed(Engine(), events)
    late = [a.detected_ts - t_down for a in alerts
            if a.status == "firing" and a.scope.key == "nic:node-001/mlx5_0:1"]
    assert late and late[0] <= 1.25 * 60.0 + 1.0 + 5.0, late


def _mixed_cadence_leaf(down_nodes: range, t_fail: float) -> list:
    """leaf0's 8 nodes, 2 NICs each: node-000's sampled every 40 s (a slow exporter), the
    others' every second; from ``t_fail`` the links of ``down_nodes`` and node-000's are down
    (node-000 is seen down first: it samples at ``t_fail``, the others 0.01-0.07 s after)."""
    out = []
    for n in range(8):
        node = f"node-{n:03d}"
        period = 40.0 if n == 0 else 1.0
        first = t_fail - 40.0 * 5 if n == 0 else T0
        for i in range(int((t_fail + 120.0 - first) / period)):
            ts = first + i * period + (0.0 if n == 0 else 0.01 * n)
            for k in range(2):
                down = ts >= t_fail and (n == 0 or n in down_nodes)
                out.append(nic(ts, node, f"mlx5_{k}", up=not down, link_downed=int(down)))
    return sorted(out, key=lambda e: e.ts)


def test_a_port_sampled_every_second_waits_its_own_window_behind_a_slow_one() -> None:
    # node-000 (40 s sampling) is seen down first: its window is 1.25 x 40 + 1 = 51 s.
    # node-003's links (1 s sampling) go down too, nothing else: node-003's own fault,
    # isolated once its own window (3 s) has passed, not 51 s later.
    t_fail = T0 + 300.0
    alerts = feed(Engine(topology=SLURM), _mixed_cadence_leaf(range(3, 4), t_fail))
    first = {}
    for a in alerts:
        if a.status == "firing":
            first.setdefault(a.scope.key, a.detected_ts - t_fail)
    # (Every port of each node down at once: one node alert each, room detect round 9.)
    assert set(first) == {"node:node-003", "node:node-000"}
    assert first["node:node-003"] <= 3.0 + 1.0, first
    assert first["node:node-000"] >= 51.0, first


def test_a_leaf_failing_behind_a_slow_port_is_still_one_switch_alert() -> None:
    # The same, every node's links down: by the fast ports' own windows the leaf is failing,
    # so they wait for the part's window with the slow one -- one switch alert, no NIC's.
    t_fail = T0 + 300.0
    alerts = feed(Engine(topology=SLURM), _mixed_cadence_leaf(range(1, 8), t_fail))
    assert firing(alerts) == [("network", "switch", "switch:leaf0")]
