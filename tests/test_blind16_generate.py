"""blind16 (round 25): the generator is deterministic, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, and a small log
replays through `faultline replay` (exit status only: the detector's answers are measured by
bench/blind16/measure.py, not pinned here). The checker is blind12's."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from bench.blind16 import generate
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records


@pytest.mark.parametrize("story", ["overlap", "fleet"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    logs = [generate.write(tmp_path / d, story, 5, minutes=6.0) for d in ("one", "two")]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    recs = _records(logs[0])
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    labels = {r["value"]["fault_id"] for r in recs if r["topic"] == "labels"}
    assert labels, story
    effects = json.loads(logs[0].with_name(f"{story}-s5.effects.json").read_text())
    assert effects and all(e["start_ts"] <= e["end_ts"] for e in effects)


def test_the_overlap_straggler_hides_in_every_ranks_compute(tmp_path):
    """The shape this generator exists for: after the straggler's onset every rank's
    compute_ms rises alike (within 3 %), and the straggler's comm_ms is the job's smallest."""
    recs = _records(generate.write(tmp_path, "overlap", 2, minutes=8.0))
    lab = next(r["value"] for r in recs if r["topic"] == "labels"
               and r["value"]["fault_id"] == "fsdp-straggler")
    sc = lab["scope"]
    late = [r["value"] for r in recs if r["topic"] == "telemetry.step"
            and r["value"]["job"] == "fsdp-a" and r["value"]["ts"] > lab["start_ts"] + 30]
    early = [r["value"] for r in recs if r["topic"] == "telemetry.step"
             and r["value"]["job"] == "fsdp-a" and r["value"]["ts"] < lab["start_ts"]]
    mine = [v for v in late if (v["node"], v["gpu"]) == (sc["node"], sc["gpu"])]
    peers = [v for v in late if (v["node"], v["gpu"]) != (sc["node"], sc["gpu"])]

    def mean(vs, k):
        return sum(v[k] for v in vs) / len(vs)
    assert mean(peers, "compute_ms") > 1.15 * mean(early, "compute_ms")
    assert mean(mine, "compute_ms") < 1.03 * mean(peers, "compute_ms")
    assert mean(mine, "comm_ms") < mean(peers, "comm_ms")


def test_seeds_differ_and_the_checker_catches_a_broken_step(tmp_path):
    a = _records(generate.write(tmp_path, "overlap", 1, minutes=3.0))
    b = _records(generate.write(tmp_path, "overlap", 2, minutes=3.0))
    assert [r["value"] for r in a if r["topic"] == "labels"] != [
        r["value"] for r in b if r["topic"] == "labels"]
    step = next(i for i, r in enumerate(a) if r["topic"] == "telemetry.step")
    a[step]["value"]["comm_ms"] = a[step]["value"]["step_ms"]
    assert _breaches(a)


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "fleet", 6, minutes=3.0)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
