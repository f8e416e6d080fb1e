"""blind35 (round 44): the generator is deterministic per seed, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, every routine shape
"pages nobody", and the two stories make the shapes they exist for: the numerics of training
(loss, local gradient norms, checksums) around silent data corruption -- a dense fp16 job's
warm-up, overflow skips, logit blow-up and bad shard beside a bad HBM row, one GPU's drifting
kernel and optimizer state corrupted once and spread by the all-gather; two fp8 jobs where one
GPU computes wrong only when hot, one only at its voltage corner (the first step after a pause),
one overflows alone. A small log replays through `faultline replay` (exit status only:
bench/blind35/measure.py measures the answers). The contract checker is blind12's.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import statistics
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from bench.blind35 import generate
from detector.cli import main as cli_main
from tests.test_blind12_generate import _breaches, _label_breaches, _records
from tests.test_blind22_generate import _labels, _one, _tele


@functools.cache
def _log(story: str, seed: int, minutes: float) -> tuple[Path, list[dict]]:
    path = generate.write(Path(tempfile.mkdtemp(prefix="blind35-")), story, seed, minutes)
    return path, _records(path)


def _effects(path: Path) -> list[dict]:
    return json.loads(path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
                      .read_text())


def _at(lab: dict) -> tuple[str, int]:
    return lab["scope"]["node"], lab["scope"]["gpu"]


def _groups(steps: list[dict], job: str) -> dict[tuple[int, int, int], list[dict]]:
    """Each (step, tp_rank, pp_rank)'s records: the DP peers of one step."""
    by = defaultdict(list)
    for v in steps:
        if v["job"] == job:
            by[(v["step"], v["tp_rank"], v["pp_rank"])].append(v)
    return by


def _minorities(steps: list[dict], job: str) -> list[dict]:
    """Records whose checksum no DP peer shares at their step."""
    out = []
    for vs in _groups(steps, job).values():
        n = Counter(v["param_checksum"] for v in vs)
        out += [v for v in vs if n[v["param_checksum"]] == 1 and len(vs) > 2]
    return out


def _unchanged(steps: list[dict], job: str, step: int) -> bool:
    """Every shard's checksum (its DP peers' majority) at ``step`` is the one it had at the step
    before: the step was skipped."""
    def sums(at: int) -> dict[tuple[int, int], str]:
        by = defaultdict(Counter)
        for v in steps:
            if v["job"] == job and v["step"] == at:
                by[(v["tp_rank"], v["pp_rank"])][v["param_checksum"]] += 1
        return {k: n.most_common(1)[0][0] for k, n in by.items()}
    now = sums(step)
    return bool(now) and now == sums(step - 1)


@pytest.mark.parametrize("story", ["numerics", "corners"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    path, recs = _log(story, 5, 8.0)
    again = generate.write(tmp_path, story, 5, 8.0)
    assert again.read_bytes() == path.read_bytes()
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    assert len(_labels(recs)) == 3
    fx = _effects(path)
    assert fx and all(e["start_ts"] <= e["end_ts"] and e["expect"] == "pages nobody"
                      and ("node" in e["scope"] or "job" in e["scope"]) for e in fx)
    other = _records(generate.write(tmp_path / "six", story, 6, 8.0))
    assert _labels(other) != _labels(recs)


def test_numerics_routine_spikes_and_its_faults():
    path, recs = _log("numerics", 1, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["drift", "hbm", "prop"]
    steps, ecc = _tele(recs, "step"), _tele(recs, "ecc")
    # DP peers' checksums agree at every step (the all-gather hands every peer the same bits)
    assert _minorities(steps, "dense-a") == []
    # overflow skips: some shard's DP peers all log a null norm, and no checksum moves
    nulls = defaultdict(set)
    for v in steps:
        if v["grad_norm"] is None:
            nulls[v["step"]].add((v["tp_rank"], v["pp_rank"], v["dp_rank"]))
    assert len(nulls) >= 5
    for s, who in nulls.items():
        assert len(who) % 8 == 0 and _unchanged(steps, "dense-a", s)
    # the warm-up: early norms several times the later ones
    r0 = {v["step"]: v for v in steps if v["rank"] == 0 and v["grad_norm"] is not None}
    assert r0[min(r0)]["grad_norm"] > 3 * statistics.median(
        r0[s]["grad_norm"] for s in r0 if 250 <= s < 350)
    # the drifting GPU: its local norm x1.18-1.35 its DP peers' median from its label on
    drift = _one(lab, "drift")
    ratios = []
    for vs in _groups(steps, "dense-a").values():
        ok = [v["grad_norm"] for v in vs if v["grad_norm"] is not None]
        for v in vs:
            if (v["node"], v["gpu"]) == _at(drift) and v["grad_norm"] is not None:
                ratios.append((v["ts"], v["grad_norm"] / statistics.median(ok)))
    before = [x for ts, x in ratios if ts < drift["start_ts"]]
    after = [x for ts, x in ratios if ts >= drift["start_ts"]]
    assert 0.95 < statistics.median(before) < 1.05 and 1.12 < statistics.median(after) < 1.45
    # the propagated corruption: every replica's loss higher to the end, checksums still agree
    prop = _one(lab, "prop")
    losses = [(v["ts"], v["loss"]) for v in steps if v["rank"] == 0]
    pre = [x for ts, x in losses if prop["start_ts"] - 60 < ts < prop["start_ts"]]
    end = [x for ts, x in losses if ts > prop["end_ts"] - 60]
    assert statistics.median(end) > 1.15 * statistics.median(pre)
    # the HBM row: corrected errors climbing on that GPU alone, then XID 48 and a DBE
    hbm = _one(lab, "hbm")
    climbing = {(v["node"], v["gpu"]) for v in ecc if v.get("sbe_volatile", 0) > 10}
    assert climbing == {_at(hbm)}
    xids = {(v["node"], v["gpu"], v["xid"]) for v in ecc if v.get("xid") is not None}
    assert {(*_at(hbm), 48), (*_at(hbm), 63)} <= xids
    assert {(v["node"], v["gpu"]) for v in ecc if v.get("dbe_volatile")} == {_at(hbm)}


def test_corners_wrong_only_hot_at_a_corner_or_alone():
    path, recs = _log("corners", 2, 15.0)
    lab = _labels(recs)
    assert sorted(k.split("-")[0] for k in lab) == ["hot", "nan", "vmin"]
    steps, th = _tele(recs, "step"), _tele(recs, "thermal")
    hot, vmin, nan = _one(lab, "hot"), _one(lab, "vmin"), _one(lab, "nan")
    # the hot GPU: its checksum alone differs, one step at a time, and only while it is hot
    odd_b = _minorities(steps, "fp8-b")
    assert {(v["node"], v["gpu"]) for v in odd_b} == {_at(hot)} and len(odd_b) >= 3
    temps = sorted((v["ts"], v["gpu_temp_c"]) for v in th if (v["node"], v["gpu"]) == _at(hot))
    for v in odd_b:
        near = [c for ts, c in temps if abs(ts - v["ts"]) <= 10]
        assert max(near) >= 79
    n_after = len({v["step"] for v in steps if v["job"] == "fp8-b" and v["ts"] >= hot["start_ts"]})
    assert len(odd_b) < 0.15 * n_after       # one step at a time, healed at the next
    early = [c for ts, c in temps if ts < hot["start_ts"] - 200]
    assert early and max(early) < 79
    # the voltage corner: its checksum alone differs, on the first step after a pause only
    odd_c = _minorities(steps, "fp8-c")
    assert {(v["node"], v["gpu"]) for v in odd_c} == {_at(vmin)}
    r0 = {v["step"]: v["ts"] for v in steps if v["job"] == "fp8-c" and v["rank"] == 0}
    for v in odd_c:
        gap = r0[v["step"]] - r0[v["step"] - 1]
        assert gap > 10.0
    # the overflowing rank: its norm alone is null, and the whole job skips those steps
    alone = defaultdict(set)
    for v in steps:
        if v["job"] == "fp8-b" and v["grad_norm"] is None:
            alone[v["step"]].add((v["node"], v["gpu"]))
    single = {s for s, who in alone.items() if len(who) == 1}
    assert len(single) >= 8 and {next(iter(alone[s])) for s in single} == {_at(nan)}
    assert all(_unchanged(steps, "fp8-b", s) for s in single)
    assert all(len(who) in (1, 16) for who in alone.values())


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "corners", 3, 1.5)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
