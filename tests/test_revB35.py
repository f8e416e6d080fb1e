"""Review of round 35 (revB35, issues 14 + 10): the service's and the replay's alerts.

Each finding is a minimal reproducer pinned as a strict xfail: the reason says what breaks and
a fix idea.  DESIGN: "A replay in-process and a run through Kafka must give the same alerts for
the same input"; "a restart must not change alerts".
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from msgspec.structs import replace

from bench import metamorphic as mm
from detector.engine import Engine
from detector.events import InvalidMessage
from detector.monitors import Monitors
from detector.testing import T0, feed, healthy_job, step, thermal

Y2100 = 4102444800.0  # 2100-01-01T00:00:00Z

# -- F0: a node taken ahead moves its partition's clock anywhere, past every bound --------


def _taken_ahead_then(second_ts: float) -> tuple[Monitors, list[float], str]:
    """Eight nodes polled every 30 s (a service's thermal partition, the wall clock live);
    node-009 first heard 280 s ahead (valid by DESIGN: its NTP source lost) is taken at an
    offset while the move is watched (Monitors._vote, no keeper yet); its next record comes
    before any other node's: at ``second_ts``."""
    wall = [T0]
    mon = Monitors()
    mon.wall_clock = lambda: wall[0]
    out: list = []
    for k in range(10):
        for n in range(8):
            wall[0] = T0 + 30.0 * k + 0.5
            mon.process(thermal(T0 + 30.0 * k + 0.1 * n, f"node-{n:03d}", 0), out)
    t = T0 + 30.0 * 9 + 1.0
    wall[0] = t + 0.3
    mon.process(thermal(t + 280.0, "node-009", 0), out)
    assert "node-009" in mon._skew and mon._vote is not None
    wall[0] = t + 30.3
    try:
        mon.process(thermal(second_ts(t) if callable(second_ts) else second_ts, "node-009", 0),
                    out)
        what = "accepted"
    except InvalidMessage as exc:
        what = str(exc)
    return mon, wall, what


def test_a_node_taken_ahead_moves_no_clock_past_the_wall_clock() -> None:
    mon, wall, what = _taken_ahead_then(Y2100)
    assert mon.clock <= wall[0] + 300.0, (mon.clock - T0, what)
    assert "ts_out_of_range" in what, what


def test_a_node_taken_ahead_leaves_a_state_its_restore_accepts() -> None:
    mon, _, what = _taken_ahead_then(lambda t: t + 310.0)
    assert what == "accepted"
    mon.check_restored()


def test_the_service_keeps_an_xid_page_beside_a_node_stamping_2100() -> None:
    import dataclasses

    case = mm.load_case(mm.BENCH / "blind25" / "cases" / "G4-xid74-under-a-pure-dp-job.jsonl.gz")
    recs = list(case.records)
    at = [i for i, r in enumerate(recs) if r[0] == "telemetry.ecc"]
    i = at[len(at) // 4]
    first = {**recs[i][1], "node": "zz-ahead", "gpu": 0, "ts": recs[i][1]["ts"] + 280.0}
    out = recs[:i + 1] + [("telemetry.ecc", first),
                          ("telemetry.ecc", {**first, "ts": Y2100})] + recs[i + 1:]
    forged = dataclasses.replace(case, records=out)
    end = mm._last_ts(case)
    want = [m[:6] for m in mm.pages(mm.run(case), end + mm.TAIL_S / 2)]
    assert want and [m[:6] for m in mm.pages(mm.run(forged), end + mm.TAIL_S / 2)] == want
    assert [m[:6] for m in mm.pages(mm.run_partitioned(forged), end + mm.TAIL_S)] == want

# -- F1: a rank's learned start offset, parked while it is away, is no state ---------------


def _away_and_back(factor: float = 1.08, ranks: int = 16, steps: int = 520,
                   away: tuple[int, int] = (100, 400), slow: int = 5) -> list:
    """A 16-rank job, rank 5 (node-000 GPU 5) 8 % slower from its first step -- learned as
    its start offset, paged by nobody -- leaves the job for 300 steps (more than the 256 a
    rank is gone after) and comes back on the same GPU, as slow as it always was."""
    rng = np.random.default_rng(1)
    out = []
    for s in range(steps):
        noise = rng.lognormal(0.0, 0.015, ranks)
        for r in range(ranks):
            if r == slow and away[0] <= s < away[1]:
                continue
            f = factor if r == slow else 1.0
            out.append(step(T0 + 2.0 * s + 0.001 * r, r, s,
                            step_ms=round(700.0 * factor * 1.02 + 250.0, 2),
                            compute_ms=round(700.0 * float(noise[r]) * f, 2)))
    return out


def _firing(alerts: list) -> list[tuple[str, str, str]]:
    return [(a.scope.key, a.kind, a.cause) for a in alerts if a.status == "firing"]


def test_a_rank_away_from_its_job_across_a_restore_keeps_its_start_offset() -> None:
    evs = _away_and_back()
    want = _firing(feed(Engine(), evs))
    assert want == []  # (the replay: an offset from the job's start, learned, never paged)
    cut = next(i for i, e in enumerate(evs) if e.step >= 390)  # rank 5 away, parked
    eng = Engine()
    got = feed(eng, evs[:cut], finish=False)
    assert 5 in eng.monitors._jobs["job-1"]._parked
    eng = Engine.restore(eng.snapshot())
    got += feed(eng, evs[cut:])
    assert _firing(got) == want


# -- F2: meta35's jump rule, after a checkpoint pause --------------------------------------


def test_a_node_ahead_right_after_a_checkpoint_pause_is_not_the_time() -> None:
    """revB35 F2 (the service's step partition, blind4's shape after a routine pause): a
    synchronous checkpoint of 60 s makes the job's next step a 66 s jump; a node first heard
    170 s ahead right after it (its own one-node job in the same partition) led by less than
    _JUMP_LIKE (4) x that last jump and took the clock -- every finding of the other job
    tagged 170 s ahead.  The bound is 4 x the stream's usual jump now (the lower median of
    its last _RHYTHM: the 6 s step period), so the node is taken at its offset."""
    mon = Monitors()
    found: list = []
    fleet = -math.inf
    worst = 0.0
    for e in healthy_job(ranks=16, steps=40, step_s=6.0):
        if e.step >= 10:
            e = replace(e, ts=e.ts + 60.0)  # a synchronous checkpoint save after step 9
        mon.process(e, found)
        fleet = max(fleet, e.ts)
        if e.step >= 10 and e.rank == 15:
            mon.process(step(e.ts + 0.4 + 170.0, 0, e.step - 10, job="dbg", node="node-015",
                             gpu=0), found)
        worst = max(worst, mon.clock - fleet)
    assert worst <= 5.0, worst
    assert "node-015" in mon._skew


def test_a_node_ahead_right_after_a_30_s_pause_is_not_the_time() -> None:
    """The guard beside F2: a 30 s pause (a 36 s jump) passes on main (meta35's rule)."""
    mon = Monitors()
    found: list = []
    fleet = -math.inf
    for e in healthy_job(ranks=16, steps=40, step_s=6.0):
        if e.step >= 10:
            e = replace(e, ts=e.ts + 30.0)
        mon.process(e, found)
        fleet = max(fleet, e.ts)
        if e.step >= 10 and e.rank == 15:
            mon.process(step(e.ts + 0.4 + 170.0, 0, e.step - 10, job="dbg", node="node-015",
                             gpu=0), found)
        assert mon.clock - fleet <= 5.0
    assert "node-015" in mon._skew


@pytest.mark.parametrize("pause_s", [60.0, 120.0, 250.0])
def test_a_job_s_next_steps_after_a_pause_keep_the_clock_and_the_node_ahead_its_offset(
        pause_s: float) -> None:
    """The job's own steps after the pause go on moving the clock in its rhythm (each from a
    node that kept the old time), and its ranks page nothing; a second pause later is taken
    as the first was."""
    mon = Monitors()
    found: list = []
    fleet = -math.inf
    for e in healthy_job(ranks=16, steps=60, step_s=6.0):
        e = replace(e, ts=e.ts + pause_s * ((e.step >= 10) + (e.step >= 40)))
        mon.process(e, found)
        fleet = max(fleet, e.ts)
        if e.step >= 10 and e.rank == 15:
            mon.process(step(e.ts + 0.4 + 170.0, 0, e.step - 10, job="dbg", node="node-015",
                             gpu=0), found)
        assert mon.clock - fleet <= 5.0, (e.step, mon.clock - fleet)
    assert "node-015" in mon._skew and mon._moved_by == pytest.approx(6.0, abs=0.1)
    assert not [f for f in found if f.job == "job-1" and f.signal != "job_layout"]


def test_the_stream_s_jumps_survive_a_restore_and_a_forged_one_is_refused() -> None:
    from detector.statecodec import SnapshotRefused

    eng = Engine()
    feed(eng, [replace(e, ts=e.ts + 60.0 * (e.step >= 10))
               for e in healthy_job(ranks=4, steps=12, step_s=6.0)], finish=False)
    mon = Engine.restore(eng.snapshot()).monitors
    assert mon._jumps_by == eng.monitors._jumps_by and len(mon._jumps_by) == 5
    assert mon._moved_by == pytest.approx(6.0, abs=0.1)  # (the 66 s jump is one of five)
    for bad in ([1.0] * 6, [float("nan")], [-1.0], [400.0], (6.0,), [6]):
        mon._jumps_by = bad
        with pytest.raises(SnapshotRefused, match="_jumps_by"):
            mon.check_restored()
    del mon._jumps_by  # a snapshot of round 35: its last move is its rhythm
    mon.check_restored()
    assert mon._jumps_by == [mon._moved_by]
