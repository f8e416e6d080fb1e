"""DESIGN's scoring rule as I read it: a log's labels against the alerts a replay wrote.

A firing alert catches a label when its `detected_ts` is in `[start_ts, end_ts + 60 s]` and its
scope names the label's unit at the label's level (for a gpu or nic label the node holding it
also counts); a label with `attributable: false` is caught only from `alerts.escalation`. A
fault's latency and cause come from its earliest catch. A problem is one (topic, dedup_key);
a problem none of whose firing messages catches a label is a false positive.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

GRACE_S = 60.0
KEYS = {"gpu": ("node", "gpu"), "nic": ("node", "nic", "port"), "node": ("node",),
        "switch": ("switch",), "domain": ("domain",), "replica": ("job", "dp_rank"),
        "job": ("job",)}


def _lines(path: Path):
    op = gzip.open if path.name.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8") as fh:
        yield from fh


def labels_of(log: Path) -> list[dict]:
    """The label records of a log (only lines that can be labels are parsed)."""
    return [json.loads(s)["value"] for s in _lines(log) if s.startswith('{"topic":"labels"')]


def alerts_of(path: Path) -> list[tuple[str, dict]]:
    if not path.exists():
        return []
    out = []
    for s in _lines(path):
        if s.strip():
            r = json.loads(s)
            if str(r.get("topic", "")).startswith("alerts."):
                out.append((r["topic"], r["value"]))
    return out


def same_unit(scope: dict | None, want: dict) -> bool:
    if not isinstance(scope, dict):
        return False
    lvl = want["level"]
    if lvl in ("gpu", "nic") and scope.get("level") == "node":
        return scope.get("node") == want["node"]
    if scope.get("level") != lvl:
        return False
    for k in KEYS[lvl]:
        if k == "port" and (scope.get(k) is None or want.get(k) is None):
            continue
        if scope.get(k) != want.get(k):
            return False
    return True


def hits(topic: str, alert: dict, label: dict) -> bool:
    t = alert.get("detected_ts")
    return (alert.get("status") == "firing" and isinstance(t, (int, float))
            and (label.get("attributable", True) or topic == "alerts.escalation")
            and label["start_ts"] <= t <= label["end_ts"] + GRACE_S
            and same_unit(alert.get("scope"), label["scope"]))


def score(labels: list[dict], alerts: list[tuple[str, dict]], log: str = "") -> dict:
    """{"faults": one row a label, "problems": one row a (topic, dedup_key)}."""
    firing = [(tp, a) for tp, a in alerts if a.get("status") == "firing"]
    faults = []
    for lab in labels:
        catch = sorted(((a["detected_ts"], tp, a) for tp, a in firing if hits(tp, a, lab)),
                       key=lambda x: x[0])
        row = {"log": log, "fault_id": lab["fault_id"], "kind": lab["kind"],
               "cause": lab["cause"], "scope": lab["scope"],
               "attributable": lab.get("attributable", True), "caught": bool(catch),
               "latency_s": None, "cause_ok": None, "by": None}
        if catch:
            t, tp, a = catch[0]
            row.update(latency_s=round(t - lab["start_ts"], 2),
                       cause_ok=a.get("cause") == lab["cause"],
                       by=f"{tp} {a.get('kind')}/{a.get('cause')} {json.dumps(a.get('scope'))}")
        faults.append(row)
    problems: dict = {}
    for tp, a in firing:
        p = problems.setdefault((tp, a.get("dedup_key")), {
            "log": log, "topic": tp, "dedup_key": a.get("dedup_key"), "kind": a.get("kind"),
            "cause": a.get("cause"), "scope": a.get("scope"), "detected_ts": a.get("detected_ts"),
            "caught": False})
        p["caught"] = p["caught"] or any(hits(tp, a, lab) for lab in labels)
    return {"faults": faults, "problems": list(problems.values())}
