"""blind25 (round 34): the generator is deterministic per seed, every record keeps DESIGN's input
contract (but the rows a collector delivers 30-90 s late, beyond DESIGN's 5 s: the story says
so), every label is a valid DESIGN label that spans records of its unit, and the two stories
make the shapes they exist for (a degraded NVLink slowing its node's TP all-reduce, a PCIe link
trained down under a loader-heavy job, an XID 74 slowing a pure-DP job, a GPU fallen off the bus
hanging its job; an exporter restart, driver reloads, a late batch). A small log replays through
`faultline replay` (exit status only: bench/blind25/measure.py measures the answers). The
contract checker is blind12's."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import random
import statistics
import tempfile
from pathlib import Path

import pytest

from bench.blind25 import generate, noise
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind25-")), story, seed, minutes)
    return path, _records(path)


def _effects(path: Path) -> list[dict]:
    return json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
                      .read_text())


def _late_ok(recs: list[dict], fx: list[dict], breach: str) -> bool:
    """A disorder breach by a row of the late batch (the story's own, said in its effects)."""
    i = int(breach.split(" ", 1)[0])
    v = recs[i]["value"]
    return " over 5 s behind " in breach and any(
        e["effect"].startswith("collector batch") and e["scope"]["node"] == v["node"]
        and e["start_ts"] <= v["ts"] <= e["end_ts"] for e in fx)


@pytest.mark.parametrize("story", ["fabric", "mixed"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    path, recs = _log(story, 5, 1.5)
    again = generate.write(tmp_path, story, 5, 1.5)
    assert again.read_bytes() == path.read_bytes()
    fx = _effects(path)
    assert [b for b in _breaches(recs) if not _late_ok(recs, fx, b)] == []
    assert _label_breaches(recs) == []
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, 0.5))
    assert _labels(other) != _labels(recs)


def _median(steps: list[dict], key, lo: float, hi: float) -> float:
    return statistics.median(key(v) for v in steps if lo < v["ts"] < hi)


def test_fabric_nvlink_and_pcie_faults():
    """The degraded NVLink: its GPU's CRC / replay counters climb, its node's ranks' comm grows
    and their compute does not. The PCIe link at x8: that rank's time in neither part grows,
    its replay counter creeps; both at one GPU with a cause."""
    _, recs = _log("fabric", 1, 5.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["nvl", "pcie"]
    nvl, pcie = _one(lab, "nvl"), _one(lab, "pcie")
    assert (nvl["kind"], nvl["cause"], nvl["scope"]["level"]) == ("slow_node", "nvlink", "gpu")
    assert (pcie["cause"], pcie["attributable"]) == ("gpu_hardware", True)
    steps = _tele(recs, "step")
    s0, sc = nvl["start_ts"], nvl["scope"]
    mine = [v for v in steps if v["node"] == sc["node"]]
    comm = (_median(mine, lambda v: v["comm_ms"], s0 - 120, s0),
            _median(mine, lambda v: v["comm_ms"], s0 + 10, s0 + 130))
    comp = (_median(mine, lambda v: v["compute_ms"], s0 - 120, s0),
            _median(mine, lambda v: v["compute_ms"], s0 + 10, s0 + 130))
    assert comm[1] > comm[0] * 1.15 and abs(comp[1] / comp[0] - 1) < 0.02
    ecc = [v for v in _tele(recs, "ecc") if (v["node"], v["gpu"]) == (sc["node"], sc["gpu"])
           and v.get("nvlink_crc_errors") is not None]
    before = max(v["nvlink_crc_errors"] for v in ecc if v["ts"] < s0)
    assert max(v["nvlink_crc_errors"] for v in ecc) > before + 1000
    s0, sc = pcie["start_ts"], pcie["scope"]
    rank = [v for v in steps if (v["node"], v["gpu"]) == (sc["node"], sc["gpu"])]

    def neither(v):
        return v["step_ms"] - v["compute_ms"] - v["comm_ms"]
    assert (_median(rank, neither, s0 + 10, s0 + 130)
            > 1.4 * _median(rank, neither, s0 - 120, s0))
    assert "tp_rank" not in rank[0]                       # pure data parallelism
    rep = [v["pcie_replay"] for v in _tele(recs, "ecc")
           if (v["node"], v["gpu"]) == (sc["node"], sc["gpu"]) and v.get("pcie_replay")
           is not None]
    assert rep[-1] > rep[0]


def test_mixed_xid74_and_the_gpu_fallen_off_the_bus():
    _, recs = _log("mixed", 2, 6.0)
    lab = _labels(recs)
    bus, x74 = _one(lab, "bus"), _one(lab, "xid74")
    assert (bus["kind"], bus["cause"]) == ("hardware", "gpu_hardware")
    assert (x74["kind"], x74["cause"]) == ("hardware", "nvlink")
    xids = {(v["node"], v["gpu"]): (v["xid"], v["ts"]) for v in _tele(recs, "ecc")
            if v.get("xid") is not None}
    sc = bus["scope"]
    assert xids[(sc["node"], sc["gpu"])] == (79, bus["start_ts"])
    assert xids[(x74["scope"]["node"], x74["scope"]["gpu"])] == (74, x74["start_ts"])
    t_bus = bus["start_ts"]
    assert not [v for v in _tele(recs, "step") if v["job"] == "b2-lm" and v["ts"] > t_bus + 2]
    assert [v for v in _tele(recs, "step") if v["job"] == "h1-ft" and v["ts"] > t_bus + 60]
    th = _tele(recs, "thermal")
    assert not [v for v in th if (v["node"], v["gpu"]) == (sc["node"], sc["gpu"])
                and v["ts"] > t_bus + 1]
    hung = [v for v in th if v["node"].startswith("b200") and v["ts"] > t_bus + 40
            and v["power_w"] is not None]
    assert hung and max(v["power_w"] for v in hung) < 500
    busy = [v for v in th if v["node"].startswith("b200") and v["ts"] < t_bus - 60
            and v["power_w"] is not None and not v["throttle"] & 1]
    assert any(v["throttle"] & 0x4 for v in busy)          # B200s at their 1000 W cap
    assert not [v for v in th if v["node"].startswith("h100") and (v["throttle"] or 0) & 0x4]


def test_collectors_restart_reload_rename_and_deliver_late():
    path, recs = _log("mixed", 2, 6.0)
    fx = _effects(path)
    (rs,) = [e for e in fx if e["effect"].startswith("dcgm-exporter restart")]
    th = [v for v in _tele(recs, "thermal") if v["node"] == rs["scope"]["node"]]
    inside = [v for v in th if rs["start_ts"] <= v["ts"] < rs["end_ts"]]
    assert inside and all(v["power_w"] is None for v in inside)      # only the partial scrape
    (nr,) = [e for e in fx if e["effect"].startswith("NIC driver reload")]
    nics = sorted((v["ts"], v["nic"]) for v in _tele(recs, "nic")
                  if v["node"] == nr["scope"]["node"])
    before = {n for t, n in nics if t < nr["start_ts"]}
    after = {n for t, n in nics if t > nr["end_ts"]}
    assert before == {f"mlx5_{i}" for i in range(8)} and len(after) == 8
    assert all(n.startswith("ibp") for n in after)
    first = [v for v in _tele(recs, "nic") if v["node"] == nr["scope"]["node"]
             and v["nic"].startswith("ibp")]
    assert min(v["tx_bytes"] for v in first) < 1e9             # counters started again
    (gr,) = [e for e in fx if e["effect"].startswith("GPU driver reload")]
    ecc = [v for v in _tele(recs, "ecc") if v["node"] == gr["scope"]["node"]
           and v.get("xid") is None]
    assert any(v["pcie_replay"] for v in ecc if v["ts"] < gr["start_ts"])
    assert not any(v["pcie_replay"] for v in ecc if v["ts"] > gr["end_ts"])
    fpath, frecs = _log("fabric", 1, 5.0)
    (late,) = [e for e in _effects(fpath) if e["effect"].startswith("collector batch")]
    newest, lags = -1e18, []
    for r in frecs[1:]:
        v = r["value"]
        if r["topic"].startswith("telemetry."):
            if v["node"] == late["scope"]["node"] and newest - v["ts"] > 5:
                lags.append(newest - v["ts"])
            newest = max(newest, v["ts"])
    assert lags and min(lags) > 20 and max(lags) < 95


def test_pai_noise_keeps_its_autocorrelation():
    xs = noise.rank_stream(random.Random(4), 4000)
    assert 0.4 < noise.lag1(xs) < 0.75
    assert max(abs(x) for x in xs) <= noise.CLIP


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "mixed", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
