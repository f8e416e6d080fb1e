"""Adversarial review (room harden, round 8): state growth inside a unit that stays alive.

tests/test_state_bounds.py shows a churning *fleet* reaches a plateau: silent
GPUs, nodes and jobs are forgotten after ``unit_idle_s`` / ``job_idle_s``.
These churn *inside* a live unit, which is never silent as a whole: a node
that keeps reporting while its NIC names change (an interface renumbered after
a driver reload, or a producer writing junk names), and a job that keeps
stepping while rank numbers come and go (elastic training, or one junk message
a step).  The rule (README, DESIGN.md "Bounds"): state stays bounded whatever
the input.  Both drive the in-process :class:`~detector.engine.Engine` (the
same Monitors the service's SourcePartition runs).
"""

from __future__ import annotations

from typing import Any

import pytest

from detector.engine import Engine
from detector.steps import JobMonitor
from detector.testing import T0, nic, step
from detector.thresholds import Thresholds

HOURS = 3


def test_nic_names_that_come_and_go_on_a_live_node_reach_a_plateau() -> None:
    eng = Engine()
    idle_min = Thresholds().unit_idle_s / 60.0
    for m in range(HOURS * 60):
        ts = T0 + 60.0 * m
        for k in range(2):
            eng.process(nic(ts, "node-000", f"mlx5_{k}"))
        eng.process(nic(ts + 1.0, "node-000", f"renamed{m}"))
    ports = len(eng.monitors._nics["node-000"]._ports)
    assert ports <= 2 + idle_min + 5, f"{ports} ports kept for one node"


def test_rank_numbers_that_come_and_go_in_a_live_job_reach_a_plateau() -> None:
    eng = Engine()
    step_s = 10.0
    steps = int(2 * Thresholds().unit_idle_s / step_s)
    for s in range(steps):
        t = T0 + step_s * s
        eng.process(step(t + 0.0005, 1000 + s, s, node="node-x", gpu=s % 8))
        for r in range(8):
            eng.process(step(t + 0.001 * r, r, s))
    slots = len(eng.monitors._jobs["job-1"]._rank_of)
    per_hour = Thresholds().unit_idle_s / step_s
    assert slots <= 8 + per_hour + 40, f"{slots} rank slots for a job of 8 ranks"


def test_a_flood_of_one_message_jobs_does_not_slow_every_record(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = [0]
    expire = JobMonitor.expire

    def counted(self: JobMonitor, *args: Any, **kwargs: Any) -> None:
        calls[0] += 1
        expire(self, *args, **kwargs)

    monkeypatch.setattr(JobMonitor, "expire", counted)
    eng = Engine()
    per_record = []
    for part in range(3):
        before = calls[0]
        for i in range(2000 * part, 2000 * (part + 1)):
            eng.process(step(T0 + 0.01 * i, 0, 0, job=f"stray-{i}"))
        per_record.append((calls[0] - before) / 2000)
    assert per_record[2] <= 2 * per_record[0] + 1, per_record
