"""A node lost under its job is paged in seconds by the service too (dark20, issue 10 + 14).

silent19 paged such a node 22-34 s after it went dark in the in-process replay, whose one
source sees the steps; the service's telemetry partitions see none, so there it waited for
the 240 s bound.  Now a source that sees no steps tells the correlator a node is ``quiet``
at the fast bound, step partitions tell it a job ``stopped`` stepping, and the correlator
-- which has every partition's job layouts and busy GPUs -- judges the loss
(detector.liveness._on_quiet, _lost).  A job stopped first (its GPUs idle), a job ended with
the next one on its GPUs, a job hung on live nodes: no fast page, as in the replay.
"""

from __future__ import annotations

import orjson
import pytest

from detector import liveness
from detector import thermal as thermal_mod
from detector.alerts import Alert
from detector.engine import Engine
from detector.findings import Finding, decode_message, finding_of
from detector.monitors import Monitors
from detector.pipeline.correlator import CorrelatorPartition
from detector.statecodec import SnapshotRefused
from detector.testing import thermal
from detector.thermal import MAX_IDLE_TOLD
from replay.runner import replay_log
from tests.test_liveness import NODES, T0, _partition, firing, fleet, silent_pages, write
from tests.test_service_stages import InMemoryCluster
from tests.test_silent19 import by_ts, steps

# A node sharing its telemetry partitions with another (its partition's other node sees
# time pass), and one of a different partition with a partner too.
DEAD = next(n for n in NODES if sum(_partition(m) == _partition(n) for m in NODES) >= 2)
# Fake wall seconds the cluster runs on after its input: a stalled job's step partition
# advances with the wall clock (idle advance), so this is about how far event time gets.
AFTER_S = 150.0


def service(log, seed: int = 1) -> InMemoryCluster:
    svc = InMemoryCluster(log, seed=seed)
    svc.run(seconds_after_input=AFTER_S)
    return svc


def pages_of(alerts: list[Alert]) -> list[tuple[str, str]]:
    return [(a.status, a.scope.key) for a in silent_pages(alerts)]


@pytest.mark.parametrize("seed", [1, 2])
def test_the_service_pages_a_node_lost_under_its_job_in_seconds(tmp_path, seed):
    """DEAD dies at 400 s under the job, whose other ranks wait busy: the service pages it
    within 35 s of its death, as the replay does (main: only after 240 s -- nothing within
    the ~145 s of event time this run reaches), naming the job that stalled."""
    log = write(tmp_path, fleet(seconds=900, dead={DEAD: (400, 1e9)}))
    want = pages_of(replay_log(log).alerts)
    assert want == [("firing", f"node:{DEAD}")]
    svc = service(log, seed)
    assert pages_of(svc.alerts) == want
    a = silent_pages(svc.alerts)[0]
    assert a.detected_ts - (T0 + 400) <= 35
    assert [j["job"] for j in a.evidence["jobs_on_node"]] == ["job-1"]
    assert "stopped stepping with it" in a.evidence["recommended_because"]
    assert [x.scope.key for x in firing(svc.alerts)] == [f"node:{DEAD}"]


def test_the_service_does_not_page_a_node_whose_job_stopped_first(tmp_path):
    """DEAD goes dark as its job is stopped and every GPU idles (a drain, the simulator's
    reboot): no page in the seconds after (the 240 s path decides, as in the replay)."""
    log = write(tmp_path, fleet(seconds=900, dead={DEAD: (400, 1e9)}, idle=(400, 1e9)))
    assert firing(service(log).alerts) == []


def test_the_service_does_not_page_a_node_left_as_its_job_ended_and_the_next_started(
        tmp_path):
    """job-1 ends at 400 s as DEAD leaves; job-2 starts on the other nodes' GPUs at once
    (the churning fleet): no page."""
    others = [n for n in NODES if n != DEAD]
    recs = fleet(seconds=900, dead={DEAD: (400, 1e9)}, job=False)
    recs += steps("job-1", NODES, 0, 400) + steps("job-2", others, 402, 900)
    assert firing(service(write(tmp_path, by_ts(recs))).alerts) == []


def test_the_service_does_not_page_a_job_hung_on_live_nodes_or_a_collector_pause(tmp_path):
    """The job stops stepping at 400 s on live nodes (a hang), or DEAD's collectors pause
    30 s while the job steps on: no page."""
    hang = [r for r in fleet(seconds=900) if r["topic"] != "telemetry.step"
            or r["value"]["ts"] < T0 + 400]
    assert firing(service(write(tmp_path, hang, "hang")).alerts) == []
    pause = fleet(seconds=900, quiet={DEAD: (400, 430, ("thermal", "ecc", "nic"))})
    assert firing(service(write(tmp_path, pause, "pause")).alerts) == []


def test_a_quiet_node_and_a_job_stop_travel_the_findings_topic():
    """The two new findings are plain data through the findings codec (typed keys)."""
    quiet = Finding(T0 + 20, T0, "silent", "unattributed", "unknown",
                    liveness.Scope.of_node("node-001"), True, False, 0.9,
                    {"quiet": "ecc", "last_ts": T0, "bound_s": 20.0})
    stop = Finding(T0 + 20, T0, "silent", "unattributed", "unknown",
                   liveness.Scope.of_job("job-1"), True, False, 0.0,
                   {"last_step_ts": T0, "step_period_s": 2.0}, "job-1")
    for f in (quiet, stop):
        msg = decode_message(orjson.dumps({"type": "finding", "source": "s", "id": [1, 0],
                                           "tag": f.ts, "finding": f.to_dict()}),
                             wall_s=T0 + 60)
        assert finding_of(msg.finding) == f
    bad = stop._replace(evidence={"last_step_ts": "soon"}).to_dict()
    with pytest.raises(ValueError):
        decode_message(orjson.dumps({"type": "finding", "source": "s", "id": [1, 0],
                                     "tag": T0, "finding": bad}), wall_s=T0 + 60)


def test_stops_are_bounded_and_restore_checks_a_quiet_state(monkeypatch):
    """The correlator keeps at most MAX_STOPS jobs' stops (pruned with their layout); a
    source's quiet state (4) restores, a state beyond it is refused."""
    monkeypatch.setattr(liveness, "MAX_STOPS", 2)
    part = CorrelatorPartition(0)
    corr = part.correlator
    for k in range(5):
        corr.on_finding(Finding(T0 + k, T0 + k, "silent", "unattributed", "unknown",
                                liveness.Scope.of_job(f"j{k}"), True, False, 0.0,
                                {"last_step_ts": T0 + k}, f"j{k}"), [])
    assert sorted(corr._silent[liveness._STOPS]) == ["j0", "j1"]
    corr.prune(T0 + 10)  # no layout: gone
    assert liveness._STOPS not in corr._silent
    mon = Monitors()
    mon._alive["node-001"] = [None, {"ecc": [T0, 10.0, 5, 4, 100.0, None]}]
    mon._fleet["steps"] = [T0, 0.0]
    assert liveness.check_restored(mon)
    mon._alive["node-001"][1]["ecc"][3] = 6  # (5: told still_dark, defer32)
    assert not liveness.check_restored(mon)


def test_a_snapshot_of_the_stages_mid_quiet_restores(tmp_path):
    """The engine's snapshot holds the new state as data (a job's stop mark) and restores."""
    recs = fleet(seconds=600, dead={DEAD: (400, 1e9)})
    eng = Engine()
    alerts: list[Alert] = []
    for r in recs:
        eng.ingest(r["topic"], r["value"], alerts)
        if r["value"]["ts"] > T0 + 430:
            break
    assert "steps" in eng.monitors._fleet
    again = Engine.restore(eng.snapshot())
    assert again.monitors._fleet["steps"] == eng.monitors._fleet["steps"]
    with pytest.raises(SnapshotRefused):
        eng.monitors._fleet["steps"] = [T0, "x"]
        Engine.restore(eng.snapshot())


def test_a_node_drained_after_its_job_on_shared_nodes_is_not_paged_fast(tmp_path):
    """job-1 (GPU 0 of every node) is cancelled at 400 s -- its GPUs idle -- and DEAD goes
    dark then, while job-2 steps on GPU 1 of the other nodes: their nodes stay busy, but not
    with job-1.  The replay sees GPU 0 idle and waits for the 240 s path; so does the
    service, whose correlator holds each busy node's idle GPUs (path22): no fast page."""
    recs = []
    for r in fleet(seconds=900, dead={DEAD: (400, 1e9)}, job=False):
        v = r["value"]
        if r["topic"] == "telemetry.thermal" and v["gpu"] == 0 and v["ts"] >= T0 + 400:
            v.update(power_w=90.0, sm_clock_mhz=345.0, throttle=1)
        recs.append(r)
    recs += two_jobs()
    log = write(tmp_path, by_ts(recs))
    replayed = silent_pages(replay_log(log).alerts)
    assert [a.scope.key for a in replayed] == [f"node:{DEAD}"]
    assert replayed[0].detected_ts - replayed[0].onset_ts >= liveness.SILENT_MIN_S
    assert firing(service(log).alerts) == []


def two_jobs() -> list[dict]:
    """Step records of job-1 on GPU 0 of every node until 400 s (it stops: cancelled, or
    lost with DEAD) and job-2 on GPU 1 of the nodes but DEAD throughout."""
    others = [n for n in NODES if n != DEAD]
    recs = []
    for s in range(450):
        t = T0 + 2.0 * s + 1.0
        for k, node in enumerate(NODES):
            for job, gpu in (("job-1", 0), ("job-2", 1)):
                if (job == "job-1" and t >= T0 + 400) or (job == "job-2" and node == DEAD):
                    continue
                recs.append({"topic": "telemetry.step", "value": {
                    "ts": t, "job": job, "step": s, "rank": k if job == "job-1" else
                    others.index(node), "node": node, "gpu": gpu,
                    "step_ms": 2000.0, "compute_ms": 1500.0, "comm_ms": 480.0}})
    return recs


def test_a_node_lost_under_its_job_on_shared_nodes_is_paged_alike(tmp_path):
    """job-1 (GPU 0 of every node) loses DEAD at 400 s, its other ranks spinning busy in the
    collective, while job-2 steps on GPU 1 of the other nodes: the replay pages DEAD within
    35 s; the service too (path22: the correlator counts the job's GPUs, busy or idle, as
    the replay's source does -- round 21's counted only nodes the job had to itself)."""
    recs = fleet(seconds=900, dead={DEAD: (400, 1e9)}, job=False)
    recs += two_jobs()
    log = write(tmp_path, by_ts(recs))
    replayed = silent_pages(replay_log(log).alerts)
    assert [a.scope.key for a in replayed] == [f"node:{DEAD}"]
    assert replayed[0].detected_ts - (T0 + 400) <= 35
    assert pages_of(service(log).alerts) == pages_of(replayed)


def _busy_told(samples: list[tuple[float, int, int]]) -> list[tuple[bool, list[int] | None]]:
    """(active, idle_gpus) of the ``gpus_busy`` findings of node-a's thermal ``samples``
    (ts, gpu, throttle)."""
    mon = Monitors()
    found: list[Finding] = []
    for ts, gpu, throttle in samples:
        mon.process(thermal(ts, "node-a", gpu, throttle=throttle), found)
    return [(f.active, f.evidence.get("idle_gpus")) for f in found if f.signal == "gpus_busy"]


def test_a_busy_node_tells_its_idle_gpus_as_they_change():
    """path22: ``gpus_busy`` is told again, with the node's idle GPUs, whenever they change
    while the node has a busy GPU (a job sharing it ends, another goes on); an idle node's
    GPUs coming and going tell nothing new, and the last busy GPU going idle ends it."""
    told = _busy_told([(T0, 0, 0), (T0, 1, 0), (T0 + 10, 0, 1), (T0 + 10, 1, 0),
                       (T0 + 20, 0, 0), (T0 + 30, 0, 1), (T0 + 30, 1, 1), (T0 + 40, 1, 1)])
    assert told == [(True, []), (True, [0]), (True, []), (True, [0]), (False, None)]
    assert _busy_told([(T0, 0, 1), (T0, 1, 1), (T0 + 10, 0, 1)]) == []


def test_the_correlator_keeps_a_busy_nodes_idle_gpus_and_its_since():
    """The correlator keeps when a node became busy across re-tells, its idle GPUs while it
    is busy, and takes a list it cannot trust -- or none, a source before round 22 -- as not
    told (the node-level rule: a node counts only for a job that has it to itself)."""
    corr = CorrelatorPartition(0).correlator

    def tell(ts: float, active: bool, ev: dict) -> None:
        corr.on_finding(Finding(ts, ts, "gpus_busy", "slow_node", "power",
                                liveness.Scope.of_node("node-a"), active, False, 0.0, ev), [])

    tell(T0, True, {"idle_gpus": []})
    tell(T0 + 10, True, {"idle_gpus": [1, 3]})
    assert corr._busy == {"node-a": T0} and corr._idle == {"node-a": frozenset({1, 3})}
    for bad in ({}, {"idle_gpus": ["1"]}, {"idle_gpus": list(range(MAX_IDLE_TOLD + 1))}):
        tell(T0 + 20, True, {"idle_gpus": [0]})
        tell(T0 + 30, True, bad)
        assert corr._busy == {"node-a": T0} and corr._idle == {}
    tell(T0 + 40, False, {})
    assert corr._busy == {} and corr._idle == {}
    f = Finding(T0, T0, "gpus_busy", "slow_node", "power", liveness.Scope.of_node("node-a"),
                True, False, 0.0, {"idle_gpus": [0, 2]})
    msg = decode_message(orjson.dumps({"type": "finding", "source": "s", "id": [1, 0],
                                       "tag": T0, "finding": f.to_dict()}), wall_s=T0 + 60)
    assert finding_of(msg.finding) == f
    bad = f._replace(evidence={"idle_gpus": "0,2"}).to_dict()
    with pytest.raises(ValueError):
        decode_message(orjson.dumps({"type": "finding", "source": "s", "id": [1, 0],
                                     "tag": T0, "finding": bad}), wall_s=T0 + 60)


def test_a_source_before_round_22_keeps_the_node_level_rule(tmp_path, monkeypatch):
    """A thermal source that tells no ``idle_gpus`` (a rolling upgrade) leaves the
    correlator the node-level rule: the shared-node loss waits for the 240 s path there, as on
    round 21's main -- never a page on a busy node's word alone."""
    recs = fleet(seconds=900, dead={DEAD: (400, 1e9)}, job=False)
    recs += two_jobs()
    log = write(tmp_path, by_ts(recs))
    orig = thermal_mod.GpuThermal._load_changed

    def without_idle(self, s, gpu, idle, out):
        n = len(out)
        orig(self, s, gpu, idle, out)
        out[n:] = [f._replace(evidence={}) for f in out[n:]]

    monkeypatch.setattr(thermal_mod.GpuThermal, "_load_changed", without_idle)
    assert firing(service(log).alerts) == []
