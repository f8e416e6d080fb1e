"""blind13 (round 22): every reproducer of a faultline error the thirteenth blind generator found
replays (bench/blind13/cases, rebuilt by `python -m bench.blind13.make_cases`), each a strict
xfail whose reason is the finding. Measured on main 791807a (the freeze; detector of 1f6034b)."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest

from bench.blind13.measure import replay
from bench.blind13.score import labels_of
from tests.test_blind12_cases import _caught_within_1s, _every_fault_caught, _known_error

CASES = Path(__file__).resolve().parent.parent / "bench" / "blind13" / "cases"


# case -> (what a right answer looks like, the strict-xfail reason or None)
EXPECT: dict[str, tuple] = {
    # M1 (a rank hung, its 47 peers spinning: nothing paged) fixed by b13fix: detector.hang
    # names the idle GPU once the job is silent hang_s (escalation at gr-01/1).
    "M1-rank-hang-no-page": (_every_fault_caught, None),
    # M2 (a link down paged 13.5 s late, its switch window) fixed by m2-23: a sibling port of
    # its node the topology puts on the same leaf, sampled up after it, decides it
    # (NodeNics._up_beside, Correlator._up_beside).
    "M2-link-down-13s-late": (_caught_within_1s, None),
}


@functools.cache
def _scored(name: str) -> dict:
    return replay(CASES / f"{name}.jsonl.gz",
                  Path(tempfile.mkdtemp(prefix="blind13-")) / f"{name}.alerts.jsonl")


def test_every_case_has_an_expectation_and_a_label():
    names = sorted(p.name.removesuffix(".jsonl.gz") for p in CASES.glob("*.jsonl.gz"))
    assert set(names) == set(EXPECT)
    assert [len(labels_of(CASES / f"{n}.jsonl.gz")) for n in names] == [1] * len(names)


@pytest.mark.parametrize("name", [pytest.param(n, marks=_known_error(why))
                                  for n, (_, why) in EXPECT.items()])
def test_case(name):
    sc = _scored(name)
    assert EXPECT[name][0](sc), ([f for f in sc["faults"] if not f["caught"]],
                                 [p for p in sc["problems"] if not p["caught"]])
