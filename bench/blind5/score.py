"""DESIGN's scoring rule, my reading: labels of a log against its alerts.

- A firing alert catches a fault when its `detected_ts` lies in [start_ts, end_ts + 60]
  and its scope is the fault's target at the fault's level -- or, for a gpu or nic
  fault, the node that holds it. Nothing coarser counts.
- An attributable fault is caught by an isolation or an escalation; an unattributable
  one only by an escalation.
- A problem is (topic, dedup_key); it is a false positive when none of its firing
  messages catches a fault. Precision = catching problems / problems; recall = caught
  faults / faults; per kind (a false positive under the alert's claimed kind).
- Latency: `detected_ts - start_ts` of the first catch; attribution is right when that
  alert's cause equals the label's.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from dataclasses import dataclass, field

GRACE_S = 60.0


def read_records(path) -> list[dict]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(x) for x in fh if x.strip()]


def labels_of(path) -> list[dict]:
    return [r["value"] for r in read_records(path) if r.get("topic") == "labels"]


def alerts_of(path) -> list[tuple[str, dict]]:
    return [(r["topic"], r["value"]) for r in read_records(path)
            if r.get("topic") in ("alerts.isolation", "alerts.escalation")]


def scope_matches(alert_scope: dict, label_scope: dict) -> bool:
    lvl = label_scope.get("level")
    a = alert_scope or {}
    if a.get("level") == lvl:
        if lvl == "gpu":
            return a.get("node") == label_scope["node"] and a.get("gpu") == label_scope["gpu"]
        if lvl == "nic":
            if a.get("node") != label_scope["node"] or a.get("nic") != label_scope["nic"]:
                return False
            return a.get("port") is None or label_scope.get("port") is None \
                or a.get("port") == label_scope.get("port")
        if lvl == "node":
            return a.get("node") == label_scope["node"]
        if lvl == "switch":
            return a.get("switch") == label_scope["switch"]
        if lvl == "domain":
            return a.get("domain") == label_scope["domain"]
        if lvl == "replica":
            return a.get("job") == label_scope["job"] and a.get("dp_rank") == label_scope["dp_rank"]
        if lvl == "job":
            return a.get("job") == label_scope["job"]
        return False
    # A gpu or nic fault is also caught at the node that holds it.
    return lvl in ("gpu", "nic") and a.get("level") == "node" \
        and a.get("node") == label_scope.get("node")


def catches(topic: str, alert: dict, label: dict) -> bool:
    if alert.get("status") != "firing":
        return False
    det = alert.get("detected_ts")
    if det is None or not label["start_ts"] <= det <= label["end_ts"] + GRACE_S:
        return False
    if not label.get("attributable", True) and topic != "alerts.escalation":
        return False
    return scope_matches(alert.get("scope") or {}, label["scope"])


@dataclass
class Score:
    """One log's (or a corpus's) outcome, with the misses and false positives listed."""

    faults: list[dict] = field(default_factory=list)  # label + caught, latency_s, cause_ok, by
    problems: list[dict] = field(default_factory=list)  # topic, dedup_key, kind, caught, first

    def add(self, other: Score) -> None:
        self.faults += other.faults
        self.problems += other.problems

    def table(self) -> dict[str, dict]:
        rows: dict[str, dict] = defaultdict(lambda: {"faults": 0, "caught": 0, "problems": 0,
                                                     "fp": 0, "lat": [], "attrib_ok": 0})
        for f in self.faults:
            r = rows[f["kind"]]
            r["faults"] += 1
            if f["caught"]:
                r["caught"] += 1
                r["lat"].append(f["latency_s"])
                r["attrib_ok"] += f["cause_ok"]
        for p in self.problems:
            r = rows[p["kind"]]
            r["problems"] += 1
            r["fp"] += not p["caught"]
        return dict(rows)


def score(labels: list[dict], alerts: list[tuple[str, dict]], log: str = "") -> Score:
    out = Score()
    firing = [(t, a) for t, a in alerts if a.get("status") == "firing"]
    firing.sort(key=lambda ta: ta[1].get("detected_ts") or 0)
    for lab in labels:
        hits = [(t, a) for t, a in firing if catches(t, a, lab)]
        rec = dict(lab, log=log, caught=bool(hits), latency_s=None, cause_ok=False, by=None)
        if hits:
            t, a = hits[0]
            rec.update(latency_s=a["detected_ts"] - lab["start_ts"],
                       cause_ok=a.get("cause") == lab["cause"],
                       by=f"{t.split('.')[-1]} {a.get('kind')}/{a.get('cause')} {a.get('scope')}")
        out.faults.append(rec)
    problems: dict[tuple[str, str], dict] = {}
    for t, a in firing:
        key = (t, a.get("dedup_key") or a.get("id"))
        p = problems.setdefault(key, {"topic": t, "dedup_key": key[1], "kind": a.get("kind"),
                                      "caught": False, "first": a, "log": log})
        if any(catches(t, a, lab) for lab in labels):
            p["caught"] = True
    out.problems = list(problems.values())
    return out
