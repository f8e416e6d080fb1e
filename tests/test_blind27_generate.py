"""blind27 (round 36): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two stories make the shapes they exist for: a job on spot VMs (reclaims
with a notice, an elastic shrink and grow onto new VMs with ranks renumbered, a crash after XID
79 and a restart from the last checkpoint; an NVLink going bad, a GPU's cooling degrading, a new
VM's port at half rate) and an inference fleet beside a training job (traffic bursts, an
autoscaler parking nodes, a rolling model reload; a serving GPU at SW thermal slowdown only in
bursts, a contained ECC error, a flapping port, a training GPU's PCIe link replaying). A small
log replays through `faultline replay` (exit status only: bench/blind27/measure.py measures the
answers). The contract checker is blind12's.
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

from bench.blind27 import generate, noise
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind27-")), story, seed, minutes)
    return path, _records(path)


def _effects(path: Path) -> list[dict]:
    return json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
                      .read_text())


@pytest.mark.parametrize("story", ["spot", "serve", "churn"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    path, recs = _log(story, 5, 8.0)
    again = generate.write(tmp_path, story, 5, 8.0)
    assert again.read_bytes() == path.read_bytes()
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    assert len(_labels(recs)) == (3 if story == "churn" else 4)
    fx = _effects(path)
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      and ("node" in e["scope"] or "job" in e["scope"]) for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, 8.0))
    assert _labels(other) != _labels(recs)


def _gpu(rows, scope):
    return [v for v in rows if (v["node"], v["gpu"]) == (scope["node"], scope["gpu"])]


def test_spot_reclaims_resizes_and_faults():
    path, recs = _log("spot", 1, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["hot", "nvl", "rate", "xid79"]
    steps = _tele(recs, "step")
    t_end = max(v["ts"] for v in steps)
    # reclaimed VMs: the job left them, then every topic from them stops before the log's end
    for e in (e for e in _effects(path) if e["effect"].startswith("spot-reclaim")):
        node = e["scope"]["node"]
        last = max(r["value"]["ts"] for r in recs if r["topic"].startswith("telemetry.")
                   and r["value"]["node"] == node)
        left = max(v["ts"] for v in steps if v["node"] == node)
        assert left < last <= e["end_ts"] + 10.0 < t_end
        assert last - left > 60.0
    # the elastic job: several sizes, ranks renumbered, steps repeated after the crash
    sizes = {len({v["node"] for v in steps if v["step"] == s}) for s in range(1, 60)}
    assert len(sizes) >= 2
    homes = {}
    for v in steps:
        homes.setdefault((v["node"], v["gpu"]), set()).add(v["rank"])
    assert any(len(r) > 1 for r in homes.values())
    x = _one(lab, "xid79")
    xids = [v for v in _tele(recs, "ecc") if v.get("xid")]
    assert [(v["xid"], v["ts"]) for v in xids] == [(79, x["start_ts"])]
    assert not [v for v in _tele(recs, "thermal") + _tele(recs, "ecc") if v.get("xid") is None
                and (v["node"], v["gpu"]) == (x["scope"]["node"], x["scope"]["gpu"])
                and v["ts"] > x["start_ts"]]
    done = max(v["step"] for v in steps if v["ts"] < x["start_ts"])
    again = min(v["step"] for v in steps if v["ts"] > x["start_ts"])
    assert again < done
    # the hot GPU: held at 87-89 C by SW thermal slowdown, its compute above its peers'
    hot = _one(lab, "hot")
    held = [v for v in _gpu(_tele(recs, "thermal"), hot["scope"]) if v["throttle"] & 0x20]
    assert len(held) >= 10 and all(86 <= v["gpu_temp_c"] <= 90 for v in held)
    t_h = held[0]["ts"] + 30.0
    mine = [v["compute_ms"] for v in _gpu(steps, hot["scope"]) if v["ts"] > t_h]
    peers = [v["compute_ms"] for v in steps if v["gpu"] == hot["scope"]["gpu"]
             and v["node"] != hot["scope"]["node"] and v["ts"] > t_h]
    assert statistics.median(mine) > 1.08 * statistics.median(peers)
    # the NVLink: CRC errors climbing on its GPU, the node's ranks slower than their peers
    nv = _one(lab, "nvl")
    crc = [v["nvlink_crc_errors"] for v in _gpu(_tele(recs, "ecc"), nv["scope"])
           if v.get("xid") is None]
    assert crc[-1] - crc[0] > 1000
    late = [v for v in steps if v["ts"] > nv["start_ts"] + 150.0]
    node = statistics.median(v["compute_ms"] for v in late if v["node"] == nv["scope"]["node"])
    assert node > 1.07 * statistics.median(v["compute_ms"] for v in late)
    # the new VM's port at 200 Gb/s, its mates at 400; the job's exposed comm up once it joins
    rate = _one(lab, "rate")
    ports = [v for v in _tele(recs, "nic") if v["node"] == rate["scope"]["node"]]
    assert {v["rate_gbps"] for v in ports if v["nic"] == rate["scope"]["nic"]} == {200.0}
    assert {v["rate_gbps"] for v in ports if v["nic"] != rate["scope"]["nic"]} == {400.0}


def test_serve_traffic_autoscaling_and_faults():
    path, recs = _log("serve", 2, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["cool", "flap", "pcie", "xid94"]
    th = _tele(recs, "thermal")
    cool = _one(lab, "cool")
    mine = _gpu(th, cool["scope"])
    assert 5 <= sum(1 for v in mine if v["throttle"] & 0x20) < len(mine) / 2
    others = [v for v in th if v["node"].startswith("inf-") and (v["node"], v["gpu"]) != (
        cool["scope"]["node"], cool["scope"]["gpu"])]
    assert not [v for v in others if v["throttle"] & ~0x5]
    assert sum(1 for v in others if v["throttle"] == 0x4) > 50   # bursts and the hot replica
    power = [v["power_w"] for v in others if v["throttle"] != 0x1]
    assert max(power) - min(power) > 300.0
    ecc = _one(lab, "xid94")
    rows = _gpu(_tele(recs, "ecc"), ecc["scope"])
    assert [v["xid"] for v in rows if v.get("xid")] == [94]
    assert rows[-1]["recovery_action"] == "gpu_reset" and rows[-1]["dbe_volatile"] == 1
    flap = _one(lab, "flap")
    port = [v for v in _tele(recs, "nic") if (v["node"], v["nic"]) == (flap["scope"]["node"],
                                                                        flap["scope"]["nic"])]
    assert port[-1]["link_downed"] >= 3 and any(v["link_state"] == "down" for v in port)
    assert port[-1]["symbol_errors"] - port[0]["symbol_errors"] > 1000
    pcie = _one(lab, "pcie")
    steps = _tele(recs, "step")
    late = [v for v in steps if v["ts"] > pcie["start_ts"] + 120.0]
    me = statistics.median(v["compute_ms"] for v in _gpu(late, pcie["scope"]))
    peers = statistics.median(v["compute_ms"] for v in late if v["gpu"] == pcie["scope"]["gpu"]
                              and v["node"] != pcie["scope"]["node"])
    assert me > 1.07 * peers
    assert {v["node"] for v in steps} == {f"trn-{i:02d}" for i in range(8)}


def test_churn_reclaims_reused_names_and_hidden_stragglers():
    path, recs = _log("churn", 1, 10.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["remap", "slow", "straggler"]
    fx = _effects(path)
    assert sum(e["effect"].startswith("spot-reclaim") for e in fx) >= 3
    # a reused host name: one node's port counters start over mid-log
    t_end = max(v["ts"] for v in _tele(recs, "nic"))
    reused = {e["scope"]["node"] for e in fx if e["effect"].startswith("new-vm-reused")
              and e["start_ts"] < t_end - 30.0}
    assert reused
    node = sorted(reused)[0]
    tx = [v["tx_bytes"] for v in _tele(recs, "nic") if (v["node"], v["nic"]) == (node, "mlx5_0")]
    assert any(b < a for a, b in zip(tx, tx[1:], strict=False))
    steps = _tele(recs, "step")
    homes = {}
    for v in steps:
        homes.setdefault((v["node"], v["gpu"]), set()).add(v["rank"])
    assert max(len(r) for r in homes.values()) >= 3
    for key, at_least in (("slow", 1.07), ("straggler", 1.3)):
        f = _one(lab, key)
        late = [v for v in steps if v["ts"] >= f["start_ts"]]
        me = statistics.median(v["compute_ms"] for v in _gpu(late, f["scope"]))
        peers = statistics.median(v["compute_ms"] for v in late
                                  if v["gpu"] == f["scope"]["gpu"] and v["node"] != f["scope"][
                                      "node"])
        assert me > at_least * peers, key
    # the VM handed over needing a reset: pending on every ECC row of that GPU, no XID at all
    rm = _one(lab, "remap")
    rows = [v for v in _gpu(_tele(recs, "ecc"), rm["scope"]) if v["ts"] >= rm["start_ts"]]
    assert rows and all(v["row_remap_pending"] and v["recovery_action"] == "gpu_reset"
                        for v in rows)
    assert not [v for v in _tele(recs, "ecc") if v.get("xid")]
    assert not [v for v in _tele(recs, "thermal") if v["throttle"] & ~0x5]


def test_pai_noise_keeps_its_autocorrelation():
    xs = noise.stream(random.Random(4), 4000)
    assert 0.35 < noise.lag1(xs) < 0.8
    assert max(abs(x) for x in xs) <= noise.CLIP


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "spot", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
