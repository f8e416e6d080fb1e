"""blind37 (round 46): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two stories make the shapes they exist for: hybrid-sharded data
parallelism with overlapped communication -- a slow GPU that drags its whole shard group's
compute_ms, a NIC degraded on one shard position's all-reduce, a GPU whose PCIe link trained at
x8 (activation offload no longer hidden), a switch port flapping, a GPU in SW thermal slowdown
inside a two-node shard group, a host under memory pressure, and an elastic resize that regroups
the shards. A small log replays through `faultline replay` (exit status only:
bench/blind37/measure.py measures the answers). The contract checker is blind12's.
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

from bench.blind37 import generate
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind37-")), story, seed, minutes)
    return path, _records(path)


def _ratio(steps: list[dict], field: str, pick, when) -> float:
    """The median over steps (``when`` its first record) of the picked records' ``field`` over
    the step's median."""
    by = defaultdict(list)
    for v in steps:
        by[v["step"]].append(v)
    out = []
    for vs in by.values():
        if when(min(v["ts"] for v in vs)):
            med = statistics.median(v[field] for v in vs)
            out += [v[field] / med for v in vs if pick(v)]
    return statistics.median(out)


@pytest.mark.parametrize("story", ["node8", "pair16"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    path, recs = _log(story, 5, 8.0)
    again = generate.write(tmp_path, story, 5, 8.0)
    assert again.read_bytes() == path.read_bytes()
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    assert len(_labels(recs)) == 3
    fx = json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json")).read_text())
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      and ("node" in e["scope"] or "job" in e["scope"]) for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, 8.0))
    assert _labels(other) != _labels(recs)
    # sharded parameters: no rank fields, no checksum
    steps = _tele(recs, "step")
    assert all("tp_rank" not in v and "param_checksum" not in v for v in steps)


def test_node8_a_slow_gpu_drags_its_node_a_nic_on_one_shard_position_a_pcie_x8():
    path, recs = _log("node8", 0, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["nicdeg", "pcie8", "slowgpu"]
    steps, nic = _tele(recs, "step"), _tele(recs, "nic")
    slow = _one(lab, "slowgpu")
    node, gpu = slow["scope"]["node"], slow["scope"]["gpu"]

    def after(t):
        return t >= slow["start_ts"]

    # the slow GPU and its seven node mates (its shard group) compute x1.1+ alike; the slow one
    # waits least, so its comm_ms is the group's lowest
    mine = _ratio(steps, "compute_ms", lambda v: (v["node"], v["gpu"]) == (node, gpu), after)
    mates = _ratio(steps, "compute_ms", lambda v: v["node"] == node and v["gpu"] != gpu, after)
    assert mine > 1.1 and mates > 1.09 and mine - mates < 0.04
    assert _ratio(steps, "comm_ms", lambda v: v["node"] == node, after) < 0.8
    # the degraded NIC: its shard position's ranks on every node wait in comm_ms
    deg = _one(lab, "nicdeg")
    k = int(deg["scope"]["nic"].removeprefix("mlx5_"))
    later = max(deg["start_ts"], slow["start_ts"])
    pos = _ratio(steps, "comm_ms", lambda v: v["gpu"] == k and v["node"] != node,
                 lambda t: t >= later)
    rest = _ratio(steps, "comm_ms", lambda v: v["gpu"] != k and v["node"] != node,
                  lambda t: t >= later)
    assert pos > rest * 1.15
    # seed 0 (even): the port retrained at 200 Gb/s, no error counter moves
    assert {(v["node"], v["nic"]) for v in nic if v.get("rate_gbps") == 200.0} == {
        (deg["scope"]["node"], deg["scope"]["nic"])}
    assert not any(v["symbol_errors"] for v in nic)


def test_pair16_a_flapping_port_a_hot_gpu_a_host_under_pressure_and_a_resize():
    path, recs = _log("pair16", 1, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["flap", "hostmem", "hot"]
    steps, nic, th = _tele(recs, "step"), _tele(recs, "nic"), _tele(recs, "thermal")
    flap, hot = _one(lab, "flap"), _one(lab, "hot")
    downs = [v for v in nic if v["link_state"] == "down"]
    assert {(v["node"], v["nic"]) for v in downs} <= {(flap["scope"]["node"],
                                                       flap["scope"]["nic"])}
    assert max(v["link_downed"] for v in nic) >= 3
    sw = [v for v in th if v["throttle"] & 0x20]
    assert {(v["node"], v["gpu"]) for v in sw} == {(hot["scope"]["node"], hot["scope"]["gpu"])}
    assert min(v["ts"] for v in sw) >= hot["start_ts"]
    # the resize: 64 ranks, then 48 on six nodes, regrouped
    by = defaultdict(set)
    for v in steps:
        by[v["step"]].add(v["rank"])
    sizes = [len(by[s]) for s in sorted(by)]
    assert sizes[0] == 64 and sizes[-1] == 48
    first = {v["rank"]: v["node"] for v in steps if v["step"] == min(by)}
    last = {v["rank"]: v["node"] for v in steps if v["step"] == max(by)}
    assert any(first[r] != last[r] for r in last)


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "node8", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
