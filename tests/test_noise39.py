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
"""

from __future__ import annotations

import pytest

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.findings import Finding
from detector.steps import _HEAVY_STEPS
from detector.testing import T0, feed
from tests.test_noise38 import _job, _pages


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
