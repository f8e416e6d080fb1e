"""A fault on another GPU, of another cause, beside a node page that still stands is its own
page (return37, round 37).

Reporting corpus 36 lost attribution in 8 of 27 cells on one shape: a GPU's heat paged at its
node (its rank shares a TP replica with the node's other GPUs), a finding of that heat still
standing, then another GPU of the node braking (0x80, cool, its rank +32 %): raised at the node
too, it joined the heat's page -- "thermal", the heat's onset.  return36's rule split only a
*quiet* page.  These tests build the shape with the test helpers (not the corpus), varied over
the telemetry's poll (1, 10, 30 s), float or integer temperatures, 4 or 8 GPUs a node, TP inside
the node or pure data parallelism.
"""

from __future__ import annotations

import numpy as np
import pytest

from detector.engine import Engine
from detector.events import Event
from detector.testing import T0, feed, step, thermal

Window = tuple[int, int]


def _log(*, seed: int, hot: Window, brake: Window, poll_s: int = 1, gpn: int = 8, tp: int = 4,
         floats: bool = True, brake_hot: bool = False, brake_slow: float = 1.32,
         runs: tuple[Window, ...] = (), steps: int = 660) -> list[Event]:
    """A job on two nodes of ``gpn`` GPUs (TP ``tp``, 1 s steps); node-000's telemetry every
    ``poll_s`` s.  GPU 2 hot (90 C) over ``hot``, from its fourth sample on throttling (0x40,
    its rank +8 %: the page is the heat's, no rank slow alone yet) -- or over ``runs``, when
    given; the node's last GPU
    braking (0x80, clock -25 %, 450 W, its rank ``brake_slow`` slower; 90 C when
    ``brake_hot``) over ``brake``."""
    rng = np.random.default_rng(seed)
    ranks, braker = 2 * gpn, gpn - 1
    ev: list[Event] = []
    for s in range(steps):
        c = 700.0 * rng.lognormal(0.0, 0.015, ranks)
        is_hot, is_braking = hot[0] <= s < hot[1], brake[0] <= s < brake[1]
        throttling = (any(a <= s < b for a, b in runs) if runs else
                      hot[0] + 4 * poll_s <= s < hot[1])
        if throttling:
            c[2] *= 1.08
        if is_braking:
            c[braker] *= brake_slow
        step_ms = round(float(c.max()) + 250.0, 2)
        ev += [step(T0 + s + 0.001 * r, r, s, node=f"node-{r // gpn:03d}", gpu=r % gpn,
                    step_ms=step_ms, compute_ms=round(float(c[r]), 2), tp=r % tp, pp=0,
                    dp=r // tp) for r in range(ranks)]
        if s % poll_s:
            continue
        for g in range(gpn):
            temp = 66.0 + 0.3 * g + rng.normal(0.0, 0.3)
            clock, reason, power = 1980.0, 0, 640.0
            if g == 2 and is_hot:
                temp = 90.0 + rng.normal(0.0, 0.3)
            if g == 2 and throttling:
                clock, reason = 1540.0, 0x40
            if g == braker and is_braking:
                clock, reason, power = 1480.0, 0x80, 450.0
                if brake_hot:
                    temp = 90.0 + rng.normal(0.0, 0.3)
            ev.append(thermal(T0 + s + 0.5, "node-000", g,
                              temp_c=round(temp, 1) if floats else float(round(temp)),
                              clock_mhz=clock, throttle=reason, power_w=power))
    return sorted(ev, key=lambda e: e.ts)


def _pages(events: list[Event]) -> list[tuple[str, str, str, float]]:
    return [(a.status, a.cause, a.scope.key, round(a.onset_ts - T0))
            for a in feed(Engine(), events) if a.scope.node == "node-000"]


# (poll_s, GPUs a node, TP, float temperatures, the braking GPU's rank slower by): TP inside
# the node raises both at the node; a rank +8 % is taken by the heat's page before its brake
# is known (slow alike with GPU 2's), one +32 % is found slow alone first at 10 and 30 s.
CASES = [(1, 8, 4, True, 1.32), (10, 8, 4, True, 1.08), (30, 8, 4, False, 1.32),
         (1, 4, 4, False, 1.08), (10, 4, 2, True, 1.32), (30, 8, 8, True, 1.08),
         (10, 8, 1, False, 1.32)]


@pytest.mark.parametrize(("poll_s", "gpn", "tp", "floats", "brake_slow"), CASES)
def test_a_cool_gpus_brake_beside_a_standing_heat_page_is_its_own_power_page(
        poll_s: int, gpn: int, tp: int, floats: bool, brake_slow: float) -> None:
    pages = _pages(_log(seed=poll_s + gpn + tp, hot=(100, 600), brake=(330, 520),
                        poll_s=poll_s, gpn=gpn, tp=tp, floats=floats, brake_slow=brake_slow))
    braker = f"gpu:node-000/{gpn - 1}"
    power = [p for p in pages if p[0] == "firing" and p[1] == "power"]
    assert power and power[0][2] in (braker, "node:node-000"), pages
    assert 328 <= power[0][3] <= 332 + poll_s, pages  # its own onset, not the heat's
    heat = [p for p in pages if p[0] == "firing" and p[1] == "thermal"]
    assert heat and all(p[2] != braker for p in heat), pages
    assert all(p[3] < 330 for p in heat), pages  # the brake does not re-fire the heat


@pytest.mark.parametrize("poll_s", [1, 10, 30])
def test_guard_a_hot_gpu_braking_beside_the_node_heat_is_one_node_page(poll_s: int) -> None:
    # The node's cooling failing: GPU 2 throttles 0x40, then the last GPU, hot too, 0x80 (its
    # rank as slow as GPU 2's: not singled out by the step records, which would page its GPU).
    pages = _pages(_log(seed=poll_s, hot=(100, 600), brake=(330, 520), poll_s=poll_s,
                        brake_hot=True, brake_slow=1.08))
    assert pages and all(p[2] == "node:node-000" for p in pages), pages
    assert [p[0] for p in pages].count("resolved") <= 1, pages  # (never resolved between)


def test_a_heat_in_runs_ends_with_its_last_run_not_300_s_later() -> None:
    # Reporting corpus 36's heat at 1 s: GPU 2 at 90 C over 166..227 s, throttling 0x40 in
    # runs of 3, 10 and 11 samples; the second run is raised as recurring on its second
    # sample (three thermal samples within brake_repeat_s).  In a row, it ends as a run does:
    # the node's page is quiet from the heat's end, resolved a flap window later (600 s),
    # not held 300 s more for a recurrence (detector.thermal's hold for bursts shorter than
    # the sampling interval), and a brake on another GPU 165 s after the heat is a power page.
    events = _log(seed=3, hot=(166, 227), runs=((181, 184), (198, 208), (216, 227)),
                  brake=(392, 425), steps=1000)
    alerts = [a for a in feed(Engine(), events) if a.scope.node == "node-000"]
    heat = [a for a in alerts if a.cause == "thermal"]
    assert [a.status for a in heat] == ["firing", "resolved"], alerts
    assert heat[1].detected_ts - T0 <= 227 + 60 + 600, alerts  # (held: 227 + 300 + 600)
    power = [a for a in alerts if a.cause == "power" and a.status == "firing"]
    assert power and 390 <= power[0].onset_ts - T0 <= 396, alerts


@pytest.mark.xfail(strict=True, reason=(
    "return37 OPEN: at 10 s polls a heat's throttle, one sample a run (three within 300 s: "
    "detector.thermal's recurring rule), is held brake_repeat_s past its last sample though "
    "the GPU is back at its mates' temperature from the next one: its page resolves ~900 s "
    "after the heat (hold 300 s + flap window 600 s), not ~600 s; the hold is for bursts "
    "shorter than the sampling interval (blind24 T1), which the throttle bits alone cannot "
    "tell from a heat that is over -- the GPU's temperature can (not done: a counter of cool "
    "samples is new snapshot state, and therm37 owns noisy sensors this round)"))
def test_open_a_heat_in_single_sample_runs_at_10_s_ends_with_the_gpus_temperature() -> None:
    events = _log(seed=3, hot=(166, 227), runs=((180, 183), (200, 203), (220, 223)),
                  brake=(0, 0), poll_s=10, steps=1000)
    heat = [a for a in feed(Engine(), events)
            if a.scope.node == "node-000" and a.cause == "thermal"]
    assert [a.status for a in heat] == ["firing", "resolved"], heat
    assert heat[1].detected_ts - T0 <= 227 + 60 + 600, heat
