"""blind15 (round 24): every reproducer of a faultline error the fifteenth blind generator found
replays (bench/blind15/cases, rebuilt by `python -m bench.blind15.make_cases`), each a strict
xfail whose reason is the finding. Measured on main 3849ae6 (the freeze; detector of eba06ec)."""

from __future__ import annotations

from bench.blind15.measure import replay
from bench.blind15.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind15")


def _no_page_on_the_late_node(sc: dict) -> bool:
    """pp01's rows arrive 2-5 min late and all at once, its steps on time: page nobody."""
    return not any((p["scope"] or {}).get("node") == "pp01" for p in sc["problems"])


# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    # O1 fixed by b15fix (round 24): the node's every port erring with leaf-b's signature from
    # the same moment is leaf-b's (its page notes pp04 and the stale file), not 8 NIC pages.
    "O1-moved-node-ports-as-nic-alerts": (bc.caught_and_no_stray("network"), None, 1),
    # O2 fixed by b15fix (round 24): the slow replica's one GPU under load well below the job's
    # clock with no reason is escalated (the replica's slowness its evidence), not the replica.
    "O2-stage-gpu-replica-escalated": (bc.caught_and_no_stray("slow_node"), None, 1),
    # O2b fixed by b15rest (round 26): tune pipe-s3's job sits in the replica-imbalance regime,
    # where a replica spanning nodes was scored only by its ranks' deviation from their replica
    # mates -- all 16 alike (p2p waits in compute_ms), so nothing paged in 700 s; a replica
    # _REPLICA_APART_Z of the replicas' spread over its peers is no batch (detector.steps).
    "O2b-stage-gpu-replica-read-as-batch": (bc.caught_and_no_stray("slow_node"), None, 1),
    # O3 fixed by o3node (round 27): fx10's collector writes NVML minor numbers (the job's
    # GPU 3 is 'gpu 1' in its thermal rows) and TP8 slows the node's 8 ranks alike, so no step
    # record can say which GPU: a GPU's heat or power whose rank shares its replica with the
    # node's other ranks, not found slow alone, is paged at the node (the number told in its
    # evidence) -- was gpu fx10/1, the wrong GPU, on 8 of 8 fabric logs.
    "O3-renumbered-hot-gpu": (bc.every_fault_caught, None, 1),
    # O4 fixed by live25 (round 25): a job with ranks on pp01 stepping well past its silence
    # holds the judgement (detector.liveness._stepping): its collector's, not the node's.
    "O4-late-batch-as-dead-node": (_no_page_on_the_late_node, None, 0),
}


_scored = bc.measure_scorer(CASES, replay)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
