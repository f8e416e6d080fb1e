"""What the engine's hot paths rely on from their libraries, pinned (detector/thermal.py)."""

from __future__ import annotations

import random

from river import stats


def test_river_ewmean_update_is_its_rust_estimator() -> None:
    # GpuThermal's healthy path calls EWMean's estimator object directly, skipping the
    # Python method that only delegates to it: the two must give the same bits.
    rng = random.Random(7)
    public, direct = stats.EWMean(fading_factor=0.02), stats.EWMean(fading_factor=0.02)
    for _ in range(5000):
        x = rng.choice((1980.0, 1410.0, rng.uniform(300.0, 2100.0)))
        public.update(x)
        direct._ewmean.update(x)
        assert direct.get() == public.get()
