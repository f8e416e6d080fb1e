"""o3node (round 27): a GPU's heat or power paged where the step records can say which GPU.

blind15 O3: fx10's collector writes NVML minor numbers, so the hot GPU the job knows as 3 is
'gpu 1' in its thermal rows; TP8 slows the node's 8 ranks alike, so no step record can say
which GPU, and faultline isolated gpu fx10/1 -- the wrong GPU by DESIGN's rule.  A power or
heat isolation of a GPU whose rank shares its replica with the job's other ranks on the node,
and is not found slow alone, is raised at the node (which holds the GPU whatever its number;
its action was drain_node already); the number the telemetry told stays in the evidence.
Where the step records single the GPU out (its rank a replica of its own, or slow alone), or
no job runs on it, the GPU stays the unit.
"""

from __future__ import annotations

import numpy as np

from bench.blind15.measure import replay
from detector.engine import Engine
from detector.testing import T0, feed, parallel_step, thermal
from tests import blindcases as bc

HOT_FROM = 100  # s: GPU 1 of node-002 at 90 C, HW thermal slowdown 0x40, 1620 MHz from here


def _incident(tp: int, slow: list[int], *, locked: bool = True, slow_from: int | None = None,
              steps: int = 240, jobless: bool = False,
              hot: tuple[tuple[int, int], ...] = ((1, HOT_FROM),)) -> list[tuple]:
    """Firing pages of a 32-rank job on node-000..003 (TP ``tp`` x DP, ranks r on GPU r % 8
    of node r // 8), its ranks ``slow`` x1.2 from ``slow_from`` (5 s after the heat), a TP
    group at its slowest member when ``locked``; thermal rows every 10 s, ``hot`` the GPUs
    of node-002 hot from a time."""
    rng = np.random.default_rng(0)
    ev = []
    for s in range(steps if not jobless else 0):
        c = 700.0 * rng.lognormal(0.0, 0.015, 32)
        if s >= (HOT_FROM + 5 if slow_from is None else slow_from):
            c[slow] *= 1.2
        if tp > 1 and locked:
            for g in range(0, 32, tp):
                c[g:g + tp] = c[g:g + tp].max()
        ev += parallel_step(s, c, tp=tp, pp=1)
    for t in range(0, steps, 10):
        for n in range(4):
            for g in range(8):
                on = n == 2 and any(g == h and t >= at for h, at in hot)
                ev.append(thermal(T0 + t + 0.3 + 0.01 * g, f"node-{n:03d}", g,
                                  temp_c=90.0 if on else 70.0,
                                  clock_mhz=1620.0 if on else 1980.0,
                                  throttle=0x40 if on else 0))
    ev.sort(key=lambda e: e.ts)
    return [(a.topic.split(".")[1], a.kind, a.cause, a.scope.key, a.action.name,
             a.evidence.get("gpus_in_telemetry") or a.evidence.get("gpu_in_telemetry"),
             a.granularity.gpus)
            for a in feed(Engine(), ev) if a.status == "firing"]


def test_a_hot_gpu_in_a_tp_group_filling_its_node_is_paged_at_the_node():
    # (main before o3node: gpu:node-002/1 -- a number only the collector vouches for)
    assert _incident(8, [17]) == [
        ("isolation", "slow_node", "thermal", "node:node-002", "drain_node", 1, 8)]


def test_so_too_before_any_rank_is_found_slow():
    # (the heat's verdict before the ranks' slowness: blind15 tune fabric-s2 and s3)
    assert _incident(8, []) == [
        ("isolation", "slow_node", "thermal", "node:node-002", "drain_node", 1, 8)]


def test_a_second_gpu_of_the_node_raised_into_its_page_fires_it_again():
    # (each GPU's heat had a page of its own before: a second fault must not go unsaid)
    page = ("isolation", "slow_node", "thermal", "node:node-002", "drain_node")
    assert _incident(8, [17], hot=((1, HOT_FROM), (5, HOT_FROM + 60))) == [
        (*page, 1, 8), (*page, [1, 5], 8)]


def test_a_rank_that_is_a_replica_of_its_own_confirms_its_gpu():
    assert _incident(1, [17]) == [
        ("isolation", "slow_node", "thermal", "gpu:node-002/1", "drain_node", None, 1)]
    assert _incident(1, []) == [
        ("isolation", "slow_node", "thermal", "gpu:node-002/1", "drain_node", None, 1)]


def test_a_rank_slow_alone_in_its_tp_group_confirms_its_gpu():
    # TP waits timed outside compute_ms: the hot GPU's rank alone slow, found before the
    # heat's verdict (escalated, then explained) or with it.
    assert _incident(8, [17], locked=False, slow_from=40) == [
        ("escalation", "slow_node", "unknown", "gpu:node-002/1", "investigate", None, 1),
        ("isolation", "slow_node", "thermal", "gpu:node-002/1", "drain_node", None, 1)]
    assert _incident(8, [17], locked=False) == [
        ("isolation", "slow_node", "thermal", "gpu:node-002/1", "drain_node", None, 1)]


def test_a_hot_gpu_no_job_runs_on_stays_the_gpu():
    assert _incident(8, [], jobless=True) == [
        ("isolation", "slow_node", "thermal", "gpu:node-002/1", "drain_node", None, 1)]


def test_the_o3_reproducer_pages_fx10_with_the_collectors_number_as_evidence():
    sc = bc.measure_scorer(bc.cases_of("blind15"), replay)("O3-renumbered-hot-gpu")
    assert [(p["topic"], p["kind"], p["cause"], p["scope"], p["evidence"]["gpu_in_telemetry"])
            for p in sc["problems"]] == [
        ("alerts.isolation", "slow_node", "thermal", {"level": "node", "node": "fx10"}, 1)]
    assert bc.every_fault_caught(sc)  # (the label's GPU is the job's 3)
