"""int43 (round 43): issue 10's "a 10 % slowdown in <= 10 steps" on every cell of the matrix.

A slow rank waits for a cause before a human is paged (correlate.slow's _explanation_wait):
until its GPU's first thermal sample taken after the slowdown began is in.  It also waited at
least ``escalate_after_s`` (3 s) -- a floor from before the correlator knew a node's cadence.
At a 1 s collector that sample is in when the rank is found (the CUSUM needs 4+ steps; the
sample after the run's first clearly slow step came ~1 s after it), so every silent slowdown
of the matrix's 1 s cells was escalated exactly 3 s -- 3 steps -- after it was found, waiting
for nothing (BENCHMARKS.md "int43, round 43": 64 silent slowdowns, 4 seeds x 16 cells).

What is pinned: at a known cadence the wait ends when that sample is due, and no later; with
the sample in hand at found the page is made then.  A rank on a node whose cadence is not
known yet, or with no thermal telemetry, keeps the floor (an XID or a NIC may still explain
it), and a 30 s collector's wait for its next sample is unchanged (tests/test_int30.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from detector.alerts import ESCALATION, ISOLATION
from detector.correlate import Correlator
from detector.engine import Engine
from detector.testing import T0, feed, parallel_step, thermal

SLOW_FROM = 120          # the slowdown's first step (step s ends at T0 + s)


def slow_found(monkeypatch: pytest.MonkeyPatch, key: str | None = None,
               node: str | None = None) -> list[float]:
    """When the correlator was told a slow rank of GPU ``key`` (or of any GPU of ``node``)
    slow: a list the patched ``Correlator.on_finding`` appends to."""
    found: list[float] = []
    orig = Correlator.on_finding

    def hook(self: Correlator, f, out: list) -> None:  # type: ignore[no-untyped-def]
        if f.signal == "slow_rank" and f.active and (
                f.scope.key == key if key is not None else f.scope.node == node):
            found.append(f.ts)
        orig(self, f, out)

    monkeypatch.setattr(Correlator, "on_finding", hook)
    return found


def _run(interval_s: float, throttle: int, monkeypatch: pytest.MonkeyPatch,
         sampled: bool = True, phase_s: float = 0.4) -> tuple[list, list[float]]:
    """16 ranks (DP 16) on node-000/001, 1 s steps; rank 3 (node-000 GPU 3) 12 % slower from
    step SLOW_FROM; every GPU sampled every ``interval_s`` (``sampled``), clean -- but GPU 3
    from the slowdown on with ``throttle`` (0: a silent slowdown) at the clock that explains
    the 12 %.  Returns the firing alerts and when rank 3 was found slow."""
    found = slow_found(monkeypatch, key="gpu:node-000/3")
    rng = np.random.default_rng(43)
    events: list = []
    for s in range(240):
        compute = 700.0 * rng.lognormal(0.0, 0.015, 16)
        if s >= SLOW_FROM:
            compute[3] *= 1.12
        events += parallel_step(s, compute, tp=1, pp=1)
    n = int(240 / interval_s) if sampled else 0
    for k in range(n):
        ts = T0 + phase_s + interval_s * k
        for node in range(2):
            for g in range(8):
                capped = throttle and (node, g) == (0, 3) and ts >= T0 + SLOW_FROM
                events.append(thermal(ts, f"node-{node:03d}", g,
                                      throttle=throttle if capped else 0,
                                      clock_mhz=1980.0 / 1.12 if capped else 1980.0,
                                      power_w=480.0 if capped else 640.0))
    alerts = [a for a in feed(Engine(), sorted(events, key=lambda e: e.ts), finish=False)
              if a.status == "firing"]
    return alerts, found


def test_a_silent_slowdown_at_a_1s_collector_is_escalated_when_found(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The GPU's samples after the slowdown began are in (clean) when the rank is found:
    # nothing else to wait for.  Before: found + 3.0 s, every time.
    alerts, found = _run(1.0, 0, monkeypatch)
    a = alerts[0]
    assert (a.topic, a.kind, a.cause, a.scope.key) == (
        ESCALATION, "slow_node", "unknown", "gpu:node-000/3")
    assert found and a.detected_ts - found[0] <= 0.5
    assert a.detected_ts - (T0 + SLOW_FROM) <= 7.0


def test_a_power_cap_at_a_1s_collector_is_still_named_power_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    alerts, _ = _run(1.0, 0x4, monkeypatch)
    a = alerts[0]
    assert (a.topic, a.kind, a.cause) == (ISOLATION, "slow_node", "power")


def test_a_silent_slowdown_at_a_10s_collector_waits_for_its_next_sample(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Samples at T0 + 5.4 + 10 k: the first after the run's first clearly slow step is
    # T0 + 125.4 (+ 1 s slack) -- after the rank was found.
    alerts, found = _run(10.0, 0, monkeypatch, phase_s=5.4)
    a = alerts[0]
    assert (a.topic, a.cause) == (ESCALATION, "unknown")
    assert found and found[0] < T0 + 125.4
    assert T0 + 125.4 <= a.detected_ts <= T0 + 127.0


def test_a_rank_with_no_thermal_telemetry_keeps_the_floor(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # No cadence known: other explanations (an XID, a NIC) arrive at their own pace.
    alerts, found = _run(1.0, 0, monkeypatch, sampled=False)
    a = alerts[0]
    assert (a.topic, a.cause) == (ESCALATION, "unknown")
    assert found and a.detected_ts - found[0] == pytest.approx(3.0, abs=0.5)
