"""Room sdc13, round 13: a checksum tie is one job page (blind4 D2), and what ends it.

Two replicas whose parameters differ cannot say which one is wrong: one escalation at job
scope naming both candidates (detector.sdc).  Three or more replicas with a strict majority
still name the minority GPU on the same step (its page an escalation since sdc16); a tie
that a later majority breaks (a third replica voting after a rebalance) becomes that GPU's
page and the job's page resolves as answered; a candidate leaving the job ends the tie too.
"""

from __future__ import annotations

from detector.alerts import ESCALATION, Alert
from detector.engine import Engine
from detector.testing import T0, feed, step


def _job(steps: int, bad_from: int, *, replicas=lambda s: 2, bad_rank: int = 1) -> list:
    """One rank a replica, each on its own node (pure DP); ``bad_rank``'s parameters differ
    from ``bad_from`` on; ``replicas(step)``: how many replicas report that step."""
    return [step(T0 + s + 0.001 * r, r, s, node=f"node-{r:03d}", gpu=0, dp=r,
                 checksum="ff" if (r == bad_rank and s >= bad_from) else f"c{s}")
            for s in range(steps) for r in range(replicas(s))]


def _seen(alerts: list[Alert]) -> list[tuple[str, str, str, str, str]]:
    return [(a.status, a.topic, a.kind, a.cause, a.scope.key) for a in alerts]


def test_a_majority_isolates_the_minority_gpu_on_the_same_step() -> None:
    # (Its GPU's page is an escalation since sdc16: a rerun tells a transient upset from a GPU
    # that computes wrong before it is drained.)
    alerts = feed(Engine(), _job(30, 12, replicas=lambda s: 4, bad_rank=3))
    assert _seen(alerts) == [("firing", ESCALATION, "sdc", "gpu_hardware", "gpu:node-003/0")]
    assert alerts[0].detected_ts == T0 + 12 + 0.003  # the step's last message


def test_a_tie_is_one_job_page_naming_both_candidates() -> None:
    alerts = feed(Engine(), _job(30, 10))
    assert _seen(alerts) == [("firing", ESCALATION, "sdc", "unknown", "job:job-1")]
    (a,) = alerts
    assert a.detected_ts == T0 + 10 + 0.001  # the step's last message: the same step
    sig = a.evidence["signals"][0]
    assert sig["candidate_ranks"] == [0, 1]
    assert sig["candidates"] == "rank 0 (GPU 0 on node-000) vs rank 1 (GPU 0 on node-001)"
    assert "third GPU" in a.evidence["next_diagnostic"]


def _rebalanced(third: str) -> list:
    """DP 2, rank 1 disagreeing from step 10; at step 25 the job restarts from its step-15
    checkpoint with a third replica (a rebalance), whose checksum is ``third``'s side."""
    before = [e for e in _job(25, 10)]
    after = [e._replace(ts=e.ts + 20.0) for e in _job(60, 10, replicas=lambda s: 3)
             if e.step >= 15]
    if third == "rank 1":
        after = [e._replace(param_checksum="ff") if e.rank == 2 else e for e in after]
    return before + after


def test_a_tie_a_third_replica_breaks_isolates_the_loser_and_answers_the_job_page() -> None:
    # The third replica agrees with rank 0: rank 1 loses the vote on the restart's first
    # step -- its GPU isolated, the job's page resolved (answered), nothing left for rank 0.
    alerts = feed(Engine(), _rebalanced("rank 0"))
    assert _seen(alerts) == [
        ("firing", ESCALATION, "sdc", "unknown", "job:job-1"),
        ("firing", ESCALATION, "sdc", "gpu_hardware", "gpu:node-001/0"),
        ("resolved", ESCALATION, "sdc", "unknown", "job:job-1")]
    assert T0 + 35 < alerts[1].detected_ts < T0 + 37  # step 15 again (20 s later), decided
    #                                                  when the next step begins
    assert alerts[2].detected_ts >= alerts[1].detected_ts


def test_a_tie_broken_the_other_way_isolates_the_other_candidate() -> None:
    # The same, the third replica siding with rank 1 (rank 0 is the one that went wrong).
    alerts = feed(Engine(), _rebalanced("rank 1"))
    assert [(a.status, a.scope.key) for a in alerts] == [
        ("firing", "job:job-1"), ("firing", "gpu:node-000/0"), ("resolved", "job:job-1")]


def test_a_tie_whose_candidate_leaves_the_job_is_over() -> None:
    # Rank 1's node goes away at step 20; rank 0 steps on alone: no vote can decide the tie
    # any more, and no step will confirm it -- the job's page resolves (a rank that left
    # withdraws what it reported, as for a slow rank).
    alerts = feed(Engine(), _job(400, 10, replicas=lambda s: 2 if s < 20 else 1))
    assert _seen(alerts)[0] == ("firing", ESCALATION, "sdc", "unknown", "job:job-1")
    assert _seen(alerts)[-1] == ("resolved", ESCALATION, "sdc", "unknown", "job:job-1")
    assert len(alerts) == 2
