"""noise39 (round 39, issue 10): a run held for its job's noise is told for a cause only.

noise38 (tests/test_noise38.py) held a run that had not outlasted its job's noise episodes --
while the noise is not measured, under _HEAVY_EPISODE_Z of it, before _HEAVY_STEPS steps --
from the correlator altogether: nothing paged a GPU whose own telemetry named the cause
(tests/test_brake38.py: a 0x80 power brake on one GPU paged 4 s past its poll; a board braking
one GPU a poll paged at the node 4 s late, its second GPU's rank held beside the first one's).
Now such a run is told at its alarm marked ``noise_hold`` (JobMonitor._held_runs): paged with a
cause the GPU or node names, never escalated without one (Correlator._slow_due) until it is
told again unmarked -- grown over the episodes' height, outlasted them, or beside a node mate
told slow (JobMonitor._beside_told); that page says what it waited for (``waited``).

And a run's mean is read at its job's lag-1 (JobMonitor._lag1_read, models.lag1.mean_factor):
its margin is ``slow_effect_z`` standard errors of a mean of correlated steps, not of
independent ones -- a GPU clock following power and heat wanders in runs longer than the noise's
step-to-step spread says (revA38 F2: lag-1 0.95 in a DP-4 job, 5 of 6 runs paged; F5: lag-1 0.8
in a 32-rank job's warm-up, 4 of 12), while a 10 % slowdown and a 30 % straggler on the same
noise are told when they were.
"""

from __future__ import annotations

import pytest

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.findings import Finding
from detector.steps import _HEAVY_STEPS
from detector.testing import T0, feed
from tests.test_noise38 import _job, _pages
from tests.test_revA38 import loader_job, pages


def _told(events: list, engine: Engine | None = None,
          finish: bool = True) -> tuple[list[Finding], list]:
    """The slow_rank findings the monitors told, and the alerts."""
    engine = engine or Engine()
    found: list[Finding] = []
    correlate = engine._correlate

    def spy(fs: list[Finding], alerts: list) -> None:
        found.extend(f for f in fs if f.signal == "slow_rank")
        correlate(fs, alerts)

    engine._correlate = spy  # type: ignore[method-assign]
    return found, feed(engine, events, finish=finish)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_ten_percent_slowdown_is_told_held_at_its_alarm_and_escalated_once_it_outlasted(
        seed: int) -> None:
    """noise38's 10 % slowdown on real noise (rank 5 from step 60): its first finding comes at
    the CUSUM's alarm marked ``noise_hold`` (noise38: none until its 7th step), the escalation
    only once the run is told again unmarked, saying it waited -- as noise38 paged it."""
    found, alerts = _told(_job(seed, slow=(60, 5, 0.10)))
    mine = [f for f in found if f.rank == 5 and f.active]
    assert mine and "noise_hold" in mine[0].evidence, [f.evidence for f in mine[:2]]
    assert not mine[0].verdict  # (evidence: a page needs a cause, or the run told again)
    assert mine[0].evidence["run_steps"] < _HEAVY_STEPS
    whole = next(f for f in mine if "noise_hold" not in f.evidence)
    assert whole.evidence["waited"]["steps"] >= _HEAVY_STEPS
    got = _pages(alerts)
    assert got and got[0][0] == "gpu:node-005/0" and got[0][1] - 60 <= 10, got
    assert round((whole.ts - T0) / 1.6) <= got[0][1]
    assert "noise_hold" not in got[0][2] and "waited" in got[0][2], got[0][2]


@pytest.mark.parametrize("seed", [1, 2, 5])
def test_a_noise_blip_told_held_is_cleared_and_pages_nobody(seed: int) -> None:
    """noise38's blip (rank 5 +11 % for 4 steps at step 40): what it tells is held and then
    cleared -- no escalation, no finding left active."""
    found, alerts = _told(_job(seed, steps=90, blips=((40, 5, 4, 0.11),)))
    assert _pages(alerts) == []
    last: dict[int | None, Finding] = {}
    for f in found:
        last[f.rank] = f
    assert all(not f.active or "noise_hold" in f.evidence for f in last.values())
    assert not [a for a in alerts if a.topic == ESCALATION]


def test_a_held_run_is_held_across_a_snapshot() -> None:
    """Snapshot and restore with a run told held: after the restore it is not told held
    again, and is escalated as without the restore (JobMonitor._held, a slot array)."""
    events = _job(1, slow=(60, 5, 0.10))
    found, alerts = _told(events)
    held = next(f for f in found if f.rank == 5 and "noise_hold" in f.evidence)
    cut = next(i for i, e in enumerate(events) if e.ts > held.ts + 0.5)
    engine = Engine()
    first, before = _told(events[:cut], engine, finish=False)
    assert any("noise_hold" in f.evidence for f in first if f.rank == 5)
    again, after = _told(events[cut:], Engine.restore(engine.snapshot()))
    assert not any("noise_hold" in f.evidence for f in again if f.rank == 5)
    assert _pages(before + after) == _pages(alerts)


# -- a run's mean read at its job's lag-1 (JobMonitor._lag1_read): revA38 F2, F5 --------------


def _slowed(events: list, rank: int, first: int, extra: float) -> list:
    """``events`` with ``rank``'s compute ``extra`` slower from step ``first`` on."""
    return [e._replace(compute_ms=round(e.compute_ms * (1.0 + extra), 3),
                       step_ms=round(e.step_ms + e.compute_ms * extra, 3))
            if e.rank == rank and e.step >= first else e for e in events]


# (seed 2 was a strict xfail, noise40: "revA38 F2's DP-4 job (lag-1 0.95, 1.5 %) escalates a GPU
# on seed 2 (1 of 6 runs of 2000 steps, seeds 0-5): rank 1 +3.45 % over its peers for 33 steps on
# 0.87 % step noise"; fixed by noise44: a run of real noise escalates without a cause only once
# its mean stands JobMonitor._fleet_held's 7 standard errors of a mean at the job's lag-1.)


@pytest.mark.parametrize("seed", [1, 2])
def test_compute_wandering_as_an_ar1_in_a_dp4_job_pages_no_gpu_for_2000_steps(seed: int) -> None:
    """revA38 F2 past its cut: the DP-4 job's GPUs at lag-1 0.95, 1.5 % (before: escalated at
    steps 475 and 1559 on seed 1, 1064 on seed 2 -- the noise measured by then, its runs told
    at their 7th step).  The estimate reads 0.87-0.88 there: a 17-step run's mean is worth 1.3
    independent steps."""
    assert pages(loader_job(ranks=4, gpn=1, steps=2000, seed=seed, rho=0.95, sigma=0.015,
                            stall=False)) == []


@pytest.mark.parametrize(("extra", "within"), [(0.10, 10), (0.30, 5)])
@pytest.mark.parametrize(("rho", "sigma"), [(0.8, 0.02), (0.55, 0.02), (0.0, 0.01)])
def test_a_slowdown_on_correlated_noise_is_still_told_in_time(extra: float, within: int,
                                                             rho: float, sigma: float) -> None:
    """DESIGN's latencies hold on the same noise: rank 13 of the 32-rank job ``extra`` slower
    from step 150 on is told slow, unheld, by its ``within``-th slowed step (10 %: its 5th-7th,
    30 %: its 4th-5th, at its CUSUM's alarm -- both as before the lag-1 was read), and paged
    at its GPU."""
    events = _slowed(loader_job(ranks=32, gpn=8, steps=260, seed=3, rho=rho, sigma=sigma,
                                stall=False), 13, 150, extra)
    found, alerts = _told(events)
    whole = [f for f in found if f.rank == 13 and f.active and "noise_hold" not in f.evidence]
    assert whole and whole[0].evidence["step"] - 150 < within, [
        (f.evidence["step"], f.evidence.get("mean_ratio_over_run")) for f in found]
    assert [a.scope.key for a in alerts if a.status == "firing"] == ["gpu:node-001/5"]


def test_a_wandering_gpus_run_is_told_held_for_a_cause_saying_the_lag1_it_was_read_at() -> None:
    """revA38 F2's run (rank 1, +3.0 % for 17 steps at step 30): over slow_min_effect by the
    standard error of independent steps, under it at the job's lag-1 read (0.87): told held --
    a cause on its GPU would page it now -- and escalated by nobody."""
    found, alerts = _told(loader_job(ranks=4, gpn=1, steps=600, seed=5, rho=0.95, sigma=0.015,
                                     stall=False))
    told = [f for f in found if f.active]
    assert told and all("noise_hold" in f.evidence and not f.verdict for f in told), [
        f.evidence for f in told]
    assert "lag-1 0.8" in told[0].evidence["noise_hold"]["for"], told[0].evidence
    assert [a for a in alerts if a.status == "firing"] == []
