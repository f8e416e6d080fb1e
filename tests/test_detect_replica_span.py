"""A replica that spans nodes: its batch is no unit's fault (issue 10, healthy fleet dp4-10s).

Healthy fleet dp4-10s seed 55000 paged a healthy GPU (TP 8, PP 8, DP 4: a replica is 64
ranks on 8 nodes) that was ~3.4 % slower than its replica mates from the start.  Two
things added up: the warm-up learned its offset against its DP peers, where
sequence-length imbalance buries it (imbalance is recognised only after tens of steps),
so only the 2 % cap stayed; and later its replica drew the slowest batch on 10 of 21
steps, which the imbalance score counted as the rank's own evidence.  A whole replica
across nodes slower than its peers is its batch: a GPU or node slows its own ranks.
"""

from __future__ import annotations

import numpy as np

from detector.engine import Engine
from detector.monitors import Monitors
from detector.testing import feed, parallel_step
from detector.thresholds import Thresholds

DP, TP, PP = 4, 8, 8  # rank = dp * 64 + pp * 8 + tp: replica k on nodes 8k .. 8k + 7
N = DP * TP * PP


def job(steps: int, seed: int, *, offset: dict[int, float] | None = None,
        streak: tuple[int, int] | None = None, slow_node: tuple[int, float, int] | None = None
        ) -> list:
    """Each replica's compute x U(0.8, 1.2) a step, except step 0 (all alike: imbalance is
    not recognised at once); ``offset``: GPUs slower from the start; over ``streak`` replica
    0 draws the slowest batch; ``slow_node`` = (node, factor, from step)."""
    rng = np.random.default_rng(seed)
    off = np.ones(N)
    for r, f in (offset or {}).items():
        off[r] = f
    out = []
    for s in range(steps):
        batch = np.ones(DP) if s == 0 else rng.uniform(0.8, 1.2, DP)
        if streak and streak[0] <= s <= streak[1]:
            batch[0] = max(batch[0], batch[1:].max() + 0.02)
        compute = 700.0 * np.repeat(batch, TP * PP) * off * rng.lognormal(0.0, 0.015, N)
        if slow_node and s >= slow_node[2]:
            compute[slow_node[0] * 8:slow_node[0] * 8 + 8] *= slow_node[1]
        out += parallel_step(s, compute, tp=TP, pp=PP, step_s=4.0)
    return out


def paged(events: list) -> list[str]:
    return [a.scope.key for a in feed(Engine(), events) if a.status == "firing"]


def test_a_start_offset_is_learned_against_replica_mates_before_imbalance_is_seen() -> None:
    # Against its DP peers the 4 % offset drowns in +-20 % batches: learned as 0 (capped at
    # 2 %) on two of these three seeds, so an unlearned 2 % stayed for the rest of the job.
    for seed in (0, 1, 2):
        m = Monitors(Thresholds())
        out: list = []
        for e in job(14, seed=seed, offset={34: 1.04}):
            m.process(e, out)
        (mon,) = m._jobs.values()
        assert 0.02 < mon.start_offsets.get(34, 0.0) < 0.06, seed


def test_a_multi_node_replica_drawing_the_slowest_batch_pages_nobody() -> None:
    # Replica 0 (8 nodes) slowest on 21 steps in a row, a GPU of it 4.5 % slow from the
    # start: the streak is the replica's batch, not that GPU's.  (A DP-4 peer median is the
    # mean of the middle two: the GPU's offset showed at half size while its replica's batch
    # sat in the middle and at full size through the streak.)
    assert paged(job(190, seed=4, offset={34: 1.045}, streak=(150, 170))) == []


def test_a_slow_node_in_a_multi_node_replica_under_imbalance_is_still_caught() -> None:
    # 8 of the replica's 64 ranks 12 % slower: they stand out of their replica's median.
    keys = set(paged(job(190, seed=2, slow_node=(4, 1.12, 100))))
    assert keys and all(k.startswith(("node:node-004", "gpu:node-004/")) for k in keys)
