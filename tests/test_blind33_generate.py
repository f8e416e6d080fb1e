"""blind33 (round 42): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two stories make the shapes they exist for: H100 nodes whose workload
power profile is switched for the whole job node by node (with the profile on one node only, a
clock held low by application clocks after the switch back, a VRM's power brake on and off, a
frozen power reading), and a GB200 NVL72 rack with power smoothing, EDPp clocks and a demand
response (with a cold plate losing flow, a tray's PSU braking, a GPU whose power ramp is limited).
A small log replays through `faultline replay` (exit status only: bench/blind33/measure.py
measures the answers). The contract checker is blind12's.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import random
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest

from bench.blind33 import generate, noise
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind33-")), story, seed, minutes)
    return path, _records(path)


def _effects(path: Path) -> list[dict]:
    return json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
                      .read_text())


def _ratio(steps: list[dict], node: str, t0: float, t1: float, job: str) -> float:
    """``node``'s median compute over its stage peers' median, steps ending in [t0, t1)."""
    by = defaultdict(list)
    for v in steps:
        if v["job"] == job and t0 <= v["ts"] < t1:
            by[(v["step"], v["pp_rank"])].append(v)
    rs = [statistics.mean(v["compute_ms"] for v in vs if v["node"] == node)
          / statistics.median(v["compute_ms"] for v in vs)
          for vs in by.values() if any(v["node"] == node for v in vs)]
    return statistics.median(rs)


@pytest.mark.parametrize("story", ["profiles", "smooth"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    path, recs = _log(story, 5, 8.0)
    again = generate.write(tmp_path, story, 5, 8.0)
    assert again.read_bytes() == path.read_bytes()
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    assert len(_labels(recs)) == 3
    fx = _effects(path)
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      and ("node" in e["scope"] or "job" in e["scope"]) for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, 8.0))
    assert _labels(other) != _labels(recs)


def test_profiles_switch_the_whole_job_and_its_faults():
    path, recs = _log("profiles", 1, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["clock", "profile", "vrm"]
    steps, th = _tele(recs, "step"), _tele(recs, "thermal")
    fx = {e["effect"]: e for e in _effects(path)}
    q, p = fx["profile-max-q"], fx["profile-max-p"]
    # max-Q: 0x4 on every job GPU while it holds, every rank slower; none on the spares
    during = [v for v in th if q["end_ts"] + 10 < v["ts"] < p["start_ts"]]
    job_gpus = {(v["node"], v["gpu"]) for v in steps}
    assert {(v["node"], v["gpu"]) for v in during if v["throttle"] & 0x4} == job_gpus
    assert not [v for v in th if v["node"] in ("p-09", "p-10") and v["throttle"]]
    r0 = [v for v in steps if v["rank"] == 0]
    before = statistics.median(v["compute_ms"] for v in r0 if v["ts"] < q["start_ts"] - 5
                               and v["ts"] > _one(lab, "profile")["end_ts"] - 400)
    mid = statistics.median(v["compute_ms"] for v in r0 if q["end_ts"] + 5 < v["ts"]
                            < p["start_ts"])
    assert 1.04 < mid / before < 1.12
    # the one-node profile: 0x4 on that node alone before the switch, its compute x~1.08
    one = _one(lab, "profile")
    early = [v for v in th if one["start_ts"] + 10 < v["ts"] < one["end_ts"] - 60]
    assert {v["node"] for v in early if v["throttle"] & 0x4} == {one["scope"]["node"]}
    assert _ratio(steps, one["scope"]["node"], one["start_ts"] + 10, q["start_ts"],
                  "pf-pt") > 1.05
    # the held clock: 0x2 on that GPU only, below its limit, its node slower after the switch
    clk = _one(lab, "clock")
    held = [v for v in th if v["throttle"] & 0x2]
    assert {(v["node"], v["gpu"]) for v in held} == {(clk["scope"]["node"], clk["scope"]["gpu"])}
    assert all(v["power_w"] < 640 for v in held if v["ts"] > clk["start_ts"] + 20)
    vrm = _one(lab, "vrm")
    assert _ratio(steps, clk["scope"]["node"], clk["start_ts"] + 10, vrm["start_ts"],
                  "pf-pt") > 1.05
    # the VRM: 0x80|0x8 on that GPU only, some rows, not all
    brake = [v for v in th if v["throttle"] & 0x80]
    assert brake and all(v["throttle"] & 0x8 for v in brake)
    assert {(v["node"], v["gpu"]) for v in brake} == {(vrm["scope"]["node"], vrm["scope"]["gpu"])}
    mine = [v for v in th if (v["node"], v["gpu"]) == (vrm["scope"]["node"], vrm["scope"]["gpu"])
            and v["ts"] > vrm["start_ts"] + 10]
    assert len(brake) < len(mine)
    # the frozen power reading: one GPU's rows repeat one value from its start
    fr = fx["frozen-power-reading"]
    rows = [v["power_w"] for v in th if (v["node"], v["gpu"]) == (fr["scope"]["node"],
            fr["scope"]["gpu"]) and v["ts"] >= fr["start_ts"]]
    assert len(rows) > 20 and len(set(rows)) == 1


def test_smooth_holds_a_floor_ramps_and_its_faults():
    path, recs = _log("smooth", 2, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["flow", "psu", "ramp"]
    steps, th = _tele(recs, "step"), _tele(recs, "thermal")
    fx = _effects(path)
    # a save: the board keeps the smoothing floor (>= 700 W) while no step runs; the next
    # step's compute stretched on every rank
    save = next(e for e in fx if e["effect"] == "save")
    idle = [v for v in th if save["start_ts"] + 10 < v["ts"] <= save["end_ts"] - 0.5
            and v["node"] in ("g-03", "g-04")]
    assert idle and all(v["power_w"] >= 690 for v in idle)
    k = int(save["what"].split(":")[0].split()[1])
    comp = {v["step"]: v["compute_ms"] for v in steps if v["job"] == "sm-pt" and v["rank"] == 0}
    assert comp[k] > 1.10 * statistics.median(comp[s] for s in range(k - 10, k))
    # the demand response: 0x4 on (nearly) every GPU in it, none outside it but the faults
    dr = next(e for e in fx if e["effect"] == "demand-response")
    inside = [v for v in th if dr["start_ts"] + 15 < v["ts"] < dr["end_ts"] - 15]
    assert len({(v["node"], v["gpu"]) for v in inside if v["throttle"] & 0x4}) >= 60
    # the cold plate: that GPU alone reaches 87 C and 0x20; its TP group (two trays) slower
    flow = _one(lab, "flow")
    hot = [v for v in th if v["throttle"] & 0x20]
    assert {(v["node"], v["gpu"]) for v in hot} == {(flow["scope"]["node"], flow["scope"]["gpu"])}
    assert max(v["gpu_temp_c"] for v in th if v["node"] != flow["scope"]["node"]) < 80
    assert _ratio(steps, flow["scope"]["node"], flow["start_ts"] + 240,
                  flow["start_ts"] + 400, "sm-pt") > 1.05
    # the PSU: 0x80|0x8 on its tray's four GPUs together
    psu = _one(lab, "psu")
    brake = [v for v in th if v["throttle"] & 0x80]
    assert {v["node"] for v in brake} == {psu["scope"]["node"]}
    assert len({v["gpu"] for v in brake}) == 4
    # the limited ramp: 0x4 below the board's limit, outside the demand response
    ramp = _one(lab, "ramp")
    mine = [v for v in th if (v["node"], v["gpu"]) == (ramp["scope"]["node"],
            ramp["scope"]["gpu"]) and v["ts"] > ramp["start_ts"] + 10]
    assert mine and all(v["throttle"] & 0x4 and v["power_w"] < 1100 for v in mine)


def test_pai_noise_keeps_its_autocorrelation():
    xs = noise.stream(random.Random(4), 4000)
    assert 0.35 < noise.lag1(xs) < 0.8
    assert 0.7 < statistics.pstdev(xs) < 1.3
    assert max(abs(x) for x in xs) <= noise.CLIP


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "smooth", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
