"""therm35 (round 35): a one-GPU heat fault is paged as soon as it is one GPU's; a node's
cooling fault is still one page (issue 10; blind24 hbm, blind23 D1, revB34 F1).

therm33's heat hold made a GPU throttling thermally beside warm mates (within ``hot_delta_c``
of their median) wait up to ``impact_onset_s`` for them, so that a node whose cooling fails is
paged once.  A fault of one GPU's own cooling (a cracked HBM pad, its thermal interface)
paid that minute: blind24's hot HBM, its GPU's core at its mates' temperature, was paged
68.5 s after its first 0x20.  A node's cooling heats every GPU of it, the mates climbing at an
unchanged power; one GPU's fault leaves them level at their load.  Mates shown level
(NodeTemps.mates_steady: their load held ``steady_history_s``, their temperature settled at
it and no more than ``steady_rise_c`` above) release the GPU at once; mates with no history
(a log cut just before the fault), climbing slowly, or levelled off after a climb still hold
it -- one node page when they throttle (revB34 F1).  Temperatures are integers (DCGM's).
"""

from __future__ import annotations

import math

import numpy as np

from detector.alerts import ISOLATION, Alert
from detector.engine import Engine
from detector.events import ThermalSample
from detector.testing import T0, feed
from detector.thresholds import Thresholds
from tests.test_therm33 import CLOCK, _clock, job_steps

NODE = (ISOLATION, "slow_node", "thermal", "node:node-000")


def gpu_page(g: int) -> tuple[str, str, str, str]:
    return (ISOLATION, "slow_node", "thermal", f"gpu:node-000/{g}")


def firing(alerts: list[Alert]) -> list[tuple[str, str, str, str]]:
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


def node_log(temp, first: dict[int, int], *, polls: int, interval: float = 30.0,
             power=lambda k, g: 650.0, mem=None, seed: int = 5, bits: int = 0x20) -> list:
    """node-000's GPUs (ranks 0-7 of a 16-rank data-parallel job; node-001 runs ranks 8-15
    level at 60 C) sampled every ``interval`` s, GPU 7 first in the scrape: GPU g's die at
    ``temp(k, g)`` C on poll k (an integer, as DCGM reports), its power ``power(k, g)``, its
    HBM ``mem(k, g)`` (the die's + 6 C when None).  GPU g of ``first`` throttles (``bits``,
    its clock 12 % lower each poll down to 35 %) from poll first[g]; its rank's compute follows
    its clock from half an interval before that poll's sample."""
    rng = np.random.default_rng(seed)
    out: list = []
    for k in range(polls):
        t = T0 + k * interval
        for i, g in enumerate((7, 0, 1, 2, 3, 4, 5, 6)):
            f = first.get(g)
            die = int(round(temp(k, g)))
            hbm = die + 6 if mem is None else int(round(mem(k, g)))
            out.append(ThermalSample(
                t + 0.01 * i, "node-000", g, die, hbm, power(k, g), _clock(k, f),
                bits if f is not None and k >= f else 0, None, None))
            out.append(ThermalSample(t + 0.2 + 0.01 * i, "node-001", g, 60, 66, 650.0, CLOCK,
                                     0, None, None))
    out += job_steps(first, polls, interval, rng)
    out.sort(key=lambda e: e.ts)
    return out


def _sample(poll: int, g: int, interval: float = 30.0) -> float:
    """When GPU g's sample of ``poll`` is taken."""
    return T0 + poll * interval + 0.01 * (7, 0, 1, 2, 3, 4, 5, 6).index(g)


def _held_until(since: float, interval: float) -> float:
    """The latest therm33's hold pages a GPU throttling beside warm mates since ``since``."""
    cfg = Thresholds()
    return since + max(cfg.impact_onset_s, interval) + 0.25 * interval + 1.0


def _level(g: int) -> float:
    return 60.0 + 0.4 * g  # (the mates' spread at one load)


# -- one GPU's own cooling: paged at once beside mates level at their load ---------------------


def test_a_hot_hbm_beside_mates_level_for_minutes_is_paged_at_its_first_throttle():
    # blind24 hbm (churn s0 gn011/3, s1 gn013/3): a cracked HBM pad; the GPU's core at its
    # mates' 60-62 C, its HBM at 95 C (0x20), the mates level at their load for minutes.  On
    # main its rank waited for them: paged 68.5 s after its first 0x20.
    for interval in (30.0, 10.0):
        first = int(300 / interval)
        alerts = feed(Engine(), node_log(
            lambda k, g: _level(g), {3: first}, polls=first + int(150 / interval),
            interval=interval, mem=lambda k, g, first=first: 95 if g == 3 and k >= first else 66),
            finish=False)
        assert firing(alerts) == [gpu_page(3)], interval
        assert alerts[0].detected_ts <= _sample(first, 3, interval) + interval, interval


def test_a_hot_hbm_45_s_after_its_load_stepped_is_paged_within_a_minute_of_its_first_throttle():
    # blind24 hbm (churn s3 gn009/7, s2 gn014/6): a sweep job starts; 45 s later the GPU with
    # the cracked pad throttles, its mates' temperature following their new load (+3 C on the
    # poll after the step, then level).  No history of the mates at this load yet: held, then
    # released on the poll that shows them settled -- not a minute and a half on.
    def temp(k: int, g: int) -> float:
        if k < 6:
            return 45.0 + 0.4 * g
        return _level(g) - 14.0 * math.exp(-((k - 6) * 30.0 + 15.0) / 15.0)

    alerts = feed(Engine(), node_log(
        temp, {3: 7}, polls=14, power=lambda k, g: 650.0 if k >= 6 else 150.0,
        mem=lambda k, g: 95 if g == 3 and k >= 7 else temp(k, g) + 6), finish=False)
    assert firing(alerts) == [gpu_page(3)]
    first = _sample(7, 3)
    assert alerts[0].detected_ts <= first + 60.0 < _held_until(first, 30.0)


# -- a node's cooling: one page, however its mates climb (revB34 F1, blind23 D1) ---------------


def test_a_node_whose_mates_climb_slowly_is_one_node_page():
    # revB34 F1: the node's coolant flow failing slowly -- every GPU +1.5 C a poll at an
    # unchanged power, GPU 7 nearest the restriction throttling first, three mates a poll or
    # two later.  therm34's rise-keyed hold paged GPU 7, then the node.
    def temp(k: int, g: int) -> float:
        return 70.0 + 0.4 * g + (0.0 if k < 4 else 1.5 * (k - 4)) + (6.0 if g == 7 else 0.0)

    alerts = feed(Engine(), node_log(temp, {7: 10, 0: 11, 1: 12, 2: 12}, polls=18),
                  finish=False)
    assert firing(alerts) == [NODE]


def test_a_node_whose_mates_levelled_off_after_climbing_is_one_node_page():
    # revB34 F1: the mates climbed 8 C a poll and levelled off two polls before GPU 7
    # throttled; they throttle two polls after it.  Level now, but not at the level their
    # load puts them: still the node's heat.
    def temp(k: int, g: int) -> float:
        return _level(g) + min(18.0, 6.0 * max(0, k - 4)) + (3.0 if g == 7 else 0.0)

    alerts = feed(Engine(), node_log(temp, {7: 9, 0: 11, 4: 11}, polls=16), finish=False)
    assert firing(alerts) == [NODE]


def test_a_node_heating_from_the_logs_first_sample_is_one_node_page():
    # blind23 D1's reproducer cut 10 s before the fault: its mates first heard already busy
    # and climbing -- no history at their load, no evidence they are level: held as before.
    def temp(k: int, g: int) -> float:
        return min(86.0, _level(g) + 8.0 * (k + 1))

    alerts = feed(Engine(), node_log(temp, {7: 3, 0: 4, 2: 4}, polls=10), finish=False)
    assert firing(alerts) == [NODE]


def test_a_node_whose_mates_climb_slowly_at_10_s_is_one_node_page():
    # The slow climb at 10 s telemetry: +0.5 C a sample, GPU 7 leading its mates by 4 samples.
    def temp(k: int, g: int) -> float:
        return 70.0 + 0.4 * g + (0.0 if k < 12 else 0.5 * (k - 12)) + (6.0 if g == 7 else 0.0)

    alerts = feed(Engine(), node_log(temp, {7: 30, 0: 34, 1: 35}, polls=48, interval=10.0),
                  finish=False)
    assert firing(alerts) == [NODE]


def test_a_node_whose_mates_sat_level_near_their_slowdown_for_minutes_is_one_node_page():
    # A node's cooling degraded to just short of its GPUs' slowdown point: the mates sat level
    # at 84 C for six minutes at their load, GPU 7 throttles first, two mates a poll later.
    # Level, but a sample from throttling themselves: held for them as before.
    def temp(k: int, g: int) -> float:
        return _level(g) + min(22.0, 8.0 * max(0, k - 2)) + (3.0 if g == 7 else 0.0)

    alerts = feed(Engine(), node_log(temp, {7: 18, 0: 19, 4: 19}, polls=24), finish=False)
    assert firing(alerts) == [NODE]
