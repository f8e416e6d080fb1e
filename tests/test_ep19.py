"""Room ep19 (round 19): a slow GPU under MoE routing found against its EP twins (blind8 H2),
and no page for routing before the job's wandering is measured (blind8 rail-moe's early pages).

- A routed job's per-rank compute wanders with its expert's share of tokens; the ranks holding
  one expert in every EP group wander together.  Each rank is judged against those twins, the
  peers on other nodes whose step-to-step changes correlate with its own and each other's
  (detector.steps JobMonitor._twin_update / _twin_pick): a slowdown that is the GPU's follows
  the GPU.  On main (d7a702b) the GPU was found by the wandering job's 100-step mean, 28-187
  steps after its onset, or not in 150 steps when it slowed early in the monitor's life.
- Before the wandering can be measured, a slow rank whose peers on 2 other nodes are as slow
  (its expert's other ranks) is held (JobMonitor._hold_shared): main paged one node at steps
  24-28 on 2 seeds of 12.
"""

from __future__ import annotations

import numpy as np

from detector.engine import Engine
from detector.steps import _correlations
from detector.testing import feed
from tests.test_moe18 import pages as _pages
from tests.test_moe18 import routed_job

SLOW = ("node:node-005", "gpu:node-005/2")  # rank 42's node (test_moe18.routed_job's layout)


def test_a_slow_gpu_under_routing_is_found_within_steps() -> None:
    # main d7a702b: 28-187 steps after the onset (slow_from 200, seeds 0-3); now 3-4 steps.
    for seed in range(4):
        got = _pages(feed(Engine(), routed_job(steps=260, seed=seed, slow_rank=42,
                                               slow_from=200)))
        mine = [s for u, s in got if u in SLOW]
        assert mine and 200 < mine[0] <= 210, (seed, got)
        assert all(u in SLOW for u, _ in got), (seed, got)


def test_a_gpu_slowing_before_its_twins_are_known_is_found_once_they_are() -> None:
    # Slow from step 20 or 60: its slowdown is inside the window the twins are picked from
    # (the levels' correlation falls from 0.98 to 0.17; the step-to-step changes' stays
    # 0.6-0.8).  main d7a702b: found at step 156-164 or not by step 170.  Now at 66-68 (the
    # first look at the twins: 64 steps).
    for slow_from in (20, 60):
        for seed in range(4):
            got = _pages(feed(Engine(), routed_job(steps=170, seed=seed, slow_rank=42,
                                                   slow_from=slow_from)))
            mine = [s for u, s in got if u in SLOW]
            assert mine and mine[0] <= 70, (slow_from, seed, got)
            assert all(u in SLOW for u, _ in got), (slow_from, seed, got)


def test_routing_pages_nobody_before_its_wandering_is_measured() -> None:
    # main d7a702b: node-006 at step 28 (seed 2), node-001 at step 24 (seed 7): the CUSUM, on
    # an expert's rank while its 3 twins on other nodes ran as hot.
    for seed in range(12):
        got = _pages(feed(Engine(), routed_job(steps=200, seed=seed)))
        assert not got, (seed, got)


def test_correlations_of_rows() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=64)
    h = np.vstack([a, 2.0 * a + 1.0, -a, np.zeros(64)])
    c = _correlations(h)
    assert np.allclose(c[0, :3], [1.0, 1.0, -1.0]) and c[0, 3] == 0.0
