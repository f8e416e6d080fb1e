"""home30 (round 30): the home cluster -- review29's findings 8, 2 and 3 (strict xfails in
tests/test_review29.py on main e2bf9ae), each test here failing on main; controls pass on both.

A unit is (cluster, node) (clusters27): each stage keeps its *home* cluster's monitors /
correlator -- the topology's, and every record's with no `cluster` -- and one per other value
(detector.pipeline.clusters).
"""

from __future__ import annotations

import contextlib
import logging

import msgspec
import orjson
import pytest

from detector.engine import Engine
from detector.events import InvalidMessage
from detector.pipeline import clusters
from detector.pipeline.correlator import CorrelatorPartition
from detector.pipeline.source import SourcePartition
from detector.testing import T0, step
from tests.test_home28 import EAST, EAST_SLURM, _ecc, _msg, _topology_of

# -- review29 8: a refused record decides no home ---------------------------------------------


def _nan_row(cluster: str) -> dict:
    value = {f: v for f, v in msgspec.structs.asdict(step(T0 + 1, 0, 1)).items()
             if v is not None}
    value.update(cluster=cluster, loss=float("nan"))
    return value


def _nan_bytes(cluster: str) -> bytes:
    # (orjson writes a NaN as null: the bytes a producer sent)
    return orjson.dumps({**_nan_row(cluster), "loss": "NaN"}).replace(
        b'"loss":"NaN"', b'"loss":NaN')


def test_a_nan_row_decides_no_home_in_the_service() -> None:
    # main e2bf9ae: the salvage (SourcePartition.decode -> monitors_of(make=False) ->
    # ClusterSlots.is_home) made the dead-lettered row's value the home
    src = SourcePartition("telemetry.step", 0, 1, topology=EAST_SLURM)
    dead: list = []
    src.process([(0, b"job-1", _nan_bytes("junk"), None)], 0.0, [], dead)
    assert len(dead) == 1 and "loss" in dead[0].reason
    assert src.cluster is None and src.state().get("cluster") is None


def test_a_nan_row_decides_no_home_in_the_replay() -> None:
    # the Engine (faultline replay): the junk row first, then east's records -- east keeps
    # the topology (main e2bf9ae: junk was home, east's DBE ran without it)
    eng = Engine(topology=EAST_SLURM)
    with pytest.raises(InvalidMessage, match="loss"):
        eng.ingest("telemetry.step", _nan_row("junk"), [])
    alerts = eng.process(_ecc(T0 + 2, "east"))
    alerts += eng.process(_ecc(T0 + 3, "east", dbe=True, node="gpu-002"))
    assert eng.source.cluster == eng.stage.cluster == "east"
    assert _topology_of(alerts + eng.finish()) == {"east": "nodes"}


def test_a_row_past_the_wall_clock_decides_no_home_in_a_batch() -> None:
    # the batch path (batch_of_one_cluster: main set the home from the batch's one value
    # before any record of it went in)
    src = SourcePartition("telemetry.ecc", 0, 1, topology=EAST_SLURM, wall_clock=lambda: 1_000.0)
    dead: list = []
    src.process([(k, b"x", _msg(_ecc(1_000.0 + 10 ** 6 + k, "junk")), None) for k in range(3)],
                0.0, [], dead)
    assert len(dead) == 3 and all("ts_out_of_range" in d.reason for d in dead)
    assert src.cluster is None
    src.process([(3, b"x", _msg(_ecc(1_000.0, "east")), None)], 0.0, [], dead)
    assert src.cluster == "east"


def test_the_first_value_that_goes_in_is_home_whichever_path_takes_it() -> None:
    # (the control: records taken by the batch path -- detector.quiet -- settle the home as
    # the record path does; on main too)
    recs = [_ecc(1_000.0 + k, "east", node=f"gpu-00{1 + k % 2}") for k in range(40)]
    src = SourcePartition("telemetry.ecc", 0, 1, topology=EAST_SLURM)
    src.process([(k, b"x", _msg(ev), None) for k, ev in enumerate(recs)], 0.0, [], [])
    assert src.cluster == "east" and src.state()["cluster"] == "east"
    eng = Engine(topology=EAST_SLURM)
    eng.process_many(recs)
    assert eng.source.cluster == eng.stage.cluster == "east"
    eng.process_many([_ecc(1_100.0, "west")])
    assert list(eng.source.others) == ["west"]


def test_a_nan_row_of_the_home_is_still_salvaged() -> None:
    # (the control: DESIGN's one exception -- the salvage of a NaN row of a cluster heard from)
    eng = Engine(topology=EAST_SLURM)
    eng.ingest("telemetry.step", {**_nan_row("east"), "loss": 2.0}, [])
    alerts: list = []
    with contextlib.suppress(InvalidMessage):
        eng.ingest("telemetry.step", {**_nan_row("east"), "step": 2}, alerts)
    assert eng.source.cluster == "east"
    assert eng.source.monitors._n_nonfinite == 1


# -- review29 2: a configured home wins over a snapshot's -----------------------------------


def _west_home_snapshots() -> tuple[bytes, bytes]:
    """A telemetry partition and a findings partition that ran unconfigured and read west
    first (a Slurm topology names no cluster: west took it), then east: their snapshots."""
    src = SourcePartition("telemetry.ecc", 0, 1, topology=EAST_SLURM)
    emits: list = []
    src.process([(0, b"x", _msg(_ecc(1_000.0, "west")), None),
                 (1, b"x", _msg(_ecc(1_001.0, "east", node="gpu-002")), None)], 0.0, emits, [])
    corr = CorrelatorPartition(0, topology=EAST_SLURM, expected=[src.source])
    for k, e in enumerate(emits):
        corr.on_message(k, e.value, 0.0)
    corr.release(0.0, [])
    assert src.cluster == corr.cluster == "west" and list(corr.others) == ["east"]
    return src.snapshot()[1], corr.snapshot()[1]


def test_a_configured_home_wins_over_the_service_stages_snapshots(caplog, monkeypatch) -> None:
    monkeypatch.setattr(clusters, "_moved", False)
    blob, cblob = _west_home_snapshots()
    with caplog.at_level(logging.WARNING, logger="detector.pipeline.clusters"):
        src = SourcePartition.restore("telemetry.ecc", 0, 1, 1, blob, EAST_SLURM, home="east")
        corr = CorrelatorPartition.restore(0, 1, cblob, EAST_SLURM, expected=[src.source],
                                           home="east")
    assert src.cluster == corr.cluster == "east"
    assert list(src.others) == list(corr.others) == ["west"]
    assert src.monitors.topology is EAST_SLURM and src.others["west"].topology is None
    assert corr.correlator.topology is EAST_SLURM and corr.others["west"][0].topology is None
    assert src.stats()["home_moves"] == corr.stats(0.0)["home_moves"] == 1
    assert "home cluster moved from 'west' to 'east' (configured)" in caplog.text
    # the units moved with their state: east's node is east's, west's west's
    assert corr.was_seen("gpu-002", "ecc") and not corr.was_seen("gpu-004", "ecc")
    # and the move is kept: the next snapshot holds east as home, restored as is
    again = SourcePartition.restore("telemetry.ecc", 0, 1, 1, src.snapshot()[1], EAST_SLURM,
                                    home="east")
    assert again.cluster == "east" and "home_moves" not in again.stats()
    back = CorrelatorPartition.restore(0, 1, corr.snapshot()[1], EAST_SLURM,
                                       expected=[src.source], home="east")
    assert back.cluster == "east" and list(back.others) == ["west"]


def test_a_configured_home_new_to_the_snapshot_takes_the_topology() -> None:
    # (the snapshot's home west, east never read: east's unit is made, west's kept apart)
    src = SourcePartition("telemetry.ecc", 0, 1, topology=EAST_SLURM)
    src.process([(0, b"x", _msg(_ecc(1_000.0, "west")), None)], 0.0, [], [])
    src = SourcePartition.restore("telemetry.ecc", 0, 1, 0, src.snapshot()[1], EAST_SLURM,
                                  home="east")
    assert src.cluster == "east" and list(src.others) == ["west"]
    assert src.monitors.topology is EAST_SLURM and src.others["west"].clock == 1_000.0


# -- review29 3: the replay takes a cluster whose clock runs ahead, as the service does ---------


def _engine_run(evs: list, eng: Engine | None = None) -> tuple[Engine, list]:
    eng = eng or Engine(topology=EAST_SLURM, home_cluster="east")
    alerts: list = []
    for ev in evs:
        with contextlib.suppress(InvalidMessage):
            alerts += eng.process(ev)
    return eng, alerts


def _ahead(k0: int, k1: int) -> list:
    """east (home) and west alternate, west's records stamped 400 s ahead of east's; each
    cluster's DBE from its 41st record (review29 3's stream)."""
    evs = []
    for k in range(k0, k1):
        evs.append(_ecc(1_000.0 + 10 * k, "east", dbe=k >= 40, node="gpu-002"))
        evs.append(_ecc(1_400.0 + 10 * k, "west", dbe=k >= 40, node="gpu-003"))
    return evs


def test_the_replay_pages_a_cluster_whose_clock_runs_ahead() -> None:
    # main e2bf9ae: west's records were held against east's clock and refused, each east
    # record between resetting the count: no units, no page
    eng, alerts = _engine_run(_ahead(0, 60))
    alerts += eng.finish()
    assert sorted({a.cluster for a in alerts if a.status == "firing"}) == ["east", "west"]
    assert list(eng.source.others) == ["west"] and not eng.rejected


def test_a_held_cluster_survives_a_snapshot() -> None:
    # (west's first two records held when the snapshot is taken: they go in with the third)
    eng, _ = _engine_run(_ahead(0, 2))
    assert [e.ts for e in eng.source.held_new["west"]] == [1_400.0, 1_410.0]
    eng = Engine.restore(eng.snapshot(), EAST_SLURM, home_cluster="east")
    eng, alerts = _engine_run(_ahead(2, 60), eng)
    alerts += eng.finish()
    assert sorted({a.cluster for a in alerts if a.status == "firing"}) == ["east", "west"]


def test_a_lone_stray_of_a_new_cluster_moves_no_clock_in_the_replay() -> None:
    # (the control of the rule: one record of a new value stamped a day ahead -- a node's
    # clock off -- takes no units and moves no clock; refused when its cluster's records
    # come on the stream's time, or at the end)
    evs = [_ecc(1_000.0 + k, "east") for k in range(5)]
    evs.insert(2, _ecc(90_000.0, "ghost"))
    eng, _ = _engine_run(evs)
    assert eng.clock == 1_004.0 and "ghost" not in eng.source.others
    eng.finish()
    assert [r.field for r in eng.rejected] == ["ts"]
    eng, _ = _engine_run([*evs, _ecc(1_006.0, "ghost")])
    assert "ghost" in eng.source.others and len(eng.rejected) == 1


# -- the home move: the cluster the topology names itself (home28's strict xfail) ----------------


def test_a_stage_moves_its_home_to_the_cluster_the_topology_names(caplog, monkeypatch) -> None:
    # (no home configured, `Topology=east`: west read first is home -- its units get the
    # topology -- until east's first record goes in; then east's are the stage's own)
    monkeypatch.setattr(clusters, "_moved", False)
    src = SourcePartition("telemetry.ecc", 0, 1, topology=EAST)
    with caplog.at_level(logging.WARNING, logger="detector.pipeline.clusters"):
        src.process([(0, b"x", _msg(_ecc(1_000.0, "west")), None)], 0.0, [], [])
        assert src.cluster == "west" and src.monitors.topology is EAST
        src.process([(1, b"x", _msg(_ecc(1_001.0, "east", node="gpu-002")), None)], 0.0, [], [])
    assert src.cluster == "east" and list(src.others) == ["west"]
    assert src.monitors.topology is EAST and src.others["west"].topology is None
    assert src.monitors.clock == 1_001.0 and src.others["west"].clock == 1_000.0
    assert src.stats()["home_moves"] == 1
    assert "home cluster moved from 'west' to 'east' (the topology names it)" in caplog.text
    # once: the home is the topology's own now
    src.process([(2, b"x", _msg(_ecc(1_002.0, "north")), None)], 0.0, [], [])
    assert src.cluster == "east" and src.stats()["home_moves"] == 1


def test_a_refused_record_of_the_topologys_cluster_moves_nothing() -> None:
    src = SourcePartition("telemetry.ecc", 0, 1, topology=EAST, wall_clock=lambda: 1_000.0)
    dead: list = []
    src.process([(0, b"x", _msg(_ecc(1_000.0, "west")), None),
                 (1, b"x", _msg(_ecc(1_000.0 + 10 ** 6, "east")), None)], 0.0, [], dead)
    assert len(dead) == 1 and src.cluster == "west" and not src.others


def test_a_stage_restored_unconfigured_moves_to_the_topologys_cluster_it_holds() -> None:
    # (a snapshot of a stage that kept west home with east apart -- round 29's rule -- restored
    # under `Topology=east`: east is home at once, as it would have been from its first record)
    eng = Engine(topology=EAST_SLURM)
    for ev in (_ecc(1_000.0, "west"), _ecc(1_001.0, "east", node="gpu-002")):
        eng.process(ev)
    assert eng.source.cluster == "west"
    eng = Engine.restore(eng.snapshot(), EAST)
    assert eng.source.cluster == eng.stage.cluster == "east"
    assert _topology_of(eng.process(_ecc(1_002.0, "east", dbe=True, node="gpu-002"))) == {
        "east": "full"}
