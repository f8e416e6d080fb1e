"""blind29 (round 38): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two stories make the shapes they exist for: a DiLoCo job whose two sites
step at their own pace and meet every H steps (checksums on sync steps only, one site running on
while the other is down), an asynchronous parameter-server job whose every step number is one
worker's (nobody waits for a slow worker); a hot GPU, a checksum minority at a sync, a flapping
port, XID 79 killing one site; a hidden slow worker, a stuck clock, XID 48, a port losing symbols
and retraining at half rate. A small log replays through `faultline replay` (exit status only:
bench/blind29/measure.py measures the answers). The contract checker is blind12's.
"""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import json
import random
import statistics
import tempfile
from pathlib import Path

import pytest

from bench.blind29 import generate, noise
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind29-")), story, seed, minutes)
    return path, _records(path)


def _effects(path: Path) -> list[dict]:
    return json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
                      .read_text())


def _gpu(rows, scope):
    return [v for v in rows if (v["node"], v["gpu"]) == (scope["node"], scope["gpu"])]


@pytest.mark.parametrize("story", ["diloco", "async"])
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


def test_diloco_sites_step_apart_sync_checksums_and_its_faults():
    path, recs = _log("diloco", 1, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["flap", "hot", "sdc", "xid79"]
    steps = _tele(recs, "step")
    # the same step number ends seconds apart on the two sites between syncs
    first: dict[tuple[str, int], float] = {}
    for v in steps:
        key = (v["cluster"], v["step"])
        first[key] = min(first.get(key, v["ts"]), v["ts"])
    gaps = [abs(first[("west", k)] - first[("east", k)]) for c, k in first
            if c == "west" and ("east", k) in first]
    assert max(gaps) > 10.0
    # checksums on sync steps only, every rank of a tp_rank agreeing but the SDC GPU
    synced = sorted({v["step"] for v in steps if "param_checksum" in v})
    assert len(synced) >= 3 and len({b - a for a, b in itertools.pairwise(synced)}) == 1
    sdc = _one(lab, "sdc")
    for k in synced:
        rows = [v for v in steps if v["step"] == k and v["tp_rank"] == sdc["scope"]["gpu"]]
        sums = {v["param_checksum"] for v in rows if (v["node"], v["gpu"]) != (
            sdc["scope"]["node"], sdc["scope"]["gpu"])}
        assert len(sums) == 1
    mine = [v for v in _gpu(steps, sdc["scope"]) if "param_checksum" in v
            and v["ts"] >= sdc["start_ts"]]
    assert mine and all(v["param_checksum"] not in {
        p["param_checksum"] for p in steps if p["step"] == v["step"] and p["rank"] != v["rank"]
        and p["tp_rank"] == v["tp_rank"]} for v in mine)
    # the hot GPU holds 88 C at 0x20; nothing else does
    hot = _one(lab, "hot")
    th = [v for v in _tele(recs, "thermal") if v["throttle"] & 0x20]
    assert th and {(v["node"], v["gpu"]) for v in th} == {(hot["scope"]["node"],
                                                          hot["scope"]["gpu"])}
    # east under its site cap: 0x4 on every east row while busy
    east = [v for v in _tele(recs, "thermal") if v["cluster"] == "east" and v["power_w"] > 300]
    assert all(v["throttle"] & 0x4 for v in east)
    # XID 79: its GPU's rows stop, its site stops, the other site runs on
    x = _one(lab, "xid79")
    xids = [v for v in _tele(recs, "ecc") if v.get("xid")]
    assert [(v["xid"], v["ts"]) for v in xids] == [(79, x["start_ts"])]
    assert not [v for v in _tele(recs, "thermal") if v["ts"] > x["start_ts"] + 1
                and (v["node"], v["gpu"]) == (x["scope"]["node"], x["scope"]["gpu"])]
    site = next(v["cluster"] for v in steps if v["node"] == x["scope"]["node"])
    alone = [v for v in steps if x["start_ts"] + 5 < v["ts"] < x["start_ts"] + 60]
    assert alone and {v["cluster"] for v in alone} == {"west", "east"} - {site}
    back = [v for v in steps if v["cluster"] == site and v["ts"] > x["start_ts"]]
    assert back and x["scope"]["node"] not in {v["node"] for v in back}
    # the flap: downs on one port, its site's steps stalled
    fl = _one(lab, "flap")
    port = [v for v in _tele(recs, "nic") if (v["node"], v["nic"]) == (fl["scope"]["node"],
                                                                        fl["scope"]["nic"])]
    assert port[-1]["link_downed"] - port[0]["link_downed"] == 3
    assert any(v["link_state"] == "down" for v in port)


def test_async_workers_never_share_a_step_and_its_faults():
    path, recs = _log("async", 2, 12.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["ber", "clock", "slow", "xid48"]
    steps = _tele(recs, "step")
    assert len({v["step"] for v in steps}) == len({(v["rank"], v["step"]) for v in steps})
    assert not [v for v in steps if "tp_rank" in v or "param_checksum" in v]
    slow = _one(lab, "slow")
    late = [v for v in steps if v["ts"] > slow["start_ts"]]
    mine = _gpu(late, slow["scope"])
    assert statistics.median(v["compute_ms"] for v in mine) > 1.15 * statistics.median(
        v["compute_ms"] for v in late)
    # nobody waits for it: its peers' comm is what it was
    assert statistics.median(v["comm_ms"] for v in late if v not in mine) < 1.1 * (
        statistics.median(v["comm_ms"] for v in steps if v["ts"] < slow["start_ts"]))
    ck = _one(lab, "clock")
    rows = [v for v in _gpu(_tele(recs, "thermal"), ck["scope"]) if v["ts"] > ck["start_ts"]
            and v["power_w"] > 150]
    assert rows and all(v["sm_clock_mhz"] < 1400 and v["throttle"] == 0 for v in rows)
    x = _one(lab, "xid48")
    assert [v["xid"] for v in _tele(recs, "ecc") if v.get("xid")] == [48]
    rank = next(v["rank"] for v in _gpu(steps, x["scope"]))
    after = [v for v in steps if v["rank"] == rank and v["ts"] > x["start_ts"]]
    assert after and {v["node"] for v in after} == {"gpu-07"}
    ber = _one(lab, "ber")
    port = [v for v in _tele(recs, "nic") if (v["node"], v["nic"]) == (ber["scope"]["node"],
                                                                        ber["scope"]["nic"])]
    assert port[-1]["symbol_errors"] - port[0]["symbol_errors"] > 1000
    assert port[-1]["rate_gbps"] == 200.0 and port[0]["rate_gbps"] == 400.0
    # the chief's evaluation: rank 0 silent for 30 s or more while its peers step
    r0 = sorted(v["ts"] for v in steps if v["rank"] == 0)
    assert max(b - a for a, b in itertools.pairwise(r0)) > 30.0


def test_pai_noise_keeps_its_autocorrelation():
    xs = noise.stream(random.Random(4), 4000)
    assert 0.35 < noise.lag1(xs) < 0.8
    assert 0.7 < statistics.pstdev(xs) < 1.3
    assert max(abs(x) for x in xs) <= noise.CLIP


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "async", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
