"""moe31 (round 31): blind21 M1 -- an MoE job's hot expert is the same place on four nodes.

An MoE job's router makes one expert hot at a time: the ranks holding it in every EP group
work +4-11 % more for 10-40 steps, then another expert is hot.  With EP over the data-parallel
ranks (EP rank = dp % 8) and four replicas to a node, the hot expert's ranks are the same GPUs
of four nodes at once -- each a different replica, each node's other ranks at their pace.
blind21's `model` story escalated them slow_node/unknown at the four nodes together, 41 times
in 5 of 8 logs (M1), once the job's wander index had read calm for 100 steps (its median rank
does not move when one expert in eight is hot) and the stir test read nothing.

What tells it from hardware without an ep_rank (DESIGN has none): the same place -- the same
GPU index, in the same peer group -- slow on three or more nodes at once, while each of those
nodes' other ranks of the group are not slow.  A fault is on its own unit; it does not strike
GPU 2 of four nodes together and leave their other GPUs alone
(detector/steps.py ``JobMonitor._hold_same_place``).

The jobs below: 64 ranks, TP2 (rank r: GPU r % 8 of node-(r // 8), replica r // 2; EP index
of a replica: dp % 8, so an expert is two GPUs of four nodes), compute 700 ms, each rank's log
compute an AR(1) of lag-1 ``rho``, spread 1 %.
"""

from __future__ import annotations

import numpy as np
import pytest

from detector.engine import Engine
from detector.testing import feed, parallel_step

RANKS = 64
SIGMA = 0.01


def _job(*, seed: int, rho: float = 0.0, steps: int = 320,
         hot: tuple[tuple[int, int, float], ...] = (),
         slow: tuple[tuple[int, int, float], ...] = ()) -> list:
    """The job's step records.  ``hot``: (first step, EP index, extra) -- that index's ranks
    (dp % 8 == index) carry ``extra`` (a log ratio) from the step to the next entry's;
    ``slow``: (first step, rank, extra) -- a rank slowed from the step on for good."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(RANKS)
    e = np.sqrt(1.0 - rho * rho)
    dp = np.arange(RANKS) // 2
    out = []
    for s in range(steps):
        z = rho * z + e * rng.standard_normal(RANKS)
        x = SIGMA * z
        now = [h for h in hot if h[0] <= s]
        if now:
            _, index, extra = now[-1]
            x[dp % 8 == index] += extra
        for start, rank, extra in slow:
            if s >= start:
                x[rank] += extra
        out += parallel_step(s, 700.0 * np.exp(x), tp=2, pp=1)
    return out


def _units(alerts: list) -> list[str]:
    return sorted({a.scope.key for a in alerts if a.status == "firing"})


# a hot expert from step 140 (after the job's index read calm for 100 steps), moving every
# 20-35 steps to another index: each one two GPUs of four nodes
MOVES = ((140, 5, 0.06), (165, 6, 0.08), (200, 1, 0.05), (220, 3, 0.07), (255, 6, 0.06),
         (285, 0, 0.0))


@pytest.mark.parametrize("rho", [0.0, 0.5])
@pytest.mark.parametrize("seed", range(3))
def test_a_hot_expert_on_the_same_gpus_of_four_nodes_is_not_paged(seed: int,
                                                                   rho: float) -> None:
    """M1's shape: main escalated the four nodes at each move."""
    assert _units(feed(Engine(), _job(seed=seed, rho=rho, hot=MOVES))) == []


@pytest.mark.parametrize("seed", range(3))
def test_one_gpu_slow_for_good_beside_the_moving_expert_is_still_paged(seed: int) -> None:
    """A fault does not move: GPU 3 of node-005 (rank 43, replica 21 = EP index 5) 8 % slower
    from step 170 on, while the expert moves (its own index hot at steps 140-164)."""
    got = _units(feed(Engine(), _job(seed=seed, hot=MOVES, slow=((170, 43, 0.08),))))
    assert got == ["gpu:node-005/3"]


@pytest.mark.parametrize("seed", range(3))
def test_the_same_gpu_slow_on_three_nodes_with_their_mates_is_paged(seed: int) -> None:
    """Three whole nodes slowing together (every rank of node-001, -003, -005 6 % from step
    150) are not a place: each node's other ranks are slow with it -- paged, as before."""
    slow = tuple((150, r, 0.06) for n in (1, 3, 5) for r in range(8 * n, 8 * n + 8))
    got = _units(feed(Engine(), _job(seed=seed, slow=slow)))
    assert got == ["node:node-001", "node:node-003", "node:node-005"]
