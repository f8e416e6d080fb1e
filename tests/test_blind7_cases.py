"""blind7 (round 16): the generator is deterministic and keeps DESIGN's input contract, and
every reproducer of a faultline error it found replays (bench/blind7/cases, strict xfails)."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from bench.blind7 import generate
from bench.blind7.score import alerts_of, labels_of, score

CASES = Path(__file__).resolve().parent.parent / "bench" / "blind7" / "cases"
REQUIRED = {"telemetry.step": ("ts", "job", "step", "rank", "node", "gpu", "step_ms"),
            "telemetry.ecc": ("ts", "node", "gpu"), "telemetry.thermal": ("ts", "node", "gpu"),
            "telemetry.nic": ("ts", "node", "nic", "port")}


def _recs(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.mark.parametrize("story", generate.STORIES)
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    a = generate.write(tmp_path / "a", story, 3, minutes=3)
    b = generate.write(tmp_path / "b", story, 3, minutes=3)
    recs = _recs(a)
    assert recs == _recs(b)
    assert recs[0]["topic"] == "topology"
    last = defaultdict(float)  # per source: the newest ts seen in arrival order
    n_steps = 0
    for r in recs[1:]:
        topic, v = r["topic"], r["value"]
        if topic == "labels":
            assert v["start_ts"] <= v["end_ts"] and v["scope"]["level"]
            continue
        assert all(k in v for k in REQUIRED[topic]), (topic, v)
        for x in v.values():
            assert not (isinstance(x, float) and not math.isfinite(x))
        src = (topic, v["node"])
        assert v["ts"] > last[src] - 5.0, (src, v["ts"], last[src])  # DESIGN: <= 5 s disorder
        last[src] = max(last[src], v["ts"])
        if topic == "telemetry.step":
            n_steps += 1
            assert v["step_ms"] + 1e-6 >= v.get("compute_ms", 0) + v.get("comm_ms", 0)
            assert v.get("comm_ms", 0) >= 0
            assert sum(k in v for k in ("tp_rank", "pp_rank", "dp_rank")) in (0, 3)
    assert n_steps > 1000


# name -> (test of the scored case, None or the strict-xfail reason)
EXPECT: dict[str, tuple] = {}


def _replay(case: Path, tmp_path: Path):
    out = tmp_path / (case.name + ".alerts.jsonl")
    exe = Path(sys.executable).with_name("faultline")
    subprocess.run([str(exe), "replay", str(case), "--alerts-out", str(out), "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    return score(labels_of(case), alerts_of(out), case.name)


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.glob("*.jsonl.gz")))
def test_every_case_replays(case, tmp_path):
    sc = _replay(CASES / case, tmp_path)
    assert case.removesuffix(".jsonl.gz") in EXPECT, "a case without an expectation"
    assert sc.faults, "a case without its label"
