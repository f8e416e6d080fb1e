"""DESIGN's scoring rule over faultline's alert files -- my reading of it, my code.

- A firing alert catches a fault when its `detected_ts` is in [start_ts, end_ts + 60 s] and
  its scope is the fault's target at the fault's level, or for a gpu / nic fault the node
  holding it. Nothing coarser counts.
- An attributable fault is caught by an isolation or an escalation; an unattributable one only
  by an escalation (an isolation on it catches nothing).
- Latency is `detected_ts - start_ts` of the first catch; attribution is right when that
  alert's cause is the label's.
- A problem is a distinct (topic, dedup_key) among firing messages; a false positive is a
  problem none of whose firing messages catches a fault. Per kind: faults by the label's kind,
  problems by the alert's claimed kind.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

from bench.blind5.score import Score  # the container: faults + problems, add(), table() per kind

SLACK_S = 60.0
IDS = {"gpu": ("node", "gpu"), "node": ("node",), "nic": ("node", "nic"),
       "switch": ("switch",), "domain": ("domain",), "replica": ("job", "dp_rank"),
       "job": ("job",)}


def _open(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if str(path).endswith(".gz") else open(path)


def labels_of(log: Path) -> list[dict]:
    with _open(log) as fh:
        return [r["value"] for r in map(json.loads, fh) if r.get("topic") == "labels"]


def alerts_of(path: Path) -> list[tuple[str, dict]]:
    """(topic, envelope) of every alert record in an --alerts-out file."""
    out = []
    with _open(path) as fh:
        for line in fh:
            if line.strip():
                r = json.loads(line)
                if str(r.get("topic", "")).startswith("alerts."):
                    out.append((r["topic"], r["value"]))
    return out


def scope_matches(alert: dict, label: dict) -> bool:
    a, want = alert or {}, label
    lvl = want["level"]
    if a.get("level") == lvl:
        if any(a.get(k) != want.get(k) for k in IDS[lvl]):
            return False
        if lvl == "nic" and a.get("port") is not None and want.get("port") is not None:
            return a["port"] == want["port"]
        return True
    return lvl in ("gpu", "nic") and a.get("level") == "node" and a.get("node") == want["node"]


def catches(topic: str, alert: dict, label: dict) -> bool:
    if not label.get("attributable", True) and topic != "alerts.escalation":
        return False
    t = alert.get("detected_ts")
    if not isinstance(t, (int, float)):
        return False
    return (label["start_ts"] <= t <= label["end_ts"] + SLACK_S
            and scope_matches(alert.get("scope"), label["scope"]))


def score(labels: list[dict], alerts: list[tuple[str, dict]], log: str = "") -> Score:
    firing = [(t, a) for t, a in alerts if a.get("status") == "firing"]
    sc = Score()
    for lab in labels:
        hits = [(a["detected_ts"], t, a) for t, a in firing if catches(t, a, lab)]
        f = {"log": log, "fault_id": lab["fault_id"], "kind": lab["kind"], "cause": lab["cause"],
             "scope": lab["scope"], "attributable": lab.get("attributable", True),
             "start_ts": lab["start_ts"], "end_ts": lab["end_ts"], "caught": bool(hits),
             "latency_s": None, "cause_ok": False, "by": None}
        if hits:
            ts, topic, a = min(hits, key=lambda h: h[0])
            f.update(latency_s=ts - lab["start_ts"], cause_ok=a.get("cause") == lab["cause"],
                     by={"topic": topic, "kind": a.get("kind"), "cause": a.get("cause"),
                         "scope": a.get("scope")})
        sc.faults.append(f)
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for t, a in firing:
        groups[(t, a.get("dedup_key"))].append(a)
    for (topic, key), msgs in groups.items():
        caught = any(catches(topic, a, lab) for a in msgs for lab in labels)
        sc.problems.append({"log": log, "topic": topic, "dedup_key": key,
                            "kind": msgs[0].get("kind"), "caught": caught, "first": msgs[0],
                            "n": len(msgs)})
    return sc
