"""DESIGN's scoring rule, my reading, over one log's labels and the alerts replay wrote.

- only `firing` messages count; a problem is (topic, dedup_key);
- a firing alert catches a fault when its `detected_ts` is in [start_ts, end_ts + 60] and its
  scope is the fault's target at the fault's level (or, for a gpu or nic fault, the node
  that holds it); an unattributable fault is caught only by an escalation;
- latency and attribution come from the first catching alert;
- a false positive is a problem none of whose firing messages catches a fault.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path

import orjson

GRACE_S = 60.0


def read_records(path: Path) -> list[dict]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as fh:
        return [orjson.loads(line) for line in fh if line.strip()]


def scope_matches(alert_scope: dict, target: dict) -> bool:
    """Whether an alert's scope names the fault's target (or the node of a gpu/nic fault)."""
    lvl, want = alert_scope.get("level"), target.get("level")
    if lvl == want:
        if want == "gpu":
            return (
                alert_scope.get("node") == target["node"]
                and alert_scope.get("gpu") == target["gpu"]
            )
        if want == "node":
            return alert_scope.get("node") == target["node"]
        if want == "nic":
            same = (
                alert_scope.get("node") == target["node"]
                and alert_scope.get("nic") == target["nic"]
            )
            port_a, port_t = alert_scope.get("port"), target.get("port")
            return same and (port_a is None or port_t is None or port_a == port_t)
        if want == "switch":
            return alert_scope.get("switch") == target["switch"]
        if want == "domain":
            return alert_scope.get("domain") == target["domain"]
        if want == "replica":
            return (
                alert_scope.get("job") == target["job"]
                and alert_scope.get("dp_rank") == target["dp_rank"]
            )
        if want == "job":
            return alert_scope.get("job") == target["job"]
        return False
    return lvl == "node" and want in ("gpu", "nic") and alert_scope.get("node") == target["node"]


def catches(topic: str, alert: dict, label: dict) -> bool:
    if alert.get("status") != "firing":
        return False
    if not label["attributable"] and topic != "alerts.escalation":
        return False
    ts = alert.get("detected_ts")
    if not isinstance(ts, (int, float)) or not label["start_ts"] <= ts <= label["end_ts"] + GRACE_S:
        return False
    return scope_matches(alert.get("scope") or {}, label["scope"])


@dataclass
class Result:
    """One log's score: each fault's catch (or None) and each problem's verdict."""

    labels: list[dict]
    caught: dict[str, dict | None] = field(default_factory=dict)  # fault_id -> first catch
    problems: dict[tuple, dict] = field(default_factory=dict)  # (topic, key) -> info

    @property
    def false_positives(self) -> list[dict]:
        return [p for p in self.problems.values() if not p["catching"]]


def score(labels: list[dict], alerts: list[dict]) -> Result:
    """`alerts` are records {"topic", "value"} as replay writes them."""
    res = Result(labels=labels)
    firing = [
        (a["topic"], a["value"])
        for a in alerts
        if a.get("topic", "").startswith("alerts.") and a["value"].get("status") == "firing"
    ]
    firing.sort(key=lambda x: x[1].get("detected_ts", 0.0))
    for lab in labels:
        first = None
        for topic, v in firing:
            if catches(topic, v, lab):
                first = {
                    "topic": topic,
                    "alert": v,
                    "latency_s": v["detected_ts"] - lab["start_ts"],
                    "cause_right": v.get("cause") == lab["cause"],
                }
                break
        res.caught[lab["fault_id"]] = first
    for topic, v in firing:
        key = (topic, v.get("dedup_key"))
        p = res.problems.setdefault(
            key, {"topic": topic, "first": v, "catching": False, "kinds": set()}
        )
        for lab in labels:
            if catches(topic, v, lab):
                p["catching"] = True
                p["kinds"].add(lab["kind"])
    return res


def describe_alert(topic: str, v: dict) -> str:
    sc = v.get("scope") or {}
    where = ":".join(
        str(sc[k]) for k in ("node", "gpu", "nic", "switch", "domain", "job", "dp_rank") if k in sc
    )
    ev = v.get("evidence") or {}
    ev_txt = orjson.dumps(ev).decode()[:240]
    return (
        f"{topic.split('.')[-1]} {v.get('kind')}/{v.get('cause')} {sc.get('level')}:{where} "
        f"det={v.get('detected_ts')} key={v.get('dedup_key')} ev={ev_txt}"
    )
