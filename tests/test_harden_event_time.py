"""Adversarial review (room harden, round 8): event time at the guard's edges and behind it.

The guard (DESIGN.md, "Bounds") refuses a ``ts`` more than 300 s *ahead* of a
partition's clock; these attacks come from the other side: a partition whose
first record is far in the *past* (a node booted with an unset RTC reports
1970), a step number far in the future, and ``ts`` exactly on the edges.  Each
runs the real path: :meth:`SourcePartition.process` with a wall clock (the
service) or the in-process :class:`~detector.engine.Engine` (replay).
"""

from __future__ import annotations

import contextlib
import math

import orjson
import pytest

from detector.engine import Engine
from detector.events import MAX_AHEAD_S, THERMAL, InvalidMessage
from detector.pipeline.source import DeadLetter, Emit, SourcePartition
from detector.testing import (
    T0,
    feed,
    healthy_job,
    link_down_behind_a_rarely_sampled_port,
    step,
    thermal,
)
from detector.thresholds import Thresholds

WALL = T0 + 100.0


def _thermal_raw(ts: float, node: str, gpu: int = 0) -> bytes:
    return orjson.dumps({"ts": ts, "node": node, "gpu": gpu, "gpu_temp_c": 65.0,
                         "power_w": 500.0, "sm_clock_mhz": 1980.0, "throttle": 0})


def _service_run(raws: list[bytes]) -> tuple[SourcePartition, list[DeadLetter]]:
    part = SourcePartition(THERMAL, 0, 1, wall_clock=lambda: WALL)
    emits: list[Emit] = []
    dead: list[DeadLetter] = []
    part.process([(i, b"k", r, None) for i, r in enumerate(raws)], WALL, emits, dead)
    return part, dead


def _fleet(seconds: int, *, broken_every: int | None) -> list[tuple[bytes, bool]]:
    """(message, is it from the healthy fleet) of 4 healthy nodes a second; with
    ``broken_every``, a node whose clock says 1970 reports after every that many."""
    out = []
    n = 0
    for i in range(seconds):
        for node in range(4):
            out.append((_thermal_raw(T0 + i + 0.01 * node, f"node-{node:03d}"), True))
            n += 1
            if broken_every and n % broken_every == 0:
                out.append((_thermal_raw(float(i), "node-rtc"), False))
    return out


# -- pins --------------------------------------------------------------------------------

def test_ts_exactly_max_ahead_of_the_clock_is_taken_and_one_ulp_more_is_not() -> None:
    edge = T0 + MAX_AHEAD_S
    part, dead = _service_run([_thermal_raw(T0, "node-000"), _thermal_raw(edge, "node-000"),
                               _thermal_raw(math.nextafter(edge + MAX_AHEAD_S, math.inf),
                                            "node-000")])
    assert part.clock == edge
    assert [d.offset for d in dead] == [2] and "ts_out_of_range" in dead[0].reason


def test_a_first_record_exactly_max_ahead_of_the_wall_clock_is_taken() -> None:
    part, dead = _service_run([_thermal_raw(WALL + MAX_AHEAD_S, "node-000")])
    assert dead == [] and part.clock == WALL + MAX_AHEAD_S
    part, dead = _service_run([_thermal_raw(math.nextafter(WALL + MAX_AHEAD_S, math.inf),
                                            "node-000")])
    assert len(dead) == 1 and part.clock == -math.inf


@pytest.mark.parametrize("ts", [-1.7976931348623157e308, -0.0, 5e-324])
def test_a_late_record_at_the_float_edges_changes_neither_clock_nor_units(ts: float) -> None:
    part, dead = _service_run([_thermal_raw(T0, "node-000"), _thermal_raw(ts, "node-000"),
                               _thermal_raw(T0 + 1.0, "node-000")])
    assert dead == [] and part.clock == T0 + 1.0
    assert part.monitors._thermal[("node-000", 0)].last_ts == T0 + 1.0


@pytest.mark.parametrize("stray_step", [1 << 62, (1 << 63) - 1])
def test_one_message_with_a_step_number_far_ahead_changes_no_alert(stray_step: int) -> None:
    events = list(healthy_job(ranks=8, steps=150, slow={3: 1.3}, slow_from=80, seed=5))
    clean = [(a.status, a.dedup_key) for a in feed(Engine(), events)]
    i = 40 * 8
    stray = step(events[i].ts, 0, stray_step)
    eng = Engine()
    got = [(a.status, a.dedup_key) for a in feed(eng, [*events[:i], stray, *events[i:]])]
    assert got == clean != []
    assert eng.stats()["job_restarts"] == 0


# -- findings ----------------------------------------------------------------------------

def test_a_first_record_from_1970_costs_the_live_fleet_nothing() -> None:
    raws = [_thermal_raw(0.0, "node-rtc")] + [r for r, _ in _fleet(5, broken_every=None)]
    part, dead = _service_run(raws)
    assert [d.offset for d in dead] == []
    assert part.clock == pytest.approx(T0 + 4.03)


def test_a_node_reporting_1970_does_not_blind_a_fresh_partition() -> None:
    fleet = [(_thermal_raw(0.0, "node-rtc"), False), *_fleet(30, broken_every=2)]
    part, dead = _service_run([r for r, _ in fleet])
    lost = {d.offset for d in dead} & {i for i, (_, good) in enumerate(fleet) if good}
    assert len(lost) <= 2, f"{len(lost)} of {sum(g for _, g in fleet)} good records lost"
    assert part.clock > T0


def test_a_log_starting_with_a_node_from_1970_loses_no_other_node() -> None:
    eng = Engine()
    events = [thermal(0.0, "node-rtc", 0)]
    for i in range(30):
        for node in range(4):
            events.append(thermal(T0 + i + 0.01 * node, f"node-{node:03d}", 0))
            if node % 2:
                events.append(thermal(float(i + 1), "node-rtc", 0))
    for ev in events:
        with contextlib.suppress(InvalidMessage):
            eng.process(ev)
    eng.finish()
    good = 30 * 4
    assert eng.monitors.counts["thermal"] >= good, eng.monitors.counts
    assert len(eng.rejected) <= 2


def test_one_far_step_does_not_restart_a_two_rank_job() -> None:
    events = list(healthy_job(ranks=2, steps=120, seed=3))
    i = 50 * 2
    eng = Engine()
    feed(eng, [*events[:i], step(events[i].ts, 0, 1 << 62), *events[i:]])
    assert eng.stats()["job_restarts"] == 0


def test_one_stray_before_a_gap_does_not_blind_the_rest_of_a_log() -> None:
    eng = Engine()
    eng.process(thermal(T0, "node-000", 0))
    eng.process(thermal(T0 + 1000.0, "node-000", 0))  # a stray, far ahead
    for i in range(100):  # the log's time after a real 2,000 s gap
        eng.process(thermal(T0 + 2000.0 + i, "node-000", 0))
    assert eng.clock == T0 + 2099.0
    assert len(eng.rejected) == 1 and eng.monitors.counts["thermal"] == 101


def test_a_rarely_sampled_port_does_not_delay_other_nodes_link_down() -> None:
    events, t_down = link_down_behind_a_rarely_sampled_port(3000.0)
    alerts = feed(Engine(), events)
    late = [a.detected_ts - t_down for a in alerts
            if a.status == "firing" and a.scope.key == "nic:node-001/mlx5_0:1"]
    assert late and late[0] <= Thresholds().switch_window_s + 5.0, late
