"""Room review, round 11: cases the round's changes get wrong (issues 10 and 14).

Each finding is a strict xfail: it states what an operator needs, fails on main today, and
turns into an unexpected pass (a failure) the moment the detector is fixed -- then drop the
mark and keep the reason as a comment "(Was a strict xfail: ...)".  Each was checked to pass
on a base before the commit it names (``git archive`` of that commit's parent), and beside
each, where one exists, a plain test of the neighbouring case that passes (the control).
Nothing here was tuned on the blind or simulated corpora; findings:
/work/helpers/review11-findings.md.
"""

from __future__ import annotations

import pytest

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.events import NicSample
from detector.testing import T0, feed
from tests.test_review_round9 import RAIL, SLURM, fleet


def firing(alerts: list) -> dict[str, float]:
    """Each isolation's unit -> when it was first paged (event time)."""
    first: dict[str, float] = {}
    for a in alerts:
        if a.status == "firing" and a.topic == ISOLATION:
            first.setdefault(a.scope.key, a.detected_ts)
    return first


# -- fabric (79ece3b): trouble counted for a shared part only when begun in its window -------


def spreading_errors(t: float, spread_s: float, nodes: int = 8) -> list:
    """SLURM's 16 nodes x 2 NICs every 10 s (leaf0: node-000..007); from ``t + spread_s x n``
    both ports of leaf0's node n count 20 more symbol and receive errors a sample, on and on
    (a leaf's ASIC or its optics degrading: the errors reach one node after another over
    minutes, and none of them stops)."""
    start = {f"node-{n:03d}": t + spread_s * n for n in range(nodes)}

    def errors(node: str, name: str, i: int) -> int:
        ts = T0 + 0.7 * int(node[-3:]) + 10.0 * i
        return 20 if node in start and ts >= start[node] else 0

    return fleet(16, 2, t + spread_s * nodes + 100.0, period=lambda n: 10.0,
                 first=lambda n: T0 + 0.7 * n, down=lambda *a: False, errors=errors)


@pytest.mark.xfail(strict=True, reason=(
    "79ece3b (room fabric): Correlator._count counts a node behind a switch only with trouble "
    "whose onset is at most 76 s before the window's first onset -- also an error run still "
    "counting on every sample, not only a lasting link_rate / nic_throughput verdict: a leaf "
    "whose errors reach its 8 nodes 40 s apart is 16 NIC isolations and never switch:leaf0 "
    "(c339944: switch:leaf0 once 4 of 8 were erring)"))
def test_a_leaf_whose_errors_spread_over_minutes_is_named_once_half_its_nodes_err() -> None:
    first = firing(feed(Engine(topology=SLURM), spreading_errors(T0 + 600.0, 40.0)))
    assert "switch:leaf0" in first
    # (named once half of leaf0 is erring: node-003's errors begin at +120 s, seen by +135 s)
    assert first["switch:leaf0"] - (T0 + 600.0) <= 120.0 + 2.1 + 10.0 + 13.5 + 0.1


def test_a_leaf_whose_errors_reach_its_nodes_within_one_window_is_the_switch() -> None:
    # The control: the same errors reaching the 8 nodes 1 s apart -- one switch alert.
    first = firing(feed(Engine(topology=SLURM), spreading_errors(T0 + 600.0, 1.0)))
    assert sorted(first) == ["switch:leaf0"]


# -- the lead (5c13a53): a name's lower rate on > 1 in 4 of its other nodes is no degraded link


def rates(nodes: int, low: set[str], *, low_nic: str = "mlx5_3", t_end: float = T0 + 400.0
          ) -> list:
    """``nodes`` nodes x 8 NICs (mlx5_0..7) every 10 s, each port busy at 20 Gb/s and
    negotiated at 400 Gb/s -- but ``low_nic`` on the ``low`` nodes at 200 Gb/s (trained at half
    width: a rail leaf's bad firmware or a batch of bad cables)."""
    out = []
    for n in range(nodes):
        node = f"node-{n:03d}"
        for k in range(8):
            name, tx, ts = f"mlx5_{k}", 0, T0 + 0.7 * n
            rate = 200.0 if name == low_nic and node in low else 400.0
            while ts < t_end:
                tx += int(10.0 * 2.5e9)
                out.append(NicSample(ts + 0.01 * k, node, name, 1, "up", rate, tx, tx, 0, 0,
                                     0, 0, 0, 0, 0, 0, 0))
                ts += 10.0
    return sorted(out, key=lambda e: e.ts)


LOW5 = {f"node-{n:03d}" for n in range(5)}


@pytest.mark.xfail(strict=True, reason=(
    "5c13a53 (the lead, blind3 B1): NodeNics._rate takes a name's lower rate on more than one "
    "in MIXED (4) of its other nodes for a node model, and then ignores the topology's word "
    "(p.role > 0 is only read when no other node reports the name): mlx5_3 trained at 200 on "
    "5 of rail3-leaf0's 8 nodes, every other port of all 16 nodes at 400, is paged nowhere "
    "(c339944: switch:rail3-leaf0)"))
def test_a_rail_port_trained_at_half_rate_on_five_nodes_is_paged() -> None:
    first = firing(feed(Engine(topology=RAIL), rates(16, LOW5)))
    assert first, "mlx5_3 at 200 beside seven 400G rails on five nodes: nothing paged"
    assert set(first) <= {"switch:rail3-leaf0"} | {f"nic:{n}/mlx5_3:1" for n in LOW5}


@pytest.mark.xfail(strict=True, reason=(
    "5c13a53 (the lead, blind3 B1): three of a worker's eight nodes with mlx5_3 at 200 beside "
    "seven 400G ports of their own (the same node model as the five at 400 everywhere) are "
    "'a share, not an exception': no link_rate (c339944: 3 NIC isolations).  B1's nodes differ "
    "in their other ports' rate (A100 at 200, H100 at 400); these do not"))
def test_three_degraded_links_of_one_name_among_eight_like_nodes_are_paged() -> None:
    low = {"node-001", "node-004", "node-006"}
    first = firing(feed(Engine(), rates(8, low)))
    assert sorted(first) == [f"nic:{n}/mlx5_3:1" for n in sorted(low)]


def test_one_degraded_link_among_eight_like_nodes_is_paged() -> None:
    # The control: one node of eight (the exception the lead's rule keeps).
    first = firing(feed(Engine(), rates(8, {"node-004"})))
    assert sorted(first) == ["nic:node-004/mlx5_3:1"]


