"""blind11 (round 20): the generator is deterministic and keeps DESIGN's input contract, and
every reproducer of a faultline error it found replays (bench/blind11/cases, strict xfails)."""

from __future__ import annotations

import gzip
import json
import math

import pytest

from bench.blind11 import generate

REQUIRED = {"telemetry.step": ("ts", "job", "step", "rank", "node", "gpu", "step_ms"),
            "telemetry.ecc": ("ts", "node", "gpu"), "telemetry.thermal": ("ts", "node", "gpu"),
            "telemetry.nic": ("ts", "node", "nic", "port")}


@pytest.mark.parametrize("story", ["rl", "mixed"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    a = generate.write(tmp_path / "a", story, 5, minutes=6.0)
    b = generate.write(tmp_path / "b", story, 5, minutes=6.0)
    assert a.read_bytes() == b.read_bytes()
    with gzip.open(a, "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh]
    assert recs[0]["topic"] == "topology"
    newest, steps, labels = 0.0, 0, 0
    for rec in recs[1:]:
        topic, v = rec["topic"], rec["value"]
        if topic == "labels":
            labels += 1
            assert v["start_ts"] <= v["end_ts"] and v["scope"]["level"]
            continue
        assert not labels, "labels come last"
        assert all(k in v for k in REQUIRED[topic]), (topic, v)
        assert all(not (isinstance(x, float) and not math.isfinite(x)) for x in v.values())
        assert v["ts"] > newest - 5.0, (topic, v["node"], v["ts"], newest)   # DESIGN: <= 5 s
        newest = max(newest, v["ts"])
        if topic == "telemetry.step":
            steps += 1
            assert v["step_ms"] >= v["compute_ms"] + v["comm_ms"] and v["comm_ms"] >= 0
            assert sum(k in v for k in ("tp_rank", "pp_rank", "dp_rank")) in (0, 3)
    assert steps > 200 and labels >= 1
