"""perf44 (issue 14): numpy's C functions called without their Python wrappers in the step path
(models.numpy_c) -- the same functions, so the same values bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from models import numpy_c


def test_the_wrappers_call_these_functions() -> None:
    # np.count_nonzero(a) (no axis) returns multiarray.count_nonzero(a); ndarray.clip(lo, hi)
    # of a float array returns um.clip(a, lo, hi): a numpy whose wrappers call something else
    # fails here (models.numpy_c then needs looking at), not silently elsewhere.
    from numpy._core import _methods, numeric

    assert numeric.multiarray.count_nonzero is numpy_c.count_nonzero
    assert _methods.um.clip is numpy_c.clip


@pytest.mark.parametrize("seed", range(20))
def test_count_nonzero_is_the_wrappers(seed: int) -> None:
    rng = np.random.default_rng(4406_00 + seed)
    n = int(rng.integers(0, 300))
    for a in (rng.random(n) < rng.random(), rng.integers(-2, 3, n),
              np.where(rng.random(n) < 0.2, np.nan, rng.normal(size=n)),
              np.where(rng.random(n) < 0.3, -0.0, 0.0), rng.random((3, n)) > 0.5):
        got, want = numpy_c.count_nonzero(a), np.count_nonzero(a)
        assert got == want and type(got) is type(want)


@pytest.mark.parametrize("seed", range(20))
def test_clip_is_ndarray_clip_for_floats(seed: int) -> None:
    rng = np.random.default_rng(4406_50 + seed)
    n = int(rng.integers(1, 300))
    x = rng.normal(size=n) * 3.0
    x[rng.random(n) < 0.1] = np.nan
    x[rng.random(n) < 0.1] = -0.0
    lo, hi = float(rng.normal()), float(rng.normal()) + 1.0  # (hi may fall under lo: both say hi)
    cap = np.where(rng.random(n) < 0.5, hi, rng.normal(size=n))  # an array bound, as slow.py's
    for args in ((lo, hi), (0.0, cap), (-hi, hi)):
        want = x.clip(*args)
        got = numpy_c.clip(x, *args)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        a, b = x.copy(), x.copy()
        a.clip(*args, out=a)
        numpy_c.clip(b, *args, out=b)
        assert a.tobytes() == b.tobytes()


def test_step_census_counts_and_leaves_jobmonitor_as_it_was() -> None:
    # bench/step_census.py: the incident's first steps counted inside JobMonitor._evaluate;
    # the class is handed back unpatched.
    from bench import step_census
    from detector.steps.job import JobMonitor

    get, evaluate = JobMonitor.__getattribute__, JobMonitor._evaluate
    c = step_census.census(12000)
    assert JobMonitor.__getattribute__ is get and JobMonitor._evaluate is evaluate
    assert c["steps"] > 0 and c["messages"] > c["steps"]
    assert c["lines"]["job.py:_evaluate"] >= c["steps"]  # (its lines, not the census' own)
    assert not any(k.startswith("step_census.py") for k in c["lines"])
    kinds = {kind for kind, _ in c["slots"]}
    assert kinds == {"gather", "scatter"} and ("gather", "_base") in c["slots"]
    # (the step path calls count_nonzero without its wrapper: models.numpy_c)
    assert c["calls"]["numeric.py:count_nonzero"] < c["steps"] * 10
