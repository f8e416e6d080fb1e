"""review26: a new maintainer's review of round 25's code (b16fix's job_pace, inter25's host-time
episodes, live25's resumed / nodes_absent, the step-0 period fix).  Each case fails on main
a34d01b; the controls pass on both."""

from __future__ import annotations

import math
from itertools import islice
from typing import Any

import msgspec
import numpy as np
import pytest

from detector import host_time, job_pace, liveness
from detector.alerts import Scope
from detector.correlate import Correlator
from detector.findings import Finding
from detector.pipeline.correlator import CorrelatorPartition
from detector.statecodec import UNSIGNED
from detector.steps import JobMonitor
from detector.testing import T0
from detector.thresholds import Thresholds
from tests.test_review23 import _hung_partition, assert_refused
from tests.test_steps_round12 import CFG, job

# -- inter25's 14-column host-time table: restored within its columns' domains -------------


def _sound_table() -> tuple[list[str], np.ndarray]:
    """Four units on two nodes after a short run of host-late steps (the restore control)."""
    table = host_time.grow(np.zeros((0, host_time.NCOLS)), 4, np.zeros(4),
                           np.array([0.0, 0.0, 2.0, 2.0]))
    units = np.repeat(np.arange(4), 2)
    for s in range(40):
        host = np.full(len(units), 8.0)
        if 10 <= s < 20:
            host[:4] += 150.0
        host_time.judge(table, units, host, 3200.0, 1000.0 + 3.2 * s, 240.0)
    return [f"n{i // 2}/pp0/dp{i % 2}" for i in range(4)], table


H = host_time
FORGED = [  # (column, value): each a value no step can write there
    (H.RAISED, 3.0), (H.RAISED, 0.5), (H.EP_IN, 0.5), (H.EP_IN, 2.0),
    (H.EPISODES, -1.0), (H.EPISODES, 1e300), (H.EPISODES, 2.5),
    (H.HOT, -4.0), (H.STEPS, 1e300), (H.STREAK, -1e9), (H.STREAK, 1e300),
    (H.NODE, -1.0), (H.NODE, 1e9), (H.NODE, 0.5), (H.EWMA, 1e300),
    (H.RUN_FROM, np.inf), (H.EP_FROM, -np.inf),
]


@pytest.mark.parametrize("col, value", FORGED)
def test_a_forged_host_time_column_is_refused(col, value):
    keys, table = _sound_table()
    assert host_time.check_restored(keys, table)  # (the control: a table a job wrote)
    table[1, col] = value
    assert not host_time.check_restored(keys, table)


# -- b16fix's correlator state (_paces, _pace_paged, _clocks): checked on restore -----------


def _pace(job: str = "job-1", ts: float = T0 + 200.0) -> Finding:
    return Finding(ts, ts - 6.0, "job_pace", "slow_node", "unknown", Scope.of_job(job), True,
                   False, 0.0, {"compute_ms": 2170.0, "usual_compute_ms": 1735.0,
                                "ratio": 1.2507}, job)


def _paced_partition() -> CorrelatorPartition:
    """hang's partition (job-1 on node-a, node-b) with a told step up and four GPUs' clocks."""
    part = _hung_partition()
    corr = part.correlator
    corr._paces["job-1"] = _pace()
    for g in range(4):
        corr._clocks[Scope.of_gpu("node-b", g).key] = (1980.0, T0 + 150.0)
    return part


@pytest.mark.parametrize(("name", "value"), [
    ("_paces", {"job-1": "x"}), ("_paces", []), ("_paces", {"job-1": _pace()._replace(
        onset_ts="t")}), ("_paces", {"job-1": _pace()._replace(evidence=[])}),
    ("_paces", {f"job-{i}": _pace(f"job-{i}") for i in range(job_pace.MAX_PACES + 1)}),
    ("_pace_paged", {"job-1": 5}), ("_pace_paged", {"job-1": _pace()._replace(ts=math.nan)}),
    ("_clocks", {"gpu:node-b/0": ("x", T0)}), ("_clocks", {"gpu:node-b/0": (1980.0,)}),
    ("_clocks", {"gpu:node-b/0": 1980.0}), ("_clocks", {"gpu:node-b/0": (math.nan, T0)}),
    ("_pace_look", {"job-1": (T0, "yes")}), ("_pace_look", {"job-1": T0})],
    ids=lambda v: str(v)[:40])
def test_a_forged_pace_or_clock_state_is_refused(name: str, value: Any) -> None:
    # main a34d01b: restored as is; the next sm_clock finding of a GPU of a paced job
    # (job_pace.on_gpu -> _page) or a slow rank's _held_clock raised in the correlator
    assert_refused(_paced_partition(), name, value)


def test_a_sound_pace_state_restores_and_pages() -> None:
    part = _paced_partition()
    offset, blob = part.snapshot(UNSIGNED)
    corr = CorrelatorPartition.restore(0, offset, blob, now=T0).correlator
    corr.seen = lambda node, topic: True
    assert corr._paces == part.correlator._paces and corr._clocks == part.correlator._clocks
    out: list = []
    corr.on_finding(Finding(T0 + 196.0, T0 + 196.0, "sm_clock", "slow_node", "unknown",
                            Scope.of_gpu("node-a", 3), True, False, 0.0,
                            {"sm_clock_mhz": 1500.0}), out)
    corr.advance(T0 + 215.0, out)
    assert [(a.status, a.scope.key, a.kind) for a in out] == [
        ("firing", "gpu:node-a/3", "slow_node")]


def test_the_gpus_paged_for_step_ups_are_bounded() -> None:
    # main: _pace_paged grew with every job paged for a step up and not yet cleared (_paces
    # dropped its oldest past MAX_PACES; the pages stayed) -- now the oldest page resolves
    part = _paced_partition()
    corr = part.correlator
    corr.seen = lambda node, topic: True
    corr._pace_paged.update({f"old-{i}": _pace(f"old-{i}")._replace(scope=Scope.of_gpu(
        f"node-{i}", 0)) for i in range(job_pace.MAX_PACES)})
    out: list = []
    corr.on_finding(Finding(T0 + 196.0, T0 + 196.0, "sm_clock", "slow_node", "unknown",
                            Scope.of_gpu("node-a", 3), True, False, 0.0,
                            {"sm_clock_mhz": 1500.0}), out)
    corr.advance(T0 + 215.0, out)
    assert len(corr._pace_paged) == job_pace.MAX_PACES
    assert "old-0" not in corr._pace_paged and corr._pace_paged["job-1"].scope.key == \
        "gpu:node-a/3"


# -- job_pace: a clock change on every GPU of a stepped-up job is no quadratic scan ---------


def test_a_fleet_clock_change_on_a_stepped_up_job_reads_its_gpus_a_few_times(monkeypatch):
    # A fleet's clocks lowered: every rank's compute steps up alike (job_pace) and each GPU's
    # busy clock is told.  main a34d01b: each GPU's finding read the job's every GPU
    # (job_pace._page) -- n^2 reads, 16.8 M and 32 s of CPU at 4,096 GPUs.  Now a job is
    # looked at once a LOOK_S of findings, and the flood pages nobody (every GPU is low).
    n = 512
    corr = Correlator(Thresholds())
    corr.seen = lambda node, topic: True
    out: list = []
    gpus = [(f"node-{r // 8:03d}", r % 8) for r in range(n)]
    corr.on_finding(Finding(T0, T0, "job_layout", "slow_node", "unknown", Scope.of_job("job-1"),
                            True, False, 0.0, {"placement": [
                                [r, node, g, r] for r, (node, g) in enumerate(gpus)]},
                            "job-1"), out)
    for node, g in gpus:
        corr._clocks[Scope.of_gpu(node, g).key] = (1980.0, T0 + 100.0)
    corr.on_finding(_pace(), out)
    read = [0]

    def counted(it, k):
        for x in islice(it, k):
            read[0] += 1
            yield x

    monkeypatch.setattr(job_pace, "islice", counted)
    for r, (node, g) in enumerate(gpus):  # (one poll: 0.5 ms apart)
        ts = T0 + 200.0 + 0.0005 * r
        corr.fire_due(ts, out)
        corr.on_finding(Finding(ts, ts, "sm_clock", "slow_node", "unknown", Scope.of_gpu(
            node, g), True, False, 0.0, {"sm_clock_mhz": 1700.0}), out)
    corr.advance(T0 + 300.0, out)
    assert out == []
    assert read[0] <= 8 * n  # (main: 262,656)


# -- steps: the period of a job restarted from step 0 --------------------------------------


def test_a_job_restarted_from_step_0_keeps_its_step_period():
    # inter25's fix gave a job's first step 0 no gap (its -1 had no time); a job restarted
    # from step 0 (no checkpoint, or steps counted per launch) still took its restart's
    # pause as one step's gap: main a34d01b's period 1.0 s -> 28 s after a 300 s restart,
    # ~20 steps to come back -- a hang in them told stopped 10 periods later (minutes).
    # A restart to a later step never learnt the gap (not step + 1); control below.
    for back_to in (0, 50):
        mon = JobMonitor("job-1", CFG)
        out: list = []
        for e in job(steps=200, ranks=16):
            mon.add(e, out)
        for e in job(steps=200, ranks=16, seed=1):
            if e.step >= back_to:
                mon.add(msgspec.structs.replace(e, ts=e.ts + 500.0), out)
            if e.step == back_to + 2 and e.rank == 15:
                assert mon.restarts == 1
                assert 0.9 < mon._period < 1.1, (back_to, mon._period)


# -- liveness: a job stepping on without more nodes than nodes_absent names ----------------


def test_a_job_stepping_on_without_more_nodes_than_its_finding_names_proves_none_alive():
    # liveness._absent names at most MAX_DARK (256) nodes, sorted.  A 300-node job stepping
    # on without 300 of them (a row's power lost under an elastic job) named node-0000 ..
    # node-0255; main a34d01b's _stepping took node-0299's silence as its collector's (the
    # job "steps on its ranks there"), holding its dark page until the job stopped.
    corr = Correlator(Thresholds())
    corr.seen = lambda node, topic: True
    out: list = []
    nodes = [f"node-{i:04d}" for i in range(300)]
    corr.on_finding(Finding(T0, T0, "job_layout", "slow_node", "unknown", Scope.of_job("job-1"),
                            True, False, 0.0, {"placement": [
                                [8 * i + g, n, g, 8 * i + g] for i, n in enumerate(nodes)
                                for g in range(8)]}, "job-1"), out)
    corr.on_finding(Finding(T0 + 100, T0 + 90, "silent", "unattributed", "unknown",
                            Scope.of_job("job-1"), True, False, 0.0,
                            {"nodes_absent": nodes[:liveness.MAX_DARK]}, "job-1"), out)
    assert liveness._stepping(corr, "node-0299", {}, T0 + 60.0, T0 + 400.0) is False
    assert liveness._stepping(corr, "node-0100", {}, T0 + 60.0, T0 + 400.0) is False
    # control: a job that names one absent node still proves the others alive
    corr.on_finding(Finding(T0 + 110, T0 + 90, "silent", "unattributed", "unknown",
                            Scope.of_job("job-1"), True, False, 0.0,
                            {"nodes_absent": ["node-0100"]}, "job-1"), out)
    assert liveness._stepping(corr, "node-0299", {}, T0 + 60.0, T0 + 400.0) is True
    assert liveness._stepping(corr, "node-0100", {}, T0 + 60.0, T0 + 400.0) is False


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "open (DESIGN's tenant rule): a job's step records name their node and GPU unverified "
    "(Placement), so tenant A's job that steps up alike pages the one GPU of its layout "
    "whose clock fell -- here one whose thermal rows are tenant B's.  Not job_pace's alone: "
    "every layout rule (hang, liveness, host_time's units) trusts the same claim, and "
    "a GPU's tenant is only the optional field of its own rows, compared by no rule"))
def test_a_job_of_one_tenant_pages_no_gpu_of_another() -> None:
    part = _paced_partition()
    corr = part.correlator
    corr.seen = lambda node, topic: True
    corr._paces["job-1"] = _pace()._replace(tenant="tenant-a")
    out: list = []
    corr.on_finding(Finding(T0 + 196.0, T0 + 196.0, "sm_clock", "slow_node", "unknown",
                            Scope.of_gpu("node-a", 3), True, False, 0.0,
                            {"sm_clock_mhz": 1500.0}, tenant="tenant-b"), out)
    corr.advance(T0 + 215.0, out)
    assert [a.scope.key for a in out] == []


def test_the_looks_at_stepped_up_jobs_stay_within_max_paces() -> None:
    # _pace_look is held to MAX_PACES on restore: a look kept for a job _paces dropped must
    # not take it over the bound (else a sound worker's snapshot is refused)
    part = _paced_partition()
    corr = part.correlator
    corr.seen = lambda node, topic: True
    corr._pace_look.update({f"gone-{i}": (T0, False) for i in range(job_pace.MAX_PACES)})
    out: list = []
    corr.on_finding(Finding(T0 + 196.0, T0 + 196.0, "sm_clock", "slow_node", "unknown",
                            Scope.of_gpu("node-a", 3), True, False, 0.0,
                            {"sm_clock_mhz": 1500.0}), out)
    assert list(corr._pace_look) == ["job-1"]
    assert job_pace.check_restored(corr) is None
