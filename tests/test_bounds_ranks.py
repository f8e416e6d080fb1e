"""Ranks that leave a live job give their slot back (room bounds, round 9).

A job keeps per-rank state in arrays indexed by a slot per rank it has seen
(detector/steps.py).  A rank in none of the job's last ``_GONE_STEPS`` steps
while the job steps on has left it (an elastic job that shrank, a producer
writing a stray rank number): its slot is freed, what it had reported is
withdrawn, and if it comes back it is a new rank -- with the start offset it
learned, on the same GPU.  A new rank is never refused.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from detector.findings import Finding
from detector.statecodec import decode_state, encode_state
from detector.steps import _GONE_CHECK_STEPS, _GONE_STEPS, JobMonitor
from detector.testing import T0, step
from detector.thresholds import Thresholds


def _steps(first: int, last: int, ranks: Iterable[int], slow: dict[int, float] | None = None,
           seed: int = 0, numbered_from: int | None = None) -> list:
    """Steps at ``T0 + first .. T0 + last - 1`` s of a pure data-parallel job (1 s a step) of
    these ranks, numbered from ``first`` (or ``numbered_from``: a restart from a checkpoint);
    ``slow``: rank -> compute factor."""
    ranks = list(ranks)
    rng = np.random.default_rng(seed + first)
    shift = 0 if numbered_from is None else numbered_from - first
    out = []
    for s in range(first, last):
        noise = rng.lognormal(0.0, 0.015, len(ranks))
        for i, r in enumerate(ranks):
            compute = 700.0 * noise[i] * (slow or {}).get(r, 1.0)
            out.append(step(T0 + s + 0.001 * r, r, s + shift, compute_ms=round(compute, 2),
                            step_ms=1000.0))
    return out


def _run(job: JobMonitor, events: list) -> list[Finding]:
    out: list[Finding] = []
    for e in events:
        job.add(e, out)
    return out


def _slow(findings: list[Finding], rank: int) -> list[tuple[bool, str]]:
    return [(f.active, f.evidence.get("note", "")) for f in findings
            if f.signal == "slow_rank" and f.rank == rank]


def test_a_rank_that_left_is_withdrawn_and_paged_afresh_when_it_comes_back() -> None:
    job = JobMonitor("job-1", Thresholds())
    found = _run(job, _steps(0, 60, range(16), slow={3: 1.3}))
    assert [a for a, _ in _slow(found, 3)] == [True]
    # Rank 3 leaves; the job steps on with 15 ranks.
    away = 60 + _GONE_STEPS + _GONE_CHECK_STEPS
    found = _run(job, _steps(60, away, [r for r in range(16) if r != 3]))
    assert _slow(found, 3) == [(False, f"the rank left the job: in none of its last "
                                       f"{_GONE_STEPS} steps")]
    assert sorted(job._rank_of) == [r for r in range(16) if r != 3]
    assert 3 not in job._slot
    # Back, still slow: a new rank (its placement told again), paged again.
    found = _run(job, _steps(away, away + 30, range(16), slow={3: 1.3}))
    assert [f.evidence["placement"] for f in found if f.signal == "job_layout"] == [
        [[3, "node-000", 3, 3]]]
    assert [a for a, _ in _slow(found, 3)] == [True]
    assert len(job._rank_of) == 16


def test_an_elastic_job_keeps_every_rank_it_grows_to_and_gives_back_those_it_loses() -> None:
    job = JobMonitor("job-1", Thresholds())
    _run(job, _steps(0, 300, range(8)))
    # Grown to 16 ranks, restarted from its checkpoint of step 250: 8 new ranks, all kept.
    found = _run(job, _steps(310, 600, range(16), numbered_from=250))
    assert job.restarts == 1
    assert sorted(job._rank_of) == list(range(16))
    assert sum(len(f.evidence["placement"]) for f in found if f.signal == "job_layout") == 8
    whole = job._whole_at
    found = _run(job, _steps(600, 600 + _GONE_STEPS + _GONE_CHECK_STEPS, range(8)))
    assert sorted(job._rank_of) == list(range(8))
    assert not [f for f in found if f.active and f.signal != "job_layout"]
    # Its steps are whole again: the usual step's path (every slot in the step).
    _run(job, _steps(1000, 1003, range(8)))
    assert job._whole_at > whole


def test_a_rank_with_a_start_offset_back_on_its_gpu_keeps_it() -> None:
    # Rank 5 is 8 % slower from the job's start: learned as its baseline, never paged.  Its
    # reporter goes quiet for longer than _GONE_STEPS steps while the job steps on; back on
    # the same GPU, as slow as ever, it is still not paged (a fresh slot would learn at most
    # 2 % after warm-up, and page the 8 %).
    job = JobMonitor("job-1", Thresholds())
    found = _run(job, _steps(0, 100, range(16), slow={5: 1.08}))
    assert 5 in job.start_offsets and not _slow(found, 5)
    away = 100 + _GONE_STEPS + _GONE_CHECK_STEPS
    found = _run(job, _steps(100, away, [r for r in range(16) if r != 5]))
    assert 5 not in job._slot
    found = _run(job, _steps(away, away + 200, range(16), slow={5: 1.08}))
    assert 5 in job._slot and not _slow(found, 5)
    assert 5 in job.start_offsets


def test_a_stray_rank_a_step_reaches_a_plateau_and_survives_a_snapshot() -> None:
    job = JobMonitor("job-1", Thresholds())
    out: list[Finding] = []
    for s in range(1000):
        job.add(step(T0 + s + 0.0005, 1000 + s, s, node="node-x", gpu=s % 8), out)
        for e in _steps(s, s + 1, range(8)):
            job.add(e, out)
    assert len(job._rank_of) <= 8 + _GONE_STEPS + _GONE_CHECK_STEPS
    assert len(job._base) <= 2 * len(job._rank_of) and len(job._slow.score) == len(job._base)
    assert not [f for f in out if f.active and f.signal != "job_layout"]
    restored = decode_state(encode_state(job))
    a: list[Finding] = []
    b: list[Finding] = []
    for s in range(1000, 1300):
        for e in _steps(s, s + 1, range(8), slow={2: 1.3} if s >= 1100 else None):
            job.add(e, a)
            restored.add(e, b)
    assert [f for f in a if f.signal == "slow_rank"] == [f for f in b if f.signal == "slow_rank"]
    assert [f.active for f in a if f.signal == "slow_rank"] == [True]
