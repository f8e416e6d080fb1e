"""noise40 (round 40, issue 10): a slow run's mean is read at its job's lag-1 only while the run
is shorter than two of the noise's memory.

noise39 (branch noise39b, 1d60bf9) read a slow run's margin as of a mean of the job's correlated
steps (JobMonitor._lag1_read, models.lag1.mean_factor): revA38 F2 (DP 4, lag-1 0.95) and F5 (32
ranks, lag-1 0.8, the warm-up) no longer escalate a wandering GPU.  Read so at any length, a real
straggler of 3-5 % at PAI job 2's lag-1 (0.59) waited 7-48 steps more for its margin: a run's
mean of n steps at lag-1 rho is worth n (1 - rho) / (1 + rho) independent steps, and a 3.5 %
straggler's size less its margin clears slow_min_effect (2.5 %) only after ~22 steps of it.

An AR(1) excursion lasts about its memory, (1 + rho) / (1 - rho) steps (one independent sample
of the noise: 3.9 steps at 0.59, 9 at 0.8, 14 at 0.87); a run twice as long is no single
excursion -- a slow GPU stays slow, a wander reverts -- so from then on its margin is its steps'
again (_LAG1_MEMORIES).  F2's 17-step run (memory 14) and F5's 7-step one (6.7) stay held.
"""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.testing import feed
from tests.test_n1run import _job, _pages
from tests.test_noise39 import _told
from tests.test_revA38 import loader_job


@pytest.mark.parametrize("seed", range(6))
def test_a_modest_straggler_at_pai_lag1_is_paged_once_it_outlasts_two_memories(seed: int) -> None:
    """A rank 3.5 % slower from step 120 on (32 ranks, 1 % noise at lag-1 0.6, memory 4 steps):
    paged at its GPU within 15 steps (10-14 here, main 8-14; read at the lag-1 at any length,
    noise39b's 1d60bf9: 16-48, 5 of 6 seeds over 15)."""
    got = _pages(feed(Engine(), _job(0.6, seed=seed, shift=0.035, steps=220)))
    assert [u for u, _ in got] == ["gpu:node-000/5"]
    assert 120 <= got[0][1] < 135, got


def test_a_held_run_says_how_long_it_must_last() -> None:
    """revA38 F2's run, told held for a cause: its noise_hold says the lag-1 it was read at and
    the length (two memories) at which it is read as independent steps again."""
    found, alerts = _told(loader_job(ranks=4, gpn=1, steps=600, seed=5, rho=0.95, sigma=0.015,
                                     stall=False))
    told = [f for f in found if f.active]
    assert told and all("noise_hold" in f.evidence for f in told), [f.evidence for f in told]
    why = told[0].evidence["noise_hold"]["for"]
    assert "lag-1 0.8" in why and "2 of the noise's memory" in why, why
    assert [a for a in alerts if a.status == "firing"] == []
