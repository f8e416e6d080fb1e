"""Room cpu28 (round 28, issue 14): the engine's CPU an event -- shortcuts that change nothing.

Each shortcut is compared with the code it replaced (kept here as the reference) on states
built to exercise both of its branches.
"""

from __future__ import annotations

import copy
import math
import random

import numpy as np
import pytest

from detector import gpu_missing
from detector import steps as st
from detector.events import StepSample
from detector.thresholds import Thresholds


def _reference_twin_pick(self: st.JobMonitor, r: np.ndarray, groups: np.ndarray, n: int) -> None:
    """JobMonitor._twin_pick as it was before cpu28 (main 1541298): every rank looked at."""
    hist, hw = self._twin_hist[:, :n], self._hw
    last = (self._twin_n - 1) % st._TWIN_WINDOW
    clip = self.cfg.slow_baseline_clip
    for g in np.unique(groups).tolist():
        idx = r[groups == g]
        k = len(idx)
        if k <= st._TWIN_MIN or k > st._TWIN_GROUP_MAX:
            continue
        h = hist[idx]
        dh = np.diff(h, axis=1)
        if n == st._TWIN_WINDOW and last < n - 1:
            dh = np.delete(dh, last, axis=1)
        corr = st._correlations(dh)
        node = [None if hw[s] is None else hw[s][0] for s in idx.tolist()]
        for i, s in enumerate(idx.tolist()):
            if self._reported[s]:
                continue
            c = corr[i]
            cand = [j for j in np.flatnonzero(c >= st._TWIN_CORR).tolist()
                    if j != i and (node[i] is None or node[j] != node[i])]
            cand.sort(key=lambda j: -c[j])
            chosen: list[int] = []
            for j in cand:
                if len(chosen) < st._TWIN_MAX and all(corr[j, t] >= st._TWIN_CORR
                                                      for t in chosen):
                    chosen.append(j)
            new = np.zeros(st._TWIN_MAX, dtype=np.int64)
            if len({node[j] for j in chosen}) >= st._TWIN_MIN:
                new[:len(chosen)] = idx[chosen] + 1
            if np.array_equal(new, self._twins[s]):
                continue
            self._twins[s] = new
            self._twin_short[s] = 0.0
            self._twin_base[s] = 0.0 if not new[0] else float(np.clip(np.mean(
                h[i] - np.median(h[chosen], axis=0)), -clip, clip))


def _twin_state(rng: np.random.Generator, ranks: int, groups: int, n: int) -> st.JobMonitor:
    """A job's twin state (slot ``s`` in peer group ``s % groups``): deviations i.i.d. but for
    a few sets of a group's ranks that move together (an expert's ranks on several nodes),
    some ranks with twins already, a few reported, one constant row and one slot without
    hardware."""
    mon = st.JobMonitor("job", Thresholds())
    hist = rng.normal(0.0, 0.05, (ranks, st._TWIN_WINDOW))
    for g in range(0, groups, 2):
        common = rng.normal(0.0, 0.1, st._TWIN_WINDOW)
        members = np.arange(g, ranks, groups)
        for s in rng.choice(members, size=min(len(members), int(rng.integers(3, 7))),
                            replace=False):
            hist[s] = common + rng.normal(0.0, 0.01 + 0.05 * rng.random(), st._TWIN_WINDOW)
    hist[int(rng.integers(ranks))] = 0.25  # (a constant row: correlation 0 with every row)
    mon._twin_hist = hist
    mon._twin_n = n
    mon._hw = [(f"node-{s // 4}", s % 4) for s in range(ranks)]
    mon._hw[int(rng.integers(ranks))] = None
    mon._reported = rng.random(ranks) < 0.05
    twins = np.zeros((ranks, st._TWIN_MAX), dtype=np.int64)
    for s in rng.choice(ranks, size=ranks // 6, replace=False):
        twins[s, :3] = rng.choice(ranks, size=3, replace=False) + 1
    mon._twins = twins
    mon._twin_short = rng.normal(0.0, 0.1, ranks)
    mon._twin_base = rng.normal(0.0, 0.02, ranks)
    return mon


@pytest.mark.parametrize("seed", range(12))
def test_twin_pick_shortcut_changes_no_twin(seed: int) -> None:
    # The ranks with no peer correlated >= _TWIN_CORR and no twins are skipped at once; every
    # twin, offset and smoothed deviation is as the rank-by-rank loop leaves them.
    rng = np.random.default_rng(seed)
    ranks, group = (64, 16) if seed % 2 else (96, 8)
    n = st._TWIN_WINDOW if seed % 3 else 64 + 16 * (seed % 4)
    mon = _twin_state(rng, ranks, ranks // group, n + seed)
    ref = copy.deepcopy(mon)
    r = rng.permutation(ranks)
    groups = (r % (ranks // group)).astype(np.int64)
    mon._twin_pick(r, groups, min(n, st._TWIN_WINDOW))
    _reference_twin_pick(ref, r, groups, min(n, st._TWIN_WINDOW))
    assert np.array_equal(mon._twins, ref._twins)
    assert np.array_equal(mon._twin_short, ref._twin_short)
    assert np.array_equal(mon._twin_base, ref._twin_base)
    assert ref._twins.any() and (ref._twins == 0).all(axis=1).any()  # (both kinds of rank)


def _moe_job(seed: int, steps: int) -> list[StepSample]:
    """A 64-rank job (TP 4 x DP 16 on 16 nodes) whose experts' ranks move together step by
    step (routing), one GPU turning 15 % slower halfway: the twins are picked and used."""
    rng = random.Random(seed)
    out = []
    for step in range(steps):
        expert = [rng.gauss(0.0, 0.08) for _ in range(4)]
        for rank in range(64):
            tp, dp = rank % 4, rank // 4
            x = 1000.0 * math.exp(expert[dp % 4] + rng.gauss(0.0, 0.01))
            if rank == 21 and step > steps // 2:
                x *= 1.15
            ts = 100.0 + step + rank * 1e-4
            out.append(StepSample(ts, "moe", step, rank, f"n{dp}", tp, x + 300.0, x, 290.0,
                                  tp, 0, dp))
    return out


def test_twin_pick_shortcut_changes_no_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    # End to end: a job that routes, through JobMonitor.add, with the shortcut and with the
    # reference loop: the same findings and the same twins.
    records = _moe_job(3, 220)
    runs = []
    for pick in (st.JobMonitor._twin_pick, _reference_twin_pick):
        monkeypatch.setattr(st.JobMonitor, "_twin_pick", pick)
        mon = st.JobMonitor("moe", Thresholds())
        out: list = []
        for e in records:
            mon.add(e, out)
        mon.expire(math.inf, out)
        runs.append(([(f.signal, f.active, f.scope, f.ts, f.rank) for f in out],
                     mon._twins.copy()))
    assert runs[0][0] == runs[1][0]
    assert np.array_equal(runs[0][1], runs[1][1])
    assert runs[1][1].any()  # (twins were picked)


def _reference_absent(per: dict[int, list[float]], gpu: int, now: float) -> bool:
    """gpu_missing._absent as it was before cpu28 (main 1541298): every sibling looked at."""
    last = per[gpu][-1]
    n = 0
    for g, times in per.items():
        if g != gpu and len(times) >= gpu_missing.AFTER and times[-gpu_missing.AFTER] > last \
                and now - last >= max(gpu_missing.MIN_S,
                                      gpu_missing.INTERVALS * gpu_missing._interval(times)):
            n += 1
    return n >= gpu_missing.MIN_SIBLINGS


def test_absent_shortcut_is_the_sibling_loop() -> None:
    # A GPU heard within MIN_S of the scan's time is absent to no sibling: answered before the
    # loop over them.  Random nodes (GPUs stopping at random times, intervals 1-60 s, the
    # scan's time anywhere from a second to minutes past the newest record): the same answer.
    rng = random.Random(28)
    kinds = [0, 0]
    for _ in range(4000):
        per: dict[int, list[float]] = {}
        interval = rng.choice((1.0, 5.0, 10.0, 30.0, 60.0))
        end = 1000.0
        for g in range(rng.randint(2, 8)):
            stop = end - rng.choice((0.0, 0.0, rng.uniform(0.0, 200.0)))
            n = rng.randint(1, gpu_missing.KEEP)
            per[g] = [stop - interval * k + rng.uniform(-0.3, 0.3) for k in range(n)][::-1]
        now = max(t[-1] for t in per.values()) + rng.choice((0.0, rng.uniform(0.0, 120.0)))
        for g in per:
            want = _reference_absent(per, g, now)
            kinds[want] += 1
            assert gpu_missing._absent(per, g, now) is want
    assert min(kinds) > 100  # (both answers, many times)


def test_bench_worker_pass_and_ab_inner_run() -> None:
    # The two bench entry points this room added run on a small prefix: engine_callgrind's
    # --worker pass (the PipelineWorker over the incident's message bytes) and engine_ab's
    # inner run in a checkout (this one), which reports both parts' CPU seconds.
    from pathlib import Path

    from bench import engine_ab, engine_callgrind

    assert engine_callgrind.worker_passes(1, 3000) == 3000
    res = engine_ab.run(Path(engine_ab.ROOT), 3000)
    assert res["records"] == 3000
    assert all(res[p] > 0.0 for p in engine_ab.PARTS)
