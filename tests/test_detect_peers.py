"""Slow ranks and gradient-norm SDC where the easy signals are missing (issue 10 matrix cells).

A small synchronous-training model: every rank works ``busy`` ms (its compute
plus data loading), the step ends when the slowest is done plus a collective
floor, and each rank's ``comm_ms`` is what it waited -- so a slow rank waits
least, as in real synchronous training.
"""

from __future__ import annotations

import numpy as np

from detector import testing as t
from detector.events import StepSample
from detector.monitors import Monitors
from detector.thresholds import Thresholds


def _job(steps: int, *, tp: int = 1, pp: int = 1, dp: int = 8, slow: dict[int, float] | None = None,
         slow_from: int = 0, grad: dict[int, dict[int, float]] | None = None,
         stage_factor: dict[int, float] | None = None, replica_grad: dict[int, float] | None = None,
         fields: str = "all", seed: int = 1) -> list[StepSample]:
    """Steps of a tp x pp x dp job; ``slow`` rank -> factor on its compute from ``slow_from``;
    ``grad`` step -> {rank: factor on its grad_norm}; ``replica_grad`` step -> factor on the
    grad_norm of every rank of replica 0 (a hard batch)."""
    rng = np.random.default_rng(seed)
    n = tp * pp * dp
    tp_of = np.arange(n) % tp
    pp_of = (np.arange(n) // tp) % pp
    dp_of = np.arange(n) // (tp * pp)
    base = 600.0 * (1 + 0.004 * rng.standard_normal(n))
    if stage_factor:
        for stage, f in stage_factor.items():
            base[pp_of == stage] *= f
    shard = np.exp(0.2 * rng.standard_normal(tp * pp))[pp_of * tp + tp_of]
    out: list[StepSample] = []
    ts = t.T0
    for k in range(steps):
        busy = base * np.exp(0.015 * rng.standard_normal(n)) + rng.uniform(20, 40, n)
        if slow and k >= slow_from:
            for r, f in slow.items():
                busy[r] *= f
        step_ms = float(busy.max()) + 250.0
        ts += step_ms / 1000
        g = (shard * np.exp(0.1 * rng.standard_normal(dp))[dp_of]
             * (1 + 0.005 * rng.standard_normal(n)))
        for r, f in ((grad or {}).get(k) or {}).items():
            g[r] *= f
        if replica_grad and k in replica_grad:
            g[dp_of == 0] *= replica_grad[k]
        for r in range(n):
            compute = None if fields != "all" else round(float(busy[r]) - 30.0, 2)
            comm = None if fields == "step_only" else round(step_ms - float(busy[r]), 2)
            out.append(t.step(ts + 0.001 * r, r, k, step_ms=step_ms + 1.0, compute_ms=compute,
                              comm_ms=comm, tp=int(tp_of[r]), pp=int(pp_of[r]), dp=int(dp_of[r]),
                              grad_norm=round(float(g[r]), 4)))
    return out


def _run(events: list[StepSample]) -> tuple[list, Monitors]:
    m = Monitors(Thresholds())
    out: list = []
    for e in events:
        m.process(e, out)
    m.advance(events[-1].ts + 60.0, out)
    return [f for f in out if f.active and f.verdict], m


def _slow(findings: list) -> list:
    return [f for f in findings if f.signal == "slow_rank"]


def _step_of(f) -> int:
    return int(f.evidence["step"])


def test_no_compute_ms_a_slow_rank_is_found_from_step_minus_comm():
    found, _ = _run(_job(80, slow={5: 1.12}, slow_from=40, fields="no_compute"))
    slow = _slow(found)
    assert [f.rank for f in slow] == [5]
    assert _step_of(slow[0]) - 40 <= 10  # the 10 %-slowdown target, in steps


def test_step_ms_alone_cannot_tell_ranks_apart():
    # Every rank's step_ms is the same in synchronous training: nothing to compare.
    found, _ = _run(_job(80, slow={5: 1.5}, slow_from=40, fields="step_only"))
    assert _slow(found) == []


def test_dp2_a_slow_rank_is_compared_with_its_pipeline_stage():
    found, _ = _run(_job(80, tp=4, pp=2, dp=2, slow={9: 1.12}, slow_from=40))
    slow = _slow(found)
    assert [f.rank for f in slow] == [9]
    assert _step_of(slow[0]) - 40 <= 10


def test_dp2_a_slower_pipeline_stage_pages_nobody():
    found, _ = _run(_job(120, tp=4, pp=2, dp=2, stage_factor={1: 1.25}))
    assert found == []


def test_dp2_grad_norm_spikes_on_one_shard_are_found_within_its_replica():
    spikes = {50: {6: 12.0}, 58: {6: 8.0}}
    found, _ = _run(_job(90, tp=4, pp=2, dp=2, grad=spikes))
    assert [(f.signal, f.rank) for f in found] == [("grad_outlier", 6)]


def test_dp2_a_hard_batch_on_a_whole_replica_is_not_sdc():
    found, _ = _run(_job(90, tp=4, pp=2, dp=2, replica_grad={50: 6.0, 55: 9.0, 58: 5.0}))
    assert found == []


def test_pure_dp2_stays_blind_to_grad_norm_outliers():
    # Two replicas of one rank each: no vote and no shard to compare with.
    found, _ = _run(_job(90, dp=2, grad={50: {1: 12.0}, 58: {1: 8.0}}))
    assert found == []


def test_an_offset_from_the_start_is_learned_and_reported_not_paged():
    found, m = _run(_job(150, slow={3: 1.09}, slow_from=0))
    assert _slow(found) == []
    (job,) = m._jobs.values()
    assert 0.05 < job.start_offsets[3] < 0.12


def test_a_change_after_warm_up_on_top_of_a_start_offset_pages():
    events = _job(150, slow={3: 1.09}, slow_from=0)
    later = _job(150, slow={3: 1.09 * 1.10}, slow_from=60)
    # same noise (same seed): the first 60 steps are identical, then the rank slows by 10 %
    found, _ = _run(events[:60 * 8] + later[60 * 8:])
    slow = _slow(found)
    assert [f.rank for f in slow] == [3]
    assert slow[0].evidence["start_offset"] > 0.05
    assert _step_of(slow[0]) - 60 <= 10


def test_a_gross_outlier_from_the_start_is_still_caught_at_once():
    found, _ = _run(_job(40, slow={3: 1.4}, slow_from=0))
    slow = _slow(found)
    assert [f.rank for f in slow] == [3]
    assert _step_of(slow[0]) <= 2


def test_after_a_restart_a_slowness_that_came_later_is_not_learned_as_a_start_offset():
    events = _job(200, slow={3: 1.10}, slow_from=60)
    restart_at = 100 * 8  # the job restarts from its checkpoint at step 50: numbers go back
    replay = events[:restart_at] + [e._replace(step=e.step - 50) for e in events[restart_at:]]
    found, m = _run(replay)
    restart_ts = events[restart_at].ts
    after = [f for f in _slow(found) if f.ts > restart_ts]
    (job,) = m._jobs.values()
    assert job.restarts == 1
    assert [f.rank for f in after] == [3]
    assert 3 not in job.start_offsets
