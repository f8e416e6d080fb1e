"""Room blind's network cases (round 9, F1, F2, F4): faultline on telemetry it did not write.

Each case is a cut of the blind corpus (bench/blind/cases/, its topology record at its head)
replayed through a fresh engine; the unit tests beside them hold the other side of each fix:
a port that carried the job's traffic and went quiet is still a bad port, a burst of errors
on a port that trickles them is still evidence, a port still down on the second sample after
a reboot is still down.
"""

from __future__ import annotations

from pathlib import Path

from detector.events import NicSample
from detector.findings import Finding
from detector.network import NodeNics
from detector.thresholds import Thresholds
from detector.topology import Topology
from replay.log import read_records
from replay.runner import LogResult, replay_log

CASES = Path(__file__).resolve().parent.parent / "bench" / "blind" / "cases"
CFG = Thresholds()


def replay_case(name: str) -> LogResult:
    """Replay a case log with the topology of its own first record, as `faultline replay`."""
    path = CASES / name
    first = next(iter(read_records(path)))
    assert first.topic == "topology"
    topo = Topology.from_text(first.value["text"], source=name, fmt=first.value["format"])
    return replay_log(path, topology=topo)


def firing(res: LogResult) -> list[tuple[str, str, str, str]]:
    return [(a.topic.split(".")[-1], a.kind, a.cause, a.scope.key) for a in res.alerts
            if a.status == "firing"]


# -- F1: a frontend NIC is not a fabric port that went quiet ---------------------------------

def test_frontend_nic_makes_no_leaf_down() -> None:
    # hgx nodes: two RoCE fabric NICs at ~75 Gb/s, a frontend NIC (mlx5_2) at ~0.4 Gb/s all
    # along.  On main: three `network/switch` isolations, one per leaf, on nic_throughput.
    assert firing(replay_case("frontend-nic-switch.jsonl.gz")) == []


def _sample(ts: float, nic: str, gbytes: float, *, link: str = "up", errors: int = 0
            ) -> NicSample:
    b = int(gbytes * 1e9)
    return NicSample(ts=ts, node="n1", nic=nic, port=1, link_state=link, tx_bytes=b, rx_bytes=b,
                     symbol_errors=0, link_downed=0, rcv_errors=0, xmit_discards=0,
                     xmit_wait=0, out_of_sequence=errors, packet_seq_err=0, np_cnp_sent=0,
                     rp_cnp_handled=0)


def _run(samples: list[NicSample]) -> list[Finding]:
    nics, out = NodeNics("n1"), []
    for s in samples:
        nics.update(s, CFG, out)
    return out


def _traffic(rates: dict[str, list[float]], dt: float = 10.0) -> list[NicSample]:
    """Each NIC's Gb/s per sample (cumulative bytes), every NIC sampled at the same times."""
    total = dict.fromkeys(rates, 0.0)
    out = []
    for i in range(max(len(r) for r in rates.values())):
        for nic, r in rates.items():
            total[nic] += r[i] * dt / 16  # tx and rx each half of it, in GB
            out.append(_sample(1000.0 + i * dt, nic, total[nic]))
    return out


def test_a_fabric_port_that_goes_quiet_is_still_caught() -> None:
    # Two fabric ports and a frontend one: mlx5_1 runs at its sibling's pace for a while,
    # then falls to 5 %; the frontend port was quiet all along and raises nothing.
    n = 40
    fabric = [75.0] * n
    bad = [75.0] * 20 + [4.0] * (n - 20)
    front = [0.4] * n
    got = [f for f in _run(_traffic({"mlx5_0": fabric, "mlx5_1": bad, "mlx5_2": front}))
           if f.signal == "nic_throughput" and f.active]
    assert [f.scope.key for f in got] == ["nic:n1/mlx5_1:1"]
    assert got[0].evidence["node_median_gbps"] > 50  # the fabric ports' pace, not the frontend's


# -- F2: a routine RoCE trickle does not make a node "affected" by a switch --------------------

def test_a_nic_fault_among_trickling_neighbours_is_the_nic() -> None:
    # hgx s2 (one leaf, frontend NIC dropped), label: symbol errors on hgx-r08-3/mlx5_0.  Its
    # leaf's other nodes count a few out_of_sequence / packet_seq_err under load (RoCE with
    # ECMP).  On main this was `switch:tor03` with 7 of 8 nodes "affected".
    res = replay_case("nic-trickles-switch.jsonl.gz")
    assert firing(res) == [("isolation", "network", "nic", "nic:hgx-r08-3/mlx5_0:1")]
    card = res.scorecard()
    assert [f.caught for f in card.faults] == [True]


def test_a_trickle_is_no_evidence_but_a_burst_on_top_of_it_is() -> None:
    # out_of_sequence: 1 every 10 s sample for 20 min (routine), then 30 in one sample.
    samples, total = [], 0
    for i in range(120):
        total += 1
        samples.append(_sample(1000.0 + 10 * i, "mlx5_0", 100.0 + i, errors=total))
    quiet = [f for f in _run(samples) if f.signal == "errors_seen"]
    assert quiet == []
    total += 30
    samples.append(_sample(1000.0 + 10 * 120, "mlx5_0", 220.0, errors=total))
    seen = [f for f in _run(samples) if f.signal == "errors_seen" and f.active]
    assert len(seen) == 1 and seen[0].evidence["usual_recent_errors"] > 0


# -- F4: a reboot's link training is not a NIC going down --------------------------------------

def test_link_training_after_a_reboot_raises_nothing() -> None:
    # dgx012 silent ~300 s, back with counters at zero and all 8 links down on its first
    # sample, up on the next.  On main: 8 `network/nic` isolations on link_down.
    assert firing(replay_case("reboot-link-down.jsonl.gz")) == []


def test_a_port_still_down_after_the_reboot_is_down_from_its_first_sample() -> None:
    samples = [_sample(1000.0 + 10 * i, "mlx5_0", 100.0 + i) for i in range(10)]
    back = 1090.0 + 300.0
    samples += [_sample(back, "mlx5_0", 0.0, link="down"),
                _sample(back + 10, "mlx5_0", 0.0, link="down")]
    out = _run(samples)
    downs = [f for f in out if f.signal == "link_down" and f.active]
    assert len(downs) == 1
    assert downs[0].ts == back + 10 and downs[0].onset_ts == back
    assert downs[0].evidence["down_since_node_came_back_s"] == 10.0
    # Without a gap a down is called at once, as before.
    steady = [_sample(1000.0 + 10 * i, "mlx5_0", 100.0 + i) for i in range(10)]
    steady.append(_sample(1100.0, "mlx5_0", 110.0, link="down"))
    downs = [f for f in _run(steady) if f.signal == "link_down" and f.active]
    assert [d.ts for d in downs] == [1100.0]


def _fleet(down: dict[str, set[str]], at: int = 12, n: int = 20) -> list[tuple[str, str, str, str]]:
    """Four nodes of four ports under one Slurm leaf, sampled every 10 s; from sample ``at``
    on, the ports named in ``down`` (per node) are down.  The alerts that fire."""
    from detector.engine import Engine

    topo = Topology.from_text("SwitchName=leaf1 Nodes=n[1-4]\n", fmt="slurm")
    eng, alerts = Engine(None, topo), []
    for i in range(n):
        for node in ("n1", "n2", "n3", "n4"):
            for k in range(4):
                nic = f"mlx5_{k}"
                off = i >= at and nic in down.get(node, set())
                b = 10**9 * (i if not off else at)
                eng.ingest("telemetry.nic", {
                    "ts": 1000.0 + 10 * i + 0.1 * k, "node": node, "nic": nic, "port": 1,
                    "link_state": "down" if off else "up", "tx_bytes": b, "rx_bytes": b,
                    "symbol_errors": 0, "link_downed": int(i >= at and off),
                    "rcv_errors": 0, "out_of_sequence": 0, "packet_seq_err": 0}, alerts)
    return [(a.topic.split(".")[-1], a.kind, a.cause, a.scope.key) for a in alerts
            if a.status == "firing"]


def test_every_port_of_a_node_down_at_once_is_one_node_alert() -> None:
    every = {f"mlx5_{k}" for k in range(4)}
    assert _fleet({"n1": every}) == [("isolation", "network", "nic", "node:n1")]
    # One port down stays that port's; a whole leaf down stays the switch's.
    assert _fleet({"n1": {"mlx5_2"}}) == [("isolation", "network", "nic", "nic:n1/mlx5_2:1")]
    assert _fleet({n: every for n in ("n1", "n2", "n3", "n4")}) == [
        ("isolation", "network", "switch", "switch:leaf1")]


def test_a_trickle_that_comes_with_the_job_s_traffic_is_learnt_from_its_start() -> None:
    # A RoCE port idle (and error-free) for 20 min, then a job's traffic with its routine
    # out-of-sequence trickle (~1 per 20 s, now and then 2 in one sample).  Its quiet hours
    # say nothing of its rate under load, and a sample of 2 is part of that rate: no evidence.
    pattern = [1, 0, 0, 1, 0, 0, 0, 1, 0, 2, 0, 0, 1, 0, 0, 0, 2, 0, 1, 0]
    samples, total, gb = [], 0, 0.0
    for i in range(120 + 60):
        busy = i >= 120
        if busy:
            total += pattern[(i - 120) % len(pattern)]
            gb += 60.0
        samples.append(_sample(1000.0 + 10 * i, "mlx5_0", gb, errors=total))
    assert [f for f in _run(samples) if f.signal == "errors_seen"] == []
