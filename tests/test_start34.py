"""start34 (round 34): a job whose membership changes, and a young job's noise (blind24 E1, N1).

E1: an elastic job takes a node back after a re-rendezvous (ranks renumbered densely, the node as
ranks 24-31); the node's first steps are cold (x2.6, 1.7, 1.25, 1.1: a fresh CUDA context, an
allocator, autotuning) while its peers are warm, and the node was escalated 3-7 s after the
rejoin.  What the step stream shows: the world size changes (24 -> 32), ranks appear on GPUs
they were not on (new ranks, or renumbered ones: JobMonitor._track_hardware) and every rank's
share changes alike (x24/32: the peer ratios do not move, so the job's baseline needs no warm-up
again).  What warms up again is the ranks that changed: a rank that joins past the job's
warm-up is cold at its first step there and while it stays slower than its peers by less than
on its step before, for warmup_steps at most (JobMonitor._cold_steps); a cold step adds nothing
to its runs.  A rejoined node that stays slow stops falling, and is paged from there.

N1: a healthy rank's run of real PAI residuals (4 steps at +4 %, noise ~0.8 %) ~125 steps into
a young sweep job was escalated at its GPU.  start33's wait for a job's noise to be measured
ended at 1,000 rank-steps -- two 3-sigma rank-steps at the heavy share (2e-3): the job read one
(9e-4 on 1,136), as likely under a tail at the share as under a light one.  A sound test of
"4 steps at +4 % on sigma 0.8 % with lag-1 0.6": the 4-step mean's standard error is
0.8 % x sqrt((1 + 2 (3/4 0.6 + 2/4 0.36 + 1/4 0.216)) / 4) = 0.62 %, so the run is ~7 of them --
no Gaussian AR(1) makes it (p ~ 1e-12 a window); only a heavy tail does, and whether the job's
noise has one is what its tail read must settle.  Under runs the tail is now taken as light
only once a count at the heavy share would come as low as the one read with a chance under 5 %
(steps._tail_light); until then a run under 6 % waits for its 7th step.
"""

from __future__ import annotations

import numpy as np
import pytest

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.steps import _tail_light
from detector.testing import T0, feed, parallel_step, step

E1_COLD = (2.6, 1.7, 1.25, 1.1)
# longer cold starts (more autotuning, a slower allocator): main escalated the node at once
LONG_COLD = ((3.0, 2.2, 1.6, 1.3, 1.15, 1.07, 1.03), (2.6, 1.7, 1.4, 1.25, 1.15, 1.1, 1.06, 1.03))

FULL = [(f"node-{n:03d}", g) for n in range(4) for g in range(8)]
SHRUNK = [(f"node-{n:03d}", g) for n in (0, 2, 3) for g in range(8)]  # node-001 gone, renumbered
GROWN = SHRUNK + [("node-001", g) for g in range(8)]                  # back as ranks 24-31


class _Job:
    """A synchronous pure-DP job's steps, each rank's log compute an AR(1) (lag-1 ``rho``,
    spread ``sigma``), its messages ``0.001 * r`` s apart, a step lasting its slowest compute
    plus 250 ms; ``at[k]`` is when step ``k`` began."""

    def __init__(self, seed: int, *, rho: float = 0.0, sigma: float = 0.008) -> None:
        self.rng = np.random.default_rng(seed)
        self.rho, self.sigma = rho, sigma
        self.z = self.rng.standard_normal(32)
        self.ts, self.step = T0, 0
        self.out: list = []
        self.at: dict[int, float] = {}
        self.joined = -1  # (the step the node came back at)

    def steps(self, layout: list[tuple[str, int]], n: int, share: float = 1.0,
              factor=lambda k: np.ones(32)) -> None:  # noqa: ANN001
        for k in range(n):
            e = np.sqrt(1.0 - self.rho * self.rho)
            self.z = self.rho * self.z + e * self.rng.standard_normal(32)
            comp = (700.0 * share * np.exp(self.sigma * self.z) * factor(k))[:len(layout)]
            step_ms = round(float(comp.max()) + 250.0, 2)
            self.at[self.step] = self.ts
            for r, ((node, gpu), c) in enumerate(zip(layout, comp, strict=True)):
                self.out.append(step(self.ts + 0.001 * r, r, self.step, node=node, gpu=gpu,
                                     step_ms=step_ms, compute_ms=round(float(c), 2), dp=r))
            self.ts += step_ms / 1000.0
            self.step += 1

    def pause(self, s: float) -> None:
        self.ts += s

    def step_at(self, ts: float) -> int:
        """The step under way at ``ts``."""
        return max(k for k, t in self.at.items() if t <= ts)


def _elastic(seed: int, *, cold: tuple[float, ...] = E1_COLD, stay: float = 0.0,
             stay_gpus: tuple[int, ...] = tuple(range(8)), before: int = 80, away: int = 40,
             rejoin: bool = True, rho: float = 0.0) -> _Job:
    """blind24 E1's job: 32 ranks on node-000..003; node-001 reclaimed at step ``before`` (a
    30-s re-rendezvous, ranks renumbered densely, each rank's share x32/24 for ``away``
    steps), then back after another as ranks 24-31: its first steps x ``cold``, then x
    (1 + ``stay``) on ``stay_gpus``."""
    job = _Job(seed, rho=rho)
    job.steps(FULL, before)
    job.pause(30.0)
    job.steps(SHRUNK, away, share=32 / 24)
    if rejoin:
        job.pause(30.0)
        job.joined = job.step

        def factor(k: int) -> np.ndarray:
            f = np.ones(32)
            f[24:] *= cold[k] if k < len(cold) else 1.0
            f[[24 + g for g in stay_gpus]] *= 1.0 + stay
            return f
        job.steps(GROWN, 150, factor=factor)
    else:
        job.steps(SHRUNK, 150, share=32 / 24)
    return job


def _pages(alerts: list) -> list[tuple[str, str, float]]:
    return [(a.topic, a.scope.key, a.detected_ts) for a in alerts if a.status == "firing"]


# -- E1: a node back in an elastic job ---------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("cold", [E1_COLD, *LONG_COLD])
@pytest.mark.parametrize(("before", "rho"), [(80, 0.0), (0, 0.6)])
def test_a_rejoined_nodes_cold_steps_page_nobody(seed: int, cold: tuple[float, ...],
                                                 before: int, rho: float) -> None:
    """E1's shape (``before`` 0: the job first seen shrunk, as blind24's reproducer): the
    rejoined node's first steps cold, falling back to its peers' pace.  Main: the two longer
    cold starts escalated node:node-001 3-4 steps after the rejoin (E1's own, at 1 s steps
    here, stays under the CUSUM by a step; its reproducer pages on main)."""
    job = _elastic(seed, cold=cold, before=before, away=80 if before == 0 else 40, rho=rho)
    assert _pages(feed(Engine(), job.out)) == []


@pytest.mark.parametrize("seed", range(3))
def test_a_rejoined_node_that_stays_ten_percent_slow_is_paged_at_the_node(seed: int) -> None:
    """After E1's cold steps the node stays 10 % slow: it stops falling, and is paged at the
    node 10-12 steps after the rejoin (4 cold, ~2 more falling to its level, then the CUSUM's
    4) -- main, its cold steps counted in the run: 9-11."""
    job = _elastic(seed, stay=0.10)
    got = _pages(feed(Engine(), job.out))
    assert [p[:2] for p in got] == [(ESCALATION, "node:node-001")], got
    assert job.step_at(got[0][2]) - job.joined <= 12, (got, job.joined)


@pytest.mark.parametrize("seed", range(3))
def test_one_rejoined_gpu_that_stays_ten_percent_slow_is_paged_at_its_gpu(seed: int) -> None:
    """One GPU of the rejoined node stays 10 % slow past the cold steps: paged at the GPU
    (main: at the node, its 7 mates' cold steps alike with it) within 14 steps."""
    job = _elastic(seed, stay=0.10, stay_gpus=(3,))
    got = _pages(feed(Engine(), job.out))
    assert [p[:2] for p in got] == [(ESCALATION, "gpu:node-001/3")], got
    assert job.step_at(got[0][2]) - job.joined <= 14, (got, job.joined)


@pytest.mark.parametrize("seed", range(3))
def test_an_elastic_shrink_with_renumbered_ranks_pages_nobody(seed: int) -> None:
    """blind24 G1: node-001 leaves, ranks 16-31 renumbered 8-23 onto other GPUs (each a new
    rank on its GPU: a cold start that is not falling ends at once), every share x32/24."""
    assert _pages(feed(Engine(), _elastic(seed, rejoin=False).out)) == []


def _restarted(seed: int, *, renumber: bool) -> list:
    """32 ranks for 120 steps, a restart from the checkpoint at step 60 (step numbers back,
    60 s later) on the same nodes -- ``renumber``: in another order (torchrun numbers nodes
    as they join) -- every rank's first four steps cold alike (E1's)."""
    job = _Job(seed)
    job.steps(FULL, 120)
    job.pause(60.0)
    job.step = 60
    layout = [(f"node-{n:03d}", g) for n in (2, 0, 3, 1) for g in range(8)] if renumber else FULL
    job.steps(layout, 150, factor=lambda k: np.full(32, E1_COLD[k] if k < 4 else 1.0))
    return job.out


@pytest.mark.parametrize("renumber", [False, True])
@pytest.mark.parametrize("seed", range(2))
def test_a_job_restarted_on_the_same_nodes_pages_nobody(seed: int, renumber: bool) -> None:
    """A restart is every rank's cold start alike (in the job's warm-up again: no rank is
    cold apart from its peers)."""
    assert _pages(feed(Engine(), _restarted(seed, renumber=renumber))) == []


# -- N1: a young job's noise --------------------------------------------------------------------


def _young(seed: int, *, ranks: int = 16, size: float, steps: int, at: int = 80,
           total: int = 160) -> list:
    """A sweep job of ``ranks`` ranks (2 nodes at most), compute 1,050 ms, each rank's log
    compute an AR(1) of lag-1 0.6 and spread 0.8 % (blind24 N1's job); rank 6 slower by
    ``size`` for ``steps`` steps from step ``at``."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(ranks)
    out = []
    for s in range(total):
        z = 0.6 * z + 0.8 * rng.standard_normal(ranks)
        x = 0.008 * z
        if at <= s < at + steps:
            x[6] += size
        out += parallel_step(s, 1050.0 * np.exp(x), tp=1, pp=1)
    return out


@pytest.mark.parametrize("ranks", [8, 16])
@pytest.mark.parametrize("seed", range(6))
def test_a_four_step_run_at_four_percent_in_a_young_job_pages_nobody(seed: int,
                                                                      ranks: int) -> None:
    """N1's shape on a Gaussian AR(1) (lag-1 0.6, 0.8 %): 4 steps at +4 % from step 80 -- the
    job's tail read on 16 x 70 = 1,120 rank-steps, zero or one over 3 sigma.  Main: escalated
    the GPU at step 86 in seeds 3-5 of the 16-rank job (the 8-rank one was still under
    start33's 1,000 rank-steps)."""
    assert _pages(feed(Engine(), _young(seed, ranks=ranks, size=0.04, steps=4))) == []


@pytest.mark.parametrize(("size", "within"), [(0.05, 10), (0.10, 7)])
@pytest.mark.parametrize("seed", range(4))
def test_a_real_slowdown_in_a_young_job_is_still_paged(seed: int, size: float,
                                                       within: int) -> None:
    """A real 5 % run of 12 steps from step 80 in the 16-rank job: paged at its GPU from its
    run's 7th step (9 steps; main 6-7); 10 %: over the heavy effect, as on main (6)."""
    got = _pages(feed(Engine(), _young(seed, size=size, steps=12)))
    assert [p[:2] for p in got] == [(ESCALATION, "gpu:node-000/6")], got
    assert got[0][2] - T0 - 80 <= within, got


def test_a_tail_read_is_known_light_only_once_it_rules_the_heavy_share_out() -> None:
    """blind24 N1's read (9e-4 on 1,136 rank-steps) rules nothing out; none over 3 sigma in
    1,600 (8 ranks' smoothed window) does; a Gaussian AR(1)'s ~5e-4 does by ~3,200."""
    assert not _tail_light(9e-4, 1136.0)
    assert not _tail_light(0.0, 1000.0) and _tail_light(0.0, 1600.0)
    assert _tail_light(5e-4, 3200.0) and not _tail_light(2e-3, 1e6)
    assert _tail_light(1.9e-3, 1e6) and not _tail_light(1.99e-3, 1e6)
