"""blind8 (round 17): the generator is deterministic and keeps DESIGN's input contract, and
every reproducer of a faultline error it found replays (bench/blind8/cases, strict xfails)."""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

import pytest

from bench.blind8 import generate
from bench.blind8.score import alerts_of, labels_of, score
from detector.cli import main as cli_main

CASES = Path(__file__).resolve().parent.parent / "bench" / "blind8" / "cases"
REQUIRED = {"telemetry.step": ("ts", "job", "step", "rank", "node", "gpu", "step_ms"),
            "telemetry.ecc": ("ts", "node", "gpu"), "telemetry.thermal": ("ts", "node", "gpu"),
            "telemetry.nic": ("ts", "node", "nic", "port")}


def _recs(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.mark.parametrize("story,minutes", [("rail-moe", 3.0), ("scale-1k", 1.5)])
def test_generator_is_deterministic_and_keeps_the_contract(story, minutes, tmp_path):
    a = generate.write(tmp_path / "a", story, 5, minutes=minutes)
    b = generate.write(tmp_path / "b", story, 5, minutes=minutes)
    assert a.read_bytes() == b.read_bytes()
    recs = _recs(a)
    assert recs[0]["topic"] == "topology"
    newest: dict = defaultdict(float)      # per (topic, node): the newest ts in arrival order
    steps = 0
    for r in recs[1:]:
        topic, v = r["topic"], r["value"]
        if topic == "labels":
            assert v["start_ts"] <= v["end_ts"] and v["scope"]["level"]
            continue
        assert all(k in v for k in REQUIRED[topic]), (topic, v)
        assert all(not (isinstance(x, float) and not math.isfinite(x)) for x in v.values())
        key = (topic, v["node"])
        assert v["ts"] > newest[key] - 5.0, (key, v["ts"], newest[key])   # DESIGN: <= 5 s
        newest[key] = max(newest[key], v["ts"])
        if topic == "telemetry.step":
            steps += 1
            assert v["step_ms"] >= v["compute_ms"] + v["comm_ms"] and v["comm_ms"] >= 0
            assert sum(k in v for k in ("tp_rank", "pp_rank", "dp_rank")) in (0, 3)
    assert steps > 1000


def _caught(sc) -> bool:
    return all(f["caught"] for f in sc["faults"])


def _no_false_positive(sc) -> bool:
    return all(p["caught"] for p in sc["problems"])


# name -> (what a right answer looks like, the strict-xfail reason or None).
EXPECT: dict[str, tuple] = {}


def _replay(case: Path, tmp_path: Path, capsys) -> dict:
    """`faultline replay CASE --alerts-out F --quiet` in this process, scored by score.py."""
    out = tmp_path / (case.name + ".alerts.jsonl")
    assert cli_main(["replay", str(case), "--alerts-out", str(out), "--quiet"]) in (0, None)
    capsys.readouterr()
    return score(labels_of(case), alerts_of(out), case.name)


def test_every_case_has_an_expectation():
    names = {p.name.removesuffix(".jsonl.gz") for p in CASES.glob("*.jsonl.gz")}
    assert names == set(EXPECT)


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=why))
    if why else n
    for n, (_, why) in EXPECT.items()])
def test_case(name, tmp_path, capsys):
    check, _ = EXPECT[name]
    sc = _replay(CASES / f"{name}.jsonl.gz", tmp_path, capsys)
    assert check(sc), (sc["faults"], [p for p in sc["problems"] if not p["caught"]])
