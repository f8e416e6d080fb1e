"""blind25 (round 34): every reproducer of a faultline error the twenty-fifth blind generator
found replays (bench/blind25/cases, rebuilt by `python -m bench.blind25.make_cases`), each a
strict xfail whose reason is the finding while it stands (P1 fixed in round 35, loader35); the
guards (a PCIe link at x8 caught by its replays, a degraded NVLink, a GPU off the bus hanging
its job until the watchdog, an XID 74 under a pure-DP job; dcgm-exporter restarts with a
partial scrape, a collector's batch 30-90 s late, NIC driver reloads swapping or renaming ports,
a GPU driver reload zeroing counters, B200s at their cap) pass. Measured on the freeze 008127b:
BENCHMARKS.md "blind25, round 34"."""

from __future__ import annotations

from bench.blind25 import score
from bench.blind25.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind25")


# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    # P1 (strict xfail till round 35): one rank of a pure-DP job whose GPU's PCIe link trained
    # down (x16 -> x8) loads its batch x1.5-1.9 as long (127 -> 239 ms, time in neither compute
    # nor comm), the job waiting for it -- nothing was paged from the steps; the PCIe replay
    # counter caught it 77-381 s after onset.  Now paged from its steps (detector.host_straggler:
    # alone on its node, its comm the job's lowest): the slow rank at its 6th step, escalated
    # 5.8 s after onset here (no ECC poll in the cut to name its link).
    "P1-pcie-x8-loader-straggler-unseen-in-steps": (bc.caught_within(30.0), None, 1),
    "G1-pcie-x8-caught-by-its-replays": (bc.alone_and_right, None, 1),
    "G2-nvlink-degraded-caught-at-its-gpu": (bc.alone_and_right, None, 1),
    "G3-xid79-hang-and-watchdog": (bc.at_once_and_alone, None, 1),
    "G4-xid74-under-a-pure-dp-job": (bc.at_once_and_alone, None, 1),
    "G5-dcgm-exporter-restart-partial-scrape": (bc.nothing_paged, None, 0),
    "G6-dcgm-exporter-restart-on-a-busy-b200": (bc.nothing_paged, None, 0),
    "G7-collector-batch-30-90-s-late": (bc.nothing_paged, None, 0),
    "G8-nic-reload-names-swapped": (bc.nothing_paged, None, 0),
    "G9-nic-reload-ports-renamed": (bc.nothing_paged, None, 0),
    "G10-gpu-driver-reload-counters-zero": (bc.nothing_paged, None, 0),
    "G11-b200-at-its-cap-beside-h100": (bc.nothing_paged, None, 0),
}


_scored = bc.cli_scorer(CASES, score)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
