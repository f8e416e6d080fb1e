"""review29: a new maintainer's review of round 28's code (home28's home cluster and ClusterSlots,
b19fix's `_LayoutView.waiting`, q2clock, ojoin, review28's node-name / statecodec fixes), and
one of home29's rules landed meanwhile (1b).  Each finding's test fails on main d17c886 (round
29, home29's landings in); a finding left open is a strict xfail that says what is wrong and
where; the controls pass on both.  Ordered by what they would cost a user."""

from __future__ import annotations

import contextlib

import msgspec
import orjson
import pytest

from detector.engine import Engine
from detector.events import InvalidMessage
from detector.pipeline.clusters import MAX_CLUSTERS
from detector.pipeline.source import SourcePartition
from detector.testing import T0, step
from replay.runner import replay_log
from tests.test_home28 import EAST, EAST_SLURM, WEST, _ecc, _msg, _topology_of
from tests.test_liveness import NODES, fleet, silent_pages, write
from tests.test_silent19 import by_ts, steps

# -- 1. b19fix: a node lost in its job's idle spell waits for the 240 s path ------------------


def _lost_in_an_idle_spell(tmp_path, idle: tuple[float, float] | None) -> list:
    """job-1 steps on every node until 400 s; node-003 dies at 405 s under it and never comes
    back; the job's GPUs on the other nodes idle over ``idle`` (a checkpoint save, an eval's
    data wait: clock-event reason 0x1) and then spin busy in the collective for the lost peer
    -- no step after 400 s anywhere.  The silent-node pages."""
    recs = fleet(seconds=900, dead={"node-003": (405.0, 1e9)}, job=False, idle=idle)
    recs += steps("job-1", NODES, 0, 400)
    return silent_pages(replay_log(write(tmp_path, by_ts(recs))).alerts)


def test_a_node_lost_under_its_busy_job_is_paged_in_seconds(tmp_path) -> None:
    # (the control: no idle spell -- silent19's page, ~35 s after the death)
    pages = _lost_in_an_idle_spell(tmp_path, None)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", "node:node-003")]
    assert pages[0].detected_ts - (T0 + 405) <= 60


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "b19fix (round 28), open: detector/liveness.py _LayoutView.waiting counts a GPU as waiting "
    "on the quiet node only if busy without a break since the job's last step -- a node that "
    "dies while its job's GPUs idle a little (a checkpoint save, an eval's data wait: 30 s "
    "here) is then no loss, because the peers' spin in the collective for it begins after "
    "the idle spell: paged 252 s after its death by the slow path (1541298, before b19fix: 36 "
    "s).  README's 'a node dying under its running job still pages within seconds' holds "
    "only when the job never idled between its last step and the judgement.  The drain "
    "(blind19 O1) and this look alike at the judgement; a discriminator to try: a drained "
    "node's own GPUs were told idle before its last record (the job stopped on it first)"))
def test_a_node_lost_in_its_jobs_idle_spell_is_paged_in_seconds(tmp_path) -> None:
    pages = _lost_in_an_idle_spell(tmp_path, (400.0, 430.0))
    assert [(a.status, a.scope.key) for a in pages] == [("firing", "node:node-003")]
    assert pages[0].detected_ts - (T0 + 405) <= 60


# -- 1b. home29's rule (this round): one cluster value not named like the topology loses it -----


def _one_cluster(cluster: str | None) -> dict:
    """A stream whose records all carry ``cluster`` (or none), a faultline topology named
    `Topology=east` (as every bundled one is named after its hardware: h100-128 ...): a DBE --
    cluster -> the alert's topology."""
    eng = Engine(topology=EAST)
    alerts = []
    for ev in (_ecc(1_000.0, cluster), _ecc(1_001.0, cluster, dbe=True, node="gpu-002")):
        alerts += eng.process(ev)
    return _topology_of(alerts + eng.finish())


@pytest.mark.parametrize("cluster", [None, "east"])
def test_a_stream_of_the_topologys_own_cluster_keeps_the_topology(cluster) -> None:
    # (the controls: no `cluster` field, or the topology's own name)
    assert _one_cluster(cluster) == {cluster: "full"}


# (was a strict xfail on e1e69b0; home29b: the first value read is home again)
def test_a_stream_of_one_cluster_value_keeps_the_topology_whatever_its_name() -> None:
    assert _one_cluster("prod") == {"prod": "full"}


# -- 2. a configured home cluster is ignored after a restore ------------------------------------


def _restored(home: str | None) -> list:
    """A stage that read west first (no home configured, a topology naming no cluster -- a Slurm
    topology.conf: west took it), restored with ``home`` configured, then a DBE in each
    cluster: cluster -> the alert's topology."""
    eng = Engine(topology=EAST_SLURM)
    eng.process(_ecc(1_000.0, "west"))
    eng = Engine.restore(eng.snapshot(), EAST_SLURM, home_cluster=home)
    alerts = []
    for ev in [_ecc(1_001.0, "east", dbe=True, node="gpu-002"), _ecc(1_002.0, "west", dbe=True)]:
        alerts += eng.process(ev)
    return _topology_of(alerts + eng.finish())


def test_a_restore_with_no_home_configured_keeps_the_snapshots_home() -> None:
    # (the control: home28's rule -- a home once known is kept in the snapshot)
    assert _restored(None) == {"west": "nodes", "east": "none"}  # ("nodes": a Slurm topology's)


# (was a strict xfail on main e2bf9ae; home30: configuration wins, the units trade places)
def test_a_configured_home_wins_over_a_snapshot_that_took_another() -> None:
    assert _restored("east") == {"east": "nodes", "west": "none"}


# -- 3. the in-process Engine refuses a cluster the service takes --------------------------------


def _two_clocks() -> tuple[list, list]:
    """east (home) and west alternate, west's records stamped 400 s ahead of east's (its NTP
    source off, or its collectors' clocks): each cluster's DBE from its 41st record.  (Engine
    alerts' clusters, the service partition's findings' clusters.)"""
    evs = []
    for k in range(60):
        evs.append(_ecc(1_000.0 + 10 * k, "east", dbe=k >= 40, node="gpu-002"))
        evs.append(_ecc(1_400.0 + 10 * k, "west", dbe=k >= 40, node="gpu-003"))
    eng = Engine(topology=EAST, home_cluster="east")
    alerts = []
    for ev in evs:
        with contextlib.suppress(InvalidMessage):
            alerts += eng.process(ev)
    engine = sorted({a.cluster for a in alerts + eng.finish() if a.status == "firing"})
    src = SourcePartition("telemetry.ecc", 0, 1, topology=EAST, home="east")
    emits: list = []
    dead: list = []
    for k, ev in enumerate(evs):
        src.process([(k, b"x", _msg(ev), None)], 0.0, emits, dead)
    service = sorted({orjson.loads(e.value)["finding"]["cluster"] for e in emits
                      if orjson.loads(e.value)["type"] == "finding"})
    return engine, service


# (was a strict xfail on main e2bf9ae; home30: SourcePartition.admit_new)
def test_the_replay_takes_a_cluster_whose_clock_runs_ahead_of_the_home_as_the_service_does(
        ) -> None:
    engine, service = _two_clocks()
    assert service == ["east", "west"]  # (the service's stage: both clusters' DBEs found)
    assert engine == service


# -- 4. NaN rows under new cluster values take every cluster slot (fixed) ------------------------


def _nan_row(k: int, cluster: str) -> dict:
    value = {f: v for f, v in msgspec.structs.asdict(step(T0 + 1, 0, 1)).items()
             if v is not None}
    value.update(cluster=cluster, loss=float("nan"), job=f"job-{k}")
    return value


def test_nan_rows_under_new_cluster_values_leave_the_slots_to_real_clusters() -> None:
    # main bb06987: a step dead-lettered for a NaN loss is salvaged as a NonFinite into its
    # cluster's monitors (clu28, review28 finding 5) -- made for it when the cluster had none
    # (SourcePartition.monitors_of) and never given back: 15 such rows (one forged field each,
    # any producer) took every slot, and every record of a real second cluster was dead-lettered
    # too_many_clusters for good (review28 finding 6's hole, by the NaN door).  A NaN row now
    # joins only a cluster heard from (a dead-lettered row takes no slot).
    eng = Engine()
    eng.process(_ecc(T0, "east"))
    for k in range(MAX_CLUSTERS):
        with pytest.raises(InvalidMessage, match="loss"):
            eng.ingest("telemetry.step", _nan_row(k, f"junk-{k}"), [])
    assert list(eng.source.others) == []
    eng.process(_ecc(T0 + 2, "west"))  # (main: InvalidMessage too_many_clusters)
    assert list(eng.source.others) == ["west"]


def test_nan_rows_under_new_cluster_values_take_no_slot_in_the_service() -> None:
    src = SourcePartition("telemetry.step", 0, 1)
    def nan(value: dict) -> bytes:  # (orjson writes a NaN as null: the bytes a producer sent)
        return orjson.dumps({**value, "loss": "NaN"}).replace(b'"loss":"NaN"', b'"loss":NaN')
    rows = [orjson.dumps({**_nan_row(0, "east"), "loss": 1.0})]
    rows += [nan(_nan_row(k, f"junk-{k}")) for k in range(MAX_CLUSTERS)]
    rows.append(orjson.dumps({**_nan_row(99, "west"), "loss": 1.0}))
    dead: list = []
    for k, raw in enumerate(rows):
        src.process([(k, b"job", raw, None)], 0.0, [], dead)
    assert len(dead) == MAX_CLUSTERS and all("loss" in d.reason for d in dead)
    assert list(src.others) == ["west"] and src.too_many_clusters == 0


# -- 5. a home cluster no record can carry passes the settings (fixed) ---------------------------


@pytest.mark.parametrize("home", ["x" * 257, "east\t", "east\n"])
def test_a_home_cluster_no_record_can_carry_is_refused_when_the_settings_load(home) -> None:
    # main bb06987: Settings took any string; the worker started, and each partition's
    # assignment raised ValueError in ClusterSlots (check_home) -- first inside the snapshot
    # restore, where DetectorService._restore took it for a malformed snapshot (logged
    # "refused", counted, the partition's state thrown away), then again making the partition
    # afresh, out of the assignment callback.  (--home-cluster and FAULTLINE_HOME_CLUSTER
    # reach the same setting.)
    from detector.settings import Settings
    with pytest.raises(ValueError, match="home_cluster"):
        Settings.load(env={"FAULTLINE_HOME_CLUSTER": home})
    assert Settings.load(env={"FAULTLINE_HOME_CLUSTER": "east"}).home_cluster == "east"


# -- 6. replay --home-cluster naming one of a log's own clusters (fixed) ------------------------


def test_replay_home_cluster_may_name_a_cluster_whose_topology_the_log_holds(tmp_path) -> None:
    # main bb06987: with a log holding east's topology record then west's (home28's format),
    # `faultline replay LOG --home-cluster west` (or FAULTLINE_HOME_CLUSTER=west, the service's
    # setting exported in the shell) exited 2: "cluster 'west' is the home cluster: its
    # topology is the topology" -- the flag made west home, gave it the log's first topology
    # (east's) and still passed west's as another cluster's.  Now the flag only says which of
    # the log's clusters is home: each keeps the topology its record names.
    from detector.cli.main import main
    from replay.log import read_records
    path = tmp_path / "two.jsonl"
    recs = [{"topic": "topology", "value": {"format": "faultline", "text": EAST.text,
                                            "cluster": "east"}},
            {"topic": "topology", "value": {"format": "faultline", "text": WEST.text,
                                            "cluster": "west"}}]
    recs += [{"topic": "telemetry.ecc", "value": orjson.loads(_msg(ev))} for ev in (
        _ecc(1_000.0, "west", dbe=True), _ecc(1_001.0, "east"),
        _ecc(1_030.0, "east", dbe=True, node="gpu-002"))]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    out = tmp_path / "alerts.jsonl"
    assert main(["replay", str(path), "--quiet", "--alerts-out", str(out),
                 "--home-cluster", "west"]) == 0
    got = {r.value["cluster"]: r.value["evidence"]["conditions"]["topology"]
           for r in read_records(out) if r.value.get("status") == "firing"}
    assert got == {"west": "full", "east": "full"}


# -- 7. replay --topology drops the cluster the log's topology record names (fixed) -------------


def test_replay_topology_flag_keeps_the_cluster_the_logs_topology_record_names(tmp_path) -> None:
    # main bb06987: `faultline replay LOG --topology topology.conf` -- the very topology the
    # log's record carries, for east -- dropped the cluster the record names (README: the home
    # is the one named, "else a log's topology record's own cluster", ...): the home became
    # the first value read, west's DBE row, and east's topology went to west
    # (west's alerts `topology: nodes`, east's `none`).  --topology now stands for the record's
    # text only (and the log's other clusters' records still count).
    from detector.cli.main import main
    from replay.log import read_records
    path = tmp_path / "one.jsonl"  # (a Slurm topology.conf names no cluster: only the record)
    recs = [{"topic": "topology", "value": {"format": "slurm", "text": EAST_SLURM.text,
                                            "cluster": "east"}}]
    recs += [{"topic": "telemetry.ecc", "value": orjson.loads(_msg(ev))} for ev in (
        _ecc(1_000.0, "west", dbe=True), _ecc(1_001.0, "east"),
        _ecc(1_030.0, "east", dbe=True, node="gpu-002"))]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    (tmp_path / "topology.conf").write_text(EAST_SLURM.text)
    got = {}
    for flags in ([], ["--topology", str(tmp_path / "topology.conf")]):
        out = tmp_path / f"alerts{len(flags)}.jsonl"
        assert main(["replay", str(path), "--quiet", "--alerts-out", str(out), *flags]) == 0
        got[len(flags)] = {r.value["cluster"]: r.value["evidence"]["conditions"]["topology"]
                           for r in read_records(out) if r.value.get("status") == "firing"}
    assert got[0] == {"east": "nodes", "west": "none"}  # (the log's own topology: east's)
    assert got[2] == got[0]


# -- 8. a refused record decides the home cluster ------------------------------------------------


# (was a strict xfail on main e2bf9ae; home30: the home is settled once a record went in)
def test_a_refused_record_decides_no_home_cluster() -> None:
    src = SourcePartition("telemetry.ecc", 0, 1, topology=EAST_SLURM, wall_clock=lambda: 1_000.0)
    dead: list = []
    src.process([(0, b"x", _msg(_ecc(1_000.0 + 10 ** 6, "junk")), None)], 0.0, [], dead)
    assert len(dead) == 1 and "ts_out_of_range" in dead[0].reason
    assert src.cluster is None
