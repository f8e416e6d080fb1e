"""blind26 (round 35): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two 4,096-GPU-scale stories make the shapes they exist for (a GPU's
thermal interface degrading to SW thermal slowdown, a failing rail leaf, an XID 48 crashing the
job and its restart on a spare from the last checkpoint, a rank's parameters diverging; a failing
RoCE optic, a node's lost PSU braking its GPUs, an HBM corrected-error storm, a GPU at HW
slowdown from a short job's first step). A small log replays through `faultline replay` (exit
status only: bench/blind26/measure.py measures the answers). The contract checker is blind12's.
"""

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

from bench.blind26 import generate, noise
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind26-")), story, seed, minutes)
    return path, _records(path)


def _effects(path: Path) -> list[dict]:
    return json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
                      .read_text())


@pytest.mark.parametrize("story", ["pretrain", "tenants"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    path, recs = _log(story, 5, 1.5)
    again = generate.write(tmp_path, story, 5, 1.5)
    assert again.read_bytes() == path.read_bytes()
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    fx = _effects(path)
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      and ("node" in e["scope"] or "job" in e["scope"]) for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, 1.5))
    assert _labels(other) != _labels(recs)


def _rank(steps, node, gpu):
    return [v for v in steps if (v["node"], v["gpu"]) == (node, gpu)]


def test_pretrain_faults_at_4096_gpus():
    _, recs = _log("pretrain", 1, 7.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["dbe", "hot", "leaf", "sdc"]
    steps = _tele(recs, "step")
    assert len({v["rank"] for v in steps}) == 4096
    # the hot GPU: held at 87-89 C by SW thermal slowdown, its compute up against its peers'
    hot = _one(lab, "hot")
    sc = hot["scope"]
    th = [v for v in _tele(recs, "thermal") if (v["node"], v["gpu"]) == (sc["node"], sc["gpu"])]
    held = [v for v in th if v["throttle"] == 0x20]
    assert held and all(87 <= v["gpu_temp_c"] <= 89 for v in held)
    t_held = held[0]["ts"]
    mine = _rank(steps, sc["node"], sc["gpu"])
    me = [v for v in mine if v["ts"] > t_held + 40]
    pp = mine[0]["pp_rank"]
    peers = [v["compute_ms"] for v in steps if v["pp_rank"] == pp and v["tp_rank"] ==
             mine[0]["tp_rank"] and v["ts"] > t_held + 40 and v["node"] != sc["node"]]
    assert statistics.median(v["compute_ms"] for v in me) > 1.05 * statistics.median(peers)
    # the failing leaf: every port facing it counts receive errors
    leaf = _one(lab, "leaf")
    sw = leaf["scope"]["switch"]
    rail, idx = int(sw[4]), int(sw[-2:])
    bad = {v["node"] for v in _tele(recs, "nic") if v["nic"] == f"mlx5_{rail}"
           and v["rcv_errors"] > 0}
    assert bad == {f"gpu-{i:04d}" for i in range(32 * idx, 32 * idx + 32)}
    # the DBE: XID 48 then 63, no llm-4k step for the restart's length
    dbe = _one(lab, "dbe")
    xids = sorted((v["ts"], v["xid"]) for v in _tele(recs, "ecc") if v.get("xid"))
    assert [x for _, x in xids] == [48, 63] and xids[0][0] == dbe["start_ts"]
    after = sorted(v["ts"] for v in steps if v["ts"] > dbe["start_ts"])
    assert not after or after[0] > dbe["start_ts"] + 150
    # the SDC: a checksum its DP peers do not share, from the label's start
    sdc = _one(lab, "sdc")
    sc = sdc["scope"]
    mine = [v for v in _rank(steps, sc["node"], sc["gpu"]) if "param_checksum" in v]
    v = next(v for v in mine if v["ts"] >= sdc["start_ts"])
    peers = {w["param_checksum"] for w in steps if w["step"] == v["step"] and "param_checksum"
             in w and (w["tp_rank"], w["pp_rank"]) == (v["tp_rank"], v["pp_rank"])
             and w["rank"] != v["rank"]}
    assert len(peers) == 1 and v["param_checksum"] not in peers


def test_tenants_faults_and_the_incast():
    path, recs = _log("tenants", 2, 7.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["hwslow", "nic", "psu", "sbe"]
    steps = _tele(recs, "step")
    th = _tele(recs, "thermal")
    psu = _one(lab, "psu")
    node = psu["scope"]["node"]
    braked = {v["gpu"] for v in th if v["node"] == node and v["throttle"] == 0x80}
    assert braked == set(range(8))
    job = next(v["job"] for v in steps if v["node"] == node)
    after = [v for v in steps if v["job"] == job and v["ts"] > psu["start_ts"] + 30]
    mine = statistics.median(v["compute_ms"] for v in after if v["node"] == node)
    others = statistics.median(v["compute_ms"] for v in after if v["node"] != node)
    assert mine > 1.25 * others
    nic = _one(lab, "nic")
    sc = nic["scope"]
    sym = [v["symbol_errors"] for v in _tele(recs, "nic")
           if (v["node"], v["nic"]) == (sc["node"], sc["nic"])]
    assert sym[-1] - sym[0] > 1000
    hw = _one(lab, "hwslow")
    sc = hw["scope"]
    assert any(v["throttle"] == 0x8 for v in th if (v["node"], v["gpu"]) == (sc["node"],
                                                                                sc["gpu"]))
    first = min((v for v in steps if v["ts"] >= hw["start_ts"] and v["node"] == sc["node"]),
                key=lambda v: v["ts"])
    run = [v for v in steps if v["job"] == first["job"] and v["step"] > 3]
    mine = statistics.median(v["compute_ms"] for v in run if (v["node"], v["gpu"]) == (
        sc["node"], sc["gpu"]))
    assert mine > 1.12 * statistics.median(v["compute_ms"] for v in run)
    sbe = _one(lab, "sbe")
    sc = sbe["scope"]
    ecc = [v["sbe_volatile"] for v in _tele(recs, "ecc") if (v["node"], v["gpu"]) == (
        sc["node"], sc["gpu"]) and v.get("xid") is None]
    assert ecc[-1] - ecc[0] > 100
    (inc,) = {e["start_ts"] for e in _effects(path) if e["effect"].startswith("incast")}
    cnp = [v for v in _tele(recs, "nic") if v["node"] == "hgx-256" and v["nic"] == "mlx5_0"]
    before = [b["np_cnp_sent"] - a["np_cnp_sent"] for a, b in zip(cnp, cnp[1:], strict=False)
              if b["ts"] < inc]
    during = [b["np_cnp_sent"] - a["np_cnp_sent"] for a, b in zip(cnp, cnp[1:], strict=False)
              if inc + 40 < b["ts"] < inc + 160]
    assert during and max(before) * 20 < min(during)
    assert not [v for v in th if v["node"] == "hgx-256" and v["throttle"] & ~0x5]


def test_pai_noise_keeps_its_autocorrelation():
    xs = noise.rank_stream(random.Random(4), 4000)
    assert 0.35 < noise.lag1(xs) < 0.8
    assert max(abs(x) for x in xs) <= noise.CLIP


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "tenants", 3, 1.0)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
