"""blind15 (round 24): the generator is deterministic, every record keeps DESIGN's input
contract (apart from the one routine shape that breaks it on purpose: a collector's rows held
2-5 min and sent at once), every label is a valid DESIGN label spanning records of its unit, and
a small log replays through `faultline replay` (exit status only: the detector's answers are
measured by bench/blind15/measure.py, not pinned here). blind12's contract checker, imported."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
from pathlib import Path

import pytest

from bench.blind15 import generate
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches


def _records(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _late_batch_ok(recs: list[dict], effects: list[dict]) -> list[str]:
    """The breaches left once the late batch's own rows (over 5 s behind) are set aside."""
    late = [(e["scope"]["node"], e["start_ts"], e["end_ts"]) for e in effects
            if e["effect"] == "collector-late-batch"]
    left = []
    for b in _breaches(recs):
        i = int(b.split()[0]) if b.split()[0].isdigit() else None
        v = recs[i]["value"] if i is not None else {}
        if "over 5 s behind" in b and any(v.get("node") == n and t0 <= v["ts"] < t1
                                          for n, t0, t1 in late):
            continue
        left.append(b)
    return left


@pytest.mark.parametrize("story", ["pipe", "fabric"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    logs = [generate.write(tmp_path / d, story, 3, minutes=5.0) for d in ("one", "two")]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    recs = _records(logs[0])
    effects = json.loads(logs[0].with_name(f"{story}-s3.effects.json").read_text())
    assert _late_batch_ok(recs, effects) == []
    assert _label_breaches(recs) == []
    labels = [r["value"]["fault_id"] for r in recs if r["topic"] == "labels"]
    assert len(labels) == 2, labels
    assert effects and all(e["start_ts"] <= e["end_ts"] for e in effects)


def test_seeds_differ_and_the_checker_catches_a_late_row(tmp_path):
    a = _records(generate.write(tmp_path, "fabric", 1, minutes=3.0))
    b = _records(generate.write(tmp_path, "fabric", 2, minutes=3.0))
    assert [r["value"] for r in a if r["topic"] == "labels"] != [
        r["value"] for r in b if r["topic"] == "labels"]
    assert _late_batch_ok(a, []) == []
    i = next(i for i, r in enumerate(a) if r["topic"] == "telemetry.thermal" and i > 5000)
    a[i]["value"]["ts"] -= 60.0
    assert _late_batch_ok(a, [])


def test_the_pipe_log_holds_its_late_batch(tmp_path):
    """The late batch is really there (rows over 5 s behind), and only on its node."""
    log = generate.write(tmp_path, "pipe", 2, minutes=8.0)
    recs = _records(log)
    effects = json.loads(log.with_name("pipe-s2.effects.json").read_text())
    assert [b for b in _breaches(recs) if "over 5 s behind" in b]
    assert _late_batch_ok(recs, effects) == []


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "pipe", 6, minutes=3.0)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
