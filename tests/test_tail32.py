"""tail32 (round 32): the same-place hold counts nodes (revA31 4) and blind21 N3.

revA31 4: ``JobMonitor._same_place`` (blind21 M1, moe31) took back every slow rank whose GPU
index, in its peer group, read at least half its smoothed z (``_wshort``) on 2 other *ranks*
while its node's other ranks did not.  Three shapes it held that are not an expert's place:

- two ranks of one node on one GPU index (two processes a GPU) counted as two nodes: a node
  slow as a whole (paged as a node) held a fault on the same index of another node for as long
  as it stayed slow -- never paged;
- a large pure-DP job (128 nodes, 127 peers on each index) whose noise has runs (lag-1 0.6):
  2 of 127 peers over half a real slowdown's early smoothed z is common, and each hold reset
  the rank's CUSUM and run;
- every node's GPU 2 a little slower (the workload: +3 % from step 60, partly learnt as the
  ranks' bias) and a fault +5 % on one of them: its smoothed z 3.0 against its place's 1.6-1.9
  was "alike" (over half), held 17-21 steps.

The place is now slow alike on distinct nodes, ``max(_PLACE_NODES, _PLACE_SHARE x)`` of the
other nodes holding that index, each within ``_PLACE_MARGIN`` of the rank's own smoothed z
(a place explains its rank up to its own level).  blind21 M1 stays held (tests/test_moe31.py).

blind21 N3: real step noise is heavy-tailed as well as in runs -- a healthy rank's Alibaba PAI
job-2 episode (4-6 steps at +3-5 %, one big innovation or a few and their decay) passed the
whitened CUSUM and the size test and was escalated slow_node/unknown at its GPU.  Whitening
removes the correlation, not the tail.  In a job whose lag-1 is in force and whose healthy
rank-steps reach 3 sigma over _HEAVY_SHARE of the time, a run whose effect is under
_HEAVY_EFFECT (6 %) is reported only once it has lasted _HEAVY_STEPS (7) steps: PAI job 2's
episodes at 3 sigma or more last 1-5 samples (10 in 2,380 worker-samples).  Gaussian AR(1)
jobs (tests/test_n1run.py) do not reach the share; a 10 % slowdown is over the effect.
"""

from __future__ import annotations

import numpy as np
import pytest

import detector.steps as steps_mod
from detector.engine import Engine
from detector.testing import T0, feed, parallel_step, step


def _pages(alerts: list) -> list[tuple[str, int]]:
    return [(a.scope.key, round(a.detected_ts - T0)) for a in alerts if a.status == "firing"]


@pytest.fixture
def places(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """Every non-empty answer of ``JobMonitor._same_place`` while the test runs."""
    got: list[list[int]] = []
    orig = steps_mod.JobMonitor._same_place

    def spy(self, out, mark, slots, groups):  # noqa: ANN001, ANN202
        p = orig(self, out, mark, slots, groups)
        if p:
            got.append(list(p))
        return p

    monkeypatch.setattr(steps_mod.JobMonitor, "_same_place", spy)
    return got


def _job(*, seed: int, ranks: int, tp: int, rho: float = 0.0, steps: int,
         place: tuple[int, int, float] | None = None,
         slow: tuple[tuple[int, int, float], ...] = ()) -> list:
    """``ranks`` ranks (GPU r % 8 of node-(r // 8)), TP ``tp``, compute 700 ms, each rank's log
    compute an AR(1) of lag-1 ``rho``, spread 1 %.  ``place``: (first step, GPU index, extra)
    -- that index of every node slower from the step on; ``slow``: (first step, rank, extra)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(ranks)
    e = np.sqrt(1.0 - rho * rho)
    gpu = np.arange(ranks) % 8
    out = []
    for s in range(steps):
        z = rho * z + e * rng.standard_normal(ranks)
        x = 0.01 * z
        if place is not None and s >= place[0]:
            x[gpu == place[1]] += place[2]
        for start, rank, extra in slow:
            if s >= start:
                x[rank] += extra
        out += parallel_step(s, 700.0 * np.exp(x), tp=tp, pp=1)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_a_fault_over_a_place_a_little_slow_everywhere_is_paged_within_15_steps(
        seed: int) -> None:
    """64 ranks TP2 (moe31's layout); every node's GPU 2 +3 % from step 60 (the workload: never
    paged), rank 26 (GPU 2 of node-003) +5 % more from step 150.  Main: paged at 169, 171, 167
    (held while its place read over half its smoothed z); now 157, 163, 159."""
    got = _pages(feed(Engine(), _job(seed=seed, ranks=64, tp=2, steps=230,
                                     place=(60, 2, 0.03), slow=((150, 26, 0.05),))))
    assert [u for u, _ in got] == ["gpu:node-003/2"] and got[0][1] <= 165, got


@pytest.mark.parametrize("seed", [1, 2, 4])
def test_a_large_pure_dp_jobs_noise_does_not_hold_a_real_slowdown(
        seed: int, places: list[list[int]]) -> None:
    """128 nodes x 8 GPUs, pure DP, lag-1 0.6; rank 5 +10 % from step 40.  Main held it once
    (2 of its 127 same-index peers over half its early smoothed z: 0.8-1.4) and reset its run;
    paged a step or two later (these seeds: 51 -> 49, 51, 49)."""
    got = _pages(feed(Engine(), _job(seed=seed, ranks=1024, tp=1, rho=0.6, steps=70,
                                     slow=((40, 5, 0.10),))))
    assert [u for u, _ in got] == ["gpu:node-000/5"] and got[0][1] <= 51, got
    assert places == []


def _two_a_gpu(seed: int, steps: int = 220) -> list:
    """8 nodes of 16 ranks, two processes a GPU (rank r: GPU (r % 16) // 2 of node-(r // 16)),
    pure DP; node-001 slow as a whole (+6 %) and GPU 2 of node-003 (rank 52) +6 % from step
    150."""
    rng = np.random.default_rng(seed)
    n = 128
    out = []
    for s in range(steps):
        x = 0.01 * rng.standard_normal(n)
        if s >= 150:
            x[16:32] += 0.06
            x[52] += 0.06
        c = 700.0 * np.exp(x)
        step_ms = round(float(c.max()) + 250.0, 2)
        out += [step(T0 + s + 0.001 * r, r, s, node=f"node-{r // 16:03d}", gpu=(r % 16) // 2,
                     step_ms=step_ms, compute_ms=round(float(c[r]), 2), dp=r)
                for r in range(n)]
    return out


@pytest.mark.parametrize("seed", range(3))
def test_two_ranks_of_one_slow_node_on_an_index_are_one_node_not_a_place(seed: int) -> None:
    """Main counted node-001's two ranks on GPU 2 as two nodes: node-003's GPU 2 was held for
    as long as node-001 stayed slow -- never paged."""
    got = _pages(feed(Engine(), _two_a_gpu(seed)))
    assert sorted(u for u, _ in got) == ["gpu:node-003/2", "node:node-001"], got
    assert max(t for _, t in got) <= 158, got


# -- blind21 N3: heavy-tailed real noise under runs ------------------------------------------


def _pai_job(seed: int, *, steps: int = 400, start: int | None = None,
             shift: float = 0.0) -> list:
    """blind21's llm-a layout (TP8 x PP2 x DP4: 64 ranks on 8 nodes, peer groups of 4) on real
    step noise: each rank's jitter a chain of windows of Alibaba PAI job 2's residuals at the
    job's 0.94 % (bench.blind21.world.jitter); rank 5 slower by ``shift`` from ``start``."""
    from bench.blind21 import world
    rng = np.random.default_rng(seed)
    x = np.log(np.stack([world.jitter(rng, steps, 0.0094) for _ in range(64)], axis=1))
    if start is not None:
        x[start:, 5] += shift
    out = []
    for s in range(steps):
        out += parallel_step(s, 700.0 * np.exp(x[s]), tp=8, pp=2)
    return out


@pytest.mark.parametrize("seed", [3251, 3252, 3257])
def test_a_healthy_job_on_real_heavy_tailed_noise_is_not_paged(seed: int) -> None:
    """N3's shape: PAI job-2 episodes (4-6 steps at +3.4-4.3 %) paged once the lag-1 was in
    force -- main: 1, 5 and 1 pages (seeds 3250-3261: 15 in 12 jobs; now 2, both 5-7 steps
    after warm-up, before the lag-1 and the tail are known: N2's shape)."""
    assert _pages(feed(Engine(), _pai_job(seed))) == []


@pytest.mark.parametrize(("shift", "within"), [(0.10, 9), (0.05, 13)])
@pytest.mark.parametrize("seed", [3250, 3252, 3253, 3254])
def test_a_sustained_slowdown_on_real_heavy_tailed_noise_is_still_paged(
        shift: float, within: int, seed: int) -> None:
    """10 % from step 150 on: paged as on main (seeds 3250-3261: 5-8 steps, median 6); 5 %:
    its effect under _HEAVY_EFFECT, paged from its run's 7th step (main 6-24 steps, median 6,
    seed 3250 not at its GPU; now 7-24, median 9)."""
    got = [(u, t) for u, t in _pages(feed(Engine(), _pai_job(seed, start=150, shift=shift)))
           if t >= 150]
    assert got and got[0][0] == "gpu:node-000/5" and got[0][1] - 150 <= within, got


# (Was a strict xfail: "N2's shape on real noise before the lag-1 and the tail are known: 5-7
# steps after warm-up, a PAI job-2 episode (4 steps, +3.8 %) is paged at its GPU
# (gpu:node-001/0 at step 17; 2 such pages in 12 jobs, seeds 3250-3261)".)  Fixed by start33,
# round 33: until the job's lag-1 is known and its tail read, its noise is taken for real noise
# (JobMonitor._heavy): 0 pages in the 12 jobs.
def test_an_episode_right_after_warm_up_on_real_noise_is_not_paged() -> None:
    assert _pages(feed(Engine(), _pai_job(3250))) == []
