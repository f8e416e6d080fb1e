"""Room review, round 10: cases the round's changes get wrong (issue 10).

Each finding is a strict xfail: it states what an operator needs, fails on main today, and
turns into an unexpected pass (a failure) the moment the detector is fixed -- then drop the
mark and keep the reason as a comment "(Was a strict xfail: ...)".  Beside each, where one
exists, a plain test of the neighbouring case that passes (the control).  Nothing here was
tuned on the blind or simulated corpora; findings: /work/helpers/review10-findings.md.
"""

from __future__ import annotations

from detector.engine import Engine
from detector.testing import T0, feed
from tests.test_review_round9 import RAIL, SLURM, fleet, isolations

# -- fabric: a node's every port down in a rail fabric is one node alert ---------------------


def node_reset(t_fail: float, node: str = "node-003", samples: int = 1) -> list:
    """16 nodes x 8 NICs every 10 s; every port of ``node`` down for ``samples`` samples from
    ``t_fail`` and back after (a NIC firmware reset -- mlxfwreset -- or a driver reload:
    every port of the node retrains at once, 10-30 s)."""
    return fleet(16, 8, t_fail + 300.0, period=lambda n: 10.0, first=lambda n: T0 + 0.7 * n,
                 down=lambda nd, name, i, ts: nd == node and t_fail <= ts < t_fail + 10.0 * samples)


# (Was a strict xfail: room fabric's R9 fix, Correlator._node_down_across_parts, gathered only
# link downs still active, so a node whose every port was down for one 10 s sample -- over
# before the rail windows closed -- was 8 NIC isolations in a rail fabric
# (topologies/h100-128.topo), where under a Slurm topology.conf _whole_node_down counts the
# cleared ones too.  Now it takes the cleared ones waiting for a part that is not failing.)
def test_every_port_of_a_node_down_for_one_sample_is_one_node_alert_in_a_rail_fabric() -> None:
    alerts = feed(Engine(topology=RAIL), node_reset(T0 + 300.0))
    assert sorted(set(isolations(alerts))) == [("nic", "node:node-003")]


def test_every_port_of_a_node_down_for_one_sample_is_one_node_alert_under_one_leaf() -> None:
    # The control: the same reset under a Slurm topology.conf (every NIC under the node's leaf).
    alerts = feed(Engine(topology=SLURM), node_reset(T0 + 300.0))
    assert sorted(set(isolations(alerts))) == [("nic", "node:node-003")]

