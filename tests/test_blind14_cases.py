"""blind14 (round 23): every reproducer of a faultline error the fourteenth blind generator found
replays (bench/blind14/cases, rebuilt by `python -m bench.blind14.make_cases`), each a strict
xfail whose reason is the finding. Measured on main 54f1d26 (the freeze; detector of 82565f4).
Cases without a label hold only routine shapes: right is no firing problem at all."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest

from bench.blind14.measure import replay
from bench.blind14.score import labels_of
from tests.test_blind12_cases import _every_fault_caught, _known_error

CASES = Path(__file__).resolve().parent.parent / "bench" / "blind14" / "cases"


def _nothing_paged(sc: dict) -> bool:
    """Routine shapes only: no firing problem (a recommendation or an escalation) at all."""
    return not sc["faults"] and not sc["problems"]


def _caught_as_power(sc: dict) -> bool:
    return _every_fault_caught(sc) and all(f["cause_ok"] for f in sc["faults"])


def _caught_within_200s(sc: dict) -> bool:
    """The leak passes 0.18 s a step (a 0.9 s step 20 % slower) 181 s after its onset."""
    return _every_fault_caught(sc) and all(f["latency_s"] <= 200.0 for f in sc["faults"])


# case -> (what a right answer looks like, the strict-xfail reason or None)
EXPECT: dict[str, tuple] = {
    # N1 (b14fix): a DCGM blank in a counter is no value and a jump no hardware counts in
    # the interval is dropped, both in models.counters (GPU and NIC counters alike).
    "N1-dcgm-blank-counter": (_nothing_paged, None),
    "N2-slow-checkpoint-writer": (_every_fault_caught, (
        "N2: gx-05's synchronous checkpoint saves take 2.4-3.2x (8-12 s -> 19-38 s in neither, "
        "once every 40 steps) while its ranks are otherwise perfect; the other 24 ranks wait for "
        "it in comm: faultline sends nothing -- slow-ckpt-writer missed in 8 of 8 logs")),
    # N3 (therm24): the brake on every GPU of gx-12 seen on two polls 120 s apart is sustained
    # (detector.thermal's _brake_again, brake_repeat_s): slow_node/power at the node.
    "N3-psu-brake-bursts-30s": (_caught_as_power, None),
    "N4-loader-leak-caught-late": (_caught_within_200s, (
        "N4: dp-c rank 0's loader time grows linearly from 161 s to 0.73 s a step at 900 s "
        "(20 % of its 0.9 s step 181 s after onset): faultline escalates gx-09/0 (host_late) "
        "only 606 s after onset, when the rank waits 0.65 s a step (its evidence: a 510-step "
        "run) -- every loader-leak of 8 logs caught 602-608 s after its onset")),
    # N5 (therm24): a GPU hot against its node at its clock, no reason, below hot_gpu_c, its
    # rank at its peers' pace is evidence (detector.thermal._hot_harm), no drain.
    "N5-hot-gpu-no-throttle": (_nothing_paged, None),
    "N6-gc-pauses-escalated": (_nothing_paged, (
        "N6: pt-a's ranks each pause 150-400 ms for Python GC on 1 step in ~45, independently "
        "(a TP4 group is held up on ~9 % of steps, every group alike): faultline escalates "
        "gx-03 (ranks 22-23's 'recurring clear outlier' count 8.6 over 100 steps) -- 1 of 8 "
        "fleet logs")),
    "N7-cron-straggler-short-runs": (_every_fault_caught, (
        "N7: hx01's cron holds its 8 ranks at 1.06-1.10x compute + 80-200 ms in neither for "
        "31, 30 and 38 s, every 328 s: faultline sends nothing -- cron-straggler caught in 5 of "
        "8 logs, each 29-39 s into a 32-43 s run; runs of 23-31 s never page and the evidence "
        "does not add up across runs (this log's 38 s third run is paged 30 s in when the "
        "replay starts at 150 s, not with the job's first 150 s before it)")),
}


@functools.cache
def _scored(name: str) -> dict:
    return replay(CASES / f"{name}.jsonl.gz",
                  Path(tempfile.mkdtemp(prefix="blind14-")) / f"{name}.alerts.jsonl")


def test_every_case_has_an_expectation_and_at_most_one_label():
    names = {p.name.removesuffix(".jsonl.gz") for p in CASES.glob("*.jsonl.gz")}
    assert names == set(EXPECT)
    for name in sorted(names):
        labels = labels_of(CASES / f"{name}.jsonl.gz")
        assert len(labels) == (0 if EXPECT[name][0] is _nothing_paged else 1), name


@pytest.mark.parametrize("name", [pytest.param(n, marks=_known_error(why))
                                  for n, (_, why) in EXPECT.items()])
def test_case(name):
    right, _ = EXPECT[name]
    sc = _scored(name)
    missed = [f for f in sc["faults"] if not f["caught"]]
    assert right(sc), (missed, [p for p in sc["problems"] if not p["caught"]])
