"""DESIGN's scoring rule, my reading: labels from an incident log against `--alerts-out` records.

- Only `firing` messages count. One alert catches a label when `start_ts <= detected_ts <=
  end_ts + 60` and its scope names the label's unit at the label's level, or (for a gpu or nic
  label) the node holding it; an unattributable label is caught only by an escalation.
- A fault's latency and attribution come from its earliest catching alert.
- Problems are (topic, dedup_key) groups; one that catches no label is a false positive, and
  counts under the kind its alert claims.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

SLACK_S = 60.0
IDS = {"gpu": ("node", "gpu"), "nic": ("node", "nic"), "node": ("node",),
       "switch": ("switch",), "domain": ("domain",), "replica": ("job", "dp_rank"),
       "job": ("job",)}


def read(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def labels_of(log: Path) -> list[dict]:
    opener = gzip.open if log.suffix == ".gz" else open
    with opener(log, "rt", encoding="utf-8") as fh:   # parse only the label lines
        rows = [json.loads(line) for line in fh if '"labels"' in line[:40]]
    return [r["value"] for r in rows if r.get("topic") == "labels"]


def alerts_of(path: Path) -> list[tuple[str, dict]]:
    if not path.exists():
        return []
    return [(r["topic"], r["value"]) for r in read(path)
            if str(r.get("topic", "")).startswith("alerts.")]


def names_unit(scope: dict | None, unit: dict) -> bool:
    if not scope:
        return False
    level = unit["level"]
    if scope.get("level") == "node" and level in ("gpu", "nic"):
        return scope.get("node") == unit.get("node")
    if scope.get("level") != level:
        return False
    if any(scope.get(k) != unit.get(k) for k in IDS[level]):
        return False
    return not (level == "nic" and scope.get("port") is not None
                and unit.get("port") is not None and scope["port"] != unit["port"])


def catches(topic: str, alert: dict, label: dict) -> bool:
    if alert.get("status") != "firing":
        return False
    if not label.get("attributable", True) and topic != "alerts.escalation":
        return False
    t = alert.get("detected_ts")
    if not isinstance(t, (int, float)):
        return False
    return label["start_ts"] <= t <= label["end_ts"] + SLACK_S and \
        names_unit(alert.get("scope"), label["scope"])


def score(labels: list[dict], alerts: list[tuple[str, dict]], log: str = "") -> dict:
    """{"faults": [...], "problems": [...]} for one log."""
    faults = []
    for lab in labels:
        first = min(((a["detected_ts"], topic, a) for topic, a in alerts
                     if catches(topic, a, lab)), key=lambda x: x[0], default=None)
        row = {"log": log, "fault_id": lab["fault_id"], "kind": lab["kind"],
               "cause": lab["cause"], "scope": lab["scope"],
               "attributable": lab.get("attributable", True), "caught": first is not None,
               "latency_s": None, "cause_ok": None, "by": None}
        if first is not None:
            t, topic, a = first
            row.update(latency_s=round(t - lab["start_ts"], 2),
                       cause_ok=a.get("cause") == lab["cause"],
                       by=f"{topic} {a.get('kind')}/{a.get('cause')} "
                          f"{json.dumps(a.get('scope'), sort_keys=True)}")
        faults.append(row)
    groups: dict = {}
    for topic, a in alerts:
        if a.get("status") == "firing":
            groups.setdefault((topic, a.get("dedup_key")), []).append(a)
    problems = []
    for (topic, key), msgs in groups.items():
        a = msgs[0]
        problems.append({"log": log, "topic": topic, "dedup_key": key, "kind": a.get("kind"),
                         "cause": a.get("cause"), "scope": a.get("scope"),
                         "detected_ts": a.get("detected_ts"), "evidence": a.get("evidence"),
                         "caught": any(catches(topic, m, lab) for m in msgs for lab in labels)})
    return {"faults": faults, "problems": problems}
