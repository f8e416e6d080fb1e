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
