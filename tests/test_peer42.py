"""peer42 (round 42): when the peers are the slow ones (issue 10).

blind32 F3: two of a pipeline stage's three data-parallel peers turn slow; their median is a
slow one and the peer rule sees nothing -- each rank against its own past pace over the job's
does (detector/steps/past.py).  A stage's work that changes moves every peer of it alike, a
job's work every rank: neither is a slow node.  The replays of blind32's own reproducers (F3,
F4) are in tests/test_blind32_cases.py.
"""

from __future__ import annotations

import numpy as np

from detector.engine import Engine
from detector.testing import T0, feed, step

TP, PP, DP = 2, 2, 3
STAGE_MS = (1500.0, 1800.0)   # stage 1 the slower one


def _job(slow: dict[tuple[int, int], tuple[int, float]], *, stage_work: tuple[int, float] | None
         = None, job_work: tuple[int, float] | None = None, steps: int = 160, seed: int = 420501,
         jitter: float = 0.0, data_wander: float = 0.0) -> list:
    """TP2 x PP2 x DP3 on 6 nodes (a node a (stage, replica): its TP pair), a step every 3 s,
    1 % noise a rank a step.  ``slow``: (stage, replica) -> (from step, factor) for its TP
    pair; ``stage_work``: (from step, factor) on every rank of stage 1; ``job_work``: (from
    step, factor) on every rank, stage 1's ``jitter`` more (a context doubling's last stage:
    blind32 G4); ``data_wander``: each replica's stage 0 x exp(an AR(1) of lag-1 0.85 and this
    spread) a step (blind31's vision stage: video batches in runs)."""
    rng = np.random.default_rng(seed)
    mix = np.zeros(DP)
    out = []
    for s in range(steps):
        mix = 0.85 * mix + data_wander * np.sqrt(1 - 0.85 ** 2) * rng.standard_normal(DP)
        for r in range(TP * PP * DP):
            tp, pp, dp = r % TP, (r // TP) % PP, r // (TP * PP)
            c = STAGE_MS[pp] * float(rng.lognormal(0.0, 0.01))
            if pp == 0:
                c *= float(np.exp(mix[dp]))
            at = slow.get((pp, dp))
            if at is not None and s >= at[0]:
                c *= at[1]
            if stage_work is not None and pp == 1 and s >= stage_work[0]:
                c *= stage_work[1]
            if job_work is not None and s >= job_work[0]:
                c *= job_work[1] * (1.0 + jitter * pp)
            out.append(step(T0 + 3.0 * s + 0.001 * r, r, s, node=f"n-{pp}{dp}", gpu=tp,
                            step_ms=2600.0 * (job_work[1] if job_work and s >= job_work[0]
                                              else 1.0) + 300.0,
                            compute_ms=round(c, 2), tp=tp, pp=pp, dp=dp))
    return out


def _fired(events: list) -> list[tuple[str, str]]:
    return sorted({(a.kind, a.scope.key) for a in feed(Engine(), events)
                   if a.status == "firing"})


def test_two_of_three_stage_peers_slow_are_both_paged() -> None:
    # (the peer rule alone: nothing -- the median is the slower one's pace)
    fired = _fired(_job({(1, 0): (80, 1.09), (1, 2): (83, 1.11)}))
    assert fired == [("slow_node", "node:n-10"), ("slow_node", "node:n-12")]


def test_one_of_three_stage_peers_slow_is_paged_alone() -> None:
    # (the peer rule's: the past rule leaves a group whose median did not move to it)
    assert _fired(_job({(1, 1): (80, 1.10)})) == [("slow_node", "node:n-11")]


def test_a_stage_whose_work_grows_alike_pages_nobody() -> None:
    # every peer of stage 1 x1.10 from step 80 (its data, its sequence length): no peer held
    # its pace, so it is the stage's work
    assert _fired(_job({}, stage_work=(80, 1.10))) == []


def test_the_jobs_work_growing_with_a_spread_pages_nobody() -> None:
    # blind32 G4's shape: every rank x1.65 from step 80 (a context doubling), the last
    # stage's 6 % more
    assert _fired(_job({}, job_work=(80, 1.65), jitter=0.06)) == []


def test_a_gpu_slow_just_after_the_jobs_work_changed_beside_a_told_peer_is_paged() -> None:
    # blind32 zb-s0: stage 1's replica 1 slow (x1.10) from step 40, told by the peer rule; every
    # rank x1.6 from step 100, the last stage's 6 % less; replica 2's GPU x1.10 from step 105,
    # within the steps the levels are learned anew -- its told peer keeps its excess
    fired = _fired(_job({(1, 1): (40, 1.10), (1, 2): (105, 1.10)}, job_work=(100, 1.6),
                        jitter=-0.06, steps=180))
    assert fired == [("slow_node", "node:n-11"), ("slow_node", "node:n-12")]


def test_a_stage_whose_replicas_work_wanders_with_its_data_pages_nobody() -> None:
    # blind31 vlm-s1's vision stage: each replica's batches video-heavy or not in runs of
    # steps (here 4 % a step, lag-1 0.85): two of its peers above their past while one is
    # below is its data, not two slow nodes -- each rank is judged against its own wander
    # too (without it: node:n-02 paged on both seeds; the peer rule pages neither)
    for seed in (420514, 420519):
        assert _fired(_job({}, data_wander=0.04, steps=200, seed=seed)) == []
