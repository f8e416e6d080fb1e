"""blind29 (round 38): every reproducer of a faultline error the twenty-ninth blind generator
found replays (bench/blind29/cases, rebuilt by `python -m bench.blind29.make_cases`), each a
strict xfail whose reason is the finding; the guards (a checksum minority at a DiLoCo outer
sync, a port flapping under one site, XID 79 taking one site down while the other runs on, a hot
GPU slowing its site, the two sites' steps apart and an outer sync, a parameter-server hot shard
and the chief's evaluation pause, a port losing symbols and retraining at half rate) pass.
Measured on main after the freeze: BENCHMARKS.md "blind29, round 38"."""

from __future__ import annotations

from bench.blind29 import score
from bench.blind29.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind29")


def caught_with_cause(sc: bc.Score) -> bool:
    """Every fault caught, its first catch with the label's cause (strays elsewhere aside)."""
    return bc.every_fault_caught(sc) and all(f["cause_ok"] for f in sc["faults"])


# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    # (F1 and F2, fixed by async38 in round 38: detector.steps.asynchronous compares an
    # asynchronous job's workers over 20 s windows and tells a worker slow in three in a row
    # ``slow_rank``; F1's GPU, its clock stuck with no reason below its node's free mates, is
    # then isolated gpu_hardware by detector.stuck_clock, F2's escalated unknown.  Both xfailed
    # before.)
    "F1-stuck-clock-never-paged": (caught_with_cause, None, 1),
    "F2-async-hidden-slow-worker-never-paged": (bc.every_fault_caught, None, 1),
    # (F3, fixed by nic39 in round 39: correlate.ports takes no nic_throughput verdict of a
    # port whose low run began just after a GPU of its node was isolated by a hardware verdict
    # -- the dead worker's port lost its demand.  Was a strict xfail: XID 48 kills a worker,
    # its port idles at 0.02-0.4 Gb/s beside 72-84 and was isolated network/nic 55 s later.)
    "F3-dead-workers-idle-port-isolated": (bc.alone_and_right, None, 1),
    # (noise46 took this xfail off: its JobMonitor._memory_read held the run at a 5-12x
    # "memory" -- its peers' whole deviations, the replica's batch with their own, read
    # against the rank's own spread; noise47 reads the one quantity, 1.5-2.5x, and it is open
    # again)
    "F4-node-wide-noise-run-escalated": (
        bc.nothing_paged,
        "blind29 F4: a TP8 node's ranks 3-5 % over their 15 peers for 7-11 steps (each step "
        "the slowest of its eight GPUs' PAI noise, lag-1 ~0.5; the node's mean over the run "
        "within 1 % of its peers) is escalated slow_node/unknown at the node (tune: 3 in 2 of "
        "4 diloco logs; held: 1 more). Caveat: my noise is PAI's shared-GPU wobble at a 2 % "
        "CoV per GPU; related to blind28 F4.  noise47: its runs (+4.1-4.9 % for 10-11 steps over "
        "their site's nodes, one with a two-step burst at +11-13 %) stand 7.2-7.6 standard "
        "errors of the node's whole deviation (1.3-1.4 %) at the job's lag-1 (0.35-0.48), and "
        "the job's measured n-step spread of that deviation says no more memory (1.5-2.5x "
        "independent steps', what the lag-1 says); noise46's hold read it against the rank's "
        "own spread (0.5 %).  Nothing in the steps tells it from a 4-5 % node slowdown; "
        "noise44's bar derivation put the fleet's budget at 7.5-8",
        0),
    "F5-gpu-missing-paged-beside-its-xid79": (
        bc.alone_and_right,
        None, 2),  # (clu39: the XID row without `cluster` is its node's site's; dark39 traced it)
    # (F6, fixed by cap39 in round 39: a rank slow alike with its node's others waits for
    # any GPU of its node hot on its latest sample, correlate.thermal._warming -- the TP8
    # node is isolated slow_node/thermal at GPU 2's first 0x20, 10 s sooner, and nothing
    # before it.  Xfailed before.)
    "F6-hot-gpu-escalated-unknown-before-its-thermal-page": (caught_with_cause, None, 1),
    "G1-checksum-minority-at-an-outer-sync": (bc.at_once_and_alone, None, 1),
    "G2-port-flapping-under-one-site": (bc.alone_and_right, None, 1),
    "G3-xid79-one-site-down-the-other-runs-on": (bc.at_once_and_alone, None, 1),
    "G4-hot-gpu-slows-its-site": (bc.alone_and_right, None, 1),
    "G5-sites-apart-and-an-outer-sync": (bc.nothing_paged, None, 0),
    "G6-hot-shard-and-chief-evaluation": (bc.nothing_paged, None, 0),
    "G7-port-losing-symbols-retrains-at-half-rate": (bc.alone_and_right, None, 1),
}


_scored = bc.cli_scorer(CASES, score)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
