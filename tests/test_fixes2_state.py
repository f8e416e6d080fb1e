"""Room fixes2 (round 8): the other side of the state fixes -- what they must not drop.

tests/test_harden_state.py / test_harden_snapshot.py / test_harden_event_time.py show the
defects fixed (NIC names that come and go, a flood of one-message jobs, type-confused
snapshots, one far step number in a two-rank job); these pin that well-formed state
keeps working: a port with a fault open is kept, a dormant job's slow rank is still
withdrawn when it stops, real snapshots restore, a real restart is still one.
"""

from __future__ import annotations

from typing import Any

import pytest

from detector.engine import Engine
from detector.events import THERMAL
from detector.pipeline.correlator import CorrelatorPartition
from detector.pipeline.source import SourcePartition
from detector.statecodec import UNSIGNED, SnapshotRefused
from detector.steps import JobMonitor
from detector.testing import T0, feed, healthy_job, nic, step
from detector.thresholds import Thresholds


def test_a_new_port_forgets_silent_healthy_ports_but_not_a_down_one() -> None:
    eng = Engine()
    eng.process(nic(T0, "node-000", "mlx5_0"))
    eng.process(nic(T0, "node-000", "mlx5_1"))
    eng.process(nic(T0 + 1.0, "node-000", "mlx5_1", up=False))  # down, then silent
    idle = Thresholds().unit_idle_s
    for k in range(int(idle / 200.0) + 1):  # the node keeps reporting on another port
        eng.process(nic(T0 + 2.0 + 200.0 * k, "node-000", "mlx5_2"))
    eng.process(nic(T0 + idle + 10.0, "node-000", "renamed"))  # a new port: silent ones go
    ports = set(eng.monitors._nics["node-000"]._ports)
    assert ports == {("mlx5_1", 1), ("mlx5_2", 1), ("renamed", 1)}


def test_a_dormant_job_that_stops_still_withdraws_its_slow_rank(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The sweep skips jobs with nothing to expire; one with a slow rank reported is not
    # skipped, so its stop still withdraws it (JobMonitor._retract_slow).
    calls = []
    retract = JobMonitor._retract_slow

    def counted(self: JobMonitor, *args: Any) -> None:
        calls.append(self.job)
        retract(self, *args)

    monkeypatch.setattr(JobMonitor, "_retract_slow", counted)
    events = list(healthy_job(ranks=8, steps=200, slow={3: 1.6}, slow_from=20, seed=2))
    eng = Engine()
    feed(eng, events, finish=False)
    job = eng.monitors._jobs["job-1"]
    assert job._reported.any() and not job._pending
    last = events[-1].ts
    for i in range(120):  # other records move the clock on while the job is stopped
        eng.process(nic(last + 1.0 + i, "node-009", "mlx5_0"))
    assert calls == ["job-1"] and not job._reported.any()
    assert "job-1" in eng.monitors._dormant  # and now it is skipped


def test_real_snapshots_restore_after_the_type_checks() -> None:
    part = SourcePartition(THERMAL, 0, 1)
    eng = Engine()
    feed(eng, healthy_job(ranks=8, steps=30, seed=1), finish=False)
    part.monitors = eng.monitors
    offset, blob = part.snapshot(UNSIGNED)
    back = SourcePartition.restore(THERMAL, 0, 1, offset, blob)
    assert back.monitors._jobs.keys() == eng.monitors._jobs.keys()
    corr = eng.stage
    offset, blob = corr.snapshot(UNSIGNED)
    assert CorrelatorPartition.restore(0, offset, blob).released == corr.released
    part.monitors._dormant = {"job-1": [1, 2]}  # a mark that is not a tuple
    with pytest.raises(SnapshotRefused):
        SourcePartition.restore(THERMAL, 0, 1, *part.snapshot(UNSIGNED))


@pytest.mark.parametrize("back_to", [30, 60])
def test_a_two_rank_job_restarting_after_an_incomplete_step_is_a_restart(back_to: int) -> None:
    # Its last step (60) decided with one rank (the crash), then a restart from a
    # checkpoint (step 30) or from that very step: _restart_from_stray must not take
    # it for the job going on past a stray.
    events = [e for e in healthy_job(ranks=2, steps=60, seed=4)]
    t = events[-1].ts
    events.append(step(t + 1.0, 0, 60))
    events += [step(t + 30.0 + s, r, back_to + s) for s in range(5) for r in range(2)]
    eng = Engine()
    feed(eng, events)
    assert eng.stats()["job_restarts"] == 1
