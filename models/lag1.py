"""A job's lag-1 autocorrelation of its ranks' step scores, learnt online, and the scores
pre-whitened by it (n1run, round 30: real step times come in runs).

Real per-worker step times are autocorrelated: Alibaba PAI job 2's residuals have a lag-1
autocorrelation of 0.45-0.71 a worker (median 0.587), jobs 1 and 3 up to 0.82
(tests/test_noise29.py).  A CUSUM that takes such scores as independent alarms on runs the
noise makes by itself: one per ~7,800 healthy rank-steps at 0.587, none when independent.

If a score follows an AR(1), ``z_t = rho z_(t-1) + sqrt(1 - rho^2) e_t`` with ``e`` i.i.d. of
unit variance, its innovation ``e_t = (z_t - rho z_(t-1)) / sqrt(1 - rho^2)`` is what is new
at each step, and scoring ``e`` instead of ``z`` gives the CUSUM the independent steps it
assumes.  A sustained shift ``mu`` of ``z`` is ``mu / sqrt(1 - rho^2)`` of ``e`` on its
first step and ``mu sqrt((1 - rho) / (1 + rho))`` on each one after (at rho 0.6: 1.25 mu, then
0.5 mu); a chance excursion that decays back pays for its return (a negative innovation).

``rho`` is the job's, learnt from its healthy ranks (:func:`update`): the smoothed mean of
``z_t z_(t-1)`` over that of ``z_(t-1)^2`` -- a regression of each score on its last through
the origin, which stays unbiased for an AR(1) when the ranks are chosen by their past (the
caller leaves out those told slow or well into a run); a pair counts only when both scores are
within ``CLIP`` (an outlier step is no more the job's noise than a run is; it takes a few
thousandths off the estimate of a Gaussian AR(1): a correction a little short, never over).
What is used is the estimate less ``ON`` (:func:`in_force`): nothing under independent noise,
where the estimate wanders around zero by a few hundredths, and a correction that grows from
nothing as the runs do.  Shrunk so: PAI job 3's stragglers (1.3x after a ramp) were found 3-6
samples later than without it, and 11-14 samples later whitened at the full estimate.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> state, z = (0.0, 0.0, 0), rng.standard_normal(64)
>>> for _ in range(400):
...     new = 0.6 * z + 0.8 * rng.standard_normal(64)
...     state = update(state, new, z)
...     z = new
>>> round(rho_of(state), 1), round(in_force(state), 1)
(0.6, 0.4)
"""

from __future__ import annotations

import math

import numpy as np

from models.numpy_c import count_nonzero

CLIP = 3.0          # a score counts towards the estimate only when it and its last are within
ALPHA = 1.0 / 64.0  # the sums smoothed over ~64 steps (the first ones weighed alike)
MIN_STEPS = 32      # steps estimated before it is used ...
MIN_PAIRS = 512     # ... or this many pairs (steps x the job's ranks), over MIN_FEW steps
MIN_FEW = 8
ON = 0.2            # the estimate less this is used (under it: none) ...
MAX = 0.8           # ... the estimate taken at most this


def update(state: tuple[float, float, int], z: np.ndarray, prev: np.ndarray
           ) -> tuple[float, float, int]:
    """``state`` (smoothed mean of ``z_t z_(t-1)``, of ``z_(t-1)^2``, steps) after one step of
    the healthy ranks' scores ``z`` and their last ones ``prev`` (same order)."""
    keep = (np.abs(z) < CLIP) & (np.abs(prev) < CLIP)
    k = int(count_nonzero(keep))
    if k < 2:
        return state
    zk, pk = z[keep], prev[keep]
    xy, xx, n = state
    n += 1
    a = max(1.0 / n, ALPHA)
    xy += a * (float(np.dot(zk, pk)) / k - xy)
    xx += a * (float(np.dot(pk, pk)) / k - xx)
    return xy, xx, n


def rho_of(state: tuple[float, float, int]) -> float:
    """The estimate (0 before any step)."""
    xy, xx, _ = state
    return xy / xx if xx > 0.0 else 0.0


def in_force(state: tuple[float, float, int], ranks: int = 0) -> float:
    """The lag-1 the scores are whitened with: once ``MIN_STEPS`` steps were estimated -- or
    ``MIN_FEW`` steps of a job of ``ranks`` ranks, ``MIN_PAIRS`` pairs -- the estimate (at most
    ``MAX``) less ``ON``; else, and under ``ON``, 0.

    The estimate's spread under independent scores is about one over the root of its pairs:
    0.044 at ``MIN_PAIRS``, so ``ON`` is 4.5 of it and independent noise stays at 0 -- while a
    large job whose steps come in runs is whitened from its ~8th step after warm-up instead of
    its 32nd (blind21 N2: a 64-rank job's real 4-step run at +5 % at its step 26, the estimate
    0.58 from step 15, escalated at step 29, 13 steps before it was used).  A job of 16 ranks
    or fewer waits ``MIN_STEPS`` as before (PAI's jobs of 10 workers: unchanged).
    """
    if not known(state, ranks):
        return 0.0
    rho = rho_of(state)
    return min(rho, MAX) - ON if rho > ON else 0.0


def known(state: tuple[float, float, int], ranks: int = 0) -> bool:
    """Whether the estimate is used (:func:`in_force`): ``MIN_STEPS`` steps estimated, or
    ``MIN_FEW`` steps of a job of ``ranks`` ranks, ``MIN_PAIRS`` pairs.  Before, the job's runs
    are not known: neither that it has them nor that it has none."""
    n = state[2]
    return n >= MIN_STEPS or (n >= MIN_FEW and n * ranks >= MIN_PAIRS)


def mean_factor(rho: float, n: np.ndarray) -> np.ndarray:
    """How many times the variance of a mean of ``n`` steps of an AR(1) of lag-1 ``rho`` is that
    of ``n`` independent ones: ``n Var(mean) / Var(step) = 1 + 2 sum_(j<n) (1 - j/n) rho^j``, in
    closed form -- 1 at ``rho`` 0 or one step, towards ``(1 + rho) / (1 - rho)`` over long runs
    (``n`` over it: the run's effective steps).  A run's mean of correlated steps wanders that
    much more than the step-to-step spread says: at 0.95 a 17-step run's mean is worth 1.3
    independent steps, at 0.8 a 7-step one's 1.6, at 0.55 (PAI job 2) a 7-step one's 2.6.

    >>> [round(float(f), 2) for f in mean_factor(0.8, np.array([1, 7, 1000]))]
    [1.0, 4.48, 8.96]
    """
    if rho <= 0.0:
        return np.ones(np.shape(n))
    k = np.maximum(np.asarray(n, dtype=float), 1.0)
    return 1.0 + 2.0 * (rho / (1.0 - rho) - rho * (1.0 - rho ** k) / (k * (1.0 - rho) ** 2))


def whiten(z: np.ndarray, prev: np.ndarray, rho: float) -> np.ndarray:
    """Each score's innovation over its last at lag-1 ``rho`` (``z`` itself at 0)."""
    if rho == 0.0:
        return z
    return (z - rho * prev) / math.sqrt(1.0 - rho * rho)
