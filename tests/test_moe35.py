"""moe35 (round 35): a host fault beside a moving MoE expert is its node's, on 8- and 4-GPU
nodes and from its first step (revB34 F2's variations); an expert moving fast is its place's.

A host fault (a CPU throttle) slows every rank of its node; the expert's two GPUs on it read
host + expert, their mates the host's share.  detector.steps took the expert's GPUs back as
their place's (JobMonitor._place_slow) and the rank found with them was told alone: a GPU of
the node paged before the node (main 1c3cd5d: 38 of 144 probe runs, 30 of them on 4-GPU
nodes).  A place mate is now discounted only when the node's other ranks are not slow beside
it (JobMonitor._slow_beside).  The cases below are probe runs that paged a GPU on main; their
seeds (352x), sizes and layouts were chosen before the change was run on them.
"""

from __future__ import annotations

import numpy as np
import pytest

from detector.engine import Engine
from detector.testing import feed
from tests.moejob import MOVES, moe_job, units

SLOWER = ((140, 5, 0.06), (170, 6, 0.08), (225, 1, 0.05), (285, 0, 0.0))   # 30-60 steps each


def _node_pages(seed: int, x: float, hot: tuple, gpus: int) -> list[str]:
    """Every rank of the node holding the expert's GPUs (node-005 of 8 GPUs, node-011 of 4)
    ``x`` slower in compute from step 172: the units paged on that node."""
    node = "node-005" if gpus == 8 else "node-011"
    ranks = range(40, 48) if gpus == 8 else range(44, 48)
    slow = tuple((172, 10**6, r, x) for r in ranks)
    got = units(feed(Engine(), moe_job(seed=seed, hot=hot, slow=slow, gpus=gpus)))
    return [u for u in got if u.split(":")[1].split("/")[0] == node]


@pytest.mark.parametrize(("seed", "x"), [(3529, 0.08), (3525, 0.05), (3526, 0.05)])
def test_a_host_fault_beside_an_expert_from_its_first_step(seed: int, x: float) -> None:
    """The expert on node-005's GPUs 4-5 from step 170, the host fault from 172: the expert's
    GPU found on the fault's first step (its mates' runs one step long) was paged alone."""
    assert _node_pages(seed, x, SLOWER, 8) == ["node:node-005"]


@pytest.mark.parametrize(("seed", "x", "hot"), [
    (3520, 0.03, MOVES), (3523, 0.03, MOVES), (3520, 0.05, SLOWER), (3521, 0.05, SLOWER),
    (3527, 0.08, SLOWER)], ids=["moves-3", "moves-3b", "slower-5", "slower-5b", "slower-8"])
def test_a_host_fault_beside_an_expert_on_a_four_gpu_node(seed: int, x: float,
                                                          hot: tuple) -> None:
    """Four GPUs a node (the expert on GPUs 0-1 of node-011): the found rank's one other
    mate slow beside it is half the node's others."""
    assert _node_pages(seed, x, hot, 4) == ["node:node-011"]


# -- an expert moving every 6-15 steps (about the smoothed z's ~10-step window) ---------------


def _moving(seed: int, period: int) -> tuple[tuple[int, int, float], ...]:
    """An expert +7 % moving to another EP index every ``period`` steps from step 140 to 280,
    its indices drawn with ``seed`` (no index twice in a row)."""
    rng = np.random.default_rng(seed + 1000 * period)
    idx: list[int] = []
    while len(idx) < 140 // period + 1:
        i = int(rng.integers(8))
        if not idx or i != idx[-1]:
            idx.append(i)
    return tuple((140 + period * k, i, 0.07) for k, i in enumerate(idx)) + ((280, 0, 0.0),)


@pytest.mark.parametrize(("seed", "period"), [(3523, 8), (3522, 10), (3525, 12)])
def test_an_expert_moving_fast_alone_is_not_paged(seed: int, period: int) -> None:
    """No fault: the last expert's GPU read slow in its smoothed z beside the next one's, so
    the next was not its place's and was paged (main: 8 of 30 probe runs paged a GPU or a
    node with no fault at all; JobMonitor._place_slow now asks the mates' latest steps too)."""
    assert units(feed(Engine(), moe_job(seed=seed, hot=_moving(seed, period)))) == []


@pytest.mark.parametrize(("seed", "period"), [(3520, 8), (3523, 12), (3520, 15)])
def test_a_gpu_slow_for_good_beside_an_expert_moving_fast(seed: int, period: int) -> None:
    """GPU 3 of node-005 8 % slower from step 170: its GPU alone (main: its node or another
    node's expert GPU paged too in 21 of 30 probe runs)."""
    alerts = feed(Engine(), moe_job(seed=seed, hot=_moving(seed, period),
                                    slow=((170, 10**6, 43, 0.08),)))
    assert units(alerts) == ["gpu:node-005/3"]
