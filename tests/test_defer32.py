"""defer32 (round 32): revA31 2 -- a node that dies in its job's checkpoint save is deferred, not
dropped -- and revA31 5 -- a quiet cluster is run on the same way by every driver.

revA31 2: life31's ``_ended_first`` (blind21 F1: Slurm reboots a node for a firmware flash a
minute after its job ended) excused a node whose jobs stopped stepping while it still reported,
judged once at the 240 s path and never again -- so a node dying 40 s into its lone job's save
(its GPUs idle as after a job's end) and never back was never paged.  Now its judgement is
deferred: once every topic of it is still dark :data:`liveness.DEFER_S` (45 min; 15 until the
lead's revA32 2) after its last record -- by the records' time, as the 240 s bound -- it is
paged, the cause saying so.  A node
back within the window (a flash, a reboot) is not; the end of a log is no evidence.
"""

from __future__ import annotations

import math

import pytest

from detector import liveness
from detector.engine import Engine
from replay.runner import replay_log
from tests.test_life31 import DARK, NODES, job_steps
from tests.test_liveness import T0, fleet, silent_pages, write
from tests.test_silent19 import by_ts


def _alerts(recs: list[dict], tmp_path, name: str = "log") -> list:
    return silent_pages(replay_log(write(tmp_path, by_ts(recs), name)).alerts)


def _lone_save(seconds: float, back: float = 1e9) -> list[dict]:
    """job-1 on DARK alone steps (2 s) until 400 s, then saves (GPUs idle 400-460 s); DARK
    dark from 440 s until ``back``."""
    recs = fleet(seconds=seconds, dead={DARK: (440.0, back)}, job=False, idle=(400.0, 460.0))
    return recs + job_steps([DARK], 0.0, 400.0)


def test_a_node_dying_in_its_lone_jobs_save_is_paged_once_still_dark(tmp_path) -> None:
    """revA31 2's probe: main [] (the job's stop was due at 420 s, before DARK's last record):
    paged DEFER_S after its last record, the cause and the latency honest."""
    pages = _alerts(_lone_save(3600.0), tmp_path)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", f"node:{DARK}")]
    a = pages[0]
    assert T0 + 430.0 <= a.onset_ts <= T0 + 440.0
    assert liveness.DEFER_S <= a.detected_ts - a.onset_ts <= liveness.DEFER_S + 3 * liveness.SCAN_S
    assert a.detection_latency_s == pytest.approx(a.detected_ts - a.onset_ts, abs=1e-3)
    assert [j["job"] for j in a.evidence["jobs_on_node"]] == ["job-1"]
    assert "judged again once still dark 2700 s on" in a.evidence["recommended_because"]
    assert any("firmware flash" in r for r in a.evidence["ruled_out"])


def test_a_node_dying_as_its_job_is_killed_everywhere_is_paged_once_still_dark(tmp_path
                                                                                ) -> None:
    """revA31 2's second probe: job-1 on 8 nodes stops at 400 s, every GPU idle from then (the
    job killed), DARK dark from 440 s for good: main [], now paged after the window."""
    recs = fleet(seconds=3600, dead={DARK: (440.0, 1e9)}, job=False, idle=(400.0, 1e9))
    pages = _alerts(recs + job_steps(NODES, 0.0, 400.0), tmp_path)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", f"node:{DARK}")]
    assert pages[0].detected_ts - pages[0].onset_ts >= liveness.DEFER_S


@pytest.mark.parametrize("dark_s", [250.0, 600.0, 850.0, 1500.0, 2400.0])
def test_a_node_back_within_the_window_is_not_paged(tmp_path, dark_s: float) -> None:
    """blind21 F1, a slower reboot, and a firmware bundle or re-image (25 and 40 min: revA32 2,
    paged at 15 min before the lead's mend): DARK dark ``dark_s`` from 440 s, then back -- no page
    (its deferral dropped when heard again: nothing fires later either)."""
    assert _alerts(_lone_save(3600.0, 440.0 + dark_s), tmp_path) == []


def test_the_end_of_the_log_inside_the_window_pages_nobody(tmp_path) -> None:
    """The log ends 2400 s after DARK's last record: no evidence it stayed dark (the records'
    time decides, not the timers a log's end runs out)."""
    assert _alerts(_lone_save(2840.0), tmp_path) == []


def test_a_node_back_after_the_window_is_paged_then_resolved(tmp_path) -> None:
    pages = _alerts(_lone_save(3600.0, 440.0 + 3000.0), tmp_path)
    assert [(a.status, a.scope.key) for a in pages] == [
        ("firing", f"node:{DARK}"), ("resolved", f"node:{DARK}")]
    assert pages[1].detected_ts >= T0 + 440.0 + 3000.0


def test_a_drained_node_taken_out_later_is_still_no_page(tmp_path) -> None:
    """The job ended 200 s before the node left for good (drained, then taken out): no job
    stepped within RUNNING_S of its last record, nothing deferred -- no page, also after the
    window."""
    recs = fleet(seconds=3600, dead={DARK: (600.0, 1e9)}, job=False, idle=(400.0, 1e9))
    assert _alerts(recs + job_steps(NODES, 0.0, 400.0), tmp_path) == []


def test_a_snapshot_inside_the_deferral_gives_the_same_page(tmp_path) -> None:
    """Restored between the 240 s judgement (deferred) and the window's end: the same page at
    the same time (the deferral is state: the correlator's _silent, the source's state 5)."""
    recs = by_ts(_lone_save(3600.0))
    whole = [(a.dedup_key, a.status, round(a.detected_ts, 3)) for a in silent_pages(
        replay_log(write(tmp_path, recs)).alerts)]
    assert len(whole) == 1
    eng = Engine()
    alerts: list = []
    cut = next(k for k, r in enumerate(recs) if r["value"]["ts"] >= T0 + 1000.0)
    for k, r in enumerate(recs):
        if k == cut:
            assert any(liveness._DEFER in t for t in eng.correlator._silent.values())
            eng = Engine.restore(eng.snapshot())
        eng.ingest(r["topic"], r["value"], alerts)
    alerts += eng.finish()
    assert [(a.dedup_key, a.status, round(a.detected_ts, 3))
            for a in silent_pages(alerts)] == whole


def test_a_restored_correlators_deferral_is_checked() -> None:
    """_silent is typed at restore (it was not checked at all): a deferral naming a job that
    is no map, a node entry under an unknown key, too many jobs' stops -- refused."""
    from detector.correlate import Correlator
    from detector.findings import Finding
    from detector.thresholds import Thresholds
    corr = Correlator(Thresholds())
    g = Finding(T0, T0, "silent", "unattributed", "unknown", liveness.Scope.of_node(DARK),
                True, False, 0.9, {"topic": "ecc", "last_ts": T0})
    ok = {"ecc": g, liveness._JUDGED: g,
          liveness._DEFER: g._replace(evidence={"jobs": [{"job": "job-1", "ranks": 2}]})}
    corr._silent = {DARK: ok, liveness._STOPS: {"job-1": g}}
    assert liveness.check_corr_restored(corr)
    for bad in ({DARK: {**ok, liveness._DEFER: g._replace(evidence={"jobs": ["job-1"]})}},
                {DARK: {**ok, "later": g}}, {DARK: {"ecc": "silent"}}, {DARK: ["ecc"]},
                {DARK: {**ok, liveness._DEFER: g._replace(evidence={"jobs": [
                    {"job": f"j{k}"} for k in range(liveness.MAX_JOBS + 1)]})}}):
        corr._silent = bad
        assert not liveness.check_corr_restored(corr)


def test_the_service_defers_and_pages_as_the_replay_does(tmp_path) -> None:
    """Split stages (a source per topic-partition; job-3 keeps job-1's step partition's time):
    there the node's idle GPUs in the save excused it (no busy GPU: "drained") -- deferred the
    same way, paged once still dark; the F1 control (back 250 s on) is not."""
    from tests.test_service_stages import InMemoryCluster
    keep = job_steps(["node-000", "node-004"], 0.0, 3600.0, job="job-3")  # (job-1's partition)
    for back, want in ((1e9, [("firing", f"node:{DARK}")]), (440.0 + 250.0, [])):
        log = write(tmp_path, by_ts(_lone_save(3600.0, back) + keep), f"svc{back:g}")
        svc = InMemoryCluster(log, seed=1)
        svc.run()
        pages = silent_pages(svc.alerts)
        assert [(a.status, a.scope.key) for a in pages] == want
        assert all(a.detected_ts - a.onset_ts >= liveness.DEFER_S for a in pages)


# -- revA31 5: a quiet cluster is run on at the same record whatever the batching --------------


def _two_clusters() -> list:
    """review30 4's c01 job (rank 3 x1.3 slow, paged ~1,087 s, its last step ~1,200 s) while
    the home cluster east keeps the stream's time with thermal rows (revA31's probe p4)."""
    import msgspec

    from detector.testing import thermal
    from tests.test_review30 import _slow_job
    home = [msgspec.structs.replace(thermal(1_000.0 + 1.0 * k, f"gpu-{k % 4:03d}", 0),
                                    cluster="east") for k in range(3_000)]
    return sorted(_slow_job("c01") + home, key=lambda e: e.ts)


def _slow_pages(alerts: list) -> list[tuple[str, str, float]]:
    return [(a.status, a.scope.key, round(a.detected_ts, 3)) for a in alerts
            if a.kind == "slow_node"]


def test_a_quiet_clusters_resolve_does_not_move_with_the_batches() -> None:
    """Record by record (the replay) and Engine.process_many in batches of 7, 64, 500: the same
    resolve at the same time (main: 2,101 s one by one, 2,110 s through process_many -- the
    batch path ran past the run-on's look, which only feed() made)."""
    evs = _two_clusters()
    one = Engine(home_cluster="east")
    want: list = []
    for e in evs:
        want += one.process(e)
    want = _slow_pages(want)
    assert [s for s, _, _ in want] == ["firing", "resolved"]
    for size in (7, 64, 500):
        many = Engine(home_cluster="east")
        got: list = []
        for i in range(0, len(evs), size):
            got += many.process_many(evs[i:i + size])
        assert _slow_pages(got) == want, size


def test_the_services_batch_path_runs_a_quiet_cluster_on_at_the_same_record() -> None:
    """A thermal partition holding c01's node (quiet from ~1,200 s) and east's (ten rows a
    second): through SourcePartition.process in batches of 1, 7, 120 and 500 records, c01's
    clock (where its run-on took it) and the next look agree at every batch's end (main:
    up to ~10 s apart -- the look made at the batch path's first break past it)."""
    import msgspec
    import orjson

    from detector.pipeline.source import SourcePartition
    from detector.testing import thermal
    from detector.thresholds import Thresholds
    c01 = [msgspec.structs.replace(thermal(1_003.3 + 2.0 * k, "c01-n0", 0), cluster="c01")
           for k in range(100)]
    east = [msgspec.structs.replace(thermal(1_000.05 + 0.1 * k, f"gpu-{k % 4:03d}", k // 4 % 8),
                                    cluster="east") for k in range(20_000)]
    recs = [(k, b"k", orjson.dumps({n: v for n, v in msgspec.structs.asdict(e).items()
                                    if v is not None}), None)
            for k, e in enumerate(sorted(c01 + east, key=lambda e: e.ts))]

    def trace(size: int) -> dict[int, tuple]:
        sp = SourcePartition("telemetry.thermal", 0, 1, Thresholds(unit_idle_s=700.0),
                             home="east")
        out: dict[int, tuple] = {}
        for i in range(0, len(recs), size):
            sp.process(recs[i:i + size], 0.0, [], [])
            c = sp.others.get("c01")
            out[min(i + size, len(recs))] = (None if c is None else c.clock, sp._run_on_at)
        return out

    want = trace(1)
    for size in (7, 120, 500):
        got = trace(size)
        assert {k: v for k, v in got.items() if v != want[k]} == {}, size


def test_a_restored_engine_runs_a_quiet_cluster_on_when_an_uninterrupted_one_would() -> None:
    """Snapshot at 1,300 s (c01 quiet 100 s): the same resolve at the same time (main: the
    restored partition waited QUIET_S afresh -- _still and _run_on_at were not state)."""
    evs = _two_clusters()
    whole = Engine(home_cluster="east")
    want: list = []
    for e in evs:
        want += whole.process(e)
    eng = Engine(home_cluster="east")
    got: list = []
    cut = next(k for k, e in enumerate(evs) if e.ts >= 1_300.0)
    for k, e in enumerate(evs):
        if k == cut:
            eng = Engine.restore(eng.snapshot(), home_cluster="east")
        got += eng.process(e)
    assert _slow_pages(got) == _slow_pages(want)


@pytest.mark.parametrize("run_on", [
    "x", [1.0], [float("nan"), []], [1.0, [["c01", 1.0]]], [1.0, [[3, 1.0, 1.0]]],
    [1.0, [["c01", 1.0, "1"]]], [1.0, [["c", 1.0, 1.0]] * 18]])
def test_a_malformed_run_on_is_refused(run_on) -> None:
    from detector.pipeline.source import SourcePartition
    from detector.statecodec import SnapshotRefused
    sp = SourcePartition("telemetry.thermal", 0, 1)
    state = sp.state()
    state["run_on"] = run_on
    with pytest.raises(SnapshotRefused):
        SourcePartition.from_state(state, "telemetry.thermal", 0, 1, 0, None)
    # (a fresh partition's clock is -inf: a look and a "still since" at most that -- revA32 1)
    state["run_on"] = [-math.inf, [["c01", 1.0, -math.inf], [None, -math.inf, -math.inf]]]
    assert SourcePartition.from_state(state, "telemetry.thermal", 0, 1, 0, None)._still == {
        "c01": (1.0, -math.inf), None: (-math.inf, -math.inf)}
