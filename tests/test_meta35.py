"""The service gives the replay's alerts: restart, partitions, disorder (meta35, issues 10, 14).

Each test pins a mechanism bench/metamorphic.py found moving a page when only the worker's
restart point, its partitions or the records' arrival order changed (DESIGN: "A replay
in-process and a run through Kafka must give the same alerts for the same input"; "a restart
must not change alerts").
"""

from __future__ import annotations

import functools

import pytest

from bench import metamorphic as mm


@functools.cache
def case_of(name: str) -> mm.Case:
    family, case = name.split("/")
    return mm.load_case(mm.BENCH / family / "cases" / f"{case}.jsonl.gz")


def restored_at(case: mm.Case, cut: int) -> list[mm.Msg]:
    r = mm.Replay(case)
    r.feed(case.records[:cut])
    r.restore(r.snapshot())
    r.feed(case.records[cut:])
    return [mm.msg(a) for a in r.finish()]


# -- restart: a two-replica job's slow-replica run is state ----------------------------------


@pytest.mark.parametrize("cut", [1400, 1605, 1700])
def test_a_restore_inside_a_slow_replica_run_pages_the_lemon_when_the_replay_does(
        cut: int) -> None:
    """blind8 H6: GPUs 4, 5 of gpu0136 in the slow replica of two pool jobs; the second job's
    replica_split run (15 looks, 60 steps) was no state, so a worker restored inside it looked
    again from zero and the node's lemon escalation came 51 s after the restore point (a
    restarted worker re-fired it at another detected_ts: bench/metamorphic.py restart)."""
    case = case_of("blind8/H6-pool-dp2-slow")
    want = [mm.msg(a) for a in mm.run(case)]
    assert want[0][1:6] == ("firing", "fl:esc:slow_node:node:gpu0136", "slow_node", "unknown",
                            "node:gpu0136")
    assert restored_at(case, cut) == want


def test_a_restart_of_blind8_h6_sends_what_the_replay_sends() -> None:
    case = case_of("blind8/H6-pool-dp2-slow")
    v = mm.check(case, "restart")
    assert v.ok, v.first


@pytest.mark.parametrize("forged", [[[(0, 0)], [0.1], 0.5, 3, 1.0, False],
                                    [[(0, 0)], "x", 0.5, 3, 1.0, False],
                                    [[(0, "a")], None, 0.5, 3, 1.0, False],
                                    [[(0, 0)], None, 0.5, -1, 1.0, False],
                                    [[(0, 0)], None, 2.0, 3, 1.0, False],
                                    [[(0, 0)], None, 0.5, 3, 1.0, 1], (1, 2), "x"])
def test_a_forged_slow_replica_run_is_refused_on_restore(forged: object) -> None:
    """The run joined the state (above) and is checked as it is restored: a forged one whose
    levels are not a group each would fail every fourth step of the job."""
    import numpy as np

    from detector.engine import Engine
    from detector.statecodec import SnapshotRefused
    from detector.testing import feed, healthy_job

    if isinstance(forged, list) and forged[1] is None:
        forged[1] = np.zeros(1)
    eng = Engine()
    feed(eng, healthy_job(ranks=4, steps=5), finish=False)
    eng.monitors._jobs["job-1"]._split = forged
    with pytest.raises(SnapshotRefused, match="_split"):
        Engine.restore(eng.snapshot())
    eng.monitors._jobs["job-1"]._split = [[(0, 0), (0, 1)], np.zeros(2), 0.5, 3, 1.0, False]
    Engine.restore(eng.snapshot())
