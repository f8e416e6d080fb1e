"""Room review23 (round 23): a new maintainer's review of round 22's new modules (detector.hang,
domain_brake, host_rise, host_node, overflow_source) as an attacker who controls telemetry or
the state topic.  Each test fails on main 82565f4 without its fix."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bench.review23_flood import _hangs
from detector.alerts import Scope
from detector.findings import Finding
from detector.monitors import Monitors
from detector.pipeline.correlator import CorrelatorPartition
from detector.statecodec import UNSIGNED, SnapshotRefused
from detector.testing import T0, step

# -- snapshots: Correlator._hangs and ._idle are checked on restore ---------------------------


def _hung_partition() -> CorrelatorPartition:
    """A correlator that named a hung rank (node-a/1 idle, its 15 peers busy; detector.hang)."""
    part = CorrelatorPartition(0, now=T0)
    corr = part.correlator
    corr.seen = lambda node, topic: True
    out: list = []
    layout = [[8 * i + g, n, g, 8 * i + g] for i, n in enumerate(("node-a", "node-b"))
              for g in range(8)]
    corr.on_finding(Finding(T0, T0, "job_layout", "slow_node", "unknown", Scope.of_job("job-1"),
                            True, False, 0.0, {"placement": layout}, "job-1"), out)
    for node, idle in (("node-a", [1]), ("node-b", [])):
        corr.on_finding(Finding(T0 + 105, T0 + 105, "gpus_busy", "slow_node", "power",
                                Scope.of_node(node), True, False, 0.0, {"idle_gpus": idle}), out)
    corr.on_finding(Finding(T0 + 160, T0 + 100, "silent", "unattributed", "unknown",
                            Scope.of_job("job-1"), True, False, 0.0,
                            {"last_step_ts": T0 + 100, "step_period_s": 2.0, "hang_s": 60.0},
                            "job-1"), out)
    assert [(a.status, a.scope.key) for a in out] == [("firing", "gpu:node-a/1")]
    return part


def test_a_hung_rank_named_survives_a_snapshot_and_resolves_after_it() -> None:
    part = _hung_partition()
    offset, blob = part.snapshot(UNSIGNED)
    back = CorrelatorPartition.restore(0, offset, blob, now=T0)
    corr = back.correlator
    corr.seen = lambda node, topic: True
    assert corr._hangs == part.correlator._hangs and corr._idle == part.correlator._idle
    out: list = []
    for node in ("node-a", "node-b"):  # (the watchdog killed the job: every GPU idle)
        corr.on_finding(Finding(T0 + 300, T0 + 300, "gpus_busy", "slow_node", "power",
                                Scope.of_node(node), False, False, 0.0, {}), out)
    corr.advance(T0 + 2000, out)
    assert [(a.status, a.scope.key) for a in out] == [("resolved", "gpu:node-a/1")]


def test_a_hung_rank_named_resolves_when_its_job_ends_without_a_gpu_change() -> None:
    # The job's layout is forgotten (it ended; its GPUs' busy/idle unchanged, or their nodes
    # no longer heard): before, the escalation waited for some node's next busy/idle change
    # to look (hang.on_gpus_busy looked at every hung job at every change -- quadratic in a
    # fleet with many named); now the job's end resolves it.
    part = _hung_partition()
    corr, out = part.correlator, []
    corr.on_finding(Finding(T0 + 300, T0 + 300, "job_layout", "slow_node", "unknown",
                            Scope.of_job("job-1"), False, False, 0.0, {}, "job-1"), out)
    corr.advance(T0 + 2000, out)
    assert [(a.status, a.scope.key) for a in out] == [("resolved", "gpu:node-a/1")]
    assert corr._hangs == {}


@pytest.mark.parametrize(("attr", "value"), [
    ("_idle", {"node-a": "x"}), ("_idle", {"node-a": frozenset({"a"})}), ("_idle", []),
    ("_idle", {"node-a": frozenset(range(65))}),
    ("_hangs", {"job-1": 5}), ("_hangs", {"job-1": ["x", None]}), ("_hangs", []),
    ("_hangs", {f"j{i}": [Scope.of_node("n"), None] for i in range(4097)})],
    ids=lambda v: str(v)[:40])
def test_a_forged_hang_or_idle_gpus_state_is_refused(attr: str, value: Any) -> None:
    # Before: restored as is, then every gpus_busy or job silence failed the correlator
    # (TypeError / AttributeError in detector.hang), or held more than MAX_HANGS jobs.
    assert_refused(_hung_partition(), attr, value)


def assert_refused(part: CorrelatorPartition, attr: str, value: Any) -> None:
    """``part``'s correlator with ``attr`` set to ``value``, snapshotted: refused on restore,
    ``malformed``, the reason naming ``attr``."""
    setattr(part.correlator, attr, value)
    offset, blob = part.snapshot(UNSIGNED)
    with pytest.raises(SnapshotRefused) as exc:
        CorrelatorPartition.restore(0, offset, blob, now=T0)
    assert exc.value.reason == "malformed" and attr in str(exc.value)


# -- host_rise: a node the job left is calm for it ---------------------------------------------


def _moved_job(move_at: int | None, steps: int = 400) -> list[Finding]:
    """A 4-rank job, one rank a node (n0..n3), 1 s steps; n0's host busy from step 100 (300 ms
    more in neither); at ``move_at`` rank 0 is rescheduled on n4 (n0 drained), the job steps on."""
    mon, found = Monitors(), []
    rng = np.random.default_rng(0)
    nodes = ["n0", "n1", "n2", "n3"]
    for s in range(steps):
        if s == move_at:
            nodes[0] = "n4"
        for r in range(4):
            c = 600.0 * (1 + 0.01 * rng.standard_normal())
            o = 30.0 * rng.uniform(0.8, 1.2) + (300.0 if nodes[r] == "n0" and s >= 100 else 0.0)
            mon.process(step(T0 + s + 0.001 * r, r, s, node=nodes[r], gpu=r, step_ms=1000.0,
                             compute_ms=round(c, 2), comm_ms=round(1000.0 - c - o, 2)), found)
    return [f for f in found if f.signal == "host_rise"]


def test_a_node_the_job_left_is_no_longer_risen_for_it() -> None:
    # n0 risen (over the job's other nodes) at ~step 108; the rank moves off it at step 200.
    # Before: the rise stood while the job stepped on elsewhere (told calm only when the job
    # stopped), so the correlator counted job-1 on n0 for good: any other job's rise there
    # later made "two jobs risen together" (detector.host_node) -- a node escalation naming a
    # job that had left.
    found = _moved_job(200)
    assert [(f.scope.key, f.active) for f in found] == [("node:n0", True), ("node:n0", False)]
    calm = found[-1]  # (told at the first step decided without it there)
    assert T0 + 200 <= calm.ts < T0 + 205 and calm.evidence["left"] is True
    # Control: without the move the rise stands as long as the host is busy.
    assert [(f.scope.key, f.active) for f in _moved_job(None)] == [("node:n0", True)]


# -- overflow_source: a skip is every rank's, in a job whose checksums move -------------------

EVERY_9 = {40 + 9 * i for i in range(12)}


def _missing_grad_norm(checksum) -> list:
    """16 ranks, 400 steps; rank 5's collector leaves grad_norm out on 12 steps (DESIGN: null
    is missing); ``checksum(step, rank, missing)`` its param_checksum."""
    from detector.engine import Engine
    from detector.testing import feed
    events = [step(T0 + s + 0.001 * r, r, s, grad_norm=None if r == 5 and s in EVERY_9 else 1.0,
                   checksum=checksum(s, r, r == 5 and s in EVERY_9))
              for s in range(400) for r in range(16)]
    return [(a.status, a.scope.key) for a in feed(Engine(), events) if a.kind == "sdc"]


@pytest.mark.parametrize("checksum", [
    lambda s, r, missing: "c0",                                  # never refreshed
    lambda s, r, missing: f"c{s // 50}"],                        # refreshed every 50 steps
    ids=["static", "every-50"])
def test_a_rank_that_leaves_grad_norm_out_where_checksums_do_not_tell_a_skip_is_no_sdc(
        checksum) -> None:
    # Before: 4-5 steps with rank 5's grad_norm null and its checksum as the step before made
    # it "the sole source of skipped steps" -- an sdc escalation at a healthy GPU.  A skip is
    # every rank's (found_inf is all-reduced), in a job whose checksums move on a step with
    # every grad norm.
    assert _missing_grad_norm(checksum) == []
    # Control: the same gaps as real skips (every rank keeps its checksum) are paged.
    version = {s: sum(1 for k in range(s + 1) if k not in EVERY_9) for s in range(400)}
    assert _missing_grad_norm(lambda s, r, missing: f"c{version[s]}") == [
        ("firing", "gpu:node-000/5")]


# -- bounds: a flood of new ids ---------------------------------------------------------------


def test_hangs_named_are_bounded(monkeypatch) -> None:
    from detector import hang
    monkeypatch.setattr(hang, "MAX_HANGS", 8)
    part = CorrelatorPartition(0, now=T0)
    part.correlator.seen = lambda node, topic: True
    _hangs(part.correlator, 20)  # (20 jobs, each a hung rank on a node of its own)
    assert len(part.correlator._hangs) == 8


def test_host_rises_kept_are_bounded_by_node_and_by_job() -> None:
    from detector import host_node
    state = host_node.new_state()

    def rise(node: str, job: str) -> None:
        host_node.note(state, Finding(T0, T0 - 9, "host_rise", "slow_node", "unknown",
                                      Scope.of_node(node), True, False, 0.5,
                                      {"host_excess_ms": 250.0}, job, "t"))
    for i in range(host_node.MAX_NODES + 100):
        rise(f"n{i}", "j")
    for i in range(host_node.MAX_JOBS + 100):
        rise("n-last", f"j{i}")
    assert len(state) == host_node.MAX_NODES and len(state["n-last"]) == host_node.MAX_JOBS
    assert "n0" not in state and host_node.check(state)  # (the oldest told went first)


# -- snapshots: JobMonitor's per-slot arrays (six new in round 22) and _told_was --------------


@pytest.mark.parametrize(("attr", "value"), [
    ("_told", np.zeros(1)), ("_told_onset", "x"), ("_grown", np.zeros(4)),
    ("_pair_gross", np.zeros(1, dtype=np.int64)), ("_pair_lo", None),
    ("_told_was", 5), ("_told_was", {0: 1.0})], ids=lambda v: str(v)[:30])
def test_a_forged_slot_array_or_grown_mark_of_a_job_is_refused(attr: str, value: Any) -> None:
    # Before: a short _told restored, then every step of the job raised IndexError (a
    # service's source dead-letters each of its records as an engine error).
    from detector.statecodec import decode_state, encode_state
    from detector.steps import JobMonitor
    from detector.thresholds import Thresholds
    mon, found = JobMonitor("job-1", Thresholds()), []
    for s in range(40):
        for r in range(4):
            mon.add(step(T0 + s + 0.001 * r, r, s, checksum=f"c{s}"), found)
    decode_state(encode_state(mon)).check_restored()  # (as it was: restores)
    setattr(mon, attr, value)
    with pytest.raises(SnapshotRefused) as exc:
        decode_state(encode_state(mon)).check_restored()
    assert attr in str(exc.value)
