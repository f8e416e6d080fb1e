"""After a job restarts from a checkpoint, every rank is watched again (issue 10, scenario=reboot).

A restart is confirmed once half the job's ranks report an old step number.  The
messages before the confirming one were dropped: the first step after the restart was
decided with half the ranks, the job's size learned as that half, and each later step
was "complete" at its first half of messages -- the other ranks unwatched for the rest
of the job (tuning reproducer `bench/reboot_gradnorm.py`, seeds 9400..9519: 3 of 13
grad-norm SDCs missed).
"""

from __future__ import annotations

from detector.engine import Engine
from detector.testing import T0, feed, healthy_job, step

RANKS = 64


def restarted_job(slow: dict[int, float]) -> tuple[Engine, list]:
    before = list(healthy_job(ranks=RANKS, steps=40))
    # 60 s later (a node rebooted) the job resumes from step 0 of its checkpoint.
    after = list(healthy_job(ranks=RANKS, steps=60, t0=T0 + 100.0, slow=slow, slow_from=20,
                             seed=1))
    eng = Engine()
    return eng, feed(eng, before + after, finish=False)


def test_the_job_is_evaluated_with_all_its_ranks_after_a_restart() -> None:
    eng, _ = restarted_job({})
    job = eng.monitors._jobs["job-1"]
    assert job.restarts == 1
    assert job._expected == RANKS


def test_a_rank_that_reports_late_in_each_step_is_still_watched_after_a_restart() -> None:
    # Rank 60 reports after 60 others in every step (healthy_job spaces ranks 1 ms apart):
    # with half the job learned as its size, its messages came after each step was decided.
    eng, alerts = restarted_job({60: 1.15})
    gpu = step(T0, 60, 0)
    firing = {(a.kind, a.scope.key) for a in alerts if a.status == "firing"}
    assert ("slow_node", f"gpu:{gpu.node}/{gpu.gpu}") in firing
