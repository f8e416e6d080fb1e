"""blind16 (round 25): every reproducer of a faultline error the sixteenth blind generator found
replays (bench/blind16/cases, rebuilt by `python -m bench.blind16.make_cases`), each a strict
xfail whose reason is the finding. Measured on main 25af276 (the freeze; detector of b569a9c)."""

from __future__ import annotations

from bench.blind16.measure import replay
from bench.blind16.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind16")


# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    "P1-overlap-straggler-unseen": (bc.every_fault_caught, None, 1),
    "P2-overlap-power-capped-straggler-late": (bc.caught_within(30.0), None, 1),
}


_scored = bc.measure_scorer(CASES, replay)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
