"""blind27 (round 36): every reproducer of a faultline error the twenty-seventh blind generator
found replays (bench/blind27/cases, rebuilt by `python -m bench.blind27.make_cases`), each a
strict xfail whose reason is the finding; the guards (NVLink errors climbing, a spot VM's GPU
cooling degrading to SW thermal slowdown, XID 79 crashing an elastic job and its restart, a new
VM's port at half rate, a reclaim's shrink and the VM gone; a serving GPU at 0x20 only in
bursts, XID 94 on a serving GPU, a serving port flapping, PCIe replays slowing a training rank;
traffic bursts, an autoscaler and a rolling model reload) pass. Measured on the freezes bd7fecb
and a40edba: BENCHMARKS.md "blind27, round 36"."""

from __future__ import annotations

from bench.blind27 import score
from bench.blind27.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind27")


def quiet_on(node: str) -> bc.Right:
    """No firing problem at ``node`` (its cut holds faults elsewhere whose labels are out)."""
    def right(sc: bc.Score) -> bool:
        return not [p for p in sc["problems"] if p["scope"].get("node") == node]
    right.__name__ = f"quiet_on_{node}"
    return right


# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    # (Was a strict xfail, blind27 F1: the busiest serving GPU of its node at the 700 W cap,
    # 13 C over its node's median for its ~250 W more at its mates' C/W, its clock -1.5 %
    # under 0x4 alone, isolated thermal.  Fixed by therm37: a SW power cap's clock loss under
    # cap_clock_drop is no heat harm -- detector.thermal._hot_harm.)
    "F1-busiest-serving-gpu-at-the-power-cap-paged-thermal": (bc.nothing_paged, None, 0),
    # (Was a strict xfail: "blind27 F2: a new spot VM's GPU computes 1.35-1.45x its peers from
    # its first step in an elastic job that re-forms every ~2 min (ranks renumbered, cold
    # steps, saves): faultline never pages it here (DESIGN: >= 30 % slower from the first
    # step, <= 3 steps); on the churn corpus (tune + held) 3 of 8 such GPUs are missed, 4
    # paged 465-502 s late, and of 8 GPUs 11 % slow through the re-forms one is missed and
    # one paged 493 s late"; elastic37: a re-formed job's slots follow their GPUs
    # (detector.steps.ranks._follow_hardware), so the 11 % GPU stays told through the re-form
    # and the new VM's GPU is found alone, not read as slowness visiting two nodes.)
    "F2-new-vm-gpu-40pct-slow-from-its-first-step-missed": (bc.caught_within(30.0), None, 1),
    "F3-reclaimed-vm-replaced-in-one-re-form-escalated-as-dark": (
        # fixed, dark37: the job's slot still naming the VM 65 steps after a shrink is no rank
        # there (liveness._ranks_on), nor a job that stopped before the VM went quiet and
        # stepped on without it (liveness._went_on_without)
        quiet_on("sp-06"), None, 0),
    # (Was a strict xfail: "blind27 F4: a healthy VM with two one-step host stalls (1.1 s and
    # 1.4 s, 400 s apart, among ~150 steps) is escalated slow_node/unknown at the node by the
    # host-share rule ('recurring for 400 s', hot_steps 2) ...".  The job re-formed between the
    # stalls and the VM's unit (its replica) went unjudged for 55 steps with its run standing;
    # fixed by host37: a unit whose ranks leave it at a re-form ends its run,
    # host_time.end_runs.)
    "F4-two-one-step-host-stalls-400s-apart-escalated": (quiet_on("sp-06"), None, 0),
    "G1-nvlink-errors-climbing": (bc.alone_and_right, None, 1),
    "G2-spot-gpu-cooling-degrading-to-0x20": (bc.alone_and_right, None, 1),
    "G3-xid79-crash-and-elastic-restart": (bc.at_once_and_alone, None, 1),
    "G4-new-vm-port-at-half-rate": (bc.alone_and_right, None, 1),
    "G5-reclaim-shrink-and-a-vm-gone": (bc.nothing_paged, None, 0),
    "G6-serving-gpu-0x20-only-in-bursts": (bc.alone_and_right, None, 1),
    "G7-xid94-on-a-serving-gpu": (bc.at_once_and_alone, None, 1),
    "G8-serving-port-flapping": (bc.alone_and_right, None, 1),
    "G9-pcie-replays-slowing-a-training-rank": (bc.alone_and_right, None, 1),
    "G10-bursts-autoscaler-and-rolling-reload": (bc.nothing_paged, None, 0),
    "G11-gpu-11pct-slow-through-re-forms": (bc.alone_and_right, None, 1),
    "G12-new-vm-handed-over-needing-a-reset": (bc.at_once_and_alone, None, 1),
    "G13-reclaims-re-forms-and-reused-names": (bc.nothing_paged, None, 0),
}


_scored = bc.cli_scorer(CASES, score)


def test_every_case_has_an_expectation_and_its_labels():
    assert bc.label_counts(CASES, labels_of) == {name: e[2] for name, e in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
