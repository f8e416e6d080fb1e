"""start35 (round 35): a part of a node late by its host from the job's first step (blind23 L1).

L1: a NUMA mis-binding -- the loaders of one socket's GPUs on the far socket -- makes four ranks
of a node 10-17 % late in host time (``step_ms - compute_ms - comm_ms``) from the job's first
step, their four mates on time.  revA33 1 put the from-the-start rule at 60 steps past the
warm-up because a node's cold start (its page cache, dataset, loaders warming up) is the same
picture on step times until it ends.  What tells them apart is what the late ranks share: a
node's cold start is every rank's on it (its page cache, filesystem client, container image and
CPU clocks are the node's), a part late alike beside mates on time from the first step has a
host of its own (one socket's CPUs, memory and PCIe root; one PCIe switch).  So a part is paged
10 steps past the warm-up (steps._START_PART_STEPS), a whole node at 60 as before.  The trade,
pinned below: a part of a node cold alone past the warm-up's 10th step is paged.

The jobs here are not L1's: 1,500 ms compute, host 45 ms +-20 %, lognormal 0.8 % compute noise,
a 0.4 % offset a rank, 2.2 s steps; 8 or 4 GPUs a node, TP 1 or TP 8 (4) x DP 2/16.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.testing import T0, feed, step

COMPUTE, HOST, COMM, STEP_S = 1500.0, 45.0, 260.0, 2.2


def _job(seed: int, *, gpus: int = 8, tp: int = 1, dp: int = 32,
         late: set[tuple[int, int]] = frozenset(), extra: float = 0.0, stop: int = 10**9,
         steps: int = 120, late_of: Callable[[int, int, int], float] | None = None) -> list:
    """A synchronous job of ``tp * dp`` ranks on nodes of ``gpus`` GPUs; the ranks at
    (node, gpu) in ``late`` ``extra`` of a step's compute late in host time from step 0 to
    ``stop`` (or ``late_of(step, node, gpu)`` of it)."""
    if late_of is None:
        def late_of(s: int, node: int, g: int) -> float:
            return extra if s < stop and (node, g) in late else 0.0
    rng = np.random.default_rng(seed)
    ranks = tp * dp
    off = rng.normal(0.0, 0.004, ranks)
    out = []
    for s in range(steps):
        c = COMPUTE * (1.0 + off) * np.exp(0.008 * rng.standard_normal(ranks))
        h = HOST * rng.uniform(0.8, 1.2, ranks)
        h += COMPUTE * np.array([late_of(s, *divmod(r, gpus)) for r in range(ranks)])
        top = float((c + h).max())
        comm = COMM * float(rng.normal(1.0, 0.02))
        for r in range(ranks):
            node, g = divmod(r, gpus)
            out.append(step(T0 + s * STEP_S + 0.001 * r, r, s, node=f"node-{node:03d}", gpu=g,
                            step_ms=round(top + comm + 0.01, 3), compute_ms=round(float(c[r]), 3),
                            comm_ms=round(top - float(c[r] + h[r]) + comm, 3), tp=r % tp,
                            dp=r // tp))
    return out


def _pages(alerts: list) -> list[tuple[str, str, float]]:
    """(topic, scope, step of the decision) of each firing message."""
    return [(a.topic, a.scope.key, round((a.detected_ts - T0) / STEP_S, 1)) for a in alerts
            if a.status == "firing"]


def _half(gpus: int) -> set[tuple[int, int]]:
    return {(1, g) for g in range(gpus // 2, gpus)}


@pytest.mark.parametrize("extra", [0.10, 0.20])
@pytest.mark.parametrize(("gpus", "tp", "dp"), [(8, 1, 32), (8, 8, 2), (4, 4, 16)])
@pytest.mark.parametrize("seed", [3541, 3542])
def test_half_a_node_late_from_the_first_step_is_paged_at_the_node_soon(
        seed: int, gpus: int, tp: int, dp: int, extra: float) -> None:
    """One socket's GPUs late from step 0 by 10/20 % of a step's compute, their mates on time:
    the node, escalated 10 steps past the warm-up (main: 60 steps past it, step 69)."""
    got = _pages(feed(Engine(), _job(seed, gpus=gpus, tp=tp, dp=dp, late=_half(gpus),
                                     extra=extra)))
    assert [p[:2] for p in got] == [(ESCALATION, "node:node-001")], got
    assert got[0][2] <= 22, got


@pytest.mark.parametrize("stop", [40, 80])
@pytest.mark.parametrize("gpus", [8, 4])
def test_a_whole_node_late_from_the_first_step_waits_sixty_steps(gpus: int, stop: int) -> None:
    """revA33 1's shape on these jobs: every rank of the node +10 % until step 40 (a node's cold
    start: nobody paged) or 80 (paged at the node 60 steps past the warm-up, as on main)."""
    got = _pages(feed(Engine(), _job(3543, gpus=gpus, dp=32 if gpus == 8 else 16,
                                     late={(1, g) for g in range(gpus)}, extra=0.10, stop=stop)))
    if stop == 40:
        assert got == [], got
    else:
        assert [p[:2] for p in got] == [(ESCALATION, "node:node-001")], got
        assert 65 <= got[0][2] <= 75, got


def test_loaders_back_one_by_one_from_a_node_late_at_the_start_page_nobody() -> None:
    """The node's 8 loaders late from step 0, back at their pace one by one at steps 14-40: a
    part of the node is late after the first is back, but its mates were late at the start
    (they keep most of their learnt host offset for ~35 steps): not a part's host."""
    rng = np.random.default_rng(3544)
    stops = [int(x) for x in rng.integers(14, 41, 8)]
    got = _pages(feed(Engine(), _job(3544, late_of=lambda s, node, g: (
        0.15 if node == 1 and s < stops[g] else 0.0))))
    assert got == [], (got, stops)


@pytest.mark.parametrize("stop", [25, 60])
def test_the_trade_a_part_of_a_node_cold_alone_is_paged(stop: int) -> None:
    """The trade, pinned: half a node cold alone (+10 % until step 25 or 60, its mates cached)
    is paged at the node 10 steps past the warm-up (main: nobody)."""
    got = _pages(feed(Engine(), _job(3545, late=_half(8), extra=0.10, stop=stop)))
    assert [p[:2] for p in got] == [(ESCALATION, "node:node-001")], got
    assert got[0][2] <= 22, got
