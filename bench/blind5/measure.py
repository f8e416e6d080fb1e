"""Replays blind5 logs through faultline and scores them by DESIGN's rule (score.py).

    python -m bench.blind5.measure DIR --alerts FRESHDIR [--jobs 2] [--no-run]

One `faultline replay LOG --alerts-out FRESHDIR/LOG.alerts.jsonl --quiet` per log (the
topology comes from the log's first record), then per kind, per story and per fault
type, and every miss and false positive with the alert's evidence.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.blind5.score import Score, alerts_of, labels_of, score


def replay(log: Path, alerts: Path) -> None:
    exe = Path(sys.executable).parent / "faultline"
    cmd = [str(exe), "replay", str(log), "--alerts-out", str(alerts), "--quiet"]
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res.stderr[-2000:]}")


def fault_type(fault_id: str) -> str:
    story, _seed, kind = fault_id.split("-", 2)
    return f"{story}:{kind.rstrip('0123456789')}"


def _row(name: str, r: dict) -> str:
    prec = (r["problems"] - r["fp"]) / r["problems"] if r["problems"] else float("nan")
    rec = r["caught"] / r["faults"] if r["faults"] else float("nan")
    lat = f"{statistics.median(r['lat']):7.1f}" if r["lat"] else "      -"
    att = f"{r['attrib_ok']}/{r['caught']}" if r["caught"] else "-"
    return (f"{name:26s} {r['faults']:6d} {r['caught']:6d} {r['problems']:8d} {r['fp']:4d}"
            f" {prec:9.3f} {rec:6.3f} {lat} {att:>7s}")


HEADER = f"{'':26s} {'faults':>6s} {'caught':>6s} {'problems':>8s} {'FP':>4s} {'precision':>9s} " \
         f"{'recall':>6s} {'lat_med':>7s} {'attrib':>7s}"


def report(scores: dict[str, Score]) -> str:
    lines = []
    total = Score()
    by_story: dict[str, Score] = defaultdict(Score)
    for log, sc in scores.items():
        total.add(sc)
        by_story[log.split("-s")[0]].add(sc)
    lines += ["per kind", HEADER]
    for kind, r in sorted(total.table().items()):
        lines.append(_row(kind, r))
    t = {"faults": 0, "caught": 0, "problems": 0, "fp": 0, "lat": [], "attrib_ok": 0}
    for r in total.table().values():
        for k in t:
            t[k] += r[k]
    lines.append(_row("all", t))
    lines += ["", "per story", HEADER]
    for story, sc in sorted(by_story.items()):
        t = {"faults": 0, "caught": 0, "problems": 0, "fp": 0, "lat": [], "attrib_ok": 0}
        for r in sc.table().values():
            for k in t:
                t[k] += r[k]
        lines.append(_row(story, t))
    lines += ["", "per fault type (caught/faults, attribution right, latencies)"]
    types: dict[str, list] = defaultdict(list)
    for f in total.faults:
        types[fault_type(f["fault_id"])].append(f)
    for name, fs in sorted(types.items()):
        caught = [f for f in fs if f["caught"]]
        lat = ", ".join(f"{f['latency_s']:.1f}" for f in caught)
        lines.append(f"  {name:24s} {len(caught)}/{len(fs)} caught, cause right "
                     f"{sum(f['cause_ok'] for f in caught)}/{len(caught)}; latency s: {lat}")
    lines += ["", "misses"]
    for f in total.faults:
        if not f["caught"]:
            lines.append(f"  {f['fault_id']} {f['kind']}/{f['cause']} {f['scope']} "
                         f"attributable={f['attributable']}")
    lines += ["", "wrong cause"]
    for f in total.faults:
        if f["caught"] and not f["cause_ok"]:
            lines.append(f"  {f['fault_id']} label {f['cause']}, by {f['by']}")
    lines += ["", "false positives (distinct problems)"]
    for p in total.problems:
        if not p["caught"]:
            a = p["first"]
            ev = json.dumps(a.get("evidence"), default=str)[:300]
            lines.append(f"  {p['log']} {p['topic'].split('.')[-1]} "
                         f"{a.get('kind')}/{a.get('cause')} {a.get('scope')} "
                         f"detected {a.get('detected_ts')} evidence {ev}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--alerts", type=Path, required=True, help="folder for fresh alert files")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-run", action="store_true", help="score alert files already there")
    args = ap.parse_args(argv)
    logs = sorted(args.dir.glob("*.jsonl.gz"))
    args.alerts.mkdir(parents=True, exist_ok=True)
    pairs = [(log, args.alerts / (log.name.replace(".jsonl.gz", "") + ".alerts.jsonl"))
             for log in logs]
    if not args.no_run:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(lambda p: replay(*p), pairs))
    scores = {log.name.replace(".jsonl.gz", ""): score(labels_of(log), alerts_of(al),
                                                       log.name.replace(".jsonl.gz", ""))
              for log, al in pairs}
    print(report(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
