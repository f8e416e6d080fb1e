"""moe46 (round 46): a job's first hot experts, handed on from rank to rank (blind34 F1b).

moe44's hold (detector.steps.experts) holds a slow run for a cause in a job whose slowness is
seen to move: episodes on three ranks of two nodes at three times.  A job's first experts are
hot before any has moved, and were escalated slow_node/unknown (blind34 `extremes`: a ~75 ms
job, DP16 on two nodes, EP8 inside each: one hot rank a node at a time, hot from the job's
first step; 1-4 escalations a log, every one in its first ~50 s).  What tells them is the
hand-over: as one expert cools another of its EP group warms -- the group's all-to-all always
waits for its busiest rank.  A run begun as another rank's hot run ended (or drains) is held as
a relay (``_experts_relay``); a run told slow alone whose rank handed its slowness on is an
episode all the same (``_experts_handed_on``).

The job here is `extremes`' fast job at 1 s steps, written for these tests: 16 ranks of pure DP
on two 8-GPU nodes, an EP group a node, one hot rank a group at a time from the first step
(+4-10 % for 20-90 steps, then a rank of the same group drawn anew on the next step), 1.5 %
noise.  Seeds 4601xx, sizes and faults chosen before they were run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from detector.engine import Engine
from detector.testing import T0, feed, step

RANKS = 16


def relay_job(*, seed: int, steps: int = 600, experts: bool = True,
              slow: tuple[tuple[int, int, float], ...] = ()) -> list:
    """The job's step records (1 s steps).  ``slow``: (first step, rank, extra log ratio of
    its compute) to the job's end."""
    rng = np.random.default_rng(seed)

    def draw(g: int) -> list:
        return [int(rng.integers(8 * g, 8 * g + 8)), float(rng.uniform(0.04, 0.10)),
                int(rng.integers(20, 91))]

    hot = {g: draw(g) for g in range(2)}
    out = []
    for s in range(steps):
        x = 0.015 * rng.standard_normal(RANKS)
        for g, h in hot.items():
            h[2] -= 1
            if h[2] <= 0:
                h[:] = draw(g)
            if experts:
                x[h[0]] += math.log1p(h[1])
        for first, rank, extra in slow:
            if s >= first:
                x[rank] += extra
        work = 650.0 * np.exp(x)
        step_ms = round(float(work.max()) + 300.0, 2)
        out += [step(T0 + s + 0.001 * r, r, s, node=f"node-{r // 8:03d}", gpu=r % 8,
                     step_ms=step_ms, compute_ms=round(float(work[r]), 2),
                     comm_ms=round(step_ms - float(work[r]) - 20.0, 2), dp=r)
                for r in range(RANKS)]
    return out


def _firing(alerts: list) -> dict[str, float]:
    """Each unit paged (firing): its first detection, in steps (s) from T0."""
    out: dict[str, float] = {}
    for a in alerts:
        if a.status == "firing":
            out.setdefault(a.scope.key, a.detected_ts - T0)
    return out


@pytest.mark.parametrize("seed", (460101, 460102, 460103))
def test_hot_experts_handed_on_page_nobody_after_the_job_s_first_100_steps(seed: int) -> None:
    """600 steps of experts handed on from the first step: nothing paged after the first 100
    (main 97d3ae5: 6, 4 and 6 units a seed, 3 after step 100 in each)."""
    assert {u: t for u, t in _firing(feed(Engine(), relay_job(seed=seed))).items()
            if t >= 100.0} == {}


@pytest.mark.xfail(strict=True, reason=(
    "moe46: a hand-over not seen -- an expert too weak to alarm (+4 %) between the job's first "
    "(learned as its rank's offset in the warm-up, left after 11 steps) and the next one seen, "
    "30-40 steps later; or an expert drawn again on its own rank, larger: the first runs seen "
    "took over from nothing seen and are escalated slow_node/unknown at 52-89 s (1-2 a seed)"))
@pytest.mark.parametrize("seed", (460101, 460102, 460103))
def test_the_job_s_first_hot_experts_page_nobody(seed: int) -> None:
    assert _firing(feed(Engine(), relay_job(seed=seed))) == {}


@pytest.mark.parametrize("seed", (460104, 460105))
def test_a_silent_slowdown_in_a_dense_job_is_still_paged_at_once(seed: int) -> None:
    """The same job without experts (its noise only): rank 11 10 % slow from step 300, no
    cause -- paged at its GPU within tens of steps (no episode, no relay)."""
    got = _firing(feed(Engine(), relay_job(seed=seed, experts=False,
                                           slow=((300, 11, math.log(1.10)),))))
    assert list(got) == ["gpu:node-001/3"]
    assert 300 <= got["gpu:node-001/3"] <= 330


@pytest.mark.parametrize("seed", (460106, 460107))
def test_a_gpu_slower_than_any_expert_is_paged_beside_the_relay(seed: int) -> None:
    """Experts handed on, and rank 3 25 % slow from step 300 -- more than the capacity factor
    lets an expert make it: paged at its GPU within tens of steps."""
    got = _firing(feed(Engine(), relay_job(seed=seed, slow=((300, 3, math.log(1.25)),))))
    assert list(got) == ["gpu:node-000/3"]
    assert 300 <= got["gpu:node-000/3"] <= 330
