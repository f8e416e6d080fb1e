"""blind34 (round 43): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two stories make the shapes they exist for: mixture-of-experts training
whose token routing moves work between expert-parallel ranks step by step (a GPU whose HBM
overheats under the expert weights, a NIC on one all-to-all rail degrading, corruption in one
rank's expert gradients), and MoE steps at both extremes, ~70 ms and ~2 min (an NVLink going bad
under a fast job's all-to-all, a hot GPU in the slow job, a rank whose parameters diverge).
A small log replays through `faultline replay` (exit status only: bench/blind34/measure.py
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

from bench.blind34 import generate
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind34-")), story, seed, minutes)
    return path, _records(path)


def _effects(path: Path) -> list[dict]:
    return json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
                      .read_text())


def _ratios(steps: list[dict], job: str) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """Each GPU's (ts, compute over its peers' median compute) a step, peers = one stage."""
    by = defaultdict(list)
    for v in steps:
        if v["job"] == job:
            by[(v["step"], v["pp_rank"], v["tp_rank"])].append(v)
    out = defaultdict(list)
    for vs in by.values():
        med = statistics.median(v["compute_ms"] for v in vs)
        for v in vs:
            out[(v["node"], v["gpu"])].append((v["ts"], v["compute_ms"] / med))
    return out


def _at(lab: dict) -> tuple[str, int]:
    return lab["scope"]["node"], lab["scope"]["gpu"]


@pytest.mark.parametrize("story", ["ep", "extremes"])
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


def test_ep_routes_tokens_and_its_faults():
    path, recs = _log("ep", 1, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["hbm", "nic", "sdc"]
    steps, th, nic = _tele(recs, "step"), _tele(recs, "thermal"), _tele(recs, "nic")
    r = _ratios(steps, "moe-a")
    hbm, link, sdc = _one(lab, "hbm"), _one(lab, "nic"), _one(lab, "sdc")
    # routing is workload: healthy ranks take turns at +5 % or more, for runs of steps
    healthy = [k for k in r if k != _at(hbm)]
    hot = [k for k in healthy if sum(x > 1.05 for _, x in r[k]) >= 15]
    assert len(hot) >= 20
    # the HBM: memory >= 95 C and 0x40 on that GPU only, its die normal; its rank x>1.1 after
    hw = [v for v in th if v["throttle"] & 0x40]
    assert {(v["node"], v["gpu"]) for v in hw} == {_at(hbm)}
    assert all(v["mem_temp_c"] >= 93 and v["gpu_temp_c"] < 75 for v in hw)
    late = [x for ts, x in r[_at(hbm)] if ts > hw[0]["ts"] + 30]
    assert statistics.median(late) > 1.1
    # the NIC: symbol errors on that port only, trained down to 200 Gb/s; the job slower
    bad = {(v["node"], v["nic"]) for v in nic if v["symbol_errors"] > 0}
    assert bad == {(link["scope"]["node"], link["scope"]["nic"])}
    assert {v["rate_gbps"] for v in nic if (v["node"], v["nic"]) in bad} == {200.0, 400.0}
    down = min(v["ts"] for v in nic if (v["node"], v["nic"]) in bad and v["rate_gbps"] < 400)
    r0 = [v for v in steps if v["rank"] == 0]
    b = link["start_ts"]
    before = statistics.median(v["step_ms"] for v in r0 if b - 50 < v["ts"] < b - 5)
    after = statistics.median(v["step_ms"] for v in r0 if down + 5 < v["ts"] < down + 40)
    assert after > 1.03 * before  # the all-to-all on its rail at half the bandwidth
    # the corrupt expert gradients: that rank's grad norm x3+ on some steps, nobody else's;
    # the (dense) checksums agree
    spikes = {(v["node"], v["gpu"]) for v in steps if v["grad_norm"] > 2.5}
    assert spikes == {_at(sdc)}
    sums = defaultdict(set)
    for v in steps:
        sums[(v["step"], v["pp_rank"])].add(v["param_checksum"])
    assert all(len(s) == 1 for s in sums.values())


def test_extremes_run_fast_and_slow_steps_and_their_faults():
    path, recs = _log("extremes", 2, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["ckm", "hot", "nvl"]
    steps, th, ecc = _tele(recs, "step"), _tele(recs, "thermal"), _tele(recs, "ecc")
    fast = [v["step_ms"] for v in steps if v["job"] == "moe-s" and v["rank"] == 0]
    slow = [v["step_ms"] for v in steps if v["job"] == "moe-l" and v["rank"] == 0]
    assert statistics.median(fast) < 100 and len(fast) > 8000
    assert statistics.median(slow) > 100_000 and 4 <= len(slow) <= 8
    # the NVLink: counters climbing on that GPU alone; the fast job's steps slower after
    nvl = _one(lab, "nvl")
    climbing = {(v["node"], v["gpu"]) for v in ecc if v["nvlink_crc_errors"] > 0}
    assert climbing == {_at(nvl)}
    before = statistics.median(v["step_ms"] for v in steps if v["job"] == "moe-s"
                               and v["rank"] == 0 and v["ts"] < nvl["start_ts"])
    after = statistics.median(v["step_ms"] for v in steps if v["job"] == "moe-s"
                              and v["rank"] == 0 and v["ts"] > nvl["start_ts"] + 90)
    assert after > 1.03 * before
    # the hot GPU: 0x20 on it alone, above 87 C; its node's ranks (its TP group) slower
    hot = _one(lab, "hot")
    sw = [v for v in th if v["throttle"] & 0x20]
    assert {(v["node"], v["gpu"]) for v in sw} == {_at(hot)}
    assert all(v["gpu_temp_c"] >= 85 for v in sw)
    mine = [(v["ts"], v["compute_ms"]) for v in steps if (v["node"], v["gpu"]) == _at(hot)]
    early = [c for ts, c in mine if ts < hot["start_ts"]]
    late = [c for ts, c in mine if ts > sw[0]["ts"] + 150]  # steps begun once hot
    assert early and late and statistics.median(late) > 1.04 * statistics.median(early)
    # the diverging rank: its checksum differs from its DP peers' from its label on
    ckm = _one(lab, "ckm")
    sums = defaultdict(dict)
    for v in steps:
        if v["job"] == "moe-l":
            sums[(v["step"], v["tp_rank"], v["pp_rank"])][(v["node"], v["gpu"])] = (
                v["param_checksum"], v["ts"])
    odd = {(k, ts >= ckm["start_ts"]) for g in sums.values() for k, (s, ts) in g.items()
           if sum(s == o for o, _ in g.values()) == 1 and len(g) > 2}
    assert odd == {(_at(ckm), True)}


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "extremes", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
