"""DESIGN's scoring rule, as blind11 reads it, over one log's labels and its alerts file.

A firing alert catches a label when its `detected_ts` lies in [start_ts, end_ts + 60 s] and its
scope is the label's unit -- or, for a gpu or nic label, the node that holds it; an
unattributable label is caught only from `alerts.escalation`. A problem is (topic, dedup_key);
it is a false positive when none of its firing messages catches a label.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

GRACE_S = 60.0
IDS = {"gpu": ("node", "gpu"), "node": ("node",), "nic": ("node", "nic"),
       "switch": ("switch",), "domain": ("domain",), "replica": ("job", "dp_rank"),
       "job": ("job",)}


def _open(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if str(path).endswith(".gz") else open(
        path, encoding="utf-8")


def labels_of(log: Path) -> list[dict]:
    with _open(log) as fh:
        return [json.loads(line)["value"] for line in fh if line.startswith('{"topic":"labels"')]


def alerts_of(path: Path) -> list[tuple[str, dict]]:
    if not Path(path).exists():
        return []
    out = []
    with _open(path) as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                out.append((rec["topic"], rec["value"]))
    return out


def on_unit(scope: dict, unit: dict) -> bool:
    """The alert's scope is the label's unit, or the node holding a gpu / nic label."""
    if not isinstance(scope, dict):
        return False
    lvl = unit["level"]
    if scope.get("level") == lvl:
        keys = IDS[lvl]
        if lvl == "nic":        # port is optional on either side
            return (all(scope.get(k) == unit.get(k) for k in keys)
                    and (scope.get("port") in (None, unit.get("port"))))
        return all(scope.get(k) == unit.get(k) for k in keys)
    return lvl in ("gpu", "nic") and scope.get("level") == "node" and scope.get(
        "node") == unit.get("node")


def catches(topic: str, alert: dict, label: dict) -> bool:
    if alert.get("status") != "firing":
        return False
    if not label.get("attributable", True) and topic != "alerts.escalation":
        return False
    det = alert.get("detected_ts")
    if not isinstance(det, (int, float)):
        return False
    return (label["start_ts"] <= det <= label["end_ts"] + GRACE_S
            and on_unit(alert.get("scope"), label["scope"]))


def score(labels: list[dict], alerts: list[tuple[str, dict]], log: str = "") -> dict:
    firing = [(tp, a) for tp, a in alerts if a.get("status") == "firing"]
    faults = []
    for lab in labels:
        # (ties in time and topic keep the alerts' file order: dicts do not compare)
        hits = sorted(((a["detected_ts"], tp, a) for tp, a in firing if catches(tp, a, lab)),
                      key=lambda h: h[:2])
        first = hits[0] if hits else None
        faults.append({
            "log": log, "fault_id": lab["fault_id"], "kind": lab["kind"], "cause": lab["cause"],
            "scope": lab["scope"], "attributable": lab.get("attributable", True),
            "caught": bool(hits),
            "latency_s": round(first[0] - lab["start_ts"], 1) if first else None,
            "by": f"{first[2].get('kind')}/{first[2].get('cause')}" if first else None,
            "cause_ok": bool(first) and first[2].get("cause") == lab["cause"]})
    problems: dict = {}
    for tp, a in firing:
        problems.setdefault((tp, a.get("dedup_key")), []).append(a)
    probs = []
    for (tp, key), msgs in problems.items():
        a = msgs[0]
        probs.append({"log": log, "topic": tp, "dedup_key": key, "kind": a.get("kind"),
                      "cause": a.get("cause"), "scope": a.get("scope"),
                      "detected_ts": a.get("detected_ts"), "evidence": a.get("evidence"),
                      "caught": any(catches(tp, m, lab) for lab in labels for m in msgs)})
    return {"faults": faults, "problems": probs}
