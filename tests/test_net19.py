"""net19 (round 19): congestion another tenant makes on a leaf, paged once at the leaf when it
costs a job under it (blind7 G2) -- never for congestion alone, a job slower alone, or a
spine's trouble that congests every leaf under it (blind4 X-spine)."""

from __future__ import annotations

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.events import NicSample
from detector.job_comm import check_restored
from detector.statecodec import decode_state, encode_state
from detector.testing import T0, feed, step
from detector.topology import Topology

TOPO = Topology.from_text("""Topology=shared Version=1
NodeSet=n[01-12] Gpus=4 Nics=mlx5_[0-1]
SwitchName=leaf1 Nodes=n[01-04]
SwitchName=leaf2 Nodes=n[05-08]
SwitchName=leaf3 Nodes=n[09-12]
SwitchName=spine1 Switches=leaf[1-3]
""")
LEAVES = {"leaf1": range(1, 5), "leaf2": range(5, 9), "leaf3": range(9, 13)}
START, END = 300.0, 500.0


def ports(seconds: float, hot: set[str]) -> list[NicSample]:
    """2 ports on each of 12 nodes every 10 s at the node's own phase: ~1e5 xmit_wait/s and
    ~20 CNPs/s routinely; 3e6/s and 500/s on the ``hot`` leaves' ports in [START, END)."""
    out = []
    for leaf, nums in LEAVES.items():
        for n in nums:
            node = f"n{n:02d}"
            for k in range(2):
                wait = cnp = 0
                i = 0
                while (ts := T0 + 0.61 * n + 0.01 * k + 10.0 * i) < T0 + seconds:
                    jam = leaf in hot and T0 + START <= ts < T0 + END
                    wait += (3_000_000 if jam else 100_000 + 1_000 * (i % 7)) * 10
                    cnp += (500 if jam else 20) * 10
                    tx = i * 25_000_000_000
                    out.append(NicSample(ts, node, f"mlx5_{k}", 1, "up", 400.0, tx, tx, 0, 0, 0,
                                         0, wait, 0, 0, cnp, 0))
                    i += 1
    return out


def job(seconds: float, slower: float) -> list:
    """16 ranks on n01-n08 (2 GPUs each), 2 s steps; comm ``slower`` times in [START, END)."""
    out = []
    s = 0
    while (ts := T0 + 2.0 * s) < T0 + seconds:
        jam = T0 + START <= ts < T0 + END
        comm = 300.0 * (slower if jam else 1.0)
        for r in range(16):
            out.append(step(ts + 0.01 * r, r, s, job="train", node=f"n{r // 2 + 1:02d}",
                            gpu=r % 2, step_ms=1000.0 + comm, compute_ms=980.0 + r % 3,
                            comm_ms=comm + (r % 5)))
        s += 1
    return out


def run(hot: set[str], slower: float) -> list:
    events = sorted(ports(800.0, hot) + job(800.0, slower), key=lambda e: e.ts)
    return feed(Engine(topology=TOPO), events)


def pages(alerts: list) -> list[tuple[str, str, str, str, float]]:
    return [(a.topic, a.kind, a.cause, a.scope.key, a.detected_ts - T0) for a in alerts
            if a.status == "firing"]


def test_a_leaf_congested_while_the_job_under_it_waits_is_one_escalation_at_the_leaf() -> None:
    # (Fails on main: nothing is sent -- steps.py compares ranks with peers, all wait alike.)
    alerts = run({"leaf2"}, 1.4)
    got = pages(alerts)
    assert [g[:4] for g in got] == [(ESCALATION, "network", "switch", "switch:leaf2")], got
    assert START < got[0][4] <= START + 30.0, got
    a = next(a for a in alerts if a.status == "firing")
    assert a.job == "train" and a.evidence["jobs_waiting"] == ["train"]
    assert a.evidence["comm_ratio"]["train"] >= 1.3 and a.evidence["nodes_affected"] == 4
    resolved = [a for a in alerts if a.status == "resolved"]
    assert [a.scope.key for a in resolved] == ["switch:leaf2"]  # once its ports' wait ended
    assert resolved[0].detected_ts - T0 >= END


def test_a_congested_leaf_that_costs_no_job_pages_nobody() -> None:
    assert pages(run({"leaf2"}, 1.0)) == []
    assert pages(run({"leaf3"}, 1.4)) == []  # the job waits, but no rank of it is under leaf3


def test_a_job_slower_in_comm_with_no_leaf_congested_pages_nobody() -> None:
    assert pages(run(set(), 1.4)) == []


def test_every_leaf_of_a_spine_congested_at_once_is_no_leaf_escalation() -> None:
    # A degraded spine congests every leaf under it (blind4 X-spine): not one leaf's page.
    assert pages(run({"leaf1", "leaf2", "leaf3"}, 1.4)) == []


def test_the_comm_bins_and_congested_ports_round_trip_the_snapshot_codec() -> None:
    eng = Engine(topology=TOPO)
    events = sorted(ports(400.0, {"leaf2"}) + job(400.0, 1.4), key=lambda e: e.ts)
    feed(eng, events, finish=False)
    comm = eng.monitors._comm
    assert comm["train"][2] and check_restored(comm)
    back = decode_state(encode_state(eng.monitors))
    back.check_restored()
    assert back._comm == comm
    nics = back._nics["n05"]._ports[("mlx5_0", 1)]
    assert "congested" in nics.active and nics.cong_n > 0
    assert not check_restored({"train": [0, [], [], None, None, None]})  # an empty bin
    assert not check_restored({"train": [0, [1.0], [float("nan")], None, None, None]})


def test_the_batch_path_keeps_the_comm_bins_and_the_ports_learning_as_the_record_path() -> None:
    events = sorted(ports(800.0, {"leaf2"}) + job(800.0, 1.4), key=lambda e: e.ts)
    one, many = Engine(topology=TOPO), Engine(topology=TOPO)
    by_one = feed(one, events, finish=False)
    by_many = many.process_many(events)
    assert [(a.status, a.scope.key, a.detected_ts) for a in by_many] == \
        [(a.status, a.scope.key, a.detected_ts) for a in by_one] != []
    assert many.monitors._comm == one.monitors._comm
    p, q = (e.monitors._nics["n06"]._ports[("mlx5_1", 1)] for e in (one, many))
    assert (p.wait_mean, p.cnp_mean, p.cong_n) == (q.wait_mean, q.cnp_mean, q.cong_n)


def test_the_correlators_congestion_state_is_bounded() -> None:
    from detector.alerts import Scope
    from detector.correlate import Correlator
    from detector.findings import Finding
    from detector.part_window import MAX_COMM_WAITS, MAX_LEAF_PORTS
    from detector.thresholds import Thresholds

    c = Correlator(Thresholds(), TOPO)
    out: list = []
    for port in range(MAX_LEAF_PORTS + 50):  # one node/NIC under leaf2, forged port numbers
        c.on_finding(Finding(T0, T0, "congested", "network", "nic",
                             Scope.of_nic("n05", "mlx5_0", port), True, False, 0.3, {}), out)
    for j in range(MAX_COMM_WAITS + 50):
        c.on_finding(Finding(T0, T0, "comm_wait", "network", "unknown", Scope.of_job(f"j{j}"),
                             True, False, 0.3, {}, f"j{j}"), out)
    assert len(c._congested["leaf2"]) == MAX_LEAF_PORTS
    assert len(c._comm_wait) == MAX_COMM_WAITS and out == []


def test_a_job_slower_in_comm_for_good_is_learnt_afresh_after_ten_minutes() -> None:
    from detector.job_comm import note
    from detector.monitors import Monitors

    mon, out = Monitors(), []
    for s in range(900):  # one rank, 2 s steps; comm 1.5x from 300 s on (a re-formed job)
        e = step(T0 + 2.0 * s, 0, s, job="j", comm_ms=450.0 if s >= 150 else 300.0)
        note(mon, e, e.ts, out)
    assert [(f.signal, f.active, f.ts - T0) for f in out] == [
        ("comm_wait", True, 310.0), ("comm_wait", False, 900.0)]
