"""blind26 (round 35): every reproducer of a faultline error the twenty-sixth blind generator
found replays (bench/blind26/cases, rebuilt by `python -m bench.blind26.make_cases`), each a
strict xfail whose reason is the finding; the guards (a GPU at SW thermal slowdown from a
degrading thermal interface, a failing rail leaf, an XID 48 crashing a 4,096-rank job and its
restart on a spare, an SDC among 128 DP peers, a lost PSU braking a node, a failing RoCE optic,
an SBE storm then XID 92, a GPU at HW slowdown from a short job's first step; an incast with
CNPs, short jobs' churn, a row's inlet warming, GC pauses, host stalls and a checkpoint at
scale) pass. Measured on the freeze 3d04f7d: BENCHMARKS.md "blind26, round 35"."""

from __future__ import annotations

from bench.blind26 import score
from bench.blind26.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind26")


def caught_alone(sc: bc.Score) -> bool:
    """Every fault caught at its unit and nothing else paged; the cause not judged (DESIGN
    maps no cause to HW slowdown 0x8: NVML's reasons for it include an external power brake,
    so `power` is as defensible as the label's `gpu_hardware`)."""
    return bc.every_fault_caught(sc) and bc.no_false_positive(sc)


# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    # F1 (live35): a rolling dcgm-exporter upgrade across the job's checkpoint -- the node's
    # port rows went on past its overdue DCGM rows: a collector's outage (liveness._outage)
    "F1-rolling-exporter-upgrade-across-a-checkpoint-pages-silent-nodes": (
        bc.nothing_paged, None, 0),
    "G1-thermal-interface-gpu-at-0x20-caught-at-its-gpu": (bc.alone_and_right, None, 1),
    "G2-failing-rail-leaf-one-switch-alert": (bc.alone_and_right, None, 1),
    "G3-xid48-crash-and-restart-on-a-spare": (bc.at_once_and_alone, None, 1),
    "G4-sdc-one-rank-of-128-dp-peers": (bc.alone_and_right, None, 1),
    "G5-psu-lost-power-brake-on-a-node": (bc.alone_and_right, None, 1),
    "G6-roce-optic-failing-at-its-port": (bc.alone_and_right, None, 1),
    "G7-sbe-storm-then-xid92": (bc.alone_and_right, None, 1),
    # (sbe36 paged its 27 -> 66 -> 87 at its third poll, 120 s; sbefix36: one rise after the
    # storm's first poll is a steady storm's noise too (revA36 F2) -- at its XID 92, 168 s)
    "G13-sbe-climb-paged-at-its-third-poll": (bc.alone_and_right, None, 1),
    "G8-hw-slowdown-from-a-short-jobs-first-step": (caught_alone, None, 1),
    "G9-incast-cnps-and-slower-comm": (bc.nothing_paged, None, 0),
    "G10-short-jobs-cold-starts-and-churn": (bc.nothing_paged, None, 0),
    "G11-row-inlet-warming": (bc.nothing_paged, None, 0),
    "G12-gc-pauses-host-stalls-and-a-checkpoint": (bc.nothing_paged, None, 0),
}


_scored = bc.cli_scorer(CASES, score)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
