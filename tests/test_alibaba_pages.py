"""What faultline pages on real per-worker iteration times (Alibaba PAI), pinned page by page.

The excerpts in tests/data are unchanged slices of Alibaba's ``job_3_norm.csv`` (iterations
801-2481) and ``job_4_norm.csv`` (iterations 1-1500), from the public clusterdata repository
(``cluster-trace-gpu-v2020/mini-batch-time``), CC BY 4.0, Alibaba Group.  Alibaba's notes: job 3
"could have multiple stragglers", job 4 "multiple stragglers".

Round 18's MoE-routing holds (moe18) silenced both for four rounds unnoticed: two ranks found
slow on two nodes within 5 steps were taken as routing visiting unit after unit, and held for as
long as both stayed slow -- at any point of a job's life, also in a job whose wander index read
i.i.d. (0.8-1.1).  Round 17 paged them; rounds 18-21 did not.  Pinning the pages catches the next
drift the day it happens.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.alibaba_replay import DATA, ratio_table, replay_job

HERE = Path(__file__).parent / "data"


def test_job_3s_workers_slowing_together_late_in_a_steady_job_are_paged() -> None:
    # Workers 6 and 7 run 1.3x the steady workers (2-5) from iteration ~2200 to the job's end,
    # workers 8 and 9 1.15x from 2200, 1.27-1.30x from 2300 (the ratio table in BENCHMARKS
    # "ali22, round 22"); before, the job's wander index read 0.8-1.1 for 140 samples: no
    # routing.  Round 21: no page at all; round 22 (ali22): workers 6 and 7 only -- with four
    # of ten slow (and workers 0, 1 1.1x from the start) the peer median and the job's noise
    # were the slow workers' (noise 4 % -> 13 %: worker 8's CUSUM peaked at 3.4 of 10), and the
    # wander index the slow workers lifted (0.9 -> 6) held them as routing.  ali23: workers
    # told slow leave the reference (JobMonitor._untold_reference), an index read calm for
    # 100 steps no longer holds them as visiting.  n1run (round 30): job 3's noise comes in
    # runs (lag-1 ~0.55 before the slowdown), and an alarm is reported once the run also
    # scores on z whitened by it (JobMonitor._ar_step) -- 3-6 samples later than the
    # independent-step CUSUM's (6, 2204), (7, 2204), (8, 2304), (9, 2334); the alarmed ranks
    # are out of the reference meanwhile, as told ones are (without that: none paged).
    job = replay_job(HERE / "alibaba_job_3_excerpt.csv")
    assert job["pages"] == [(7, 2234), (6, 2244), (8, 2364), (9, 2394)]
    assert job["refired"] == 0 and not job["invalid"]


def test_job_4s_five_workers_slow_from_the_start_are_paged_once_routing_is_ruled_out() -> None:
    # Workers 0, 5, 6, 7, 8 run 3.7-5.3x the others from the first iteration.  Gross on 3+
    # nodes in warm-up is held as a routing workload's until the wander index can be read
    # (130 steps = iteration ~1300); it reads ~0.01 there, so they are paged then, each once.
    job = replay_job(HERE / "alibaba_job_4_excerpt.csv")
    assert job["pages"] == [(w, 1294) for w in (0, 5, 6, 7, 8)]
    assert job["problems"] == 5 and job["refired"] == 0


# (was a strict xfail, lead41: job 4's worker 3 paged at 17,014, its 32nd sample, where round 40
# paged it at 16,804.  noise41's excursion hold (JobMonitor._excursion_held) read the spread of
# w3's run against its peers' mean excursion variance -- the five workers told slow at 1,294
# (3.7-5.3x, their variance learnt in the warm-up: 0.28-0.46 in log at 3 steps, 15-20x the fast
# half's 0.018-0.047) among them, so w3's 1.2-1.5x run stood at z ~1.2 and was held until its
# length shrank the spread.  noise42: peers told slow leave that reference as they leave the
# peer median, JobMonitor._untold_reference; w3 stands 12 of its untold peers' spread at once.)
@pytest.mark.parametrize(("job", "pages"), [
    # worker 6, Alibaba's straggler, 33 iterations after it reaches 1.3x.  Worker 2 (paged at
    # 944 to round 29: +3.8-8.2 % over its peers for 8 samples, then back; Alibaba names only
    # worker 6) is blind20 N1's shape on real data: a run the job's lag-1 (0.58-0.78) makes
    # (n1run, round 30: JobMonitor._ar_step)
    (1, [(6, 1844)]),
    (2, []),                            # workers differ, steadily: learned start offsets
    (3, [(7, 2234), (6, 2244), (8, 2364), (9, 2394)]),   # (ali23: 8 and 9 too; n1run: above)
    # ali23: with five of ten told slow, the other five are judged against one another (not
    # against a median between the two halves, in a noise of both): worker 9, its peers'
    # >= 10 % outlier on 15-29 % of the samples (the other four 0-20 %), and worker 1, 1.7-3.6x
    # on 5 samples of 20 from ~20,960, by the recurring rule; worker 3, below.  inter24: worker
    # 9 at 11,384 (was 11,214): its count, 4x the other four's mean at 11,214, is held until the
    # job's outlier samples falling on the five alike would give it under 1 in 1,000
    # (JobMonitor._recur_chance; blind14 N6).  n1run: worker 3 at 16,804 (was 16,814), below
    (4, [(w, 1294) for w in (0, 5, 6, 7, 8)] + [(9, 11384), (3, 16804), (1, 21174)]),
])
def test_the_whole_replay_pages_what_it_paged_when_last_judged(job: int, pages: list) -> None:
    """bench/alibaba_replay.py's output, job by job (round 22's judgement: BENCHMARKS "ali22").
    A change here is a change of what faultline says on the only real data it has: judge it on
    the data, then update this pin and say so in BENCHMARKS."""
    assert replay_job(DATA / f"job_{job}_norm.csv")["pages"] == pages


def test_the_ratio_table_shows_job_3s_four_workers_slowing_against_the_steady_ones() -> None:
    job = replay_job(HERE / "alibaba_job_3_excerpt.csv")
    rows = {line.split()[0]: line.split()[1:]
            for line in ratio_table(job["records"], 100, ref=[2, 3, 4, 5]).splitlines()[1:]}
    assert rows["2000-2099"][6:] == ["1.00", "1.01", "0.99", "1.01"]
    assert rows["2300-2399"][6:] == ["1.29", "1.32", "1.27", "1.30"]


def test_job_4s_straggler_among_the_fast_half_is_paged_once_and_resolves() -> None:
    """Job 4's worker 3 runs 1.19-1.56x the other fast workers (1, 2, 4, 9) from iteration
    ~16,700 to ~17,500, then at their pace again (``--ratios 100 --ref 1,2``): paged in its
    11th sample (n1run, round 30: its 12th before -- alarmed at 16,781 and held two samples,
    not by the run test, it is out of the reference meanwhile as a told rank is, the job's
    lag-1 (0.28) in force), resolved after it, once.  Before (rounds 18-22) the five fast
    workers were judged against a median between them and the five 3.7-5.3x slow ones, in a
    noise of both halves (the peer MAD 0.9-1.0 in log): nothing in the fast half could ever
    page.  And the slow workers 5, 6 going from ~4x to 13-17x at ~18,800 is the same
    incident, already paged: no second page (issue 10)."""
    job = replay_job(DATA / "job_4_norm.csv")
    assert (3, 16804) in job["pages"] and [w for w, _ in job["pages"]].count(3) == 1
    assert [it for w, it in job["resolved"] if w == 3] == [18261]
    assert job["refired"] == 0
    assert [it for w, it in job["pages"] if w in (5, 6)] == [1294, 1294]
