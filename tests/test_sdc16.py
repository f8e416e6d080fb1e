"""Room sdc16, round 16: the checksum vote after a partial first step; a minority escalates.

A worker that starts (or is restored from a snapshot, or is handed a partition) mid-job sees
a partial first step, and a step's size was learned from it: every later step was "complete"
at that many messages, the rest dropped as duplicates (blind6 F3 watched 4 of 16 ranks for
good, and flagged a diverged checksum 9 steps late).  A job's size is now a lower bound that
evidence raises: a rank arriving for a step decided complete that it took no part in, or a
step decided with more ranks than the size.

A rank whose checksum loses a strict majority vote is escalated at its GPU (cause
gpu_hardware, ``escalate``), with the rerun that tells a transient upset from a GPU that
computes wrong, instead of a drain recommendation.
"""

from __future__ import annotations

import pytest

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.monitors import Monitors
from detector.statecodec import SnapshotRefused, decode_state, encode_state
from detector.testing import T0, feed, step


def _job(tp: int, dp: int, steps: int, *, lag: dict[str, float] | None = None,
         ahead: dict[str, float] | None = None, bad: int | None = None, onset: int = 0,
         start: float = -1.0, cut_ts: float = -1.0) -> list:
    """A TP ``tp`` x DP ``dp`` job on nodes of 8 GPUs (rank = dp_rank * tp + tp_rank), 1 s
    steps, its records in the order they arrive: ``lag`` holds each node's delivery delay,
    ``ahead`` its clock's lead (its records' ``ts``), in seconds.  Rank ``bad`` diverges from
    step ``onset`` on.  A worker starting at ``start`` s reads what arrives from then on;
    one seeking by time (or a replayed window) what has ``ts`` from ``cut_ts`` on."""
    lag, ahead = lag or {}, ahead or {}
    recs = []
    for s in range(steps):
        for r in range(tp * dp):
            node = f"node-{r // 8:03d}"
            true = s + 1e-4 * r
            ts = T0 + true + ahead.get(node, 0.0)
            ck = "bad" if r == bad and s >= onset else f"c{s}-{r % tp}"
            recs.append((true + lag.get(node, 0.0), ts, step(
                ts, r, s, node=node, gpu=r % 8, tp=r % tp, dp=r // tp, checksum=ck)))
    recs.sort(key=lambda x: x[0])
    return [e for at, ts, e in recs if at >= start and ts >= T0 + cut_ts]


def _checksum_findings(events: list, mon: Monitors | None = None) -> list:
    mon = mon or Monitors()
    found: list = []
    for e in events:
        mon.process(e, found)
    mon.advance(mon.clock + 30.0, found)
    return [f for f in found if f.signal in ("checksum_mismatch", "checksum_pair") and f.active]


def test_dp64_first_step_lacks_a_late_node_the_vote_flags_its_onset_step() -> None:
    # DP 64 (TP 1) on 8 nodes; node-007's records arrive 1.5 s late, and the worker starts at
    # step 5: it decides step 5 without node-007 (the job's size taken as 56), and step 6 at
    # its first 56 messages.  Rank 60 (on node-007) diverges at step 6.  On main 23232f3 its
    # step-6 record was dropped as a duplicate of a complete step and the divergence flagged
    # at step 7; now it is a straggler checked against step 6's majority.
    fs = _checksum_findings(_job(1, 64, 30, lag={"node-007": 1.5}, bad=60, onset=6,
                                 start=4.9))
    assert [(f.signal, f.rank, f.evidence["step"]) for f in fs] == [
        ("checksum_mismatch", 60, 6)]


def test_dp64_node_ahead_at_the_start_is_not_the_whole_job() -> None:
    # blind6 F3's shape at DP 64: node-003's clock 3 s ahead, and the worker reads from a
    # time (a replayed window, a consumer seeking by timestamp), so its first three steps
    # are node-003's 8 ranks alone.  On main 23232f3 the job's size was learned as 8 and
    # every step decided at its first 8 messages: rank 30's divergence at step 9 was never
    # flagged (rank 30 was never among the first 8 again).
    fs = _checksum_findings(_job(1, 64, 25, ahead={"node-003": 3.0}, bad=30, onset=9,
                                 cut_ts=3.5))
    assert [(f.rank, f.evidence["step"], f.evidence.get("replicas_compared")) for f in fs] == [
        (30, 9, 64)]


def test_dp2_first_step_lacks_one_replica_the_tie_is_at_its_step() -> None:
    # DP 2 x TP 8 on two nodes, node-001 (replica 1) 2 s ahead and the worker reading from a
    # time: its first two steps are replica 1 alone.  Rank 11 diverges at step 8: a tie (no
    # majority), one job escalation at step 8.  On main 23232f3 the job's size was learned
    # as one replica's 8 ranks and each step decided at its first 8: the tie never raised.
    fs = _checksum_findings(_job(8, 2, 20, ahead={"node-001": 2.0}, bad=11, onset=8,
                                 cut_ts=2.5))
    assert [(f.signal, f.evidence["step"], f.evidence["candidate_ranks"]) for f in fs] == [
        ("checksum_pair", 8, [3, 11])]


def test_a_worker_restored_mid_step_keeps_watching_the_whole_job() -> None:
    # DP 64: worker A decides steps 0-9 and snapshots; it consumed half of step 10 after the
    # snapshot and died.  Worker B restores the snapshot and reads on from there: step 10 has
    # half its ranks, waits the allowed lateness, and on main 23232f3 "the job shrank" to 32
    # ranks -- every later step decided at its first 32 messages, the second half's ranks
    # dropped.  Rank 63 (always among the last to report) diverges at step 18.
    events = _job(1, 64, 30, lag={}, bad=63, onset=18)
    a = Monitors()
    found: list = []
    cut = 10 * 64
    for e in events[:cut]:
        a.process(e, found)
    b = decode_state(encode_state(a))
    assert b.clock == a.clock
    fs = _checksum_findings(events[cut + 32:], b)
    assert [(f.rank, f.evidence["step"], f.evidence.get("replicas_compared")) for f in fs] == [
        (63, 18, 64)]
    assert b._jobs["job-1"]._expected == 64


def test_a_minority_checksum_is_an_escalation_naming_the_rerun() -> None:
    # 7 replicas against 1 (blind6 labels it sdc/unknown, unattributable): a GPU page that
    # asks for the rerun in place and elsewhere, not a drain.  On main it was an isolation
    # (drain_gpu).
    events = _job(1, 8, 12, lag={}, bad=5, onset=6)
    alerts = [a for a in feed(Engine(), events) if a.status == "firing"]
    assert [(a.topic, a.kind, a.cause, a.scope.key, a.action.name) for a in alerts] == [
        (ESCALATION, "sdc", "gpu_hardware", "gpu:node-000/5", "investigate")]
    diag = alerts[0].evidence["next_diagnostic"]
    assert "rerun step 6 of rank 5 in place and on another GPU" in diag, diag


def test_forged_late_ranks_cannot_hold_the_job_big() -> None:
    # Untrusted input: messages for decided steps claiming ranks the job never had (one, then
    # a flood of 5,000 for one step).  The count they raise is bounded (twice the job's ranks
    # plus 64), and the next step decided with every rank the job has brings the size back:
    # a divergence after them is flagged at its step.
    events = _job(1, 16, 30, lag={}, bad=7, onset=20)
    mon = Monitors()
    found: list = []
    for e in events[:5 * 16]:
        mon.process(e, found)
    job = mon._jobs["job-1"]
    forged = [step(T0 + 3.5, 1000, 3, node="evil", gpu=0, checksum="x")] + [
        step(T0 + 3.6, 2000 + i, 2, node="evil", gpu=i % 8, checksum="x") for i in range(5000)]
    for e in forged:
        mon.process(e, found)
    assert job._expected <= 2 * 16 + 64 + 16
    assert max(len(r) for r in job._partial.values()) <= 2 * 16 + 64 + 2
    fs = _checksum_findings(events[5 * 16:], mon)
    assert [(f.rank, f.evidence["step"]) for f in fs] == [(7, 20)]
    assert job._expected == 16


def test_a_restored_job_with_forged_vote_state_is_refused() -> None:
    # Untrusted input: a snapshot is a message on a topic.  A job whose step bookkeeping or
    # checksum vote state has the wrong shapes (a rank set that is a string, a size that is
    # NaN, a majority keyed by a string, a mismatch entry of four items) would fail on every
    # record of its job; it is refused on restore, and a well-formed one restores.
    events = _job(1, 16, 12, lag={}, bad=7, onset=6)
    mon = Monitors()
    found: list = []
    for e in events:
        mon.process(e, found)
    job = mon._jobs["job-1"]
    assert job._mismatch and job._done
    ok = decode_state(encode_state(mon))
    ok.check_restored()
    for field, bad in (("_partial", {3: "0123"}), ("_expected", float("nan")),
                       ("_expected", -1), ("_done", {"3": 16}),
                       ("_partial", {s: {1} for s in range(100)}),
                       ("_majority", {"x": "c"}), ("_mismatch", {7: [1.0, 0, 2, 3]}),
                       ("_pair", {7: ["a", 0, 1]})):
        was = getattr(job, field)
        setattr(job, field, bad)
        restored = decode_state(encode_state(mon))
        setattr(job, field, was)
        with pytest.raises(SnapshotRefused, match=f"JobMonitor.{field}"):
            restored.check_restored()
