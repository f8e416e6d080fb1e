"""Replays blind8 logs through faultline and scores them by DESIGN's rule (score.py).

    python -m bench.blind8.measure DIR --alerts FRESHDIR [--jobs 1] [--no-run] [--json F]

One `faultline replay LOG --alerts-out FRESHDIR/NAME.alerts.jsonl --quiet` per log (the
topology rides in the log), then recall / precision / attribution overall, per story and per
kind, every fault type, every miss, wrong cause and false positive.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.blind8.score import alerts_of, labels_of, score


def replay(log: Path, out: Path) -> None:
    exe = Path(sys.executable).with_name("faultline")
    subprocess.run([str(exe), "replay", str(log), "--alerts-out", str(out), "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)


def line(name: str, faults: list, problems: list) -> str:
    n, c = len(faults), sum(f["caught"] for f in faults)
    good = sum(p["caught"] for p in problems)
    right = sum(1 for f in faults if f["caught"] and f["cause_ok"])
    lats = sorted(f["latency_s"] for f in faults if f["caught"])
    rec = f"{c / n:.3f}" if n else "  -  "
    prec = f"{good / len(problems):.3f}" if problems else "  -  "
    med = f"{lats[len(lats) // 2]:.1f}" if lats else "-"
    return (f"{name:<22} faults {n:>3} caught {c:>3} recall {rec}  problems {len(problems):>3} "
            f"FP {len(problems) - good:>3} precision {prec}  cause {right}/{c}  lat_med {med}")


def report(per_log: dict) -> str:
    faults = [f for s in per_log.values() for f in s["faults"]]
    probs = [p for s in per_log.values() for p in s["problems"]]
    out = [line("all", faults, probs)]
    for story in sorted({name.rsplit("-s", 1)[0] for name in per_log}):
        out.append(line(story, [f for f in faults if f["log"].rsplit("-s", 1)[0] == story],
                        [p for p in probs if p["log"].rsplit("-s", 1)[0] == story]))
    for kind in sorted({f["kind"] for f in faults} | {str(p["kind"]) for p in probs}):
        out.append(line(f"kind {kind}", [f for f in faults if f["kind"] == kind],
                        [p for p in probs if str(p["kind"]) == kind]))
    out.append("per fault type:")
    for fid in sorted({f["fault_id"] for f in faults}):
        fs = [f for f in faults if f["fault_id"] == fid]
        c = sum(f["caught"] for f in fs)
        ok = sum(1 for f in fs if f["caught"] and f["cause_ok"])
        lat = sorted(f["latency_s"] for f in fs if f["caught"])
        out.append(f"  {fid:<12} {c}/{len(fs)} caught, cause right {ok}/{c}, latency {lat}")
    out.append("misses:")
    out += [f"  {f['log']} {f['fault_id']} {f['kind']}/{f['cause']} "
            f"{json.dumps(f['scope'], sort_keys=True)} attributable={f['attributable']}"
            for f in faults if not f["caught"]]
    out.append("wrong cause:")
    out += [f"  {f['log']} {f['fault_id']} want {f['cause']} got {f['by']}"
            for f in faults if f["caught"] and not f["cause_ok"]]
    out.append("false positives:")
    out += [f"  {p['log']} {p['topic']} {p['kind']}/{p['cause']} "
            f"{json.dumps(p['scope'], sort_keys=True)} at {p['detected_ts']}"
            for p in probs if not p["caught"]]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--alerts", type=Path, required=True, help="a folder for fresh alert files")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-run", action="store_true", help="score the alert files already there")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    logs = sorted(args.dir.glob("*.jsonl.gz"))
    args.alerts.mkdir(parents=True, exist_ok=True)

    def out_of(log: Path) -> Path:
        return args.alerts / (log.name.removesuffix(".jsonl.gz") + ".alerts.jsonl")

    if not args.no_run:
        with ThreadPoolExecutor(max_workers=args.jobs) as ex:
            list(ex.map(lambda lg: replay(lg, out_of(lg)), logs))
    per_log = {}
    for log in logs:
        name = log.name.removesuffix(".jsonl.gz")
        per_log[name] = score(labels_of(log), alerts_of(out_of(log)), name)
    print(report(per_log))
    if args.json:
        args.json.write_text(json.dumps(per_log, default=str, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
