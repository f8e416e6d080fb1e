"""Score faultline on blind2 logs with DESIGN.md's scoring rule (my own reading and code).

    python -m bench.blind2.measure LOG_DIR [--alerts DIR] [--verbose]

Replays each log with `faultline replay LOG --alerts-out` (topology from the log)
unless DIR already holds `<log>.alerts.jsonl`, then scores: per kind, per cell
(shape x cadence) and overall; every false positive and every miss is listed
with the alert's own evidence, for diagnosis.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import orjson

CATCH_SLACK_S = 60.0
SCOPE_KEYS = {"gpu": ("node", "gpu"), "node": ("node",), "nic": ("node", "nic"),
              "switch": ("switch",), "domain": ("domain",), "replica": ("job", "dp_rank"),
              "job": ("job",)}


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        return [orjson.loads(line) for line in fh if line.strip()]


def scope_matches(alert_scope: dict, fault_scope: dict) -> bool:
    """The fault's target at its level -- or, for a gpu or nic fault, its node."""
    level = fault_scope["level"]
    if alert_scope.get("level") == level:
        return all(alert_scope.get(k) == fault_scope.get(k) for k in SCOPE_KEYS[level])
    if level in ("gpu", "nic") and alert_scope.get("level") == "node":
        return alert_scope.get("node") == fault_scope["node"]
    return False


def catches(topic: str, alert: dict, label: dict) -> bool:
    if not label["start_ts"] <= alert["detected_ts"] <= label["end_ts"] + CATCH_SLACK_S:
        return False
    if not label["attributable"] and topic != "alerts.escalation":
        return False
    return scope_matches(alert["scope"], label["scope"])


def score(labels: list[dict], alerts: list[dict]) -> dict:
    """Faults caught (first catch: latency, attribution), problems, false positives."""
    problems: dict[tuple, list[dict]] = defaultdict(list)
    for rec in alerts:
        if rec["value"].get("status") == "firing":
            problems[(rec["topic"], rec["value"]["dedup_key"])].append(rec)
    first: dict[str, tuple[float, dict]] = {}
    catching: dict[tuple, str] = {}
    for key, msgs in problems.items():
        for rec in msgs:
            for lab in labels:
                if catches(rec["topic"], rec["value"], lab):
                    catching.setdefault(key, lab["kind"])
                    ts = rec["value"]["detected_ts"]
                    if lab["fault_id"] not in first or ts < first[lab["fault_id"]][0]:
                        first[lab["fault_id"]] = (ts, rec)
    faults = []
    for lab in labels:
        hit = first.get(lab["fault_id"])
        faults.append({
            "label": lab, "caught": hit is not None,
            "latency_s": hit[0] - lab["start_ts"] if hit else None,
            "attrib_ok": hit is not None and hit[1]["value"].get("cause") == lab["cause"],
            "by": hit[1] if hit else None})
    fps = [msgs[0] for key, msgs in problems.items() if key not in catching]
    return {"faults": faults, "problems": len(problems), "catching": catching, "fps": fps}


def _cell(name: str) -> str:
    parts = name.split("-")          # blind2-<shape>-<cadence...>-sNN
    return "-".join(parts[1:-1])


def summarize(results: list[tuple[str, dict]]) -> list[str]:
    rows = []
    by_kind: dict[str, dict] = defaultdict(lambda: {"faults": 0, "caught": 0, "catching": 0,
                                                    "fp": 0, "lat": [], "attrib": 0})
    by_cell: dict[str, dict] = defaultdict(lambda: {"faults": 0, "caught": 0, "catching": 0,
                                                    "fp": 0, "logs": 0})
    for name, res in results:
        cell = by_cell[_cell(name)]
        cell["logs"] += 1
        for f in res["faults"]:
            k = by_kind[f["label"]["kind"]]
            k["faults"] += 1
            cell["faults"] += 1
            if f["caught"]:
                k["caught"] += 1
                cell["caught"] += 1
                k["lat"].append(f["latency_s"])
                k["attrib"] += f["attrib_ok"]
        for kind in res["catching"].values():
            by_kind[kind]["catching"] += 1
            cell["catching"] += 1
        for rec in res["fps"]:
            by_kind[rec["value"].get("kind", "?")]["fp"] += 1
            cell["fp"] += 1

    def ratio(a, b):
        return f"{a / b:.3f}" if b else "  -  "

    rows.append(f"{'kind':<12}{'faults':>7}{'caught':>7}{'problems':>9}{'FP':>5}"
                f"{'precision':>10}{'recall':>8}{'lat_med_s':>10}{'lat_max_s':>10}{'attrib':>8}")
    tot = {"faults": 0, "caught": 0, "catching": 0, "fp": 0, "lat": [], "attrib": 0}
    for kind in sorted(by_kind):
        k = by_kind[kind]
        for key in tot:
            tot[key] += k[key]
        rows.append(_row(kind, k, ratio))
    rows.append(_row("all", tot, ratio))
    rows.append("")
    rows.append(f"{'fault':<18}{'n':>4}{'caught':>7}{'lat_med_s':>10}{'attrib':>8}  first catch")
    by_fault: dict[str, list] = defaultdict(list)
    for _, res in results:
        for f in res["faults"]:
            by_fault[f["label"]["fault_id"]].append(f)
    for fid in sorted(by_fault):
        fs = by_fault[fid]
        hit = [f for f in fs if f["caught"]]
        lat = sorted(f["latency_s"] for f in hit)
        how = sorted({f"{f['by']['topic'][7:10]}/{f['by']['value']['cause']}" for f in hit})
        rows.append(f"{fid:<18}{len(fs):>4}{len(hit):>7}"
                    f"{(f'{lat[len(lat) // 2]:.1f}' if lat else '-'):>10}"
                    f"{ratio(sum(f['attrib_ok'] for f in hit), len(hit)):>8}  {','.join(how)}")
    rows.append("")
    rows.append(f"{'cell':<22}{'logs':>5}{'faults':>7}{'caught':>7}{'FP':>5}"
                f"{'precision':>10}{'recall':>8}")
    for cell in sorted(by_cell):
        c = by_cell[cell]
        rows.append(f"{cell:<22}{c['logs']:>5}{c['faults']:>7}{c['caught']:>7}{c['fp']:>5}"
                    f"{ratio(c['catching'], c['catching'] + c['fp']):>10}"
                    f"{ratio(c['caught'], c['faults']):>8}")
    return rows


def _row(kind: str, k: dict, ratio) -> str:
    lat = sorted(k["lat"])
    med = f"{lat[len(lat) // 2]:.1f}" if lat else "-"
    mx = f"{lat[-1]:.1f}" if lat else "-"
    return (f"{kind:<12}{k['faults']:>7}{k['caught']:>7}{k['catching'] + k['fp']:>9}"
            f"{k['fp']:>5}{ratio(k['catching'], k['catching'] + k['fp']):>10}"
            f"{ratio(k['caught'], k['faults']):>8}{med:>10}{mx:>10}"
            f"{ratio(k['attrib'], k['caught']):>8}")


def _brief(alert: dict) -> str:
    v = alert["value"]
    sc = v["scope"]
    where = ":".join(str(sc[k]) for k in SCOPE_KEYS.get(sc["level"], ()) if k in sc)
    return (f"{alert['topic'].split('.')[1][:3]} {v['kind']}/{v['cause']} "
            f"{sc['level']}:{where} -- {v.get('summary', '')[:150]}")


def details(name: str, res: dict, t0: float) -> list[str]:
    out = []
    for f in res["faults"]:
        lab = f["label"]
        sc = lab["scope"]
        where = ":".join(str(sc[k]) for k in SCOPE_KEYS[sc["level"]])
        if not f["caught"]:
            span = f"+{lab['start_ts'] - t0:.0f}..+{lab['end_ts'] - t0:.0f}s"
            out.append(f"  MISS {name} {lab['fault_id']} {lab['kind']}/{lab['cause']} "
                       f"{sc['level']}:{where} {span}")
        elif not f["attrib_ok"]:
            out.append(f"  ATTRIB {name} {lab['fault_id']} said {f['by']['value']['cause']}"
                       f" (label {lab['cause']})")
    for rec in res["fps"]:
        out.append(f"  FP {name} +{rec['value']['detected_ts'] - t0:.0f}s {_brief(rec)}")
    return out


def replay(log: Path, alerts: Path) -> None:
    exe = Path(sys.executable).parent / "faultline"
    with open(alerts.with_suffix(".txt"), "wb") as fh:
        subprocess.run([str(exe), "replay", str(log), "--alerts-out", str(alerts)],
                       stdout=fh, stderr=subprocess.STDOUT, check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.blind2.measure", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", type=Path)
    ap.add_argument("--alerts", type=Path, default=None)
    ap.add_argument("--verbose", action="store_true", help="list every miss and false positive")
    args = ap.parse_args(argv)
    logs = sorted(args.logs.glob("*.jsonl.gz")) if args.logs.is_dir() else [args.logs]
    alert_dir = args.alerts or (args.logs if args.logs.is_dir() else args.logs.parent)
    results, lines = [], []
    for log in logs:
        name = log.name.removesuffix(".jsonl.gz")
        apath = alert_dir / f"{name}.alerts.jsonl"
        if not apath.exists():
            replay(log, apath)
        recs = read_jsonl(log)
        labels = [r["value"] for r in recs if r["topic"] == "labels"]
        t0 = min(r["value"]["ts"] for r in recs if r["topic"].startswith("telemetry"))
        res = score(labels, read_jsonl(apath))
        results.append((name, res))
        lines += details(name, res, t0)
    print("\n".join(summarize(results)))
    if args.verbose:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
