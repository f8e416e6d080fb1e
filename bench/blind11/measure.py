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


def _line(name: str, faults: list, probs: list) -> str:
    hit = [f for f in faults if f["caught"]]
    good = sum(p["caught"] for p in probs)
    lat = sorted(f["latency_s"] for f in hit)

    def frac(a, b):
        return f"{a}/{b}={a / b:.3f}" if b else f"{a}/{b}"
    return (f"{name:<22} recall {frac(len(hit), len(faults)):<14} precision "
            f"{frac(good, len(probs)):<14} FP {len(probs) - good:<3} cause "
            f"{sum(f['cause_ok'] for f in hit)}/{len(hit)}  latency median "
            f"{lat[len(lat) // 2] if lat else '-'} s")


def report(per_log: dict) -> str:
    faults = [f for s in per_log.values() for f in s["faults"]]
    probs = [p for s in per_log.values() for p in s["problems"]]

    def story(row):
        return row["log"].split("-s")[0]
    out = [_line("all", faults, probs)]
    for st in sorted({story(r) for r in faults + probs}):
        out.append(_line(f"story {st}", [f for f in faults if story(f) == st],
                         [p for p in probs if story(p) == st]))
    for kind in sorted({f["kind"] for f in faults} | {str(p["kind"]) for p in probs}):
        out.append(_line(f"kind {kind}", [f for f in faults if f["kind"] == kind],
                         [p for p in probs if str(p["kind"]) == kind]))
    out.append("per fault:")
    for fid in sorted({f["fault_id"] for f in faults}):
        fs = [f for f in faults if f["fault_id"] == fid]
        hit = [f for f in fs if f["caught"]]
        out.append(f"  {fid:<14} caught {len(hit)}/{len(fs)}, cause right "
                   f"{sum(f['cause_ok'] for f in hit)}/{len(hit)}, latency s "
                   f"{sorted(f['latency_s'] for f in hit)}")
    out.append("misses:")
    out += [f"  {f['log']} {f['fault_id']} {f['kind']}/{f['cause']} "
            f"{json.dumps(f['scope'], sort_keys=True)} attributable={f['attributable']}"
            for f in faults if not f["caught"]]
    out.append("wrong cause:")
    out += [f"  {f['log']} {f['fault_id']} want {f['cause']} got {f['by']}"
            for f in faults if f["caught"] and not f["cause_ok"]]
    out.append("false positives:")
    out += [f"  {p['log']} {p['topic']} {p['kind']}/{p['cause']} "
            f"{json.dumps(p['scope'], sort_keys=True)} detected {p['detected_ts']}"
            for p in probs if not p["caught"]]
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
