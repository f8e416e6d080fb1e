"""t1fix34 (round 34): therm34's recurring-burst rule alone (blind24 T1), with revB34 F3's
restore checks.

T1: an inference server's GPU (no job, so no slow rank and no impact) whose die heats too fast
throttles (0x20, its clock cut) in its bursts only -- never ``throttle_samples`` samples in a
row -- and was never paged.  DESIGN: a never-routine reason sustained past a stated limit is a
recommendation on its own.  The stated limit: ``throttle_samples`` samples with a thermal
reason and the clock down within ``brake_repeat_s`` (dcgm-exporter's 5-minute window for clock
events, as for the node's brake), each with the GPU half ``hot_delta_c`` or more above its
node's median and none of its mates throttling (GpuThermal._recurs).  therm34's other change
(the heat hold keyed on the mates' rise) is not here: revB34 F1.

F3 (revB34): the rule's state restored from a snapshot was checked field by field with
``is_real`` only -- a ``_recur_wait`` of infinities restored, and the GPU's next sample raised
OverflowError in ``_recurs``; a ``_recur`` of any length, or ``_recurred`` with no ``_recur``,
restored too.  Each is refused now (Monitors.check_restored -> GpuThermal.recur_valid).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import pytest

from detector.alerts import ISOLATION, Alert
from detector.engine import Engine
from detector.statecodec import SnapshotRefused
from detector.testing import T0, feed, thermal
from detector.thermal import GpuThermal
from detector.thresholds import Thresholds

CLOCK = 1410.0  # an A100's


def firing(alerts: list[Alert]) -> list[tuple[str, str, str, str]]:
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


# -- T1: a jobless GPU's thermal slowdown recurring in bursts ---------------------------------


def inference(*, bursts: tuple[int, ...] = (), hot_gpu: int = 2, polls: int = 26,
              throttle_bits: int = 0x20, every_gpu_throttles: bool = False,
              hot_by_c: float = 20.0, cap_at_peaks: bool = False) -> list:
    """An inference server node (gn018, 8 A100s, no job, no steps) at 30 s: every GPU bursts
    together (350 W, 60 C) on every third poll and idles between (110 W, 45 C).  GPU
    ``hot_gpu``'s die heats too fast: ``hot_by_c`` over its mates in their bursts, 5 C between
    (never ``hot`` three samples in a row), and on the polls of ``bursts`` -- its own bursts,
    with the node's or between them -- it shows ``throttle_bits`` with its clock cut to
    810-1290 MHz, 8 C over its idle mates (``every_gpu_throttles``: the node's GPUs all do,
    equally warm: its cooling).  ``cap_at_peaks``: every GPU at its power cap (0x4) in the
    node's bursts, its clock 3 % down."""
    out: list = []
    for k in range(polls):
        t = T0 + k * 30.0
        burst = k % 3 == 2
        for g in range(8):
            hot = g == hot_gpu and not every_gpu_throttles
            throttling = k in bursts and (hot or every_gpu_throttles)
            temp = (60.0 if burst else 45.0) + 0.3 * g
            if hot:
                temp += hot_by_c if burst else 8.0 if throttling else 5.0
            bits = throttle_bits if throttling else 0x4 if cap_at_peaks and burst else 0
            clock = (810.0, 1125.0, 1290.0)[k % 3] if throttling else (
                CLOCK * 0.97 if bits == 0x4 else CLOCK)
            out.append(thermal(t + 0.02 * ((g + k) % 8), "gn018", g, temp_c=temp,
                               clock_mhz=clock, throttle=bits,
                               power_w=350.0 if burst or throttling and hot else 110.0))
    out.sort(key=lambda e: e.ts)
    return out


T1_BURSTS = (2, 3, 9, 16, 17, 21, 24, 25)  # the reproducer's polls at 0x20
GPU2 = (ISOLATION, "slow_node", "thermal", "gpu:gn018/2")


def test_a_jobless_gpu_throttling_thermally_in_bursts_hot_against_its_mates_is_paged():
    # blind24 T1: never paged on main (no slow rank, never three samples in a row).
    assert firing(feed(Engine(), inference(bursts=T1_BURSTS), finish=False)) == [GPU2]


def test_the_recurring_page_names_its_rule_and_is_paged_by_the_third_burst_in_5_min():
    alerts = feed(Engine(), inference(bursts=T1_BURSTS), finish=False)
    page = alerts[0]
    assert "recurring" in page.evidence["recommended_because"]
    assert page.cause == "thermal" and page.evidence["signals"][0]["throttle_reasons"] == "0x20"
    # bursts on polls 2, 3 and 9 (within 300 s); poll 9's sample came before most of its
    # poll's: judged on the GPU's next sample (poll 10), against that poll's median
    assert page.detected_ts <= T0 + 10 * 30.0 + 1.0


def test_the_recurring_page_holds_between_bursts():
    # resolved only once the GPU has not throttled for brake_repeat_s -- no page per burst
    alerts = feed(Engine(), inference(bursts=T1_BURSTS, polls=60), finish=False)
    assert firing(alerts) == [GPU2]
    resolved = [a for a in alerts if a.status == "resolved"]
    assert all(a.detected_ts > T0 + 25 * 30.0 + Thresholds().brake_repeat_s for a in resolved)


def test_bursts_further_apart_than_the_window_page_nobody():
    assert firing(feed(Engine(), inference(bursts=(2, 13, 24)), finish=False)) == []


def test_a_jobless_gpu_with_one_thermal_sample_pages_nobody():
    assert firing(feed(Engine(), inference(bursts=(9,)), finish=False)) == []


def test_inference_bursts_at_the_power_cap_page_nobody():
    # blind24 G4: 0x4 at the peaks on every GPU is routine
    assert firing(feed(Engine(), inference(cap_at_peaks=True), finish=False)) == []


def test_a_node_whose_gpus_all_throttle_in_bursts_is_no_gpu_page():
    # its cooling (all equally warm, all throttling together): no GPU's own recurring fault
    alerts = feed(Engine(), inference(bursts=T1_BURSTS, every_gpu_throttles=True),
                  finish=False)
    assert all(a.scope.level != "gpu" for a in alerts if a.status == "firing")


def test_a_gpu_throttling_in_bursts_warm_with_its_mates_is_not_counted():
    # 4 C over its mates in their bursts: a GPU near its slowdown point with the rest
    alerts = feed(Engine(), inference(bursts=(2, 5, 8, 11, 14), hot_by_c=4.0), finish=False)
    assert firing(alerts) == []


# -- F3: the rule's state checked on restore --------------------------------------------------

_EVENTS = inference(bursts=T1_BURSTS, polls=60)
_CUT = 9 * 8 + 4  # to poll 9's GPU 2 (its fourth sample: before most of its poll's, waiting)


@functools.cache
def _blob() -> bytes:
    eng = Engine()
    feed(eng, _EVENTS[:_CUT], finish=False)
    return eng.snapshot()


def _gpu(eng: Engine) -> GpuThermal:
    return eng.monitors._thermal[("gn018", 2)]


def test_the_snapshot_is_taken_mid_rule_and_restores_to_the_same_page():
    eng = Engine.restore(_blob())
    m = _gpu(eng)
    assert len(m._recur) == 2 and len(m._recur_wait) == 3  # (polls 2, 3 counted; 9 waits)
    alerts = feed(eng, _EVENTS[_CUT:], finish=False)
    assert firing(alerts) == [GPU2]


def _activated(m: GpuThermal) -> None:
    m._recurred = True
    m._active = True
    m._recur = []


def _long(m: GpuThermal) -> list:
    return [float(i) for i in range(Thresholds().throttle_samples + 1)]


FORGED = [  # (field, value or a function of the monitor)
    ("_recur_wait", lambda m: [m._recur_wait[0], math.inf, math.inf]),  # (the OverflowError)
    ("_recur_wait", lambda m: [math.inf, 70.0, 32.0]),
    ("_recur_wait", lambda m: [m._recur_wait[0], 70.0, 0.5]),  # (reasons: a bit mask)
    ("_recur_wait", lambda m: [m._recur_wait[0], 70.0, -32.0]),
    ("_recur_wait", lambda m: [m._recur_wait[0], math.nan, 32.0]),
    ("_recur", _long),  # (more than throttle_samples: it keeps that many)
    ("_recur", lambda m: [math.inf] * len(m._recur)),
    ("_recur", lambda m: [-math.inf]),
    ("_recur", lambda m: list(reversed(m._recur))),  # (in order of time)
    ("_recurred", _activated),  # (raised for recurring with nothing recurred)
    ("_recurred", lambda m: True),  # (raised for recurring while not raised)
]


@pytest.mark.parametrize(("field", "value"), FORGED,
                         ids=[f"{f}-{i}" for i, (f, _) in enumerate(FORGED)])
def test_a_forged_recurring_field_is_refused(field: str, value: Any) -> None:
    # therm34: each restored (inf in _recur_wait then raised OverflowError at the GPU's next
    # sample: revB34 F3)
    eng = Engine.restore(_blob())
    m = _gpu(eng)
    if field == "_recurred" and value is _activated:
        _activated(m)
    else:
        setattr(m, field, value(m))
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed" and field in str(exc.value)


def test_a_restored_gpu_with_no_recurring_state_is_sound():
    # (a snapshot of main before the rule holds none of it: empty lists, not raised)
    eng = Engine.restore(_blob())
    m = _gpu(eng)
    m._recur, m._recur_wait, m._recurred = [], [], False
    eng2 = Engine.restore(eng.snapshot())
    assert _gpu(eng2)._recur == [] and _gpu(eng2)._recurred is False
