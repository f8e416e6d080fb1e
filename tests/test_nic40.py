"""nic40 (round 40, issue 10): a bad port whose demand is known is paged again -- an idle or
light port is not.

A port's Gb/s is its GPUs' demand (detector/correlate/ports.py).  nic39 judged a port never at
its node's pace only where the job layout and the GPU-to-NIC map put its mates' job behind it,
and nic38 a port on a node two jobs share only beside a majority of mates carrying its jobs;
both lost real bad ports (tests/test_lead_round10.py, tests/test_revA39.py F2/F7).  Demand is
known when the port fell from its own pace, its name runs at its node's pace on the other
nodes (a job's rails), one job fills the node, or -- with the map -- it is compared with the
mates carrying exactly its jobs.  These are the other side: what must still not page.
"""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from detector.engine import Engine
from detector.events import NicSample, StepSample
from detector.network import MATES_KEPT, RAIL_NODES
from detector.testing import T0, feed, step
from tests.test_revA39 import _ports, _topo
from tests.test_review_round10 import busy, firing, traffic


def test_a_jobs_demand_falling_on_both_its_ports_is_not_a_bad_port() -> None:
    # Jobs a (GPUs 0-3) and b (GPUs 4-7): b's two ports fall 100 -> 30 Gb/s together (its
    # demand: a phase of lighter traffic) while a's stay at 100.  With the map b's mlx5_3 is
    # compared with b's mlx5_2, at 30 too; with none, it did not fall alone.
    events = _ports({"a": range(4), "b": range(4, 8)}, nics=4, bad="mlx5_3")
    n1 = [e for e in events if isinstance(e, NicSample) and e.node == "n1"]
    twin = [replace(e, nic="mlx5_2") for e in n1 if e.nic == "mlx5_3"]
    events = sorted([e for e in events if e not in n1 or e.nic != "mlx5_2"] + twin,
                    key=lambda e: e.ts)
    for topo in ("map", "slurm", ""):
        alerts = feed(Engine(topology=_topo(topo, 4)), events)
        assert [a.scope.key for a in alerts if a.status == "firing"] == [], topo


@pytest.mark.parametrize("others", [RAIL_NODES, RAIL_NODES - 1])
def test_a_port_low_from_its_first_sample_is_judged_by_its_rails_on_enough_other_nodes(
        others: int) -> None:
    # Port rows alone (nobody says what runs behind a port): node-000's mlx5_5 at 4 Gb/s from
    # its first sample, its name at 75 on ``others`` other nodes.  One or two other nodes may
    # be a fleet's tenants at their own levels (revA38 F8); RAIL_NODES of them are a job's rails.
    ports = {f"mlx5_{k}": busy for k in range(8)}
    ports["mlx5_5"] = lambda node, i: 4.0 if node == "node-000" else 75.0
    nodes = [f"node-{n:03d}" for n in range(others + 1)]
    found = firing(feed(Engine(), traffic(nodes, ports, 60)))
    want = [("network", "nic", "nic:node-000/mlx5_5:1")] if others >= RAIL_NODES else []
    assert found == want


def test_a_page_keeps_no_neighbour_ports_figures() -> None:
    # The verdict carries its mates' Gb/s for the comparison (at most MATES_KEPT); the page's
    # evidence keeps the port's own figures and its node's median only.
    events = _ports({"a": range(4), "b": range(4, 8)}, nics=4)
    alerts = [a for a in feed(Engine(topology=_topo("map", 4)), events) if a.status == "firing"]
    assert [a.scope.key for a in alerts] == ["nic:n1/mlx5_3:1"]
    signal = alerts[0].evidence["signals"][0]
    assert signal["gbps"] == 30.0 and signal["node_median_gbps"] == 100.0
    assert signal["demand"] == "own_pace" and "mates_gbps" not in signal
    assert MATES_KEPT >= 18  # (a GB200 tray's netdevs)


def _rails_fleet(gpus_on_first: range) -> list:
    """Five nodes of 8 GPUs and 4 NICs (GPUs 2k, 2k+1 on mlx5_k), port rows every 10 s: one
    job on ``gpus_on_first`` of node-000 and all 8 GPUs of the other four, stepping every
    second; node-000's mlx5_3 at 3 Gb/s from its first sample, every other port at 75."""
    nodes = [f"node-{n:03d}" for n in range(5)]
    ranks = [(nodes[0], g) for g in gpus_on_first] + [(n, g) for n in nodes[1:] for g in range(8)]
    events: list = [step(T0 + s + 0.001 * r, r, s, job="a", node=node, gpu=g)
                    for s in range(400) for r, (node, g) in enumerate(ranks)]
    ports = {f"mlx5_{k}": busy for k in range(4)}
    ports["mlx5_3"] = lambda node, i: 3.0 if node == "node-000" else 75.0
    return sorted(events + traffic(nodes, ports, 40), key=lambda e: e.ts)


def test_an_idle_gpus_port_is_not_judged_by_its_names_rails_on_other_nodes() -> None:
    # node-000's job leaves GPUs 6-7 idle (revA38 F8's node): its mlx5_3 at 3 Gb/s is theirs,
    # whatever the other nodes' mlx5_3 carry (8-GPU jobs): the layout decides over the rails.
    assert firing(feed(Engine(), _rails_fleet(range(6)))) == []
    # (the guard: the job on all 8 GPUs of node-000 -- the port is its, and slow)
    assert firing(feed(Engine(), _rails_fleet(range(8)))) == [
        ("network", "nic", "nic:node-000/mlx5_3:1")]


def test_a_job_leaving_a_node_it_shared_is_not_a_bad_port() -> None:
    # Jobs a (GPUs 0-3) and b (GPUs 4-7) on n1 and n2; b stops at 300 s and its ports
    # (mlx5_2, mlx5_3) fall to 0.5 Gb/s on both nodes while a's carry on at 100.  A port of b
    # fell with its twin: b's demand gone, not a bad port (map, Slurm, none).
    events = _ports({"a": range(4), "b": range(4, 8)}, nics=4, bad="none", seconds=600)
    events = [e for e in events if not (isinstance(e, StepSample) and e.job == "b"
                                        and e.ts >= T0 + 300.0)]
    out = []
    sent: dict[tuple[str, str], float] = {}
    last: dict[tuple[str, str], float] = {}
    for e in events:
        if isinstance(e, NicSample) and e.nic in ("mlx5_2", "mlx5_3"):
            key = (e.node, e.nic)
            t = e.ts - T0
            dt = t - last.get(key, t)
            last[key] = t
            sent[key] = sent.get(key, 0.0) + (0.5 if t >= 300.0 else 100.0) * dt / 16.0 * 1e9
            n = int(sent[key])
            e = replace(e, tx_bytes=n, rx_bytes=n)
        out.append(e)
    for topo in ("map", "slurm", ""):
        alerts = feed(Engine(topology=_topo(topo, 4)), out)
        assert [a.scope.key for a in alerts if a.status == "firing"] == [], topo
