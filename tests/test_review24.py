"""Round 24's review of round 23's changes: each test fails on main eba06ec."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from detector.engine import Engine
from detector.metrics import WorkerMetrics
from detector.monitors import unreadable
from detector.pipeline.correlator import CorrelatorPartition
from detector.statecodec import UNSIGNED, SnapshotRefused
from detector.testing import T0, ecc, feed, healthy_job, nic, step, thermal
from models.counters import BLANK

INT32_BLANK = 0x7FFFFFF0          # DCGM_INT32_BLANK: a temperature, a clock
FP64_BLANK = 140737488355328.0    # DCGM_FP64_BLANK (2**47): power


def _thermal_fleet(field: str, value: float, *, bad_from: int = 100) -> list:
    """A healthy 16-rank job with both nodes' GPUs sampled every 5 s; from ``bad_from`` s
    node-000's GPU 3 reports ``value`` in ``field`` (a collector copying a DCGM blank)."""
    th = []
    for k in range(0, 400, 5):
        for node in ("node-000", "node-001"):
            for g in range(8):
                kw = {field: value} if (node, g, k >= bad_from) == ("node-000", 3, True) else {}
                th.append(thermal(T0 + k + 0.1, node, g, **kw))
    return sorted([*healthy_job(ranks=16, steps=400), *th], key=lambda e: e.ts)


@pytest.mark.parametrize(("field", "value"), [
    ("temp_c", float(INT32_BLANK)), ("temp_c", 1e300), ("power_w", FP64_BLANK),
    ("clock_mhz", float(INT32_BLANK))])
def test_a_dcgm_blank_in_a_thermal_field_isolates_nothing_and_is_counted(
        field: str, value: float) -> None:
    eng = Engine()
    alerts = feed(eng, _thermal_fleet(field, value))
    assert [a.scope.key for a in alerts if a.status == "firing"] == []
    # main: a blank temperature read as 2e9 C isolated the healthy GPU (slow_node/thermal)
    assert eng.stats()["unreadable"]["thermal"] == 60  # every sample of GPU 3 from 100 s


def test_a_hot_gpu_is_still_found_beside_the_blank_guard() -> None:
    alerts = feed(Engine(), _thermal_fleet("temp_c", 97.0))
    assert [(a.cause, a.scope.key) for a in alerts if a.status == "firing"] == [
        ("thermal", "gpu:node-000/3")]


def test_a_blank_clock_leaves_the_baseline_alone() -> None:
    """A blank clock learnt into the baseline would make every real clock after it a 99 %
    drop: a HW slowdown sample then reads as a deep throttle."""
    eng = Engine()
    evs = _thermal_fleet("clock_mhz", float(INT32_BLANK))
    feed(eng, evs, finish=False)
    mon = eng.monitors._thermal[("node-000", 3)]
    assert 1900.0 < mon._clock.get() < 2100.0


def test_counter_blanks_and_jumps_are_counted_where_an_operator_sees_them() -> None:
    eng = Engine()
    evs = [ecc(T0, "node-000", 0, sbe=5), ecc(T0 + 10, "node-000", 0, sbe=BLANK + 1),
           ecc(T0 + 20, "node-000", 0, sbe=2**62), ecc(T0 + 30, "node-000", 0, sbe=6),
           nic(T0, "node-000", "mlx5_0", tx=100), nic(T0 + 10, "node-000", "mlx5_0", tx=BLANK),
           thermal(T0 + 5, "node-000", 0, power_w=FP64_BLANK)]
    feed(eng, evs)
    counts = eng.stats()["unreadable"]
    assert counts == {"counter_blank": 2, "counter_implausible": 1, "thermal": 1}
    reg = CollectorRegistry()
    WorkerMetrics(reg).unreadable(unreadable([eng.monitors, eng.monitors]))
    assert reg.get_sample_value("faultline_unreadable_values", {"kind": "counter_blank"}) == 4
    assert reg.get_sample_value("faultline_unreadable_values", {"kind": "thermal"}) == 2


# -- snapshots: round 23's correlator state (_woke, Placement.since) checked on restore ------


def _hung_partition():
    from tests.test_review23 import _hung_partition as made
    return made()


@pytest.mark.parametrize(("path", "value"), [
    ("_woke", {"node-a": "x"}), ("_woke", {"node-a": {1: "t"}}), ("_woke", []),
    ("_woke", {"node-a": {g: 1.0 for g in range(65)}}), ("_woke", {"node-a": {1: math.nan}}),
    ("_placement.since", {("job-1", 0): "x"}), ("_placement.since", []),
    ("_placement.since", {"job-1": 1.0}), ("_placement.on_node", {"node-a": 5}),
    ("_placement.on_node", {"node-a": {("job-1", 0): (1,)}}),
    ("_placement.ranks", {"job-1": {0: ["node-a", 0, 0]}})],
    ids=lambda v: str(v)[:40])
def test_a_forged_woke_or_placement_state_is_refused(path: str, value: Any) -> None:
    # main: restored as is; then a gpus_busy (_note_woke), a hung-rank look (busy_since) or an
    # application XID (Placement.last_on) raised in the correlator.
    part = _hung_partition()
    owner = part.correlator
    *up, attr = path.split(".")
    for name in up:
        owner = getattr(owner, name)
    setattr(owner, attr, value)
    offset, blob = part.snapshot(UNSIGNED)
    with pytest.raises(SnapshotRefused) as exc:
        CorrelatorPartition.restore(0, offset, blob, now=T0)
    assert exc.value.reason == "malformed" and path.split(".")[0] in str(exc.value)


def test_a_sound_woke_and_placement_state_restores() -> None:
    part = _hung_partition()
    part.correlator._woke["node-a"] = {2: T0 + 50.0}
    offset, blob = part.snapshot(UNSIGNED)
    back = CorrelatorPartition.restore(0, offset, blob, now=T0)
    assert back.correlator._woke == {"node-a": {2: T0 + 50.0}}
    assert back.correlator._placement.last_on("node-a", 1) == "job-1"


# -- steps: a compute_ms of no measurement is not compared -----------------------------------


def _pair_job(partner_compute_ms: float, *, slow: float = 1.0, steps: int = 120) -> list:
    """A job of two ranks (n0/0, n1/0), 1 s steps; from step 30 rank 1 reports
    ``partner_compute_ms`` of compute and waits 980 ms; rank 0 computes 700 ms x ``slow``."""
    rng = np.random.default_rng(0)
    evs = []
    for s in range(steps):
        for r in (0, 1):
            c = 700.0 * (1 + 0.01 * rng.standard_normal()) * (slow if r == 0 else 1.0)
            if r == 1 and s >= 30 and partner_compute_ms >= 0:
                c, comm = partner_compute_ms, 980.0 - 700.0 * (slow - 1.0)
            else:
                comm = 1000.0 * slow - c - 20.0
            evs.append(step(T0 + s + 0.001 * r, r, s, node=f"n{r}", gpu=0,
                            step_ms=1000.0 * slow, compute_ms=round(c, 2) if c >= 0.01 else c,
                            comm_ms=round(comm, 2)))
    return evs


@pytest.mark.parametrize("tiny_ms", [1e-300, 5e-324])
def test_a_partners_tiny_compute_ms_pages_no_one(tiny_ms: float) -> None:
    # main: the pair rule's ratio 700 / 1e-300 (7e302; an overflow at 5e-324) made rank 0 the
    # one its partner waits for: escalated slow_node at n0/0 (35 s, 52 s).
    assert [a.scope.key for a in feed(Engine(), _pair_job(tiny_ms))
            if a.status == "firing"] == []


def test_a_pair_straggler_is_still_paged() -> None:
    alerts = feed(Engine(), _pair_job(-1.0, slow=1.3))
    assert "gpu:n0/0" in {a.scope.key for a in alerts if a.status == "firing"}


# -- network: link_up_beside stays sparse under a forged port list ---------------------------


def test_siblings_told_up_beside_a_link_down_are_bounded() -> None:
    # main: a node's collector naming 400 ports, 200 sampled down then 200 up, made 40,000
    # link_up_beside findings (each down told each sibling): ports squared.
    from detector.monitors import Monitors
    from detector.network import BESIDE_KEPT, MAX_PORTS
    mon, found = Monitors(), []
    n = MAX_PORTS  # (400 on main; past a node's MAX_PORTS a port is dead-lettered: review25)
    for k in range(3):
        for i in range(n):
            mon.process(nic(T0 + 10 * k + i * 1e-4, "node-x", f"mlx5_{i}", tx=1000 * k,
                            rx=1000 * k), found)
    for i in range(n):
        mon.process(nic(T0 + 30 + (i >= n // 2) + i * 1e-4, "node-x", f"mlx5_{i}", tx=3000,
                        rx=3000, up=i >= n // 2, link_downed=int(i < n // 2)), found)
    beside = [f for f in found if f.signal == "link_up_beside"]
    assert len(beside) == BESIDE_KEPT ** 2 and n * n // 4 > BESIDE_KEPT ** 2
    assert len({f.scope.key for f in beside}) == BESIDE_KEPT


@pytest.mark.parametrize("word", [0x7FFFFFFFFFFFFFF0, INT32_BLANK, 0xFFFFFFFF])
def test_a_blank_reason_word_over_a_small_clock_dip_isolates_nothing(word: int) -> None:
    # main: DCGM's blank read as a reason mask sets 0x20, 0x40 and 0x80 (SW/HW thermal, power
    # brake): with the clock 4 % under its baseline the GPU was isolated slow_node/thermal.
    evs = [e if not (type(e).__name__ == "ThermalSample" and e.node == "node-000"
                     and e.gpu == 3 and e.ts >= T0 + 100)
           else thermal(e.ts, e.node, e.gpu, throttle=word, clock_mhz=1900.0)
           for e in _thermal_fleet("temp_c", 65.0)]
    eng = Engine()
    assert [a.scope.key for a in feed(eng, evs) if a.status == "firing"] == []
    assert eng.stats()["unreadable"]["thermal"] == 60
    # a real HW thermal slowdown under the same dip is still a verdict
    real = [e if not (type(e).__name__ == "ThermalSample" and e.node == "node-000"
                      and e.gpu == 3 and e.ts >= T0 + 100)
            else thermal(e.ts, e.node, e.gpu, throttle=0x40, clock_mhz=1900.0) for e in evs]
    assert [(a.cause, a.scope.key) for a in feed(Engine(), real) if a.status == "firing"] == [
        ("thermal", "gpu:node-000/3")]


def test_a_forged_unread_count_is_refused() -> None:
    eng = Engine()
    feed(eng, [thermal(T0, "node-000", 0, power_w=FP64_BLANK)], finish=False)
    assert Engine.restore(eng.snapshot()).monitors._thermal[("node-000", 0)].unread == 1
    eng.monitors._thermal[("node-000", 0)].unread = "x"
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed" and "unread" in str(exc.value)


@pytest.mark.parametrize("field, value", [("brake_seen_ts", "x"), ("brake_seen_ts", math.nan),
                                          ("brake_repeat", 1)])
def test_a_forged_node_brake_repeat_state_is_refused(field: str, value: Any) -> None:
    # therm24's two NodeTemps fields: a string raised on the node's next braked poll
    # (``s.ts - last``), a NaN read every later brake as "seen again within the window".
    eng = Engine()
    feed(eng, [thermal(T0, "node-000", 0)], finish=False)
    assert Engine.restore(eng.snapshot()).monitors._node_temps["node-000"].brake_repeat is False
    setattr(eng.monitors._node_temps["node-000"], field, value)
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed" and field in str(exc.value)
