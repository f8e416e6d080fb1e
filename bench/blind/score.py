"""Score alerts against the blind labels by DESIGN.md's rule, my own reading, and list every error.

    python -m bench.blind.score LOG ALERTS [LOG ALERTS ...] [--json OUT]

``ALERTS`` is what ``faultline replay LOG --alerts-out ALERTS`` wrote. Prints a
table per fault kind over all the pairs, then every false positive (a
problem -- topic + dedup_key -- none of whose firing messages catches a
fault) and every missed fault, with the alerts nearest to it, so that each
can be diagnosed from the alert's own evidence.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
from pathlib import Path

import orjson

SLACK_S = 60.0
KINDS = ("slow_node", "hardware", "network", "sdc", "unattributed")


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        return [orjson.loads(line) for line in fh if line.strip()]


def scope_catches(alert_scope: dict, label_scope: dict) -> bool:
    lvl = label_scope["level"]
    a_lvl = alert_scope.get("level")
    if a_lvl == "node" and lvl in ("gpu", "nic"):
        return alert_scope.get("node") == label_scope["node"]
    if a_lvl != lvl:
        return False
    keys = {"gpu": ("node", "gpu"), "node": ("node",), "nic": ("node", "nic"),
            "switch": ("switch",), "domain": ("domain",), "replica": ("job", "dp_rank"),
            "job": ("job",)}[lvl]
    if any(alert_scope.get(k) != label_scope.get(k) for k in keys):
        return False
    if lvl == "nic" and "port" in alert_scope and "port" in label_scope:
        return alert_scope["port"] == label_scope["port"]
    return True


def catches(topic: str, alert: dict, label: dict) -> bool:
    if not label["attributable"] and topic != "alerts.escalation":
        return False
    ts = alert["detected_ts"]
    if not label["start_ts"] <= ts <= label["end_ts"] + SLACK_S:
        return False
    return scope_catches(alert["scope"], label["scope"])


def score_pair(log: Path, alerts_path: Path) -> dict:
    labels = [r["value"] for r in read_jsonl(log) if r.get("topic") == "labels"]
    alerts = [(r["topic"], r["value"]) for r in read_jsonl(alerts_path)
              if r.get("value", {}).get("status") == "firing"]
    problems: dict[tuple[str, str], list[dict]] = {}
    for topic, a in alerts:
        problems.setdefault((topic, a["dedup_key"]), []).append(a)
    first_catch: dict[str, tuple[float, dict, str]] = {}
    problem_rows = []
    for (topic, key), msgs in problems.items():
        caught = []
        for a in msgs:
            for lab in labels:
                if catches(topic, a, lab):
                    caught.append(lab)
                    fc = first_catch.get(lab["fault_id"])
                    if fc is None or a["detected_ts"] < fc[0]:
                        first_catch[lab["fault_id"]] = (a["detected_ts"], a, topic)
        kind = caught[0]["kind"] if caught else msgs[0].get("kind")
        problem_rows.append({"log": log.name, "topic": topic, "dedup_key": key, "kind": kind,
                             "caught": sorted({c["fault_id"] for c in caught}),
                             "first": msgs[0]})
    fault_rows = []
    for lab in labels:
        fc = first_catch.get(lab["fault_id"])
        row = {"log": log.name, "label": lab, "caught": fc is not None}
        if fc is not None:
            row["latency_s"] = fc[0] - lab["start_ts"]
            row["cause_ok"] = fc[1].get("cause") == lab["cause"]
            row["by"] = (fc[2], fc[1].get("kind"), fc[1].get("cause"), fc[1].get("scope"))
        else:
            near = sorted(alerts, key=lambda ta: abs(ta[1]["detected_ts"] - lab["start_ts"]))
            row["near"] = [(t, a.get("kind"), a.get("cause"), a.get("scope"),
                            round(a["detected_ts"] - lab["start_ts"], 1)) for t, a in near[:3]]
        fault_rows.append(row)
    return {"problems": problem_rows, "faults": fault_rows}


def table(results: list[dict]) -> str:
    rows = []
    head = ("kind", "faults", "caught", "missed", "problems", "FP", "precision", "recall",
            "lat_med_s", "lat_p95_s", "lat_max_s", "attrib")
    rows.append(head)
    probs = [p for r in results for p in r["problems"]]
    faults = [f for r in results for f in r["faults"]]
    for kind in (*KINDS, "all"):
        fk = [f for f in faults if kind == "all" or f["label"]["kind"] == kind]
        pk = [p for p in probs if kind == "all" or p["kind"] == kind]
        if not fk and not pk:
            continue
        caught = [f for f in fk if f["caught"]]
        fp = [p for p in pk if not p["caught"]]
        lat = sorted(f["latency_s"] for f in caught)
        rows.append((
            kind, len(fk), len(caught), len(fk) - len(caught), len(pk), len(fp),
            f"{(len(pk) - len(fp)) / len(pk):.3f}" if pk else "-",
            f"{len(caught) / len(fk):.3f}" if fk else "-",
            f"{statistics.median(lat):.1f}" if lat else "-",
            f"{lat[min(len(lat) - 1, int(0.95 * len(lat)))]:.1f}" if lat else "-",
            f"{lat[-1]:.1f}" if lat else "-",
            f"{sum(f['cause_ok'] for f in caught) / len(caught):.3f}" if caught else "-",
        ))
    return "\n".join("  ".join(f"{c!s:>9}" for c in r) for r in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pairs", nargs="+", type=Path, help="LOG ALERTS [LOG ALERTS ...]")
    ap.add_argument("--json", type=Path, help="write every row here")
    args = ap.parse_args(argv)
    if len(args.pairs) % 2:
        ap.error("give LOG ALERTS pairs")
    results = [score_pair(args.pairs[i], args.pairs[i + 1])
               for i in range(0, len(args.pairs), 2)]
    print(table(results))
    print("\nfalse positives:")
    for r in results:
        for p in r["problems"]:
            if not p["caught"]:
                a = p["first"]
                print(f"  {p['log']}: {p['topic'].split('.')[1]} {a.get('kind')}/{a.get('cause')}"
                      f" {a.get('scope')} at {a['detected_ts']:.1f} key={p['dedup_key']}")
    print("\nmissed faults:")
    for r in results:
        for f in r["faults"]:
            if not f["caught"]:
                lab = f["label"]
                print(f"  {f['log']}: {lab['fault_id']} {lab['kind']}/{lab['cause']}"
                      f" {lab['scope']} [{lab['start_ts']:.1f}, {lab['end_ts']:.1f}]"
                      f" near: {f['near']}")
    print("\nwrong attribution:")
    for r in results:
        for f in r["faults"]:
            if f["caught"] and not f["cause_ok"]:
                print(f"  {f['log']}: {f['label']['fault_id']} cause {f['label']['cause']}"
                      f" alert {f['by']}")
    if args.json:
        args.json.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
