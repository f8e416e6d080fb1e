"""blind23 (round 32): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, the two stories
make the shapes they exist for (a mixed fleet's per-type normal, a requeue from a checkpoint onto
other nodes, a stuck clock, a NUMA mis-binding, a fan; a rack's CDU, one node's flow, a host CPU
throttle), and a small log replays through `faultline replay` (exit status only: the detector's
answers are measured by bench/blind23/measure.py, not pinned here). The contract checker is
blind12's."""

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

from bench.blind23 import generate
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind23-")), story, seed, minutes)
    return path, _records(path)


@pytest.mark.parametrize("story", ["fleet", "loop"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    logs = [generate.write(tmp_path / d, story, 5, minutes=2.0) for d in ("one", "two")]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    recs = _records(logs[0])
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    fx = json.loads(logs[0].with_name(f"{story}-s5.effects.json").read_text())
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, minutes=2.0))
    assert _labels(other) != _labels(recs)


def test_fleet_labels_and_per_type_normal():
    """Three faults with their units and causes; an L40S at its cap and ~80 C is normal, an
    A100 runs at 1410 MHz, and neither is labelled."""
    _, recs = _log("fleet", 2, 6.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["clock", "fan", "numa"]
    assert (_one(lab, "clock")["scope"]["level"], _one(lab, "clock")["cause"]) == (
        "gpu", "gpu_hardware")
    numa = _one(lab, "numa")
    assert numa["attributable"] is False and numa["cause"] == "unknown"
    assert _one(lab, "fan")["cause"] == "thermal"
    fan_node = _one(lab, "fan")["scope"]["node"]
    th = _tele(recs, "thermal")
    calm = [v for v in th if v["node"].startswith("l40s") and v["node"] != fan_node
            and v["throttle"] != 0x1]
    assert statistics.median(v["gpu_temp_c"] for v in calm) > 74
    assert sum(v["throttle"] & 0x4 > 0 for v in calm) > len(calm) / 2
    assert not any(v["throttle"] & 0x60 for v in calm)
    a100 = [v["sm_clock_mhz"] for v in th if v["node"].startswith("a100") and v["throttle"] != 1]
    assert max(a100) == 1410.0
    hot = [v for v in th if v["node"] == fan_node and v["ts"] > _one(lab, "fan")["start_ts"] + 150]
    assert any(v["throttle"] & 0x20 for v in hot)


def test_fleet_requeue_rewinds_and_replaces_and_the_stuck_clock_shows_under_load():
    _, recs = _log("fleet", 2, 6.0)
    steps = [v for v in _tele(recs, "step") if v["job"] == "llm-a"]
    seen: dict[tuple, set] = defaultdict(set)
    for v in steps:
        seen[(v["step"], v["rank"])].add(v["node"])
    assert any(len(n) > 1 for n in seen.values())           # a step re-run on another node
    lab = _one(_labels(recs), "clock")
    node, g = lab["scope"]["node"], lab["scope"]["gpu"]
    busy = [v for v in _tele(recs, "thermal") if v["node"] == node and v["throttle"] != 1]
    mine = [v["sm_clock_mhz"] for v in busy if v["gpu"] == g]
    mates = [v["sm_clock_mhz"] for v in busy if v["gpu"] != g]
    assert max(mine) <= 1740 < statistics.median(mates)
    assert all(v["throttle"] == 0 for v in busy if v["gpu"] == g)
    first = min(v["ts"] for v in busy)                      # llm-a's init on the node
    assert lab["start_ts"] >= first - 1.0                   # nothing to see before the load


def test_fleet_numa_ranks_late_in_neither_part():
    _, recs = _log("fleet", 2, 6.0)
    node = _one(_labels(recs), "numa")["scope"]["node"]
    rest = defaultdict(list)
    for v in _tele(recs, "step"):
        if v["node"] == node:
            rest[v["gpu"] >= 4].append(v["step_ms"] - v["compute_ms"] - v["comm_ms"])
    assert statistics.median(rest[True]) > 5 * statistics.median(rest[False])


def test_loop_slurm_30s_cdu_rack_throttles_together_and_the_cpu_node_looks_healthy():
    _, recs = _log("loop", 3, 6.0)
    assert recs[0]["value"]["format"] == "slurm"
    lab = _labels(recs)
    cdu = [v for k, v in lab.items() if k.startswith("cdu-")]
    assert len(cdu) == 4 and len({k.split("-")[1] for k in lab if k.startswith("cdu-")}) == 1
    th = _tele(recs, "thermal")
    gaps = {round(b["ts"] - a["ts"]) for a, b in zip(
        [v for v in th if v["node"] == "gpu01" and v["gpu"] == 0],
        [v for v in th if v["node"] == "gpu01" and v["gpu"] == 0][1:], strict=False)}
    assert gaps == {30}
    for c in cdu:
        n = c["scope"]["node"]
        assert any(v["throttle"] & 0x20 for v in th if v["node"] == n)
    cpu = _one(lab, "cpu")
    assert cpu["attributable"] is False
    n = cpu["scope"]["node"]
    assert not any(v["throttle"] & 0x60 for v in th if v["node"] == n)
    late = [v for v in _tele(recs, "step") if v["ts"] > cpu["start_ts"] + 120]
    peers = defaultdict(list)
    for v in late:
        peers[v["node"] == n].append(v["compute_ms"])
    assert statistics.median(peers[True]) > 1.05 * statistics.median(peers[False])


def test_a_small_log_replays():
    path, _ = _log("loop", 1, 1.5)
    out = path.with_name("alerts.jsonl")
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(path), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
