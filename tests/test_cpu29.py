"""Room cpu29 (round 29, issue 14): the engine's CPU an event -- cuts that change nothing.

Each cut is compared with the code it replaced on random inputs: the replaced lines are kept
here as the reference, and a test fails when the cut is made wrong (checked by breaking it).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from detector import steps as st
from detector.events import StepSample
from detector.thresholds import Thresholds


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, dtype=np.float64).tobytes()


@pytest.mark.parametrize("seed", range(8))
def test_clip_method_is_np_clip(seed: int) -> None:
    # ``x.clip(lo, hi)`` for ``np.clip(x, lo, hi)`` (np.clip is three Python frames around the
    # method): the same bits, NaN, -0.0, the infinities and an inverted range included, into
    # a new array and in place (``out=`` the input).
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 2.0, 257)
    x[rng.choice(257, 40, replace=False)] = rng.choice(
        [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e300, -1e300, 0.5, -0.5], 40)
    for lo, hi in ((0.0, 1e12), (-0.5, 0.5), (-0.0, 0.0), (0.0, -0.0), (0.3, -0.3),
                   (float(rng.normal()), float(rng.normal()) + 1.0)):
        assert _bits(x.clip(lo, hi)) == _bits(np.clip(x, lo, hi))
        a, b = x.copy(), x.copy()
        a.clip(lo, hi, out=a)
        np.clip(b, lo, hi, out=b)
        assert _bits(a) == _bits(b)


def _job(seed: int, steps: int) -> list[StepSample]:
    """A 16-rank job (2 pipeline stages, TP 2, 4 nodes of 4 ranks): host times that wander,
    a node whose host time rises a third of a step from step 90 (host_late and host_rise
    findings), steps where a rank sends no comm_ms (no host times: NaN), steps whose
    parts exceed step_ms (host times below 0, taken as 0), and steps a rank misses (decided by
    expiry, fewer ranks)."""
    rng = random.Random(seed)
    out: list[StepSample] = []
    for step in range(steps):
        for rank in range(16):
            if step % 29 == 7 and rank == 5:
                continue  # (missed: the step is decided incomplete)
            node = rank // 4
            compute = 700.0 * math.exp(rng.gauss(0.0, 0.02))
            comm = 250.0 * math.exp(rng.gauss(0.0, 0.05))
            host = 40.0 * math.exp(rng.gauss(0.0, 0.3))
            if node == 2 and 90 <= step < 260:
                host += 330.0 * (0.8 + 0.4 * rng.random())
            step_ms = compute + comm + host
            if step % 23 == 11:
                step_ms = compute + comm - rng.random()  # (the parts over step_ms)
            comm_ms: float | None = comm
            if step % 37 == 19 and rank == 3:
                comm_ms = None
            ts = 100.0 + 1.1 * step + rank * 1e-3
            out.append(StepSample(ts, "job", step, rank, f"n{node}", rank % 4, step_ms,
                                  compute, comm_ms, rank % 2, rank // 8, (rank // 2) % 4))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_host_times_once_are_the_host_times_host_rise_made(seed: int,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    # _check_host hands its host times to _host_rise, which computed them again from the step
    # (main bb06987: ``_floats(step_ms) - _floats(comm) - compute``, none when one is NaN, at
    # least 0) and was called on every step with host times after the warm-up.  Each step:
    # the times _host_rise gets are those bits, and it is called exactly where it was.
    expected: list[bytes | None] = []
    got: list[bytes] = []
    check_host, host_rise = st.JobMonitor._check_host, st.JobMonitor._host_rise

    def spy_check(self: st.JobMonitor, step: int, slots: np.ndarray, groups: np.ndarray,
                  ts: np.ndarray, compute: np.ndarray, buf: st._StepBuffer, decided_ts: float,
                  out: list) -> np.ndarray | None:
        old = st._floats(buf.step_ms) - st._floats(buf.comm) - compute
        if np.count_nonzero(np.isnan(old)) or self._evaluated <= self.cfg.warmup_steps:
            expected.append(None)
        else:
            np.maximum(old, 0.0, out=old)
            expected.append(_bits(old))
        return check_host(self, step, slots, groups, ts, compute, buf, decided_ts, out)

    def spy_rise(self: st.JobMonitor, step: int, slots: np.ndarray, buf: st._StepBuffer,
                 host: np.ndarray, ts: float, out: list) -> None:
        assert len(got) < len(expected)
        got.extend([b""] * (len(expected) - 1 - len(got)))  # (steps it was not called on)
        got.append(_bits(host))
        host_rise(self, step, slots, buf, host, ts, out)

    monkeypatch.setattr(st.JobMonitor, "_check_host", spy_check)
    monkeypatch.setattr(st.JobMonitor, "_host_rise", spy_rise)
    mon = st.JobMonitor("job", Thresholds())
    out: list = []
    for e in _job(seed, 320):
        mon.add(e, out)
    mon.expire(math.inf, out)
    got.extend([b""] * (len(expected) - len(got)))
    assert [b"" if x is None else x for x in expected] == got
    assert expected.count(None) >= 8 and len(expected) - expected.count(None) >= 200
    signals = {f.signal for f in out}
    assert {"host_rise", "host_late"} <= signals, signals  # (the judges found the node)


@pytest.mark.parametrize("seed", range(4))
def test_count_nonzero_is_any(seed: int) -> None:
    # ``np.count_nonzero(x)`` for ``x.any()`` (a Python frame around a reduction) where a
    # boolean array (or a float column: NaN counts as set in both) is tested for truth.
    rng = np.random.default_rng(seed)
    for n in (0, 1, 2, 7, 128):
        for p in (0.0, 0.01, 0.5, 1.0):
            b = rng.random(n) < p
            assert bool(np.count_nonzero(b)) == bool(b.any())
            f = np.where(b, rng.choice([1.0, 2.0, np.nan, -0.0 + 1e-300], n), 0.0)
            f[rng.random(n) < 0.1] = -0.0
            assert bool(np.count_nonzero(f)) == bool(f.any())


def _reference_lower_medians(values: np.ndarray, groups: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """host_time._lower_medians as it was before cpu29 (main bb06987)."""
    top = 2.0 * float(values.max()) + 1.0
    key = np.sort(groups + values / top)
    g = np.floor(key)
    starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
    sizes = np.diff(np.append(starts, len(g)))
    at = starts + (sizes - 1) // 2
    return g[starts], (key[at] - g[at]) * top, sizes


@pytest.mark.parametrize("seed", range(12))
def test_lower_medians_without_wrappers_are_the_old(seed: int) -> None:
    # The groups' starts and sizes by slices and ndarray methods: the same ids, lower medians
    # and sizes, bit for bit and dtype for dtype -- int and float group ids (ranks' units,
    # units' stages), one group, one value, every group of one, ties, zeros, 1e12.
    from detector.host_time import _lower_medians

    rng = np.random.default_rng(seed)
    for n in (1, 2, 3, 8, 16, 127, 128, 300):
        for n_groups in {1, max(1, n // 8), max(1, n // 2), n}:
            groups = rng.integers(0, 2 * n_groups, n)
            if seed % 2:
                groups = groups.astype(np.float64)
            values = rng.lognormal(3.0, 1.5, n)
            values[rng.random(n) < 0.2] = 0.0
            values[rng.random(n) < 0.1] = 40.0
            if seed % 3 == 0:
                values[rng.integers(n)] = 1e12
            got, want = _lower_medians(values, groups), _reference_lower_medians(values, groups)
            for a, b in zip(got, want, strict=True):
                assert a.dtype == b.dtype and a.shape == b.shape
                assert a.tobytes() == b.tobytes()


def test_tail_and_rows_methods_are_the_wrapped_functions() -> None:
    # np.searchsorted and np.argsort as the ndarray methods they call (steps._tail_update,
    # peer_stats._rows): the same indices.
    rng = np.random.default_rng(5)
    v = np.concatenate([rng.normal(2.0, 5.0, 500), st._TAIL_EDGES, [np.nan, np.inf, -0.0]])
    assert np.array_equal(st._TAIL_EDGES.searchsorted(v, side="right"),
                          np.searchsorted(st._TAIL_EDGES, v, side="right"))
    groups = rng.integers(0, 9, 300)
    assert np.array_equal(groups.argsort(kind="stable"), np.argsort(groups, kind="stable"))


def _reference_correlations(h: np.ndarray) -> np.ndarray:
    """steps._correlations as it was before cpu29 (main bb06987)."""
    h = h - h.mean(axis=1, keepdims=True)
    norm = np.sqrt(np.einsum("ij,ij->i", h, h))
    norm[norm == 0.0] = math.inf
    return (h @ h.T) / np.outer(norm, norm)


@pytest.mark.parametrize("seed", range(6))
def test_twin_look_without_wrappers(seed: int) -> None:
    # _twin_pick's numpy without wrappers (its result against the code before cpu28 is
    # tests/test_cpu28.py's): the correlations with np.outer's product written out, the
    # diagonal by a strided store, np.diff and np.delete by slices -- the same bits.
    rng = np.random.default_rng(seed)
    for k in (2, 5, 8, 16, 33):
        h = rng.normal(0.0, 0.05, (k, 128))
        h[rng.integers(k)] = 0.25  # (a constant row: correlation 0)
        assert st._correlations(h).tobytes() == _reference_correlations(h).tobytes()
        a, b = h[:, :k] >= 0.0, h[:, :k] >= 0.0
        a.flat[::k + 1] = False
        np.fill_diagonal(b, False)
        assert np.array_equal(a, b)
        last = int(rng.integers(127))
        dh = h[:, 1:] - h[:, :-1]
        assert dh.tobytes() == np.diff(h, axis=1).tobytes()
        assert np.concatenate((dh[:, :last], dh[:, last + 1:]), axis=1).tobytes() == \
            np.delete(np.diff(h, axis=1), last, axis=1).tobytes()
    g = rng.integers(0, 40, 128)
    assert sorted(set(g.tolist())) == np.unique(g).tolist()


@pytest.mark.parametrize("seed", range(3))
def test_stage_layout_learnt_by_slot_is_rows(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # A job with pipeline stages has its stages' layout found by slot like its peer groups'
    # (peer_stats.learn_layout, derive_layout on steps a rank missed), where _check_host's
    # medians by stage had peer_stats._rows make it anew every step.  The reference run clears
    # the layouts' cache before each _check_host (its medians by _rows, as before): the same
    # findings, evidence and host state.
    from models import peer_stats

    records = _job(seed, 300)
    runs = []
    check_host = st.JobMonitor._check_host

    def fresh(self: st.JobMonitor, *a: object) -> np.ndarray | None:
        peer_stats._LAYOUTS.clear()
        return check_host(self, *a)  # type: ignore[arg-type]

    for reference in (False, True):
        peer_stats._LAYOUTS.clear()
        if reference:
            monkeypatch.setattr(st.JobMonitor, "_check_host", fresh)
        mon = st.JobMonitor("job", Thresholds())
        out: list = []
        for e in records:
            mon.add(e, out)
        mon.expire(math.inf, out)
        runs.append(([(f.signal, f.active, f.scope, f.ts, f.rank, repr(f.evidence))
                      for f in out],
                     [_bits(a) for a in (mon._host_base, mon._host_dev, mon._host_sum,
                                         mon._hs, mon._hr)]))
    assert runs[0] == runs[1]
    assert {"host_late", "host_rise"} <= {f[0] for f in runs[0][0]}
