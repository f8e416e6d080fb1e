"""Room nicport, round 10: a fabric port slow from its first sample (issue 10).

Round 9's peer history (a port is judged low only once it ran at its node's pace) keeps a
quiet frontend or storage port from paging, and with it a port that never ran at pace: a
link that trained degraded after a reboot, or one already slow when the worker started.
What else tells the two apart (detector/network.py): the topology when it lists NICs, the
same port name on the worker's other nodes, and -- one node alone -- the node's own ports
(same name family and negotiated rate as a port at its pace).  These tests hold both
sides: the bad port is paged within a bound of samples, the quiet frontend never.
"""

from __future__ import annotations

from collections.abc import Callable

from detector.engine import Engine
from detector.events import InvalidMessage, NicSample
from detector.findings import Finding
from detector.monitors import Monitors
from detector.network import MAX_PORTS, NodeNics
from detector.port_names import PortNames
from detector.testing import T0, feed
from detector.thresholds import Thresholds
from detector.topology import Topology

CFG = Thresholds()
INTERVAL = 10.0
# Within how many samples of its node's first a port slow from the start is paged: the
# first sample has no rate, the second sets the node's reference, then five low samples
# (nic_throughput_samples) -- one more when its name's other nodes report after it.
PAGED_WITHIN = 8

Rate = Callable[[str, int], float]  # (node, sample index) -> Gb/s


def sample(ts: float, node: str, nic: str, total_bytes: int, rate_gbps: float | None
           ) -> NicSample:
    half = total_bytes // 2
    return NicSample(ts=ts, node=node, nic=nic, port=1, link_state="up", rate_gbps=rate_gbps,
                     tx_bytes=half, rx_bytes=half, symbol_errors=0, link_downed=0,
                     rcv_errors=0, xmit_discards=0, xmit_wait=0, out_of_sequence=0,
                     packet_seq_err=0, np_cnp_sent=0, rp_cnp_handled=0, cluster="c1")


def fleet(nodes: list[str], ports: dict[str, tuple[float | None, Rate]], samples: int,
          *, interval: float = INTERVAL) -> list[NicSample]:
    """Every node's ports, each ``name -> (rate_gbps, gbps(node, i))``, sampled every
    ``interval`` s at the node's own phase, in time order."""
    out = []
    for n, node in enumerate(nodes):
        phase = 0.37 * n % interval
        total = dict.fromkeys(ports, 0)
        for i in range(samples):
            ts = T0 + phase + i * interval
            for k, (name, (rate, gbps)) in enumerate(ports.items()):
                total[name] += int(gbps(node, i) * interval / 8 * 1e9)
                out.append(sample(ts + 0.001 * k, node, name, total[name], rate))
    return sorted(out, key=lambda s: s.ts)


def at(gbps: float) -> Rate:
    return lambda node, i: gbps


def bad_on(bad: str, good: float = 75.0, slow: float = 4.0) -> Rate:
    return lambda node, i: slow if node == bad else good


def low_findings(events: list[NicSample], topology: Topology | None = None,
                 monitors: Monitors | None = None) -> list[Finding]:
    mon = monitors or Monitors(CFG, topology)
    out: list[Finding] = []
    for ev in events:
        mon.process(ev, out)
    return [f for f in out if f.signal == "nic_throughput" and f.active]


def samples_to_page(f: Finding, node_phase: float = 0.0) -> int:
    """The sample (1-based, of the port's node) whose finding paged it."""
    return round((f.ts - T0 - node_phase) / INTERVAL) + 1


NODES = [f"dgx{n:03d}" for n in range(8)]


QUIET = at(0.6)


def dgx(bad: Rate, storage: Rate = QUIET, *, bad_rate: float = 400.0,
        storage_rate: float = 400.0) -> dict[str, tuple[float | None, Rate]]:
    """A DGX-like node: 8 compute ports mlx5_0..7 at 400G (mlx5_5 as ``bad`` says, at
    ``bad_rate``), and two storage ports mlx5_8/9, 400G too, carrying little."""
    ports: dict[str, tuple[float | None, Rate]] = {
        f"mlx5_{k}": (400.0, at(75.0)) for k in range(8)}
    ports["mlx5_5"] = (bad_rate, bad)
    ports["mlx5_8"] = ports["mlx5_9"] = (storage_rate, storage)
    return ports


# -- across the nodes a worker sees -------------------------------------------------------

def test_a_storage_port_quiet_on_every_node_from_the_first_sample_is_never_paged() -> None:
    # Storage ports at the fabric's rate and family (a DGX's are 400G mlx5_N too), quiet on
    # all 8 nodes for 30 minutes: their name is quiet everywhere, nobody is paged.
    events = fleet(NODES, dgx(at(75.0)), 180)
    assert low_findings(events) == []
    alerts = feed(Engine(topology=Topology.from_text(
        "SwitchName=leaf0 Nodes=dgx[000-007]\n")), events)
    assert [a for a in alerts if a.status == "firing"] == []


def test_a_fabric_port_slow_from_its_first_sample_beside_its_name_at_pace_is_paged() -> None:
    # dgx003's mlx5_5 trained at 1x width (100G of 400G) and carries 4 Gb/s from its first
    # sample; mlx5_5 runs at 75 on the 7 other nodes.  One node alone would not judge it (a
    # lower rate could be a frontend port); its name on the other nodes does.
    events = fleet(NODES, dgx(bad_on("dgx003"), bad_rate=100.0), 60)
    found = low_findings(events)
    assert [f.scope.key for f in found] == ["nic:dgx003/mlx5_5:1"]
    assert samples_to_page(found[0], 0.37 * 3) <= PAGED_WITHIN
    assert found[0].evidence["judged_because"] == (
        "its name runs at its node's pace on 7 of 7 other nodes")
    assert found[0].evidence["node_median_gbps"] > 50


def test_on_a_node_of_two_fabric_ports_and_a_frontend_the_slow_fabric_port_is_paged() -> None:
    # hgx-like nodes: mlx5_0/1 RoCE fabric at 400G, mlx5_2 a 100G frontend at 0.4 Gb/s;
    # hgx2's mlx5_1 slow from the first sample.  Its node's median of three ports is the
    # slow port itself: the reference is the ports known to carry the job's traffic.
    nodes = [f"hgx{n}" for n in range(4)]
    ports: dict[str, tuple[float | None, Rate]] = {
        "mlx5_0": (400.0, at(75.0)), "mlx5_1": (400.0, bad_on("hgx2")),
        "mlx5_2": (100.0, at(0.4))}
    found = low_findings(fleet(nodes, ports, 60))
    assert [f.scope.key for f in found] == ["nic:hgx2/mlx5_1:1"]
    assert samples_to_page(found[0], 0.37 * 2) <= PAGED_WITHIN


def test_a_storage_port_busy_on_one_node_does_not_make_its_name_a_fabric_one() -> None:
    # One node writes a checkpoint through its storage ports at the fabric's pace; the
    # other 7 nodes' storage ports stay quiet and are still not judged.
    busy_storage = bad_on("dgx000", good=0.6, slow=80.0)
    assert low_findings(fleet(NODES, dgx(at(75.0), busy_storage), 90)) == []


def test_two_workers_each_seeing_some_nodes_agree_with_one() -> None:
    # The service partitions nodes over workers: each sees a random subset, and judges by
    # the names of the nodes it sees.  Any subset of two or more nodes gives the same pages.
    events = fleet(NODES, dgx(bad_on("dgx006"), bad_rate=100.0), 60)
    one = [f.scope.key for f in low_findings(events)]
    for part in ({"dgx001", "dgx006"}, {"dgx000", "dgx002", "dgx004", "dgx007"}):
        got = [f.scope.key for f in low_findings([e for e in events if e.node in part])]
        assert got == [k for k in one if k.split(":")[1].split("/")[0] in part]
    assert one == ["nic:dgx006/mlx5_5:1"]


# -- a worker that sees one node only: its own ports -------------------------------------

def test_one_node_alone_judges_a_port_of_its_fabric_ports_family_and_rate() -> None:
    # The review's case (tests/test_review_round9.py) with a storage pair beside it: mlx5_5
    # at 400G like the ports at pace is judged; the storage ports too (nothing on one node
    # tells them from it) -- unless their rate differs, or another node reports their name.
    events = [e for e in fleet(NODES, dgx(bad_on("dgx004"), storage_rate=200.0), 40)
              if e.node == "dgx004"]
    found = low_findings(events)
    assert [f.scope.key for f in found] == ["nic:dgx004/mlx5_5:1"]
    assert samples_to_page(found[0], 0.37 * 4) <= PAGED_WITHIN
    assert found[0].evidence["judged_because"] == (
        "same name family and negotiated rate (400 Gb/s) as the node's ports at its pace")


def test_one_node_alone_does_not_judge_a_slower_or_other_family_port() -> None:
    # A 100G frontend mlx5_2 beside 400G rails (blind's F1), an eth0 and a bond0 at the same
    # 400G beside mlx5_N, a port with no rate_gbps: none is judged on one node.
    ports: dict[str, tuple[float | None, Rate]] = {
        f"mlx5_{k}": (400.0, at(75.0)) for k in range(2)}
    ports.update({"mlx5_2": (100.0, at(0.4)), "eth0": (400.0, at(0.2)),
                  "bond0": (400.0, at(1.0)), "mlx5_3": (None, at(0.3))})
    assert low_findings(fleet(["hgx0"], ports, 60)) == []


def test_a_name_seen_on_one_other_node_decides_against_the_node_s_own_evidence() -> None:
    # Two nodes: the storage ports (400G, mlx5_8/9) are quiet on both, so neither node
    # judges them, though one node alone would (test above).
    events = [e for e in fleet(NODES, dgx(at(75.0)), 60) if e.node in ("dgx000", "dgx001")]
    assert low_findings(events) == []


# -- the topology, when it lists NICs -----------------------------------------------------

TOPO = Topology.from_text("""
Topology=t Version=1
NodeSet=dgx[000-007] Gpus=8 Nics=mlx5_[0-9]
SwitchName=leaf[0-1] Nodes=dgx[000-007]
""")


def test_the_topology_says_which_nics_carry_the_job_s_traffic() -> None:
    # mlx5_0..7 are the GPUs' NICs, mlx5_8/9 listed after them (storage): on one node alone,
    # a GPU NIC trained at 100G and slow from its first sample is paged, and the storage
    # ports at 400G are not -- the opposite of what its rates alone would say.
    events = [e for e in fleet(NODES, dgx(bad_on("dgx002"), bad_rate=100.0), 40)
              if e.node == "dgx002"]
    found = low_findings(events, TOPO)
    assert [f.scope.key for f in found] == ["nic:dgx002/mlx5_5:1"]
    assert found[0].evidence["judged_because"] == "the topology lists it as a fabric port"


# -- state: shared, snapshotted, bounded ---------------------------------------------------

def test_the_name_table_survives_a_snapshot_shared_by_every_node() -> None:
    # (dgx005's mlx5_5 at its node's pace for its first three samples, then at 4 Gb/s: judged
    # by its name's standing, its own pace too short to be a peer's.  Slow from its very first
    # sample it is a port of unknown demand with port rows alone -- an idle GPU's, a light
    # tenant's -- and pages nobody since round 39: correlate.ports._demand_unknown.)
    events = fleet(NODES, dgx(lambda node, i: 4.0 if node == "dgx005" and i >= 3 else 75.0,
                              bad_rate=100.0), 40)
    whole = feed(Engine(), events)
    eng = Engine()
    half = len(events) // 5  # after every node's 5th sample: votes counted, nothing paged
    alerts = feed(eng, events[:half], finish=False)
    blob = eng.snapshot()
    eng = Engine.restore(blob)
    mon = eng.monitors
    names = mon._port_names
    assert all(n._names is names for n in mon._nics.values())
    mon.check_restored()
    e = names._names[("c1", "mlx5_5", 1)]
    assert (e.pace, e.low) == (7, 1)
    assert eng.snapshot() == blob
    alerts += feed(eng, events[half:])
    key = [(a.status, a.scope.key, a.detection_latency_s) for a in whole]
    assert [(a.status, a.scope.key, a.detection_latency_s) for a in alerts] == key
    assert [k for s, k, _ in key if s == "firing"] == ["nic:dgx005/mlx5_5:1"]


def test_ten_thousand_port_names_stay_bounded_and_keep_the_real_ones() -> None:
    # 8 nodes report their real ports; then one node's telemetry turns hostile: 10,000
    # distinct port names, each carrying nothing.  The name table stays at nic_port_names,
    # the real names (every node behind them) stay in it, and a fabric port going slow
    # after the flood is still judged by its name.
    mon = Monitors(CFG)
    good = fleet(NODES, dgx(at(75.0)), 20)
    out: list[Finding] = []
    for ev in good:
        mon.process(ev, out)
    t = good[-1].ts + 1.0
    refused = 0
    for k in range(10_000):
        try:
            mon.process(sample(t + k * 1e-3, "dgx000", f"junk{k}", 0, 400.0), out)
        except InvalidMessage:  # (past the node's MAX_PORTS: dead-lettered -- review25)
            refused += 1
        assert len(mon._port_names) <= CFG.nic_port_names
    assert refused >= 10_000 - MAX_PORTS
    kept = mon._port_names._names
    assert all(("c1", f"mlx5_{k}", 1) in kept for k in range(10))
    assert kept[("c1", "mlx5_5", 1)].pace == 8
    # A ninth node joins with mlx5_5 at 100G and slow: judged by its name, paged.
    late = fleet(["dgx100"], dgx(at(4.0), bad_rate=100.0), 20)
    late = [NicSample(**{**{f: getattr(e, f) for f in e.__struct_fields__},
                         "ts": e.ts + t + 20.0 - T0}) for e in late]
    assert [f.scope.key for f in low_findings(late, monitors=mon)] == ["nic:dgx100/mlx5_5:1"]


def test_a_forgotten_node_takes_its_votes_with_it() -> None:
    mon = Monitors(CFG)
    out: list[Finding] = []
    for ev in fleet(NODES[:3], dgx(at(75.0)), 10):
        mon.process(ev, out)
    e = mon._port_names._names[("c1", "mlx5_0", 1)]
    assert (e.pace, e.low) == (3, 0)
    mon.advance(T0 + 100.0 + CFG.unit_idle_s, out)
    mon.prune_units()
    assert mon._nics == {} and (e.pace, e.low) == (0, 0)


def test_a_node_alone_has_its_own_table() -> None:
    a, b = NodeNics("a"), NodeNics("b")
    assert a._names is not b._names and type(a._names) is PortNames


def test_a_run_of_low_samples_counts_only_while_the_port_is_judged() -> None:
    # Two nodes: dgx001's storage ports run at the fabric's pace in two bursts of 3 samples
    # (say a rank writing a checkpoint while the job trains), 6 samples apart: meanwhile
    # dgx000's quiet storage ports are judged by their name (1 of 1 other nodes at pace) and
    # counted low -- 3 samples, then 3 again: never 5 in a row, never paged.
    def bursts(node: str, i: int) -> float:
        return 80.0 if node == "dgx001" and (10 <= i < 13 or 19 <= i < 22) else 0.6

    events = fleet(["dgx000", "dgx001"], dgx(at(75.0), bursts), 40)
    assert low_findings(events) == []
