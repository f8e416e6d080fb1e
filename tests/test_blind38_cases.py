"""blind38 (round 47): every reproducer of a faultline error the thirty-eighth blind generator
(rack-scale NVLink domains: NVL72-class racks of 18 four-GPU trays, TP groups spanning trays,
one coolant loop a rack) found replays (bench/blind38/cases, rebuilt by
`python -m bench.blind38.make_cases`), each a strict xfail whose reason is the finding; the
guards (a rack's coolant loss isolated once at its domain, a clogged cold plate and an erring
NVLink isolated at their GPU's node / GPU, a rack drained with its job moved paging nobody) pass.
Measured on main after the freeze: BENCHMARKS.md "blind38, round 47"."""

from __future__ import annotations

from bench.blind38 import score
from bench.blind38.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind38")

# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    "F1-nvlink-cartridge-isolated-gpu-by-gpu": (
        bc.alone_and_right,
        "blind38 F1: an NVLink cable cartridge of a rack's backplane erring (CRC 5-40/s and "
        "replays on the 32 GPUs of 8 consecutive trays of one NVL72 rack, their TP groups' "
        "NVLink x1.3-1.5; one part: hardware/nvlink at the domain, the smallest DESIGN scope "
        "holding it) is isolated GPU by GPU -- 32 hardware/nvlink GPU isolations and 1-4 "
        "slow_node/unknown tray escalations a log, never the domain: missed 4 of 4 tune and "
        "4 of 4 held (35-39 false positives a log). The cut (cdu-s0, rack b2's ECC rows "
        "380-540 s) isolates 32 GPUs, no domain",
        1),
    "F2-slow-gpu-in-a-two-tray-tp-group-escalated-at-its-replica": (
        bc.alone_and_right,
        "blind38 F2: a GPU x1.12-1.20 (nothing in telemetry: slow_node/unknown at its GPU, not "
        "attributable) in a TP8 group spanning two compute trays (its compute ~x1.10 over its "
        "DP peers', its 7 mates' ~x1.05: a share of their wait for it lands in compute_ms under "
        "overlapped TP) is escalated at its replica (the 8 ranks of both trays) 9-31 s in, "
        "never at its GPU or its tray: 4 of 4 tune (tp8-s0 also escalates the mate tray "
        "a1-t09 first, 7 s in), 3 of 4 held (tp8-s7: its tray 10.5 s in, its replica 12 s "
        "later beside it). The cut (tp8-s0's steps 150-330 s) escalates replica 4",
        1),
    "F3-rack-nvswitch-fabric-slow-never-escalated": (
        bc.every_fault_caught,
        "blind38 F3: a rack's NVSwitch fabric slower (every TP group in the NVL72 domain "
        "x1.3-1.5 NVLink time, no counter: DESIGN has no NVSwitch telemetry; "
        "unattributed/unknown at the domain, not attributable) -- its 64 ranks' compute_ms "
        "x~1.07 over the other rack's 64, half of every DP peer group at once -- is never "
        "escalated at the domain: 0 of 4 tune, 0 of 4 held. The cut (tp8-s0's steps 560-900 s) "
        "escalates a1-t10 and replicas 4 and 15, not nvl-a1",
        1),
    "F4-rack-coolant-loss-isolated-tray-by-tray": (
        bc.alone_and_right,
        "blind38 F4: a rack's coolant loop losing flow (supply +32-40 C over 6-9 min, the top "
        "trays worst: 0x20 spreading down the rack; slow_node/thermal at the domain) whose 0x20 "
        "reaches few trays in its first minute (4-5) is isolated tray by tray first -- up to 5 "
        "node isolations before the domain's, which comes 44-101 s after the first 0x20 row "
        "(11-20 s when 10-12 trays throttle in that minute): 2 of 4 tune (cdu-s3: 5 trays, "
        "101 s; cdu-s1: 1 tray), 3 of 4 held (cdu-s4: 5 trays, 82 s; s6, s7: 2 trays, 54 and "
        "44 s). The cut (cdu-s3, rack b1's thermal rows 480-720 s) isolates five trays, then "
        "nvl-b1",
        1),
    "F5-erring-nvlink-escalated-unknown-before-its-counters": (
        bc.alone_and_right,
        "blind38 F5: a GPU's NVLink erring (hardware/nvlink at its GPU: CRC 40-300/s and "
        "replays on its 30-s ECC rows, one XID 74 5-60 s in) in a TP8 group whose NVLink time "
        "is partly hidden in compute_ms (the group's 8 ranks compute ~x1.05-1.1 at once) is "
        "escalated slow_node/unknown at its tray 8 s in, before the first ECC row with its "
        "counters (the nvlink isolation 12 s later: two pages, the first cause wrong), its "
        "replica escalated unknown beside it: 1 of 4 tune (tp8-s2; tp8-s1 a replica escalation "
        "beside the right isolation), 0 of 4 held. The cut (tp8-s2, rack a2's steps and ECC "
        "rows 330-480 s) escalates a2-t06 and replica 10 before the isolation",
        1),
    "G1-rack-coolant-loss-isolated-at-its-domain": (bc.alone_and_right, None, 1),
    "G2-clogged-cold-plate-isolated-thermal": (bc.alone_and_right, None, 1),
    "G3-erring-nvlink-isolated-at-its-gpu": (bc.alone_and_right, None, 1),
    "G4-rack-drain-and-job-move-page-nobody": (bc.nothing_paged, None, 0),
}


_scored = bc.cli_scorer(CASES, score)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
