"""svc39: a restored snapshot's GPU thermal state and its node's, held to the live bounds.

state38 held NodeTemps' readings (``back``, ``noise``, ``power``, ``times``, GPU keys) to what the
live code keeps; GpuThermal's fields and NodeTemps' onsets, ``fits``, ``calm``, ``pending``,
``steady_wait``, ``peers`` kept type-only checks (``is_real``: any number but NaN), so a forged
snapshot's +inf, 1e308 or negative restored as it was and silently changed what pages: a
``_last_ts`` of +inf took every later sample as late (the GPU blind), a ``_bad`` of -10^9 held
a throttle a billion samples, an infinite clock baseline read every clock as a full drop, a
DecayingCount's zero half-life divided by zero on the GPU's next capped sample.  Each field is
now held to what the live code keeps (its docstring in detector/thermal.py, node_temps.py); a
snapshot that fails is refused ``malformed`` (the worker starts cold), never restored.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from river import stats

from detector.engine import Engine
from detector.events import INDEX_LIMIT
from detector.statecodec import SnapshotRefused
from detector.testing import T0, feed, thermal
from models.decay import DecayingCount

NODE = "node-000"
HOT, CAPPED = 3, 5


def _samples(start: int, stop: int) -> list[Any]:
    """Eight GPUs at 5 s flickering half a degree about 65 C, 600 W.  GPU 3 climbs from 100 s
    on (a cooling fault) and throttles thermally (0x40, clock -8 %) from 180 s; GPU 5 runs
    under a deep SW power cap (0x4, clock -15 %, 700 W) from 150 s: both paged."""
    out = []
    for k in range(start, stop, 5):
        for g in range(8):
            temp = 65.0 + (0.5 if (k // 5 + g) % 2 else 0.0)
            clock, throttle, power = 1980.0, 0, 600.0
            if g == HOT and k > 100:
                temp += min(25.0, (k - 100) * 0.25)
                if k >= 180:
                    clock, throttle = 1820.0, 0x40
            if g == CAPPED and k >= 150:
                clock, throttle, power = 1683.0, 0x4, 700.0
            out.append(thermal(T0 + k, NODE, g, temp_c=temp, clock_mhz=clock,
                               throttle=throttle, power_w=power))
    return out


CUT = 200  # mid-run: GPU 3 climbing and throttling, GPU 5 capped, neither paged yet


def _warm_engine() -> Engine:
    eng = Engine()
    feed(eng, _samples(0, CUT), finish=False)
    hot = eng.monitors._thermal[(NODE, HOT)]
    assert hot._bad > 0 and hot._excess > 0.0 and hot._interval_s == 5.0  # (live fields)
    assert eng.monitors._thermal[(NODE, CAPPED)]._heavy > 0
    temps = eng.monitors._node_temps[NODE]
    assert temps.calm and temps.capping and temps.sw_cap and temps.loaded and temps.heating
    return eng


def _refused(eng: Engine, obj: Any, field: str, value: Any) -> None:
    """``eng``'s snapshot with ``obj``'s ``field`` forged to ``value`` is refused, naming it."""
    setattr(obj, field, value)
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed"
    assert f"{type(obj).__name__}.{field}" in str(exc.value)


def _ewmean(x: float) -> stats.EWMean:
    m = stats.EWMean(fading_factor=0.05)
    m.update(x)
    return m


def _decaying(half_life_s: float, value: float, ts: float) -> DecayingCount:
    d = DecayingCount(half_life_s)
    d._value, d._ts = value, ts
    return d


BIG = 1e308
INF = math.inf
GPU_FORGED = [
    ("_last_ts", INF), ("_run_onset", INF), ("_run_onset", -INF), ("_hot_onset", INF),
    ("_cap_onset", -INF), ("_heavy_onset", INF),
    ("_bad", -10 ** 9), ("_good", -1), ("_hot", -1), ("unread", -5), ("_bad", 1 << 63),
    ("_heavy", 1 << 63), ("_heat", -(1 << 63)),
    ("_interval_s", -5.0), ("_interval_s", INF), ("_interval_s", 400.0),
    ("_seen", -1), ("_seen", 1 << 40), ("_seen", 0x1),
    ("_prev_gap", -1.0), ("_excess", INF), ("_excess", BIG), ("_excess", -500.0),
    ("_warm", 2), ("_warm", -1), ("_quiet_bits", 7), ("_quiet_bits", 0x4),
    ("_clock_told", -1.0), ("_clock_told", INF), ("_clock_told", 1e6), ("_cap_clock", INF),
    ("_cap_clock", -2000.0),
    ("_clock", _ewmean(INF)), ("_clock", _ewmean(-1980.0)), ("_clock", _ewmean(BIG)),
    ("_cap", _decaying(0.0, 1.0, T0)), ("_cap", _decaying(-120.0, 1.0, T0)),
    ("_cap", _decaying(120.0, -1.0, T0)), ("_cap", _decaying(120.0, INF, T0)),
    ("_cap", _decaying(120.0, 1.0, INF)),
    ("_recur_wait", [T0, 500.0, 64.0]), ("_recur_wait", [T0, 80.0, 1e9]),
    # (refused before as well: NaN, a wrong type, a reasons word not whole)
    ("_last_ts", math.nan), ("_bad", 1.0), ("_recur_wait", [T0, 80.0, 64.5]),
]


@pytest.mark.parametrize(("field", "value"), GPU_FORGED, ids=lambda v: repr(v)[:28])
def test_a_forged_gpu_thermal_field_is_refused(field: str, value: Any) -> None:
    # 42 of 45 fail before (all but the last three): is_real / is_int took any non-NaN number,
    # the clock baseline and the DecayingCount their type alone, so these restored as they were.
    eng = _warm_engine()
    _refused(eng, eng.monitors._thermal[(NODE, HOT)], field, value)


def _pend(**k: Any) -> dict[int, list[Any]]:
    row: dict[str, Any] = {"ts": T0, "temp": 80.0, "excess": 2.0, "state": 0, "warm": 0}
    row.update(k)
    return {0: list(row.values())}


def _wait(**k: Any) -> dict[int, list[Any]]:
    row: dict[str, Any] = {"ts": T0, "since": T0 - 2.5, "state": 0.0, "reasons": 64.0,
                           "drop": 0.08, "temp": 80.0}
    row.update(k)
    return {0: list(row.values())}


def _calm(**k: Any) -> dict[int, list[Any]]:
    row: dict[str, Any] = {"power": 600.0, "start": T0, "ts_a": T0, "temp_a": 65.0,
                           "ts_b": T0, "temp_b": 65.0, "heat": 600.0}
    row.update(k)
    return {0: list(row.values())}


NODE_FORGED = [
    ("median_c", BIG), ("median_c", -INF), ("median_c", -300.0), ("median_ts", INF),
    ("fits", {0: BIG}), ("fits", {0: -INF}), ("fits", {INDEX_LIMIT: 65.0}),
    ("capping", {0: INF}), ("capping", {-1: T0}), ("sw_cap", {0: INF}), ("sw_cap", {0: -INF}),
    ("loaded", {0: INF}), ("heating", {0: INF}), ("heating", {1 << 40: T0}),
    ("cap_drop", {0: 2.0}), ("cap_drop", {0: -INF}), ("cap_depth", INF), ("cap_depth", 5.0),
    ("cap_busy", -1), ("seen_count", -3),
    ("peers", [T0 + 2.0, T0 + 1.0]), ("peers", [INF]), ("peers_ts", INF),
    ("brake_seen_ts", INF), ("brake_poll", -INF),
    ("cap_clocks", {0: INF}), ("cap_clocks", {0: -1.0}), ("cap_clocks", {0: 1e6}),
    ("pending", _pend(temp=500.0)), ("pending", _pend(excess=BIG)), ("pending", _pend(state=7)),
    ("pending", _pend(ts=INF)), ("pending", _pend(warm=3)),
    ("pending", {INDEX_LIMIT: _pend()[0]}),
    ("steady_wait", _wait(state=5.0)), ("steady_wait", _wait(reasons=1e9)),
    ("steady_wait", _wait(since=INF)), ("steady_wait", _wait(drop=7.5)),
    ("steady_wait", _wait(temp=-300.0)), ("steady_wait", {-2: _wait()[0]}),
    ("calm", _calm(power=INF)), ("calm", _calm(temp_a=500.0)), ("calm", _calm(heat=-1.0)),
    ("calm", _calm(start=-INF)), ("calm", {INDEX_LIMIT: _calm()[0]}),
    # (refused before as well: a short entry)
    ("calm", {0: [600.0]}),
]


@pytest.mark.parametrize(("field", "value"), NODE_FORGED, ids=lambda v: repr(v)[:28])
def test_a_forged_node_thermal_field_is_refused(field: str, value: Any) -> None:
    # 45 of 46 fail before (all but the last): is_real / is_real_map / a length took any
    # non-NaN number and any int GPU, so these restored as they were.
    eng = _warm_engine()
    _refused(eng, eng.monitors._node_temps[NODE], field, value)


@pytest.mark.parametrize("cut", [60, 120, 175, CUT, 260])
def test_a_real_snapshot_restores_and_pages_the_same(cut: int) -> None:
    straight = feed(Engine(), _samples(0, 400))
    firing = {(a.cause, a.scope.gpu) for a in straight if a.status == "firing"}
    assert {("thermal", HOT), ("power", CAPPED)} <= firing
    eng = Engine()
    feed(eng, _samples(0, cut), finish=False)
    back = Engine.restore(eng.snapshot())
    got = feed(back, _samples(cut, 400))
    before = feed(Engine(), _samples(0, cut), finish=False)
    assert before + got == straight
