"""thermal15 (round 15): a node's GPUs judged with the siblings heard; one fan one page; a
node's power limit one node page."""

from __future__ import annotations

from detector.node_temps import NodeTemps


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
