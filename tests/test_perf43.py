"""perf43's trims of a step's evaluation (issue 14): each one decides exactly what the code it
replaced did -- checked here against that code, kept as the reference -- and the step path's
yardstick (``engine_callgrind.py --steps``) runs (BENCHMARKS.md "perf43, round 43")."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from detector.steps.common import _TWIN_CORR, _TWIN_GROUP_MAX, _TWIN_MAX, _TWIN_MIN, _TWIN_WINDOW
from detector.steps.slow import _stage_noise
from detector.steps.twins import _correlations, _twin_pick, _twin_pick_group
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


def _twin_pick_loop(self: SimpleNamespace, r: np.ndarray, groups: np.ndarray, n: int) -> None:
    """_twin_pick as it was (a peer group a pass of the loop, each its own numpy calls): the
    reference."""
    hist, hw = self._twin_hist[:, :n], self._hw
    last = (self._twin_n - 1) % _TWIN_WINDOW
    clip = self.cfg.slow_baseline_clip
    for g in sorted(set(groups.tolist())):
        idx = r[groups == g]
        k = len(idx)
        if k <= _TWIN_MIN or k > _TWIN_GROUP_MAX:
            continue
        h = hist[idx]
        dh = h[:, 1:] - h[:, :-1]
        if n == _TWIN_WINDOW and last < n - 1:
            dh = np.concatenate((dh[:, :last], dh[:, last + 1:]), axis=1)
        corr = _correlations(dh)
        close = corr >= _TWIN_CORR
        close.flat[::k + 1] = False
        look = (close.any(axis=1) | self._twins[idx].any(axis=1)).tolist()
        node = [None if hw[s] is None else hw[s][0] for s in idx.tolist()]
        for i, s in enumerate(idx.tolist()):
            if self._reported[s] or not look[i]:
                continue
            c = corr[i]
            cand = [j for j in np.flatnonzero(c >= _TWIN_CORR).tolist()
                    if j != i and (node[i] is None or node[j] != node[i])]
            cand.sort(key=lambda j: -c[j])
            chosen: list[int] = []
            for j in cand:
                if len(chosen) < _TWIN_MAX and all(corr[j, t] >= _TWIN_CORR for t in chosen):
                    chosen.append(j)
            new = np.zeros(_TWIN_MAX, dtype=np.int64)
            if len({node[j] for j in chosen}) >= _TWIN_MIN:
                new[:len(chosen)] = idx[chosen] + 1
            if np.array_equal(new, self._twins[s]):
                continue
            self._twins[s] = new
            self._twin_short[s] = 0.0
            self._twin_base[s] = 0.0 if not new[0] else float(np.clip(np.mean(
                h[i] - np.median(h[chosen], axis=0)), -clip, clip))


def _twin_job(slots: int, nodes: int, seed: int) -> SimpleNamespace:
    rng = np.random.default_rng(seed)
    # Deviations with shared walks (an expert's ranks moving together on several nodes), some
    # i.i.d., a constant row; twins held before and ranks told slow.
    walks = rng.normal(0.0, 0.02, (4, _TWIN_WINDOW)).cumsum(axis=1)
    share = rng.integers(-1, 4, slots)
    hist = rng.normal(0.0, 0.01, (slots, _TWIN_WINDOW))
    hist[share >= 0] += walks[share[share >= 0]]
    hist[0] = 0.003
    twins = np.zeros((slots, _TWIN_MAX), dtype=np.int64)
    held = rng.random(slots) < 0.1
    twins[held, 0] = rng.integers(1, slots + 1, int(held.sum()))
    self = SimpleNamespace(
        _twin_hist=hist.round(4), _twin_n=int(rng.integers(_TWIN_WINDOW // 2, 3 * _TWIN_WINDOW)),
        _hw=[None if s % 13 == 5 else (f"n{s % nodes}", s // nodes) for s in range(slots)],
        _reported=rng.random(slots) < 0.05, _twins=twins, _twin_short=rng.random(slots),
        _twin_base=rng.random(slots), cfg=Thresholds())
    self._twin_pick_group = _twin_pick_group.__get__(self)
    return self


def test_twin_pick_in_one_pass_is_the_loop() -> None:
    # Peer groups of one size (one pass over all groups) and of several (the loop), a window
    # full and wrapped: the same twins, offsets and short means as the loop a group.
    rng = np.random.default_rng(430702)
    picked = 0
    for case in range(120):
        slots = int(rng.integers(6, 80))
        k = int(rng.choice([2, 3, 4, 8, 16]))
        groups = (np.arange(slots) % max(1, slots // k)).astype(np.int64)
        if case % 3 == 0:
            groups = rng.integers(0, 4, slots).astype(np.int64)  # (sizes differ)
        r = rng.permutation(slots)
        g = groups[r]
        n = min(int(rng.integers(_TWIN_WINDOW // 2, 2 * _TWIN_WINDOW)), _TWIN_WINDOW)
        a, b = _twin_job(slots, 4, case), _twin_job(slots, 4, case)
        _twin_pick(a, r, g, n)
        _twin_pick_loop(b, r, g, n)
        for name in ("_twins", "_twin_short", "_twin_base"):
            assert getattr(a, name).tobytes() == getattr(b, name).tobytes(), (case, name)
        picked += int(np.count_nonzero(a._twins[:, 0] != _twin_job(slots, 4, case)._twins[:, 0]))
    assert picked > 50  # (twins were picked and changed: the comparison saw the loop's work)


def test_step_passes_count_the_step_messages() -> None:
    # --steps' inner run: every step message of the prefix through the step path, each pass.
    from bench import engine_callgrind
    from detector.events import StepSample

    steps = sum(type(e) is StepSample for e in engine_callgrind.decoded(3000))
    assert steps > 0
    assert engine_callgrind.step_passes(2, 3000) == steps
