"""DESIGN's scoring rule as I read it, over one log's labels and its `--alerts-out` file.

A firing alert catches a label when its `detected_ts` is in `[start_ts, end_ts + 60 s]` and
its scope is the label's unit (same level, same ids; a `node` scope also covers a gpu or nic
label on that node); an unattributable label counts only escalations. First catch gives the
latency and the cause check. Problems are (topic, dedup_key); a problem whose firing messages
catch nothing is a false positive, counted under the kind it claims.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

GRACE_S = 60.0
KEYS = {"gpu": ("node", "gpu"), "nic": ("node", "nic"), "node": ("node",),
        "switch": ("switch",), "domain": ("domain",), "replica": ("job", "dp_rank"),
        "job": ("job",)}


def _lines(path: Path):
    op = gzip.open if path.name.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8") as fh:
        yield from fh


def labels_of(log: Path) -> list[dict]:
    out = []
    for line in _lines(log):
        if line.startswith('{"topic":"labels"') or '"labels"' in line[:30]:
            rec = json.loads(line)
            if rec.get("topic") == "labels":
                out.append(rec["value"])
    return out


def alerts_of(path: Path) -> list[tuple[str, dict]]:
    """(topic, envelope) of every alert record in an `--alerts-out` file (none if absent)."""
    recs = [json.loads(x) for x in _lines(path) if x.strip()] if path.exists() else []
    return [(r["topic"], r["value"]) for r in recs
            if isinstance(r.get("topic"), str) and r["topic"].startswith("alerts.")]


def same_unit(scope: dict | None, unit: dict) -> bool:
    """The alert's scope names the label's unit (a node scope also names its gpus and nics)."""
    lvl = unit["level"]
    got = scope.get("level") if isinstance(scope, dict) else None
    if got == "node" and lvl in ("gpu", "nic"):
        return scope.get("node") == unit["node"]
    if got != lvl or any(scope.get(k) != unit.get(k) for k in KEYS[lvl]):
        return False
    ports = (scope.get("port"), unit.get("port")) if lvl == "nic" else (None, None)
    return None in ports or ports[0] == ports[1]


def _in_window(alert: dict, label: dict) -> bool:
    t = alert.get("detected_ts")
    return isinstance(t, (int, float)) and label["start_ts"] <= t <= label["end_ts"] + GRACE_S


def catches(topic: str, alert: dict, label: dict) -> bool:
    if alert.get("status") != "firing" or not _in_window(alert, label):
        return False
    if topic != "alerts.escalation" and not label.get("attributable", True):
        return False       # a recommendation on no evidence of cause
    return same_unit(alert.get("scope"), label["scope"])


def _fault_row(lab: dict, firing: list, log: str) -> dict:
    first = None
    for tp, a in firing:
        if catches(tp, a, lab) and (first is None or a["detected_ts"] < first[1]["detected_ts"]):
            first = (tp, a)
    row = dict(log=log, fault_id=lab["fault_id"], kind=lab["kind"], cause=lab["cause"],
               scope=lab["scope"], attributable=lab.get("attributable", True),
               caught=first is not None, latency_s=None, cause_ok=None, by=None)
    if first:
        tp, a = first
        row.update(latency_s=round(a["detected_ts"] - lab["start_ts"], 2),
                   cause_ok=a.get("cause") == lab["cause"],
                   by=f"{tp} {a.get('kind')}/{a.get('cause')} "
                      f"{json.dumps(a.get('scope'), sort_keys=True)}")
    return row


def score(labels: list[dict], alerts: list[tuple[str, dict]], log: str = "") -> dict:
    """{"faults": one row a label, "problems": one row a firing (topic, dedup_key)}."""
    firing = [(tp, a) for tp, a in alerts if a.get("status") == "firing"]
    by_problem: dict = defaultdict(list)
    for tp, a in firing:
        by_problem[tp, a.get("dedup_key")].append(a)
    problems = []
    for (tp, key), msgs in by_problem.items():
        head = msgs[0]
        problems.append(dict(
            log=log, topic=tp, dedup_key=key, kind=head.get("kind"), cause=head.get("cause"),
            scope=head.get("scope"), detected_ts=head.get("detected_ts"),
            evidence=head.get("evidence"),
            caught=any(catches(tp, m, lab) for lab in labels for m in msgs)))
    return {"faults": [_fault_row(lab, firing, log) for lab in labels], "problems": problems}
