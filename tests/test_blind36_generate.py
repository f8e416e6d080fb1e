"""blind36 (round 45): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two stories make the shapes they exist for: RL post-training (GRPO) --
separate trainer and rollout pools (a rollout GPU slow at decode, a NIC that errs only under the
weight-sync burst, a contained ECC error that kills an inference engine) and one pool whose GPUs
switch between generating and training (an HBM too hot in long decodes only, a GPU slow in both
phases, a GPU power-capped that only training feels), beside the long tail of answer lengths.
A small log replays through `faultline replay` (exit status only: bench/blind36/measure.py
measures the answers). The contract checker is blind12's.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest

from bench.blind36 import generate
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind36-")), story, seed, minutes)
    return path, _records(path)


def _at(lab: dict) -> tuple[str, int]:
    return lab["scope"]["node"], lab["scope"]["gpu"]


def _ratios(steps: list[dict], lab: dict) -> tuple[list[float], list[float]]:
    """The labelled GPU's compute_ms over its DP peers' median, before and after its start."""
    mine = [v for v in steps if (v["node"], v["gpu"]) == _at(lab)]
    job, tp = mine[0]["job"], mine[0]["tp_rank"]
    by = defaultdict(list)
    for v in steps:
        if v["job"] == job and v["tp_rank"] == tp:
            by[v["step"]].append(v)
    before, after = [], []
    for v in mine:
        peers = [p["compute_ms"] for p in by[v["step"]] if p["rank"] != v["rank"]]
        (after if v["ts"] >= lab["start_ts"] else before).append(
            v["compute_ms"] / statistics.median(peers))
    return before, after


@pytest.mark.parametrize("story", ["disagg", "hybrid"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    path, recs = _log(story, 5, 8.0)
    again = generate.write(tmp_path, story, 5, 8.0)
    assert again.read_bytes() == path.read_bytes()
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    assert len(_labels(recs)) == 3
    fx = json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json")).read_text())
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      and ("node" in e["scope"] or "job" in e["scope"]) for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, 8.0))
    assert _labels(other) != _labels(recs)


def test_disagg_long_answers_a_slow_rollout_gpu_a_sync_only_nic_and_an_engine_lost():
    path, recs = _log("disagg", 1, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["slowgen", "syncnic", "xid"]
    steps, nic, ecc = _tele(recs, "step"), _tele(recs, "nic"), _tele(recs, "ecc")
    gen = [v for v in steps if v["job"] == "grpo-gen"]
    train = [v for v in steps if v["job"] == "grpo-train"]
    # the engines' rounds vary with their longest answer: no fault, a wide spread
    healthy = [v["compute_ms"] for v in gen if v["dp_rank"] == 3]
    assert max(healthy) > 1.6 * statistics.median(healthy)
    # engines log no loss or norm; their checksums (the synced weights) agree at each round
    assert all("loss" not in v and "grad_norm" not in v for v in gen)
    for vs in (gen, train):
        sums = defaultdict(set)
        for v in vs:
            sums[(v["step"], v["tp_rank"])].add(v["param_checksum"])
        assert all(len(s) == 1 for s in sums.values())
    # GRPO's loss changes sign (routine)
    assert min(v["loss"] for v in train) < 0 < max(v["loss"] for v in train)
    # the slow rollout GPU: its compute over its peers' median x1.15+ after its start
    slow = _one(lab, "slowgen")
    before, after = _ratios(steps, slow)
    assert statistics.median(before) < 1.06 and statistics.median(after) > 1.15
    # the bad port: errors only on it, only after its start
    bad = _one(lab, "syncnic")
    errs = {(v["node"], v["nic"]) for v in nic if v["symbol_errors"] or v["rcv_errors"]}
    assert errs == {(bad["scope"]["node"], bad["scope"]["nic"])}
    assert all(v["ts"] >= bad["start_ts"] for v in nic if v["symbol_errors"])
    # the engine lost to a contained ECC error: XID 94, a DBE, remap pending; no records for a
    # while from its two ranks, then back
    xid = _one(lab, "xid")
    assert {(v["node"], v["gpu"], v["xid"]) for v in ecc if v.get("xid")} == {(*_at(xid), 94)}
    mine = sorted(v["ts"] for v in gen if (v["node"], v["gpu"]) == _at(xid))
    gaps = [b - a for a, b in zip(mine, mine[1:], strict=False)]
    assert max(gaps) > 2.0 * statistics.median(gaps) and mine[-1] > xid["start_ts"]


def test_hybrid_hot_only_in_long_decodes_slow_in_both_phases_capped_in_training():
    path, recs = _log("hybrid", 2, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["hbmheat", "pcap", "slowco"]
    steps, th = _tele(recs, "step"), _tele(recs, "thermal")
    # one record a rank an iteration, every rank the same step_ms; compute = generation + training
    by = defaultdict(set)
    for v in steps:
        by[v["step"]].add(v["step_ms"])
    assert all(len(s) == 1 for s in by.values()) and len(by) >= 20
    hot, capped = _one(lab, "hbmheat"), _one(lab, "pcap")
    rows = defaultdict(list)
    for v in th:
        rows[(v["node"], v["gpu"])].append(v)
    # 0x40 and HBM at 95+ only on the hot GPU, only after its start, some of the time
    hw = [v for k, vs in rows.items() for v in vs if v["throttle"] & 0x40]
    assert {(v["node"], v["gpu"]) for v in hw} == {_at(hot)} and len(hw) >= 3
    assert all(v["ts"] >= hot["start_ts"] for v in hw)
    assert len(hw) < 0.5 * len([v for v in rows[_at(hot)] if v["ts"] >= hot["start_ts"]])
    assert max(v["mem_temp_c"] for k, vs in rows.items() if k != _at(hot) for v in vs) < 94
    # the capped GPU: 0x4 well below the board's 700 W, from its start only
    low = [v for v in rows[_at(capped)] if v["throttle"] & 0x4 and v["power_w"] < 600]
    assert low and min(v["ts"] for v in low) >= capped["start_ts"]
    assert all(v["power_w"] >= 680 for k, vs in rows.items() if k != _at(capped) for v in vs
               if v["throttle"] & 0x4)
    # the slow GPU: above its peers after its start, by less than the answers' spread
    before, after = _ratios(steps, _one(lab, "slowco"))
    assert statistics.median(after) > statistics.median(before) + 0.05


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "disagg", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
