"""One engine: the same pages whatever other streams, the CPU or the batching do (svc37, issue 14).

A page must be a function of the records -- their event times and DESIGN's 5 s of disorder --
never of how other topics' records interleave with a job's, how fast a worker polls, how a
batch is cut or which partitions one worker holds.
"""

from __future__ import annotations

from detector.monitors import Monitors
from detector.testing import T0, healthy_job, thermal


def _written(late_s: float, thermal_every_s: float | None) -> list:
    """A 16-rank job stepping every 6 s whose rank 15 is 35 % slow from step 12 and whose
    step messages are written ``late_s`` after its peers' (within DESIGN's 5 s of disorder),
    with, every ``thermal_every_s``, a thermal sample of each of its GPUs: in write order."""
    steps = list(healthy_job(ranks=16, steps=40, step_s=6.0, slow={15: 1.35}, slow_from=12))
    rows = [(e.ts + (late_s if e.rank == 15 else 0.0), e) for e in steps]
    if thermal_every_s is not None:
        end = steps[-1].ts + late_s
        k = 1
        while T0 + k * thermal_every_s <= end:
            t = T0 + k * thermal_every_s
            rows += [(t, thermal(t, f"node-{n:03d}", g)) for n in range(2) for g in range(8)]
            k += 1
    return [e for _, e in sorted(rows, key=lambda r: r[0])]


def _slow_findings(records: list) -> tuple[list[tuple[str, int | None]], int]:
    mon = Monitors()
    found: list = []
    for e in records:
        mon.process(e, found)
    mon.finish(found)
    job = mon._jobs["job-1"]
    steps = {"slow_rank", "slow_burst", "job_layout"}  # (the thermal rows' own are not compared)
    return sorted({(f.signal, f.rank) for f in found if f.signal in steps}), job.late


def test_a_rank_written_after_other_topics_records_is_in_its_step() -> None:
    """meta35 blind7 G3's mechanism: one rank's step message written 2 s after its peers',
    while other topics' records (a thermal sample of each GPU every 0.5 s) moved the replay's
    one clock on.  The step's straggler wait ran on that clock, so the step was decided
    without the rank (straggler_wait_s 0.5 s), which came late and was never compared: its
    35 % slowdown was never seen (a service's step partition, moved by steps only, saw it).
    The wait runs on the job's own clock: the same ranks, the same findings, with the
    thermal rows or without them.  (Fails before: 39 of its 40 messages late.)"""
    alone, late_alone = _slow_findings(_written(2.0, None))
    with_thermal, late_mixed = _slow_findings(_written(2.0, 0.5))
    assert late_alone == late_mixed == 0
    assert ("slow_rank", 15) in alone
    assert with_thermal == alone

