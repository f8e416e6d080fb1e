"""Two gaps of the variation matrix (issue 10): two replicas that disagree, and a job that stops."""

from __future__ import annotations

from detector.alerts import ESCALATION, Alert
from detector.engine import Engine
from detector.testing import T0, feed, healthy_job, step, thermal
from detector.thresholds import Thresholds


def firing(alerts: list[Alert]) -> list[tuple[str, str, str, str]]:
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


# -- DP 2: no majority among two checksums, but corruption must not go unnoticed ------------


def two_replicas(bad_from: int | None, *, steps: int = 30) -> list:
    """tp 2 x dp 2: ranks 0,1 (replica 0) on node-000, ranks 2,3 (replica 1) on node-001.

    Rank 3's parameters differ from its only peer, rank 1, from ``bad_from`` on."""
    return [step(T0 + s + 0.001 * r, r, s, node=f"node-{r // 2:03d}", gpu=r % 2, tp=r % 2,
                 dp=r // 2, checksum="ff" if (r == 3 and bad_from is not None and s >= bad_from)
                 else f"c{s}-{r % 2}")
            for s in range(steps) for r in range(4)]


def test_two_replicas_that_disagree_are_one_job_escalation_on_the_same_step() -> None:
    # Which of the two is wrong no checksum can tell: neither GPU surely holds the fault, the
    # job does (blind4 D2: one page per candidate GPU was two pages, each wrong half the time).
    assert firing(feed(Engine(), two_replicas(None))) == []
    alerts = feed(Engine(), two_replicas(12))
    assert firing(alerts) == [(ESCALATION, "sdc", "unknown", "job:job-1")]
    (a,) = alerts
    assert a.onset_ts == T0 + 12 + 0.001  # the pair's first message of that step
    assert a.detected_ts == T0 + 12 + 0.003  # the step's last message: the same step
    sig = a.evidence["signals"][0]
    assert sig["signal"] == "checksum_pair"
    assert sig["candidates"] == "rank 1 (GPU 1 on node-000) vs rank 3 (GPU 1 on node-001)"
    assert "rerun step 12 on a third GPU" in a.evidence["next_diagnostic"]
    assert "node-000 and node-001" in a.evidence["next_diagnostic"]
    # Agreeing again for checksum_clear_steps steps clears it.
    events = [e if e.step < 12 or e.step >= 15 or e.rank != 3 else e._replace(param_checksum="ff")
              for e in two_replicas(None, steps=60)]
    alerts = feed(Engine(), events)
    assert [(a.status, a.scope.key) for a in alerts] == [("firing", "job:job-1"),
                                                        ("resolved", "job:job-1")]


def test_a_tie_of_more_than_two_replicas_is_still_a_job_split() -> None:
    events = [step(T0 + s + 0.001 * r, r, s, dp=r, checksum="ff" if (r >= 2 and s >= 10)
                   else f"c{s}") for s in range(20) for r in range(4)]
    assert firing(feed(Engine(), events)) == [(ESCALATION, "sdc", "unknown", "job:job-1")]


# -- a job that stops (a node reboots): its slow ranks are not left to page ----------------


def stopping(stop_at: int, *, resume_at: float | None = None) -> list:
    """A 10 % slow rank from step 20; the job stops at ``stop_at`` while other telemetry keeps
    the clock moving; with ``resume_at`` it goes on from there, still slow."""
    events = [e for e in healthy_job(steps=60, slow={3: 1.10}, slow_from=20) if e.step < stop_at]
    events += [thermal(T0 + stop_at + k, "node-009", 0) for k in range(80)]
    if resume_at is not None:
        events.sort(key=lambda e: e.ts)
        more = [e._replace(ts=e.ts - stop_at + resume_at, step=e.step)
                for e in healthy_job(steps=120, slow={3: 1.10}, slow_from=0, seed=5)
                if e.step >= stop_at]
        events = [e for e in events if e.ts < resume_at] + more
    return events


def test_a_slow_rank_of_a_job_that_stopped_before_it_was_paged_is_withdrawn() -> None:
    # The correlator waits long for a cause (as at a 30 s telemetry interval): the job stops
    # meanwhile -- no step can confirm or clear the slowdown, and nobody is paged for it.
    cfg = Thresholds(escalate_after_s=40.0)
    assert firing(feed(Engine(cfg), stopping(60))) == [
        (ESCALATION, "slow_node", "unknown", "gpu:node-000/3")]
    assert firing(feed(Engine(cfg), stopping(32))) == []
    # The job resumes, still slow: the rank is found again.
    alerts = feed(Engine(cfg), stopping(32, resume_at=T0 + 100))
    assert firing(alerts) == [(ESCALATION, "slow_node", "unknown", "gpu:node-000/3")]
    assert alerts[0].detected_ts > T0 + 100


def test_a_rewound_step_number_after_a_reboot_pages_nobody() -> None:
    # The job restarts from its checkpoint 20 steps back after a node rebooted: step numbers
    # repeat, the vote and warm-up start afresh, and a healthy job raises nothing.
    first = list(healthy_job(steps=50))
    again = [e._replace(ts=e.ts + 200.0, step=e.step + 30) for e in healthy_job(steps=60, seed=3)]
    eng = Engine()
    assert firing(feed(eng, first + again)) == []
    assert eng.stats()["job_restarts"] == 1


# -- two candidates are a coin toss: the pages say so, and a known bad replica explains it ---


def test_a_two_replica_vote_is_one_page_that_names_neither_gpu_as_the_cause() -> None:
    # The page claims what the checksums say for sure -- a replica of this job computed
    # wrong -- and recommends nothing: an escalation, never an isolation of either GPU.
    alerts = [a for a in feed(Engine(), two_replicas(12)) if a.status == "firing"]
    assert len(alerts) == 1
    (a,) = alerts
    assert a.topic == ESCALATION and a.action.name == "investigate"
    assert a.evidence["raw_confidence"] == 0.9
    assert a.granularity.share_of_job == 1.0


def test_a_pair_left_after_a_reboot_does_not_page_the_healthy_replica() -> None:
    # dp 4 (one rank a node): rank 3's parameters go wrong at step 10 and the majority vote
    # names it; from step 15 nodes 0 and 1 are rebooting and only ranks 2 and 3 report.
    # Their disagreement is rank 3's known fault, not a coin toss that pages rank 2.  (Rank
    # 3's page is an escalation since sdc16: the vote says where, not why.)
    events = [step(T0 + s + 0.001 * r, r, s, node=f"node-{r:03d}", gpu=0, dp=r,
                   checksum="ff" if (r == 3 and s >= 10) else f"c{s}")
              for s in range(40) for r in range(4) if s < 15 or r >= 2]
    assert firing(feed(Engine(), events)) == [
        ("alerts.escalation", "sdc", "gpu_hardware", "gpu:node-003/0")]
