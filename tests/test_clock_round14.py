"""Round 14 (room clock14): the correlator's clock -- review 12's C1 and C2.

C1: a collector later than DESIGN's 5 s of disorder (Telegraf flushes every 10 s) brought the
throttle sample that explains a slow rank after the rank's ``unknown`` escalation.  Only a wait
for an explanation (the Correlator's "slow" timers) is now held on a second clock, each
source's lateness up to ``EXPLAIN_LATE_S`` past the median; the correlator's clock, which
every other decision and every alert answering a finding waits on, keeps the 5 s cap.

C2: a producer that stamps CreateTime with the metric's time (Telegraf's default) looked 0 s
late.  A record not there when a fetch found its partition at its end reached Kafka after that
fetch, whatever its timestamp says: the worker floors its arrival there (and the service
creates its telemetry topics with LogAppendTime).

The harness is round 11's one worker (tests/test_review_round11.py: step, thermal and ECC
partitions and the findings partition, a fetch every 0.1 s, a busy second job).
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec
import numpy as np
import pytest
from msgspec.structs import replace

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.events import ECC, STEP, Event
from detector.pipeline.arrival import EXPLAIN_LATE_S
from detector.testing import T0, ecc, feed, step, thermal
from tests.test_review_round11 import busy_steps, one_worker_alerts, slow_rank_arrivals
from tests.test_review_round12 import _telegraf_thermal

EXPLAINED = [(ISOLATION, "thermal", "gpu:node-000/3")]


def _late_thermal(late_s: float, *, xid_at: float | None = None, fetch_ends: bool = False,
                  decided: list | None = None) -> list[tuple[str, str, str]]:
    """throttled_slow_rank() with its thermal samples ``late_s`` late, beside a busy job and
    node-fast's prompt ECC sample every second (an XID 79 at ``xid_at`` s)."""
    arrivals = slow_rank_arrivals(late_s)
    arrivals += [(T0 + k, (ECC, 0), msgspec.json.encode(ecc(
        T0 + k, "node-fast", 0, xid=79 if xid_at is not None and k == xid_at else None)))
        for k in range(120)]
    return one_worker_alerts(arrivals + busy_steps(), fetch_ends=fetch_ends, decided=decided)


@pytest.mark.parametrize("late_s", [10.0, 20.0, 28.0])
@pytest.mark.parametrize("fetch_ends", [False, True])
def test_a_collector_up_to_thirty_seconds_late_still_explains_the_slow_rank(
        late_s: float, fetch_ends: bool) -> None:
    # main fb587f5: escalation unknown gpu:node-000/3 first (from 6 s late on), then thermal.
    assert _late_thermal(late_s, fetch_ends=fetch_ends) == EXPLAINED


def test_a_collector_later_than_the_bound_is_not_waited_for() -> None:
    # The bound (EXPLAIN_LATE_S past the median): a source 40 s late is a clock that lags, not
    # a delivery -- the slow rank is paged to a human as before (the throttle sample, 40 s
    # late, comes after the harness's end).
    assert EXPLAIN_LATE_S < 40.0
    assert _late_thermal(40.0) == [(ESCALATION, "unknown", "gpu:node-000/3")]


@pytest.mark.parametrize("fetch_ends", [False, True])
def test_a_late_collector_holds_no_hardware_isolation_longer_than_before(
        fetch_ends: bool) -> None:
    # Only the wait for an explanation is held up to 30 s: node-fast's XID 79 (its ECC
    # partition prompt) is isolated within the 5 s the correlator's clock allows a late
    # source, not after the 20 s the thermal collector is late.
    decided: list = []
    found = _late_thermal(20.0, xid_at=90.0, fetch_ends=fetch_ends, decided=decided)
    assert sorted(found) == sorted([*EXPLAINED, (ISOLATION, "gpu_hardware", "gpu:node-fast/0")])
    (xid_at,) = [now for _, cause, _, now in decided if cause == "gpu_hardware"]
    assert xid_at - (T0 + 90.0) <= 5.0 + 0.6  # the cap, a fetch and hold_back_s


@pytest.mark.parametrize("late_s", [2.0, 4.0, 10.0])
@pytest.mark.parametrize("fetch_ends", [False, True])
def test_a_collector_stamping_metric_time_is_measured_by_its_fetches(
        late_s: float, fetch_ends: bool) -> None:
    # main fb587f5: escalation unknown first at every lateness (it looked 0 s late).
    assert _telegraf_thermal(late_s, stamp_event_time=True, fetch_ends=fetch_ends) == EXPLAINED


@pytest.mark.parametrize("fetch_ends", [False, True])
def test_a_prompt_source_stamping_metric_time_holds_nobody(fetch_ends: bool) -> None:
    # The floor is a lower bound of the arrival: a collector stamping metric time that
    # delivers at once is measured prompt -- node-fast's XID isolated as soon as with send
    # time stamps.
    times = []
    for stamp in (False, True):
        decided: list = []
        arrivals = slow_rank_arrivals(0.05)
        arrivals += [(T0 + k + 0.02, (ECC, 0), msgspec.json.encode(ecc(
            T0 + k, "node-fast", 0, xid=79 if k == 90 else None)),
            *((int((T0 + k) * 1000),) if stamp else ())) for k in range(120)]
        one_worker_alerts(arrivals + busy_steps(), fetch_ends=fetch_ends, decided=decided)
        (at,) = [now for _, cause, _, now in decided if cause == "gpu_hardware"]
        times.append(at)
    assert times[1] == pytest.approx(times[0], abs=0.11)


# -- one path for a partition's first clock gone back (Monitors._first_node) ----------------

AHEAD = "node-002"


def first_node_ahead(skew: float, *, steps: int = 110, slow_from: int = 40
                     ) -> list[tuple[float, Event]]:
    """(arrival, record): job-1, 24 ranks on node-000..002, a step a second; node-002 stamps
    ``ts + skew`` (NTP lost) and its rank 16's first message reaches the partition before any
    other; ranks 3 and 5 (node-000) 1.3x slow from steps 40 and 42 -- one node escalation with
    every clock right.  Steps only: the step partition is the one source with data, so its
    clock is the correlator's."""
    rng = np.random.default_rng(5)
    recs = []
    for s in range(steps):
        comp = 700.0 * rng.lognormal(0.0, 0.015, 24)
        comp[3] *= 1.3 if s >= slow_from else 1.0
        comp[5] *= 1.3 if s >= slow_from + 2 else 1.0
        sm = round(float(comp.max()) + 250.0, 2)
        for r in range(24):
            t = T0 + 5 + s + 0.02 * r
            recs.append((t, step(t + (skew if r >= 16 else 0.0), r, s, step_ms=sm,
                                 compute_ms=round(float(comp[r]), 2), dp=r)))
    recs.sort(key=lambda x: x[0])
    k = next(i for i, (_, e) in enumerate(recs) if e.rank == 16)
    recs.insert(0, (T0 + 4.9, recs.pop(k)[1]))  # node-002's first message first
    return recs


def _engine(recs: list[tuple[float, Event]]) -> list[tuple[str, str, str]]:
    return [(a.topic, a.cause, a.scope.key) for a in feed(Engine(), [e for _, e in recs])
            if a.status == "firing"]


def _service(recs: list[tuple[float, Event]]) -> list[tuple[str, str, str]]:
    return one_worker_alerts([(t, (STEP, 0), msgspec.json.encode(e)) for t, e in recs])


NODE_000 = [(ESCALATION, "unknown", "node:node-000")]


def test_the_first_node_case_with_every_clock_right() -> None:
    # (the reference: the two slow ranks of node-000, one node escalation, both drivers)
    recs = first_node_ahead(0.0)
    assert _engine(recs) == _service(recs) == NODE_000


@pytest.mark.parametrize("skew", [30.0, 170.0])
def test_a_first_node_ahead_gives_the_engine_s_alerts_through_the_service(skew: float) -> None:
    # main fb587f5: nothing from either driver -- job-1's monitor kept node-002's first
    # message's clock (its steps decided as their first messages came, 756 messages late, the
    # slow ranks' waits timed 170 s ahead); with the job fixed alone, the service's correlator
    # kept the step source's watermark at node-002's clock (watermarks only rose) and fired
    # nothing: only the Engine acted on Monitors.rewound.
    recs = first_node_ahead(skew)
    assert _engine(recs) == _service(recs) == NODE_000


def test_a_first_node_ahead_leaves_the_job_its_size() -> None:
    eng = Engine()
    feed(eng, [e for _, e in first_node_ahead(170.0)])
    job = eng.monitors._jobs["job-1"]
    assert job._expected == 24
    assert job.late <= 24  # step 0's messages, which went with the monitor its clock spoilt
    assert eng.monitors._skew[AHEAD][0] == pytest.approx(170.0, abs=1.0)


@pytest.mark.kafka
def test_a_first_node_ahead_through_kafka_raises_the_replay_s_problems(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """The same log through a real worker (16 telemetry partitions, the step partition the one
    with data) and through the in-process replay: the same firing problems."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "integration"))
    from service_harness import Deployment, expected_problems, wait_for

    from detector.thresholds import Thresholds
    from replay.log import write_records

    log = tmp_path / "first-node-ahead.jsonl"
    write_records(log, ({"topic": STEP, "value": {
        k: v for k, v in msgspec.structs.asdict(e).items() if v is not None}}
        for _, e in first_node_ahead(170.0)))
    expected = expected_problems(log, None)
    assert {(kind, scope) for _, kind, scope, _ in expected} == {("slow_node", "node:node-000")}
    dep = Deployment(kafka_bootstrap, tmp_path)
    try:
        dep.produce_all(log)
        worker = dep.start_worker("w1")
        # (service_harness.settled_clock reads the log's newest ts: node-002's, 170 s ahead)
        cfg = Thresholds()
        fleet_end = max(e.ts for _, e in first_node_ahead(0.0))
        target = fleet_end + cfg.lateness_s + max(cfg.escalate_after_s, cfg.switch_window_s) + 1
        wait_for(f"a correlator clock past {target:.1f}", lambda: worker.released() >= target,
                 90, on_timeout=worker.log_tail)
        assert dep.firing_problems() == expected
        assert worker.terminate() == 0, worker.log_tail()
    finally:
        dep.stop_all()


# -- a node whose clock is behind (item 2): taken at its offset, as a node ahead ------------


def mixed_job(skew: float, *, therm: bool, steps: int = 200, slow_from: int = 100
              ) -> list[Event]:
    """job-1, 24 ranks on node-000..002, a step a second, node-002's clock ``skew`` off (its
    ``ts`` + skew); rank 19 (node-002 GPU 3) 1.3x slow from step 100 -- and, with
    ``therm``, its GPU throttled (0x40, 88 C) from then on, every node's GPUs sampled at 1
    Hz.  In the order the records were taken (arrival order)."""
    rng = np.random.default_rng(5)
    recs = []
    for s in range(steps):
        comp = 700.0 * rng.lognormal(0.0, 0.015, 24)
        comp[19] *= 1.3 if s >= slow_from else 1.0
        sm = round(float(comp.max()) + 250.0, 2)
        for r in range(24):
            t = T0 + 5 + s + 0.02 * r
            recs.append((t, step(t + (skew if r >= 16 else 0.0), r, s, step_ms=sm,
                                 compute_ms=round(float(comp[r]), 2), dp=r)))
        for n in range(3 if therm else 0):
            for g in range(8):
                t = T0 + 5 + s + 0.5 + 0.01 * g
                hot = n == 2 and g == 3 and s >= slow_from
                recs.append((t, thermal(t + (skew if n == 2 else 0.0), f"node-{n:03d}", g,
                                        temp_c=88.0 if hot else 65.0,
                                        clock_mhz=1500.0 if hot else 1980.0,
                                        throttle=0x40 if hot else 0)))
    recs.sort(key=lambda x: x[0])
    return [e for _, e in recs]


def _stamped(alerts: list, skew: float) -> list[tuple[str, str, str, float, float]]:
    """(topic, cause, scope, onset s from T0 in the fleet's time, latency s) of each firing
    alert: an alert stamped at node-002's own time is ``skew`` off."""
    return [(a.topic, a.cause, a.scope.key, round(a.onset_ts - T0, 1),
             round(a.detection_latency_s, 1)) for a in alerts if a.status == "firing"]


@pytest.mark.parametrize("therm", [False, True])
@pytest.mark.parametrize("skew", [-60.0, -170.0, -290.0, 30.0, 170.0, 290.0])
def test_a_node_behind_or_ahead_is_caught_and_stamped_as_with_its_clock_right(
        skew: float, therm: bool) -> None:
    # main fb587f5, behind 60/170/290 s: the slow GPU's escalation stamped at node-002's time,
    # its detection_latency_s 65.9 / 175.9 / 295.9 s for a rank escalated 6 s after its onset
    # (the correlator decided it in the fleet's time, its onset was the node's); with the
    # throttle, the thermal isolation's onset 60-290 s before the fleet's.  Ahead: right.
    right = _stamped(feed(Engine(), mixed_job(0.0, therm=therm)), 0.0)
    assert right == ([(ISOLATION, "thermal", "gpu:node-002/3", 105.5, 2.0)] if therm else
                     [(ESCALATION, "unknown", "gpu:node-002/3", 105.4, 6.1)])
    eng = Engine()
    got = _stamped(feed(eng, mixed_job(skew, therm=therm)), skew)
    assert [(t, c, s, lat) for t, c, s, _o, lat in got] == [
        (t, c, s, lat) for t, c, s, _o, lat in right]
    assert abs(got[0][3] - right[0][3]) <= 1.0  # onset in the fleet's time
    job = eng.monitors._jobs["job-1"]
    assert (job.late, job._expected) == (0, 24)
    assert eng.monitors._skew["node-002"][0] == pytest.approx(skew, abs=1.0)


def test_a_backlog_catching_up_is_no_clock_behind() -> None:
    # node-002's collector stalls 60 s, then sends its backlog at once and goes on: its records
    # come less behind one after another -- a delivery, not a clock (clock13's dropped first
    # version took a 72 s burst of blind4 fabric-3tier for one and set every node an offset).
    evs = mixed_job(0.0, therm=True)
    stall = [e for e in evs if e.node == "node-002" and T0 + 60 <= e.ts < T0 + 120]
    rest = [e for e in evs if not (e.node == "node-002" and T0 + 60 <= e.ts < T0 + 120)]
    at = next(i for i, e in enumerate(rest) if e.ts >= T0 + 120)
    eng = Engine()
    feed(eng, rest[:at] + stall + rest[at:], finish=False)
    assert eng.monitors._skew == {}


def test_a_node_whose_clock_is_put_right_drops_its_offset() -> None:
    # node-002 170 s behind for 150 s, then chrony steps it right: its offset goes, nothing
    # else moves.
    evs = mixed_job(-170.0, therm=False, steps=260)
    fixed = [replace(e, ts=e.ts + 170.0) if e.node == "node-002" and e.ts + 170.0 >= T0 + 150
             else e for e in evs]
    eng = Engine()
    feed(eng, fixed, finish=False)
    assert "node-002" not in eng.monitors._skew
    assert eng.monitors._jobs["job-1"]._expected == 24


def test_a_node_behind_survives_a_snapshot() -> None:
    evs = mixed_job(-170.0, therm=False)
    eng = Engine()
    feed(eng, evs[:2000], finish=False)
    again = Engine.restore(eng.snapshot())
    assert again.monitors._skew == eng.monitors._skew
    assert again.monitors._lagging == eng.monitors._lagging
    assert [a.to_dict() for a in feed(again, evs[2000:])] == [
        a.to_dict() for a in feed(eng, evs[2000:])]
