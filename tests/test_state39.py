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

from detector.alerts import Alert
from detector.engine import Engine
from detector.events import INDEX_LIMIT
from detector.statecodec import SnapshotRefused
from detector.testing import T0, ecc, feed, healthy_job, nic, thermal
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
    """``eng``'s snapshot with ``obj``'s ``field`` forged to ``value`` is refused, naming it
    (a NIC port by its registered name, NicPort; the correlator as its partition names it)."""
    setattr(obj, field, value)
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed"
    name = {"_Port": "NicPort", "Correlator": "correlator"}.get(type(obj).__name__,
                                                                type(obj).__name__)
    assert f"{name}.{field}" in str(exc.value)


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


# -- a NIC port (detector.network._Port): no field was checked but its CNP ones ---------------


def _nic_samples(start: int, stop: int) -> list[Any]:
    """Two ports of node-000 and two of node-001 at 1 s, busy at ~100 Gbit/s each; node-000's
    mlx5_1 counts symbol errors in bursts from 60 s on (a failing link: paged)."""
    out = []
    for k in range(start, stop):
        for node in ("node-000", "node-001"):
            for port in ("mlx5_0", "mlx5_1"):
                bad = node == "node-000" and port == "mlx5_1" and k >= 60
                out.append(nic(T0 + k, node, port, tx=k * 12_500_000_000,
                               rx=k * 12_500_000_000, errors=(k - 59) * 500 if bad else 0))
    return out


NIC_CUT = 70


def _warm_nic_engine() -> tuple[Engine, Any]:
    eng = Engine()
    feed(eng, _nic_samples(0, NIC_CUT), finish=False)
    port = eng.monitors._nics["node-000"]._ports[("mlx5_1", 1)]
    assert port.last_ts > T0 and port.interval_s == 1.0 and port.told_s == 1.0  # (live)
    return eng, port


NIC_FORGED = [
    ("last_ts", "x"), ("last_ts", INF), ("low_onset", INF), ("err_onset", "s"),
    ("last_flap_ts", INF), ("idle_ts", math.nan), ("held_ts", -INF), ("learn_ts", INF),
    ("rate_ts", INF), ("rate_since", -INF), ("cong_ts", INF),
    ("low", -10 ** 9), ("ok", 1.5), ("rate_low", -1), ("cong_n", -3),
    ("gbps", INF), ("gbps", -1.0), ("interval_s", math.nan), ("interval_s", -1.0),
    ("peer", 2.0), ("peer", -0.5), ("rate", 1e6), ("held", INF), ("wait_mean", -1.0),
    ("cnp_mean", INF), ("np_s", -2.0), ("rp_s", INF), ("told_s", INF), ("told_hi", INF),
    ("told_lo", 7.0), ("down", 3), ("busy", "yes"), ("vote", 5), ("role", 2),
    ("family", 7), ("family", "x" * 300), ("active", {1}), ("active", ["nic_errors"]),
    ("name", "mlx5_1"), ("cnp_run", [0, INF, 0, 0.0]), ("cnp_run", [0.5, 0.0, 0, 0.0]),
    ("errors", _decaying(0.0, 1.0, T0)), ("flaps", _decaying(60.0, -1.0, T0)),
    ("usual_errors", _decaying(60.0, 1.0, INF)), ("counters", None),
    # (refused before as well: the CNP fields of their shapes, revB32 5)
    ("cnp_run", [0, 0.0]),
]


@pytest.mark.parametrize(("field", "value"), NIC_FORGED, ids=lambda v: repr(v)[:28])
def test_a_forged_nic_port_field_is_refused(field: str, value: Any) -> None:
    # 46 fail before (the last on its message alone: refused as "a port's CNP fields"): only
    # np_s, rp_s and cnp_run were checked, for their types -- a string last_ts restored and
    # failed the node's every later sample (TypeError).
    eng, port = _warm_nic_engine()
    _refused(eng, port, field, value)


@pytest.mark.parametrize(("field", "at", "value"), [
    ("_last", 0, -5), ("_last", 0, 1 << 63), ("_last", 0, "7"), ("_last", None, [0]),
    ("_last_ts", None, INF), ("resets", None, -1), ("blanks", None, 1.0)])
def test_a_forged_counter_baseline_is_refused(field: str, at: int | None, value: Any) -> None:
    # 7 fail before: a port's (and a GPU's) CounterDeltas restored as it was.
    eng, port = _warm_nic_engine()
    counters = port.counters
    if at is None:
        setattr(counters, field, value)
    else:
        getattr(counters, field)[at] = value
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed" and "NicPort.counters" in str(exc.value)


@pytest.mark.parametrize("cut", [30, 62, NIC_CUT, 90])
def test_a_real_snapshot_of_nic_ports_restores_and_pages_the_same(cut: int) -> None:
    straight = feed(Engine(), _nic_samples(0, 150))
    assert any(a.status == "firing" and a.scope.key == "nic:node-000/mlx5_1:1"
               for a in straight)
    eng = Engine()
    before = feed(eng, _nic_samples(0, cut), finish=False)
    got = feed(Engine.restore(eng.snapshot()), _nic_samples(cut, 150))
    assert before + got == straight


# -- a GPU's hardware state (detector.gpu_health.GpuHealth): no field was checked -------------


def _ecc_samples(start: int, stop: int) -> list[Any]:
    """Two GPUs of node-000 at 5 s: GPU 1 counts corrected errors from 20 s on, an
    application XID 13 at 40 s and XID 79 (fallen off the bus: paged) at 120 s."""
    out = []
    for k in range(start, stop, 5):
        for g in (0, 1):
            xid = (13 if k == 40 else 79 if k == 120 else None) if g == 1 else None
            out.append(ecc(T0 + k, NODE, g, sbe=max(0, k - 20) * 3 if g == 1 else 0,
                           pcie=k // 10 if g == 1 else 0, xid=xid))
    return out


def _warm_ecc_engine() -> tuple[Engine, Any]:
    eng = Engine()
    feed(eng, _ecc_samples(0, 100), finish=False)
    health = eng.monitors._ecc[(NODE, 1)]
    assert health._xids and health._sbe_ts > T0  # (the fields are live)
    return eng, health


GPU_HEALTH_FORGED = [
    ("_recovery", "reboot_the_rack"), ("_recovery", None), ("_retired_sbe", -1),
    ("_retired_sbe", 2.0), ("_xids", [(INF, 13)]), ("_xids", [(T0, -1)]),
    ("_xids", [(T0, 13)] * 9), ("_xids", [[T0, 13]]), ("_last_error", {"sbe": INF}),
    ("_last_error", {1: T0}), ("_resets_since", {79: -1}), ("_resets_since", {"79": 1}),
    ("_active", ["sbe_burst"]), ("_active", {7}), ("_nvl_replay_ts", INF),
    ("_sbe_ts", "now"), ("_faulted", 1), ("_sbe_climbed", None), ("_sbe_rise", 3.0),
    ("_sbe", _decaying(0.0, 1.0, T0)), ("_pcie", _decaying(60.0, INF, T0)),
    ("_pcie_long", _decaying(60.0, 1.0, INF)), ("_counters", None),
]


@pytest.mark.parametrize(("field", "value"), GPU_HEALTH_FORGED, ids=lambda v: repr(v)[:28])
def test_a_forged_gpu_health_field_is_refused(field: str, value: Any) -> None:
    # 23 fail before: no GpuHealth field was checked on restore.
    eng, health = _warm_ecc_engine()
    _refused(eng, health, field, value)


@pytest.mark.parametrize("cut", [30, 45, 100, 125])
def test_a_real_snapshot_of_gpu_health_restores_and_pages_the_same(cut: int) -> None:
    straight = feed(Engine(), _ecc_samples(0, 200))
    assert any(a.status == "firing" and a.scope.key == f"gpu:{NODE}/1" for a in straight)
    eng = Engine()
    before = feed(eng, _ecc_samples(0, cut), finish=False)
    got = feed(Engine.restore(eng.snapshot()), _ecc_samples(cut, 200))
    assert before + got == straight


# -- a job's step statistics and the correlator's clocks: any number went -------------------


def _job_engine(cut: int) -> tuple[Engine, list[Alert]]:
    """A 16-rank job whose rank 3 runs 1.3x slow from step 30, fed to step ``cut``."""
    eng = Engine()
    return eng, feed(eng, _job_steps(0, cut), finish=False)


def _job_steps(start: int, stop: int) -> list[Any]:
    return [e for e in healthy_job(steps=120, slow={3: 1.3}, slow_from=30)
            if start <= e.step < stop]


JOB_FORGED = [
    ("clock", INF), ("_next_expire", INF), ("_last_step_ts", INF), ("_host_seen_ts", INF),
    ("_sigma", INF), ("_sigma", -1.0), ("_sigma", math.nan), ("_zscale", INF),
    ("_zscale", -0.5), ("_period", -1.0), ("_replica_noise", INF), ("_rep_sigma", -2.0),
    ("_wander", math.nan), ("_twin_sigma", INF), ("_sus_spread", -1.0), ("_sus_ms", INF),
    ("_host_sigma", -INF), ("_usual_step_ms", INF), ("_ar_xx", -1.0), ("_hl_xx", INF),
    ("_host_level", math.nan), ("_ar_xy", INF), ("_hl_xy", -INF),
    # (refused before as well: not a number)
    ("_sigma", "0.1"),
]


@pytest.mark.parametrize(("field", "value"), JOB_FORGED, ids=lambda v: repr(v)[:28])
def test_a_forged_job_statistic_is_refused(field: str, value: Any) -> None:
    # 23 of 24 fail before (all but the last): any int or float went, NaN and the infinities
    # among them -- a +inf clock made every later step late, an infinite sigma hid every rank.
    eng, _ = _job_engine(50)
    _refused(eng, eng.monitors._jobs["job-1"], field, value)


@pytest.mark.parametrize(("field", "value"), [
    ("_seq", INF), ("_seq", -1), ("_seq", 2.0), ("_clock", INF), ("_next_prune", INF),
    ("_next_prune", math.nan)])
def test_a_forged_correlator_clock_is_refused(field: str, value: Any) -> None:
    # 6 fail before: "of its kind" took any number for a number, NaN among them.
    eng, _ = _job_engine(50)
    _refused(eng, eng.correlator, field, value)


@pytest.mark.parametrize("cut", [20, 35, 60])
def test_a_real_snapshot_of_a_job_restores_and_pages_the_same(cut: int) -> None:
    straight = feed(Engine(), _job_steps(0, 120))
    assert any(a.status == "firing" and a.scope.gpu == 3 for a in straight)
    eng, before = _job_engine(cut)
    got = feed(Engine.restore(eng.snapshot()), _job_steps(cut, 120))
    assert before + got == straight
