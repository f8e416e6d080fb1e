"""blind12 (round 21): every reproducer of a faultline error the twelfth blind generator found
replays (bench/blind12/cases, rebuilt by `python -m bench.blind12.make_cases`), each a strict
xfail whose reason is the finding. Measured on main 03b193b (the freeze; detector of c2d6b2f)."""

from __future__ import annotations

from bench.blind12.measure import replay
from bench.blind12.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind12")


# case -> (what a right answer looks like, the strict-xfail reason or None)
EXPECT: dict[str, tuple] = {
    # B1 (a rack's power brake as 3-15 tray alerts, never the domain) fixed by rack22:
    # detector.domain_brake, one isolation at the NVLink domain.
    # Right: caught at the domain, and no tray alert beside it (DESIGN: nothing coarser or
    # finer). Only slow_node problems are trays': the B1 cut also holds the inf-grads GPU
    # gb-b08/0 from 567 s (no label in the cut), paged sdc since host22 (B2) -- a catch of
    # another fault.
    "B1-rack-brake-as-tray-alerts": (bc.caught_and_no_stray("slow_node"), None),
    # B2 (a rank's non-finite grads hidden by loss-scale skips: nothing sent) fixed by host22:
    # detector.overflow_source (the sole null rank of skipped steps, beyond chance).
    "B2-inf-grads-hidden-by-loss-scale": (bc.every_fault_caught, None),
    # B3 (a CPU hog under every job of b200-06: nothing sent) fixed by host22: detector.host_rise
    # (each job's host time on a node against its own past / its other nodes) and
    # detector.host_node (several jobs risen on one node, not elsewhere: the node's escalation).
    "B3-cpu-hog-node": (bc.every_fault_caught, None),
    # B4 (XID 149 caught 8-31 s late at the next counter poll) fixed by b12fix: XIDs 144-150.
    # (DESIGN's target for hardware events -- XID, DBE, link down: <= 1 s after the event)
    "B4-xid149-not-an-event": (bc.caught_within(1.0), None),
    # B5 (a slow GPU of a DP2 job unflagged 183-369 steps) fixed by b12fix: JobMonitor._check_pair.
    "B5-slow-gpu-two-peers": (bc.every_fault_caught, None),
}


_scored = bc.measure_scorer(CASES, replay)


def test_every_case_has_an_expectation_and_a_label():
    assert bc.label_counts(CASES, labels_of) == dict.fromkeys(EXPECT, 1)


test_case = bc.case_test(EXPECT, _scored)
