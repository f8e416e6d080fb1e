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
    if not path.exists():
        return []
    out = []
    for line in _lines(path):
        if line.strip():
            rec = json.loads(line)
            if str(rec.get("topic", "")).startswith("alerts."):
                out.append((rec["topic"], rec["value"]))
    return out


def same_unit(scope: dict | None, unit: dict) -> bool:
    if not isinstance(scope, dict):
        return False
    lvl = unit["level"]
    if scope.get("level") == "node" and lvl in ("gpu", "nic"):
        return scope.get("node") == unit["node"]
    if scope.get("level") != lvl or any(scope.get(k) != unit.get(k) for k in KEYS[lvl]):
        return False
    if lvl == "nic" and None not in (scope.get("port"), unit.get("port")):
        return scope["port"] == unit["port"]
    return True


def catches(topic: str, alert: dict, label: dict) -> bool:
    t = alert.get("detected_ts")
    return (alert.get("status") == "firing" and isinstance(t, (int, float))
            and (label.get("attributable", True) or topic == "alerts.escalation")
            and label["start_ts"] <= t <= label["end_ts"] + GRACE_S
            and same_unit(alert.get("scope"), label["scope"]))


def score(labels: list[dict], alerts: list[tuple[str, dict]], log: str = "") -> dict:
    """{"faults": one row a label, "problems": one row a firing (topic, dedup_key)}."""
    firing = [(tp, a) for tp, a in alerts if a.get("status") == "firing"]
    faults = []
    for lab in labels:
        hits = sorted(((a["detected_ts"], tp, a) for tp, a in firing if catches(tp, a, lab)),
                      key=lambda h: h[0])
        row = {"log": log, "fault_id": lab["fault_id"], "kind": lab["kind"],
               "cause": lab["cause"], "scope": lab["scope"],
               "attributable": lab.get("attributable", True), "caught": bool(hits),
               "latency_s": None, "cause_ok": None, "by": None}
        if hits:
            t, tp, a = hits[0]
            row["latency_s"] = round(t - lab["start_ts"], 2)
            row["cause_ok"] = a.get("cause") == lab["cause"]
            row["by"] = (f"{tp} {a.get('kind')}/{a.get('cause')} "
                         f"{json.dumps(a.get('scope'), sort_keys=True)}")
        faults.append(row)
    groups: dict = {}
    for tp, a in firing:
        groups.setdefault((tp, a.get("dedup_key")), []).append(a)
    problems = [{"log": log, "topic": tp, "dedup_key": key, "kind": msgs[0].get("kind"),
                 "cause": msgs[0].get("cause"), "scope": msgs[0].get("scope"),
                 "detected_ts": msgs[0].get("detected_ts"),
                 "evidence": msgs[0].get("evidence"),
                 "caught": any(catches(tp, m, lab) for m in msgs for lab in labels)}
                for (tp, key), msgs in groups.items()]
    return {"faults": faults, "problems": problems}
