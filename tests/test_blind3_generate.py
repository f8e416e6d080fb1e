"""blind3 logs against my reading of the contract (bench/blind3/check.py), not faultline's."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import orjson
import pytest

from bench.blind3 import check, generate
from bench.blind3.story import STORIES


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    out = tmp_path_factory.mktemp("blind3")
    paths = {}
    for name in sorted(STORIES):
        path = out / f"{name}-s1.jsonl.gz"
        generate.write(path, STORIES[name](1), 1)
        paths[name] = path
    return paths


def _lines(path):
    with gzip.open(path, "rb") as fh:
        return fh.read().splitlines()


def _records(path):
    return [orjson.loads(x) for x in _lines(path)]


@pytest.mark.parametrize("name", sorted(STORIES))
def test_log_follows_the_contract(logs, name):
    assert check.check(_lines(logs[name])) == []


def test_checker_finds_a_broken_record(logs):
    lines = _lines(logs["extremes"])
    for i, line in enumerate(lines):
        rec = orjson.loads(line)
        if rec["topic"] == "telemetry.step" and rec["value"].get("comm_ms", 0) > 1:
            rec["value"]["step_ms"] = rec["value"]["compute_ms"]
            lines[i] = orjson.dumps(rec)
            break
    late = orjson.loads(lines[5])
    late["value"]["ts"] -= 30.0
    lines.insert(len(lines) // 2, orjson.dumps(late))
    errs = check.check(lines)
    assert any("step_ms" in e for e in errs) and any("out of event-time order" in e for e in errs)


def test_labels_last_and_inside_the_log(logs):
    for path in logs.values():
        recs = _records(path)
        kinds = [r["topic"] == "labels" for r in recs]
        first_label = kinds.index(True)
        assert all(kinds[first_label:]), "labels stand last"
        ts = [r["value"]["ts"] for r in recs if r["topic"].startswith("telemetry.")]
        for r in recs[first_label:]:
            lab = r["value"]
            assert min(ts) <= lab["start_ts"] <= lab["end_ts"] <= max(ts), lab["fault_id"]


def test_k8s_shapes(logs):
    recs = _records(logs["k8s-mixed"])
    rates = {}
    for r in recs:
        if r["topic"] == "telemetry.nic" and r["value"]["nic"] == "mlx5_0":
            rates.setdefault(r["value"]["rate_gbps"], set()).add(r["value"]["node"])
    assert set(rates) == {200.0, 400.0}, "one port name at two rates (A100 HDR beside H100 NDR)"
    ranks = {}
    for r in recs:
        if r["topic"] == "telemetry.step" and r["value"]["job"].startswith("pg-elastic"):
            v = r["value"]
            ranks.setdefault(v["node"], set()).add(v["rank"])
    assert len(ranks) == 4 and max(max(s) for s in ranks.values()) == 31
    jobs = {r["value"]["job"] for r in recs if r["topic"] == "telemetry.step"}
    assert len(jobs) >= 10, "many short jobs"
    assert not any(
        r["value"]["node"].startswith("node") for r in recs if r["topic"].startswith("tele")
    )


def test_extreme_step_regimes(logs):
    recs = _records(logs["extremes"])
    med = {}
    for r in recs:
        if r["topic"] == "telemetry.step":
            med.setdefault(r["value"]["job"].split("-")[0], []).append(r["value"]["step_ms"])
    fast = sorted(med["fast"])[len(med["fast"]) // 2]
    slow = sorted(med["slow"])[len(med["slow"]) // 2]
    assert 250 < fast < 400 and 45_000 <= slow <= 95_000


def test_deterministic():
    a, la = generate.build(STORIES["k8s-mixed"](2), 2)
    b, lb = generate.build(STORIES["k8s-mixed"](2), 2)
    assert la == lb and a[:5000] == b[:5000] and len(a) == len(b)


def test_same_story_under_any_hash_seed():
    """Set iteration order follows PYTHONHASHSEED: a story must not depend on it."""
    code = (
        "import hashlib, orjson\n"
        "from bench.blind3.story import STORIES\n"
        "for name in sorted(STORIES):\n"
        "    s = STORIES[name](3)\n"
        "    fl = s.fleet\n"
        "    d = [sorted(fl.inlet_c.items()), [(k, vars(g)) for k, g in sorted(fl.gpu.items())],\n"
        "         [(j.job, j.attempts) for j in fl.jobs], [f.fault_id for f in s.faults]]\n"
        "    print(name, hashlib.sha256(orjson.dumps(d)).hexdigest())\n"
    )
    outs = []
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout)
    assert outs[0] == outs[1]
