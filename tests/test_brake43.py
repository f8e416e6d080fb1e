"""brake43 (round 43, issue 10): a GPU's own power brake in bursts shorter than the poll
(blind33 F4).

A VRM failing brakes one GPU (0x80|0x8, clock x0.5) for 3-8 s every 15-40 s: a 10 s poll sees
most bursts on one sample each, a 30 s poll one in three or so, and none holds
``throttle_samples`` polls in a row -- never paged in 4 of 8 blind33 logs.  A brake seen on
separate polls, its mates' samples of each poll in and none braking, recurs: three polls within
``brake_repeat_s`` at 10 s, two at 15 s or slower (throttle.brake_recurs: a burst seen stands
for the bursts between polls).  The node's brake (two GPUs or more a poll) stays the node's.
"""

from __future__ import annotations

import numpy as np
import pytest

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.events import ThermalSample
from detector.testing import T0, feed, step
from tests.test_therm35 import firing

CLOCK = 1980.0


def brake_polls(braking: dict[int, set[int]], *, interval: float, polls: int = 30,
                bits: int = 0x88) -> list[ThermalSample]:
    """node-000's eight busy GPUs sampled every ``interval`` s (GPU g 0.1 g s into the poll):
    on poll k the GPUs of ``braking[k]`` show ``bits`` at half the clock and 60 % of the
    power; the rest run free at 640 W."""
    out = []
    for k in range(polls):
        for g in range(8):
            braked = g in braking.get(k, ())
            out.append(ThermalSample(
                T0 + k * interval + 0.1 * g, "node-000", g, 62.0 + 0.3 * g, 70.0,
                384.0 if braked else 640.0, CLOCK / 2 if braked else CLOCK,
                bits if braked else 0))
    return out


def _gpu3(*polls: int) -> dict[int, set[int]]:
    return {k: {3} for k in polls}


@pytest.mark.parametrize(("interval", "polls", "paged_at"), [
    (10.0, (6, 9, 13, 16), 13),   # the third burst seen
    (30.0, (6, 10, 14), 10),      # the second: a 30 s poll sees one burst in several
    (1.0, (60, 90, 130, 160), 130),
], ids=["10s", "30s", "1s"])
def test_one_gpus_brake_in_bursts_seen_on_separate_polls_is_its_power_page(
        interval: float, polls: tuple[int, ...], paged_at: int) -> None:
    # main c89585f: never paged (no burst held throttle_samples polls in a row)
    alerts = feed(Engine(), brake_polls(_gpu3(*polls), interval=interval,
                                        polls=max(polls) + 8), finish=False)
    assert firing(alerts) == [(ISOLATION, "slow_node", "power", "gpu:node-000/3")]
    page = alerts[0]
    # (decided on its next sample, or on the poll's last one: within a poll of the burst)
    assert T0 + paged_at * interval < page.detected_ts <= T0 + (paged_at + 1) * interval + 1.0
    assert page.onset_ts == pytest.approx(T0 + polls[0] * interval + 0.3)
    signal = page.evidence["signals"][0]
    assert signal["throttle_reasons"] == "0x88" and signal["sm_clock_mhz"] == CLOCK / 2


def test_its_page_resolves_once_it_has_not_braked_for_the_window() -> None:
    alerts = feed(Engine(), brake_polls(_gpu3(6, 9, 13), interval=10.0, polls=13 + 100),
                  finish=False)
    assert [(a.status, a.scope.key) for a in alerts] == [
        ("firing", "gpu:node-000/3"), ("resolved", "gpu:node-000/3")]
    # its throttle held brake_repeat_s (300 s) past its last burst, not cleared between
    # bursts; the page then waits out slow_node's flap_window_s (600 s) as any does
    assert alerts[1].detected_ts >= T0 + 13 * 10.0 + 300.0 + 600.0


@pytest.mark.parametrize("braking", [
    _gpu3(6, 20),                      # two bursts at 10 s: not yet recurring
    _gpu3(6, 40, 75),                  # three, but never three within 300 s
    {6: {3}, 9: {3, 5}, 13: {3, 5}},   # its node's brake from the second burst on: the node's
], ids=["two-at-10s", "spread-out", "node-brake"])
def test_not_its_own_brake_recurring(braking: dict[int, set[int]]) -> None:
    alerts = feed(Engine(), brake_polls(braking, interval=10.0, polls=90), finish=False)
    assert not any(a.scope.key == "gpu:node-000/3" and a.status == "firing" for a in alerts)


def test_a_single_burst_at_30s_pages_nothing() -> None:
    assert feed(Engine(), brake_polls(_gpu3(6), interval=30.0, polls=20), finish=False) == []


# -- blind33 F3: a GPU's application clocks left low (0x2), its mates free ---------------------

HELD = 1822.0  # the max-Q profile's application clocks: -8 %


def app_clock_log(held: set[tuple[str, int]], *, slow: set[int], from_poll: int = 12,
                  polls: int = 40, interval: float = 10.0, seed: int = 4303) -> list:
    """A 16-rank data-parallel job, ranks 0-7 on node-000's GPUs 0-7 and 8-15 on node-001's,
    1 s steps; thermal rows every ``interval`` s.  From poll ``from_poll`` the GPUs of ``held``
    show 0x2 at HELD MHz (their application clocks), and the ranks of ``slow`` compute x1.08."""
    rng = np.random.default_rng(seed)
    out: list = []
    start = T0 + from_poll * interval
    for s in range(int(polls * interval)):
        end = T0 + 1.0 + s
        compute = 700.0 * rng.lognormal(0.0, 0.012, 16)
        if end >= start:
            for r in slow:
                compute[r] *= CLOCK / HELD
        for r in range(16):
            out.append(step(end + 0.001 * r, r, s, step_ms=round(float(compute.max()) + 250.0, 2),
                            compute_ms=round(float(compute[r]), 2)))
    for k in range(polls):
        for n, node in enumerate(("node-000", "node-001")):
            for g in range(8):
                on = k >= from_poll and (node, g) in held
                out.append(ThermalSample(
                    T0 + k * interval + 0.3 * g + 0.05 * n, node, g, 60.0 + 0.2 * g, 68.0,
                    560.0 if on else 640.0, HELD if on else CLOCK, 0x2 if on else 0))
    out.sort(key=lambda e: e.ts)
    return out


@pytest.mark.parametrize("interval", [10.0, 30.0])
def test_one_gpus_application_clocks_under_its_slow_rank_are_power_reset_its_clocks(
        interval: float) -> None:
    # main c89585f: escalated slow_node/unknown ("no thermal or power throttling on the GPU")
    alerts = feed(Engine(), app_clock_log({("node-000", 3)}, slow={3}, interval=interval,
                                          polls=int(400 / interval)), finish=False)
    assert firing(alerts) == [(ISOLATION, "slow_node", "power", "gpu:node-000/3")]
    page = alerts[0]
    assert page.action.name == "reset_clocks" and "nvidia-smi -rac -i 3" in page.action.detail
    assert "application clocks" in page.evidence["recommended_because"]


def test_application_clocks_on_every_gpu_alike_are_a_policy() -> None:
    everyone = {(n, g) for n in ("node-000", "node-001") for g in range(8)}
    assert firing(feed(Engine(), app_clock_log(everyone, slow=set(range(16))),
                       finish=False)) == []


def test_one_gpus_application_clocks_with_its_rank_at_its_peers_pace_page_nothing() -> None:
    assert firing(feed(Engine(), app_clock_log({("node-000", 3)}, slow=set()),
                       finish=False)) == []
