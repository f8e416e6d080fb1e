"""A new job's first step, then quiet event time: the worker's idle advance must not crash."""

from __future__ import annotations

from detector import testing as t
from detector.monitors import Monitors
from detector.thresholds import Thresholds


def test_a_new_jobs_only_step_waits_through_an_idle_advance():
    m = Monitors(Thresholds())
    out: list = []
    for r in range(16):
        m.process(t.step(t.T0 + 0.001 * r, r, 0), out)
    m.advance(t.T0 + 1.0, out)  # was OverflowError: int(inf * straggler_share)
    for r in range(16):
        m.process(t.step(t.T0 + 1.2 + 0.001 * r, r, 1), out)
    m.advance(t.T0 + 10.0, out)
    assert not [f for f in out if f.active and f.verdict]  # a healthy job: nothing to say
