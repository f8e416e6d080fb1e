"""A GPU slowing for real inside a power-capped fleet is paged (round 22, powercap=fleet).

22nd reporting corpus, powercap=fleet: a silent_slow that ramps one GPU to 24 % slower over
its first ~22 s, on a GPU that power management caps (0x4) 2-4 % on and off all along like
half its fleet, was never paged.  The CUSUM found the rank early in the ramp, ~5 % slow, and
the step monitor told that pace once; each look of the correlator found a minor cap on the
GPU (a few percent, a little deeper than the routine depth it had recorded) that "explains"
up to twice its clock loss plus 3 %, weighed against the 5 % told -- never against the 24 %
the rank went on to run at -- until its run ended.  The step monitor now tells a run again
once its pace has grown past twice the told excess (detector.steps' ``_grown_runs``), and a
held rank is weighed afresh on it.
"""

from __future__ import annotations

import numpy as np

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.events import Event
from detector.testing import T0, feed, parallel_step, thermal

START, DUR = 300, 67  # the slowdown: from step 300, 67 steps, ramping over the first third


def fleet(slowdown: float, *, ramp: bool = True, seed: int = 2, dip: float = 0.03,
          steps: int = 500) -> list[Event]:
    """16 ranks on node-000/001 at 1 step/s; about half the GPUs (GPU 3 always) capped by
    power management 2-6 % below their 1980 MHz (0x4 on, off 2 % of seconds, back 20 %),
    their ranks at their peers' pace; rank 3 (node-000 GPU 3, capped ``dip``) ``slowdown``
    slower from step 300 for 67 steps, reached over 22 steps when ``ramp``."""
    rng = np.random.default_rng(seed)
    capped = rng.random(16) < 0.5
    capped[3] = True
    dips = rng.uniform(0.02, 0.06, 16)
    dips[3] = dip
    on = capped.copy()
    events: list[Event] = []
    for s in range(steps):
        compute = 700.0 * rng.lognormal(0.0, 0.004, 16)
        if START <= s < START + DUR:
            compute[3] *= 1 / (1 - slowdown * (min(1.0, (s - START) / (DUR / 3)) if ramp
                                               else 1.0))
        events += parallel_step(s, compute, tp=1, pp=1)
        flip = rng.random(16)
        on = capped & np.where(on, flip >= 0.02, flip < 0.2)
        for g in range(16):
            clock = 1980 + np.clip(round(2 * rng.standard_normal()), -5, 5)
            if on[g]:
                clock = round(clock * (1 - dips[g] * (1 + 0.15 * rng.standard_normal())))
            events.append(thermal(T0 + s + 0.5 + 0.01 * g, f"node-{g // 8:03d}", g % 8,
                                  temp_c=70.0 if on[g] else 66.0, clock_mhz=clock,
                                  throttle=0x4 if on[g] else 0,
                                  power_w=700.0 if on[g] else 640.0))
    return sorted(events, key=lambda e: e.ts)


def paged(events: list[Event]) -> list[tuple[str, str, str, str, bool]]:
    """(topic, kind, cause, scope, within the slowdown) of every firing alert."""
    alerts = feed(Engine(), events, finish=False)
    return [(a.topic, a.kind, a.cause, a.scope.key, a.detected_ts < T0 + START + DUR)
            for a in alerts if a.status == "firing"]


def test_a_ramp_on_a_routinely_capped_gpu_is_paged_while_it_runs() -> None:
    assert paged(fleet(0.24)) == [(ESCALATION, "slow_node", "unknown", "gpu:node-000/3", True)]


def test_a_step_on_the_same_gpu_is_paged_as_before() -> None:
    assert paged(fleet(0.24, ramp=False)) == [
        (ESCALATION, "slow_node", "unknown", "gpu:node-000/3", True)]


def test_the_fleet_cap_alone_pages_nobody() -> None:
    # Half the GPUs capped on and off all along, no rank slower: routine power management.
    assert paged(fleet(0.0)) == []


def test_a_grown_run_is_told_again_with_the_pace_it_was_told_at(monkeypatch) -> None:
    from detector.correlate import Correlator

    told = []
    on_finding = Correlator.on_finding

    def record(self, f, out):  # type: ignore[no-untyped-def]
        if f.signal == "slow_rank" and f.active:
            told.append(f)
        return on_finding(self, f, out)

    monkeypatch.setattr(Correlator, "on_finding", record)
    feed(Engine(), fleet(0.24), finish=False)
    first, *again = told
    assert "grown_from" not in first.evidence and again
    ratios = [first.evidence["compute_ratio_to_peers"]] + [
        f.evidence["compute_ratio_to_peers"] for f in again]
    for f, before in zip(again, ratios, strict=False):
        assert f.onset_ts == first.onset_ts and f.evidence["grown_from"] == before
        assert f.evidence["compute_ratio_to_peers"] - 1.0 >= 2 * (before - 1.0) + 0.05
    # a step's run is told at its full pace: never again
    told.clear()
    feed(Engine(), fleet(0.24, ramp=False), finish=False)
    assert len(told) == 1
