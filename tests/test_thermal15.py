"""thermal15 (round 15): a node's GPUs judged with the siblings heard; one fan one page; a
node's power limit one node page."""

from __future__ import annotations

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.node_temps import NodeTemps
from detector.testing import T0, feed, healthy_job, thermal


def _node(temps: dict[int, tuple[float, float]], idle: tuple[int, ...] = ()) -> NodeTemps:
    """A node whose GPU g last reported temps[g] = (ts, temp_c)."""
    n = NodeTemps()
    for g, (ts, c) in temps.items():
        n.gpus.add(g)
        n.temps[g], n.times[g] = c, ts
    n.idle.update(idle)
    return n


def test_a_poll_median_judges_with_the_gpus_heard_lately() -> None:
    # 8 GPUs at 30 s; GPUs 4-7 silent since 100 s (a collector lost them): at 300 s they are
    # no longer waited for -- on main 4 of 8 were never "most of the node", nothing judged.
    now = {g: (300.0 + 0.1 * g, 60.0 + g) for g in range(4)}
    gone = {g: (100.0, 60.0) for g in range(4, 8)}
    assert _node({**now, **gone}).poll_median(300.4, 15.0) == 62.0


def test_a_poll_median_waits_for_siblings_one_poll_late() -> None:
    # The same four GPUs late by one poll only (their 270 s sample the latest): still waited for.
    now = {g: (300.0 + 0.1 * g, 60.0 + g) for g in range(4)}
    late = {g: (270.0, 60.0) for g in range(4, 8)}
    assert _node({**now, **late}).poll_median(300.4, 15.0) is None


def test_a_poll_median_needs_three_busy_gpus() -> None:
    now = {g: (300.0 + 0.1 * g, 60.0 + g) for g in range(4)}
    assert _node(now).poll_median(300.4, 15.0) == 62.0
    assert _node(now, idle=(0,)).poll_median(300.4, 15.0) == 62.0   # three busy: judged
    assert _node(now, idle=(0, 1)).poll_median(300.4, 15.0) is None  # two: no median


# -- one fan, one page (blind5 E7) ------------------------------------------------------------

def _node_slow_job(*, thermal_of, slowdown: float = 1.1) -> list[tuple[str, str, str]]:
    """Firing pages of a 32-rank job on node-000..003 (a step a second), node-000's 8 ranks
    ``slowdown`` x slower alike from step 150 (TP inside the node: its ranks at its slowest
    GPU's pace); every GPU sampled every 10 s, ``thermal_of(i, node, gpu)`` the i-th sample's
    keyword arguments for detector.testing.thermal."""
    job = list(healthy_job(ranks=32, steps=320, slow={r: slowdown for r in range(8)},
                           slow_from=150))
    temps = [thermal(T0 + 0.5 + 10.0 * i + 0.01 * n + 0.001 * g, f"node-00{n}", g,
                     **thermal_of(i, n, g)) for i in range(32) for n in range(4) for g in range(8)]
    return [(a.topic, a.cause, a.scope.key) for a in feed(
        Engine(), sorted(job + temps, key=lambda e: e.ts), finish=False) if a.status == "firing"]


def test_a_fan_failing_beside_two_gpus_is_one_page() -> None:
    # GPU 5 of node-000 at 85 C and GPU 4 at 79 C from +60 s, the node's others at 65 C: GPU 5
    # thermal; GPU 4 (14 C over, under GPU 5) its evidence; the node's ranks, slow alike from
    # +150 s, GPU 5's consequence.  Main: GPU 4 isolated too, the node escalated 'unknown'.
    def temp(i: int, n: int, g: int) -> dict:
        hot = i >= 6 and n == 0
        return {"temp_c": 85.0 if hot and g == 5 else 79.0 if hot and g == 4 else 65.0}
    assert _node_slow_job(thermal_of=temp) == [(ISOLATION, "thermal", "gpu:node-000/5")]


def test_a_gpu_hot_beside_a_cooler_one_is_its_own_page() -> None:
    # Control: GPU 4 alone hot (GPU 5 at its node's temperature): its own isolation, which the
    # node's ranks join (main: the node escalated 'unknown' beside it).
    def temp(i: int, n: int, g: int) -> dict:
        return {"temp_c": 79.0 if i >= 6 and n == 0 and g == 4 else 65.0}
    assert _node_slow_job(thermal_of=temp) == [(ISOLATION, "thermal", "gpu:node-000/4")]


# -- a node's power limit, one node page (blind5 E2b) -----------------------------------------

def _capped(gpus: tuple[int, ...]):
    """node-000's ``gpus`` capped from +148 s (0x4, the clock 1980 -> 1650 MHz, ~500 W); its
    GPUs 0, 2, 4, 5, 7 report 0x4 under load from their first sample (no clock baseline),
    1, 3, 6 run free before."""
    def of(i: int, n: int, g: int) -> dict:
        capped = n == 0 and g in gpus and i >= 15
        routine = g in (0, 2, 4, 5, 7)
        return {"throttle": 4 if capped or routine else 0, "power_w": 500.0 if capped else 690.0,
                "clock_mhz": 1650.0 if capped else 1920.0 if routine else 1980.0}
    return of


def test_a_power_limit_on_a_node_is_one_node_power_page() -> None:
    # All 8 GPUs capped on one poll, the node's ranks ~15 % slower alike.  Main: GPUs 1, 3, 6
    # isolated for power and the node escalated 'unknown'.
    assert _node_slow_job(thermal_of=_capped(tuple(range(8))), slowdown=1.15) == [
        (ISOLATION, "power", "node:node-000")]


def test_one_gpu_capped_slowing_its_node_is_that_gpu() -> None:
    # Control: GPU 3 alone capped (its own supply), the node's TP ranks at its pace: GPU 3's
    # power isolation, which they join.  Main: the node escalated 'unknown' beside it.
    assert _node_slow_job(thermal_of=_capped((3,)), slowdown=1.15) == [
        (ISOLATION, "power", "gpu:node-000/3")]
