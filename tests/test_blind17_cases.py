"""blind17 (round 26): every reproducer of a faultline error the seventeenth blind generator found
replays (bench/blind17/cases, rebuilt by `python -m bench.blind17.make_cases`), each a strict
xfail whose reason is the finding. Measured on main 33b85b5 (the freeze; detector of 14100ff)."""

from __future__ import annotations

from bench.blind17.measure import replay
from bench.blind17.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind17")


def _caught_with_cause(sc: dict) -> bool:
    """Every fault caught, each by an alert naming its cause."""
    return bc.every_fault_caught(sc) and all(f["cause_ok"] for f in sc["faults"])


# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    # Q1 (fixed by b17clock, round 27): ck06 ran 19.9 s ahead (its skew learned), chrony
    # stepped it back, and its XID 92 1.9 s later was dated by the stale correction, 20 s
    # early -- a miss and a false positive (7 of 8 clocks logs, tune and held).  Since: a
    # record of a node ahead whose own ts is the clock's again drops the offset (_deskew).
    "Q1-xid-after-clock-step-dated-early": (bc.every_fault_caught, None, 2),
    # Q2 (fixed by b17clock, round 27, reverted; fixed by q2clock, round 28): ck05's clock
    # 21.2 s ahead (ck06 8.1 s behind and the partition's first record), no fault: ck05 took
    # the clock ("the stream moves in jumps" just after it moved 8.3 s from ck06's), the nine
    # other hosts looked silent against its ts ('nodes_heard_since': 1) and spine-1 was
    # escalated unattributed (tune s1).  Since: a stream that moves in jumps moves by its
    # period -- a lead past the move that brought the clock here, by more than AHEAD_S, is
    # judged as any record ahead (Monitors._ahead), and ck05 is taken at its offset.
    "Q2-host-ahead-darkens-the-fleet": (bc.nothing_paged, None, 0),
    # N1 (fixed by b17name, round 27: detector/node_names.py): dcgm-exporter names gn06/gn07
    # 'gnNN.pod2.corp.example', the job and the topology 'gnNN' -- one host, one node.
    "N1-fqdn-named-dcgm-rows": (_caught_with_cause, None, 2),
}


_scored = bc.measure_scorer(CASES, replay)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
