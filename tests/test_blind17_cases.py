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
    "Q1-xid-after-clock-step-dated-early": (bc.every_fault_caught, (
        "Q1: ck06 ran 19.9 s ahead (its skew learned), chrony stepped it back, and its XID 92 "
        "1.9 s later is dated by the stale correction: onset/detected 20.0 s before the row's "
        "own ts, outside the label's window -- a miss and a false positive by DESIGN's rule "
        "(right GPU, right cause); 7 of 8 clocks logs (tune and held)"), 2),
    "Q2-host-ahead-darkens-the-fleet": (bc.nothing_paged, (
        "Q2: ck05's clock 21.2 s ahead (ck06 8.1 s behind), no fault: at ~150 s the nine other "
        "hosts look silent against ck05's ts ('nodes_heard_since': 1) and spine-1 is escalated "
        "unattributed (detected 181 s, resolved 815 s later); 1 of 8 clocks logs (tune s1)"), 0),
    "N1-fqdn-named-dcgm-rows": (_caught_with_cause, (
        "N1: dcgm-exporter names gn06/gn07 'gnNN.pod2.corp.example', the job and the topology "
        "'gnNN': the XID 74 is isolated at gpu gn07.pod2.corp.example/1 (a miss and a false "
        "positive by the rule), the hot GPU's thermal alert names the FQDN too and the step-row "
        "straggler on gn06 is escalated slow_node/unknown (the 0x60 at 90 C never joined); "
        "8 of 8 names logs"), 2),
}


_scored = bc.measure_scorer(CASES, replay)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
