"""A new fault raised into a quiet page of another cause is its own incident (return36, round 36).

Reporting corpus 36 (fresh seeds, evaluated once) lost attribution on one shape: a GPU's heat
isolated at its node (its rank shares a TP replica with the node's other GPUs), the heat over,
the page quiet in its flap window -- then another GPU of the node braking (0x80) was raised into
that page as its return: "thermal" again, the first fault's onset and evidence.  These tests
build the shape with the test helpers (not the corpus): a 16-rank TP-4 job on two nodes, 1 Hz
telemetry.
"""

from __future__ import annotations

import numpy as np
import pytest

from detector.engine import Engine
from detector.events import Event
from detector.testing import T0, feed, parallel_step, thermal


def _log(*, seed: int, hot: tuple[int, int], brake: tuple[int, int], steps: int = 600,
         tp: int = 4, hot2: tuple[int, int] = (0, 0)) -> list[Event]:
    """GPU 2 of node-000 hot (90 C, 0x40, its rank +8 %) over ``hot`` (and ``hot2``) steps;
    GPU 5 braking (0x80, clock -25 %, 450 W, its rank +32 %) over ``brake``."""
    rng = np.random.default_rng(seed)
    ev: list[Event] = []
    for s in range(steps):
        c = 700.0 * rng.lognormal(0.0, 0.015, 16)
        is_hot = hot[0] <= s < hot[1] or hot2[0] <= s < hot2[1]
        is_braking = brake[0] <= s < brake[1]
        if is_hot:
            c[2] *= 1.08
        if is_braking:
            c[5] *= 1.32
        ev += parallel_step(s, c, tp=tp, pp=1)
        for g in range(8):
            temp, clock, reason, power = 66.0 + 0.3 * g, 1980.0, 0, 640.0
            if g == 2 and is_hot:
                temp, clock, reason = 90.0, 1880.0, 0x40
            if g == 5 and is_braking:
                clock, reason, power = 1480.0, 0x80, 450.0
            ev.append(thermal(T0 + s + 0.5, "node-000", g, temp_c=temp, clock_mhz=clock,
                              throttle=reason, power_w=power))
    return sorted(ev, key=lambda e: e.ts)


def _pages(events: list[Event]) -> list[tuple[str, str, str, float]]:
    return [(a.status, a.cause, a.scope.key, round(a.onset_ts - T0))
            for a in feed(Engine(), events) if a.scope.node == "node-000"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_brake_on_another_gpu_after_the_heat_cleared_is_a_power_page(seed: int) -> None:
    pages = _pages(_log(seed=seed, hot=(100, 160), brake=(300, 340)))
    power = [p for p in pages if p[0] == "firing" and p[1] == "power"]
    assert power and 298 <= power[0][3] <= 302, pages  # its own onset, not the heat's
    heat = [p for p in pages if p[0] == "firing" and p[1] == "thermal"]
    assert len(heat) == 1, pages  # the heat's page does not fire again for the brake


def test_guard_the_same_gpu_hot_again_within_the_window_is_one_incident() -> None:
    pages = _pages(_log(seed=0, hot=(100, 160), hot2=(300, 340), brake=(0, 0)))
    assert pages and all(p[1] == "thermal" and p[3] <= 100 for p in pages), pages
    assert [p[0] for p in pages].count("resolved") <= 1, pages  # never resolved in between


def test_a_brake_while_the_heat_still_stands_is_its_own_page_too() -> None:
    # (Round 36 joined it to the heat's page, still standing; return37: a cool GPU's brake
    # beside another GPU's heat is another fault -- its own page, at its GPU: see
    # tests/test_return37.py.)
    pages = _pages(_log(seed=0, hot=(100, 360), brake=(300, 340)))
    assert ("firing", "power", "gpu:node-000/5", 300) in pages, pages
    assert [p[0] for p in pages if p[1] == "thermal"] == ["firing", "resolved"], pages
