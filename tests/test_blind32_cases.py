"""blind32 (round 41): every reproducer of a faultline error the thirty-second blind generator
(the training framework's own machinery: a job that heals itself, a zero-bubble pipeline whose
context doubles) found replays (bench/blind32/cases, rebuilt by
`python -m bench.blind32.make_cases`), each a strict xfail whose reason is the finding; the
guards (a GPU off the bus with an in-process restart on a spare that runs hot, snapshots with a
persist rotation, replication bursts and burn-ins, a port back at half rate, a context
extension with a save, a checksum one against two, an SBE creep to XID 92, a hidden slow GPU
among the checkpoint machinery) pass. Measured on main after the freeze: BENCHMARKS.md
"blind32, round 41"."""

from __future__ import annotations

from bench.blind32 import score
from bench.blind32.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind32")


def caught_with_cause(sc: bc.Score) -> bool:
    """Every fault caught, its first catch with the label's cause."""
    return bc.every_fault_caught(sc) and all(f["cause_ok"] for f in sc["faults"])


def closed(right: bc.Right, was: str, labels: int) -> tuple:
    """A row whose strict xfail a fix closed: its reason None now, what it was kept beside it."""
    del was  # (the finding as it was pinned: what the fix closed)
    return (right, None, labels)

# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    # (was a strict xfail, the reason below -- pcap42: a GPU capped drawing 5 % or more below
    # its node's uncapped busy GPUs is held by a limit of its own, correlate.power's
    # _power_impact's power measure, _own_limit: isolated slow_node/power with its TP group)
    "F1-power-limit-left-low-escalated-unknown": closed(
        caught_with_cause,
        "blind32 F1: a GPU whose power limit was left at 440-480 W (0x4 on every row at "
        "~460 W while its peers draw ~600 W, clock -10 %, its TP group x1.12 over its stage "
        "peers) is escalated slow_node/unknown, not isolated slow_node/power (DESIGN: 0x4 "
        "that measurably hurts the job); 7 of 8 caught with the wrong cause (one isolated "
        "power 154 s later under a second key), the 8th missed (F3)", 1),
    # F2 (noise42, round 42): the runs are Alibaba's own stragglers -- job 3's workers 6-9 at
    # 1.15-1.3x from iteration ~2,200 (their samples 190-249, 5-9 MADs over their medians),
    # which bench/blind32/noise.py's windows take in and clip to 4 sigma: every 7-step mean of
    # its stream at 3 sigma or more is mostly of those samples (190 of 190 in 400 streams of
    # 600: bench/blind32_noise_runs.py).  faultline pages those workers on the trace itself
    # (tests/test_alibaba_pages.py), and blind23 N2 (test_blind23_cases: worker 9's straggle
    # drawn so) is a guard that requires the page.  A blind32-like healthy job replayed on 48
    # seeds: 9 node pages on the noise as drawn, 0 with those samples cut
    # (bench/blind32_noise_runs.py --replay 0..48).  A label to judge again, not a detector
    # error; the row stays a strict xfail until it is.
    "F2-real-noise-excursion-escalated": (
        bc.nothing_paged,
        "blind32 F2: a healthy node whose real PAI noise (job 3, ~1 % CoV, lag-1 ~0.55) runs "
        "~4 % over its stage peers for 7-14 steps is escalated slow_node/unknown at the node "
        "(held: 4 false positives in 3 of 8 logs, h-07, z-07, z-09 twice; tune 0; noise46's "
        "measured memory (JobMonitor._memory_read) holds zb-s5's z-09: 3 remain)", 0),
    # (was a strict xfail: "blind32 F3: two of a stage's three data-parallel peers slow (a
    # hidden x1.07-1.10 GPU and a power limit left low, x1.12, 10 s or minutes apart): the
    # peer median is a slow one, so the second (or both) is never paged, though each node's
    # own history says it changed (tune 3 faults missed in 2 of 4 zb logs)"; peer42: a rank
    # against its own past pace over the job's, detector/steps/past.py -- both nodes paged,
    # nothing beside them)
    "F3-two-of-three-stage-peers-slow-never-paged": (
        lambda sc: bc.every_fault_caught(sc) and bc.no_false_positive(sc), None, 2),
    # (was a strict xfail: "blind32 F4: a replica already holding a slow node (stage 2, a
    # power limit left low) gets a second (stage 3, x1.07-1.10): the second is escalated at
    # the replica (dp_rank 1), not its node -- a miss and a false positive (held 1 of 4 zb
    # logs)"; peer42: a replica's nodes are one unit only when they slowed together,
    # correlate/slow.py REPLICA_ONSET_S -- and no stray page beside the two)
    "F4-second-slow-node-of-a-replica-paged-as-the-replica": (
        lambda sc: bc.every_fault_caught(sc) and bc.no_false_positive(sc), None, 2),
    "F5-slowest-stage-slow-gpu-paged-after-100-s": (
        bc.caught_within(35.0),
        "blind32 F5: a GPU x1.07-1.10 on the last pipeline stage (already the slowest, the "
        "pipeline waiting for it; three peers) is paged 17-111 s after onset, 5-30 steps "
        "(median ~50 s; DESIGN: a 10 % slowdown in <= 10 steps).  slow42: the write-back "
        "hold no longer follows a context extension's long step (_hold_after_snapshot): the "
        "corpus' five 15.9-24.6 s; this cut 106 -> 37.3 s -- told at its run's 9th step (the "
        "cut's job tail read on ~9 steps after its warm-up, their first the fault's own onset "
        "on its node's 8 ranks: JobMonitor._persistent waits 2 steps more) + escalate_after_s",
        1),
    "G1-gpu-off-the-bus-restart-on-a-spare-that-runs-hot": (bc.alone_and_right, None, 2),
    "G2-snapshot-persist-replication-burnins-quiet": (bc.nothing_paged, None, 0),
    "G3-port-back-at-half-rate": (bc.alone_and_right, None, 1),
    "G4-context-extension-and-a-save-quiet": (bc.nothing_paged, None, 0),
    "G5-checksum-one-against-two": (bc.at_once_and_alone, None, 1),
    "G6-sbe-creep-to-xid-92": (bc.alone_and_right, None, 1),
    "G7-hidden-slow-gpu-in-a-healing-job": (bc.alone_and_right, None, 1),
}


_scored = bc.cli_scorer(CASES, score)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
