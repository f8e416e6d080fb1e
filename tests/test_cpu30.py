"""Room cpu30 (round 30, issue 14): behaviour-free cuts of the worker's CPU, each against the
code it replaced (kept here as the reference) on random inputs.

- ``steps._row_nanmedians``: ``np.nanmedian(vals, axis=1)`` -- a rank's twins' median in
  ``JobMonitor._twin_update``, every step of a job whose ranks have twins (a routed MoE job:
  blind8 rail-moe, tests/test_moe18's) -- without numpy's masked-array path around it, the
  same bits.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from detector import steps as st
from detector.engine import Engine
from detector.testing import feed
from tests.test_moe18 import routed_job


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, dtype=np.float64).tobytes()


def _reference_row_nanmedians(vals: np.ndarray) -> np.ndarray:
    """What _twin_update called before cpu30."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (a row of NaNs only)
        return np.nanmedian(vals, axis=1)


def _random_rows(rng: np.random.Generator) -> np.ndarray:
    rows, cols = int(rng.integers(1, 160)), int(rng.integers(1, 14))
    kind = rng.integers(4)
    if kind == 0:
        vals = rng.normal(0.0, 0.1, (rows, cols))
    elif kind == 1:  # ties: a few distinct values, signed zeros among them
        vals = rng.choice(np.array([-0.0, 0.0, 0.01, -0.01, 0.02, 1e-300]), (rows, cols))
    elif kind == 2:  # infinities and huge values beside ordinary ones
        vals = rng.choice(np.array([np.inf, -np.inf, 1e308, -1e308, 0.5, -0.0]), (rows, cols))
    else:
        vals = np.round(rng.normal(0.0, 1.0, (rows, cols)), 1)
    nan = rng.random((rows, cols)) < rng.choice([0.0, 0.1, 0.4, 0.9])
    vals[nan] = np.nan
    return vals


@pytest.mark.parametrize("seed", range(40))
def test_row_nanmedians_are_nanmedian_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(25):
        vals = _random_rows(rng)
        with np.errstate(all="ignore"):  # (inf - inf, 1e308 + 1e308: what numpy makes too)
            want = _reference_row_nanmedians(vals)
            got = st._row_nanmedians(vals)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert _bits(got) == _bits(want), (vals, got, want)


def test_row_nanmedians_odd_even_and_a_row_of_nans() -> None:
    vals = np.array([[3.0, np.nan, 1.0, 2.0], [4.0, 1.0, 3.0, 2.0], [np.nan] * 4,
                     [-0.0, np.nan, np.nan, np.nan]])
    with np.errstate(invalid="ignore"):
        got = st._row_nanmedians(vals)
    assert got[0] == 2.0 and got[1] == 2.5 and np.isnan(got[2])
    assert got[3] == 0.0 and not np.signbit(got[3])  # (numpy sums -0.0 twice from +0.0)
    assert _bits(got) == _bits(_reference_row_nanmedians(vals))


@pytest.mark.parametrize("seed", range(2))
def test_twin_job_runs_as_with_nanmedian(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # A routed MoE job whose ranks have twins, one GPU slowing: the twins' medians are taken
    # every step from the first look (step 64); alerts and the twins' state as with numpy's.
    calls = []

    def counted(vals: np.ndarray) -> np.ndarray:
        calls.append(len(vals))
        return fast(vals)

    fast = st._row_nanmedians
    events = routed_job(steps=140, seed=seed, slow_rank=42, slow_from=90)
    runs = []
    for impl in (counted, _reference_row_nanmedians):
        monkeypatch.setattr("detector.steps.twins._row_nanmedians", impl)
        eng = Engine()
        alerts = [a.to_dict() for a in feed(eng, events)]
        jobs = list(eng.source.monitors._jobs.values())
        runs.append((alerts, [(_bits(j._twin_short), _bits(j._twin_base), j._twin_sigma)
                              for j in jobs]))
    assert len(calls) >= 50  # (the twins' medians were taken: the path ran)
    assert runs[0] == runs[1]
    assert runs[0][0] and runs[0][1]  # (the slow GPU paged, the job kept: things to compare)
