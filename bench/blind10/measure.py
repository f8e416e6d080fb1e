"""Replays blind10 logs with faultline and scores them by DESIGN's rule (score.py).

    python -m bench.blind10.measure DIR --alerts FRESHDIR [--no-run] [--json F]

One `faultline replay LOG --alerts-out FRESHDIR/NAME.alerts.jsonl --quiet` a log, one at a time
(the topology rides in the log); then recall, precision and attribution overall, per story and
per kind, per fault, and every miss, wrong cause and false positive.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bench.blind10.score import alerts_of, labels_of, score


def _figures(name: str, faults: list, probs: list) -> str:
    caught = [f for f in faults if f["caught"]]
    good = sum(p["caught"] for p in probs)
    lat = sorted(f["latency_s"] for f in caught)

    def ratio(a, b):
        return f"{a / b:.3f}" if b else "  -  "
    return (f"{name:<20} faults {len(faults):>3} caught {len(caught):>3} recall "
            f"{ratio(len(caught), len(faults))}  problems {len(probs):>3} FP "
            f"{len(probs) - good:>3} precision {ratio(good, len(probs))}  cause "
            f"{sum(bool(f['cause_ok']) for f in caught)}/{len(caught)}  lat_med "
            f"{lat[len(lat) // 2] if lat else '-'}")


def summary(per_log: dict) -> str:
    faults = [f for s in per_log.values() for f in s["faults"]]
    probs = [p for s in per_log.values() for p in s["problems"]]

    def story(row):
        return row["log"].rsplit("-s", 1)[0]
    lines = [_figures("all", faults, probs)]
    for st in sorted({story(f) for f in faults} | {story(p) for p in probs}):
        lines.append(_figures(st, [f for f in faults if story(f) == st],
                              [p for p in probs if story(p) == st]))
    for kind in sorted({f["kind"] for f in faults} | {str(p["kind"]) for p in probs}):
        lines.append(_figures(f"kind {kind}", [f for f in faults if f["kind"] == kind],
                              [p for p in probs if str(p["kind"]) == kind]))
    lines.append("per fault:")
    for fid in sorted({f["fault_id"] for f in faults}):
        fs = [f for f in faults if f["fault_id"] == fid]
        c = [f for f in fs if f["caught"]]
        lines.append(f"  {fid:<14} {len(c)}/{len(fs)} caught, cause right "
                     f"{sum(bool(f['cause_ok']) for f in c)}/{len(c)}, latency "
                     f"{sorted(f['latency_s'] for f in c)}")
    lines.append("misses:")
    lines += [f"  {f['log']} {f['fault_id']} {f['kind']}/{f['cause']} "
              f"{json.dumps(f['scope'], sort_keys=True)} attributable={f['attributable']}"
              for f in faults if not f["caught"]]
    lines.append("wrong cause:")
    lines += [f"  {f['log']} {f['fault_id']} want {f['cause']} got {f['by']}"
              for f in faults if f["caught"] and not f["cause_ok"]]
    lines.append("false positives:")
    lines += [f"  {p['log']} {p['topic']} {p['kind']}/{p['cause']} "
              f"{json.dumps(p['scope'], sort_keys=True)} at {p['detected_ts']}"
              for p in probs if not p["caught"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--alerts", type=Path, required=True, help="a fresh folder for alerts")
    ap.add_argument("--no-run", action="store_true", help="score alert files already there")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    args.alerts = args.alerts.resolve()
    args.alerts.mkdir(parents=True, exist_ok=True)
    exe = Path(sys.executable).with_name("faultline")
    per_log = {}
    for log in sorted(args.dir.glob("*.jsonl.gz")):
        name = log.name.removesuffix(".jsonl.gz")
        out = args.alerts / f"{name}.alerts.jsonl"
        if not args.no_run:
            subprocess.run([str(exe), "replay", str(log), "--alerts-out", str(out), "--quiet"],
                           check=True, stdout=subprocess.DEVNULL)
        per_log[name] = score(labels_of(log), alerts_of(out), name)
    print(summary(per_log))
    if args.json:
        args.json.write_text(json.dumps(per_log, default=str, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
