"""perf43's trims of a step's evaluation (issue 14): each one decides exactly what the code it
replaced did -- checked here against that code, kept as the reference -- and the step path's
yardstick (``engine_callgrind.py --steps``) runs (BENCHMARKS.md "perf43, round 43")."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from detector.steps.slow import _stage_noise
from detector.thresholds import Thresholds
from models.peer_stats import MAD_TO_SIGMA, median


def _stage_noise_loop(self: SimpleNamespace, r: np.ndarray, d: np.ndarray,
                      stage: np.ndarray) -> None:
    """_stage_noise as it was (a stage a pass of the loop): the reference."""
    move = np.abs(d - self._slow_dev[r])
    per = np.empty(len(r))
    for p in np.unique(stage).tolist():
        at = stage == p
        per[at] = median(move[at]) * (MAD_TO_SIGMA / math.sqrt(2.0))
    prev = self._stage_sigma[r]
    self._stage_sigma[r] = np.where(
        prev == 0.0, per, prev + self.cfg.slow_sigma_alpha * (per - prev))


def _job(n: int, rng: np.random.Generator) -> SimpleNamespace:
    dev = rng.normal(0.0, 0.02, n).round(3)  # (rounded: ties in the moves)
    sigma = np.where(rng.random(n) < 0.3, 0.0, rng.random(n) * 0.01)
    return SimpleNamespace(_slow_dev=dev, _stage_sigma=sigma, cfg=Thresholds())


def test_stage_noise_by_rows_is_the_loop_bit_for_bit() -> None:
    # Stages of one size and of several (a step missing a straggler: padded rows), odd and even
    # sizes, moves of 0 and ties, a rank's NaN (the loop's path): the same smoothed noise.
    rng = np.random.default_rng(430701)
    for case in range(300):
        n = int(rng.integers(2, 40))
        stages = int(rng.integers(2, 5))
        stage = np.sort(rng.integers(0, stages, n)) if case % 2 else np.arange(n) % stages
        r = rng.permutation(n)
        d = rng.normal(0.0, 0.02, n).round(3)
        if case % 7 == 0:
            d[int(rng.integers(n))] = math.nan
        if case % 5 == 0:
            drop = rng.random(n) < 0.9  # (ranks missing: fewer slots than the job's)
            r, d, stage = r[drop], d[drop], stage[drop]
            if not len(r):
                continue
        a, b = _job(n, np.random.default_rng(case)), _job(n, np.random.default_rng(case))
        _stage_noise(a, r, d, stage.astype(np.int64))
        _stage_noise_loop(b, r, d, stage.astype(np.int64))
        assert a._stage_sigma.tobytes() == b._stage_sigma.tobytes(), case


def test_step_passes_count_the_step_messages() -> None:
    # --steps' inner run: every step message of the prefix through the step path, each pass.
    from bench import engine_callgrind
    from detector.events import StepSample

    steps = sum(type(e) is StepSample for e in engine_callgrind.decoded(3000))
    assert steps > 0
    assert engine_callgrind.step_passes(2, 3000) == steps
