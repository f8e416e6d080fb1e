"""blind12 (round 21): the generator is deterministic, every record keeps DESIGN's input
contract, every label is a valid DESIGN label that spans records of its unit, and a small log
replays through `faultline replay` (exit status only: the detector's answers are measured by
bench/blind12/measure.py, not pinned here)."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
from pathlib import Path

import pytest

from bench.blind12 import generate
from detector.cli import main as cli_main

REQUIRED = {"telemetry.step": {"ts": float, "job": str, "step": int, "rank": int, "node": str,
                               "gpu": int, "step_ms": float},
            "telemetry.ecc": {"ts": float, "node": str, "gpu": int},
            "telemetry.thermal": {"ts": float, "node": str, "gpu": int},
            "telemetry.nic": {"ts": float, "node": str, "nic": str, "port": int}}
KINDS = {"slow_node", "hardware", "network", "sdc", "unattributed"}
CAUSES = {"thermal", "power", "gpu_memory", "gpu_hardware", "nvlink", "nic", "switch",
          "software", "unknown"}
IDS = {"gpu": {"node", "gpu"}, "node": {"node"}, "nic": {"node", "nic"}, "switch": {"switch"},
       "domain": {"domain"}, "replica": {"job", "dp_rank"}, "job": {"job"}}


def _records(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _breaches(recs: list[dict]) -> list[str]:
    """Every way a log breaks DESIGN's input contract or label format (empty: none)."""
    bad: list[str] = []
    if recs[0]["topic"] != "topology":
        bad.append("topology not first")
    newest, labels_started = -math.inf, False
    for i, rec in enumerate(recs[1:], 1):
        topic, v = rec["topic"], rec["value"]
        if topic == "labels":
            labels_started = True
            continue
        if labels_started:
            bad.append(f"record {i} after a label")
        for k, typ in REQUIRED[topic].items():
            x = v.get(k)
            ok = isinstance(x, (int, float)) if typ is float else isinstance(x, typ)
            if not ok or isinstance(x, bool):
                bad.append(f"{i} {topic}: {k}={x!r}")
        for k, x in v.items():
            if isinstance(x, float) and not math.isfinite(x):
                bad.append(f"{i} {topic}: {k} not finite")
        if v["ts"] < newest - 5.0:
            bad.append(f"{i} {topic}: ts {v['ts']} over 5 s behind {newest}")
        newest = max(newest, v["ts"])
        if topic == "telemetry.step":
            if v["compute_ms"] < 0 or v["comm_ms"] < 0 or (
                    v["step_ms"] < v["compute_ms"] + v["comm_ms"]):
                bad.append(f"{i} step: step_ms < compute_ms + comm_ms or a negative part")
            if len({"tp_rank", "pp_rank", "dp_rank"} & set(v)) not in (0, 3):
                bad.append(f"{i} step: some rank fields only")
        if topic == "telemetry.ecc" and v.get("xid") is not None and len(v) != 4:
            bad.append(f"{i} an XID event that also carries counters")
    return bad


def _label_breaches(recs: list[dict]) -> list[str]:
    bad = []
    tele = [r["value"] for r in recs if r["topic"].startswith("telemetry.")]
    for lab in (r["value"] for r in recs if r["topic"] == "labels"):
        sc = lab["scope"]
        if lab["kind"] not in KINDS or lab["cause"] not in CAUSES:
            bad.append(f"{lab['fault_id']}: kind/cause {lab['kind']}/{lab['cause']}")
        if set(sc) - {"level", "port"} != IDS[sc["level"]]:
            bad.append(f"{lab['fault_id']}: scope {sc}")
        if not lab["start_ts"] <= lab["end_ts"] or not isinstance(lab["attributable"], bool):
            bad.append(f"{lab['fault_id']}: span or attributable")
        if not lab["attributable"] and lab["cause"] != "unknown":
            bad.append(f"{lab['fault_id']}: unattributable with a cause")
        node = sc.get("node")
        if node and not any(v["node"] == node and lab["start_ts"] <= v["ts"] <= lab["end_ts"]
                            for v in tele):
            bad.append(f"{lab['fault_id']}: no record of {node} in its span")
    return bad


@pytest.mark.parametrize("story", ["nvl72", "pool"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    logs = [generate.write(tmp_path / d, story, 3, minutes=5.0) for d in ("one", "two")]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    recs = _records(logs[0])
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    labels = [r["value"]["fault_id"] for r in recs if r["topic"] == "labels"]
    assert len(labels) == 3, labels
    effects = json.loads(logs[0].with_name(f"{story}-s3.effects.json").read_text())
    assert effects and all(e["start_ts"] <= e["end_ts"] for e in effects)


def test_seeds_differ_and_the_checker_catches_a_broken_step(tmp_path):
    a = _records(generate.write(tmp_path, "pool", 1, minutes=3.0))
    b = _records(generate.write(tmp_path, "pool", 2, minutes=3.0))
    assert [r["value"] for r in a if r["topic"] == "labels"] != [
        r["value"] for r in b if r["topic"] == "labels"]
    step = next(i for i, r in enumerate(a) if r["topic"] == "telemetry.step")
    a[step]["value"]["comm_ms"] = a[step]["value"]["step_ms"]
    assert _breaches(a)


def test_a_small_log_replays(tmp_path):
    log = generate.write(tmp_path, "pool", 6, minutes=3.0)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"])
    assert rc in (0, None)
    assert out.exists()
