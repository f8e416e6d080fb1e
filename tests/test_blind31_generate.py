"""blind31 (round 40): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two stories make the shapes they exist for: a vision-language model whose
replicas' stage-0 work follows their batches' video share (with a memory-bound slow GPU, a host
starving its loader, NVLink errors), and a video diffusion model whose every step takes one
resolution bucket (with a cold plate that holds 88 C only on heavy buckets, a power brake that
trips only on them, a creeping optic that flaps, a checksum minority). A small log replays
through `faultline replay` (exit status only: bench/blind31/measure.py measures the answers).
The contract checker is blind12's.
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

from bench.blind31 import generate, noise
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind31-")), story, seed, minutes)
    return path, _records(path)


def _effects(path: Path) -> list[dict]:
    return json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
                      .read_text())


def _by_step(steps: list[dict]) -> dict[int, dict[int, dict]]:
    out: dict[int, dict[int, dict]] = defaultdict(dict)
    for v in steps:
        out[v["step"]][v["rank"]] = v
    return out


@pytest.mark.parametrize("story", ["vlm", "diffusion"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    path, recs = _log(story, 5, 8.0)
    again = generate.write(tmp_path, story, 5, 8.0)
    assert again.read_bytes() == path.read_bytes()
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    assert 2 <= len(_labels(recs)) <= 4
    fx = _effects(path)
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      and ("node" in e["scope"] or "job" in e["scope"]) for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, 8.0))
    assert _labels(other) != _labels(recs)


def test_vlm_work_follows_the_data_and_its_faults():
    path, recs = _log("vlm", 1, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["hbm", "loader", "nvl"]
    steps, ecc = _tele(recs, "step"), _tele(recs, "ecc")
    first = min(v["start_ts"] for v in lab.values())
    by = _by_step(steps)
    # healthy replicas' stage-0 nodes swing with their batches: >= 10 % over the stage median
    # on some steps, before any fault
    swings = 0
    for ranks in by.values():
        if ranks[0]["ts"] >= first:
            continue
        s0 = [v["compute_ms"] for v in ranks.values() if v["pp_rank"] == 0]
        swings += max(s0) > 1.10 * statistics.median(s0)
    assert swings >= 5
    # stage 0 computes longer than stage 1
    early = [v for v in steps if v["ts"] < first]
    assert statistics.median(v["compute_ms"] for v in early if v["pp_rank"] == 0) > 1.05 * (
        statistics.median(v["compute_ms"] for v in early if v["pp_rank"] == 1))
    # the starved loader: the node's ranks spend >= 0.3 s in neither; the others do not
    ld = _one(lab, "loader")
    late = [v for v in steps if v["ts"] > ld["start_ts"] and v["step_ms"] < 10_000]

    def neither(v):
        return v["step_ms"] - v["compute_ms"] - v["comm_ms"]
    assert statistics.median(neither(v) for v in late if v["node"] == ld["scope"]["node"]) > 300
    assert statistics.median(neither(v) for v in late if v["node"] != ld["scope"]["node"]) < 60
    # NVLink: XID 74 rows alone, counters rising on the GPU only
    nv = _one(lab, "nvl")
    assert {v["xid"] for v in ecc if v.get("xid")} == {74}
    crc = [v["nvlink_crc_errors"] for v in ecc if "xid" not in v
           and (v["node"], v["gpu"]) == (nv["scope"]["node"], nv["scope"]["gpu"])]
    assert crc[-1] > 0 and crc == sorted(crc)
    assert not [v for v in ecc if "xid" not in v and v["nvlink_crc_errors"] and (
        v["node"], v["gpu"]) != (nv["scope"]["node"], nv["scope"]["gpu"])]
    # the hidden memory-bound slowdown: its node's compute over its stage peers' after onset
    hb = _one(lab, "hbm")
    node = hb["scope"]["node"]
    ratios = []
    for ranks in by.values():
        mine = [v for v in ranks.values() if v["node"] == node]
        if not mine or mine[0]["ts"] < hb["start_ts"]:
            continue
        peers = [v["compute_ms"] for v in ranks.values() if v["pp_rank"] == mine[0]["pp_rank"]]
        ratios.append(mine[0]["compute_ms"] / statistics.median(peers))
    assert statistics.median(ratios) > 1.03


def test_diffusion_buckets_and_faults_that_follow_them():
    path, recs = _log("diffusion", 2, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["ber", "brake", "hot", "sdc"]
    steps, th, nic = _tele(recs, "step"), _tele(recs, "thermal"), _tele(recs, "nic")
    assert not [v for v in steps if "tp_rank" in v]
    by = _by_step(steps)
    # the job's step swings with its bucket, every rank alike
    med = [statistics.median(v["compute_ms"] for v in r.values()) for r in by.values()]
    assert max(med) > 5.0 * min(med)
    # 0x4 on every node, on many rows
    cap = {v["node"] for v in th if v["throttle"] & 0x4}
    assert len(cap) == 6
    # the hot GPU alone shows 0x20, at 87-89 C, on some rows but not all after its start
    hot = _one(lab, "hot")
    t20 = [v for v in th if v["throttle"] & 0x20]
    assert t20 and {(v["node"], v["gpu"]) for v in t20} == {(hot["scope"]["node"],
                                                             hot["scope"]["gpu"])}
    assert all(87.0 <= v["gpu_temp_c"] <= 89.0 for v in t20)
    mine = [v for v in th if (v["node"], v["gpu"]) == (hot["scope"]["node"], hot["scope"]["gpu"])
            and v["ts"] > hot["start_ts"]]
    assert 0 < len(t20) < len(mine)
    # the brake: 0x80 on all eight GPUs of the node only, on heavy steps
    br = _one(lab, "brake")
    t80 = [v for v in th if v["throttle"] & 0x80]
    assert {v["node"] for v in t80} == {br["scope"]["node"]}
    assert {v["gpu"] for v in t80} == set(range(8))
    # the creeping optic flaps: link_downed rises on its port alone
    ber = _one(lab, "ber")
    port = [v for v in nic if (v["node"], v["nic"]) == (ber["scope"]["node"], ber["scope"]["nic"])]
    assert port[-1]["link_downed"] >= 1 and port[-1]["symbol_errors"] > 1000
    assert not [v for v in nic if v["link_downed"] and (v["node"], v["nic"]) != (
        ber["scope"]["node"], ber["scope"]["nic"])]
    # the checksum minority: one rank differs from the 47 others
    sdc = _one(lab, "sdc")
    for ranks in list(by.values())[-5:]:
        sums = defaultdict(list)
        for v in ranks.values():
            sums[v["param_checksum"]].append((v["node"], v["gpu"]))
        assert sorted(len(x) for x in sums.values()) == [1, 47]
        assert [(sdc["scope"]["node"], sdc["scope"]["gpu"])] in sums.values()
    # rank 0's previews: rank 0 alone >= 6 s in neither, every rank waiting
    pv = [fx for fx in _effects(path) if fx["effect"] == "preview"]
    assert pv
    for ranks in by.values():
        r0 = ranks[0]
        if r0["step_ms"] - r0["compute_ms"] - r0["comm_ms"] > 6000:
            assert all(v["step_ms"] - v["compute_ms"] - v["comm_ms"] < 2000
                       for v in ranks.values() if v["rank"] != 0) or all(
                v["step_ms"] - v["compute_ms"] - v["comm_ms"] > 6000 for v in ranks.values())


def test_pai_noise_keeps_its_autocorrelation():
    xs = noise.stream(random.Random(4), 4000)
    assert 0.35 < noise.lag1(xs) < 0.8
    assert 0.7 < statistics.pstdev(xs) < 1.3
    assert max(abs(x) for x in xs) <= noise.CLIP


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "diffusion", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
