"""moe45 (round 45): the hot-expert hold (detector.steps.experts) bounded by the physics.

moe44's hold took a job whose slowness moves from rank to rank for an MoE job and held its
slow runs for a cause.  On the lead's held-out reporting corpus of round 44 it missed a 16.6 %
silent slowdown (fields-no_compute-s4302-f07: a job with no ``compute_ms``, one rank 16.6 %
slow from mid-run, no hardware evidence; caught in 4.1 s without the hold): earlier faults of
the same job, each paged and ended, read as the job's moving experts, and the new fault was
held as one more.  What an expert can make is bounded: its rank's extra work is capped by the
capacity factor (+12.5 % of compute at most: 1.25 x an expert FFN that is <= half of it), and
a run its rank was paged for is a fault, not an expert that cooled.

The jobs here were written for these tests (1 s steps, 1.5 % noise a rank and step, no
``compute_ms``: the producer sends ``step_ms`` and ``comm_ms``, so a rank's own time is
their difference); seeds 4501xx, sizes and faults chosen before they were run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from detector.engine import Engine
from detector.testing import T0, feed, step

RANKS = 32
OTHER_MS = 20.0  # a rank's time in neither its compute nor its wait


def job_without_compute(*, seed: int, steps: int,
                        slow: tuple[tuple[int, int, int, float], ...] = ()) -> list:
    """The job's step records, no ``compute_ms``.  ``slow``: (first step, last step (None: the
    job's end), rank, extra log ratio of its compute)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(steps):
        x = 0.015 * rng.standard_normal(RANKS)
        for first, last, rank, extra in slow:
            if first <= s and (last is None or s <= last):
                x[rank] += extra
        work = 650.0 * np.exp(x)
        step_ms = round(float(work.max()) + OTHER_MS + 300.0, 2)
        out += [step(T0 + s + 0.001 * r, r, s, node=f"node-{r // 8:03d}", gpu=r % 8,
                     step_ms=step_ms, compute_ms=None,
                     comm_ms=round(step_ms - float(work[r]) - OTHER_MS, 2), dp=r)
                for r in range(RANKS)]
    return out


def _firing(alerts: list) -> dict[str, float]:
    """Each unit paged (firing): its first detection, in steps (s) from T0."""
    out: dict[str, float] = {}
    for a in alerts:
        if a.status == "firing":
            out.setdefault(a.scope.key, a.detected_ts - T0)
    return out


# three earlier faults, each 12 % for 40-60 steps on its own node, paged and ended
EARLIER = ((150, 200, 3, math.log(1.12)), (300, 355, 12, math.log(1.12)),
           (450, 490, 21, math.log(1.12)))


@pytest.mark.parametrize("seed", (450101, 450102, 450103))
def test_a_silent_slowdown_after_paged_faults_is_paged_at_once(seed: int) -> None:
    """fields-no_compute-s4302-f07's shape: three faults of 12 % on three nodes, paged and
    ended; then rank 29 16.6 % slow to the end, no cause -- paged within tens of steps, as
    without the hold (moe44's hold took the three for the job's moving experts and held it)."""
    got = _firing(feed(Engine(), job_without_compute(
        seed=seed, steps=900, slow=(*EARLIER, (650, None, 29, math.log(1.166))))))
    assert "gpu:node-003/5" in got
    assert 650 <= got["gpu:node-003/5"] <= 680


@pytest.mark.parametrize("seed", (450104, 450105))
def test_a_slowdown_an_expert_could_make_after_paged_faults_is_paged_at_once(seed: int) -> None:
    """The same job, rank 29 10 % slow from step 650 -- as slow as an expert, under the
    bound: the three faults before it were paged, each alone in the job, so none is an
    expert's episode and the job's slowness does not move; paged within tens of steps (held
    190-200 steps while paged runs counted as episodes)."""
    got = _firing(feed(Engine(), job_without_compute(
        seed=seed, steps=900, slow=(*EARLIER, (650, None, 29, math.log(1.10))))))
    assert {"gpu:node-000/3", "gpu:node-001/4", "gpu:node-002/5"} <= set(got)
    assert 650 <= got["gpu:node-003/5"] <= 690
