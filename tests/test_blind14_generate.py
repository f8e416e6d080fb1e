"""blind14 (round 23): the generator is deterministic, every record keeps DESIGN's input
contract (blind12's checker: topology first, required fields and types, finite numbers, late at
most 5 s, step parts, rank fields), every label is a valid DESIGN label spanning records of its
unit, the shapes the README names are in the log, and a small log replays through
`faultline replay` (exit status only: the detector's answers are measured by
bench/blind14/measure.py, not pinned here)."""

from __future__ import annotations

import contextlib
import io
import json
import statistics
from collections import defaultdict

import pytest

from bench.blind14 import generate
from bench.blind14.world import FP64_BLANK, INT32_BLANK, INT64_BLANK
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records


@pytest.mark.parametrize("story", ["fleet", "pipe"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    logs = [generate.write(tmp_path / d, story, 1, minutes=8.0) for d in ("one", "two")]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    recs = _records(logs[0])
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    ids = [r["value"]["fault_id"] for r in recs if r["topic"] == "labels"]
    assert ids == {"fleet": ["hot-replica-sdc", "slow-ckpt-writer", "loader-leak",
                             "psu-brake-30s"],
                   "pipe": ["hot-replica-sdc", "cron-straggler", "psu-brake-30s"]}[story]
    effects = json.loads(logs[0].with_name(f"{story}-s1.effects.json").read_text())
    assert effects and all(e["start_ts"] <= e["end_ts"] for e in effects)
    # every integer counter stays below DESIGN's 2^63 bound, the DCGM blank sentinel included
    assert all(x < 2**63 for r in recs if r["topic"] == "telemetry.ecc"
               for x in r["value"].values() if isinstance(x, int) and not isinstance(x, bool))


def _seed(tmp_path, seed):
    recs = _records(generate.write(tmp_path, "fleet", seed))
    return ([r["value"] for r in recs if r["topic"].startswith("telemetry.")],
            {r["value"]["fault_id"]: r["value"] for r in recs if r["topic"] == "labels"})


def test_the_shapes_the_readme_names(tmp_path):
    tele, labels = _seed(tmp_path, 3)
    # the site collector: 30 s thermal rows on gx-09..12, 10 s on the others
    gaps = defaultdict(list)
    last = {}
    for v in tele:
        if "gpu_temp_c" in v and v["gpu"] == 0:
            if v["node"] in last:
                gaps[v["node"]].append(v["ts"] - last[v["node"]])
            last[v["node"]] = v["ts"]
    assert round(statistics.median(gaps["gx-10"])) == 30
    assert round(statistics.median(gaps["gx-02"])) == 10
    # DCGM blank sentinels only from the site collector
    blanks = {v["node"] for v in tele if v.get("power_w") == FP64_BLANK
              or v.get("gpu_temp_c") == INT32_BLANK or INT64_BLANK in v.values()}
    assert blanks and blanks <= {"gx-09", "gx-10", "gx-11", "gx-12"}
    # the hot replica's loss spikes while every checksum of a step agrees
    sdc = labels["hot-replica-sdc"]["scope"]
    loss = defaultdict(dict)
    sums = defaultdict(set)
    for v in tele:
        if v.get("job") == "pt-a":
            if "loss" in v:
                loss[v["step"]][v["dp_rank"]] = v["loss"]
            if "param_checksum" in v:
                sums[(v["step"], v["tp_rank"], v["pp_rank"])].add(v["param_checksum"])
    spiked = {d for by in loss.values() for d, x in by.items()
              if x > 2.0 * statistics.median(by.values())}
    assert spiked == {sdc["dp_rank"]}
    assert all(len(s) == 1 for s in sums.values())
    # dp-c: sixteen one-GPU replicas; the leaking rank's time in neither grows
    leak = labels["loader-leak"]["scope"]
    mine = [v for v in tele if v.get("job") == "dp-c" and v["node"] == leak["node"]
            and v["gpu"] == leak["gpu"]]
    assert {v["dp_rank"] for v in tele if v.get("job") == "dp-c"} == set(range(16))
    idle = [v["step_ms"] - v["compute_ms"] - v["comm_ms"] for v in mine]
    assert statistics.median(idle[-50:]) > 250.0 > statistics.median(idle[:50])
    # the braked node's thermal rows show 0x80 | 0x8 on some 30 s samples, nobody else's
    braked = {v["node"] for v in tele if v.get("throttle", 0) & 0x80}
    assert braked == {labels["psu-brake-30s"]["scope"]["node"]}
    assert labels["psu-brake-30s"]["attributable"]


def test_seeds_differ_and_the_pipe_keeps_stages_apart(tmp_path):
    a = _seed(tmp_path / "a", 2)[1]
    b = _seed(tmp_path / "b", 5)[1]
    assert a != b
    recs = _records(generate.write(tmp_path, "pipe", 2))
    assert recs[0]["value"]["format"] == "slurm"
    tele = [r["value"] for r in recs if r["topic"] == "telemetry.step"]
    # stage k on hx(2k+1)-(2k+2); only stage 3 reports the loss
    assert {(v["node"], v["pp_rank"]) for v in tele} == {
        (f"hx{i:02d}", (i - 1) // 2) for i in range(1, 9)}
    assert {v["pp_rank"] for v in tele if "loss" in v} == {3}
    labels = {r["value"]["fault_id"]: r["value"] for r in recs if r["topic"] == "labels"}
    # the cron straggler's node loses time in neither only while its cron runs
    cron = labels["cron-straggler"]["scope"]["node"]
    extra = defaultdict(list)
    for v in tele:
        extra[v["node"] == cron].append(v["step_ms"] - v["compute_ms"] - v["comm_ms"])
    # 20-45 s every 240-330 s: 6-19 % of its steps; nobody else's loader slows
    assert 0.06 < sum(x > 60.0 for x in extra[True]) / len(extra[True]) < 0.19
    assert max(extra[False]) < 60.0


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "fleet", 6, minutes=3.0)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
