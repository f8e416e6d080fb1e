"""home29 (round 29): the service's cluster split, open ends (issue 14: one path).

1. A home cluster quiet > 300 s while another cluster keeps the stream's time: its next record
   is judged against the stream's time, in both drivers -- :meth:`SourcePartition.feed` is the
   one way an admitted record goes into its unit's monitors (the service's ``process``, the
   Engine's ``process``), and the Engine's event-time guard (``admit``) reads the stream's
   clock, not the home's.  (The service's case is tests/test_review28.py's, no longer xfail.)
2. Unconfigured, every stage takes the same home without coordination: the topology's own name
   when it names itself (a faultline topology's ``Topology=NAME``; the simulator stamps its
   records with it), else the first value read -- and a stage whose home nobody named says
   so once in the log when it keeps a second cluster apart while it has a topology.
   (The service's case is tests/test_home28.py's _service_run, no longer xfail.)
3. A slot given back: with every one of MAX_CLUSTERS taken, a record of one more cluster takes
   the slot of another that is spent -- quiet long enough, nothing open: in the source, its
   monitors, run on to the stream's time, hold no unit or job (all pruned after their silence);
   in the correlator, no node of it seen, no finding for unit_idle_s, no timer, no page
   firing.  What it knew goes with it: if it comes back, it starts afresh.
"""

from __future__ import annotations

import logging

import msgspec
import orjson
import pytest

import detector.pipeline.clusters as clusters
from detector.engine import Engine
from detector.events import ECC, EccSample, InvalidMessage
from detector.monitors import Monitors
from detector.pipeline.clusters import MAX_CLUSTERS, ClusterSlots, home_of, topology_home
from detector.pipeline.source import SourcePartition
from detector.statecodec import UNSIGNED, SnapshotRefused
from detector.topology import Topology
from tests.test_home28 import EAST, EAST_SLURM, _log, _topology_of, _west_first


def _ecc(ts: float, node: str, cluster: str | None, dbe: int = 0) -> EccSample:
    return EccSample(ts, node, 3, 0, dbe, 0, dbe, bool(dbe), False, 48 if dbe else None,
                     0, 0, 0, 0, "none", cluster=cluster)


def _raw(ev: EccSample) -> bytes:
    return orjson.dumps({k: v for k, v in msgspec.structs.asdict(ev).items() if v is not None})


def _west_quiet() -> list[EccSample]:
    """east keeps the time (a row each 10 s from 1000; a DBE from 1370 on, while west is quiet
    since 1051), west's gpu-005 quiet 940 s then a DBE row at 2001."""
    evs = [_ecc(1_000.0 + 10 * k, "gpu-004", "east", dbe=int(k >= 37)) for k in range(110)]
    evs += [_ecc(1_001.0 + 10 * k, "gpu-005", "west") for k in range(6)]
    evs += [_ecc(2_001.0, "gpu-005", "west", dbe=1)]
    evs.sort(key=lambda e: e.ts)
    return evs


# -- 1. a quiet home cluster ------------------------------------------------------------------


def _engine_alerts(home: str | None) -> list[tuple[float, str, str | None]]:
    """(ts of the record whose process() returned it, scope, cluster) of each alert."""
    eng = Engine(home_cluster=home)
    out = []
    for ev in _west_quiet():
        out += [(ev.ts, a.scope.key, a.cluster) for a in eng.process(ev)]
    assert not eng.rejected and not eng.source.held
    return out


def test_the_engine_takes_another_clusters_record_at_once_while_the_home_is_quiet() -> None:
    # On main the Engine's guard read the home's clock: east's rows more than 300 s past
    # west's (quiet) clock were held until three agreed, and east's DBE at 1370 was told
    # with the row of 1380 -- late, not lost.  The stream's time is east's: nothing waits.
    want = [(1_370.0, "gpu:gpu-004/3", "east"), (2_001.0, "gpu:gpu-005/3", "west")]
    assert _engine_alerts("west") == want
    assert _engine_alerts(None) == want   # (east home: the control, the same on main)


def test_the_engine_runs_a_quiet_home_on_to_the_streams_time() -> None:
    eng = Engine(home_cluster="west")
    evs = [e for e in _west_quiet() if e.ts <= 2_001.0]
    for ev in evs[:-1]:
        eng.process(ev)
    assert evs[-1].cluster == "west"
    # west's own clock stood at 1051 (home29: no record of east moved it); home31 runs it on
    # with east's records once quiet QUIET_S (review30 4), at a look every RUN_ON_EVERY_S
    assert 2_000.0 - 10.0 <= eng.monitors.clock <= 2_000.0
    eng.process(evs[-1])
    assert eng.monitors.clock == 2_001.0


def _service(home: str | None, evs: list[EccSample], wall: float = 2_010.0,
             signal: str = "dbe") -> tuple[list, list]:
    src = SourcePartition(ECC, 0, 1, wall_clock=lambda: wall, home=home)
    emits: list = []
    dead: list = []
    for k, ev in enumerate(evs):
        src.process([(k, b"x", _raw(ev), None)], 0.0, emits, dead)
    found = [orjson.loads(e.value)["finding"] for e in emits
             if orjson.loads(e.value)["type"] == "finding"]
    return dead, [(f["signal"], f["cluster"], f["scope"]["node"], f["ts"]) for f in found
                  if f["signal"] == signal]


def test_the_service_and_the_engine_agree_whichever_cluster_is_home() -> None:
    want = [("dbe", "east", "gpu-004", 1_370.0), ("dbe", "west", "gpu-005", 2_001.0)]
    assert _service("west", _west_quiet()) == ([], want)
    assert _service("east", _west_quiet()) == ([], want)


def test_a_record_far_ahead_of_the_stream_is_still_refused_in_a_quiet_home() -> None:
    # (the control: only the stream's time is taken -- west's row 600 s past the stream's
    # clock is refused, and west's clock stays)
    evs = [e for e in _west_quiet() if e.ts < 2_000.0] + [_ecc(2_690.0, "gpu-005", "west")]
    src = SourcePartition(ECC, 0, 1, home="west")
    dead: list = []
    for k, ev in enumerate(evs):
        src.process([(k, b"x", _raw(ev), None)], 0.0, [], dead)
    assert [d.reason.split(":")[1].strip()[:15] for d in dead] == ["ts_out_of_range"]
    # (west's clock stays the stream's: run on with east's rows once quiet -- home31, review30
    # 4 -- to 1,990 s at most, never to the refused row's 2,690 s)
    assert 1_980.0 <= src.monitors.clock <= 1_990.0


# -- 2. the home nobody configured ------------------------------------------------------------

WEST = Topology.from_text("""Topology=west Version=1
NodeSet=gpu-[001-008] Gpus=8 Nics=mlx5_[0-7]
SwitchName=leaf-w Nodes=gpu-[001-008]
""")


def test_a_faultline_topology_names_itself_but_not_the_home() -> None:
    # (home29 took `Topology=NAME` for the home; home29b: the home is named or first read;
    # home30: the first value read, until a record of NAME goes in -- the stage's move)
    assert topology_home(EAST) == "east" and EAST.format == "faultline"
    assert topology_home(EAST_SLURM) is None and topology_home(None) is None
    assert home_of(None) is None and home_of("west") == "west"
    slots = ClusterSlots(lambda c: c, None, EAST)
    assert slots.is_home("west") and slots.cluster == "west" and not slots.is_home("east")
    assert slots.hint == "east" and slots.due() is None
    slots.other("east")
    assert slots.due() == "east"


def test_the_engine_moves_its_home_to_the_cluster_the_topology_names() -> None:
    # (home29b: the first value read for good; home30: west's DBE, read before any record of
    # east, is west's with the topology -- then east's first record moves the home there)
    eng = Engine(topology=EAST)
    alerts = []
    for ev in _west_first():
        alerts += eng.process(ev)
    assert eng.source.cluster == eng.stage.cluster == "east"
    assert _topology_of(alerts) == {"west": "full", "east": "full"}
    later = eng.process(_ecc(1_040.0, "gpu-006", "west", dbe=1))
    assert _topology_of(later) == {"west": "none"}


def test_a_topology_name_does_not_place_the_other_clusters_topologies() -> None:
    # (home28's rule again, home29b: other clusters' topologies need the home named)
    with pytest.raises(ValueError):
        Engine(topology=EAST, topologies={"west": WEST})
    eng = Engine(topology=EAST, home_cluster="east", topologies={"west": WEST})
    alerts = []
    for ev in _west_first():
        alerts += eng.process(ev)
    assert eng.source.others["west"].topology is WEST
    assert _topology_of(alerts) == {"west": "full", "east": "full"}


def test_a_restored_engine_keeps_its_first_value_read_for_its_home() -> None:
    # (until a record of the cluster the topology names goes in: home30's move)
    eng = Engine(topology=EAST)
    eng.process(_ecc(1_000.0, "gpu-004", None))
    eng.process(_ecc(1_000.5, "gpu-004", "prod"))
    eng = Engine.restore(eng.snapshot(), EAST)
    assert eng.source.cluster == eng.stage.cluster == "prod"
    assert _topology_of(eng.process(_ecc(1_001.0, "gpu-004", "west", dbe=1))) == {
        "west": "none"}
    assert _topology_of(eng.process(_ecc(1_002.0, "gpu-004", "east", dbe=1))) == {
        "east": "full"}
    assert eng.source.cluster == eng.stage.cluster == "east"


@pytest.mark.parametrize(("topo", "home"), [(EAST, "east"), (EAST_SLURM, "west")])
def test_replay_without_configuration_takes_the_first_value_read(
        tmp_path, topo: Topology, home: str) -> None:
    # (EAST names itself: east, once its first record went in -- west's DBE came first,
    # with the topology; home30)
    from detector.cli.main import main
    from replay.log import read_records
    path = _log(tmp_path, cluster=None)
    if topo is EAST_SLURM:  # (the log's topology record: the Slurm text)
        recs = list(read_records(path))
        lines = [orjson.dumps({"topic": "topology",
                               "value": {"format": "slurm", "text": EAST_SLURM.text}})]
        lines += [orjson.dumps({"topic": r.topic, "value": r.value}) for r in recs[1:]]
        with open(path, "wb") as f:
            f.write(b"\n".join(lines) + b"\n")
    out = tmp_path / "alerts.jsonl"
    assert main(["replay", path, "--quiet", "--alerts-out", str(out)]) == 0
    got = {r.value["cluster"]: r.value["evidence"]["conditions"]["topology"]
           for r in read_records(out) if r.value.get("status") == "firing"}
    first = {"west"} if topo is EAST else set()  # (paged before the move: with it)
    assert got[home] != "none" and all(
        v == "none" for c, v in got.items() if c != home and c not in first)


@pytest.mark.parametrize(("topo", "apart", "why"), [
    (EAST_SLURM, "east", "the first value read")])
def test_an_unnamed_home_says_so_once_when_it_keeps_a_second_cluster_apart(
        caplog, monkeypatch, topo: Topology, apart: str, why: str) -> None:
    monkeypatch.setattr(clusters, "_said", False)
    with caplog.at_level(logging.WARNING, logger="detector.pipeline.clusters"):
        for _ in range(2):  # (two engines, four stages: once a process)
            eng = Engine(topology=topo)
            for ev in _west_first():
                eng.process(ev)
    said = [r.getMessage() for r in caplog.records if r.name == "detector.pipeline.clusters"]
    assert len(said) == 1 and f"cluster {apart!r}" in said[0] and why in said[0]
    assert "set home_cluster" in said[0]


@pytest.mark.parametrize(("home", "topo"), [("east", EAST_SLURM), (None, None)])
def test_a_named_home_or_no_topology_says_nothing(caplog, monkeypatch, home, topo) -> None:
    monkeypatch.setattr(clusters, "_said", False)
    with caplog.at_level(logging.WARNING, logger="detector.pipeline.clusters"):
        eng = Engine(topology=topo, home_cluster=home)
        for ev in _west_first():
            eng.process(ev)
    assert eng.stats()["clusters"] == 2
    assert not [r for r in caplog.records if r.name == "detector.pipeline.clusters"]


# -- 3. a slot given back ---------------------------------------------------------------------

OTHERS = [f"c{k:02d}" for k in range(1, MAX_CLUSTERS)]  # 15: every slot beside the home's


def _fill(eng: Engine, dbe: set[str] = frozenset()) -> list:  # type: ignore[assignment]
    """The home (east) and 15 others each send a row at 1000-1001 (a DBE for those in ``dbe``),
    then only east goes on, a row every 100 s to 1000 + 4000: the others quiet past
    unit_idle_s (3600 s)."""
    alerts = eng.process(_ecc(1_000.0, "gpu-001", "east"))
    for c in OTHERS:
        alerts += eng.process(_ecc(1_000.5, "gpu-001", c, dbe=int(c in dbe)))
    for k in range(1, 41):
        alerts += eng.process(_ecc(1_000.0 + 100 * k, "gpu-001", "east"))
    return alerts


def test_a_quiet_clusters_slot_is_given_back_to_a_new_one() -> None:
    eng = Engine(home_cluster="east")
    eng.process(_ecc(1_000.0, "gpu-001", "east"))
    for c in OTHERS:
        eng.process(_ecc(1_000.5, "gpu-001", c))
    with pytest.raises(InvalidMessage, match="too_many_clusters"):  # (all of them live)
        eng.process(_ecc(1_001.0, "gpu-001", "new"))
    eng = Engine(home_cluster="east")
    _fill(eng)
    first = eng.source.others["c01"]
    alerts = eng.process(_ecc(5_001.0, "gpu-002", "new", dbe=1))
    assert [(a.cluster, a.scope.key) for a in alerts] == [("new", "gpu:gpu-002/3")]
    # the first quiet one's slot, in both stages; the others keep theirs (nobody needed them)
    assert list(eng.source.others) == [*OTHERS[1:], "new"] == list(eng.stage.others)
    assert eng.stats()["clusters"] == MAX_CLUSTERS and eng.source.too_many_clusters == 0
    # c01 comes back: a slot of its own again (c02's), its monitors afresh
    eng.process(_ecc(5_002.0, "gpu-001", "c01"))
    assert "c02" not in eng.source.others and eng.source.others["c01"] is not first
    assert eng.source.others["c01"].counts["ecc"] == 1


def test_a_cluster_with_a_page_open_keeps_its_slot() -> None:
    eng = Engine(home_cluster="east")
    alerts = _fill(eng, dbe=set(OTHERS))  # a latched DBE page on every other cluster
    assert {a.cluster for a in alerts if a.status == "firing"} == set(OTHERS)
    with pytest.raises(InvalidMessage, match="too_many_clusters"):
        eng.process(_ecc(5_001.0, "gpu-002", "new", dbe=1))
    assert list(eng.source.others) == OTHERS == list(eng.stage.others)
    # one without a page: its slot is the one given back (the rest are open)
    eng = Engine(home_cluster="east")
    _fill(eng, dbe=set(OTHERS) - {"c07"})
    eng.process(_ecc(5_001.0, "gpu-002", "new"))
    assert "c07" not in eng.source.others and "new" in eng.source.others
    assert "c07" not in eng.stage.others and "new" in eng.stage.others


def test_a_flood_of_one_more_cluster_does_not_run_the_others_on_each_record(
        monkeypatch) -> None:
    eng = Engine(home_cluster="east")
    eng.process(_ecc(1_000.0, "gpu-001", "east"))
    for c in OTHERS:
        eng.process(_ecc(1_000.5, "gpu-001", c))
    runs = []
    real = Monitors.advance
    monkeypatch.setattr(Monitors, "advance", lambda m, now, f: (runs.append(now), real(m, now, f)))
    for k in range(50):  # (50 records within a minute: the others looked at once)
        with pytest.raises(InvalidMessage, match="too_many_clusters"):
            eng.process(_ecc(1_001.0 + k, "gpu-009", "new"))
    assert len(runs) <= len(OTHERS) and eng.source.too_many_clusters == 50


def test_the_service_gives_a_quiet_clusters_slot_back_as_the_engine_does() -> None:
    evs = [_ecc(1_000.0, "gpu-001", "east")]
    evs += [_ecc(1_000.5, "gpu-001", c) for c in OTHERS]
    evs += [_ecc(1_000.0 + 100 * k, "gpu-001", "east") for k in range(1, 41)]
    evs += [_ecc(5_001.0, "gpu-002", "new", dbe=1)]
    dead, found = _service("east", evs, wall=5_010.0, signal="xid")
    assert dead == [] and found == [("xid", "new", "gpu-002", 5_001.0)]


def test_a_restored_correlator_knows_when_each_cluster_last_had_a_finding() -> None:
    eng = Engine(home_cluster="east")
    eng.process(_ecc(1_000.0, "gpu-001", "east"))
    eng.process(_ecc(1_000.5, "gpu-001", "c01", dbe=1))
    eng.process(_ecc(1_001.0, "gpu-001", "c01"))
    blob = eng.snapshot()
    state = UNSIGNED.decode(blob, "engine")
    last = state["correlator"]["last"]
    assert list(last) == ["c01"] and last["c01"] >= 1_000.5
    assert Engine.restore(blob).stage._last == last
    state["correlator"]["last"] = {"c09": 1_000.5}  # (a cluster it does not keep)
    with pytest.raises(SnapshotRefused):
        Engine.restore(UNSIGNED.encode(state, "engine"))
    del state["correlator"]["last"]  # (round 28's: none -- as of the restore)
    eng = Engine.restore(UNSIGNED.encode(state, "engine"))
    assert eng.stage._last == {} and eng.stage._taken_at == eng.stage.released


def test_what_running_the_others_on_finds_is_kept_when_the_record_is_refused(
        monkeypatch) -> None:
    # Every other cluster has a DBE (its GPU's monitors kept unit_fault_idle_s: not spent) and
    # a job that stopped; the new cluster's record runs them on to the stream's time -- each
    # job forgotten (a finding) -- and is refused.  The service emits those findings with its
    # dead letter; the Engine's process() raises, and ingest() gives their alerts all the same.
    # (home31 runs quiet clusters on with east's rows -- review30 4 -- which forgets their jobs
    # before the record: with that look off, the record's give-back runs them on, as before.)
    import math

    import msgspec

    from detector.pipeline import source
    from detector.testing import step
    monkeypatch.setattr(source, "QUIET_S", math.inf)
    eng = Engine(home_cluster="east")
    eng.process(_ecc(1_000.0, "gpu-001", "east"))
    for c in OTHERS:
        eng.process(_ecc(1_000.5, "gpu-001", c, dbe=1))
        for r in range(2):
            eng.process(msgspec.structs.replace(step(1_000.6, r, 1), cluster=c))
    for k in range(1, 41):
        eng.process(_ecc(1_000.0 + 100 * k, "gpu-001", "east"))
    before = eng.stage.findings
    alerts: list = []
    with pytest.raises(InvalidMessage, match="too_many_clusters"):
        eng.ingest(ECC, orjson.loads(_raw(_ecc(5_001.0, "gpu-002", "new"))), alerts)
    assert eng.stage.findings - before >= len(OTHERS) and not eng._kept
    assert not eng.source.others["c01"]._jobs and eng.source.others["c01"]._ecc
