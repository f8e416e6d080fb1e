"""Round 15 (room clock15): nodes whose clocks are wrong in ways DESIGN allows (review13 C1-C3).

The fleet is clock13's (tests/test_clock_round13.py ``fleet``): job-1 on node-000/001, node-009
with its own job and two faults of its own, thermal of the three at 1 Hz, in arrival order.
DESIGN allows records out of event-time order by 5 s; a clock ahead by more than that decides
every other job's steps before their messages come (job-1 "shrinks").  review13's C1-C3 cases
are in tests/test_review_round13.py; these are their neighbours.
"""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from detector.engine import Engine
from detector.monitors import AHEAD_S, Monitors
from detector.statecodec import SnapshotRefused
from detector.testing import T0, feed, thermal
from tests.test_clock_round13 import RIGHT, SKEWED, firing, fleet


def _led(lead) -> list:
    """clock13's fleet with node-009 stamping ``ts + lead(s from T0)``."""
    return [replace(e, ts=round(e.ts + lead(e.ts - T0), 4)) if e.node == SKEWED else e
            for e in fleet(0.0)]


def _whole(eng: Engine) -> tuple[int, int]:
    job = eng.monitors._jobs["job-1"]
    return job.late, job._expected


def _near_right(got, right=RIGHT, within: float = AHEAD_S) -> bool:
    return len(got) == len(right) and all(
        (k, s, lat) == (k2, s2, lat2) and abs(o - o2) <= within
        for (k, s, o, lat), (k2, s2, o2, lat2) in zip(got, right, strict=True))


@pytest.mark.parametrize("lead", [6.0, 8.0, 12.0, 19.0])
def test_a_node_ahead_within_the_old_skew_bound_is_its_offset(lead: float) -> None:
    # main 0f336aa (SKEW_S 20 s): each of these is the clock -- job-1 14 messages late, taken
    # to have shrunk to 14 of 16 ranks, node-009's alerts stamped `lead` s late.
    eng = Engine()
    alerts = feed(eng, _led(lambda t: lead))
    assert _whole(eng) == (0, 16)
    assert firing(alerts) == RIGHT
    assert eng.monitors._skew[SKEWED][0] == pytest.approx(lead, abs=1.0)


CREEP = pytest.mark.xfail(strict=True, reason=(
    "open (clock15): a clock that gets ahead by steps each within DESIGN's 5 s (+4 s at 20, "
    "40, 60, 80, 100 s), or by a drift, is never a jump Monitors._ahead sees: from 8 s ahead "
    "it is the clock, job-1's steps are decided before node-001's ranks come and the job is "
    "taken to have shrunk to 14 of 16 (main 0f336aa the same); node-009's alerts 12-20 s "
    "late.  A look at the others' records lagging alike behind the clock (tried: the clock "
    "and the ahead node's offset corrected within a second of the lag passing 5 s) came "
    "after the harm -- the sweep at the crossing record had already cut a step -- so it was "
    "not landed"))


@CREEP
def test_a_clock_ahead_in_steps_within_the_disorder_bound() -> None:
    eng = Engine()
    alerts = feed(eng, _led(lambda t: 4.0 * min(5, int(t // 20))))
    assert _whole(eng) == (0, 16)
    assert _near_right(firing(alerts))


@CREEP
def test_a_drifting_clock() -> None:
    # node-009's clock drifting 0.1 s a second (an oscillator NTP no longer disciplines, made
    # fast for the test): 20 s ahead at the end.
    eng = Engine()
    alerts = feed(eng, _led(lambda t: 0.1 * t))
    assert _whole(eng) == (0, 16)
    assert _near_right(firing(alerts))


def test_a_pause_of_the_whole_fleet_is_the_time() -> None:
    # Every node silent 12 s at 100 s (a job between iterations -- blind5's RL rollouts -- and
    # its collectors with it): the first record after it is a candidate, the next node's
    # record at the same new time moves the clock; nobody is taken at an offset.
    evs = [replace(e, ts=round(e.ts + 12.0, 4)) if e.ts - T0 >= 100.0 else e
           for e in fleet(0.0)]
    eng = Engine()
    feed(eng, evs, finish=False)
    assert eng.monitors._skew == {} and eng.monitors._cand is None
    assert _whole(eng) == (0, 16)


def test_a_late_collector_is_no_clock_ahead() -> None:
    # node-009's thermal delivered 10 s late (a collector's flush interval), its steps on time:
    # one node's records lagging -- no node is taken at an offset.
    evs = fleet(0.0)
    late = sorted(evs, key=lambda e: e.ts + (10.0 if e.node == SKEWED and
                                             type(e).__name__ == "ThermalSample" else 0.0))
    eng = Engine()
    feed(eng, late)
    assert eng.monitors._skew == {} and _whole(eng) == (0, 16)


def test_every_node_s_thermal_late_is_no_clock_ahead() -> None:
    # The thermal of all three nodes 10 s late, the steps on time: every node lags, none is
    # ahead of the others.
    evs = fleet(0.0)
    late = sorted(evs, key=lambda e: e.ts + (10.0 if type(e).__name__ == "ThermalSample"
                                             else 0.0))
    eng = Engine()
    feed(eng, late)
    assert eng.monitors._skew == {}


def test_collectors_in_phase_every_ten_seconds_are_the_time() -> None:
    # A sparse partition: three nodes' 8 GPUs sampled together every 10 s (Telegraf's
    # round_interval).  Each poll is 10 s ahead of the last: the time moving, no node's clock.
    mon = Monitors()
    found: list = []
    for k in range(30):
        for node in ("node-000", "node-001", "node-002"):
            for g in range(8):
                mon.process(thermal(T0 + 10.0 * k + 0.01 * g, node, g), found)
    assert mon._skew == {} and mon.clock == pytest.approx(T0 + 290.07)


def test_two_collectors_out_of_phase_are_the_time() -> None:
    # Two nodes sampled every 10 s, 5.5 s apart: each record 5.5 s after the last.
    mon = Monitors()
    found: list = []
    for k in range(30):
        mon.process(thermal(T0 + 10.0 * k, "node-000", 0), found)
        mon.process(thermal(T0 + 10.0 * k + 5.5, "node-001", 0), found)
    # (each record is a candidate until the next node's, which moves the clock to it)
    assert mon._skew == {} and mon.clock == pytest.approx(T0 + 290.0)


def test_a_malformed_vote_or_candidate_is_refused() -> None:
    for name, bad in (("_vote", ["node-009", float("nan"), 0.0, 0.0, []]),
                      ("_vote", ["node-009", 1.0, 0.0, 0.0, [7]]),
                      ("_cand", ["n", 1.0, 2.0]), ("_moved", float("nan"))):
        mon = Monitors()
        setattr(mon, name, bad)
        with pytest.raises(SnapshotRefused):
            mon.check_restored()


def test_a_candidate_and_a_watch_survive_a_snapshot() -> None:
    # A snapshot taken while node-009's first record 12 s ahead is held (a candidate), and
    # one while its 30 s lead's move watch is open: the restored engine goes on as the other.
    for lead in (12.0, 30.0):
        evs = _led(lambda t, lead=lead: lead)
        cut = next(i for i, e in enumerate(evs) if e.node == SKEWED) + 1
        eng = Engine()
        a = feed(eng, evs[:cut], finish=False)
        assert (eng.monitors._cand if lead < 20 else eng.monitors._vote) is not None
        eng = Engine.restore(eng.snapshot())
        alerts = a + feed(eng, evs[cut:])
        assert _whole(eng) == (0, 16) and firing(alerts) == RIGHT


def test_a_job_whose_steps_are_longer_than_the_skew_bound_keeps_its_ranks() -> None:
    # The lead's check (round 15): a steps-only job of 30 s steps (long-context: 20-60 s a
    # step), its 32 ranks reporting together. The first rank of each step leads the clock by
    # the step's length: the job's next step, not a node ahead. On main 6af12db node-000's
    # first step after the job's first was taken at a 30 s offset, the step decided without
    # it, and the GPU 1.3x slower from step 10 was never paged (found on 0f336aa).
    from detector.engine import Engine
    from detector.testing import T0, feed, step

    def job(slow_from: int | None) -> list:
        out, t = [], T0
        for s in range(60):
            for r in range(32):
                c = 2500.0 * (1.3 if slow_from is not None and s >= slow_from and r == 26 else 1.0)
                out.append(step(t + 0.001 * r, r, s, job="j", node=f"node-{r // 8:03d}", gpu=r % 8,
                                step_ms=29_500.0, compute_ms=c, tp=r % 8, pp=0, dp=r // 8))
            t += 30.0
        return out

    def fired(alerts: list) -> list:
        return [(a.kind, a.scope.key) for a in alerts if a.status == "firing"]

    assert fired(feed(Engine(), job(None))) == []
    assert fired(feed(Engine(), job(10))) == [("slow_node", "gpu:node-003/2")]
