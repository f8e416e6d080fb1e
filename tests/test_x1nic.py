"""x1nic (round 30): a NIC that drains slower than its siblings under a job that starts on it
(blind20 X1: a NIC behind PCIe x8 -- link up at 400, no error, its bytes its siblings', but
~3,000 CNPs/s sent where its siblings send <= 30, its job's ports on the other nodes handling
them and waiting, the job's reduce slower from its first step).  Its own past says nothing (it
was never calm): its peers do (detector.network ``cnp_sent`` / ``cnp_handled``, joined by
detector.nic_cnp).  Paged at the NIC; never for DCQCN's everyday CNPs, an incast or a congested
leaf that raises a node's ports together, a NIC no job waits on, or an idle NIC."""

from __future__ import annotations

from detector.alerts import ISOLATION, Scope
from detector.correlate import Correlator
from detector.engine import Engine
from detector.events import NicSample
from detector.findings import Finding
from detector.nic_cnp import MAX_KEPT, check_restored
from detector.statecodec import decode_state, encode_state
from detector.testing import T0, feed, step
from detector.thresholds import Thresholds
from detector.topology import Topology

# A Slurm topology.conf (names nodes, not NICs), as blind20's fabric story has.
TOPO = Topology.from_text("""SwitchName=leaf1 Nodes=n[01-04]
SwitchName=leaf2 Nodes=n[05-08]
SwitchName=spine1 Switches=leaf[1-2]
""")
NODES = [f"n{i:02d}" for i in range(1, 9)]
JOB_NODES = NODES[:4]  # "train": 4 ranks a node on n01-n04 (across no leaf)
BAD = ("n02", "mlx5_2")
START, END = 120.0, 600.0  # the job (and the fault) from START; the log ends at END


def ports(*, sent: dict[tuple[str, str], float] | None = None,
          handled: dict[tuple[str, str], float] | None = None,
          gbps: dict[tuple[str, str], float] | None = None, busy: set[str] | None = None,
          every: float = 10.0) -> list[NicSample]:
    """4 ports on each of 8 nodes every ``every`` s at the node's own phase.  DCQCN's everyday
    marks on a busy port: 5-35 CNPs/s sent and handled (a port of its own rate), ~1.5e5
    xmit_wait/s; from START ``sent`` / ``handled`` CNPs/s on the ports named (``handled``
    ports wait 6e6/s).  Busy (100 Gb/s, or ``gbps``) from START on ``busy`` nodes (the job's
    by default), idle (no bytes, no marks) before."""
    sent, handled, gbps = sent or {}, handled or {}, gbps or {}
    busy = set(JOB_NODES) if busy is None else busy
    out = []
    for n, node in enumerate(NODES):
        for k in range(4):
            nic = f"mlx5_{k}"
            tx = wait = np_ = rp = 0
            i = 0
            while (ts := T0 + 0.37 * n + 0.01 * k + every * i) < T0 + END:
                on = node in busy and ts >= T0 + START
                if ts >= T0 + START:
                    base = 5 + (7 * n + 11 * k + 3 * i) % 31 if on else 0
                    np_ += int(every * sent.get((node, nic), base))
                    rp += int(every * handled.get((node, nic), base))
                    wait += int(every * (6e6 if (node, nic) in handled else 1.5e5 if on else 0))
                    tx += int(every * gbps.get((node, nic), 100.0) / 16 * 1e9) if on else 0
                out.append(NicSample(ts, node, nic, 1, "up", 400.0, tx, tx, 0, 0, 0, 0, wait,
                                     0, 0, np_, rp))
                i += 1
    return out


def job(*, nodes: list[str] = JOB_NODES, comm: float = 450.0) -> list:
    """16 ranks of "train", 4 a node, 2 s steps from START; every rank's comm ``comm`` ms (the
    reduce at the slow rail's pace from its first step: no calm past to compare with)."""
    out = []
    s = 0
    while (ts := T0 + START + 2.0 * s) < T0 + END:
        for r in range(4 * len(nodes)):
            out.append(step(ts + 0.01 * r, r, s, job="train", node=nodes[r // 4], gpu=r % 4,
                            step_ms=1500.0 + comm, compute_ms=1480.0 + r % 3,
                            comm_ms=comm + (r % 5)))
        s += 1
    return out


def run(nics: list[NicSample], steps: list | None = None) -> list:
    events = sorted(nics + (job() if steps is None else steps), key=lambda e: e.ts)
    return feed(Engine(topology=TOPO), events)


def pages(alerts: list) -> list[tuple[str, str, str, str, float]]:
    return [(a.topic, a.kind, a.cause, a.scope.key, a.detected_ts - T0) for a in alerts
            if a.status == "firing"]


def x8(**kw: object) -> list[NicSample]:
    """The NIC at PCIe x8: it sends 3,000 CNPs/s from the job's start, the job's other nodes'
    ports of its rail handle ~1,000/s each (``sent`` and ``handled`` whether busy or not)."""
    return ports(sent={BAD: 3000.0},
                 handled={(n, BAD[1]): 1000.0 for n in JOB_NODES if n != BAD[0]}, **kw)


def test_a_nic_sending_cnps_far_above_its_siblings_while_its_job_waits_is_paged_at_the_nic():
    # (Fails on main: nothing -- the port was never calm, its job's comm never was either.)
    alerts = run(x8())
    got = pages(alerts)
    assert [g[:4] for g in got] == [(ISOLATION, "network", "nic", "nic:n02/mlx5_2:1")], got
    assert START < got[0][4] <= START + 60.0, got
    a = next(a for a in alerts if a.status == "firing")
    assert a.job == "train" and a.evidence["jobs_waiting"] == ["train"]
    assert sorted(a.evidence["ports_handling"]) == [
        "nic:n01/mlx5_2:1", "nic:n03/mlx5_2:1", "nic:n04/mlx5_2:1"]
    assert "PCIe" in a.evidence["next_diagnostic"]
    assert a.onset_ts - T0 <= START + 20.0  # its first samples sending them


def test_at_a_30_s_interval_too():
    got = pages(run(x8(every=30.0)))
    assert [g[3] for g in got] == ["nic:n02/mlx5_2:1"] and got[0][4] <= START + 150.0, got


def test_its_siblings_under_an_incast_are_not_paged():
    # An incast onto n02 (every port of it marked alike) and onto n03 with its senders
    # throttled: a node's ports up together stand out of nothing.
    every_port = {("n02", f"mlx5_{k}"): 3000.0 for k in range(4)}
    every_port.update({("n03", f"mlx5_{k}"): 2500.0 for k in range(4)})
    handled = {(n, f"mlx5_{k}"): 1000.0 for n in ("n01", "n04") for k in range(4)}
    assert pages(run(ports(sent=every_port, handled=handled))) == []


def test_an_incast_receiver_carrying_more_bytes_than_its_siblings_is_not_paged():
    # One port receives more than its siblings (a hot expert, a many-to-one): CNPs with more
    # bytes are its traffic's, not a slow drain.
    nics = x8(gbps={BAD: 300.0})
    assert pages(run(nics)) == []


def test_many_nodes_sending_at_once_are_the_fabrics_not_a_nic_each():
    sent = {(n, "mlx5_2"): 3000.0 for n in JOB_NODES[:3]}
    handled = {(n, "mlx5_1"): 1000.0 for n in JOB_NODES}
    assert pages(run(ports(sent=sent, handled=handled))) == []


def test_no_job_waiting_pages_nobody():
    # The same port sending, but no port of its job's other nodes handles (its senders are
    # no job's: a storage burst, a checkpoint read) ...
    assert pages(run(ports(sent={BAD: 3000.0}))) == []
    # ... or no job on its node (its traffic nobody's the detector knows) ...
    others = [n for n in JOB_NODES if n != BAD[0]] + ["n05"]
    assert pages(run(x8(), job(nodes=others))) == []
    # ... or no job at all.
    assert pages(run(x8(), [])) == []


def test_dcqcn_everyday_cnps_and_an_idle_nic_page_nobody():
    assert pages(run(ports())) == []
    # Its node idle (no bytes on any port; its job's ranks on the others): a port that
    # carries no traffic is never judged, whatever its counters say.
    idle = x8(busy={n for n in JOB_NODES if n != BAD[0]})
    assert pages(run(idle)) == []


def test_the_page_resolves_once_the_nic_drains_again():
    nics = x8()
    fixed = [s if not (s.ts >= T0 + 400.0 and (s.node, s.nic) == BAD) else s
             for s in nics]
    # After 400 s the bad port sends only what its siblings do: rebuild its counter.
    last = None
    for i, s in enumerate(fixed):
        if (s.node, s.nic) != BAD:
            continue
        if s.ts >= T0 + 400.0:
            assert last is not None
            fixed[i] = NicSample(s.ts, s.node, s.nic, 1, "up", 400.0, s.tx_bytes, s.rx_bytes,
                                 0, 0, 0, 0, s.xmit_wait, 0, 0,
                                 last.np_cnp_sent + int(10 * 20), s.rp_cnp_handled)
        last = fixed[i]
    alerts = run(fixed)
    assert [(a.status, a.scope.key) for a in alerts] == [
        ("firing", "nic:n02/mlx5_2:1"), ("resolved", "nic:n02/mlx5_2:1")]


def test_the_record_and_batch_paths_agree_and_the_state_round_trips():
    events = sorted(x8() + job(), key=lambda e: e.ts)
    one, many = Engine(topology=TOPO), Engine(topology=TOPO)
    by_one = feed(one, events, finish=False)
    by_many = many.process_many(events)
    assert [(a.status, a.scope.key, a.detected_ts) for a in by_many] == \
        [(a.status, a.scope.key, a.detected_ts) for a in by_one] != []
    p = one.monitors._nics["n02"]._ports[("mlx5_2", 1)]
    assert "cnp_sent" in p.active and p.np_s > 1000.0
    back = decode_state(encode_state(one.monitors))
    back.check_restored()
    q = back._nics["n02"]._ports[("mlx5_2", 1)]
    assert (q.np_s, q.rp_s, q.cnp_run, q.active) == (p.np_s, p.rp_s, p.cnp_run, p.active)
    corr = decode_state(encode_state(one.correlator))
    assert check_restored(corr) and corr._cnp.keys() == one.correlator._cnp.keys() != set()


def test_the_correlators_cnp_state_is_bounded_and_checked_on_restore():
    c = Correlator(Thresholds(), TOPO)
    out: list = []
    for port in range(MAX_KEPT + 50):  # forged port numbers
        c.on_finding(Finding(T0, T0, "cnp_handled", "network", "nic",
                             Scope.of_nic("n05", "mlx5_0", port), True, False, 0.5, {}), out)
    assert len(c._cnp) == MAX_KEPT and out == [] and check_restored(c)
    c._cnp["x"] = "not a finding"  # type: ignore[assignment]
    assert not check_restored(c)


def test_told_cnps_of_a_node_gone_from_the_fleet_are_forgotten():
    heard = {"n05"}
    c = Correlator(Thresholds(), TOPO, seen=lambda node, source: node in heard)
    out: list = []
    for node in ("n05", "n06"):
        c.on_finding(Finding(T0, T0, "cnp_handled", "network", "nic",
                             Scope.of_nic(node, "mlx5_0", 1), True, False, 0.5, {}), out)
    c.prune(T0 + 2 * Thresholds().unit_idle_s)
    assert [f.scope.node for f in c._cnp.values()] == ["n05"]
