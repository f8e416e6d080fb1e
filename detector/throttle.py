"""DCGM clock-event bits, the cause they name, and a sampling interval worth telling.

The vocabulary of the thermal monitor (detector.thermal) and of the NIC monitor's interval
(detector.network), kept apart from either's state machines.
"""

from __future__ import annotations

from detector.alerts import Scope
from detector.events import ThermalSample
from detector.findings import Finding

GPU_IDLE = 0x1  # DCGM's "nothing is running": the clock is parked, not held down
# NVML's applications clocks setting: the clock held at the application clocks a tool or a
# power profile set (not among DESIGN's reasons: a contract remark).  Not a slowdown reason
# (the clock is where it was told to be), but no free clock either.
APP_CLOCKS = 0x2
SW_POWER_CAP, HW_SLOWDOWN, SW_THERMAL, HW_THERMAL, HW_POWER_BRAKE = 0x4, 0x8, 0x20, 0x40, 0x80
NO_REFERENCE = float("-inf")  # a GPU's temperature above a node median not known
PAUSE_S = 300.0  # a gap this long is a pause in the telemetry, never a sampling interval
DEEP_CAP = 1 << 32  # (GpuThermal._seen only: a SW cap told at cap_clock_drop or deeper)
SLOWDOWN_BITS = SW_POWER_CAP | HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | HW_POWER_BRAKE
QUIET_BITS = SLOWDOWN_BITS | GPU_IDLE | APP_CLOCKS  # (GpuThermal.quiet: idle or application
#   clocks changing is the general path's)



def throttle_cause(bits: int, gpu_temp_c: float | None, hot_c: float) -> str:
    """The contract cause named by a clock-event bitmask.

    >>> throttle_cause(0x40, 70.0, 85.0), throttle_cause(0x80, 70.0, 85.0)
    ('thermal', 'power')
    >>> throttle_cause(0x8, 90.0, 85.0), throttle_cause(0x8, 60.0, 85.0)
    ('thermal', 'power')
    """
    if bits & (SW_THERMAL | HW_THERMAL):
        return "thermal"
    if bits & (SW_POWER_CAP | HW_POWER_BRAKE):
        return "power"
    return "thermal" if gpu_temp_c is not None and gpu_temp_c >= hot_c else "power"


# A gap between these multiples of the interval told last is that interval (jitter, a
# sample missed), never a new one to tell.
SAME_INTERVAL_LO, SAME_INTERVAL_HI = 0.5, 2.0
# ... but for a GPU's rows two gaps alike at this share of it or less are the rows' own: the
# interval told was a multiple of theirs, told from gaps over rows lost at the start (wait46's
# flaw: 20 s told for 10 s rows, then re-told on the grid as 16.67 s +- 6.67 s, every wait of
# the node that much longer -- a silent slowdown escalated 8.6-23.4 s after onset, not 3-5 s).
# No collector's jitter makes two gaps in a row this short: a row +-j s off its grid makes a
# gap 2j short at most, and two need 4j > 0.8 of the interval (j 30 % of it).
MULTIPLE_LO = 0.75


def tells_interval(gap: float, told: float, prev: float,
                   lo: float = SAME_INTERVAL_LO) -> bool:
    """Whether a gap between samples is a sampling interval to tell the correlator: not the
    interval told last (``lo`` to SAME_INTERVAL_HI times it), and two gaps alike (a rate, not
    a pause).  The first test first: it is the one that fails on a steadily sampled GPU (and
    the one GpuThermal.quiet makes).

    >>> tells_interval(10.0, 20.0, 20.0), tells_interval(10.0, 20.0, 10.0)
    (False, False)
    >>> tells_interval(10.0, 20.0, 10.0, MULTIPLE_LO)
    True
    """
    return (not (lo * told <= gap <= SAME_INTERVAL_HI * told)
            and 0.8 * prev <= gap <= 1.25 * prev and gap < PAUSE_S)



# A busy GPU's clock with no clock-event reason is the clock it was told to run at: its
# boost clock, unless application or locked clocks hold it lower (``nvidia-smi -lgc`` left
# set across a driver reload: blind10 K5, 1395 MHz with no reason bit beside peers at 1973).
# Told to the correlator (``sm_clock``, evidence) when a GPU's general path first sees it
# and again when it moves this share: a slow rank's page compares it with its job's peers'.
# (The quiet path never tells: a clock changing with no reason and no load change does not
# happen on its own; a reload passes through idle.)
CLOCK_RETELL = 0.05


def tell_clock(clock: float, told: float) -> float:
    """The busy, reasonless clock to tell now (``told``: the last told, 0 none), or 0.

    >>> tell_clock(1980.0, 0.0), tell_clock(1975.0, 1980.0), tell_clock(1395.0, 1980.0)
    (1980.0, 0.0, 1395.0)
    """
    if clock <= 0.0 or (told > 0.0 and abs(clock - told) < CLOCK_RETELL * told):
        return 0.0
    return clock


def clock_finding(s: ThermalSample, scope: Scope) -> Finding:
    """The ``sm_clock`` evidence finding of a busy GPU's sample with no clock-event reason."""
    return Finding(s.ts, s.ts, "sm_clock", "slow_node", "unknown", scope, True, False, 0.0,
                   {"sm_clock_mhz": s.sm_clock_mhz, "power_w": s.power_w}, None, s.tenant,
                   s.cluster)


# A power brake's burst lasts seconds (a VRM's 3-8 s, a PSU's 2-14 s: blind2, 12, 14, 21,
# 33 drew them so): a poll sees a burst in about BRAKE_BURST_S / interval of its chances,
# so at intervals past it one burst seen stands for interval / BRAKE_BURST_S bursts.
BRAKE_BURST_S = 10.0
BRAKES_SEEN_MIN = 2  # one burst seen is no recurrence, at any interval


def brake_recurs(polls: list[float], ts: float, interval_s: float, samples: int,
                 window_s: float) -> bool:
    """Whether a GPU's own power brake recurs: the polls on which it braked alone (``polls``,
    oldest first; its mates' samples of each poll in and none braking) within ``window_s``
    of ``ts`` stand for ``samples`` bursts or more, counted against the poll's odds of
    seeing one (BRAKE_BURST_S), and are BRAKES_SEEN_MIN or more.

    DESIGN: a never-routine reason sustained past a stated limit is a recommendation on its
    own.  A brake in bursts shorter than the interval never holds ``samples`` polls in a row
    (blind33 F4: a VRM braking one GPU 3-8 s every 15-40 s, clock x0.5, the TP group's steps
    x2 -- never paged in 4 of 8 logs); seen on separate polls it recurs.  At 10 s three
    bursts, at 15 s or slower two (each seen one stands for the bursts between polls).

    >>> brake_recurs([0.0, 30.0], 30.0, 10.0, 3, 300.0)
    False
    >>> brake_recurs([0.0, 30.0, 60.0], 60.0, 10.0, 3, 300.0)
    True
    >>> brake_recurs([0.0, 90.0], 90.0, 30.0, 3, 300.0), brake_recurs([0.0], 0.0, 30.0, 3, 300.0)
    (True, False)
    >>> brake_recurs([0.0, 30.0, 400.0], 400.0, 10.0, 3, 300.0)  # (the first two too old)
    False
    """
    seen = sum(1 for t in polls if ts - t <= window_s)
    return seen >= BRAKES_SEEN_MIN and seen * max(1.0, interval_s / BRAKE_BURST_S) >= samples
