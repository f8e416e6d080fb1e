"""A rank as slow as the gross limit itself is caught as gross from the job's start (issue 10).

The warm-up's gross-outlier rule (>= 30 % slower than the peer median for two steps in a row,
no history needed) measured each step against the limit itself: a GPU 30 % slow measures
30 % +- its jitter, so half its steps fell short and two in a row came late (the matrix's
scenario=slow_from_start, seed 2102: a GPU 1.28-1.32x its peers from step 1 paged after 7
steps; target 3).  A step within the job's noise of the limit now counts (by at most 3 %).
"""

from __future__ import annotations

import numpy as np

from detector.engine import Engine
from detector.testing import T0, feed, healthy_job, step

DP, PP, TP = 8, 2, 4


def job(slow: dict[int, float], *, steps: int = 20, jitter: float = 0.01,
        seed: int = 3) -> list:
    """dp 8 x pp 2 x tp 4, replica k on node k; every rank's compute x lognormal(0, jitter)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(steps):
        compute = 700.0 * rng.lognormal(0.0, jitter, DP * TP * PP)
        for r, f in slow.items():
            compute[r] *= f
        for r in range(DP * TP * PP):
            k, p, t = r // (TP * PP), (r // TP) % PP, r % TP
            out.append(step(T0 + s + 0.001 * r, r, s, node=f"node-{k:03d}", gpu=p * TP + t,
                            step_ms=round(float(compute.max()) + 250.0, 2),
                            compute_ms=round(float(compute[r]), 2), tp=t, pp=p, dp=k))
    return out


def firing(events: list) -> list:
    return [a for a in feed(Engine(), events) if a.status == "firing"]


def test_a_gpu_slow_by_the_gross_limit_itself_is_caught_within_three_steps() -> None:
    for seed in range(8):
        alerts = firing(job({13: 1.30}, seed=seed))
        assert [a.scope.key for a in alerts] == ["gpu:node-001/5"], seed
        # decided by its third step (t = 2), then the 1 s wait for a cause a gross outlier gets
        assert alerts[0].detected_ts - T0 < 3.1, seed
        sig = alerts[0].evidence["signals"][0]
        assert sig["gross_outlier"] is True, seed


def test_a_gpu_clearly_under_the_gross_limit_waits_for_the_cusum() -> None:
    # 20 % slow from the start: past what a rank may learn as its own (10 %), so it pages --
    # but through the ordinary CUSUM after its run, not as a gross outlier at once.
    alerts = firing(job({13: 1.20}))
    assert [a.scope.key for a in alerts] == ["gpu:node-001/5"]
    assert not any(s.get("gross_outlier") for s in alerts[0].evidence["signals"])



# -- a job of two ranks (DP 2): JobMonitor._check_pair's gross, steady run ----------------------

def test_a_gross_slow_gpu_of_a_dp2_job_from_its_first_step_is_found_in_about_five_steps() -> None:
    # Before: found by the 20-steps-in-a-row rule only (t = 19 and its wait).
    took = []
    for seed in range(8):
        alerts = firing(list(healthy_job(ranks=2, steps=60, slow={1: 1.3}, seed=seed)))
        assert [a.scope.key for a in alerts] == ["gpu:node-000/1"], seed
        sig = alerts[0].evidence["signals"][0]
        assert sig["partner"] == 0 and sig["gross_outlier"] is True, seed
        took.append(alerts[0].detected_ts - T0)
    # decided at its fifth step (t = 4), + the 1 s a gross outlier waits for a cause; a step
    # out of the steady band starts the run anew (seed 3: t = 9)
    assert sorted(took)[4] <= 5.1 and max(took) <= 11.0, took


def test_a_dp2_jobs_gross_but_unsteady_imbalance_is_no_slow_rank() -> None:
    # Each step's batch makes either rank up to ~1.5x the other: gross steps come, unsteady.
    for seed in range(3):
        alerts = feed(Engine(), healthy_job(ranks=2, steps=3000, jitter=0.2, seed=seed))
        assert [a for a in alerts if a.status == "firing"] == [], seed
