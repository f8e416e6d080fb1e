"""blind13 (round 22): the generator is deterministic, every record keeps DESIGN's input
contract (blind12's checker: late at most 5 s, step parts, rank fields), every label is a
valid DESIGN label spanning records of its unit, the shapes the README names are in the log,
and a small log replays through `faultline replay` (exit status only: the detector's answers
are measured by bench/blind13/measure.py, not pinned here)."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter

import pytest

from bench.blind13 import generate
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records


@pytest.mark.parametrize("story", ["lake", "grow"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    logs = [generate.write(tmp_path / d, story, 1, minutes=6.0) for d in ("one", "two")]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    recs = _records(logs[0])
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    assert [r["value"]["fault_id"] for r in recs if r["topic"] == "labels"]
    effects = json.loads(logs[0].with_name(f"{story}-s1.effects.json").read_text())
    assert effects and all(e["start_ts"] <= e["end_ts"] for e in effects)


def test_the_lagging_partition_arrives_late_and_cp_ranks_share_a_dp_rank(tmp_path):
    recs = _records(generate.write(tmp_path, "lake", 1, minutes=6.0))
    newest, late = 0.0, Counter()
    for r in recs[1:]:
        if r["topic"] == "labels":
            break
        ts = r["value"]["ts"]
        if ts < newest - 3.0 and r["topic"] != "telemetry.step":
            late[r["value"]["node"]] += 1
        newest = max(newest, ts)
    # seed 1: partition 1 (lk-02, 06, 10, 14) 3.8-4.8 s late; over 3 s otherwise only the
    # rebalance's re-deliveries of partition 3 (lk-04, 08, 12, 16)
    lagging = {"lk-02", "lk-06", "lk-10", "lk-14"}
    assert min(late[n] for n in lagging) > 100
    assert set(late) - lagging <= {"lk-04", "lk-08", "lk-12", "lk-16"}
    steps = [r["value"] for r in recs if r["topic"] == "telemetry.step"
             and r["value"]["job"] == "cp-long"]
    first = [v for v in steps if v["step"] == min(v["step"] for v in steps)]
    shared = Counter((v["tp_rank"], v["pp_rank"], v["dp_rank"]) for v in first)
    assert len(first) == 32 and set(shared.values()) == {4}
    assert {v["cp_rank"] for v in first} == {0, 1, 2, 3}


def test_seeds_differ_and_the_grow_renumbers_ranks(tmp_path):
    a = _records(generate.write(tmp_path, "grow", 2, minutes=15.0))
    b = _records(generate.write(tmp_path, "grow", 3, minutes=15.0))
    assert [r["value"] for r in a if r["topic"] == "labels"] != [
        r["value"] for r in b if r["topic"] == "labels"]
    where = {}
    for r in a:
        if r["topic"] == "telemetry.step" and r["value"]["job"] == "el-pt":
            where.setdefault(r["value"]["rank"], set()).add(r["value"]["node"])
    assert max(where) == 47                      # DP6 after the grow
    assert any(len(nodes) > 1 for nodes in where.values())   # a rank moved node


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "grow", 6, minutes=3.0)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
