"""async38 (round 38, issue 10): a worker slow in a job whose steps no two ranks share.

detector.steps.asynchronous: asynchronous data parallelism against parameter servers reports
each worker's update as its own global step, so the step-at-a-time peer comparison has one rank
a step; the workers are compared over 20 s windows instead.  Behaviour: a worker 20 % slow is
told ``slow_rank`` after three windows (blind29 F2; F1 through detector.stuck_clock -- the
cases in tests/test_blind29_cases.py, strict xfails before); the whole job slower alike, noise,
and every synchronous job are not; a told worker is withdrawn when the job stops.
"""

from __future__ import annotations

import random

from detector.events import StepSample
from detector.steps import JobMonitor
from detector.thresholds import Thresholds

T0 = 1_790_000_000.0
WORKERS = 16


def _async_run(seconds: float, slow: dict[int, float] | None = None, *, all_slow_from=None,
               seed: int = 1) -> tuple[JobMonitor, list]:
    """An asynchronous job of WORKERS workers (2 nodes of 8), each stepping every ~0.75 s,
    its step number the job's global count; ``slow``: rank -> factor from T0 + 30 s."""
    rng = random.Random(seed)
    jm = JobMonitor("ps", Thresholds())
    out: list = []
    nxt = {r: T0 + rng.uniform(0.0, 0.75) for r in range(WORKERS)}
    step = 1000
    while True:
        r = min(nxt, key=nxt.get)
        ts = nxt[r]
        if ts > T0 + seconds:
            break
        c = 520.0 * rng.lognormvariate(0.0, 0.03)
        if slow and r in slow and ts > T0 + 30.0:
            c *= slow[r]
        if all_slow_from is not None and ts > T0 + all_slow_from:
            c *= 1.3
        step += 1
        jm.add(StepSample(ts=ts, job="ps", step=step, rank=r, node=f"n{r // 8}", gpu=r % 8,
                          step_ms=c + 200.0, compute_ms=c, comm_ms=200.0), out)
        nxt[r] = ts + (c + 200.0) / 1000.0
    return jm, out


def _told(out: list) -> list:
    return [f for f in out if f.signal == "slow_rank" and f.evidence.get("asynchronous")]


def test_an_async_worker_20_percent_slow_is_told_after_three_windows() -> None:
    _, out = _async_run(150.0, {5: 1.2})
    told = _told(out)
    assert [(f.rank, f.active, f.scope.node, f.scope.gpu) for f in told] == [(5, True, "n0", 5)]
    f = told[0]
    assert 1.15 < f.evidence["compute_ratio_to_peers"] < 1.25
    assert T0 + 30.0 + 55.0 <= f.ts <= T0 + 30.0 + 85.0  # three windows of 20 s


def test_an_async_job_slower_alike_and_its_noise_tell_nothing() -> None:
    _, out = _async_run(200.0, all_slow_from=60.0)
    assert _told(out) == []
    for seed in range(2, 5):
        assert _told(_async_run(200.0, seed=seed)[1]) == []


def test_a_told_worker_is_withdrawn_when_the_job_stops() -> None:
    jm, out = _async_run(150.0, {5: 1.2})
    assert [f.active for f in _told(out)] == [True]
    jm.expire(T0 + 150.0 + 60.0, out)
    assert [f.active for f in _told(out)] == [True, False]


def test_a_synchronous_job_is_never_judged_asynchronous() -> None:
    """Every rank reports every step: the windows see shared step numbers, never judge."""
    jm = JobMonitor("sync", Thresholds())
    out: list = []
    rng = random.Random(7)
    for i in range(300):
        ts = T0 + i * 0.8
        for r in range(WORKERS):
            c = 520.0 * rng.lognormvariate(0.0, 0.03) * (1.2 if r == 5 and i > 30 else 1.0)
            jm.add(StepSample(ts=ts + 0.001 * r, job="sync", step=i, rank=r, node=f"n{r // 8}",
                              gpu=r % 8, step_ms=c + 200.0, compute_ms=c, comm_ms=200.0), out)
    assert _told(out) == []
    assert any(f.signal == "slow_rank" and f.rank == 5 and f.active for f in out)  # (its own)
