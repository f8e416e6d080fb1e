"""blind19 (round 28): every reproducer of a faultline error the nineteenth blind generator found
replays (bench/blind19/cases, rebuilt by `python -m bench.blind19.make_cases`), each a strict
xfail whose reason is the finding. Measured on main c43292f (the freeze; detector of 1541298)
with the generator fix 'bad samples land on distinct replicas' (no case depends on it): tune
19/24 P 19/31, held-out 20/24 P 20/30 (BENCHMARKS.md "blind19, round 28")."""

from __future__ import annotations

from bench.blind19.measure import replay
from bench.blind19.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind19")

# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    # O1 fixed by b19fix (round 28): a node drained off its job (it saved on SIGTERM, exited,
    # and was requeued elsewhere 40-70 s later) that went dark 10-25 s after the job's last
    # step for a driver upgrade was escalated as a silent node with a stalled job -- its
    # requeued job's GPUs, busy again, were taken for ranks waiting on a lost peer
    "O1-drained-node-rebooted-paged-silent": (bc.nothing_paged, None, 0),
    # O2 fixed by o2diag (round 29): HW slowdown 0x8 held for 210 s on one GPU of a drained
    # node under `dcgmi diag -r 3` (clock 1224 MHz against its seven siblings' 1852 at 0x4,
    # power 479 W) raised nothing -- the GPU had run its job at 0x4 on every loaded sample,
    # so it had no clock baseline to measure the drop against (the clock its own cap held it
    # at is now that reference: tests/test_o2diag.py)
    "O2-diag-hw-slowdown-unraised": (bc.every_fault_caught, None, 1),
    # R1 fixed by sdc19 (round 29): in a TP4 x DP2 job a corrupted copy's checksum differed
    # from its only peer's (1:1, no majority) and was escalated at job scope ('rank 0 vs rank
    # 4'); the corrupted rank's own grad norm, jumping x1.2-1.5 on the split step while its
    # peer's stayed ordinary, now names its GPU (tests/test_sdc19.py)
    "R1-dp2-checksum-pair-escalated-as-job": (bc.every_fault_caught, None, 1),
    # R2 fixed by sdc19 (round 29): with TP1 a replica is one GPU; its repeated SDC loss spikes
    # were escalated at the GPU (grad_outlier), then 53-127 s later again at replica scope
    # (loss_outlier, a new dedup_key for the same problem); the replica's finding now joins the
    # GPU's open page as evidence (correlate._sdc_joins_gpu, tests/test_sdc19.py)
    "R2-one-gpu-replica-sdc-paged-twice": (bc.caught_and_no_stray("sdc"), None, 2),
    # R3 fixed by cap19 (round 29): a BMC power cap on every GPU of a node (0x4 at ~500 W on
    # all eight, its eight TP1 ranks x1.12) was isolated first at the GPU whose sample of the
    # poll came first, then 20 s later at the node, and the GPU page stayed (2 of 4 capped
    # logs); the capped GPU's page now waits for the poll (Correlator._hold_for_poll)
    "R3-node-cap-paged-at-one-gpu-first": (bc.caught_and_no_stray("slow_node"), None, 2),
}


_scored = bc.measure_scorer(CASES, replay)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
