"""blind30 (round 39): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two stories make the shapes they exist for: a rolling driver upgrade
(spares dark and back with counters at 0, a planned stop, a job that comes back on other nodes
and re-runs its step numbers from its checkpoint) with a clock lock left on a node, a port
retrained at half rate and XID 94; three driver cohorts (power sampled or averaged, idle clocks,
`recovery_action` or none, a canary's clock policy) with a failing cold plate, a checksum
minority, a hidden slow GPU and a GSP timeout. A small log replays through `faultline replay`
(exit status only: bench/blind30/measure.py measures the answers). The contract checker is
blind12's.
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

from bench.blind30 import generate, noise
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind30-")), story, seed, minutes)
    return path, _records(path)


def _effects(path: Path) -> list[dict]:
    return json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
                      .read_text())


def _gpu(rows, scope):
    return [v for v in rows if (v["node"], v["gpu"]) == (scope["node"], scope["gpu"])]


@pytest.mark.parametrize("story", ["rolling", "canary"])
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


def test_rolling_upgrade_restarts_and_its_faults():
    path, recs = _log("rolling", 1, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["lock", "rate", "xid94"]
    th, steps, ecc = _tele(recs, "thermal"), _tele(recs, "step"), _tele(recs, "ecc")
    # the upgraded nodes went dark and came back with counters from 0
    dark = {fx["scope"]["node"] for fx in _effects(path) if fx["effect"] == "driver_upgrade"}
    assert len(dark) == 6
    for node in dark:
        ts = sorted(v["ts"] for v in th if v["node"] == node and v["gpu"] == 0)
        assert max(b - a for a, b in zip(ts, ts[1:], strict=False)) > 55.0
        tx = [v["tx_bytes"] for v in sorted(_tele(recs, "nic"), key=lambda v: v["ts"])
              if v["node"] == node and v["nic"] == "mlx5_0"]
        assert any(b < a for a, b in zip(tx, tx[1:], strict=False))
    # the job re-runs step numbers after a restart from its checkpoint, on other nodes
    seen: dict[tuple[int, int], float] = {}
    rerun = 0
    for v in sorted(steps, key=lambda v: v["ts"]):
        key = (v["step"], v["rank"])
        rerun += key in seen and v["ts"] - seen[key] > 30.0
        seen.setdefault(key, v["ts"])
    assert rerun > 0
    # the clock lock: every GPU of the node under 1,300 MHz when busy, no reason bit
    lock = _one(lab, "lock")
    node = lock["scope"]["node"]
    busy = [v for v in th if v["node"] == node and v["throttle"] != 0x1]
    assert busy and all(v["sm_clock_mhz"] <= 1300 and v["throttle"] == 0 for v in busy)
    late = [v for v in steps if v["ts"] > lock["start_ts"] + 60]
    mine = [v["compute_ms"] for v in late if v["node"] == node]
    assert statistics.median(mine) > 1.2 * statistics.median(v["compute_ms"] for v in late)
    # XID 94 on an old-driver node: counters, no recovery_action field
    x = _one(lab, "xid94")
    assert [v["xid"] for v in ecc if v.get("xid")] == [94]
    after = [v for v in _gpu(ecc, x["scope"]) if v["ts"] > x["start_ts"] and "xid" not in v]
    assert after and all(v["dbe_volatile"] == 1 and "recovery_action" not in v for v in after)
    assert not [v for v in steps if v["node"] == x["scope"]["node"]
                and x["start_ts"] < v["ts"] < x["start_ts"] + 45]
    # the port at half rate, losing symbols
    r = _one(lab, "rate")
    port = [v for v in _tele(recs, "nic") if (v["node"], v["nic"]) == (r["scope"]["node"],
                                                                        r["scope"]["nic"])]
    assert port[-1]["rate_gbps"] == 200.0 and port[-1]["symbol_errors"] > 500
    # cohorts: at the end, recovery_action on the upgraded nodes' rows only
    end = max(v["ts"] for v in ecc)
    last = [v for v in ecc if "xid" not in v and v["ts"] > end - 31]
    assert last and all(("recovery_action" in v) == (v["node"] in dark) for v in last)


def test_canary_cohorts_and_their_faults():
    path, recs = _log("canary", 2, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["hot", "sdc", "slow", "xid119"]
    th, steps, ecc = _tele(recs, "thermal"), _tele(recs, "step"), _tele(recs, "ecc")
    # the canary's clock policy: 1,830-1,860 MHz busy, throttle 0
    can = [v for v in th if v["node"] in ("c-07", "c-08") and v["throttle"] != 0x1]
    assert can and all(1800 <= v["sm_clock_mhz"] <= 1860 and v["throttle"] in (0, 0x20)
                       for v in can)
    # idle clocks differ by driver; power sampled (old) vs averaged (new) -- spread of busy rows
    def spread(nodes):
        rows = [v["power_w"] for v in th if v["node"] in nodes and v["throttle"] == 0]
        return statistics.pstdev(rows) / statistics.fmean(rows)
    assert spread({"c-02", "c-03"}) > spread({"c-10", "c-11"})
    # the hot GPU alone holds 88 C at 0x20
    hot = _one(lab, "hot")
    t20 = [v for v in th if v["throttle"] & 0x20]
    assert t20 and {(v["node"], v["gpu"]) for v in t20} == {(hot["scope"]["node"],
                                                             hot["scope"]["gpu"])}
    assert all(87.5 <= v["gpu_temp_c"] <= 88.5 for v in t20)
    # the checksum minority: its tp peers agree, it does not
    s = _one(lab, "sdc")
    mine = [v for v in _gpu(steps, s["scope"]) if v["ts"] >= s["start_ts"]]
    assert mine
    for v in mine[:20]:
        peers = {p["param_checksum"] for p in steps if p["job"] == "lm-a" and p["step"] ==
                 v["step"] and p["tp_rank"] == v["tp_rank"] and p["rank"] != v["rank"]}
        assert len(peers) == 1 and v["param_checksum"] not in peers
    # the hidden slow GPU, pure DP (no rank triple)
    w = _one(lab, "slow")
    b = [v for v in steps if v["job"] == "lm-b" and w["start_ts"] < v["ts"] < w["end_ts"]]
    assert not [v for v in b if "tp_rank" in v]
    assert statistics.median(v["compute_ms"] for v in _gpu(b, w["scope"])) > 1.1 * (
        statistics.median(v["compute_ms"] for v in b))
    # XID 119 then recovery_action gpu_reset, no ECC counter; lm-b back on 24 ranks
    x = _one(lab, "xid119")
    assert sorted(v["xid"] for v in ecc if v.get("xid")) == [119]
    after = [v for v in _gpu(ecc, x["scope"]) if v["ts"] > x["start_ts"] and "xid" not in v]
    assert after and all(v["recovery_action"] == "gpu_reset" and v["dbe_volatile"] == 0
                         for v in after)
    back = {v["rank"] for v in steps if v["job"] == "lm-b" and v["ts"] > x["start_ts"] + 90}
    assert back == set(range(24))


def test_pai_noise_keeps_its_autocorrelation():
    xs = noise.stream(random.Random(4), 4000)
    assert 0.35 < noise.lag1(xs) < 0.8
    assert 0.7 < statistics.pstdev(xs) < 1.3
    assert max(abs(x) for x in xs) <= noise.CLIP


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "canary", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
