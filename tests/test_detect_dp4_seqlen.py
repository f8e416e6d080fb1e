"""Four replicas under sequence-length imbalance page nobody (issue 10, healthy fleet dp4-10s).

With +-20 % imbalance a rank is scored against its replica mates and its replica against
the other replicas (tests/test_detect_seqlen.py).  At DP 4 two things about that score
must be properties of the job, not of one step: the replicas' spread (one step's MAD of
four medians can be a tenth of it) and the regime itself (seen from the first step, so the
warm-up learns each rank's offset against its replica mates, not against a batch draw).
"""

from __future__ import annotations

import numpy as np

from detector.engine import Engine
from detector.testing import feed, parallel_step

DP, TP, PP = 4, 8, 2  # rank = dp * 16 + pp * 8 + tp: replica k on nodes 2k and 2k + 1


def dp4_job(*, steps: int, seed: int, offsets: float = 0.0,
            alike: tuple[int, int] | None = None, slow: dict[int, float] | None = None,
            slow_from: int = 0) -> list:
    """Each replica's compute x U(0.8, 1.2) every step; each GPU a fixed speed offset of up
    to +-``offsets``; over ``alike`` = (first, last) steps replicas 0-2 draw the same batch
    size and replica 3 one 10 % larger (within the imbalance)."""
    rng = np.random.default_rng(seed)
    n = DP * TP * PP
    off = 1.0 + rng.uniform(-offsets, offsets, n)
    out = []
    for s in range(steps):
        batch = rng.uniform(0.8, 1.2, DP)
        if alike and alike[0] <= s <= alike[1]:
            batch = np.array([1.0, 1.0, 1.0, 1.1])
        compute = 700.0 * np.repeat(batch, TP * PP) * off * rng.lognormal(0.0, 0.015, n)
        for r, f in (slow or {}).items():
            if s >= slow_from:
                compute[r] *= f
        out += parallel_step(s, compute, tp=TP, pp=PP, step_s=4.0)
    return out


def paged(events: list) -> list[str]:
    return [a.scope.key for a in feed(Engine(), events) if a.status == "firing"]


def test_a_batch_among_alike_replicas_is_not_a_surprise() -> None:
    # Replica 3's batch 10 % above three alike replicas for 8 steps: one step's spread of the
    # four medians is ~0 and made that a 4-sigma step, eight times (the dp4-10s page).
    assert paged(dp4_job(steps=260, seed=2, alike=(200, 207))) == []


def test_a_gpu_three_percent_slow_from_the_start_is_its_baseline_under_imbalance() -> None:
    # Speed offsets up to +-3 %: the slowest GPU's offset is learned in warm-up against its
    # replica mates; learned against batch draws it was capped short and paged at step ~480.
    assert paged(dp4_job(steps=700, seed=1, offsets=0.03)) == []


def test_a_gpu_fifteen_percent_slow_at_dp4_under_imbalance_is_still_caught() -> None:
    assert paged(dp4_job(steps=200, seed=3, slow={21: 1.15}, slow_from=100)) == ["gpu:node-002/5"]
