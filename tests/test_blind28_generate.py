"""blind28 (round 37): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two stories make the shapes they exist for: nodes that several tenants'
jobs share (a port carrying two jobs' collectives, one power supply and one set of fans under
every job of a node), fine-tunes coming and going beside long jobs, a neighbour's checkpoint
uploads over a shared port; a port losing symbols under two jobs, a node's power brake, a hidden
slow GPU, a checksum minority, a node's fans failing, XID 94 killing one tenant's job, a shared
port flapping, a new job's GPU slow from its first step. A small log replays through `faultline
replay` (exit status only: bench/blind28/measure.py measures the answers). The contract checker
is blind12's.
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

from bench.blind28 import generate, noise
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind28-")), story, seed, minutes)
    return path, _records(path)


def _effects(path: Path) -> list[dict]:
    return json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
                      .read_text())


def _gpu(rows, scope):
    return [v for v in rows if (v["node"], v["gpu"]) == (scope["node"], scope["gpu"])]


@pytest.mark.parametrize("story", ["packed", "spread"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    path, recs = _log(story, 5, 8.0)
    again = generate.write(tmp_path, story, 5, 8.0)
    assert again.read_bytes() == path.read_bytes()
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    assert len(_labels(recs)) == 4
    fx = _effects(path)
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      and ("node" in e["scope"] or "job" in e["scope"]) for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, 8.0))
    assert _labels(other) != _labels(recs)


def _shared(steps: list[dict]) -> dict[str, set[str]]:
    jobs: dict[str, set[str]] = {}
    for v in steps:
        jobs.setdefault(v["node"], set()).add(v["job"])
    return jobs


def test_packed_tenants_share_nodes_and_ports():
    path, recs = _log("packed", 1, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["ber", "brake", "sdc", "slow"]
    steps = _tele(recs, "step")
    assert all(len(j) >= 4 for j in _shared(steps).values())
    assert len({v["tenant"] for v in steps}) >= 4
    # the port losing symbols carries llm-a (GPU 2) and asr-b (GPU 3): both jobs' comm pays
    ber = _one(lab, "ber")
    port = [v for v in _tele(recs, "nic") if (v["node"], v["nic"]) == (ber["scope"]["node"],
                                                                        "mlx5_1")]
    assert port[-1]["symbol_errors"] - port[0]["symbol_errors"] > 1000
    on = {v["job"] for v in steps if v["node"] == ber["scope"]["node"] and v["gpu"] in (2, 3)}
    assert on == {"llm-a", "asr-b"}
    for job in on:
        before = [v["comm_ms"] for v in steps if v["job"] == job and v["ts"] < ber["start_ts"]]
        after = [v["comm_ms"] for v in steps if v["job"] == job
                 and v["ts"] > ber["start_ts"] + 300]
        assert statistics.median(after) > 1.3 * statistics.median(before), job
    # the power brake: 0x80 on every GPU of the node, whoever runs on it
    br = _one(lab, "brake")
    th = [v for v in _tele(recs, "thermal") if v["node"] == br["scope"]["node"]]
    assert {v["gpu"] for v in th if v["throttle"] & 0x80} == set(range(8))
    assert not [v for v in _tele(recs, "thermal") if v["throttle"] & 0x80
                and v["node"] != br["scope"]["node"]]
    # the checksum minority: one GPU's checksum leaves its TP rank's peers
    sdc = _one(lab, "sdc")
    late = [v for v in steps if v["job"] == "llm-a" and v["ts"] > sdc["start_ts"] + 30]
    mine = _gpu(late, sdc["scope"])
    assert mine
    for v in mine[:5]:
        peers = {p["param_checksum"] for p in late if p["step"] == v["step"]
                 and p["tp_rank"] == v["tp_rank"] and p["rank"] != v["rank"]}
        assert len(peers) == 1 and v["param_checksum"] not in peers
    # the hidden slow GPU: its compute over its peers', its rows healthy
    slow = _one(lab, "slow")
    late = [v for v in steps if v["job"] == "asr-b" and v["ts"] > slow["start_ts"]]
    assert statistics.median(v["compute_ms"] for v in _gpu(late, slow["scope"])) > 1.09 * (
        statistics.median(v["compute_ms"] for v in late))
    # the neighbour's uploads: xmit_wait climbs on mlx5_0 of every node, nothing broken
    assert all(port[-1]["xmit_wait"] > 0 for port in [
        [v for v in _tele(recs, "nic") if (v["node"], v["nic"]) == (n, "mlx5_0")]
        for n in _shared(steps)])


def test_spread_fans_xid_restart_flap_and_new_job_straggler():
    path, recs = _log("spread", 2, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["fan", "flap", "straggler", "xid94"]
    steps = _tele(recs, "step")
    fan = _one(lab, "fan")
    hot = [v for v in _tele(recs, "thermal") if v["throttle"] & 0x20]
    assert hot and {v["node"] for v in hot} == {fan["scope"]["node"]}
    assert len({v["gpu"] for v in hot}) >= 3
    x = _one(lab, "xid94")
    xids = [v for v in _tele(recs, "ecc") if v.get("xid")]
    assert [(v["xid"], v["ts"]) for v in xids] == [(94, x["start_ts"])]
    sft = [v for v in steps if v["job"] == "sft-c"]
    done = max(v["step"] for v in sft if v["ts"] < x["start_ts"])
    again = [v for v in sft if v["ts"] > x["start_ts"]]
    assert again and min(v["step"] for v in again) < done
    assert x["scope"]["node"] not in {v["node"] for v in again}
    fl = _one(lab, "flap")
    port = [v for v in _tele(recs, "nic") if (v["node"], v["nic"]) == (fl["scope"]["node"],
                                                                        "mlx5_1")]
    assert port[-1]["link_downed"] >= 2 and any(v["link_state"] == "down" for v in port)
    st = _one(lab, "straggler")
    new = [v for v in steps if v["job"] == "ft-new"]
    assert min(v["ts"] for v in new) >= st["start_ts"] - 5.0
    me = statistics.median(v["compute_ms"] for v in _gpu(new, st["scope"]))
    assert me > 1.3 * statistics.median(v["compute_ms"] for v in new)


def test_pai_noise_keeps_its_autocorrelation():
    xs = noise.stream(random.Random(4), 4000)
    assert 0.35 < noise.lag1(xs) < 0.8
    assert max(abs(x) for x in xs) <= noise.CLIP


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "packed", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
