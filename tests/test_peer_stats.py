"""models.peer_stats against numpy's own definitions, bit for bit (the engine's speed-ups
must not move a single alert)."""

from __future__ import annotations

import struct

import numpy as np

from models.peer_stats import median


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def test_median_is_np_median_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    cases = [np.array([0.0, -0.0]), np.array([-0.0, -0.0, 1.0]), np.array([np.inf, -np.inf]),
             np.array([1.0, np.nan, 2.0]), np.array([5.0])]
    for _ in range(3000):
        n = int(rng.integers(1, 140))
        kind = rng.integers(0, 4)
        if kind == 0:
            v = rng.normal(size=n)
        elif kind == 1:  # ties, as rounded telemetry has
            v = rng.integers(-3, 4, size=n).astype(float) / 7.0
        elif kind == 2:  # log ratios of compute times, a step's real input
            v = np.log(rng.uniform(500.0, 700.0, size=n)) - np.log(600.0)
        else:
            v = np.abs(rng.normal(size=n)) * 1e-300  # subnormal halves
        cases.append(v)
    with np.errstate(invalid="ignore"):
        for v in cases:
            assert _bits(median(v)) == _bits(float(np.median(v))), v.tolist()


def test_median_of_nothing_is_nan() -> None:
    assert np.isnan(median(np.zeros(0)))


def test_group_median_scale_rows_are_the_general_path_bit_for_bit() -> None:
    """Groups of one size go through sorted rows (and a layout cache); the general path's
    lexsort must give the same medians, scales and sizes, ties and signed zeros included."""
    from models import peer_stats
    from models.peer_stats import _general, group_median_scale

    rng = np.random.default_rng(11)
    used_rows = 0
    for case in range(400):  # more layouts than the cache keeps: evictions on the way
        k = int(rng.integers(1, 9))
        n_groups = int(rng.integers(1, 20))
        groups = np.repeat(rng.choice(1 << 30, size=n_groups, replace=False), k)
        if case % 5 == 0 and len(groups) > 1:  # groups of different sizes: the general path
            groups = groups[1:]
        groups = rng.permutation(groups).astype(np.int64)
        n = len(groups)
        kind = case % 4
        if kind == 0:
            v = rng.normal(size=n)
        elif kind == 1:  # ties and signed zeros, in any order
            v = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, 0.5]), size=n)
        elif kind == 2:
            v = np.log(rng.uniform(500.0, 700.0, size=n)) - np.log(600.0)
        else:
            v = rng.normal(size=n)
            v[rng.integers(0, n)] = np.nan
        for _ in range(2):  # a layout computed, then one from the cache
            used_rows += peer_stats._rows(groups) is not None
            with np.errstate(invalid="ignore"):
                got = group_median_scale(v, groups)
                want = _general(v, groups)
            for a, b in zip(got, want, strict=True):
                assert a.dtype == b.dtype
                assert a.tobytes() == b.tobytes(), (groups.tolist(), v.tolist())
    assert used_rows > 400  # the rows path was taken (not only the general one)
    assert len(peer_stats._LAYOUTS) <= peer_stats._LAYOUTS_KEPT


def test_a_layout_learned_by_slot_is_the_one_found_directly() -> None:
    """peer_stats.learn_layout finds a step's layout through a fixed order of its elements (a
    job's rank slots, the same every step) and maps it to the step's order: the same rows,
    each row's members in input order, as _rows finds from the step's own groups -- so the
    medians and scales are the general path's bit for bit, signed zeros and ties included."""
    from models import peer_stats
    from models.peer_stats import _general, _rows, group_median_scale, learn_layout

    rng = np.random.default_rng(13)
    learned = 0
    fixed: dict = {}
    for case in range(300):
        k = int(rng.integers(1, 9))
        n_groups = int(rng.integers(1, 20))
        by_slot = np.repeat(rng.choice(1 << 30, size=n_groups, replace=False), k)
        if case % 5 == 0 and len(by_slot) > 1:  # groups of different sizes: padded rows
            by_slot = by_slot[1:]
        if case % 7 == 0:  # one big group and small ones: too unequal to pad
            by_slot = np.concatenate([by_slot, np.full(5 * len(by_slot), -1)])
        by_slot = rng.permutation(by_slot).astype(np.int64)
        n = len(by_slot)
        for _ in range(3):  # steps of the job: the same slots' groups, a new arrival order
            slots = rng.permutation(n)
            groups = by_slot[slots]
            if rng.random() < 0.3 and n > 1:  # a step without some of the job's ranks
                keep = np.sort(rng.choice(n, size=int(rng.integers(1, n)), replace=False))
                slots, groups = slots[keep], groups[keep]
            m = len(slots)
            order = np.empty(m + 1, dtype=np.intp)
            order[:m], order[m] = slots.argsort(), m
            learn_layout(groups, order, fixed)
            got = peer_stats._LAYOUTS.pop(groups.tobytes())
            want = _rows(groups)
            assert (got is None) == (want is None)
            if got is not None:
                learned += 1
                assert got.k == want.k
                assert np.array_equal(got.lo, want.lo) and np.array_equal(got.hi, want.hi)
                assert got.perm.tobytes() == want.perm.tobytes()
                assert got.back.tobytes() == want.back.tobytes()
                peer_stats._LAYOUTS[groups.tobytes()] = got
            v = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.nan]), size=m)
            with np.errstate(invalid="ignore"):
                stats = group_median_scale(v, groups), _general(v, groups)
            for a, b in zip(*stats, strict=True):
                assert a.tobytes() == b.tobytes(), (groups.tolist(), v.tolist())
    assert learned > 300


def test_medians_over_a_row_a_group_are_the_medians_over_every_element() -> None:
    """JobMonitor takes the job's noise (median of the groups' scales) and the replicas'
    spreads (median deviation from the replica medians, median of the medians) over one row
    per group (peer_stats.sorted_rows) instead of over arrays expanded to every rank: for
    groups of one size these are the same numbers bit for bit."""
    from models.peer_stats import (
        MAD_TO_SIGMA,
        group_median_scale,
        row_deviations,
        row_mads,
        sorted_rows,
    )

    rng = np.random.default_rng(17)
    for case in range(600):
        k = int(rng.integers(1, 10))
        n_groups = int(rng.integers(1, 24))
        groups = rng.permutation(np.repeat(rng.choice(1 << 40, size=n_groups, replace=False),
                                           k)).astype(np.int64)
        n = len(groups)
        if case % 3 == 0:  # ties, as rounded telemetry has
            x = rng.integers(-3, 4, size=n).astype(float) / 7.0
        else:
            x = np.log(rng.uniform(500.0, 700.0, size=n)) - np.log(600.0)
        med, scale, _ = group_median_scale(x, groups)
        sr = sorted_rows(x, groups)
        assert sr is not None
        v, mid, rows = sr
        assert mid[rows.back].tobytes() == med.tobytes()
        assert _bits(median(row_deviations(v.copy(), mid).ravel(), scratch=True)) == _bits(
            median(np.abs(x - med)))
        assert _bits(median(np.abs(mid - median(mid)), scratch=True)) == _bits(
            median(np.abs(med - median(med))))
        assert _bits(median(row_mads(v, mid, rows) * MAD_TO_SIGMA, scratch=True)) == _bits(
            median(scale))


def test_a_layout_derived_for_a_step_missing_ranks_gives_the_general_path() -> None:
    """peer_stats.derive_layout: a step missing some of a job's ranks takes the job's rows by
    slot less the absent ones (padded, or one size again when each group lost as many); the
    medians, scales and sizes are the general path's bit for bit, signed zeros, ties and NaN
    included, and a step whose ranks changed group, or that misses a whole group, is left to
    _rows."""
    from models import peer_stats
    from models.peer_stats import _general, derive_layout, group_median_scale, learn_layout

    rng = np.random.default_rng(19)
    derived = padded = 0
    for case in range(300):
        k = int(rng.integers(2, 9))
        n_groups = int(rng.integers(1, 12))
        by_slot = np.repeat(rng.choice(1 << 30, size=n_groups, replace=False), k)
        if case % 4 == 0 and len(by_slot) > 1:  # the job's groups of different sizes
            by_slot = by_slot[1:]
        by_slot = rng.permutation(by_slot).astype(np.int64)
        n = len(by_slot)
        slots = rng.permutation(n)
        order = np.empty(n + 1, dtype=np.intp)
        order[slots], order[n] = np.arange(n), n
        peer_stats._LAYOUTS.clear()
        whole = learn_layout(by_slot[slots], order, {})
        assert whole is not None
        for _ in range(4):
            m = int(rng.integers(1, n + 1))
            part = rng.permutation(n)[:m]  # a step's slots, in arrival order
            if case % 3 == 0:  # each group loses as many: one size again
                part = np.concatenate([np.flatnonzero(by_slot == g)[1:] for g in
                                       np.unique(by_slot)]) if k > 2 else part
                part = rng.permutation(part)
            groups = by_slot[part]
            if case % 10 == 9 and len(groups):  # a rank in another group: left to _rows
                groups = groups.copy()
                groups[0] = -5
            if not len(groups):
                continue
            peer_stats._LAYOUTS.clear()
            derive_layout(groups, part, whole)
            rows = peer_stats._LAYOUTS.get(groups.tobytes())
            derived += rows is not None
            padded += rows is not None and rows.k == 0
            if case % 10 == 9:
                assert rows is None
            v = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.nan]), size=len(groups))
            with np.errstate(invalid="ignore"):
                got, want = group_median_scale(v, groups), _general(v, groups)
            for a, b in zip(got, want, strict=True):
                assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), (groups, v)
    assert derived > 400 and padded > 100
