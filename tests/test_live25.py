"""A node whose ranks step is not dark (blind15 O4, live25).

A node's collector holds its thermal / ECC / NIC rows for minutes and then sends them at once
(a stuck exporter, a full remote-write buffer, a restarted sidecar) while the ranks on the node
go on stepping: the node computes, so it is alive.  faultline paged it ("check the BMC ...
kernel panic?") at the 240 s bound.  Now the correlator weighs the job layouts and the jobs'
stops and resumes (detector.liveness._stepping): a job with ranks on the node stepping well
past its silence holds the judgement until that job stops.  A node that dies under its job,
a job re-formed without it, a job that stops with the node later: paged as before.  The late
rows, minutes old, neither page nor make the node's silence bound the hold's length.
"""

from __future__ import annotations

import random

import pytest

from detector import liveness
from detector.alerts import Alert, Scope
from detector.engine import Engine
from detector.findings import Finding
from detector.monitors import Monitors
from replay.runner import replay_log
from tests.test_dark20 import DEAD, pages_of, service
from tests.test_liveness import T0, firing, fleet, silent_pages, write
from tests.test_silent19 import by_ts, steps

TOPICS = ("thermal", "ecc", "nic")


def held(node: str, start: float, end: float, *, seconds: float = 1300.0, seed: int = 3,
         **kw) -> list[dict]:
    """A fleet whose ``node`` has its telemetry rows of [start, end) held by its collector and
    sent at once, in no order, 1-5 s after ``end`` (blind15's shape); its ranks step on."""
    recs = fleet(seconds=seconds, **kw)
    rng = random.Random(seed)
    late = [r for r in recs if r["topic"] != "telemetry.step" and r["value"]["node"] == node
            and start <= r["value"]["ts"] - T0 < end]
    ids = {id(r) for r in late}
    out = [r for r in recs if id(r) not in ids]
    rng.shuffle(late)
    at = next(i for i, r in enumerate(out) if r["value"]["ts"] >= T0 + end + rng.uniform(1, 5))
    return out[:at] + late + out[at:]


@pytest.mark.parametrize("hold", [180.0, 300.0])
def test_a_node_whose_collector_holds_its_rows_while_its_ranks_step_is_not_paged(
        tmp_path, hold):
    """node-003's rows of 400 s .. 400 + hold arrive at once after it; job-1's ranks on it step
    throughout: no page (main: "node:node-003" escalated at ~650 s for the 300 s hold)."""
    res = replay_log(write(tmp_path, held("node-003", 400.0, 400.0 + hold)))
    assert firing(res.alerts) == []


def test_the_service_does_not_page_a_node_whose_collector_holds_its_rows(tmp_path):
    """The same in the service, whose telemetry partitions see no steps: the correlator has
    the job's layout and no stop told -- the job steps on its ranks there."""
    log = write(tmp_path, held(DEAD, 300.0, 600.0, seconds=750.0))
    svc = service(log)
    assert pages_of(svc.alerts) == []


def test_a_node_that_dies_after_its_collector_held_its_rows_is_still_paged(tmp_path):
    """node-003's collector holds 300 s and catches up; the node dies at 900 s under the job:
    paged within 35 s of its death, as any node lost under its job."""
    recs = held("node-003", 400.0, 700.0, seconds=1300.0, dead={"node-003": (900, 1e9)})
    pages = silent_pages(replay_log(write(tmp_path, recs)).alerts)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", "node:node-003")]
    assert pages[0].detected_ts - (T0 + 900) <= 35


def test_a_silence_past_its_bound_is_not_learned_as_the_nodes_interval(tmp_path):
    """The held rows' newest time jumps 300 s between two scans: a silence told, not the
    node's cadence -- its bound stays 240 s (main learned a 290-300 s interval: a 1,740-1,800 s
    bound on its next silence)."""
    recs = held("node-003", 400.0, 700.0, seconds=800.0)
    eng = Engine()
    alerts: list[Alert] = []
    for r in recs:
        eng.ingest(r["topic"], r["value"], alerts)
    topics = eng.monitors._alive["node-003"][1]
    assert set(topics) == set(TOPICS)
    for st in topics.values():
        assert st[liveness._GAP] < 40.0 and liveness.bound_s(st[liveness._GAP]) == 240.0
    assert firing(alerts) == []


def test_a_job_stopped_with_the_node_and_stepping_again_is_no_proof(tmp_path):
    """node-003 dies at 400 s, its job stalls with it and is re-formed at 520 s on the other
    nodes, its ranks on node-003 left in the layout (an elastic restart, smaller): the job
    steps again, but it stopped as the node went quiet -- paged, as before."""
    from tests.test_liveness import NODES
    others = [n for n in NODES if n != "node-003"]
    recs = fleet(seconds=1000, dead={"node-003": (400, 1e9)}, job=False)
    recs += steps("job-1", NODES, 0, 400) + steps("job-1", others, 520, 1000, step0=200)
    pages = silent_pages(replay_log(write(tmp_path, by_ts(recs))).alerts)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", "node:node-003")]


def _stop(job: str, ts: float, active: bool, ev: dict) -> Finding:
    return Finding(ts, ts, "silent", "unattributed", "unknown", Scope.of_job(job), active,
                   False, 0.0, ev, job)


def test_a_source_tells_a_stopped_job_stepping_again_once():
    """_stops: a job silent past its stop bound is told stopped, then -- at its next step --
    resumed (inactive, ``resumed_ts`` / ``stopped_ts``: a correlator before round 25 passes
    over it), once; stepping on, nothing more."""
    from detector.events import StepSample
    from detector.testing import thermal
    mon = Monitors()
    out: list[Finding] = []
    pause = range(30, 90)  # no step in [30 s, 90 s): the clock moved on by another node's samples
    for k in range(150):
        mon.process(thermal(T0 + k + 0.5, "n2", 0), out)
        if k not in pause:
            for rank in range(2):
                mon.process(StepSample(ts=T0 + k + 0.6, job="j", step=k, rank=rank, node="n1",
                                       gpu=rank, step_ms=1000.0, compute_ms=800.0,
                                       comm_ms=150.0), out)
    told = [(f.active, sorted(f.evidence)) for f in out if f.signal == "silent"
            and f.scope.level == "job" and "hang_s" not in f.evidence]
    assert told == [(True, ["last_step_ts", "step_period_s"]),
                    (False, ["resumed_ts", "step_period_s", "stopped_ts"])]
    assert mon._jobs["j"].stop_told == -float("inf")


def test_a_resumed_stop_is_stepping_and_a_stop_with_the_node_is_not():
    """_stepping's rules on a correlator's stops: no stop, or stopped well before the node went
    quiet and stepping again, proves it alive past the stop bound; stopped with it (whether
    stepping again or not) does not; stopped well after it does."""
    from detector.correlate import Correlator
    from detector.thresholds import Thresholds
    corr = Correlator(Thresholds())
    corr._placement.learn("j", [[0, "n1", 0, 0], [1, "n2", 0, 1]], T0)
    topics = {"ecc": _stop("x", T0, True, {"interval_s": 10.0})}
    last, now = T0 + 100.0, T0 + 100.0 + 240.0

    def stepping(stop: Finding | None, at: float = now) -> bool:
        corr._silent[liveness._STOPS] = {} if stop is None else {"j": stop}
        return liveness._stepping(corr, "n1", topics, last, at)

    assert stepping(None)
    assert not stepping(None, last + 60.0)  # (a stall would not be told yet)
    assert not stepping(_stop("j", last + 25, True, {"last_step_ts": last + 5}))
    assert stepping(_stop("j", last + 150, True, {"last_step_ts": last + 130}))
    assert not stepping(_stop("j", last + 150, False, {"resumed_ts": last + 130,
                                                       "stopped_ts": last + 2}))
    assert stepping(_stop("j", last + 150, False, {"resumed_ts": last - 20,
                                                   "stopped_ts": last - 80}))
    assert not liveness._stepping(corr, "n3", topics, last, now)  # (no job there)



def test_a_held_judgement_is_made_at_the_jobs_stop():
    """The correlator alone: n1 silent on every topic past its bound, its job laid out there
    and no stop told (a job of long steps: its stop bound is three steps) -- held; the stop,
    told later, names a last step as n1 went quiet: paged then (_on_stop -> _judge).  A stop
    naming a step well past its silence (the job ran on, then ended) pages nothing."""
    from detector.correlate import Correlator
    from detector.thresholds import Thresholds
    last = T0 + 400.0
    for step, pages in ((last - 1.0, ["node:n1"]), (last + 200.0, [])):
        corr = Correlator(Thresholds())
        corr._placement.learn("j", [[0, "n1", 0, 0], [1, "n2", 0, 1]], T0)
        out: list[Alert] = []
        for w in TOPICS:
            corr.on_finding(Finding(
                last + 250.0, last, "silent", "unattributed", "unknown", Scope.of_node("n1"),
                True, False, 0.9, {"topic": w, "last_ts": last, "interval_s": 10.0,
                                   "bound_s": 240.0, "nodes_heard_since": 3,
                                   "steps_seen": True, "jobs": [["j", 1, last - 1.0]]}), out)
        assert out == []
        corr.on_finding(_stop("j", last + 320.0, True, {"last_step_ts": step,
                                                        "step_period_s": 100.0}), out)
        assert [a.scope.key for a in out if a.status == "firing"] == pages
