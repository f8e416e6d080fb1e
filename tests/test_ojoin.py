"""ojoin (round 28): a GPU's heat or power raised while its node's page names it joins that page.

o3node (round 27) raises a GPU's heat or power isolation at its node when the step records
cannot single the GPU out (its rank shares its replica with its node-mates and is not slow
alone); the number the telemetry gave is in the page's evidence (``gpu_in_telemetry``).  When
the GPU's rank was then found slow alone and the GPU raised again (an intermittent brake's
next episode) the GPU was confirmed and a second page opened at ``gpu:NODE/G`` while the
node's page naming G was still open: two pages for one fault (the twenty-seventh reporting
corpus: slow_node problems 164 -> 186, 0 FP; baseline-s2701 node-000's power brake, node page
at +308.5 s, gpu:node-000/0 at +332.5 s).  DESIGN's scoring counts each ``dedup_key`` as its own
problem; its pager contract says one fault pages once.  The raise now joins the node's page
(evidence; no new message: the page already names the GPU and its action).  Another GPU's
raise, or the same GPU's after the node's page resolved, still pages.
"""

from __future__ import annotations

import numpy as np

from detector.engine import Engine
from detector.testing import T0, feed, parallel_step, thermal

NODE = "node-002"  # ranks 16..23 of the TP8 job, rank 16 + g on GPU g


def _incident(episodes: dict[int, list[tuple[int, int]]], *, slow: tuple[int, ...] = (17,),
              slow_in: tuple[tuple[int, int], ...] = ((100, 10**6),), power: bool = False,
              steps: int = 400, every: int = 1) -> list:
    """Every alert of a 32-rank TP8 job on node-000..003 (rank r on GPU r % 8 of node r // 8),
    its ranks ``slow`` x1.2 in each ``[from, to)`` step of ``slow_in``, alone in their TP
    groups (TP waits timed outside ``compute_ms``); thermal rows every ``every`` s, GPU g of
    node-002 braking (0x80 at 70 C when ``power``, HW thermal slowdown 0x40 at 90 C otherwise;
    1620 MHz) in each ``[from, to)`` s of ``episodes[g]``."""
    rng = np.random.default_rng(0)
    ev = []
    for s in range(steps):
        c = 700.0 * rng.lognormal(0.0, 0.015, 32)
        if any(a <= s < b for a, b in slow_in):
            c[list(slow)] *= 1.2
        ev += parallel_step(s, c, tp=8, pp=1)
    for t in range(0, steps, every):
        for n in range(4):
            for g in range(8):
                on = n == 2 and any(a <= t < b for a, b in episodes.get(g, ()))
                ev.append(thermal(T0 + t + 0.3 + 0.01 * g, f"node-{n:03d}", g,
                                  temp_c=(70.0 if power else 90.0) if on else 70.0,
                                  clock_mhz=1620.0 if on else 1980.0,
                                  throttle=(0x80 if power else 0x40) if on else 0))
    ev.sort(key=lambda e: e.ts)
    return feed(Engine(), ev)


def _pages(alerts: list) -> list[tuple]:
    return [(a.topic.split(".")[1], a.kind, a.cause, a.scope.key, round(a.detected_ts - T0, 1),
             a.evidence.get("gpus_in_telemetry") or a.evidence.get("gpu_in_telemetry"))
            for a in alerts if a.status == "firing"]


def _problems(alerts: list) -> list[str]:
    return sorted({a.dedup_key.split(":", 2)[-1] for a in alerts if a.status == "firing"})


def test_a_gpu_confirmed_after_its_node_page_joins_that_page():
    # The report27 shape: a brake of GPU 1 (power, 1 Hz rows) paged at the node, its rank
    # then slow alone, the brake's next episode -- main paged gpu:node-002/1 at +132.3 s.
    alerts = _incident({1: [(100, 104), (130, 160)]}, slow_in=((100, 200),), power=True,
                       steps=900)
    assert _pages(alerts) == [
        ("isolation", "slow_node", "power", f"node:{NODE}", 102.3, 1)]
    assert _problems(alerts) == [f"slow_node:node:{NODE}"]
    # (the GPU's second episode is the node page's evidence, said when it resolves)
    resolved = [a for a in alerts if a.status == "resolved"]
    assert [a.scope.key for a in resolved] == [f"node:{NODE}"]
    assert any(s["unit"] == f"gpu:{NODE}/1" and s["ts"] >= T0 + 130
               for s in resolved[0].evidence["signals"])


def test_so_too_for_heat_sampled_every_10_s():
    # TP-locked heat, node page at +120.3 s; the rank slow alone from +140 s; the second
    # episode at +200 s -- main paged gpu:node-002/1 at +220.3 s beside the node's page.
    alerts = _incident({1: [(100, 130), (200, 260)]}, slow_in=((140, 400),), every=10)
    assert _pages(alerts) == [
        ("isolation", "slow_node", "thermal", f"node:{NODE}", 120.3, 1)]


def test_another_gpu_confirmed_on_the_node_still_pages():
    # GPU 5's rank slow alone: GPU 5 is its own fault, not the GPU the node's page names.
    # (escalated slow first, then explained by its own brake: the GPU's isolation; the
    # escalation at +107 s since int43 -- no 3 s floor on the wait once the cadence is known)
    alerts = _incident({1: [(100, 104)], 5: [(130, 160)]}, slow=(21,), slow_in=((104, 400),),
                       power=True)
    assert _pages(alerts) == [
        ("isolation", "slow_node", "power", f"node:{NODE}", 102.3, 1),
        ("escalation", "slow_node", "unknown", f"gpu:{NODE}/5", 107.0, None),
        ("isolation", "slow_node", "power", f"gpu:{NODE}/5", 132.3, None)]


def test_the_same_gpu_after_its_node_page_resolved_pages():
    # (the rank slow in both episodes; the node's page resolved in between)
    alerts = _incident({1: [(100, 104), (1000, 1030)]}, slow_in=((100, 160), (980, 1100)),
                       power=True, steps=1100)
    pages = _pages(alerts)
    assert pages[0] == ("isolation", "slow_node", "power", f"node:{NODE}", 102.3, 1)
    resolved = [a.detected_ts - T0 for a in alerts
                if a.status == "resolved" and a.scope.key == f"node:{NODE}"]
    assert len(resolved) >= 1 and resolved[0] < 980
    # (escalated slow first, then explained by the brake: the GPU's isolation)
    assert [p[:4] for p in pages[1:]] == [
        ("escalation", "slow_node", "unknown", f"gpu:{NODE}/1"),
        ("isolation", "slow_node", "power", f"gpu:{NODE}/1")]
    assert 980 < pages[1][4] < pages[2][4] < 1030
