"""DESIGN.md's scoring rule, my reading of it, over labels and firing alerts (no faultline code).

- a firing alert catches a fault when ``detected_ts`` is in ``[start_ts, end_ts + 60]`` and
  its scope is the fault's target at the fault's level, or the node that holds a gpu/nic
  fault; nothing coarser counts;
- an attributable fault is caught by an isolation or an escalation, an unattributable one
  only by an escalation;
- latency is ``detected_ts - start_ts`` of the first catch; attribution is right when that
  alert's cause equals the label's;
- a false positive is a problem (topic + dedup_key) whose firing messages catch nothing.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path

import orjson

GRACE_S = 60.0


def read_records(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        return [orjson.loads(line) for line in fh if line.strip()]


def scope_matches(alert_scope: dict, target: dict) -> bool:
    """Does an alert's scope name the fault's target (or the node holding a gpu/nic fault)?"""
    level, a = target.get("level"), alert_scope or {}
    if level in ("gpu", "nic") and a.get("level") == "node":
        return a.get("node") == target.get("node")
    if a.get("level") != level:
        return False
    if level == "gpu":
        return a.get("node") == target["node"] and a.get("gpu") == target["gpu"]
    if level == "nic":
        same = a.get("node") == target["node"] and a.get("nic") == target["nic"]
        port = target.get("port")
        return same and (port is None or a.get("port") in (None, port))
    if level == "replica":
        return a.get("job") == target["job"] and a.get("dp_rank") == target["dp_rank"]
    key = {"node": "node", "switch": "switch", "domain": "domain", "job": "job"}[level]
    return a.get(key) == target.get(key)


@dataclass
class Result:
    faults: list = field(default_factory=list)  # (label, first catching alert or None, source)
    problems: dict = field(default_factory=dict)  # (topic, dedup_key) -> [alerts], caught ids
    caught_by: dict = field(default_factory=dict)  # (topic, dedup_key) -> [labels it caught]


def score(labels: list[dict], alerts: list[dict], source: str = "") -> Result:
    """``alerts``: records ``{"topic": ..., "value": envelope}``; only firing ones count."""
    res = Result()
    firing = [(a["topic"], a["value"]) for a in alerts if a["value"].get("status") == "firing"]
    for topic, v in firing:
        res.problems.setdefault((topic, v["dedup_key"]), []).append(v)
        res.caught_by.setdefault((topic, v["dedup_key"]), [])
    for lab in labels:
        first = None
        for topic, v in firing:
            if not lab["start_ts"] <= v["detected_ts"] <= lab["end_ts"] + GRACE_S:
                continue
            if not scope_matches(v.get("scope"), lab["scope"]):
                continue
            if not lab["attributable"] and topic != "alerts.escalation":
                continue
            res.caught_by[(topic, v["dedup_key"])].append(lab)
            if first is None or v["detected_ts"] < first[1]["detected_ts"]:
                first = (topic, v)
        res.faults.append((lab, first, source))
    return res


def merge(results: list[Result]) -> Result:
    out = Result()
    for i, r in enumerate(results):
        out.faults.extend(r.faults)
        for k, v in r.problems.items():
            out.problems[(i, *k)] = v
            out.caught_by[(i, *k)] = r.caught_by[k]
    return out


def table(res: Result, group, fp_group) -> list[dict]:
    """Rows per group: ``group(label)`` for faults and the problems that catch them,
    ``fp_group(alert)`` for false positives (DESIGN: the alert's claimed kind)."""
    rows: dict = {}

    def row(name):
        return rows.setdefault(
            name, dict(name=name, faults=0, caught=0, lat=[], attrib=0, problems=0, fp=0)
        )

    for lab, first, _src in res.faults:
        r = row(group(lab))
        r["faults"] += 1
        if first is not None:
            r["caught"] += 1
            r["lat"].append(first[1]["detected_ts"] - lab["start_ts"])
            r["attrib"] += first[1].get("cause") == lab["cause"]
    for key, alerts in res.problems.items():
        caught = res.caught_by[key]
        r = row(group(caught[0])) if caught else row(fp_group(alerts[0]))
        r["fp"] += not caught
        r["problems"] += 1
    return [rows[k] for k in sorted(rows)]


def by_kind(lab: dict) -> str:
    return lab["kind"]


def fp_kind(alert: dict) -> str:
    return alert.get("kind", "?")


def by_type(lab: dict) -> str:
    return lab["fault_id"].split("-")[0]


def fp_type(alert: dict) -> str:
    return f"FP {alert.get('kind', '?')}"


def format_rows(rows: list[dict]) -> str:
    head = (
        f"{'':16s} {'faults':>6s} {'caught':>6s} {'recall':>6s} {'problems':>8s} {'FP':>3s} "
        f"{'precision':>9s} {'lat_med_s':>9s} {'lat_max_s':>9s} {'attrib':>6s}"
    )
    out = [head]
    tot = dict(faults=0, caught=0, problems=0, fp=0, lat=[], attrib=0)
    for r in rows + [None]:
        if r is None:
            r = dict(tot, name="all")
        else:
            for k in ("faults", "caught", "problems", "fp", "attrib"):
                tot[k] += r[k]
            tot["lat"] = tot["lat"] + r["lat"]
        lat = sorted(r["lat"])
        rec = r["caught"] / r["faults"] if r["faults"] else float("nan")
        prec = (r["problems"] - r["fp"]) / r["problems"] if r["problems"] else float("nan")
        med = lat[len(lat) // 2] if lat else float("nan")
        mx = lat[-1] if lat else float("nan")
        att = r["attrib"] / r["caught"] if r["caught"] else float("nan")
        out.append(
            f"{r['name']:16s} {r['faults']:6d} {r['caught']:6d} {rec:6.3f} {r['problems']:8d} "
            f"{r['fp']:3d} {prec:9.3f} {med:9.1f} {mx:9.1f} {att:6.3f}"
        )
    return "\n".join(out)
