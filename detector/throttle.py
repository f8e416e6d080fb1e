"""DCGM clock-event bits, the cause they name, and a sampling interval worth telling.

The vocabulary of the thermal monitor (detector.thermal) and of the NIC monitor's interval
(detector.network), kept apart from either's state machines.
"""

from __future__ import annotations

GPU_IDLE = 0x1  # DCGM's "nothing is running": the clock is parked, not held down
SW_POWER_CAP, HW_SLOWDOWN, SW_THERMAL, HW_THERMAL, HW_POWER_BRAKE = 0x4, 0x8, 0x20, 0x40, 0x80
NO_REFERENCE = float("-inf")  # a GPU's temperature above a node median not known
PAUSE_S = 300.0  # a gap this long is a pause in the telemetry, never a sampling interval
DEEP_CAP = 1 << 32  # (GpuThermal._seen only: a SW cap told at cap_clock_drop or deeper)
SLOWDOWN_BITS = SW_POWER_CAP | HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | HW_POWER_BRAKE
QUIET_BITS = SLOWDOWN_BITS | GPU_IDLE  # (GpuThermal.quiet: idle changing is the general path's)


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


def tells_interval(gap: float, told: float, prev: float) -> bool:
    """Whether a gap between samples is a sampling interval to tell the correlator: not the
    interval told last, and two gaps alike (a rate, not a pause).  The first test first: it
    is the one that fails on a steadily sampled GPU (and the one GpuThermal.quiet makes)."""
    return (not (SAME_INTERVAL_LO * told <= gap <= SAME_INTERVAL_HI * told)
            and 0.8 * prev <= gap <= 1.25 * prev and gap < PAUSE_S)

