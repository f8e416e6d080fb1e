"""blind18 (round 27): every reproducer of a faultline error the eighteenth blind generator found
replays (bench/blind18/cases, rebuilt by `python -m bench.blind18.make_cases`), each a strict
xfail whose reason is the finding. Measured on main 6c027a8 (the freeze; detector of b8335f6).
One cause under all three: a unit's identity is its host name, not (`cluster`, host name); each
cut with one cluster's rows only is right (C1 pages nothing, C2 and C3 are caught).

clusters27 (round 27): the two pipeline stages keep each `cluster` value's units apart (monitors
and a correlator of its own per cluster after the first: SourcePartition / CorrelatorPartition
`others`), and all three are right -- C1 pages nothing
(it paged 13 problems: the clusters' port / ECC counters read as one unit's resets and rises),
C2 catches west's erring port (it was "isolated" as a link flap before its errors started),
C3 escalates west's straggler (ranks 0-31 of two jobs named sft-7b were one peer group)."""

from __future__ import annotations

from bench.blind18.measure import replay
from bench.blind18.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind18")

# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    "C1-two-clusters-counters-read-as-jumps": (bc.nothing_paged, None, 0),
    "C2-west-port-errors-under-east-names": (bc.every_fault_caught, None, 1),
    "C3-west-straggler-in-a-shared-job-name": (bc.every_fault_caught, None, 1),
}


_scored = bc.measure_scorer(CASES, replay)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
