"""Replays blind11 logs with faultline and scores them by DESIGN's rule (score.py).

    python -m bench.blind11.measure DIR --alerts FRESHDIR [--no-run] [--json F]

One `faultline replay LOG --alerts-out FRESHDIR/NAME.alerts.jsonl --quiet` a log, one at a
time (the topology rides in the log); then recall, precision and attribution overall, per
story, per kind and per fault, and every miss, wrong cause and false positive.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bench.blind11.score import alerts_of, labels_of, score


def _figures(faults: list, probs: list) -> dict:
    hit = [f for f in faults if f["caught"]]
    lat = sorted(f["latency_s"] for f in hit)
    return {"faults": len(faults), "caught": len(hit), "problems": len(probs),
            "good": sum(p["caught"] for p in probs), "cause": sum(f["cause_ok"] for f in hit),
            "lat": lat[len(lat) // 2] if lat else None}


def _row(title: str, fig: dict) -> str:
    rec = fig["caught"] / fig["faults"] if fig["faults"] else float("nan")
    pre = fig["good"] / fig["problems"] if fig["problems"] else float("nan")
    return (f"{title:<22} recall {fig['caught']:>2}/{fig['faults']:<2} {rec:5.3f}  precision "
            f"{fig['good']:>2}/{fig['problems']:<2} {pre:5.3f}  FP "
            f"{fig['problems'] - fig['good']:<2} cause {fig['cause']}/{fig['caught']}  "
            f"median latency {fig['lat']} s")


def report(per_log: dict) -> str:
    """The figures overall / per story / per kind, then each fault type, miss and FP."""
    faults = [f for s in per_log.values() for f in s["faults"]]
    probs = [p for s in per_log.values() for p in s["problems"]]
    groups = [("all", lambda r: True)]
    for st in sorted({r["log"].split("-s")[0] for r in faults + probs}):
        groups.append((f"story {st}", lambda r, st=st: r["log"].split("-s")[0] == st))
    for kind in sorted({str(r["kind"]) for r in faults + probs}):
        groups.append((f"kind {kind}", lambda r, kind=kind: str(r["kind"]) == kind))
    out = [_row(t, _figures([f for f in faults if keep(f)], [p for p in probs if keep(p)]))
           for t, keep in groups]
    by_id: dict = {}
    for f in faults:
        by_id.setdefault(f["fault_id"], []).append(f)
    out.append("per fault:")
    for fid, fs in sorted(by_id.items()):
        fig = _figures(fs, [])
        out.append(f"  {fid:<14} caught {fig['caught']}/{fig['faults']}, cause right "
                   f"{fig['cause']}, latency s "
                   f"{sorted(f['latency_s'] for f in fs if f['caught'])}")
    out.append("misses:")
    for f in faults:
        if not f["caught"]:
            out.append(f"  {f['log']} {f['fault_id']} {f['kind']}/{f['cause']} "
                       f"{json.dumps(f['scope'], sort_keys=True)} "
                       f"attributable={f['attributable']}")
    out.append("wrong cause:")
    out += [f"  {f['log']} {f['fault_id']} want {f['cause']} got {f['by']}"
            for f in faults if f["caught"] and not f["cause_ok"]]
    out.append("false positives:")
    for p in probs:
        if not p["caught"]:
            out.append(f"  {p['log']} {p['topic']} {p['kind']}/{p['cause']} "
                       f"{json.dumps(p['scope'], sort_keys=True)} detected {p['detected_ts']}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--alerts", type=Path, required=True, help="a fresh folder for alerts")
    ap.add_argument("--no-run", action="store_true", help="score the alert files already there")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    alerts_dir = args.alerts.resolve()
    alerts_dir.mkdir(parents=True, exist_ok=True)
    exe = Path(sys.executable).with_name("faultline")
    per_log = {}
    for log in sorted(args.dir.glob("*.jsonl.gz")):
        name = log.name.removesuffix(".jsonl.gz")
        out = alerts_dir / f"{name}.alerts.jsonl"
        if not args.no_run:
            subprocess.run([str(exe), "replay", str(log), "--alerts-out", str(out), "--quiet"],
                           check=True, stdout=subprocess.DEVNULL)
        per_log[name] = score(labels_of(log), alerts_of(out), name)
    print(report(per_log))
    if args.json:
        args.json.write_text(json.dumps(per_log, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
