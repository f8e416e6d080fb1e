"""noise44 (round 44, issue 10): a run of real step noise escalates without a cause only once its
mean stands a fleet's bar -- ``_FLEET_Z`` (7) standard errors of a mean of as many of the job's
correlated steps (its lag-1, models.lag1.mean_factor at any length) -- while the job's noise is
taken for real noise (JobMonitor._heavy) and the run is under ``_FLEET_UNDER`` (10 %, DESIGN's
target slowdown).  Under it the run is told held (noise_hold): paged with a cause on its GPU or
node at once, escalated without one once it stands so (JobMonitor._fleet_held).

Why 7: real PAI noise (lag-1 ~0.5, 1.5-2 % CoV, a heavy tail) makes healthy 7-27-step runs of
3-6 % that the rules before escalated at 5.7-6.5 of that standard error (blind28 H5, H8,
packed-s1, blind30 F4: ~1e-2 false escalations a rank-hour on blind28/30's healthy ranks); the
tail of the same statistic over blind28's healthy ranks (~310 rank-hours) falls by ~10x each half
standard error past 5 -- a fleet of thousands of GPUs needs ~1e-5 a rank-hour, 7-7.5.  BENCHMARKS
"noise44, round 44" has the figures and the trade: a sustained 5 % slowdown on 2 % noise early in a
job waits ~8 steps more; a 10 % one is told as before, +0-2 steps on 2 of 6 seeds.

The job here is tests/test_revA38.py's synchronous DP job (32 ranks, 8 a node, 0.45 s steps) at
lag-1 0.55 and 2 % -- PAI job 2's -- with a run planted on rank 13 (node-001 GPU 5) from step 25,
while the job's noise is not measured yet (taken for real noise: JobMonitor._unmeasured).
"""

from __future__ import annotations

import pytest

from tests.test_noise39 import _told
from tests.test_revA38 import loader_job, pages

_RHO, _SIGMA, _FIRST = 0.55, 0.02, 25


def _job(seed: int, extra: float, last: int = 10**6, steps: int = 105) -> list:
    """The job with rank 13's compute ``extra`` slower on steps ``_FIRST`` to ``last``."""
    return [e._replace(compute_ms=round(e.compute_ms * (1.0 + extra), 3),
                       step_ms=round(e.step_ms + e.compute_ms * extra, 3))
            if e.rank == 13 and _FIRST <= e.step < last else e
            for e in loader_job(ranks=32, gpn=8, steps=steps, seed=seed, rho=_RHO,
                                sigma=_SIGMA, stall=False)]


@pytest.mark.parametrize("seed", [1, 2])
def test_a_modest_run_of_correlated_noise_pages_nobody(seed: int) -> None:
    """+5 % for 12 steps (2.5 of the step noise; its mean ~5.5 standard errors at the job's
    lag-1), then back: no page.  Main before: escalated slow_node/unknown at node-001 GPU 5 on
    both seeds (its mean cleared 2.5 % by 2.5 standard errors at the 7th step)."""
    assert pages(_job(seed, 0.05, last=_FIRST + 12, steps=100)) == []


@pytest.mark.parametrize("seed", range(4))
def test_a_ten_percent_slowdown_is_still_paged_in_time(seed: int) -> None:
    """DESIGN's 10 % from step 25 on: told slow, a verdict, by its 10th slowed step (the run
    rule's 7th-8th: as before), and escalated at its GPU."""
    found, alerts = _told(_job(seed, 0.10))
    verdicts = [f for f in found if f.active and f.verdict and f.rank == 13]
    assert verdicts, [f.evidence for f in found]
    assert verdicts[0].evidence["step"] < _FIRST + 10, verdicts[0].evidence
    assert [a.scope.key for a in alerts if a.status == "firing"] == ["gpu:node-001/5"]


@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_a_modest_slowdown_that_stays_is_paged_once_it_stands_the_bar(seed: int) -> None:
    """+5 % from step 25 on: held for a cause while its mean is under the bar (its noise_hold
    says so), then escalated at its GPU once it stands it -- within 40 steps (24-34 here; main
    14-22)."""
    found, alerts = _told(_job(seed, 0.05, steps=_FIRST + 60))
    held = [f for f in found if f.rank == 13 and "noise_hold" in f.evidence]
    assert held and "a fleet's bar" in held[0].evidence["noise_hold"]["for"], [
        f.evidence for f in found]
    firing = [a for a in alerts if a.status == "firing"]
    assert [a.scope.key for a in firing] == ["gpu:node-001/5"]
    verdicts = [f for f in found if f.active and f.verdict and f.rank == 13]
    assert verdicts and verdicts[0].evidence["step"] < _FIRST + 40, verdicts[0].evidence
