"""blind34 (round 43): every reproducer of a faultline error the thirty-fourth blind generator
(mixture-of-experts training: expert-parallel groups across nodes and rails, token routing that
moves work between EP ranks step by step, ~75 ms and ~2.5 min steps) found replays
(bench/blind34/cases, rebuilt by `python -m bench.blind34.make_cases`), each a strict xfail whose
reason is the finding; the guards (a NIC on one all-to-all rail, corrupt expert gradients, an
NVLink under a fast all-to-all, a hot GPU and a diverging checksum in two-minute steps) pass.
Measured on main after the freeze: BENCHMARKS.md "blind34, round 43"."""

from __future__ import annotations

from bench.blind34 import score
from bench.blind34.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind34")

_HOT = ("the router's hot expert (one EP rank's expert work +8-25 %, so its compute +4-12 %, for "
        "20-300 steps, then another rank's; the capacity factor bounds it) is workload -- DESIGN's "
        "sequence-length imbalance in MoE form -- and ")

# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    "F1-moving-hot-experts-escalated": (
        bc.nothing_paged,
        # (was a strict xfail: "blind34 F1: the router's hot expert ... is workload ... and
        # faultline escalates it slow_node/unknown at the hot GPU, at its node (two hot ranks of
        # one node) and at replicas: 16-29 false positives in every 15-min `ep` log ...; and a
        # node escalation of a hot expert landing on a faulty GPU's node first takes that
        # fault's cause ... The cut (250 s, steps only, no fault) escalates GPUs and nodes" --
        # moe44: a job whose slowness moves from rank to rank holds its runs for a cause,
        # detector.steps.experts)
        None, 0),
    "F1b-fast-moe-hot-experts-escalated": (
        bc.nothing_paged,
        # (was a strict xfail: "blind34 F1b: in a ~75 ms-step MoE job (DP16, EP8 inside each
        # node over NVLink) ... faultline escalates its GPUs and nodes slow_node/unknown again
        # and again ...; since moe44 ... only the job's first experts, before any has moved:
        # 1-2 a log 12-26 s in, the cut's first 100 s" -- moe46: a run that took over from
        # another rank's hot run, begun as that one cooled, is held as a relay,
        # detector.steps.experts._experts_relay: the cut's x-01/4, x-01/5, x-02/5 and node x-02)
        None, 0),
    "G1-all-to-all-rail-nic-isolated": (bc.alone_and_right, None, 1),
    "G2-expert-gradient-sdc-escalated": (bc.every_fault_caught, None, 1),
    "G3-nvlink-under-fast-all-to-all-isolated": (bc.alone_and_right, None, 1),
    "G4-two-minute-steps-hot-gpu-and-checksum": (bc.alone_and_right, None, 2),
}


_scored = bc.cli_scorer(CASES, score)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
