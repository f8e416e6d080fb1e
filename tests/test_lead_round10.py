"""The lead, round 10: a port's name on the other nodes decides only when they agree.

Room review's N1 (tests/test_review_round10.py): idle GPU NICs of 4-GPU multi-node jobs are
placement, not faults.  These are the other side: a bad port whose name runs at its node's
pace on (nearly) every other node is still judged from its first sample.
"""

from __future__ import annotations

from detector.engine import Engine
from detector.testing import feed
from tests.test_review_round9 import RAIL, SLURM
from tests.test_review_round10 import NODES16, busy, firing, traffic


def _slow_on(bad: set[str]):
    def gbps(node: str, i: int) -> float:
        return 4.0 if node in bad else 75.0
    return gbps


# (Were strict xfails, round 39's regression: nic39's _demand_unknown judged a port never at
# its node's pace only where the job layout and the GPU-to-NIC map put its mates' job behind
# it, and these have port rows alone.  nic40: its name at its node's pace on at least
# network.RAIL_NODES other nodes -- one job's rails -- is its demand known: ``demand`` "rails".)
def test_a_rail_port_slow_from_its_first_sample_on_one_node_is_paged() -> None:
    ports = {f"mlx5_{k}": busy for k in range(8)}
    ports["mlx5_5"] = _slow_on({"node-006"})
    alerts = feed(Engine(topology=RAIL), traffic(NODES16, ports, 60))
    assert ("network", "nic", "nic:node-006/mlx5_5:1") in firing(alerts)


def test_the_same_port_slow_on_two_of_sixteen_nodes_is_still_two_bad_ports() -> None:
    # One in 4 of the name's other nodes below its pace is still "the name carries traffic":
    # two bad cables (each sees 1 low of 14 at pace elsewhere) are both paged.
    ports = {f"mlx5_{k}": busy for k in range(8)}
    ports["mlx5_2"] = _slow_on({"node-003", "node-011"})
    found = firing(feed(Engine(), traffic(NODES16, ports, 60)))
    assert [a for a in found if a[2].startswith("nic:")] == [
        ("network", "nic", "nic:node-003/mlx5_2:1"), ("network", "nic", "nic:node-011/mlx5_2:1")]


# (Was a strict xfail: the lead, round 10 (room rate's e69ba24, NodeNics._rate's one-node
# rule): rate_gbps is only checked finite and non-negative, so one port reporting an absurd
# negotiated rate (1e12 Gb/s: a collector bug or a forged record) becomes its node's top rate,
# and on a node its Monitors sees alone every other port carrying the job's traffic at pace is
# 'below its family's rate': 7 link_rate isolations.  A rate no link trains at (IB/RoCE top
# out at 800 Gb/s today) should be ignored, or decided only across nodes.  Room ports, round
# 11: decode dead-letters a rate_gbps above events.MAX_RATE_GBPS (1600) as out of range,
# NodeNics takes one that reaches it as unknown, and alone a rate only one port reports is
# no family's rate.)
def test_one_absurd_negotiated_rate_does_not_page_every_other_port_of_a_lone_node() -> None:
    ports = {f"mlx5_{k}": busy for k in range(8)}
    alerts = feed(Engine(topology=SLURM), traffic(["node-003"], ports, 30, {"mlx5_0": 1e12}))
    assert firing(alerts) == []
