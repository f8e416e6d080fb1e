"""blind38 (round 47): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two stories make the shapes they exist for: rack-scale NVLink domains
(NVL72-class racks of 18 four-GPU trays) -- a slow GPU dragging a TP group that spans two trays,
a GPU's NVLink erring (counters, XID 74) under its TP group, a rack's NVSwitch fabric slower with
nothing in telemetry (the domain), a rack's coolant loop losing flow (0x20 spreading from the top
trays), an NVLink cartridge erring on a band of trays, a GPU's clogged cold plate, a tray swapped
for a spare and a rack drained with its job moved. A small log replays through `faultline replay`
(exit status only: bench/blind38/measure.py measures the answers). The contract checker is
blind12's.
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

from bench.blind38 import generate
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind38-")), story, seed, minutes)
    return path, _records(path)


def _ratio(steps: list[dict], pick, when) -> float:
    """The median over steps (``when`` its first record) of the picked records' compute_ms over
    the step's median."""
    by = defaultdict(list)
    for v in steps:
        by[(v["job"], v["step"])].append(v)
    out = []
    for vs in by.values():
        if when(min(v["ts"] for v in vs)):
            med = statistics.median(v["compute_ms"] for v in vs)
            out += [v["compute_ms"] / med for v in vs if pick(v)]
    return statistics.median(out)


@pytest.mark.parametrize("story", ["tp8", "cdu"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    path, recs = _log(story, 5, 6.0)
    again = generate.write(tmp_path, story, 5, 6.0)
    assert again.read_bytes() == path.read_bytes()
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    assert len(_labels(recs)) == 3
    fx = json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json")).read_text())
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      and ("node" in e["scope"] or "job" in e["scope"]) for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, 6.0))
    assert _labels(other) != _labels(recs)
    # the topology names every rack as an NVLink domain
    assert recs[0]["value"]["text"].count("Domain=") == (2 if story == "tp8" else 3)


def test_tp8_a_slow_gpu_drags_its_two_trays_an_nvlink_errs_a_rack_slows():
    path, recs = _log("tp8", 0, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["nvlink", "slowgpu", "switchtray"]
    steps, ecc = _tele(recs, "step"), _tele(recs, "ecc")
    slow = _one(lab, "slowgpu")
    at = (slow["scope"]["node"], slow["scope"]["gpu"])
    first = next(v for v in steps if (v["node"], v["gpu"]) == at and v["ts"] > slow["start_ts"])
    mates = {(v["node"], v["gpu"]) for v in steps
             if v["dp_rank"] == first["dp_rank"] and v["step"] == first["step"]} - {at}
    assert len({n for n, _ in mates}) == 2      # the TP group spans two trays

    def before(t):
        return t < slow["start_ts"] - 5

    def after(t):
        return slow["start_ts"] + 5 < t < min(v["start_ts"] for v in lab.values()
                                              if v is not slow)
    assert _ratio(steps, lambda v: (v["node"], v["gpu"]) == at, after) > 1.08
    assert _ratio(steps, lambda v: (v["node"], v["gpu"]) in mates, after) > 1.03
    assert _ratio(steps, lambda v: (v["node"], v["gpu"]) == at, before) < 1.03
    # the erring NVLink: its counters rise, one XID 74, no other GPU's counters move
    nvl = _one(lab, "nvlink")
    nat = (nvl["scope"]["node"], nvl["scope"]["gpu"])
    assert {(v["node"], v["gpu"]) for v in ecc if v.get("nvlink_crc_errors")} == {nat}
    assert [(v["node"], v["gpu"], v["xid"]) for v in ecc if "xid" in v] == [(*nat, 74)]
    # the NVSwitch fabric of one rack: its ranks compute more than the other rack's, no counter
    sw = _one(lab, "switchtray")
    dom = sw["scope"]["domain"].removeprefix("nvl-")
    def later(t):
        return t > sw["start_ts"] + 5
    inside = _ratio(steps, lambda v: v["node"].startswith(dom), later)
    outside = _ratio(steps, lambda v: not v["node"].startswith(dom), later)
    assert inside / outside > 1.03
    assert not any(v.get("nvlink_crc_errors") for v in ecc if v["node"].startswith(dom)
                   and v["node"] != nat[0])


def test_cdu_a_rack_heats_from_the_top_a_cartridge_errs_a_rack_is_drained():
    path, recs = _log("cdu", 1, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["cartridge", "coolant", "hot"]
    th, ecc, steps = _tele(recs, "thermal"), _tele(recs, "ecc"), _tele(recs, "step")
    cdu, hot = _one(lab, "coolant"), _one(lab, "hot")
    hot_at = (hot["scope"]["node"], hot["scope"]["gpu"])
    sw = [v for v in th if v["throttle"] & 0x20]
    assert {v["node"][:2] for v in sw if (v["node"], v["gpu"]) != hot_at} == {"b1"}
    assert hot_at in {(v["node"], v["gpu"]) for v in sw}
    assert min(v["ts"] for v in sw) > cdu["start_ts"]
    # the top trays of the hot rack throttle first
    first = {}
    for v in sorted(sw, key=lambda v: v["ts"]):
        first.setdefault(v["node"], v["ts"])
    b1 = sorted(n for n in first if n.startswith("b1"))
    assert first[b1[-1]] < first[b1[0]]
    # the cartridge: nvlink counters on 8 consecutive trays of b2 only
    trays = sorted({v["node"] for v in ecc if v.get("nvlink_crc_errors")})
    assert len(trays) == 8 and {t[:2] for t in trays} == {"b2"}
    # the drained rack: its rows stop, its job goes on on b1
    last_b3 = max(v["ts"] for v in th if v["node"].startswith("b3"))
    assert last_b3 < max(v["ts"] for v in th) - 120
    ev = [v for v in steps if v["job"] == "gb-eval"]
    assert {v["node"][:2] for v in ev if v["ts"] > last_b3} == {"b1"}


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "tp8", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
