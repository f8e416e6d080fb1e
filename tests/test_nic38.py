"""nic38 (round 38): a port's throughput is its tenants' demand (blind28 F1/F2).

detector.network's ``nic_throughput`` compares a port's Gb/s with its node's other ports; the
correlator takes that verdict only where the port's mates carry the same jobs, by the jobs'
own layout (detector/correlate/ports.py).  Two nodes of one leaf, 8 GPUs and 4 NICs each
(GPUs 2k, 2k+1 on mlx5_k), steps every second and port samples every 10 s.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.blind28 import score
from detector.alerts import Scope
from detector.correlate import Correlator
from detector.engine import Engine
from detector.events import Event
from detector.findings import Finding
from detector.testing import T0, feed, nic, step
from detector.thresholds import Thresholds
from detector.topology import Topology
from tests import blindcases as bc

MAPPED = Topology.from_text(
    "Topology=t Version=1\nNodeSet=n[1-2] Gpus=8 Nics=mlx5_[0-3]\n"
    "SwitchName=leaf1 Nodes=n[1-2]\n", fmt="faultline")
SLURM = Topology.from_text("SwitchName=leaf1 Nodes=n[1-2]\n", fmt="slurm")
NODES = ("n1", "n2")
_blind28 = bc.cli_scorer(bc.cases_of("blind28"), score)

# (node, nic, seconds since T0) -> Gb/s on that port
Rate = Callable[[str, str, float], float]


def _fleet(jobs: dict[str, range], rate: Rate, seconds: int = 300) -> list[Event]:
    """Each job's ranks on ``jobs[job]``'s GPUs of both nodes, stepping every second; every
    port sampled every 10 s at ``rate``'s Gb/s (cumulative bytes, half tx, half rx)."""
    events: list[Event] = []
    for job, gpus in jobs.items():
        ranks = [(node, g) for node in NODES for g in gpus]
        for s in range(seconds):
            for r, (node, g) in enumerate(ranks):
                events.append(step(T0 + s + 0.01 * r, r, s, job=job, node=node, gpu=g))
    sent = {(node, k): 0.0 for node in NODES for k in range(4)}
    for i in range(seconds // 10):
        ts = T0 + 10.0 * i + 0.5
        for node in NODES:
            for k in range(4):
                name = f"mlx5_{k}"
                if i:
                    sent[(node, k)] += rate(node, name, ts - T0) * 10.0 / 16.0 * 1e9
                n = int(sent[(node, k)])
                events.append(nic(ts, node, name, tx=n, rx=n))
    return sorted(events, key=lambda e: e.ts)


def _light(node: str, name: str, t: float) -> float:
    """n1's mlx5_3 carries 100 Gb/s like its mates, then 30 from 120 s; every other port 100."""
    return 30.0 if (node, name) == ("n1", "mlx5_3") and t >= 120.0 else 100.0


def _network_pages(topo: Topology, jobs: dict[str, range]) -> list[str]:
    alerts = feed(Engine(topology=topo), _fleet(jobs, _light))
    return [a.scope.key for a in alerts if a.status == "firing" and a.kind == "network"]


def test_a_port_of_another_tenant_than_its_mates_is_not_judged_by_their_throughput() -> None:
    # Job "a" on GPUs 0-5 (mlx5_0-2), job "b" on GPUs 6-7 (mlx5_3): b's port falls to 30 Gb/s
    # (its job's demand) while a's stay at 100.  Main: nic:n1/mlx5_3 isolated (nic_throughput).
    two = {"a": range(0, 6), "b": range(6, 8)}
    assert _network_pages(MAPPED, two) == []
    assert _network_pages(SLURM, two) == []  # (no GPU-to-NIC map: two jobs on the node)


def test_one_job_over_the_node_still_pages_its_slow_port() -> None:
    # One job on all 8 GPUs: mlx5_3 carries the same job's traffic as its mates, so 30 Gb/s
    # beside their 100 is the port's.
    one = {"a": range(0, 8)}
    assert _network_pages(MAPPED, one) == ["nic:n1/mlx5_3:1"]
    assert _network_pages(SLURM, one) == ["nic:n1/mlx5_3:1"]


def _low(nic_name: str) -> Finding:
    return Finding(T0, T0, "nic_throughput", "network", "nic", Scope.of_nic("n1", nic_name, 1),
                   True, True, 0.75, {"gbps": 30.0, "node_median_gbps": 100.0})


def _placed(topo: Topology | None, layout: list[tuple[str, int]]) -> Correlator:
    corr = Correlator(Thresholds(), topo)
    for job in {j for j, _ in layout}:
        corr._placement.learn(job, [[r, "n1", g, r] for r, (j, g) in enumerate(layout)
                                    if j == job], T0)
    return corr


def test_which_ports_carry_the_same_jobs() -> None:
    same = [("a", g) for g in range(8)]
    split = [("a", g) for g in range(6)] + [("b", 6), ("b", 7)]
    # The topology's map: mlx5_3 serves GPUs 6-7.
    assert not _placed(MAPPED, same)._tenants_apart(_low("mlx5_3"))
    assert _placed(MAPPED, split)._tenants_apart(_low("mlx5_3"))
    assert not _placed(MAPPED, split)._tenants_apart(_low("mlx5_1"))  # (a's, beside a's)
    # A port with no job behind it, beside ports with one: idle, not slow.
    assert _placed(MAPPED, same[:6])._tenants_apart(_low("mlx5_3"))
    # No map: one job on the node is one demand, two are not.
    assert not _placed(None, same)._tenants_apart(_low("mlx5_3"))
    assert _placed(None, split)._tenants_apart(_low("mlx5_1"))
    # No layout told for the node (port telemetry alone): the ports' word stands.
    assert not _placed(MAPPED, [])._tenants_apart(_low("mlx5_3"))


def test_a_port_losing_symbols_under_a_leaf_paged_on_low_ports_pages_on_its_own() -> None:
    # blind28 F2's cut (port rows alone): four r08 nodes' light mlx5_2 make a false leaf
    # isolation (still a strict xfail there), and 12 s later gpu-r08-n01's mlx5_1 starts
    # losing symbols by the thousand a poll.  Main: absorbed into the leaf's page, never paged.
    sc = _blind28("F2-false-leaf-alert-hides-a-port-losing-symbols")
    assert [(f["caught"], f["cause_ok"]) for f in sc["faults"]] == [(True, True)]
    assert sc["faults"][0]["latency_s"] <= 40.0
