"""Room net17, round 17 (issue 10): ports that serve another workload (blind7 G1).

A node's ports are compared with each other on throughput because, under one job, they
carry the same collective traffic.  A node shared by workloads -- a job on two GPUs, an
inference replica (TP2) on the other two -- has two classes of ports, each at its own pace:
two ports low at one pace are a class, not a bad port each (NodeNics._in_class).  A port
low alone is still a bad port.
"""

from __future__ import annotations

from collections.abc import Callable

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.events import NicSample
from detector.testing import T0, feed
from detector.topology import Topology

# blind7's gh200-shared shape: quad-GPU nodes, one NDR port per GPU, leaves of four nodes.
QUAD = Topology.from_text("""Topology=quad Version=1
NodeSet=gh-[01-08] Gpus=4 Nics=mlx5_[0-3]
SwitchName=leaf[1-2] Nodes=gh-[01-08]
SwitchName=spine1 Switches=leaf[1-2]
""")

Gbps = Callable[[str, str, float], float]  # (node, nic, ts) -> Gb/s


def fleet(gbps: Gbps, t_end: float = T0 + 600.0, period: float = 10.0) -> list[NicSample]:
    """8 nodes x 4 ports every ``period`` s (phases 0.7 s apart) at ``gbps``, NDR, no errors."""
    out = []
    for n in range(1, 9):
        node = f"gh-{n:02d}"
        for k in range(4):
            nic, tx, ts = f"mlx5_{k}", 0, T0 + 0.7 * n
            while ts < t_end:
                tx += int(period * gbps(node, nic, ts) * 1e9 / 16)  # tx and rx, each half
                out.append(NicSample(ts + 0.01 * k, node, nic, 1, "up", 400.0, tx, tx, 0, 0,
                                     0, 0, 0, 0, 0, 0, 0))
                ts += period
    return sorted(out, key=lambda e: e.ts)


def isolations(gbps: Gbps) -> list[str]:
    return sorted({a.scope.key for a in feed(Engine(topology=QUAD), fleet(gbps))
                   if a.status == "firing" and a.topic == ISOLATION})


SERVING = {("gh-07", "mlx5_2"), ("gh-07", "mlx5_3"), ("gh-08", "mlx5_2"), ("gh-08", "mlx5_3")}


def test_an_inference_replica_s_ports_beside_training_are_no_fault() -> None:
    # Training on every port of gh-01..06 and on mlx5_0/1 of gh-07/08 (232 Gb/s); an inference
    # replica on GPUs 2-3 of gh-07/08 (20 Gb/s) from the first sample.  Main: four NIC
    # isolations (nic_throughput, "the topology lists it as a fabric port") and leaf2 drained.
    assert isolations(lambda node, nic, ts: 20.0 if (node, nic) in SERVING else 232.0) == []


def test_a_quieter_replica_on_an_inference_node_is_no_fault() -> None:
    # Two TP2 replicas on one node (mlx5_0/1 and mlx5_2/3) at 31 Gb/s; after 200 s the first
    # one's requests fall to 13 Gb/s on both its ports (blind7's gh-09, 272 s).  Main: both
    # ports isolated -- they ran at the node's pace before.
    def gbps(node: str, nic: str, ts: float) -> float:
        if node == "gh-05" and nic in ("mlx5_0", "mlx5_1") and ts >= T0 + 200.0:
            return 13.0
        return 31.0 if node == "gh-05" else 232.0
    assert isolations(gbps) == []


def test_one_port_low_alone_is_still_a_bad_port() -> None:
    # The same fleet, gh-03's mlx5_1 falls to 20 Gb/s alone (its three siblings at 232): the
    # sibling comparison still isolates it -- and beside the serving replica's pair too.
    def gbps(node: str, nic: str, ts: float) -> float:
        if (node, nic) == ("gh-03", "mlx5_1") and ts >= T0 + 200.0:
            return 20.0
        if (node, nic) == ("gh-08", "mlx5_0") and ts >= T0 + 200.0:
            return 5.0  # beside its node's serving pair at 20: not their pace
        return 20.0 if (node, nic) in SERVING else 232.0
    assert isolations(gbps) == ["nic:gh-03/mlx5_1:1", "nic:gh-08/mlx5_0:1"]
