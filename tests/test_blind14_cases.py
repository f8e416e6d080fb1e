"""blind14 (round 23): every reproducer of a faultline error the fourteenth blind generator found
replays (bench/blind14/cases, rebuilt by `python -m bench.blind14.make_cases`), each a strict
xfail whose reason is the finding. Measured on main 54f1d26 (the freeze; detector of 82565f4).
Cases without a label hold only routine shapes: right is no firing problem at all."""

from __future__ import annotations

from bench.blind14.measure import replay
from bench.blind14.score import labels_of
from tests import blindcases as bc

CASES = bc.cases_of("blind14")


def _caught_as_power(sc: dict) -> bool:
    return bc.every_fault_caught(sc) and all(f["cause_ok"] for f in sc["faults"])


# case -> (what a right answer looks like, the strict-xfail reason or None)
EXPECT: dict[str, tuple] = {
    # N1 (b14fix): a DCGM blank in a counter is no value and a jump no hardware counts in
    # the interval is dropped, both in models.counters (GPU and NIC counters alike).
    "N1-dcgm-blank-counter": (bc.nothing_paged, None),
    # N2 (inter24): a node slow at its job's every host event (a checkpoint save), compared
    # with its stage's other nodes at the same step, three events in a row (detector.host_events)
    "N2-slow-checkpoint-writer": (bc.every_fault_caught, None),
    # N3 (therm24): the brake on every GPU of gx-12 seen on two polls 120 s apart is sustained
    # (detector.thermal's _brake_again, brake_repeat_s): slow_node/power at the node.
    "N3-psu-brake-bursts-30s": (_caught_as_power, None),
    # N4 (inter24): a raised host_late run whose line grew to 15 % of a step's work from under
    # half that is escalated at once, not after host_page_s (JobMonitor._host_grew)
    # (the leak passes 0.18 s a step -- a 0.9 s step 20 % slower -- 181 s after its onset)
    "N4-loader-leak-caught-late": (bc.caught_within(200.0), None),
    # N5 (therm24): a GPU hot against its node at its clock, no reason, below hot_gpu_c, its
    # rank at its peers' pace is evidence (detector.thermal._hot_harm), no drain.
    "N5-hot-gpu-no-throttle": (bc.nothing_paged, None),
    # N6 (inter24): a recurring outlier count the job's outlier steps falling on its TP groups
    # alike would give by chance (6e-3 here) is the workload's (JobMonitor._recur_chance)
    "N6-gc-pauses-escalated": (bc.nothing_paged, None),
    # N7 (inter25): short host-time runs that recur on one node -- 3 streaks of >= 3 hot steps,
    # each within 600 s of the one before, none on the job's other nodes -- page the node at
    # its third run (detector.host_time, REPEATS); was a strict xfail: "runs of 23-31 s never
    # page and the evidence does not add up across runs".
    "N7-cron-straggler-short-runs": (bc.every_fault_caught, None),
    # N8 (old26): the brake seen on ONE poll, inside a burst of gx-11's ranks -- half of pt-d's
    # (TP8 x DP2): a burst is a rank 30 % slower than half its other peers or more
    # (steps.JobMonitor._check_burst), no longer the group's median between the halves.
    "N8-psu-brake-seen-once-half-the-group": (_caught_as_power, None),
    # N9 (esc42, round 42): hx01's cron, paged for its compute, then for its host share (a
    # run begun beside the compute run) under the same key -- the pager's messages are
    # counted in tests/test_esc42.py; here the score (caught either way).
    "N9-cron-straggler-paged-twice": (bc.every_fault_caught, None),
}


_scored = bc.measure_scorer(CASES, replay)


def test_every_case_has_an_expectation_and_at_most_one_label():
    assert bc.label_counts(CASES, labels_of) == {
        name: 0 if right is bc.nothing_paged else 1 for name, (right, _) in EXPECT.items()}


test_case = bc.case_test(EXPECT, _scored)
