"""therm36 (round 36, issue 10): the cause of HW slowdown (0x8) alone on one GPU; a GPU
scraped first in its poll waits for its mates' samples of that poll (revA35 2's fix:
tests/test_revA35.py).

NVML's 0x8 is "temperature too high, external power brake, or power draw too high"; newer
drivers report the first two apart (0x40, 0x80).  faultline read every 0x8 on a GPU that is
not hot as ``power``.  One GPU asserting it under load with its temperature ordinary, no SW
power cap on it or on most of its siblings (no load at the board's limit), none of its node's
GPUs braking with it, is explained by neither heat nor power: its own hardware -- a voltage
regulator, its board (blind26 hwslow: a VRM fault, clock x0.78-0.84, its power down with
it, paged ``slow_node/power``; labelled ``gpu_hardware``).  Every GPU of a node at once is
its supply's or board's brake (``power``, at the node); 0x8 on a hot GPU is ``thermal``; a
GPU at its power limit is ``power`` (tests/test_o2diag.py: blind19 O2 under `dcgmi diag`'s
targeted power).  A cause only: the unit and the timing stay the throttle's.
"""

from __future__ import annotations

import numpy as np
import pytest

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.events import ThermalSample
from detector.testing import T0, feed, step
from tests.test_therm33 import CLOCK, _clock
from tests.test_therm35 import firing, gpu_page, node_log


def node_polls(first: dict[int, int], *, bits: int = 0x8, polls: int = 24,
               interval: float = 10.0, temp_c: float = 62.0, seed: int = 3) -> list:
    """tests/test_therm35.py's node_log at 10 s: GPU g of ``first`` asserts ``bits`` from poll
    first[g] at ``temp_c``, its power down with its clock (x clock^2.5, as a regulator
    holding its voltage down does); its mates level at 62-65 C and 640 W."""
    def on(k: int, g: int) -> bool:
        return g in first and k >= first[g]

    return node_log(lambda k, g: temp_c if on(k, g) else 62.0 + 0.4 * g, first, polls=polls,
                    interval=interval, seed=seed, bits=bits,
                    power=lambda k, g: round(640.0 * (_clock(k, first.get(g)) / CLOCK) ** 2.5, 1),
                    mem=lambda k, g: (temp_c if on(k, g) else 62.0) + 6.0)


@pytest.mark.parametrize("interval", [10.0, 30.0])
def test_hw_slowdown_alone_on_one_cool_gpu_is_its_hardware(interval: float) -> None:
    # main 6ab4ebd: slow_node/power (0x8 on a GPU that is not hot read as a power brake).
    alerts = feed(Engine(), node_polls({3: 6}, interval=interval), finish=False)
    assert firing(alerts) == [(ISOLATION, "slow_node", "gpu_hardware", "gpu:node-000/3")]
    assert alerts[0].action.name == "reset_gpu"
    assert alerts[0].detected_ts <= T0 + 6 * interval + 3 * interval  # (the throttle's timing)


def test_hw_slowdown_on_every_gpu_of_a_node_at_once_is_its_power() -> None:
    # (a node's supply or board braking on older drivers, which report no 0x80: the node)
    alerts = feed(Engine(), node_polls({g: 6 for g in range(8)}), finish=False)
    assert firing(alerts) == [(ISOLATION, "slow_node", "power", "node:node-000")]


def test_hw_slowdown_on_a_hot_gpu_is_its_heat() -> None:
    alerts = feed(Engine(), node_polls({3: 6}, temp_c=88.0), finish=False)
    assert firing(alerts) == [(ISOLATION, "slow_node", "thermal", "gpu:node-000/3")]


def test_a_power_brake_on_one_gpu_stays_power() -> None:
    # 0x80 names the power brake itself (and 0x88, its HW slowdown with it): power, as before.
    alerts = feed(Engine(), node_polls({3: 6}, bits=0x88), finish=False)
    assert firing(alerts) == [(ISOLATION, "slow_node", "power", "gpu:node-000/3")]


def test_hw_slowdown_under_tp_inside_the_node_is_one_page() -> None:
    # blind13 grow-hw-slowdown's layout: TP 8 inside each node, so the node's eight ranks
    # compute at the pace of its slowed GPU and no step record singles its rank out -- one
    # page, the eight ranks its consequence (_HELD_CLOCK), not a GPU page beside the ranks'
    # escalation.  At the GPU (therm37, revA36 F6): its own hardware, named by its own
    # telemetry row, is no node's supply or cooling (problems._NODE_HELD).
    rng = np.random.default_rng(4)
    events = [e for e in node_polls({3: 6}) if type(e) is ThermalSample]
    for s in range(int(24 * 10.0 / 2.0)):
        end = T0 + 1.0 + s * 2.0
        k = int((end + 5.0 - T0) // 10.0)
        slow = CLOCK / _clock(k, 6)
        for r in range(16):
            c = 700.0 * float(rng.lognormal(0.0, 0.015)) * (slow if r < 8 else 1.0)
            events.append(step(end + 0.001 * r, r, s, step_ms=round(700.0 * slow + 250.0, 2),
                               compute_ms=round(c, 2), tp=r % 8, dp=r // 8))
    events.sort(key=lambda e: e.ts)
    alerts = feed(Engine(), events, finish=False)
    assert firing(alerts) == [(ISOLATION, "slow_node", "gpu_hardware", "gpu:node-000/3")]


# -- revA35 2: a GPU sampled first in its poll waits for its mates' samples of that poll --------


@pytest.mark.parametrize("interval", [30.0, 10.0])
def test_a_hot_hbm_sampled_first_in_its_poll_is_paged_once_its_mates_are_in(
        interval: float) -> None:
    # blind24 hbm's shape on the GPU the collector scrapes first (GPU 7): its mates' samples
    # of its poll come 0.01-0.07 s after it.  They are waited for (GpuThermal._settle_steady),
    # not a whole interval (the GPU's next sample): paged within its own poll.
    first = int(300 / interval)
    alerts = feed(Engine(), node_log(
        lambda k, g: 60.0 + 0.4 * g, {7: first}, polls=first + int(150 / interval),
        interval=interval, mem=lambda k, g: 95 if g == 7 and k >= first else 66),
        finish=False)
    assert firing(alerts) == [gpu_page(7)]
    assert alerts[0].detected_ts <= T0 + first * interval + 0.5 * interval
