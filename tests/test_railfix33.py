"""railfix33 -- revB33 1: a NIC page decided at once on its port's retrain was withdrawn as
soon as a second node behind the same part retrained the same port within one poll, and paged
again on the same key when the window decided the two ports alone (fire, resolve, fire).

Now it is taken back only once the part is failing by its window's own count; short of it the
page stays open and the window decides the others alone.  A rail (8 nodes) still ends as one
switch page (tests/test_rail33.py)."""
from __future__ import annotations

import pytest

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.testing import feed
from tests.test_link32 import fabric
from tests.test_rail33 import RAIL, SLURM, seen_lower


def _history(alerts: list) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for a in alerts:
        if a.topic == ISOLATION and a.scope.level == "nic":
            out.setdefault(a.scope.key, []).append(a.status)
    return out


@pytest.mark.parametrize("topo", ["slurm", "none"])
@pytest.mark.parametrize("pair", [("hgx001", "hgx002"), ("hgx003", "hgx004")])
def test_two_nodes_one_poll_never_fire_resolve_fire(topo: str, pair: tuple[str, str]) -> None:
    recs = fabric(20, retrain={(pair[0], "mlx5_2"): (10, 100.0, 0),
                               (pair[1], "mlx5_2"): (10, 100.0, 0)})
    alerts = feed(Engine(topology=SLURM if topo == "slurm" else None), recs)
    hist = _history(alerts)
    assert hist == {f"nic:{pair[0]}/mlx5_2:1": ["firing"], f"nic:{pair[1]}/mlx5_2:1": ["firing"]}
    first = [a for a in alerts if a.scope.key == f"nic:{pair[0]}/mlx5_2:1"][0]
    assert first.detected_ts - seen_lower(recs, pair[0], "mlx5_2") <= 1.0
    assert not [a for a in alerts if a.status == "resolved"]
    assert not [a for a in alerts if a.scope.level == "switch"]


@pytest.mark.parametrize("topo", ["slurm", "none"])
def test_the_eight_node_rail_still_ends_as_one_switch_page(topo: str) -> None:
    alerts = feed(Engine(topology=SLURM if topo == "slurm" else None), fabric(20, retrain=RAIL))
    hist = _history(alerts)
    assert hist == {"nic:hgx001/mlx5_2:1": ["firing", "resolved"]}
    assert [a.scope.key for a in alerts if a.status == "firing"
            and a.scope.level == "switch"] == ["switch:leaf1" if topo == "slurm"
                                               else "switch:unknown"]
