"""blind22 (round 31): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, the two stories
make the shapes they exist for, and a small log replays through `faultline replay` (exit status
only: the detector's answers are measured by bench/blind22/measure.py, not pinned here). The
contract checker is blind12's."""

from __future__ import annotations

import functools
import json
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from bench.blind22 import generate, world
from bench.blind22.measure import replay
from tests.test_blind12_generate import _breaches, _label_breaches, _records


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind22-")), story, seed, minutes)
    return path, _records(path)


def _tele(recs: list[dict], topic: str) -> list[dict]:
    return [r["value"] for r in recs if r["topic"] == f"telemetry.{topic}"]


def _labels(recs: list[dict]) -> dict[str, dict]:
    return {r["value"]["fault_id"]: r["value"] for r in recs if r["topic"] == "labels"}


def _one(lab: dict[str, dict], prefix: str) -> dict:
    (v,) = [v for k, v in lab.items() if k.startswith(prefix)]
    return v


@pytest.mark.parametrize("story", ["fabric", "sched"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    logs = [generate.write(tmp_path / d, story, 5, minutes=2.0) for d in ("one", "two")]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    recs = _records(logs[0])
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    want = {"fabric": ["ber-", "nvme-"], "sched": ["remap-", "sdc-"]}[story]
    assert set(f.split("-")[0] + "-" for f in _labels(recs)) <= set(want)    # 2 min: early
    fx = json.loads(logs[0].with_name(f"{story}-s5.effects.json").read_text())
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      for e in fx)


def test_fabric_width_downgrade_is_on_its_port_alone():
    """Slurm topology, 30 s collectors; after the flap the label's port alone runs at 100 Gb/s
    with one link_downed, and pt-b's all-reduce is slower on every rank alike."""
    _, recs = _log("fabric", 0, 8.0)
    assert recs[0]["value"]["format"] == "slurm"
    w = _one(_labels(recs), "width-")
    sc = w["scope"]
    nic = _tele(recs, "nic")
    gaps = sorted({round(b["ts"] - a["ts"]) for a, b in zip(
        [v for v in nic if v["node"] == "hgx001" and v["nic"] == "mlx5_0"],
        [v for v in nic if v["node"] == "hgx001" and v["nic"] == "mlx5_0"][1:], strict=False)})
    assert gaps == [30]
    slow = {(v["node"], v["nic"]) for v in nic if v["rate_gbps"] != 400.0}
    downed = {(v["node"], v["nic"]) for v in nic if v["link_downed"]}
    assert slow == downed == {(sc["node"], sc["nic"])}
    steps = [v for v in _tele(recs, "step") if v["job"] == "pt-b"]
    before = [v["comm_ms"] for v in steps if v["ts"] < w["start_ts"] - 60]
    after = [v for v in steps if v["ts"] > w["start_ts"] + 30]
    assert statistics.median(v["comm_ms"] for v in after) > 1.3 * statistics.median(before)
    by = defaultdict(list)
    for v in after:
        by[v["node"]].append(v["compute_ms"])
    med = [statistics.median(x) for x in by.values()]
    assert max(med) / min(med) < 1.08            # stage 1's +6 %, nobody slow


def test_fabric_ber_climbs_and_nvme_stalls_in_neither_part():
    """The marginal optic's symbol errors climb >= 1.5 decades on its port (a healthy port's
    <= 6); the NVMe node's ranks compute on time, stall in neither part, wait less."""
    _, recs = _log("fabric", 1, 9.0)
    lab = _labels(recs)
    b = _one(lab, "ber-")["scope"]
    nic = _tele(recs, "nic")
    mine = [v["symbol_errors"] for v in nic if (v["node"], v["nic"]) == (b["node"], b["nic"])]
    first = next(x for x in mine if x)
    assert mine[-1] >= 30 * first
    assert max(max(v["symbol_errors"] for v in nic if (v["node"], v["nic"]) == key)
               for key in {(v["node"], v["nic"]) for v in nic} - {(b["node"], b["nic"])}) <= 6
    n = _one(lab, "nvme-")
    assert n["attributable"] is False
    node = n["scope"]["node"]
    late = [v for v in _tele(recs, "step") if v["job"] == "pt-b" and v["ts"] > n["end_ts"] - 240]
    mine_n = [v for v in late if v["node"] == node]
    stage = mine_n[0]["pp_rank"]
    others = [v for v in late if v["node"] != node and v["pp_rank"] == stage]
    neither = lambda v: v["step_ms"] - v["compute_ms"] - v["comm_ms"]  # noqa: E731
    assert statistics.fmean(map(neither, mine_n)) > 3 * statistics.fmean(map(neither, others))
    assert statistics.median(v["comm_ms"] for v in mine_n) < statistics.median(
        v["comm_ms"] for v in others)
    assert abs(np.log(statistics.median(v["compute_ms"] for v in mine_n)
                      / statistics.median(v["compute_ms"] for v in others))) < 0.02


def test_sched_elastic_preemption_gsp_and_remap():
    """Faultline topology; el-a's GPUs change dp_rank at each re-rendezvous and its step numbers
    repeat with new checksums; lp-b's last step is reported by some nodes only and hp-c (another
    tenant) steps on the same GPUs within 2 min; XID 119 once or twice on the label's GPU, which
    reports nothing after; the remap GPU's SBEs start under lp-b, XID 63 before XID 64, 64
    under hp-c."""
    _, recs = _log("sched", 0, 12.0)
    assert recs[0]["value"]["format"] == "faultline"
    steps = _tele(recs, "step")
    el = [v for v in steps if v["job"] == "el-a"]
    dps = defaultdict(set)
    for v in el:
        dps[(v["node"], v["gpu"])].add(v["dp_rank"])
    assert max(len(x) for x in dps.values()) >= 3
    sums = defaultdict(set)
    for v in el:
        if v["tp_rank"] == 0:
            sums[v["step"]].add(v["param_checksum"])
    assert any(len(x) >= 2 for x in sums.values())      # a step rerun after a rewind
    lp = [v for v in steps if v["job"] == "lp-b"]
    last = max(v["step"] for v in lp)
    assert 0 < len({v["node"] for v in lp if v["step"] == last}) < 4 or len(
        [v for v in lp if v["step"] == last]) < 32
    hp = [v for v in steps if v["job"] == "hp-c"]
    assert {v["node"] for v in hp} == {v["node"] for v in lp}
    assert {v["tenant"] for v in hp} == {"prod"} and {v["tenant"] for v in lp} == {"batch"}
    gap = min(v["ts"] for v in hp) - max(v["ts"] for v in lp)
    assert 0 < gap < 180
    lab = _labels(recs)
    g = _one(lab, "gsp-")["scope"]
    xids = [v for v in _tele(recs, "ecc") if v.get("xid") is not None]
    mine = [v for v in xids if (v["node"], v["gpu"]) == (g["node"], g["gpu"])]
    assert {v["xid"] for v in mine} == {119} and 1 <= len(mine) <= 2
    t_x = min(v["ts"] for v in mine)
    assert not [v for v in _tele(recs, "thermal") if (v["node"], v["gpu"]) == (
        g["node"], g["gpu"]) and v["ts"] > t_x + 2]
    assert not [v for v in el if v["node"] == g["node"] and v["ts"] > t_x + 2]
    r = _one(lab, "remap-")
    rm = [v for v in xids if (v["node"], v["gpu"]) == (r["scope"]["node"], r["scope"]["gpu"])]
    codes = [v["xid"] for v in sorted(rm, key=lambda v: v["ts"])]
    assert codes[-1] == 64 and set(codes[:-1]) == {63}
    assert r["start_ts"] < max(v["ts"] for v in lp) < rm[-1]["ts"]
    assert min(v["ts"] for v in hp) < rm[-1]["ts"]
    assert {(v["node"], v["gpu"]) for v in xids} == {(g["node"], g["gpu"]), (
        r["scope"]["node"], r["scope"]["gpu"])}


def test_every_save_effect_lies_in_its_jobs_life():
    """A checkpoint-save effect lies between its job's first and last step (the freeze listed
    hp-c's saves from before hp-c existed: effects.json only, the logs unchanged)."""
    path, recs = _log("sched", 0, 12.0)
    steps = defaultdict(list)
    for v in _tele(recs, "step"):
        steps[v["job"]].append(v["ts"])
    fx = json.loads(path.with_name("sched-s0.effects.json").read_text())
    saves = [e for e in fx if e["effect"] == "checkpoint-save"]
    assert {e["scope"]["job"] for e in saves} == {"el-a", "hp-c", "ft-d"}
    assert [e for e in saves if not min(steps[e["scope"]["job"]]) <= e["start_ts"] <= max(
        steps[e["scope"]["job"]])] == []


def test_sdc_minority_is_the_label_gpu_alone():
    """Odd seeds: from the label's start the label GPU's checksum stands alone against its DP
    peers (same job, tp_rank, pp_rank, step); before it, and everywhere else, they agree."""
    _, recs = _log("sched", 1, 9.0)
    s = _one(_labels(recs), "sdc-")
    groups = defaultdict(list)
    for v in _tele(recs, "step"):
        if "param_checksum" in v:
            groups[(v["job"], v["step"], v["tp_rank"], v["pp_rank"])].append(v)
    odd = set()
    for vs in groups.values():
        vs.sort(key=lambda v: v["ts"])
        runs = [[vs[0]]]
        for a, b in zip(vs, vs[1:], strict=False):
            if b["ts"] - a["ts"] > 20:        # the same step again, after a rewind
                runs.append([])
            runs[-1].append(b)
        for run in runs:
            common = max({v["param_checksum"] for v in run},
                         key=lambda c: sum(v["param_checksum"] == c for v in run))
            odd |= {(v["node"], v["gpu"], v["ts"] >= s["start_ts"]) for v in run
                    if v["param_checksum"] != common}
    assert odd == {(s["scope"]["node"], s["scope"]["gpu"], True)}


def test_healthy_jitter_plants_no_straggler():
    """A rank's healthy jitter (PAI job 2 residuals at 1 %) never holds a 16-step mean 3 %
    out (blind21's freeze planted stragglers drawing from PAI jobs 3 and 4)."""
    rng = np.random.default_rng(0)
    worst = max(float(np.abs(np.convolve(world.jitter(rng, 800, 0.010), np.ones(16) / 16,
                                         "valid")).max()) for _ in range(64))
    assert 0.003 < worst < 0.02


def test_seeds_differ():
    assert _labels(_log("fabric", 0, 8.0)[1]) != _labels(_log("fabric", 1, 9.0)[1])


def test_a_small_log_replays(tmp_path):
    """`faultline replay` exits 0 on a 2-minute log (blind12's runner; the score is not read)."""
    replay(generate.write(tmp_path, "sched", 6, minutes=2.0), tmp_path / "alerts.jsonl")
