"""blind10 (round 19): the generator is deterministic and keeps DESIGN's input contract, and
every reproducer of a faultline error it found replays (bench/blind10/cases, strict xfails)."""

from __future__ import annotations

import contextlib
import functools
import gzip
import io
import json
import math
import tempfile
from pathlib import Path

import pytest

from bench.blind10 import generate
from bench.blind10.score import alerts_of, labels_of, score
from detector.cli import main as cli_main

CASES = Path(__file__).resolve().parent.parent / "bench" / "blind10" / "cases"
REQUIRED = {"telemetry.step": ("ts", "job", "step", "rank", "node", "gpu", "step_ms"),
            "telemetry.ecc": ("ts", "node", "gpu"), "telemetry.thermal": ("ts", "node", "gpu"),
            "telemetry.nic": ("ts", "node", "nic", "port")}


@pytest.mark.parametrize("story", ["life", "zero3"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    a = generate.write(tmp_path / "a", story, 3, minutes=4.0)
    b = generate.write(tmp_path / "b", story, 3, minutes=4.0)
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


def _caught(sc) -> bool:
    return bool(sc["faults"]) and all(f["caught"] for f in sc["faults"])


def _no_false_positive(sc) -> bool:
    return all(p["caught"] for p in sc["problems"])


def _caught_and_clean(sc) -> bool:
    return _caught(sc) and _no_false_positive(sc)


# name -> (what a right answer looks like, the strict-xfail reason or None). Built by
# `python -m bench.blind10.make_cases`; numbers from the seed logs named there.
EXPECT: dict[str, tuple] = {}


@functools.cache
def _replay(name: str) -> dict:
    """`faultline replay CASE --alerts-out F --quiet` in this process, once a case."""
    case = CASES / f"{name}.jsonl.gz"
    out = Path(tempfile.mkdtemp(prefix="blind10-")) / f"{name}.alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli_main(["replay", str(case), "--alerts-out", str(out), "--quiet"]) in (0, None)
    return score(labels_of(case), alerts_of(out), name)


def test_every_case_has_an_expectation_and_replays():
    names = {p.name.removesuffix(".jsonl.gz") for p in CASES.glob("*.jsonl.gz")}
    assert names == set(EXPECT)
    for name in sorted(names):
        sc = _replay(name)
        assert sc["faults"] or sc["problems"] or EXPECT[name][1] is None, name


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=why))
    if why else n
    for n, (_, why) in EXPECT.items()])
def test_case(name):
    check, _ = EXPECT[name]
    sc = _replay(name)
    assert check(sc), (sc["faults"], [p for p in sc["problems"] if not p["caught"]])
