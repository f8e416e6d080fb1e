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

import pytest

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.events import ThermalSample
from detector.testing import T0, feed
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
