"""home28 (round 28): which cluster a topology, and a record without `cluster`, belong to.

A unit is (cluster, node) (clusters27): each stage keeps its *home* cluster's monitors /
correlator -- the topology's, and every record's with no `cluster` -- and one per other value.
Round 27 took the home from the first value each stage read; in the service each telemetry
partition and each findings partition decided alone, so a correlator could take another home
than the monitors feeding it (the topology then applied to the wrong cluster).  Now the home is
the configured one (``--home-cluster``, ``[service] home_cluster``), else a log's topology
record's own ``cluster``, else the first value read -- one rule (detector.pipeline.clusters) in
both stages and both drivers, and kept in the snapshot once known.
"""

from __future__ import annotations

import orjson
import pytest

from detector.engine import Engine
from detector.events import ECC, EccSample
from detector.pipeline.clusters import ClusterSlots, check_home
from detector.pipeline.source import SourcePartition, findings_partition
from detector.pipeline.worker import PipelineWorker
from detector.statecodec import UNSIGNED, SnapshotRefused
from detector.topology import Topology

EAST = Topology.from_text("""Topology=east Version=1
NodeSet=gpu-[001-008] Gpus=8 Nics=mlx5_[0-7]
Rack=rack-e[1-2] Nodes=gpu-[001-008]
SwitchName=leaf-e[1-2] Nodes=gpu-[001-008]
SwitchName=spine-e Switches=leaf-e[1-2]
""")


def _ecc(ts: float, cluster: str | None, *, dbe: bool = False, node: str = "gpu-004"
         ) -> EccSample:
    if dbe:
        return EccSample(ts, node, 3, 0, 1, 0, 1, True, False, 48, 0, 0, 0, 0, "none",
                         cluster=cluster)
    return EccSample(ts, node, 3, 0, 0, 0, 0, False, False, None, 0, 0, 0, 0, "none",
                     cluster=cluster)


def _msg(ev: EccSample) -> bytes:
    d = {k: v for k, v in ev._asdict().items() if v is not None}
    return orjson.dumps(d)


def _topology_of(alerts: list) -> dict[str | None, str]:
    """cluster -> the alert's topology condition (full: the topology applied; none: not)."""
    return {a.cluster: a.evidence["conditions"]["topology"] for a in alerts
            if a.status == "firing"}


def _west_first() -> list[EccSample]:
    """West's DBE is the first record with a cluster; east's comes after."""
    return [_ecc(1_000.0, "west", dbe=True), _ecc(1_001.0, "east"),
            _ecc(1_030.0, "east", dbe=True, node="gpu-002")]


# -- the in-process Engine ------------------------------------------------------------------


# (the same fabric as a Slurm topology.conf, which names no cluster: home29)
EAST_SLURM = Topology.from_text("SwitchName=leaf-e1 Nodes=gpu-[001-004]\n"
                                "SwitchName=leaf-e2 Nodes=gpu-[005-008]\n"
                                "SwitchName=spine-e Switches=leaf-e[1-2]\n")


def test_first_value_read_is_home_without_configuration():
    """Round 27's rule, kept when nothing says otherwise -- a topology that names no cluster
    (home29: a faultline topology's `Topology=NAME` does): the control of the test below."""
    eng = Engine(topology=EAST_SLURM)
    alerts = []
    for ev in _west_first():
        alerts += eng.process(ev)
    assert eng.source.cluster == eng.stage.cluster == "west"
    assert _topology_of(alerts) == {"west": "nodes", "east": "none"}  # (no NICs named)


def test_a_configured_home_takes_the_topology_whoever_comes_first():
    eng = Engine(topology=EAST, home_cluster="east")
    alerts = []
    for ev in _west_first():
        alerts += eng.process(ev)
    alerts += eng.finish()
    assert eng.source.cluster == eng.stage.cluster == "east"
    assert sorted(eng.source.others) == sorted(eng.stage.others) == ["west"]
    assert _topology_of(alerts) == {"west": "none", "east": "full"}


def test_records_without_cluster_join_the_configured_home():
    eng = Engine(topology=EAST, home_cluster="east")
    eng.process(_ecc(1_000.0, "west"))
    alerts = eng.process(_ecc(1_001.0, None, dbe=True))
    # (named the home's since key43: one unit, one key whichever row named it -- blind33 F6)
    assert [(a.cluster, a.evidence["conditions"]["topology"]) for a in alerts] == [
        ("east", "full")]


def test_a_restored_stage_keeps_its_home():
    """A stage that read only east's records, snapshotted and restored, does not take the next
    value it reads (west's) for its home: round 27 saved the home only when split, and a
    restored engine then merged west's units into east's (the topology's) monitors."""
    eng = Engine(topology=EAST)
    eng.process(_ecc(1_000.0, "east"))
    eng = Engine.restore(eng.snapshot(), EAST)
    assert eng.source.cluster == eng.stage.cluster == "east"
    alerts = eng.process(_ecc(1_001.0, "west", dbe=True))
    assert eng.stats()["clusters"] == 2
    assert _topology_of(alerts) == {"west": "none"}


def test_a_round27_snapshot_restores_and_a_forged_home_is_refused():
    eng = Engine()
    eng.process(_ecc(1_000.0, "east"))
    state = UNSIGNED.decode(eng.snapshot(), "engine")
    assert state["source"]["cluster"] == state["correlator"]["cluster"] == "east"
    for part in ("source", "correlator"):  # round 27's shape: no home key unless split
        del state[part]["cluster"]
    old = Engine.restore(UNSIGNED.encode(state, "engine"))
    assert old.source.cluster is None and "others" not in old.source.state()
    assert Engine.restore(UNSIGNED.encode(state, "engine"),
                          home_cluster="east").source.cluster == "east"
    state["source"]["cluster"] = 3
    with pytest.raises(SnapshotRefused):
        Engine.restore(UNSIGNED.encode(state, "engine"))


def test_a_stream_without_cluster_snapshots_as_before():
    eng = Engine(topology=EAST_SLURM)  # (EAST names its cluster: its home is known at once)
    eng.process(_ecc(1_000.0, None))
    state = UNSIGNED.decode(eng.snapshot(), "engine")
    assert "cluster" not in state["source"] and "cluster" not in state["correlator"]


@pytest.mark.parametrize("bad", ["", "a\x1bb", "x" * 257, "east\u202e"])
def test_a_home_no_record_could_carry_is_refused(bad: str):
    with pytest.raises(ValueError, match="home cluster"):
        check_home(bad)
    with pytest.raises(ValueError, match="home cluster"):
        Engine(home_cluster=bad)


def test_cluster_slots_home_is_configured_or_first_read():
    slots = ClusterSlots(lambda c: [c], home="east")
    assert not slots.is_home("west") and slots.is_home("east") and slots.is_home(None)
    assert slots.other("west") == ["west"] and slots.cluster == "east"
    assert slots.one_value({"east", None}) and not slots.one_value({"west"})


# -- the service's stages ---------------------------------------------------------------------


def _worker(home: str | None, partitions: int = 1) -> PipelineWorker:
    w = PipelineWorker(telemetry_topics={ECC: ECC}, findings_topic="findings",
                       findings_partitions=partitions,
                       expected_sources=[f"{ECC}:0", f"{ECC}:1"], topology=EAST,
                       hold_back_s=0.25, idle_advance_s=2.0, home_cluster=home)
    w.sources = {(ECC, p): w.new_partition((ECC, p), 0.0) for p in (0, 1)}  # type: ignore
    w.correlators = {("findings", 0): w.new_partition(("findings", 0), 0.0)}  # type: ignore
    return w


def _service_run(home: str | None) -> tuple[PipelineWorker, list]:
    """Partition 1 holds west's rows, partition 0 east's; the findings partition reads west's
    DBE first (its worker fetched partition 1 first) while the topology is east's."""
    w = _worker(home)
    return w, _drive(w)


def _drive(w: PipelineWorker, feeds: list[dict] | None = None) -> list:
    """``feeds`` (batches of telemetry partitions' rows): west's then east's by default."""
    findings: list[tuple[bytes, bytes]] = []
    alerts: list = []
    pos = 0
    now = 0.0

    def take(out) -> None:
        findings.extend((e.key, e.value) for e in out.findings)
        alerts.extend(a for a, _ in out.alerts)

    feeds = feeds or [
        {(ECC, 1): [(0, b"gpu-004", _msg(_ecc(1_000.0, "west", dbe=True)), None)]},
        {(ECC, 0): [(0, b"gpu-004", _msg(_ecc(1_001.0, "east")), None),
                    (1, b"gpu-002", _msg(_ecc(1_030.0, "east", dbe=True,
                                              node="gpu-002")), None)]},
        {(ECC, 1): [(1, b"gpu-004", _msg(_ecc(1_031.0, "west")), None)]}]
    for batch in feeds + [{}] * 40:
        now += 0.5
        if batch:
            take(w.process(batch, now, lambda tp, off: True))
        take(w.heartbeat(now, lambda tp, off: True))
        new = [(pos + i, k, v, None) for i, (k, v) in enumerate(findings[pos:])]
        pos = len(findings)
        if new:
            take(w.process({("findings", 0): new}, now, lambda tp, off: True))
        else:
            take(w.release_all(now))
    return alerts


def test_the_service_stages_take_the_configured_home():
    w, alerts = _service_run("east")
    corr = w.correlators[("findings", 0)]
    assert corr.cluster == "east" and list(corr.others) == ["west"]
    assert {p.cluster for p in w.sources.values()} == {"east"}
    assert _topology_of(alerts) == {"west": "none", "east": "full"}


# (a strict xfail until home30: each partition kept the first value it read -- the findings
# partition that read west's DBE first gave west east's topology.  Now a stage moves its home
# to the cluster the topology names itself, `Topology=east`, at that cluster's first record:
# before anything was released here.)
def test_the_service_stages_without_configuration_agree():
    w, alerts = _service_run(None)
    assert _topology_of(alerts) == {"west": "none", "east": "full"}
    corr = w.correlators[("findings", 0)]
    assert corr.cluster == "east" and list(corr.others) == ["west"]
    # (a telemetry partition that never read east keeps the first value it read)
    assert [w.sources[(ECC, p)].cluster for p in (0, 1)] == ["east", "west"]


def test_a_finding_without_cluster_goes_to_the_homes_findings_partition():
    parts = 8
    assert findings_partition("east", parts) != findings_partition(None, parts)
    for topo, home, want in ((EAST_SLURM, None, findings_partition(None, parts)),
                             (EAST, None, findings_partition(None, parts)),  # (home29b)
                             (EAST, "east", findings_partition("east", parts))):
        src = SourcePartition(ECC, 0, parts, topology=topo, home=home)
        emits: list = []
        src.process([(0, b"gpu-004", _msg(_ecc(1_000.0, None, dbe=True)), None)], 1.0,
                    emits, [])
        found = [e for e in emits if orjson.loads(e.value)["type"] == "finding"]
        assert found and {e.partition for e in found} == {want}
        seen = [e for e in emits if orjson.loads(e.value)["type"] == "seen"]
        assert seen and {e.partition for e in seen} == {want}


# -- configuration: replay, settings ---------------------------------------------------------


def _log(tmp_path, *, cluster: str | None) -> str:
    topo = {"format": "faultline", "text": EAST.text}
    if cluster is not None:
        topo["cluster"] = cluster
    recs = [{"topic": "topology", "value": topo}]
    recs += [{"topic": ECC, "value": orjson.loads(_msg(ev))} for ev in _west_first()]
    path = tmp_path / "two.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    return str(path)


@pytest.mark.parametrize(("record", "flag", "home"), [
    (None, None, "east"),        # Topology=east, once east is read (home30: west's DBE first)
    ("east", None, "east"),      # the topology record's own cluster
    (None, "east", "east"),      # --home-cluster
    ("west", "east", "east"),    # --home-cluster wins over the record's
])
def test_replay_takes_the_home_from_the_flag_or_the_topology_record(tmp_path, record, flag,
                                                                     home):
    from detector.cli.main import main
    from replay.log import log_head, read_records
    path = _log(tmp_path, cluster=record)
    assert log_head(path)[1] == record
    out = tmp_path / "alerts.jsonl"
    argv = ["replay", path, "--quiet", "--alerts-out", str(out)]
    if flag:
        argv += ["--home-cluster", flag]
    assert main(argv) == 0
    got = {r.value["cluster"]: r.value["evidence"]["conditions"]["topology"]
           for r in read_records(out) if r.value.get("status") == "firing"}
    first = {"west"} if (record, flag) == (None, None) else set()  # (paged before the move)
    assert got[home] == "full" and all(
        v == "none" for c, v in got.items() if c != home and c not in first)


def test_a_topology_record_with_a_bad_cluster_names_the_log(tmp_path):
    from detector.topology import TopologyError
    from replay.log import log_head
    with pytest.raises(TopologyError, match="cluster"):
        log_head(_log(tmp_path, cluster="a\x1bb"))


def test_the_setting_reaches_the_worker():
    from detector.settings import Settings
    s = Settings.load(env={"FAULTLINE_HOME_CLUSTER": "east"})
    assert s.home_cluster == "east"
    assert "home_cluster" in s.to_toml()


# -- one topology per cluster ----------------------------------------------------------------

WEST = Topology.from_text("""Topology=west Version=1
NodeSet=gpu-[001-008] Gpus=8 Nics=mlx5_[0-7]
SwitchName=leaf-w1 Nodes=gpu-[001-008]
""")


def test_another_cluster_runs_with_its_own_topology():
    eng = Engine(topology=EAST, home_cluster="east", topologies={"west": WEST})
    alerts = []
    for ev in _west_first():
        alerts += eng.process(ev)
    assert eng.source.others["west"].topology is WEST
    assert eng.stage.others["west"][0].topology is WEST
    assert _topology_of(alerts) == {"west": "full", "east": "full"}


def test_a_restored_other_cluster_gets_its_topology_back():
    eng = Engine(topology=EAST, home_cluster="east", topologies={"west": WEST})
    eng.process(_ecc(1_000.0, "west"))
    eng = Engine.restore(eng.snapshot(), EAST, home_cluster="east", topologies={"west": WEST})
    assert eng.source.others["west"].topology is WEST
    assert eng.stage.others["west"][0].topology is WEST
    assert _topology_of(eng.process(_ecc(1_001.0, "west", dbe=True))) == {"west": "full"}


@pytest.mark.parametrize(("home", "topologies"), [
    (None, {"west": WEST}),      # no home named (nor by the topology): the first value read
    ("east", {"east": WEST}),    # the home's topology is the topology
    ("east", {"": WEST}),        # no cluster value
])
def test_a_topology_per_cluster_is_refused_when_it_cannot_be_placed(home, topologies):
    with pytest.raises(ValueError):
        Engine(topology=EAST_SLURM, home_cluster=home, topologies=topologies)
    with pytest.raises(ValueError):
        PipelineWorker(telemetry_topics={ECC: ECC}, findings_topic="findings",
                       findings_partitions=1, home_cluster=home, topologies=topologies)


def test_the_service_stages_give_each_cluster_its_topology():
    w = _worker("east")
    w.topologies = {"west": WEST}
    w.sources = {(ECC, p): w.new_partition((ECC, p), 0.0) for p in (0, 1)}  # type: ignore
    w.correlators = {("findings", 0): w.new_partition(("findings", 0), 0.0)}  # type: ignore
    alerts = _drive(w)
    assert _topology_of(alerts) == {"west": "full", "east": "full"}


def test_replay_reads_a_topology_record_per_cluster(tmp_path):
    from detector.cli.main import main
    from replay.log import log_head, read_records
    path = tmp_path / "two.jsonl"
    recs = [{"topic": "topology", "value": {"format": "faultline", "text": EAST.text,
                                            "cluster": "east"}},
            {"topic": "topology", "value": {"format": "faultline", "text": WEST.text,
                                            "cluster": "west"}}]
    recs += [{"topic": ECC, "value": orjson.loads(_msg(ev))} for ev in _west_first()]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    head = log_head(path)
    assert head.cluster == "east" and list(head.others) == ["west"]
    out = tmp_path / "alerts.jsonl"
    assert main(["replay", str(path), "--quiet", "--alerts-out", str(out)]) == 0
    got = {r.value["cluster"]: r.value["evidence"]["conditions"]["topology"]
           for r in read_records(out) if r.value.get("status") == "firing"}
    assert got == {"west": "full", "east": "full"}
    # --cluster-topology, with --topology and --home-cluster: the same
    (tmp_path / "east.topo").write_text(EAST.text)
    (tmp_path / "west.topo").write_text(WEST.text)
    out2 = tmp_path / "alerts2.jsonl"
    assert main(["replay", str(path), "--quiet", "--alerts-out", str(out2), "--topology",
                 str(tmp_path / "east.topo"), "--home-cluster", "east", "--cluster-topology",
                 f"west={tmp_path / 'west.topo'}"]) == 0
    assert {r.value["cluster"]: r.value["evidence"]["conditions"]["topology"]
            for r in read_records(out2) if r.value.get("status") == "firing"} == got


def test_a_second_topology_record_must_name_its_cluster(tmp_path):
    from detector.topology import TopologyError
    from replay.log import log_head
    path = tmp_path / "x.jsonl"
    recs = [{"topic": "topology", "value": {"format": "faultline", "text": EAST.text,
                                            "cluster": "east"}},
            {"topic": "topology", "value": {"format": "faultline", "text": WEST.text}}]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    with pytest.raises(TopologyError, match="cluster"):
        log_head(path)


def test_cluster_topologies_setting_and_entries(tmp_path):
    from detector.settings import Settings
    from detector.topology import load_by_cluster
    (tmp_path / "west.topo").write_text(WEST.text)
    s = Settings.load(env={"FAULTLINE_HOME_CLUSTER": "east",
                           "FAULTLINE_CLUSTER_TOPOLOGIES": f"west={tmp_path / 'west.topo'}"})
    assert load_by_cluster(s.cluster_topologies)["west"].name == "west"
    for bad in (["west"], ["=x"], [f"west={tmp_path / 'west.topo'}"] * 2):
        with pytest.raises(ValueError):
            load_by_cluster(bad)
