"""blind13 (round 22): every reproducer of a faultline error the thirteenth blind generator found
replays (bench/blind13/cases, rebuilt by `python -m bench.blind13.make_cases`), each a strict
xfail whose reason is the finding. Measured on main 791807a (the freeze; detector of 1f6034b)."""

from __future__ import annotations

from bench.blind13.measure import replay
from bench.blind13.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind13")


# case -> (what a right answer looks like, the strict-xfail reason or None)
EXPECT: dict[str, tuple] = {
    # M1 (a rank hung, its 47 peers spinning: nothing paged) fixed by b13fix: detector.hang
    # names the idle GPU once the job is silent hang_s (escalation at gr-01/1).
    "M1-rank-hang-no-page": (bc.every_fault_caught, None),
    # M2 (a link down paged 13.5 s late, its switch window) fixed by m2-23: a sibling port of
    # its node the topology puts on the same leaf, sampled up after it, decides it
    # (NodeNics._up_beside, Correlator._up_beside).
    "M2-link-down-13s-late": (bc.caught_within(1.0), None),
}


_scored = bc.measure_scorer(CASES, replay)


def test_every_case_has_an_expectation_and_a_label():
    assert bc.label_counts(CASES, labels_of) == dict.fromkeys(EXPECT, 1)


test_case = bc.case_test(EXPECT, _scored)
