"""DESIGN's scoring rule over `faultline replay --alerts-out` files (my reading, my code).

- A firing alert catches a fault when its `detected_ts` lies in [start_ts, end_ts + 60 s] and
  its scope is the fault's target at the fault's level, or the node holding a gpu / nic fault.
- An unattributable fault is caught only by an escalation; an attributable one by either.
- Latency: `detected_ts - start_ts` of the first catch; attribution: that alert's cause.
- A problem is one (topic, dedup_key) among firing messages; a false positive is a problem
  none of whose firing messages catches a fault. Per kind: faults by the label's kind,
  problems by the alert's claimed kind.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

SLACK_S = 60.0
KEYS = {"gpu": ("node", "gpu"), "node": ("node",), "nic": ("node", "nic"),
        "switch": ("switch",), "domain": ("domain",), "replica": ("job", "dp_rank"),
        "job": ("job",)}


def _lines(path: Path):
    op = gzip.open if str(path).endswith(".gz") else open
    with op(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def labels_of(log: Path) -> list[dict]:
    return [r["value"] for r in _lines(log) if r.get("topic") == "labels"]


def alerts_of(path: Path) -> list[tuple[str, dict]]:
    return [(r["topic"], r["value"]) for r in _lines(path)
            if str(r.get("topic", "")).startswith("alerts.")]


def same_unit(scope: dict | None, want: dict) -> bool:
    scope = scope or {}
    lvl = want["level"]
    if scope.get("level") == lvl:
        if lvl == "nic" and None not in (scope.get("port"), want.get("port")) \
                and scope["port"] != want["port"]:
            return False
        return all(scope.get(k) == want.get(k) for k in KEYS[lvl])
    return lvl in ("gpu", "nic") and scope.get("level") == "node" \
        and scope.get("node") == want.get("node")


def catches(topic: str, alert: dict, label: dict) -> bool:
    if not label.get("attributable", True) and topic != "alerts.escalation":
        return False
    t = alert.get("detected_ts")
    return (isinstance(t, (int, float)) and label["start_ts"] <= t <= label["end_ts"] + SLACK_S
            and same_unit(alert.get("scope"), label["scope"]))


@dataclass
class Score:
    faults: list = field(default_factory=list)
    problems: list = field(default_factory=list)


def score(labels: list[dict], alerts: list[tuple[str, dict]], log: str = "") -> Score:
    firing = [(t, a) for t, a in alerts if a.get("status") == "firing"]
    sc = Score()
    for lab in labels:
        hits = sorted(((a["detected_ts"], t, a) for t, a in firing if catches(t, a, lab)),
                      key=lambda h: h[0])
        f = {"log": log, "fault_id": lab["fault_id"], "kind": lab["kind"],
             "cause": lab["cause"], "scope": lab["scope"],
             "attributable": lab.get("attributable", True), "caught": bool(hits),
             "latency_s": None, "cause_ok": None, "by": None}
        if hits:
            ts, topic, a = hits[0]
            f.update(latency_s=round(ts - lab["start_ts"], 2),
                     cause_ok=a.get("cause") == lab["cause"],
                     by=f"{topic.split('.')[1]} {a.get('kind')}/{a.get('cause')} "
                        f"{json.dumps(a.get('scope'), sort_keys=True)}")
        sc.faults.append(f)
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for t, a in firing:
        groups[(t, a.get("dedup_key"))].append(a)
    for (topic, key), msgs in groups.items():
        ok = any(catches(topic, a, lab) for a in msgs for lab in labels)
        first = msgs[0]
        sc.problems.append({"log": log, "topic": topic, "dedup_key": key,
                            "kind": first.get("kind"), "cause": first.get("cause"),
                            "scope": first.get("scope"), "detected_ts": first.get("detected_ts"),
                            "caught": ok, "evidence": first.get("evidence")})
    return sc
