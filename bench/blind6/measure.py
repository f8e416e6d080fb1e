"""Replays blind6 logs through faultline and scores them by DESIGN's rule (score.py).

    python -m bench.blind6.measure DIR --alerts FRESHDIR [--jobs 2] [--no-run] [--json F]

One `faultline replay LOG --alerts-out FRESHDIR/LOG.alerts.jsonl --quiet` per log (the
topology comes from the log's first record), then per kind, per story and per fault type,
and every miss, wrong cause and false positive with the alert's evidence.
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

from bench.blind6.score import Score, alerts_of, labels_of, score


def replay(log: Path, alerts: Path) -> None:
    exe = Path(sys.executable).parent / "faultline"
    cmd = [str(exe), "replay", str(log), "--alerts-out", str(alerts), "--quiet"]
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res.stderr[-2000:]}")


def fault_type(fault_id: str) -> str:
    story, _seed, kind = fault_id.split("-", 2)
    return f"{story}:{kind}"


def _sum(rows) -> dict:
    t = {"faults": 0, "caught": 0, "problems": 0, "fp": 0, "lat": [], "attrib_ok": 0}
    for r in rows:
        for k in t:
            t[k] += r[k]
    return t


def _row(name: str, r: dict) -> str:
    prec = (r["problems"] - r["fp"]) / r["problems"] if r["problems"] else float("nan")
    rec = r["caught"] / r["faults"] if r["faults"] else float("nan")
    lat = f"{statistics.median(r['lat']):7.1f}" if r["lat"] else "      -"
    att = f"{r['attrib_ok']}/{r['caught']}" if r["caught"] else "-"
    return (f"{name:22s} {r['faults']:6d} {r['caught']:6d} {r['problems']:8d} {r['fp']:4d}"
            f" {prec:9.3f} {rec:6.3f} {lat} {att:>7s}")


HEADER = (f"{'':22s} {'faults':>6s} {'caught':>6s} {'problems':>8s} {'FP':>4s} "
          f"{'precision':>9s} {'recall':>6s} {'lat_med':>7s} {'attrib':>7s}")


def _evidence(a: dict) -> str:
    ev = json.dumps(a.get("evidence"), separators=(",", ":"), default=str)
    return ev[:260]


def report(scores: dict[str, Score]) -> str:
    total = Score()
    by_story: dict[str, Score] = defaultdict(Score)
    for log, sc in scores.items():
        total.add(sc)
        by_story[log.split("-s")[0]].add(sc)
    lines = ["per kind", HEADER]
    tab = total.table()
    lines += [_row(k, r) for k, r in sorted(tab.items(), key=lambda kv: str(kv[0]))]
    lines.append(_row("all", _sum(tab.values())))
    lines += ["", "per story", HEADER]
    for story, sc in sorted(by_story.items()):
        lines.append(_row(story, _sum(sc.table().values())))
    lines += ["", "per fault type (caught/faults, attribution right, latencies s)"]
    types: dict[str, list] = defaultdict(list)
    for f in total.faults:
        types[fault_type(f["fault_id"])].append(f)
    for name, fs in sorted(types.items()):
        c = [f for f in fs if f["caught"]]
        lat = ", ".join(f"{f['latency_s']:.1f}" for f in c)
        lines.append(f"  {name:22s} {len(c)}/{len(fs)}  attrib {sum(f['attrib_ok'] for f in c)}"
                     f"/{len(c)}  [{lat}]")
    lines += ["", "misses"]
    for f in total.faults:
        if not f["caught"]:
            lines.append(f"  {f['log']} {f['fault_id']} {f['kind']}/{f['cause']} {f['scope']}"
                         f" attributable={f['attributable']}")
    lines += ["", "wrong cause"]
    for f in total.faults:
        if f["caught"] and not f["attrib_ok"]:
            lines.append(f"  {f['log']} {f['fault_id']} label {f['cause']} alert {f['by']}")
    lines += ["", "false positives"]
    for p in total.problems:
        if not p["caught"]:
            a = p["first"]
            lines.append(f"  {p['log']} {p['topic']} {a.get('kind')}/{a.get('cause')} "
                         f"{a.get('scope')} at {a.get('detected_ts')} x{p['n']}: {_evidence(a)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--alerts", type=Path, required=True, help="folder for fresh alert files")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-run", action="store_true", help="score alert files already there")
    ap.add_argument("--json", type=Path, default=None, help="write the faults and problems")
    args = ap.parse_args(argv)
    logs = sorted(args.dir.glob("*.jsonl.gz"))
    args.alerts.mkdir(parents=True, exist_ok=True)

    def out_of(log: Path) -> Path:
        return args.alerts / (log.name.removesuffix(".jsonl.gz") + ".alerts.jsonl")

    if not args.no_run:
        with ThreadPoolExecutor(max_workers=args.jobs) as ex:
            list(ex.map(lambda lg: replay(lg, out_of(lg)), logs))
    scores = {}
    for log in logs:
        name = log.name.removesuffix(".jsonl.gz")
        scores[name] = score(labels_of(log), alerts_of(out_of(log)), name)
    print(report(scores))
    if args.json:
        args.json.write_text(json.dumps(
            {n: {"faults": s.faults, "problems": [{k: v for k, v in p.items() if k != "first"}
                                                   | {"alert": p["first"]} for p in s.problems]}
             for n, s in scores.items()}, default=str, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
