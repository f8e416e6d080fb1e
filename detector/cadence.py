"""A GPU's sampling grid: when its collector's next row is due, told to the correlator (issue 10).

A slow rank waits for its GPU's first sample taken after its slowdown began
(correlate.slow._rank_sample), reckoned from what the GPU's monitor told: its cadence, one gap
between two rows (detector.throttle.tells_interval), and the row it was told on, its phase.
A collector that samples each GPU every 30 s with a few seconds' jitter (dcgm-exporter's
default interval, each GPU queried at a time of its own) leaves both wrong: a gap of 27.84 s
rounds to a 28 s cadence, and a phase two polls old puts the next row 4 s early -- the wait
ended before the capped GPU's late row came, and its 12 % slow rank was escalated
slow_node/unknown 19-22 s after the slowdown, its power page 85 s in (revA45 F3).

The grid is ``[t0, n, phase, jitter_s]``: the row two before the one the cadence was first told
on (its two gaps alike told it), the intervals counted from it to ``phase``, the row last told,
and the largest deviation of a gap from the interval seen (a row's jitter against the one
before it: twice a collector's own jitter at most). A row off the grid by more than
``jitter_s`` and the correlator's own slack (:func:`slack_s`) is told again (:func:`retell`):
the interval as the mean gap since ``t0``, the phase that row, the jitter grown to this gap's.
A steady collector never falls off the grid, and nothing more is told (faultline's simulator;
dcgm-exporter without jitter). Below ``GRID_MIN_S`` the correlator waits a whole interval and a
quarter for a sample (correlate.slow._next_sample): no grid.

>>> grid = start(100.0, 28.0, 31.0)                # told 28 s on the row at 100
>>> retell(grid, 28.0, 127.5, 27.5) is None        # within 28 s's slack of the grid
True
>>> retell(grid, 28.0, 160.6, 33.1)                # 4.6 s off: the mean gap, the jitter
(29.9, 3.2)
>>> grid
[41.0, 4, 160.6, 3.2]
>>> retell(grid, 29.9, 190.0, 29.4) is None        # on the new grid
True
"""

from __future__ import annotations

from detector.throttle import MULTIPLE_LO, SAME_INTERVAL_HI

GRID_MIN_S = 5.0  # the shortest cadence a grid is kept for (correlate.slow._next_sample's)
MAX_JITTER_S = 60.0  # a told jitter's bound (a restored or forged one is held to it)
_T0, _N, _PHASE, _JITTER = 0, 1, 2, 3


def slack_s(interval: float) -> float:
    """The correlator's slack on a sample's time at ``interval`` (correlate.slow._next_sample):
    a second, or 5 % of a long interval."""
    return max(1.0, 0.05 * interval)


def start(ts: float, gap: float, prev: float) -> list:
    """The grid of a cadence told on the row at ``ts``, ``gap`` after the row before it and
    that one ``prev`` after its own (the two gaps alike that told it: their mean is the
    grid's first)."""
    return [float(ts - gap - prev), 2, float(ts), 0.0]


def band(interval: float, grid: list) -> tuple[float, float]:
    """The gaps a quiet row may have (GpuThermal.quiet; one outside goes to :func:`retell`):
    MULTIPLE_LO to twice the interval (a gap outside may tell a new one: throttle's
    tells_interval -- two short gaps in a row, an interval told at a multiple of the rows'),
    and -- with a grid -- within its jitter and slack of it, so that a row falling off the
    grid is looked at."""
    lo, hi = MULTIPLE_LO * interval, SAME_INTERVAL_HI * interval
    if not grid:
        return lo, hi
    b = grid[_JITTER] + slack_s(interval)
    return max(lo, interval - b), min(hi, interval + b)


def retell(grid: list, interval: float, ts: float, gap: float) -> tuple[float, float] | None:
    """The (interval, jitter) to tell again when the row at ``ts`` (``gap`` after the one before
    it) is off ``grid`` at the cadence ``interval`` told, the grid moved to it; None when it is
    on the grid (then nothing changes)."""
    if gap < MULTIPLE_LO * interval:
        return None  # (a new cadence, maybe: throttle's tells_interval -- no mean over a
        #              grid told at a multiple of the rows', which is no jitter)
    iv = float(round(interval))  # (as the correlator reads it: collectors set whole seconds)
    phase, jitter = grid[_PHASE], grid[_JITTER]
    k = max(1, round((ts - phase) / iv))
    if abs(ts - phase - k * iv) <= jitter + slack_s(iv):
        return None
    n = grid[_N] + k
    mean = (ts - grid[_T0]) / n
    m = max(1, round(gap / mean))
    jitter = min(MAX_JITTER_S, max(jitter, round(abs(gap - m * mean), 2)))
    grid[_N], grid[_PHASE], grid[_JITTER] = n, float(ts), jitter
    return round(mean, 2), jitter


def check_restored(grid: object) -> bool:
    """A restored grid has the shape :func:`start` and :func:`retell` give it."""
    if type(grid) is not list:
        return False
    if not grid:
        return True
    if len(grid) != 4 or type(grid[_N]) is not int or grid[_N] < 0:
        return False
    t0, phase, jitter = grid[_T0], grid[_PHASE], grid[_JITTER]
    return (all(type(x) is float for x in (t0, phase, jitter))
            and -1e18 < t0 <= phase < 1e18 and 0.0 <= jitter <= MAX_JITTER_S)
