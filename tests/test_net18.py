"""net18 (round 18): a rail leaf whose ports fail one after another over tens of seconds (its
cable bundle reseated: blind8 H4) is one switch isolation, not a NIC isolation per port its
window closed on; a lone NIC's fault behind the same leaf is isolated as fast as before."""

from __future__ import annotations

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, nic
from detector.topology import Topology

RAIL = Topology.from_text("""Topology=rail Version=1
NodeSet=hgx-[01-16] Gpus=8 Nics=mlx5_[0-1]
SwitchName=rail0-leaf[0-1] Nodes=hgx-[01-16] Nics=mlx5_0
SwitchName=rail1-leaf[0-1] Nodes=hgx-[01-16] Nics=mlx5_1
SwitchName=spine[0-1] Switches=rail[0-1]-leaf[0-1]
""")


def rail(seconds: float, *, down: dict[str, float], errors_after: bool = True) -> list:
    """2 ports on each of 16 nodes sampled every 10 s at the node's own phase.  ``down[node]``:
    when its mlx5_1 goes down for 6 s (link_downed +1), back up with 150 symbol errors."""
    out = []
    for n in range(16):
        node = f"hgx-{n + 1:02d}"
        for k in range(2):
            name, i = f"mlx5_{k}", 0
            while (ts := T0 + 0.61 * n + 0.01 * k + 10.0 * i) < T0 + seconds:
                at = down.get(node) if k == 1 else None
                is_down = at is not None and T0 + at <= ts < T0 + at + 6.0
                after = at is not None and ts >= T0 + at
                tx = i * 25_000_000_000
                out.append(nic(ts, node, name, tx=tx, rx=tx,
                               errors=150 if after and errors_after and not is_down else 0,
                               link_downed=int(after), up=not is_down))
                i += 1
    return sorted(out, key=lambda e: e.ts)


def firing(alerts: list) -> list[tuple[str, str, str, float]]:
    return [(a.kind, a.cause, a.scope.key, a.detected_ts - T0) for a in alerts
            if a.status == "firing" and a.topic == ISOLATION]


def test_a_rail_leaf_whose_ports_go_down_one_after_another_is_one_switch_isolation() -> None:
    # rail1-leaf0's 8 ports (mlx5_1 of hgx-01..08) go down 5 s apart from 300 s on, each for
    # 6 s: 2-3 nodes in trouble when the first port's 13.5 s window closes (main: 3 NIC
    # isolations, then the switch's a window later).
    order = ["hgx-07", "hgx-05", "hgx-08", "hgx-04", "hgx-06", "hgx-01", "hgx-02", "hgx-03"]
    alerts = feed(Engine(topology=RAIL),
                  rail(600.0, down={node: 300.0 + 5.0 * i for i, node in enumerate(order)}))
    got = firing(alerts)
    assert [g[:3] for g in got] == [("network", "switch", "switch:rail1-leaf0")], got
    assert got[0][3] < 300.0 + 76.0


def test_a_lone_port_down_behind_a_rail_leaf_is_isolated_within_its_window() -> None:
    # One cable: hgx-03/mlx5_1 down for 6 s at 300 s, erring after -- its own isolation,
    # decided when its leaf's window closes (1.25 x 10 s + 1 s after the onset), as before.
    alerts = feed(Engine(topology=RAIL), rail(600.0, down={"hgx-03": 300.0}))
    got = firing(alerts)
    assert [g[:3] for g in got] == [("network", "nic", "nic:hgx-03/mlx5_1:1")], got
    onset = [a for a in alerts if a.status == "firing"][0].onset_ts - T0
    assert got[0][3] - onset <= 13.5 + 0.01, (got, onset)


def test_two_cables_of_a_rail_leaf_minutes_apart_are_two_nic_isolations() -> None:
    alerts = feed(Engine(topology=RAIL), rail(900.0, down={"hgx-03": 300.0, "hgx-06": 500.0}))
    got = firing(alerts)
    assert sorted(g[2] for g in got) == ["nic:hgx-03/mlx5_1:1", "nic:hgx-06/mlx5_1:1"], got
