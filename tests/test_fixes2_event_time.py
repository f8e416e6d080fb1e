"""Room fixes2 (round 8): what the unconfirmed first clock may and may not do.

A partition's first record sets its clock, but until ``JUMP_AGREE`` records were
taken on it that clock is *unconfirmed* (detector.monitors.Monitors): it may be a
stray's (a node with an unset RTC reports 1970; tests/test_harden_event_time.py).
These pin the other side: the unconfirmed clock gives a stray no more power than a
confirmed one has, when the first record is live or the input is a backlog.
"""

from __future__ import annotations

import orjson

from detector.engine import Engine
from detector.events import JUMP_AGREE, MAX_AHEAD_S, THERMAL
from detector.pipeline.source import DeadLetter, SourcePartition
from detector.testing import T0, thermal


def _raw(ts: float, node: str = "node-000") -> bytes:
    return orjson.dumps({"ts": ts, "node": node, "gpu": 0, "gpu_temp_c": 65.0,
                         "power_w": 500.0, "sm_clock_mhz": 1980.0, "throttle": 0})


def _run(wall: float, tss: list[float]) -> tuple[SourcePartition, list[int]]:
    part = SourcePartition(THERMAL, 0, 1, wall_clock=lambda: wall)
    dead: list[DeadLetter] = []
    part.process([(i, b"k", _raw(t), None) for i, t in enumerate(tss)], wall, [], dead)
    return part, [d.offset for d in dead]


def test_a_live_first_record_is_not_restarted_by_a_record_far_ahead_of_it() -> None:
    # The first record is live (near the wall clock): one 350 s ahead of it is a stray,
    # as it is on a confirmed clock, even though it is also within 300 s of the wall.
    wall = T0 + 100.0
    part, dead = _run(wall, [T0, T0 + MAX_AHEAD_S + 50.0, T0 + 1.0])
    assert dead == [1] and part.clock == T0 + 1.0


def test_in_a_backlog_a_stray_ahead_of_an_unconfirmed_clock_is_refused() -> None:
    # A backlog a day old: a first record, then one far ahead (but not live): refused.
    wall = T0 + 86400.0
    part, dead = _run(wall, [T0, T0 + 1000.0, T0 + 1.0, T0 + 2.0])
    assert dead == [1] and part.clock == T0 + 2.0
    assert part.monitors.unconfirmed == 0


def test_a_confirmed_1970_clock_needs_agreeing_records_to_jump() -> None:
    # JUMP_AGREE records on a 1970 clock confirm it (a partition that really is in 1970):
    # from then on a live record is held to the usual rule, the first ones refused.
    wall = T0 + 100.0
    part, dead = _run(wall, [0.0, 1.0, 2.0, T0, T0 + 1.0, T0 + 2.0, T0 + 3.0])
    assert JUMP_AGREE == 3 and dead == [3, 4] and part.clock == T0 + 3.0


def test_in_replay_records_on_a_confirmed_clock_still_refuse_held_strays() -> None:
    eng = Engine()
    for i in range(3):
        eng.process(thermal(T0 + i, "node-000", 0))
    eng.process(thermal(T0 + 5000.0, "node-001", 0))  # a stray, held
    eng.process(thermal(T0 + 3.0, "node-000", 0))  # back on the clock: the stray is refused
    assert len(eng.rejected) == 1 and eng.clock == T0 + 3.0
    assert not eng.source.held
