"""blind18 (round 27): every reproducer of a faultline error the eighteenth blind generator found
replays (bench/blind18/cases, rebuilt by `python -m bench.blind18.make_cases`), each a strict
xfail whose reason is the finding. Measured on main 6c027a8 (the freeze; detector of b8335f6).
One cause under all three: a unit's identity is its host name, not (`cluster`, host name); each
cut with one cluster's rows only is right (C1 pages nothing, C2 and C3 are caught)."""

from __future__ import annotations

from bench.blind18.measure import replay
from bench.blind18.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind18")

# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    "C1-two-clusters-counters-read-as-jumps": (bc.nothing_paged, (
        "C1: east and west both name hosts gpu-001..008 (every record carries `cluster`); their "
        "port and ECC rows are read as one unit's, so each alternation is a counter reset and a "
        "rise (east's link_downed 4 and ~20,000 old symbol errors against west's 0, pcie_replay "
        "40 against 0): 13 problems in 200 s of a routine-only cut (link_flap at nics and both "
        "leaves, nic_errors 18,662, pcie_replay) -- 85 false positives in the 4 tune clusters "
        "logs; either cluster alone pages nothing"), 0),
    "C2-west-port-errors-under-east-names": (bc.every_fault_caught, (
        "C2: west's gpu-004 mlx5_3 errs from 449.6 s; the port of that name was already "
        "isolated as a link flap at 409 s from east's and west's link_downed interleaved (4 vs "
        "0), before the fault: one dedup key, a miss and a false positive; port-errors-west "
        "missed in 4 of 4 tune logs; west's rows alone catch it in 38.5 s"), 1),
    "C3-west-straggler-in-a-shared-job-name": (bc.every_fault_caught, (
        "C3: both clusters run a job named sft-7b (odd seeds): ranks 0-31 twice in one peer "
        "group; west's gpu-001/7 computing ~1.2x (its node's 8 ranks) is never escalated -- "
        "west's step rows alone give a node escalation in 9.6 s; slow-gpu-west missed in 3 of "
        "4 tune logs (s1-s3) and 1 of 4 held (s6), not only where the job names collide"), 1),
}


_scored = bc.measure_scorer(CASES, replay)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
