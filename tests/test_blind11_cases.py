"""blind11 (round 20): the generator is deterministic and keeps DESIGN's input contract, and
every reproducer of a faultline error it found replays (bench/blind11/cases, strict xfails)."""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter

import pytest

from bench.blind11 import generate
from bench.blind11 import score as scoring
from tests import blindcases as bc

CASES = bc.cases_of("blind11")

NEEDS = {"telemetry.step": {"ts", "job", "step", "rank", "node", "gpu", "step_ms"},
         "telemetry.ecc": {"ts", "node", "gpu"}, "telemetry.thermal": {"ts", "node", "gpu"},
         "telemetry.nic": {"ts", "node", "nic", "port"}}


def _contract_breaches(recs: list) -> list:
    """What in a log breaks DESIGN's input contract as blind11 reads it (empty: nothing)."""
    bad, newest, seen_label = [], -math.inf, False
    for i, rec in enumerate(recs):
        topic, v = rec["topic"], rec["value"]
        if i == 0:
            bad += [] if topic == "topology" else ["the topology is not first"]
        elif topic == "labels":
            seen_label = True
            bad += [] if v["start_ts"] <= v["end_ts"] else [f"label {v['fault_id']} ends first"]
        elif seen_label:
            bad.append(f"record {i} after a label")
        else:
            bad += [f"{topic} lacks {k}" for k in NEEDS[topic] - set(v)]
            bad += [f"{topic} {k} not finite" for k, x in v.items()
                    if isinstance(x, float) and not math.isfinite(x)]
            if v["ts"] <= newest - 5.0:                      # DESIGN: at most 5 s out of order
                bad.append(f"{topic} {v['node']} {v['ts']} over 5 s behind {newest}")
            newest = max(newest, v["ts"])
            if topic == "telemetry.step" and (
                    v["step_ms"] < v["compute_ms"] + v["comm_ms"] or v["comm_ms"] < 0):
                bad.append(f"step {v['step']} rank {v['rank']}: step_ms < compute + comm")
    return bad


@pytest.mark.parametrize("story", ["rl", "mixed"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    logs = [generate.write(tmp_path / d, story, 5, minutes=6.0) for d in ("one", "two")]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    with gzip.open(logs[0], "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh]
    assert _contract_breaches(recs) == []
    topics = Counter(r["topic"] for r in recs)
    assert topics["telemetry.step"] > 200 and topics["labels"] >= 1


# case -> (what a right answer looks like, the strict-xfail reason or None). The cases are
# rebuilt by `python -m bench.blind11.make_cases`; measured on main b965720 (6a502a2's
# detector). Not here, because the label is arguable (BENCHMARKS "blind11, round 20", L1):
# lc-pack's H100 nodes escalated as slow_node/unknown beside H200 peers -- DESIGN has no
# field that names a GPU's model.
EXPECT: dict[str, tuple] = {
    "L2-h200-slow-at-h100-pace": (bc.every_fault_caught, (
        "L2: from 253 s h200-01's TP group computes 1.06x its four H200 peers (0.96x before: "
        "median of per-step ratios, one GPU 1.095x slower), now as slow as lc-pack's three "
        "H100 nodes (1.05-1.08x): faultline sends nothing about h200-01 in 500 s (it escalates "
        "h100-02 instead) -- 5 of 8 h200-slow missed in the full logs, the other 3 caught "
        "203-732 s after onset")),
    # (Was a strict xfail: "L3: nvl-03 comes back from a driver upgrade at 695 s with GPUs 0,
    # 2 and 3 sending thermal rows every 15 s and ECC rows every 60 s, and GPU 1 -- which
    # reported until the node went dark -- never again: faultline sends nothing in 495 s (0 of
    # 8 gpu-missing caught in the full logs)"; detector.gpu_missing, gone20.)
    "L3-gpu-missing-after-reboot": (bc.every_fault_caught, None),
}


_replay = bc.cli_scorer(CASES, scoring)  # (in this process, once a case)


def test_every_case_has_an_expectation_and_replays():
    names = bc.names_of(CASES)
    assert names == set(EXPECT)
    for name in sorted(names):
        sc = _replay(name)
        assert sc["faults"], name


test_case = bc.case_test(EXPECT, _replay)
