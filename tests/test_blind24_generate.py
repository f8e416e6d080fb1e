"""blind24 (round 33): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, the two stories
make the shapes they exist for (an elastic job renumbering its ranks, a power-capped drift, a
reason-less drift, an intermittent SDC and a bad batch on every replica, an NTP step; a churning
sweep, a hot HBM under the jobs that land on it, an inference GPU throttling in its bursts), and
a small log replays through `faultline replay` (exit status only: the detector's answers are
measured by bench/blind24/measure.py, not pinned here). The contract checker is blind12's."""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import json
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest

from bench.blind24 import generate
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind24-")), story, seed, minutes)
    return path, _records(path)


@pytest.mark.parametrize("story", ["drift", "churn"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    path, recs = _log(story, 5, 1.5)
    again = generate.write(tmp_path, story, 5, 1.5)
    assert again.read_bytes() == path.read_bytes()
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    fx = json.loads(path.with_name(f"{story}-s5.effects.json").read_text())
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, 1.0))
    assert _labels(other) != _labels(recs)


def test_drift_labels_and_their_shapes():
    """A power-capped drift (power), a reason-less drift (unattributable), an intermittent SDC,
    each at one GPU; the leaking GPU ends at its cap with a lower clock than its mates."""
    _, recs = _log("drift", 1, 6.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["age", "leak", "sdc"]
    assert all(v["scope"]["level"] == "gpu" for v in lab.values())
    assert (_one(lab, "leak")["kind"], _one(lab, "leak")["cause"]) == ("slow_node", "power")
    age = _one(lab, "age")
    assert (age["attributable"], age["cause"]) == (False, "unknown")
    assert (_one(lab, "sdc")["kind"], _one(lab, "sdc")["cause"]) == ("sdc", "gpu_hardware")
    sc = _one(lab, "leak")["scope"]
    th = [v for v in _tele(recs, "thermal") if v["node"] == sc["node"]]
    late = [v for v in th if v["ts"] > _one(lab, "leak")["end_ts"] - 25]
    me = [v for v in late if v["gpu"] == sc["gpu"]]
    assert me and all(v["throttle"] & 0x4 and v["power_w"] > 690 for v in me)
    assert max(v["sm_clock_mhz"] for v in me) <= min(
        v["sm_clock_mhz"] for v in late if v["gpu"] != sc["gpu"] and not v["throttle"] & 1)


def test_sdc_is_intermittent_and_the_bad_batch_hits_every_replica():
    _, recs = _log("drift", 1, 6.0)
    sdc = _one(_labels(recs), "sdc")["scope"]
    steps = [v for v in _tele(recs, "step") if v["job"] == "pt-dense"]
    sums: dict[tuple, set] = defaultdict(set)
    for v in steps:
        sums[(v["step"], v["tp_rank"])].add(v["param_checksum"])
    split = sorted(s for (s, _), c in sums.items() if len(c) > 1)
    assert split and all(b - a >= 50 for a, b in itertools.pairwise(split))
    odd = {v["step"] for v in steps if (v["node"], v["gpu"]) == (sdc["node"], sdc["gpu"])
           and len(sums[(v["step"], v["tp_rank"])]) > 1}
    assert odd == set(split)
    path, _ = _log("drift", 1, 6.0)
    fx = json.loads(path.with_name("drift-s1.effects.json").read_text())
    (bad,) = [e for e in fx if e["effect"].startswith("bad batch")]
    spike = [v for v in steps if bad["start_ts"] <= v["ts"] <= bad["end_ts"]
             and v["grad_norm"] > 5.0]
    assert {v["rank"] for v in spike} == {v["rank"] for v in steps}


def test_elastic_job_renumbers_its_ranks_and_ntp_steps_a_clock_back():
    _, recs = _log("drift", 1, 6.0)
    steps = [v for v in _tele(recs, "step") if v["job"] == "ft-elastic"]
    world: dict[int, set] = defaultdict(set)
    ranks: dict[tuple, set] = defaultdict(set)
    for v in steps:
        world[v["step"]].add(v["rank"])
        ranks[(v["node"], v["gpu"])].add(v["rank"])
    assert {len(r) for r in world.values()} == {24, 32}
    assert any(len(r) > 1 for r in ranks.values())        # a GPU under two rank numbers
    assert len({s for s in world}) == len(world) and max(world) - min(world) + 1 == len(world)
    seen: dict[tuple, list[float]] = defaultdict(list)
    for v in _tele(recs, "thermal"):
        seen[(v["node"], v["gpu"])].append(v["ts"])
    gaps = {k: [b - a for a, b in itertools.pairwise(sorted(ts))] for k, ts in seen.items()}
    stepped = {k[0] for k, g in gaps.items() if min(g) < 8.0 and max(g) > 12.0}   # 10 s cadence
    assert len(stepped) == 1


def test_churn_labels_sweep_and_bursts():
    """A sweep of 1-2-node jobs starting from step 1 beside pt-big; inference nodes with no
    steps; the hot-HBM GPU at 0x20 under load and the die-fault GPU at 0x20 / 0x40 in bursts."""
    _, recs = _log("churn", 2, 6.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["hbm", "sdc", "tim"]
    assert (_one(lab, "hbm")["kind"], _one(lab, "hbm")["cause"]) == ("slow_node", "thermal")
    assert _one(lab, "tim")["cause"] == "thermal"
    steps = _tele(recs, "step")
    sweeps = {v["job"] for v in steps if v["job"].startswith("hp-")}
    assert len(sweeps) >= 4 and any(v["step"] == 1 for v in steps if v["job"] in sweeps)
    assert not {v["node"] for v in steps} & {f"gn0{i}" for i in range(17, 21)}
    th = _tele(recs, "thermal")
    ts = sorted(v["ts"] for v in th if (v["node"], v["gpu"]) == ("gn001", 0))
    assert 29.5 < statistics.median(b - a for a, b in itertools.pairwise(ts)) < 30.5   # 30 s
    for key, bits in (("hbm", 0x20), ("tim", 0x20)):
        sc = _one(lab, key)["scope"]
        assert any(v["throttle"] & bits for v in th
                   if (v["node"], v["gpu"]) == (sc["node"], sc["gpu"]))
    healthy = [v for v in th if v["throttle"] & 0x60 and (v["node"], v["gpu"]) not in {
        (lab[k]["scope"]["node"], lab[k]["scope"]["gpu"]) for k in lab}]
    assert healthy == []


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "churn", 3, 1.0)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
