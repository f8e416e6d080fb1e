"""Round 27 (room b17clock): host clocks stepped back past the disorder bound, and a host ahead
right after the partition's time moved (blind17 Q1, Q2; issue 10).

The fleet is clock13's (tests/test_clock_round13.py ``fleet``): job-1 on node-000/001, node-009
with its own job, its GPU 5's XID 79 and its GPU 3 slow from step 120, thermal of the three at
1 Hz, in arrival order; node-009 stamps ``ts + skew`` until ``skew_to``.

- Q1: a host ran ahead long enough for its offset to be learnt (Monitors._ahead), then chrony
  stepped it back onto the fleet's time (`makestep`).  Its records just after the step are
  older than its newest, and were taken as a collector re-sending its last minute -- shifted by
  the stale offset -- until the clock passed its newest at that offset: an XID 2 s after the
  step was dated 20 s early (a miss and a false positive by DESIGN's rule).
- Q2: the partition's first record was a node behind (ck06, 8 s), the fleet's time moved on
  from it, and a host 21 s ahead right after took the clock ("the stream moves in jumps"):
  every other node looked 21 s silent against it, and spine-1 was escalated.
"""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.monitors import Monitors
from detector.testing import T0, ecc, feed, thermal
from tests.test_clock_round13 import RIGHT, SKEWED, as_right, firing, fleet


def _whole(eng: Engine) -> tuple[int, int]:
    job = eng.monitors._jobs["job-1"]
    return job.late, job._expected


@pytest.mark.parametrize("skew", [12.0, 19.9, 25.0])
def test_an_xid_just_after_a_clock_stepped_back_is_dated_by_its_own_ts(skew: float) -> None:
    # node-009 `skew` ahead until 100 s, then stepped back; its XID 79 at 101.9 s (true time =
    # its ts now).  main b211495: onset 101.9 - skew (shifted by the stale offset).
    eng = Engine()
    alerts = feed(eng, fleet(skew, skew_to=100.0, xid_at=101.7))
    assert ("hardware", "gpu:node-009/5", 101.9, 0.0) in firing(alerts)
    # (and the slow GPU from step 120 as with every clock right)
    assert as_right(firing(alerts), firing(feed(Engine(), fleet(0.0, xid_at=101.7))))
    assert SKEWED not in eng.monitors._skew
    assert _whole(eng) == (0, 16)


def _ahead_for(seconds: int, lead: float) -> tuple[Monitors, list]:
    """Monitors fed ``seconds`` of node-000 (keeping the time) and node-009 ``lead`` ahead,
    one thermal sample each a second: node-009's offset learnt."""
    mon = Monitors()
    found: list = []
    for k in range(seconds):
        mon.process(thermal(T0 + k, "node-000", 0), found)
        mon.process(thermal(T0 + k + lead, SKEWED, 0), found)
    return mon, found


def test_the_offset_goes_with_the_first_record_after_the_step() -> None:
    # Monitors alone: node-009's offset learnt (20 s ahead, node-000 keeping the time), then
    # its records at the fleet's time: the first is taken as it is and the offset is gone.
    mon, found = _ahead_for(40, 20.3)
    assert mon._skew[SKEWED][0] == pytest.approx(20.0, abs=1.0)
    mon.process(thermal(T0 + 40, "node-000", 0), found)
    mon.process(thermal(T0 + 40.3, SKEWED, 1), found)
    assert SKEWED not in mon._skew
    assert mon._thermal[(SKEWED, 1)].last_ts == T0 + 40.3


def test_a_re_sent_minute_of_a_node_far_ahead_keeps_its_offset() -> None:
    # (what the step-back rule must not take: a collector of a node 170 s ahead re-sending its
    # last minute beside its live records -- ts past the clock, older than its newest -- is
    # shifted, the offset kept)
    mon, found = _ahead_for(60, 170.3)
    for k in range(60):
        mon.process(thermal(T0 + 60 + k, "node-000", 0), found)
        mon.process(thermal(T0 + 60 + k + 170.3, SKEWED, 0), found)
        mon.process(thermal(T0 + k + 170.3, SKEWED, 1), found)
        assert mon._skew[SKEWED][0] == pytest.approx(170.0, abs=1.0)


def _opened_by_a_node_behind(skew: float, *, ahead_learnt: bool = False,
                             more: tuple = ()) -> list:
    """clock13's fleet (node-009 ``skew`` ahead, ``more`` records beside) opened as blind17
    clocks-s1 is: the first record node-005's, 8 s behind; then node-000's (at the fleet's
    time: ahead of that clock) and, with ``ahead_learnt``, node-005's next (at its old time:
    node-000 taken 8 s ahead); then the rest in arrival order, node-005 8 s behind every 10 s."""
    head = [thermal(T0 - 8.0, "node-005", 0), thermal(T0, "node-000", 7)]
    if ahead_learnt:
        head.append(thermal(T0 - 7.99, "node-005", 1))
    lag = {SKEWED: skew, "node-005": -8.0}
    rest = fleet(skew) + list(more) + [thermal(T0 + t - 8.0, "node-005", 0)
                                       for t in range(10, 200, 10)]
    return head + sorted(rest, key=lambda e: e.ts - lag.get(e.node, 0.0))


def test_a_node_ahead_just_after_the_time_moved_is_no_clock() -> None:
    # node-009 21 s ahead from the start; the partition's clock first node-005's (8 s behind),
    # moved to the fleet's by node-000/001's records.  main b211495: node-009's first record
    # came while the clock was "moving in jumps" and took it -- job-1's steps decided 21 s
    # early, node-009 taken at its own time.  (Fixed in round 27, reverted -- the churning
    # fleet -- and fixed again by q2clock, round 28: a stream that moves in jumps moves by
    # its period, and 21 s is past the 8 s move that brought the clock here.)
    eng = Engine()
    alerts = feed(eng, _opened_by_a_node_behind(21.0))
    assert eng.monitors._skew[SKEWED][0] == pytest.approx(21.0, abs=1.0)
    assert _whole(eng) == (0, 16)
    assert [a for a in firing(alerts) if "node-005" not in a[1]] == RIGHT


def test_an_offset_learnt_against_a_node_behind_goes_when_the_time_moves() -> None:
    # As clocks-s1 opens: node-000 taken 8 s ahead against node-005's clock, then the fleet's
    # time: node-000's records are the fleet's, not 8 s early (main b211495 kept the offset:
    # an XID of node-000 at 60 s was dated 8 s early).
    eng = Engine()
    alerts = feed(eng, _opened_by_a_node_behind(
        0.0, ahead_learnt=True, more=(ecc(T0 + 60.2, "node-000", 2, xid=79),)))
    assert "node-000" not in eng.monitors._skew
    assert ("hardware", "gpu:node-000/2", 60.2, 0.0) in firing(alerts)


def test_a_q1_step_survives_a_snapshot() -> None:
    evs = fleet(19.9, skew_to=100.0, xid_at=101.7)
    cut = next(i for i, e in enumerate(evs) if e.ts - T0 >= 99.0)
    eng = Engine()
    a = feed(eng, evs[:cut], finish=False)
    assert SKEWED in eng.monitors._skew
    eng = Engine.restore(eng.snapshot())
    alerts = a + feed(eng, evs[cut:])
    assert ("hardware", "gpu:node-009/5", 101.9, 0.0) in firing(alerts)
