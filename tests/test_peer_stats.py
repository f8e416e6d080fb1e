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
