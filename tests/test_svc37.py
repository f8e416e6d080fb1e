"""One engine: the same pages whatever other streams, the CPU or the batching do (svc37, issue 14).

A page must be a function of the records -- their event times and DESIGN's 5 s of disorder --
never of how other topics' records interleave with a job's, how fast a worker polls, how a
batch is cut or which partitions one worker holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from bench import metamorphic as mm
from detector.events import THERMAL
from detector.monitors import Monitors
from detector.pipeline.worker import PipelineWorker
from detector.testing import T0, healthy_job, thermal
from tests.conftest import write_service_incident


def _written(late_s: float, thermal_every_s: float | None) -> list:
    """A 16-rank job stepping every 6 s whose rank 15 is 35 % slow from step 12 and whose
    step messages are written ``late_s`` after its peers' (within DESIGN's 5 s of disorder),
    with, every ``thermal_every_s``, a thermal sample of each of its GPUs: in write order."""
    steps = list(healthy_job(ranks=16, steps=40, step_s=6.0, slow={15: 1.35}, slow_from=12))
    rows = [(e.ts + (late_s if e.rank == 15 else 0.0), e) for e in steps]
    if thermal_every_s is not None:
        end = steps[-1].ts + late_s
        k = 1
        while T0 + k * thermal_every_s <= end:
            t = T0 + k * thermal_every_s
            rows += [(t, thermal(t, f"node-{n:03d}", g)) for n in range(2) for g in range(8)]
            k += 1
    return [e for _, e in sorted(rows, key=lambda r: r[0])]


def _slow_findings(records: list) -> tuple[list[tuple[str, int | None]], int]:
    mon = Monitors()
    found: list = []
    for e in records:
        mon.process(e, found)
    mon.finish(found)
    job = mon._jobs["job-1"]
    steps = {"slow_rank", "slow_burst", "job_layout"}  # (the thermal rows' own are not compared)
    return sorted({(f.signal, f.rank) for f in found if f.signal in steps}), job.late


def test_a_rank_written_after_other_topics_records_is_in_its_step() -> None:
    """meta35 blind7 G3's mechanism: one rank's step message written 2 s after its peers',
    while other topics' records (a thermal sample of each GPU every 0.5 s) moved the replay's
    one clock on.  The step's straggler wait ran on that clock, so the step was decided
    without the rank (straggler_wait_s 0.5 s), which came late and was never compared: its
    35 % slowdown was never seen (a service's step partition, moved by steps only, saw it).
    The wait runs on the job's own clock: the same ranks, the same findings, with the
    thermal rows or without them.  (Fails before: 39 of its 40 messages late.)"""
    alone, late_alone = _slow_findings(_written(2.0, None))
    with_thermal, late_mixed = _slow_findings(_written(2.0, 0.5))
    assert late_alone == late_mixed == 0
    assert ("slow_rank", 15) in alone
    assert with_thermal == alone


def _watermark_of(out: Any, source: str) -> float:
    clocks = orjson.loads(out.findings[-1].value)["clocks"]
    return next(ts for name, ts, _ in clocks if name == source)


def test_a_partition_with_records_not_handed_over_is_not_reported_past_them() -> None:
    """A worker back from a stall (no core for seconds) is handed some partitions' records
    before others': here thermal:0's, records of both having reached Kafka meanwhile.  The
    fetches say thermal:1 is not at its end (its records are there, past its offset), but its
    caught-up flag was as of its last hand-over, before the stall: taken for idle, its
    watermark was reported at what the worker's inputs had reached by then -- 9 s past its
    own records still to come -- and the correlator decided a slow rank's wait for its
    throttle sample without it (the in-process two-worker run of the service's incident,
    seed 12 of bench/metamorphic.Starved(rate=5000, stall_s=4, stall_share=0.2): an extra
    slow_node/unknown escalation of gpu:node-000/3, the broker test's).  With fetch ends,
    what they say holds.  (Fails before: reported at T0 + 9.5 against its own T0 + 1.)"""
    tps = [(THERMAL, 0), (THERMAL, 1)]
    w = PipelineWorker(telemetry_topics={THERMAL: THERMAL}, findings_topic="findings",
                       findings_partitions=1, expected_sources=[f"{t}:{p}" for t, p in tps])
    w.sources = {tp: w.new_partition(tp, T0) for tp in tps}  # type: ignore[misc]
    ends = {tp: (T0 + 1.0, 11) for tp in tps}  # (sent, high watermark) of the last fetch

    def at_end(tp: Any, offset: int) -> float | None:
        sent, high = ends[tp]
        return sent if offset + 1 >= high else None

    def batch(tp: tuple[str, int], first: int, ts: list[float], node: str) -> list:
        return [(first + i, b"k", orjson.dumps({"ts": t, "node": node, "gpu": 0,
                                                "gpu_temp_c": 60.0, "throttle": 0}),
                 round(t * 1000)) for i, t in enumerate(ts)]

    first = [T0 + 0.1 * k for k in range(11)]
    out = w.process({tps[0]: batch(tps[0], 0, first, "node-a"),
                     tps[1]: batch(tps[1], 0, first, "node-b")}, T0 + 1.0,
                    lambda tp, off: True, arrivals_per_s=1000.0, at_end=at_end)
    assert _watermark_of(out, "telemetry.thermal:1") == T0 + 1.0
    # The stall: both partitions' records of 1.1 .. 9.9 s reached Kafka; the fetch at 10 s
    # found both with records to hand over; only thermal:0's are handed over now.
    later = [T0 + 1.0 + 0.1 * k for k in range(1, 90)]
    ends = {tp: (T0 + 10.0, 100) for tp in tps}
    out = w.process({tps[0]: batch(tps[0], 11, later, "node-a")}, T0 + 10.0,
                    lambda tp, off: tp == tps[0], arrivals_per_s=1000.0, at_end=at_end)
    assert _watermark_of(out, "telemetry.thermal:0") == pytest.approx(T0 + 9.9)
    assert _watermark_of(out, "telemetry.thermal:1") == T0 + 1.0


STARVED = [mm.Starved(rate=5000.0, stall_s=4.0, stall_share=0.2),
           mm.Starved(rate=20000.0, stall_s=3.0, stall_share=0.3, batch=500),
           mm.Starved(rate=20000.0, batch=1),
           mm.Starved(stall_s=4.0, stall_share=0.2, batch=50)]


@pytest.mark.parametrize("k", range(len(STARVED)))
def test_two_starved_workers_raise_the_replay_s_problems(k: int, tmp_path: Path) -> None:
    """The broker test's shape in process (tests/integration/test_service_scaleout.py: two
    workers sharing the partitions, the log produced as fast as it goes): the service's
    incident through two PipelineWorkers -- a backlog or a live feed, stalls of either
    worker and of the producer up to 4 s (below the source timeout: a worker silent past it
    is taken for gone), fetches of 1 to 500 records a partition, a few partitions a fetch --
    raises the in-process replay's firing problems, whatever the seed."""
    log = write_service_incident(tmp_path / "small.jsonl")
    case = mm.load_case(log)
    want = _problems(mm.run(case))
    for seed in range(4):
        assert _problems(mm.run_partitioned(case, seed, starved=STARVED[k])) == want, seed


def _problems(alerts: list) -> set[tuple[str, str, str]]:
    return {(a.topic, a.dedup_key, a.cause) for a in alerts if a.status == "firing"}


def test_a_worker_starved_from_the_feed_s_start_holds_its_empty_partitions(
        tmp_path: Path) -> None:
    """The broker test's extra escalation at load 12, in process: the worker holding
    node-000's thermal partition said each of its empty partitions was at its end before the
    feed began, then had no core for 3 s; the correlator let those partitions go
    ``empty_grace_s`` (2 s) after the feed's first clock on that word from before it, ran to
    46 s, and escalated gpu:node-000/3's slow rank unknown before its throttle sample (30.2 s)
    came -- the thermal isolation followed, the escalation resolved.  An empty source is let go
    on what it said after the feed began (CorrelatorPartition._said_since).  (Fails before:
    the extra fl:esc:slow_node:gpu:node-000/3.)"""
    case = mm.load_case(write_service_incident(tmp_path / "small.jsonl"))
    starved = mm.Starved(rate=20000.0, stall_s=3.0, stall_share=0.3, batch=500)
    assert _problems(mm.run_partitioned(case, 27, starved=starved)) == _problems(mm.run(case))


@pytest.mark.parametrize("lag_s", [3.0, 6.0])
def test_a_worker_whose_fetches_lag_does_not_let_its_empty_partitions_go(
        lag_s: float, tmp_path: Path) -> None:
    """The broker scale-out test's extra escalation at load 10-12 (2 of 7 runs after round
    37), in process: a worker whose fetcher thread is starved (its fetch answers ``lag_s``
    late) while its heartbeats run says its empty partitions are at their ends -- the high
    watermark it knows is the stale fetch's -- after the feed began; taken as of when it was
    heard, the word let node-000's thermal partition go and gpu:node-000/3's slow rank was
    escalated unknown before its throttle sample came.  The word carries when the fetch that
    found the partition empty was sent (the watermarks' ``ended``), and counts as of then
    (CorrelatorPartition._said), on the correlator's own clock: the service's stages run on
    a monotonic clock, the fetch ends on the wall's (Starved.behind_s).  (Fails before: seed
    2, at 3 s and at 6 s, the extra fl:esc:slow_node:gpu:node-000/3 -- seeds 0-7 at 1, 3, 6
    s, backlog and live: 2 of 48 -- also with a7b5ca0, which took the wall time of a fetch
    for the monotonic clock's: every fetch as sent when heard.)"""
    case = mm.load_case(write_service_incident(tmp_path / "small.jsonl"))
    want = _problems(mm.run(case))
    starved = mm.Starved(rate=5000.0, fetch_lag_s=lag_s)
    for seed in range(4):
        assert _problems(mm.run_partitioned(case, seed, starved=starved)) == want, seed
