"""Room steps17 (round 17): what a small slowdown is worth, and a host late for minutes.

- The blind5 held-out false positive (workloads-s5, job sft-s, TP8 x DP4, a replica a node):
  a healthy replica paced 1.5 % over its DP peers by its slowest GPU, +-1 % a step, paged on a
  4-step run averaging 2.7 % -- the run of a replica on one node was sized on its replica's
  deviation with no standard-error margin.  It is now sized against the replicas' spread
  (JobMonitor._check_slow), as every other run is against its own noise; a 5 % or 10 % node
  in the same job still pages.
- blind7 G5: a host under memory pressure makes its 8 ranks late in their host path (bursts in
  most steps) for 4-6 minutes; host_late is escalated at the node once its run has lasted
  ``host_node_page_s`` (240 s; was host_page_s, 600 s, as for one rank alone); a 3-minute
  stall (blind2's healthy input pipeline catching up) still pages nobody.
"""

from __future__ import annotations

import numpy as np

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.testing import T0, feed, parallel_step
from detector.thresholds import Thresholds
from tests.test_steps_round12 import COMPUTE, _on, job

TP, PP, DP = 8, 1, 4  # a replica a node: ranks 8k..8k+7 on node-00k


def _tp_paced_job(*, steps: int, seed: int, node: int = 1, offset: float = 0.02,
                  slow_from: int = 10**9, factor: float = 1.0) -> list:
    """sft-s's shape: every rank of a replica at its replica's pace (TP8 held by its slowest
    GPU), each replica's pace drawn +-1 % a step (each rank +-0.2 % around it); replica
    ``node`` ``offset`` slower from the start (its slowest GPU's healthy offset: DESIGN's
    matrix has fixed offsets up to +-3 %) and ``factor`` slower from ``slow_from``."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(steps):
        pace = rng.lognormal(0.0, 0.01, DP)
        pace[node] *= 1.0 + offset
        if s >= slow_from:
            pace[node] *= factor
        compute = 1300.0 * np.repeat(pace, TP) * rng.lognormal(0.0, 0.002, TP * DP)
        out += parallel_step(s, compute, tp=TP, pp=PP, step_s=1.6)
    return out


def _firing(alerts: list) -> list[tuple[str, str, float]]:
    return [(a.kind, a.scope.key, a.detected_ts) for a in alerts if a.status == "firing"]


def test_a_replica_paced_a_little_over_its_peers_pages_nobody() -> None:
    # main e882e69: node-001 escalated on seeds 0 and 2 (4- and 6-step runs averaging 2.5-3.0 %,
    # sized with no margin); workloads-s5's replica was 1.5 % over with the same noise.
    for seed in range(3):
        assert _firing(feed(Engine(), _tp_paced_job(steps=1500, seed=seed))) == [], seed


def test_a_node_five_percent_slower_in_that_job_still_pages() -> None:
    for seed in range(4):
        alerts = _firing(feed(Engine(), _tp_paced_job(steps=300, seed=seed, slow_from=200,
                                                      factor=1.05, offset=0.0)))
        assert [(k, u) for k, u, _ in alerts] == [("slow_node", "node:node-001")], seed


def test_a_node_ten_percent_slower_in_that_job_pages_within_ten_steps_median() -> None:
    # DESIGN: a 10 % slowdown, median <= 10 steps.  Seeds 0..5 here 4.9 steps each, as on main
    # e882e69 (5 %: 4.9-6.9 steps, the same on both).  (On a replica left 2 % over its peers
    # from the start -- its offset never learned under imbalance: open -- main takes 4.9-20.9
    # steps for 10 %, this 7.9-25.9.)
    got = []
    for seed in range(6):
        alerts = _firing(feed(Engine(), _tp_paced_job(steps=260, seed=seed, slow_from=200,
                                                      factor=1.10, offset=0.0)))
        assert [(k, u) for k, u, _ in alerts] == [("slow_node", "node:node-001")], seed
        got.append((alerts[0][2] - (T0 + 1.6 * 200)) / 1.6)
    assert sorted(got)[2] <= 10, got


# -- G5: a host late for minutes ----------------------------------------------------------------


def _bursty_host(minutes: float, seed: int = 0) -> list:
    """A pure-DP job of 32 ranks on 4 nodes, a step a second; from step 100 node-001's 8 ranks
    spend 0.4-4x a step's compute more in their host path on 60 % of steps (one draw a step
    for the node: its page cache evicted, every loader re-reading) for ``minutes``."""
    rng = np.random.default_rng(seed)
    stop = 100 + int(60 * minutes)
    burst = {s: float(rng.lognormal(0.0, 0.6)) if rng.random() < 0.6 else 0.0
             for s in range(100, stop)}
    node = set(range(8, 16))
    return list(job(steps=stop + 100, ranks=32,
                    host=lambda s, r: 0.5 * COMPUTE * burst.get(s, 0.0) if r in node else 0.0))


def test_a_host_under_memory_pressure_for_five_minutes_is_one_node_escalation() -> None:
    # blind7 G5's shape; main e882e69 (host_page_s 600 s): nothing.
    alerts = feed(Engine(), _bursty_host(5.0))
    pages = [(a.topic, a.kind, a.scope.key, a.detected_ts - T0) for a in alerts
             if a.status == "firing"]
    assert [p[:3] for p in pages] == [(ESCALATION, "slow_node", "node:node-001")]
    assert pages[0][3] <= 100 + Thresholds().host_node_page_s + 15
    ev = next(a for a in alerts if a.status == "firing").evidence
    assert ev["signals"][0]["signal"] == "host_late"


def test_a_host_late_for_three_minutes_pages_nobody() -> None:
    # blind2's healthy "slow input pipeline on one node for 3 min", in its steady shape and in
    # G5's bursty one.
    assert _firing(feed(Engine(), _bursty_host(3.0))) == []
    steady = job(steps=380, ranks=32, host=_on(set(range(8, 16)), 0.3 * COMPUTE, 100, 280))
    assert _firing(feed(Engine(), list(steady))) == []
