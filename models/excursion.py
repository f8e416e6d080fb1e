"""How far a job's ranks wander over their peers at each duration: the spread of an n-step
mean of a rank's deviation, measured on the job's own steps (noise41, round 41: issue 10).

A run's mean is tested against its standard error.  Read from the step-to-step spread and
a lag-1 (models.lag1), that error holds for noise whose memory is one AR(1); real step
times carry slower parts too: a VLM replica's batches run video-heavy for tens of steps, its
stage-0 node x1.07 over its peers for 18 steps (blind31 F1; the job's lag-1 read 0.43, so its
18-step mean was read as of independent steps), and a stage's noise is not its job's.  What
the job does is measured instead: each rank's deviation smoothed at weights ``ALPHAS`` (an
exponentially weighted mean at weight ``a`` spreads on independent steps as an n-step mean of
``SPANS = (2 - a) / a`` steps does) and, per rank, the mean square of each smoothed value over
the job's steps (``VAR_ALPHA``; the first ones weighed alike) -- the variance-time curve of the
job's noise, as the Allan variance reads a clock's.  An n-step mean's spread is read off it
(:func:`sd_of_mean`) between the spans measured, log-log, and past them as independent steps'
(under the shortest span, 3 steps, that is over a persistent noise's: a run the step CUSUM
alarms on has lasted 4 steps at least).

Pure numpy; the state is two arrays a rank, ``len(ALPHAS)`` wide, and the job's step count.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> s, v = np.zeros((64, 4)), np.zeros((64, 4))
>>> x = np.zeros(64)
>>> for n in range(1, 801):   # AR(1), lag-1 0.9, spread 1 (true: 1, .94, .78)
...     x = 0.9 * x + np.sqrt(1 - 0.81) * rng.standard_normal(64)
...     s, v = update(s, v, x, n, np.ones(64, dtype=bool))
>>> [round(sd_of_mean(np.median(v, axis=0), 800, k), 2) for k in (1, 4, 16)]
[1.59, 0.89, 0.73]
>>> s, v = np.zeros((64, 4)), np.zeros((64, 4))
>>> for n in range(1, 801):   # independent steps: 1 / sqrt(n)
...     s, v = update(s, v, rng.standard_normal(64), n, np.ones(64, dtype=bool))
>>> [round(sd_of_mean(np.median(v, axis=0), 800, k), 2) for k in (1, 4, 16)]
[1.01, 0.5, 0.25]
"""

from __future__ import annotations

import math

import numpy as np

ALPHAS = np.array([0.5, 0.25, 0.125, 0.0625])  # each rank's deviation smoothed at these ...
SPANS = (2.0 - ALPHAS) / ALPHAS                 # ... as n-step means of 3, 7, 15, 31 steps
VAR_ALPHA = 0.01   # each smoothed value's mean square over the last ~200 steps
READY = 2.0        # a span read once the job has this many of it: the smoothed value's start
#                    from zero forgotten (its first span of steps is not learnt from)


def update(smooth: np.ndarray, var: np.ndarray, x: np.ndarray, n: int,
           learn: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``smooth`` and ``var`` (rows: ranks; columns: ``ALPHAS``) after a step of the ranks'
    deviations ``x``, the job's ``n``-th step measured (from 1); ``var`` learns on ranks
    ``learn`` only (None: all), each span once the job has had that many steps.  New arrays:
    the inputs are not changed."""
    smooth = smooth + ALPHAS * (x[:, None] - smooth)
    if n <= SPANS[0]:
        return smooth, var
    d = smooth * smooth
    d -= var
    d *= _STEADY if n >= _STEADY_N else _weights(n)
    if learn is not None:
        d *= learn[:, None]
    return smooth, var + d


def _weights(n: int) -> np.ndarray:
    """Each span's learning weight at the job's ``n``-th step: none before its span, then the
    mean of the steps since (the first ones weighed alike), then ``VAR_ALPHA``."""
    return np.array([0.0 if n <= k else max(VAR_ALPHA, 1.0 / (n - k)) for k in SPANS.tolist()])


_STEADY_N = int(SPANS[-1] + 1.0 / VAR_ALPHA) + 1  # (from this step every weight is VAR_ALPHA)
_STEADY = _weights(_STEADY_N)


def ready(n: int) -> np.ndarray:
    """Which spans the job's ``n`` steps measured can be read."""
    return n >= READY * SPANS


def sd_of_mean(var: np.ndarray, n: int, steps: int) -> float:
    """The spread of a ``steps``-step mean of a rank's deviation, from a row of ``var`` (a
    rank's, or its peers' median) after the job's ``n`` steps (0.0: no span measured yet).
    Between the spans measured it is interpolated on the log of the variance times the span
    (constant for independent steps), beyond them held there: the measured as independent."""
    on = ready(n)
    if not on.any():
        return 0.0
    level = np.log(np.maximum(var[on], 1e-12) * SPANS[on])
    return math.sqrt(math.exp(float(np.interp(math.log(max(steps, 1)), np.log(SPANS[on]),
                                              level))) / max(steps, 1))
