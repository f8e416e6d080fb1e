"""A step decided without a straggler keeps each peer group's checksum: the straggler's own
checksum, arriving late, is still voted on (JobMonitor._late against _check_checksums'
record of an incomplete step)."""

from __future__ import annotations

from detector.findings import Finding
from detector.steps import JobMonitor
from detector.testing import T0, step
from detector.thresholds import Thresholds


def _run(late_checksum: str) -> list[Finding]:
    mon = JobMonitor("job-1", Thresholds())
    out: list[Finding] = []
    for s in range(14):
        for r in range(16):
            if s == 11 and r == 13:
                continue  # the straggler of step 11 (tp 1, pp 0): it comes two steps later
            mon.add(step(T0 + s + 0.001 * r, r, s, tp=r // 8, dp=r % 8,
                         checksum=f"c{s}-{r // 8}"), out)
        if s == 13:
            mon.add(step(T0 + s + 0.5, 13, 11, tp=1, dp=5, checksum=late_checksum), out)
    return out


def test_a_late_straggler_disagreeing_with_its_groups_majority_is_flagged() -> None:
    found = [f for f in _run("bad") if f.signal == "checksum_mismatch"]
    assert [(f.active, f.rank, f.evidence.get("arrived_late"), f.evidence["majority_checksum"])
            for f in found] == [(True, 13, True, "c11-1")]


def test_a_late_straggler_agreeing_with_its_group_is_not() -> None:
    assert [f for f in _run("c11-1") if f.signal.startswith("checksum")] == []
