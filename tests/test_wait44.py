"""wait44 (round 44): a slow rank's wait for its GPU's next sample, where a collector samples a
node's GPUs each at its own phase.

int43 took the 3 s floor off a slow rank's wait for a cause once its node's thermal cadence is
known: the wait ends when the first sample taken after the slowdown began is due
(correlate.slow's _explanation_wait).  "The node's sample" was one phase a node -- the last of
its GPUs to tell its cadence -- and a collector that queries a node's GPUs one by one, spread
over the interval, samples each GPU at its own phase.  blind16 tune fleet-s1: a TP8 node's
CDU-hot GPU 1 (sampled at :x3.9) set its 8 ranks' pace; the node's phase was GPU 2's (:x8.5),
whose sample after the slowdown was in when the ranks were found, so they were escalated
slow_node/unknown 2.8 s before GPU 1's sample showed 0x20 -- the 3 s floor had hidden it by
0.2 s (int43 bisected; its thermal page came at 71.5 s, the first alert a wrong cause).

What is pinned: a rank waits for its own GPU's sample; ranks slow alike with their node's
others (TP inside the node: the slowest GPU, any of them, sets the pace) wait for the last of
their GPUs' samples; GPUs sampled together wait exactly as before.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.statecodec import SnapshotRefused
from detector.testing import T0, feed, parallel_step, thermal
from tests.test_int43 import slow_found

SLOW_FROM = 126          # the slowdown's first step (step s ends at T0 + s)
INTERVAL = 10.0
# Each GPU's sampling phase in the 10 s interval (s after T0 + 10 k).  GPU 7 is sampled last,
# so it tells its cadence last: the node's phase.  GPU 1 is sampled at :x5.0.
STAGGERED = {0: 0.4, 1: 5.0, 2: 2.6, 3: 3.7, 4: 4.8, 5: 5.9, 6: 7.0, 7: 9.9}
TOGETHER = dict.fromkeys(range(8), 9.9)


def _run(phases: dict[int, float], throttle: int, tp: int,
         monkeypatch: pytest.MonkeyPatch) -> tuple[list, list[float]]:
    """32 ranks on node-000..003 (TP ``tp``), 1 s steps.  From step SLOW_FROM node-001's GPU 1
    is 12 % slower -- and with TP 8 its whole TP group with it (every rank at the pace of the
    slowest GPU) -- and sampled with ``throttle`` (0x20: hot at 90 C; 0: a silent slowdown).
    Every GPU sampled every 10 s at ``phases[gpu]``.  Returns the firing alerts and when the
    first rank of node-001 was found slow."""
    found = slow_found(monkeypatch, node="node-001")
    rng = np.random.default_rng(4403)
    events: list = []
    slow = list(range(8, 16)) if tp == 8 else [9]
    for s in range(240):
        compute = 700.0 * rng.lognormal(0.0, 0.015, 32)
        if s >= SLOW_FROM:
            compute[slow] *= 1.12
        events += parallel_step(s, compute, tp=tp, pp=1)
    for k in range(24):
        for node in range(4):
            for g in range(8):
                ts = T0 + phases[g] + INTERVAL * k
                hot = throttle and (node, g) == (1, 1) and ts >= T0 + SLOW_FROM
                events.append(thermal(ts, f"node-{node:03d}", g, temp_c=90.0 if hot else 65.0,
                                      throttle=throttle if hot else 0,
                                      clock_mhz=1980.0 / 1.12 if hot else 1980.0))
    alerts = [a for a in feed(Engine(), sorted(events, key=lambda e: e.ts), finish=False)
              if a.status == "firing"]
    return alerts, found


def test_a_tp_group_waits_for_its_hot_gpus_own_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    # Found at ~T0+130, after GPU 7's (the node's phase) sample at T0+129.9; GPU 1's sample
    # after the slowdown, the first to show 0x20, is T0+135.0.  Before: escalated
    # slow_node/unknown at found + 1 s, GPU 1's heat paged later -- the first page a wrong
    # cause.
    alerts, found = _run(STAGGERED, 0x20, 8, monkeypatch)
    assert found and found[0] < T0 + 135.0
    a = alerts[0]
    assert (a.topic, a.kind, a.cause) == (ISOLATION, "slow_node", "thermal"), a
    assert a.scope.node == "node-001"
    assert not [b for b in alerts if b.topic == ESCALATION]


def test_a_silent_tp_group_waits_for_the_last_of_its_gpus_samples(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # No cause anywhere: escalated once the last GPU's sample after the slowdown is in (GPU 5,
    # T0+135.9, + its 1 s slack), no later.
    alerts, found = _run(STAGGERED, 0, 8, monkeypatch)
    a = alerts[0]
    assert (a.topic, a.kind, a.cause, a.scope.key) == (
        ESCALATION, "slow_node", "unknown", "node:node-001")
    assert found and found[0] < T0 + 135.9
    assert T0 + 135.9 <= a.detected_ts <= T0 + 137.5


def test_gpus_sampled_together_wait_for_the_nodes_sample_as_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # One scrape a node: every GPU's phase is the node's, the wait is int43's -- the sample
    # at T0+129.9 (+ 1 s), not a whole interval more.
    alerts, found = _run(TOGETHER, 0, 8, monkeypatch)
    a = alerts[0]
    assert (a.topic, a.cause, a.scope.key) == (ESCALATION, "unknown", "node:node-001")
    assert found and a.detected_ts <= max(found[0], T0 + 129.9 + 1.0) + 0.5


def test_a_lone_rank_waits_for_its_own_gpus_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    # DP only: rank 9 on node-001 GPU 1, slow alone.  Its GPU's sample at T0+135.0 shows
    # 0x20, after the node's phase's sample (GPU 7, T0+129.9): named thermal, not escalated.
    alerts, found = _run(STAGGERED, 0x20, 1, monkeypatch)
    assert found and found[0] < T0 + 135.0
    a = alerts[0]
    assert (a.topic, a.kind, a.cause) == (ISOLATION, "slow_node", "thermal"), a
    assert not [b for b in alerts if b.topic == ESCALATION]


def _capped_run(monkeypatch: pytest.MonkeyPatch) -> tuple[list, list[float]]:
    """32 ranks, TP 8, 1 s steps; from step SLOW_FROM node-001's GPU 4 is held by a power limit
    of its own (0x4, 440 W beside its mates' 520 W, its sampled clock 6 % down) and its TP
    group runs 16 % slower.  Every node's GPUs sampled every 10 s on one poll at :x6.50, GPU 4
    first in it (its mates 20-90 ms after).  Returns the firing alerts and when node-001's
    first rank was found slow."""
    found = slow_found(monkeypatch, node="node-001")
    rng = np.random.default_rng(440302)
    events: list = []
    for s in range(240):
        compute = 700.0 * rng.lognormal(0.0, 0.015, 32)
        if s >= SLOW_FROM:
            compute[8:16] *= 1.16
        events += parallel_step(s, compute, tp=8, pp=1)
    for k in range(24):
        for node in range(4):
            for g in range(8):
                ts = T0 + 6.5 + INTERVAL * k + (0.0 if g == 4 else 0.01 * (g + 2))
                capped = (node, g) == (1, 4) and ts >= T0 + SLOW_FROM
                events.append(thermal(ts, f"node-{node:03d}", g,
                                      throttle=0x4 if capped else 0,
                                      clock_mhz=1980.0 / 1.065 if capped else 1980.0,
                                      power_w=440.0 if capped else 520.0))
    alerts = [a for a in feed(Engine(), sorted(events, key=lambda e: e.ts), finish=False)
              if a.status == "firing"]
    return alerts, found


def test_a_cap_told_before_its_mates_rows_waits_for_its_next_sample(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The cap's first sample (T0+126.5) is in when the ranks are found (~T0+130) but carries
    # no comparison with its mates (their rows of the poll came after it), and its 6 % clock
    # dip does not explain 16 %: before, escalated slow_node/unknown at found; its next
    # sample (T0+136.5) names the limit: power, the first page.
    alerts, found = _capped_run(monkeypatch)
    assert found and T0 + 127.5 < found[0] < T0 + 136.5
    a = alerts[0]
    assert (a.topic, a.kind, a.cause) == (ISOLATION, "slow_node", "power"), a
    assert a.detected_ts <= T0 + 137.6
    assert not [b for b in alerts if b.topic == ESCALATION]


def _phased_engine() -> Engine:
    """An engine that has heard 2 nodes' GPUs at their own phases (the cadence told)."""
    eng = Engine()
    feed(eng, sorted((thermal(T0 + STAGGERED[g] + INTERVAL * k, f"node-{n:03d}", g)
                      for k in range(4) for n in range(2) for g in range(8)),
                     key=lambda e: e.ts), finish=False)
    return eng


def test_the_gpus_phases_round_trip_a_snapshot() -> None:
    eng = _phased_engine()
    phases = eng.correlator._phases
    assert sorted(phases) == ["node-000", "node-001"]
    assert {g: round((t - T0) % INTERVAL, 1) for g, t in phases["node-001"].items()} == STAGGERED
    back = Engine.restore(eng.snapshot())
    assert back.correlator._phases == phases


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "4.0", None])
def test_a_forged_phase_is_refused(value: object) -> None:
    # (a slow rank's wait reads it: a NaN or an infinite one would raise in its wait)
    eng = _phased_engine()
    eng.correlator._phases["node-000"][3] = value  # type: ignore[assignment]
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed" and "_phases" in str(exc.value)


# == a clock down with no reason: the GPU's own only once its next sample agrees ===============

CLOCK = 1980.0


def _clock_first(interval: float, lag: int | None, monkeypatch: pytest.MonkeyPatch
                 ) -> tuple[list, list[float]]:
    """16 ranks (DP 16) on node-000/001, 1 s steps; rank 3 (node-000 GPU 3) 12 % slower from
    step 120, its GPU's clock 1/1.12 of its mates' from the slowdown's first sample (480 W), its
    SW power cap bit (0x4) ``lag`` polls later (None: never -- a clock stuck with no reason).
    Returns the firing alerts and when rank 3 was found slow."""
    found = slow_found(monkeypatch, key="gpu:node-000/3")
    rng = np.random.default_rng(440303)
    events: list = []
    for s in range(240):
        compute = 700.0 * rng.lognormal(0.0, 0.015, 16)
        if s >= 120:
            compute[3] *= 1.12
        events += parallel_step(s, compute, tp=1, pp=1)
    for k in range(int(240 / interval)):
        ts = T0 + 0.4 + interval * k
        for node in range(2):
            for g in range(8):
                fault = (node, g) == (0, 3) and ts >= T0 + 120
                capped = fault and lag is not None and ts >= T0 + 120 + lag * interval
                events.append(thermal(ts, f"node-{node:03d}", g, throttle=0x4 if capped else 0,
                                      clock_mhz=CLOCK / 1.12 if fault else CLOCK,
                                      power_w=480.0 if fault else 640.0))
    alerts = [a for a in feed(Engine(), sorted(events, key=lambda e: e.ts), finish=False)
              if a.status == "firing"]
    return alerts, found


@pytest.mark.parametrize(("interval", "lag"), [(5.0, 1), (1.0, 3), (10.0, 1)],
                         ids=["5s-1poll", "1s-3polls", "10s-1poll"])
def test_a_cap_whose_reason_bit_trails_its_clock_is_named_power_first(
        interval: float, lag: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: paged gpu_hardware (a clock down with no reason: detector.stuck_clock) as soon
    # as the rank was found, then power once the bit came -- two pages, the first wrong.
    alerts, _ = _clock_first(interval, lag, monkeypatch)
    a = alerts[0]
    assert (a.topic, a.kind, a.cause, a.scope.key) == (
        ISOLATION, "slow_node", "power", "gpu:node-000/3"), a
    assert not [b for b in alerts if b.cause == "gpu_hardware"]


@pytest.mark.parametrize("interval", [1.0, 5.0, 10.0])
def test_a_clock_stuck_with_no_reason_is_still_the_gpus_at_its_next_sample(
        interval: float, monkeypatch: pytest.MonkeyPatch) -> None:
    # No reason ever: the GPU's own (stuck_clock), paged once its next sample agrees and
    # escalate_after_s past its first sample down (+ a sample's slack) -- no later.
    alerts, found = _clock_first(interval, None, monkeypatch)
    a = alerts[0]
    assert (a.topic, a.kind, a.cause, a.scope.key) == (
        ISOLATION, "slow_node", "gpu_hardware", "gpu:node-000/3"), a
    first = T0 + 120.4  # (its clock's first sample down)
    assert found and a.detected_ts <= max(found[0], first + max(interval, 3.0) + 1.0) + 0.5
