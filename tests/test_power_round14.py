"""Room power14, round 14: whose limit a SW power cap is -- judged across nodes.

Review round 12's P1: a cap holding every busy GPU of one node while its neighbours run free
is that node's (a power supply lost and its BMC capping the node, a DCMI cap left on): one
node-scope power page, not 8 GPU pages and not silence.  A cap that began on another node in
the same minute is a rack's or the site's (facility power management): nobody paged.  Which
nodes are compared: the node's jobs' and its rack's (the topology), else every node heard
from with a busy GPU (detector.thermal's ``gpus_busy``; Correlator._node_cap).
"""

from __future__ import annotations

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, healthy_job
from detector.topology import Topology
from tests.test_power_round12 import CAP, FREE, IDLE, node_polls
from tests.test_review_round12 import _one_gpu_capped

NODE_PAGE = (ISOLATION, "slow_node", "power", "node:node-000")


def _alerts(*streams: list, topology: Topology | None = None) -> list:
    events = sorted([e for s in streams for e in s], key=lambda e: e.ts)
    return feed(Engine(topology=topology), events)


def _firing(alerts: list) -> list[tuple[str, str, str, str]]:
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


def _node_000_capped(n: int, g: int, t: float) -> str:
    return CAP if n == 0 and 60.0 <= t < 400.0 else FREE


def test_a_node_capped_alone_is_one_node_page_that_resolves_when_the_cap_lifts() -> None:
    alerts = _alerts(node_polls(_node_000_capped, nodes=4))
    assert _firing(alerts) == [NODE_PAGE]
    page = next(a for a in alerts if a.status == "firing")
    assert page.onset_ts >= T0 + 60.0
    because = page.evidence["recommended_because"]
    assert "node-001, node-002, node-003" in because and "not 8 GPU faults" in because
    assert [a.scope.key for a in alerts if a.status == "resolved"] == ["node:node-000"]


def test_two_nodes_capped_in_the_same_minute_beside_free_ones_page_nobody() -> None:
    # A 2-node rack's limit (its neighbours in another rack run free): the same cap began on
    # another node within impact_onset_s -- shared, not either node's.
    def two(n: int, g: int, t: float) -> str:
        return CAP if n < 2 and 60.0 + 20.0 * n <= t < 400.0 else FREE

    assert _firing(_alerts(node_polls(two, nodes=4))) == []


def test_a_node_capped_alone_beside_its_job_s_other_node_is_one_node_page() -> None:
    # With the 2-node job's steps (node-000's 8 ranks 12 % slower): still one node page --
    # main (round 13) said nothing: "every busy GPU of the node, a node or rack limit".
    job = healthy_job(steps=600, slow={r: 1.12 for r in range(8)}, slow_from=60, slow_to=400)
    fired = _firing(_alerts(node_polls(_node_000_capped), list(job)))
    assert NODE_PAGE in fired
    assert all(key.startswith(("node:node-000", "gpu:node-000/")) for *_, key in fired), fired


def test_a_job_s_nodes_all_capped_beside_another_job_running_free_page_nobody() -> None:
    # blind3 B2's shape: job-1 on node-000/001, both capped (its rack), job-2 on node-002/003
    # running free: the capped node is compared with its job's other node, capped with it.
    def rack(n: int, g: int, t: float) -> str:
        return CAP if n < 2 and 60.0 <= t < 400.0 else FREE

    other = [e._replace(node=f"node-{int(e.node[5:]) + 2:03d}")
             for e in healthy_job(steps=600, job="job-2")]
    assert _firing(_alerts(node_polls(rack, nodes=4), list(healthy_job(steps=600)),
                           other)) == []


def test_a_node_capped_alone_beside_idle_nodes_pages_nobody() -> None:
    # Nothing runs free beside it (the other nodes idle, 0x1): no node to compare with, the
    # cap may be its rack's -- as before.
    def beside_idle(n: int, g: int, t: float) -> str:
        return (CAP if 60.0 <= t < 400.0 else FREE) if n == 0 else IDLE

    assert _firing(_alerts(node_polls(beside_idle, nodes=4))) == []


def test_with_racks_the_node_is_compared_with_its_rack_only() -> None:
    # node-000 capped, node-001 (its rack) idle, node-002/003 (another rack) free: its rack
    # has no busy node to compare with -- a rack cap reaches idle GPUs with no load to cap.
    topo = Topology.from_text("Topology=racks\nNodeSet=node-[000-003] Gpus=8 Nics=mlx5_[0-7]\n"
                              "Rack=rack-[0-1] Nodes=node-[000-003]\n")

    def state(n: int, g: int, t: float) -> str:
        return IDLE if n == 1 else _node_000_capped(n, g, t)

    assert _firing(_alerts(node_polls(state, nodes=4), topology=topo)) == []
    # ... and with node-001 free beside it, the node's own.
    assert _firing(_alerts(node_polls(_node_000_capped, nodes=4), topology=topo)) == [
        NODE_PAGE]


def test_a_gpu_capped_alone_at_a_twenty_second_interval_is_paged() -> None:
    # X1 between 10 s and 30 s: the count settles at 9.2 < 10 at 20 s.
    fired = _firing(feed(Engine(), _one_gpu_capped(20.0)))
    assert [key for *_, key in fired] == ["gpu:node-000/3"]
