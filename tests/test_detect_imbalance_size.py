"""Under batch imbalance a chance run is sized on the rank's own deviation (dp4-10s 90002).

Healthy fleet dp4-10s seed 90002 paged a healthy GPU (rank 24, replica on 8 nodes, 2.3 %
over its replica mates from the start, learned) after 8 steps of its own deviation at
+3.9-8.4 % (BENCHMARKS.md, search "90002"): the CUSUM scores the rank's deviation from its
replica mates (``own``), net of its learned bias, but the size gate measured the run's mean
deviation from the DP peers (``d``), which carries the replica's batch (+7.2 %: the replica
drew the slowest batch on 2 of the 8 steps), with no error margin.  The run is now sized as
it is scored: its mean ``own`` over the rank's learned bias, less its standard error.
"""

from __future__ import annotations

import numpy as np

from detector.engine import Engine
from detector.testing import feed, parallel_step

DP, TP, PP = 4, 8, 2  # rank = dp * 16 + pp * 8 + tp: replica k on nodes 2k and 2k + 1
N = DP * TP * PP
RANK = 21  # replica 1, pp 0, on node-002/5
OFFSET = 0.023  # the rank's log offset over its replica mates, from the start
# The log's run (seed 90002, 9,354-9,385 s): the rank's deviation from its replica mates
# over its learned bias (+2.5 %), and its replica's batch against the other replicas'.
EXCESS = (0.0325, 0.0322, 0.0590, 0.0154, 0.0139, 0.0230, 0.0383, 0.0356)
REPLICA = (0.0322, 0.0139, -0.0500, 0.0009, -0.0788, -0.0555, 0.1655, 0.1866)


def job(*, steps: int, seed: int, run_from: int, slow: float = 1.0) -> list:
    """+-12 % batches per replica every step, 1.5 % jitter per rank, the rank 2.3 % slow
    from the start; from ``run_from`` the log's 8 steps (then ordinary steps), or with
    ``slow`` > 1 the rank that much slower from ``run_from`` on."""
    rng = np.random.default_rng(seed)
    off = np.ones(N)
    off[RANK] = np.exp(OFFSET)
    rep = RANK // (TP * PP)
    out = []
    for s in range(steps):
        batch = rng.uniform(0.88, 1.12, DP)
        jitter = rng.lognormal(0.0, 0.015, N)
        k = s - run_from
        if 0 <= k < len(EXCESS) and slow == 1.0:
            batch[rep] = np.median(np.delete(batch, rep)) * np.exp(REPLICA[k])
            jitter[RANK] = np.exp(EXCESS[k]) * np.median(
                jitter[rep * TP * PP:(rep + 1) * TP * PP])
        compute = 700.0 * np.repeat(batch, TP * PP) * off * jitter
        if k >= 0 and slow > 1.0:
            compute[RANK] *= slow
        out += parallel_step(s, compute, tp=TP, pp=PP, step_s=4.0)
    return out


def paged(events: list) -> list[str]:
    return [a.scope.key for a in feed(Engine(), events) if a.status == "firing"]


def test_a_chance_run_of_a_ranks_own_deviation_under_imbalance_pages_nobody() -> None:
    assert paged(job(steps=260, seed=4, run_from=200)) == []


def test_a_ten_percent_slowdown_under_imbalance_is_still_caught() -> None:
    assert paged(job(steps=260, seed=4, run_from=200, slow=1.10)) == ["gpu:node-002/5"]
