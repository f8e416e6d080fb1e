"""blind32 (round 41): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two stories make the shapes they exist for: a job that heals itself
(snapshots, a node-by-node persist rotation, replication bursts, hot-spare burn-ins, an
in-process restart that re-runs steps on a swapped-in spare; with a hidden slow GPU, a port back
at half rate, a GPU fallen off the bus, a spare that runs hot), and a zero-bubble pipeline whose
context length doubles mid-run (with a power limit left low, a slow GPU on the slowest stage, an
SBE creep to XID 92, a checksum minority). A small log replays through `faultline replay` (exit
status only: bench/blind32/measure.py measures the answers). The contract checker is blind12's.
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

from bench.blind32 import generate, noise
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind32-")), story, seed, minutes)
    return path, _records(path)


def _effects(path: Path) -> list[dict]:
    return json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
                      .read_text())


@pytest.mark.parametrize("story", ["selfheal", "zb"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    path, recs = _log(story, 5, 8.0)
    again = generate.write(tmp_path, story, 5, 8.0)
    assert again.read_bytes() == path.read_bytes()
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    assert 3 <= len(_labels(recs)) <= 4
    fx = _effects(path)
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      and ("node" in e["scope"] or "job" in e["scope"]) for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, 8.0))
    assert _labels(other) != _labels(recs)


def test_selfheal_restarts_in_process_on_a_spare_and_its_faults():
    path, recs = _log("selfheal", 1, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["hot", "nic", "slow", "xid79"]
    steps, th, nic, ecc = (_tele(recs, k) for k in ("step", "thermal", "nic", "ecc"))
    x = _one(lab, "xid79")
    assert [(v["node"], v["gpu"], v["xid"]) for v in ecc if v.get("xid")] == [
        (x["scope"]["node"], x["scope"]["gpu"], 79)]
    # the dead GPU reports nothing after its XID; the job's steps stop for >= 35 s
    assert not [v for v in th + ecc if (v["node"], v["gpu"]) == (x["scope"]["node"],
                x["scope"]["gpu"]) and v["ts"] > x["start_ts"] + 1.0]
    ts = sorted({round(v["ts"], 0) for v in steps if v["rank"] == 0})
    assert max(b - a for a, b in zip(ts, ts[1:], strict=False)) >= 35.0
    # steps re-run: rank 0 reports some step numbers twice, later ones from the spare h-09
    seen = defaultdict(list)
    for v in steps:
        seen[(v["step"], v["rank"])].append(v)
    again = [vs for vs in seen.values() if len(vs) == 2 and vs[0]["ts"] != vs[1]["ts"]]
    assert again
    dead_ranks = {v["rank"] for v in steps if v["node"] == x["scope"]["node"]}
    assert {v["rank"] for v in steps if v["node"] == "h-09"} == dead_ranks
    # the hot spare: 0x20 at ~88 C on its one GPU only, after the swap; the burn-ins' 0x4
    hot = _one(lab, "hot")
    t20 = [v for v in th if v["throttle"] & 0x20]
    assert t20 and {(v["node"], v["gpu"]) for v in t20} == {("h-09", hot["scope"]["gpu"])}
    assert all(v["ts"] > x["start_ts"] and 87.0 <= v["gpu_temp_c"] <= 89.0 for v in t20)
    burn = [v for v in th if v["throttle"] & 0x4 and v["node"] == "h-10"]
    assert burn and not [v for v in steps if v["node"] == "h-10"]
    # the port back at 200 Gb/s after one down row
    n = _one(lab, "nic")
    port = [v for v in nic if (v["node"], v["nic"]) == (n["scope"]["node"], n["scope"]["nic"])]
    assert [v["link_state"] for v in port].count("down") == 1 and port[-1]["rate_gbps"] == 200
    # the persist rotation: each node in turn >= 150 ms in neither while the others are not
    fx = _effects(path)
    persist = [e for e in fx if e["effect"] == "persist"]
    assert len({e["scope"]["node"] for e in persist}) >= 7
    e = persist[3]
    mid = [v for v in steps if e["start_ts"] + 0.1 < v["ts"] <= e["end_ts"] + 0.1]
    late = {v["node"] for v in mid if v["step_ms"] - v["compute_ms"] - v["comm_ms"] > 140}
    assert late == {e["scope"]["node"]}
    # the hidden slow GPU: its node's compute over its stage peers' after onset
    s = _one(lab, "slow")
    by = defaultdict(list)
    for v in steps:
        if v["ts"] > s["start_ts"] + 5 and v["ts"] < x["start_ts"]:
            by[(v["step"], v["pp_rank"])].append(v)
    ratios = [statistics.mean(v["compute_ms"] for v in vs if v["node"] == s["scope"]["node"])
              / statistics.median(v["compute_ms"] for v in vs)
              for vs in by.values() if any(v["node"] == s["scope"]["node"] for v in vs)]
    assert statistics.median(ratios) > 1.06


def test_zb_extends_its_context_and_its_faults():
    path, recs = _log("zb", 2, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["cap", "sbe", "sdc", "slow"]
    steps, th, ecc = (_tele(recs, k) for k in ("step", "thermal", "ecc"))
    by = defaultdict(dict)
    for v in steps:
        by[v["step"]][v["rank"]] = v
    med = [statistics.median(v["compute_ms"] for v in r.values()) for _, r in sorted(by.items())]
    assert statistics.median(med[-20:]) > 1.5 * statistics.median(med[:20])
    # the last stage computes longest
    early = [v for v in steps if v["step"] < 20]
    s3 = statistics.median(v["compute_ms"] for v in early if v["pp_rank"] == 3)
    assert s3 > 1.10 * statistics.median(v["compute_ms"] for v in early if v["pp_rank"] == 0)
    # the power limit: 0x4 on its GPU only
    cap = _one(lab, "cap")
    assert {(v["node"], v["gpu"]) for v in th if v["throttle"]} == {(cap["scope"]["node"],
                                                                     cap["scope"]["gpu"])}
    # the SBE creep: XID 92 on the GPU, then row remap pending
    sbe = _one(lab, "sbe")
    assert [(v["node"], v["gpu"], v["xid"]) for v in ecc if v.get("xid")] == [
        (sbe["scope"]["node"], sbe["scope"]["gpu"], 92)]
    assert any(v.get("row_remap_pending") for v in ecc)
    # the checksum minority: 1 against 2 in its (tp, pp) group
    sdc = _one(lab, "sdc")
    last = by[max(by)]
    groups = defaultdict(set)
    for v in last.values():
        groups[(v["tp_rank"], v["pp_rank"])].add(v["param_checksum"])
    assert sorted(len(x) for x in groups.values()).count(2) == 1
    bad = [v for v in last.values() if (v["node"], v["gpu"]) == (sdc["scope"]["node"],
                                                                 sdc["scope"]["gpu"])]
    peers = [v for v in last.values() if (v["tp_rank"], v["pp_rank"]) == (
        bad[0]["tp_rank"], bad[0]["pp_rank"]) and v is not bad[0]]
    assert len(peers) == 2 and all(p["param_checksum"] != bad[0]["param_checksum"]
                                   for p in peers)


def test_pai_noise_keeps_its_autocorrelation():
    xs = noise.stream(random.Random(4), 4000)
    assert 0.35 < noise.lag1(xs) < 0.8
    assert 0.7 < statistics.pstdev(xs) < 1.3
    assert max(abs(x) for x in xs) <= noise.CLIP


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "zb", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
