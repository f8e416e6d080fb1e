"""Room therm24, round 24: a GPU hot against its node's others is evidence until it hurts
(blind14 N5; DESIGN's throttle rule, issue 10 point 2).

A GPU 15 C above its siblings at its full clock, no clock-event reason, its rank at its peers'
pace, below ``hot_limit_c`` (the neighbourhood of the slowdown point) is a maintenance ticket,
not a drain: no page.  It becomes a recommendation when its rank is slower than its peers
(impact, whichever is found first), when it reaches ``hot_limit_c``, or when its clock drops.
"""

from __future__ import annotations

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, healthy_job, thermal

HOT = ("alerts.isolation", "slow_node", "thermal", "gpu:node-000/3")


def node_temps(hot_c: float, *, hot_from: int, seconds: int = 120, clock_mhz: float = 1980.0
               ) -> list:
    """node-000's eight GPUs at 1 Hz, 65 C, no reason; GPU 3 at ``hot_c`` (and
    ``clock_mhz``) from second ``hot_from``."""
    return [thermal(T0 + t + 0.3 + 0.01 * g, "node-000", g,
                    temp_c=hot_c if g == 3 and t >= hot_from else 65.0,
                    clock_mhz=clock_mhz if g == 3 and t >= hot_from else 1980.0)
            for t in range(seconds) for g in range(8)]


def pages(events: list, finish: bool = False) -> list:
    alerts = feed(Engine(), sorted(events, key=lambda e: e.ts), finish=finish)
    return [a for a in alerts if a.status == "firing"]


def test_a_hot_gpu_at_its_clock_and_its_peers_pace_pages_nobody() -> None:
    job = healthy_job(steps=120)
    assert pages([*job, *node_temps(80.0, hot_from=20)], finish=True) == []


def test_a_hot_gpu_whose_rank_slows_is_a_thermal_isolation_on_impact() -> None:
    # Hot from 20 s (evidence at 22 s); its rank 15 % slower from step 62: the slow rank is
    # the impact, the GPU's isolation says so.
    job = healthy_job(steps=120, slow={3: 1.15}, slow_from=62)
    got = pages([*job, *node_temps(80.0, hot_from=20)])
    assert [(a.topic, a.kind, a.cause, a.scope.key) for a in got] == [HOT]
    assert got[0].detected_ts > T0 + 62
    assert got[0].evidence["recommended_because"].startswith("impact: rank 3 slower")


def test_a_slow_rank_escalated_before_its_gpu_shows_hot_is_taken_by_the_heat() -> None:
    # Slow from step 10, escalated unknown; the GPU stands out hot from 60 s: one thermal
    # isolation, the escalation resolved pointing at it.
    job = healthy_job(steps=120, slow={3: 1.3}, slow_from=10)
    alerts = feed(Engine(), sorted([*job, *node_temps(80.0, hot_from=60)],
                                   key=lambda e: e.ts), finish=False)
    firing = [(a.topic, a.cause, a.scope.key) for a in alerts if a.status == "firing"]
    assert firing == [(ESCALATION, "unknown", "gpu:node-000/3"),
                      (ISOLATION, "thermal", "gpu:node-000/3")]
    resolved = [a for a in alerts if a.status == "resolved"]
    assert [a.topic for a in resolved] == [ESCALATION]
    assert resolved[0].evidence["superseded_by"] == "fl:iso:slow_node:gpu:node-000/3"


def test_a_hot_gpu_at_its_slowdown_point_or_losing_clock_is_isolated_on_its_own() -> None:
    cfg = Engine().cfg
    got = pages(node_temps(cfg.hot_limit_c + 1.0, hot_from=20, seconds=40))
    assert [(a.topic, a.kind, a.cause, a.scope.key) for a in got] == [HOT]
    assert "never routine" in got[0].evidence["recommended_because"]
    got = pages(node_temps(80.0, hot_from=20, seconds=40, clock_mhz=1900.0))
    assert [(a.topic, a.kind, a.cause, a.scope.key) for a in got] == [HOT]
    assert "below its baseline" in got[0].evidence["recommended_because"]


# -- blind14 N3: a node's PSU brake in bursts shorter than a 30 s poll ---------------------

def polls(braked: set[int], *, n: int = 30, interval_s: float = 30.0) -> list:
    """node-000's eight GPUs every ``interval_s``; on the polls in ``braked`` every GPU shows
    the HW power brake (0x88, clock 58 %, half the power), healthy otherwise."""
    return [thermal(T0 + k * interval_s + 0.05 * g, "node-000", g,
                    clock_mhz=1150.0 if k in braked else 1980.0,
                    throttle=0x88 if k in braked else 0,
                    power_w=330.0 if k in braked else 650.0)
            for k in range(n) for g in range(8)]


def test_a_node_brake_seen_on_two_polls_within_the_window_is_a_power_isolation() -> None:
    cfg = Engine().cfg
    got = pages(polls({6, 10}))  # 120 s apart, nothing in between
    assert [(a.topic, a.kind, a.cause, a.scope.key) for a in got] == [
        (ISOLATION, "slow_node", "power", "node:node-000")]
    # (the second braked poll's second GPU: two GPUs braking at once are the node's brake --
    # brake38; its last GPU's sample before)
    assert got[0].detected_ts == T0 + 10 * 30.0 + 0.05 * 1
    assert got[0].onset_ts == T0 + 6 * 30.0 + 0.05 * 1
    assert "two polls 120 s apart" in got[0].evidence["recommended_because"]
    # Once is one sample's chance; twice but further apart than the window, too.
    assert pages(polls({6}), finish=True) == []
    far = int(cfg.brake_repeat_s // 30.0) + 2
    assert pages(polls({3, 3 + far}, n=far + 10), finish=True) == []


def test_a_repeated_brake_is_one_incident_that_resolves_after_its_quiet_time() -> None:
    alerts = feed(Engine(), polls({6, 10, 14}, n=60))
    assert [(a.status, a.scope.key) for a in alerts] == [
        ("firing", "node:node-000"), ("resolved", "node:node-000")]
