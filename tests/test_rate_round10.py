"""Room rate, round 10: a port trained at a lower rate from the start (blind2's F2, issue 10).

A link that trained at half width or speed never goes down and, under a job that does not
fill it, may carry its node's pace: only its negotiated ``rate_gbps`` tells (ibstat's
check).  detector/network.py's ``_rate`` pages it when it is below its node's other ports
of its name family and below its name on the other nodes (or, no other node reporting the
name, when it is known to carry the job's traffic).  These tests hold both sides: the
degraded port is paged with its rate and its peers' as evidence; a frontend at a lower rate
on every node, a node whose every port is at 200 (an older model), a port down (IB reports
10 Gb/s) and a rate passing through at link training after a reboot are not.  (Round 9's
F1 case, a 100 Gb/s frontend beside 400 Gb/s rails on every HGX node, stays silent:
tests/test_blind_network.py; blind2's two F2 cases: tests/test_blind2_cases.py.)
"""

from __future__ import annotations

from collections.abc import Callable

from detector.events import NicSample
from detector.findings import Finding
from detector.network import NodeNics
from detector.port_names import PortNames
from detector.testing import T0
from detector.thresholds import Thresholds

CFG = Thresholds()
INTERVAL = 30.0
RAILS = [f"mlx5_{k}" for k in range(4)]

Spec = Callable[[str, str, int], tuple[float | None, float, bool]]  # -> (rate, Gb/s, up)


def run(nodes: list[str], ports: list[str] | Callable[[str], list[str]], samples: int,
        spec: Spec, *, gap_after: int | None = None) -> list[Finding]:
    """Every node's ports (``ports``, or ``ports(node)``) sampled every INTERVAL s at its own
    phase, in time order, through one worker's NodeNics (one PortNames); ``spec(node, port,
    i)`` gives a sample's rate, throughput and link state.  ``gap_after``: the nodes go silent
    for 10 min after that sample (a reboot: counters from zero)."""
    recs = []
    for n, node in enumerate(nodes):
        names = ports(node) if callable(ports) else ports
        total = dict.fromkeys(names, 0)
        for i in range(samples):
            ts = T0 + 0.37 * n + i * INTERVAL
            if gap_after is not None and i > gap_after:
                ts += 600.0
                if i == gap_after + 1:
                    total = dict.fromkeys(names, 0)
            for k, name in enumerate(names):
                rate, gbps, up = spec(node, name, i)
                total[name] += int(gbps * INTERVAL / 8 * 1e9)
                half = total[name] // 2
                recs.append(NicSample(ts=ts + 0.001 * k, node=node, nic=name, port=1,
                                      link_state="up" if up else "down", rate_gbps=rate,
                                      tx_bytes=half, rx_bytes=half, symbol_errors=0,
                                      link_downed=0, rcv_errors=0, xmit_discards=0,
                                      xmit_wait=0, out_of_sequence=0, packet_seq_err=0,
                                      np_cnp_sent=0, rp_cnp_handled=0, cluster="c1"))
    names = PortNames()
    nics = {node: NodeNics(node, names) for node in nodes}
    out: list[Finding] = []
    for s in sorted(recs, key=lambda s: s.ts):
        nics[s.node].update(s, CFG, out)
    return out


def rate_findings(out: list[Finding]) -> list[Finding]:
    return [f for f in out if f.signal == "link_rate"]


NODES = ["n1", "n2", "n3", "n4"]


def half_rate(node: str, port: str, i: int) -> tuple[float | None, float, bool]:
    """n3's mlx5_2 trained at 200 of 400 Gb/s; every port busy at ~300 Gb/s."""
    return (200.0 if (node, port) == ("n3", "mlx5_2") else 400.0), 300.0, True


def test_a_port_at_half_rate_from_the_start_is_paged_with_its_rate_and_its_peers():
    found = rate_findings(run(NODES, RAILS, 8, half_rate))
    assert [(f.scope.key, f.active, f.verdict, f.cause) for f in found] == [
        ("nic:n3/mlx5_2:1", True, True, "nic")]
    f = found[0]
    assert f.evidence["rate_gbps"] == 200.0 and f.evidence["peer_rate_gbps"] == 400.0
    assert f.evidence["judged_because"] == ("its name is at a higher rate on 3 of the 3 other "
                                            "nodes reporting it")
    # nic_rate_samples (3) in a row spanning nic_rate_hold_s (60 s): the third 30 s sample.
    assert f.onset_ts == T0 + 0.37 * 2 + 0.002 and f.ts - f.onset_ts == 2 * INTERVAL


def test_a_port_that_carries_less_is_paged_as_well_and_clears_when_it_retrains():
    def spec(node, port, i):
        bad = (node, port) == ("n3", "mlx5_2") and i < 6
        return (200.0 if bad else 400.0), (150.0 if bad else 300.0), True
    found = rate_findings(run(NODES, RAILS, 10, spec))
    assert [(f.scope.key, f.active) for f in found] == [("nic:n3/mlx5_2:1", True),
                                                        ("nic:n3/mlx5_2:1", False)]
    assert found[1].ts == T0 + 0.37 * 2 + 0.002 + 6 * INTERVAL


def test_one_node_alone_pages_a_port_that_runs_at_its_pace_below_its_familys_rate():
    """No other node reports the name: the node's own ports decide -- a port of the rails'
    family at 200 beside them at 400 that carries the job's traffic at their pace."""
    found = rate_findings(run(["n3"], RAILS, 12, half_rate))
    assert [f.scope.key for f in found] == ["nic:n3/mlx5_2:1"]
    assert found[0].evidence["judged_because"] == ("it carries the job's traffic at its "
                                                   "node's pace")


def test_a_frontend_port_at_a_lower_rate_on_every_node_is_routine():
    """A 100 Gb/s frontend (mlx5_4, the rails' own name family) on every node beside 400 Gb/s
    rails, quiet or busy; on one node alone a quiet one too."""
    for gbps in (0.5, 80.0):
        def spec(node, port, i, gbps=gbps):
            return (100.0, gbps, True) if port == "mlx5_4" else (400.0, 300.0, True)
        assert rate_findings(run(NODES, [*RAILS, "mlx5_4"], 12, spec)) == []

    def quiet(node, port, i):
        return (100.0, 0.5, True) if port == "mlx5_4" else (400.0, 300.0, True)
    assert rate_findings(run(["n1"], [*RAILS, "mlx5_4"], 12, quiet)) == []


def test_a_node_whose_every_port_is_at_200_is_an_older_model_not_a_fault():
    def spec(node, port, i):
        return (200.0 if node == "n3" else 400.0), 150.0, True
    assert rate_findings(run(NODES, RAILS, 12, spec)) == []


def test_a_port_down_reporting_10_gbps_is_a_link_down_not_a_rate_case():
    def spec(node, port, i):
        down = (node, port) == ("n3", "mlx5_2") and i >= 2
        return (10.0 if down else 400.0), (0.0 if down else 300.0), not down
    out = run(NODES, RAILS, 12, spec)
    assert rate_findings(out) == []
    assert ("link_down", "nic:n3/mlx5_2:1") in [(f.signal, f.scope.key) for f in out]


def test_a_rate_passing_through_at_link_training_after_a_reboot_is_not_paged():
    """Back from a reboot, n3's ports train: 100, then 200, then 400 Gb/s -- and one of them
    flaps between 200 and 400 for a while; none holds a lower rate for 60 s."""
    def spec(node, port, i):
        if node == "n3" and 4 <= i <= 5:
            return (100.0 if i == 4 else 200.0), 300.0, True
        if (node, port) == ("n3", "mlx5_1") and 6 <= i <= 12:
            return (200.0 if i % 2 else 400.0), 300.0, True
        return 400.0, 300.0, True
    assert rate_findings(run(NODES, RAILS, 16, spec, gap_after=3)) == []


def test_a_port_with_no_rate_reported_is_not_judged_by_it():
    def spec(node, port, i):
        return (None if (node, port) == ("n3", "mlx5_2") else 400.0), 300.0, True
    assert rate_findings(run(NODES, RAILS, 12, spec)) == []
