"""noise47 (round 47, issue 10): a run read against its job's measured n-step spread in the units
its job's excursions are learnt in.

noise46's JobMonitor._memory_read took the variance of its peers' n-step means (models.excursion:
learnt on each rank's deviation as its run is sized -- a TP group on one node by its whole
deviation, its replica's batch with its own) over the variance of n independent steps of the
rank's *own* spread.  Under replica imbalance the two differ by the replica's batch: blind21's
long-context jobs (TP8 on a node, the replica's batch ~2.9 % a step, the rank's own ~1.3 %) read
4.4-6.7x "memory" where the same quantity's is 0.6-0.7x, and three slow GPUs waited 33-58 s
(blind21 tune mx10-g1 37.1 -> 81.2 s, mx11-g1 20.0 -> 53.0 s; held mx11-g4 32.6 -> 90.7 s).  Now
the one step's spread is the excursions' own quantity's (blind29 F4, held only by that
mismatch, is a strict xfail again).  Probe: /tmp/noise47/p_tp.py; figures in BENCHMARKS.md
"noise47, round 47".
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from detector.engine import Engine
from detector.testing import T0, feed, parallel_step

_STEP_S = 5.0


def _tp_job(seed: int, *, steps: int = 260, batch: float = 0.06, own: float = 0.013,
            rho: float = 0.3, slow: tuple[int, int, float] | None = None) -> list:
    """Four TP8 replicas, one a node (32 ranks, 5 s steps of ~5 s compute): each replica's
    batch a draw of spread ``batch`` a step (replica imbalance), each rank's own AR(1) noise of
    spread ``own`` at lag-1 ``rho``; ``slow``: (rank, from step, factor)."""
    rng = np.random.default_rng(seed)
    x, out = np.zeros(32), []
    for s in range(steps):
        x = rho * x + math.sqrt(1.0 - rho * rho) * rng.normal(0.0, 1.0, 32)
        c = 5000.0 * np.exp(batch * np.repeat(rng.normal(0.0, 1.0, 4), 8) + own * x)
        if slow is not None and s >= slow[1]:
            c[slow[0]] *= slow[2]
        out += parallel_step(s, c, tp=8, pp=1, step_s=_STEP_S)
    return out


def _firing(alerts) -> list[tuple[str, float]]:
    """(scope key, steps from T0) of every firing message."""
    return [(a.scope.key, (a.detected_ts - T0) / _STEP_S) for a in alerts if a.status == "firing"]


@pytest.mark.parametrize("seed", [470101, 470102, 470103])
def test_a_slow_gpu_of_a_tp_group_on_one_node_under_replica_imbalance_is_paged_in_time(
        seed: int) -> None:
    # main a7032c4: 10.6, 15.6, 13.6 steps (its run held at 4-7x "memory": the replica's batch
    # read against the rank's own spread); here 3.6, 6.6, 3.6
    fired = _firing(feed(Engine(), _tp_job(seed, slow=(17, 200, 1.08))))
    assert [k for k, _ in fired] == ["gpu:node-002/1"], fired
    assert fired[0][1] - 200 <= 8.0, fired


def test_guard_healthy_replica_imbalance_pages_nobody() -> None:
    # 4 seeds x 1,500 steps at lag-1 0.3 and 0.55 (replicas' batches AR 0.5): nothing paged
    assert _firing(feed(Engine(), _tp_job(470104, steps=800))) == []
