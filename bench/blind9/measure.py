"""Replays blind9 logs with faultline and scores them (score.py: DESIGN's rule, my code).

    python -m bench.blind9.measure DIR --alerts FRESHDIR [--no-run] [--json F]

One `faultline replay LOG --alerts-out FRESHDIR/NAME.alerts.jsonl --quiet` a log, one at a
time (the topology rides in the log); then recall, precision and attribution overall, per
story and per kind, each fault type, and every miss, wrong cause and false positive.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bench.blind9.score import alerts_of, labels_of, score


def _row(name: str, faults: list, probs: list) -> str:
    caught = [f for f in faults if f["caught"]]
    good = sum(p["caught"] for p in probs)
    lat = sorted(f["latency_s"] for f in caught)
    recall = f"{len(caught) / len(faults):.3f}" if faults else "  -  "
    prec = f"{good / len(probs):.3f}" if probs else "  -  "
    return (f"{name:<22} faults {len(faults):>3} caught {len(caught):>3} recall {recall}  "
            f"problems {len(probs):>3} FP {len(probs) - good:>3} precision {prec}  "
            f"cause {sum(bool(f['cause_ok']) for f in caught)}/{len(caught)}  "
            f"lat_med {lat[len(lat) // 2] if lat else '-'}")


def _story(log: str) -> str:
    return log.rsplit("-s", 1)[0]


def report(per_log: dict) -> str:
    faults = [f for s in per_log.values() for f in s["faults"]]
    probs = [p for s in per_log.values() for p in s["problems"]]
    out = [_row("all", faults, probs)]
    for st in sorted({_story(k) for k in per_log}):
        out.append(_row(st, [f for f in faults if _story(f["log"]) == st],
                        [p for p in probs if _story(p["log"]) == st]))
    for kind in sorted({f["kind"] for f in faults} | {str(p["kind"]) for p in probs}):
        out.append(_row(f"kind {kind}", [f for f in faults if f["kind"] == kind],
                        [p for p in probs if str(p["kind"]) == kind]))
    out.append("per fault type:")
    for fid in sorted({f"{_story(f['log'])}/{f['fault_id']}" for f in faults}):
        fs = [f for f in faults if f"{_story(f['log'])}/{f['fault_id']}" == fid]
        c = [f for f in fs if f["caught"]]
        out.append(f"  {fid:<24} {len(c)}/{len(fs)} caught, cause right "
                   f"{sum(bool(f['cause_ok']) for f in c)}/{len(c)}, "
                   f"latency {[f['latency_s'] for f in c]}")
    out.append("misses:")
    out += [f"  {f['log']} {f['fault_id']} {f['kind']}/{f['cause']} {json.dumps(f['scope'])} "
            f"attributable={f['attributable']}" for f in faults if not f["caught"]]
    out.append("wrong cause:")
    out += [f"  {f['log']} {f['fault_id']} want {f['cause']} got {f['by']}"
            for f in faults if f["caught"] and not f["cause_ok"]]
    out.append("false positives:")
    out += [f"  {p['log']} {p['topic']} {p['kind']}/{p['cause']} {json.dumps(p['scope'])} "
            f"at {p['detected_ts']}" for p in probs if not p["caught"]]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--alerts", type=Path, required=True, help="a fresh folder for alert files")
    ap.add_argument("--no-run", action="store_true", help="score the alert files already there")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    a.alerts.mkdir(parents=True, exist_ok=True)
    exe = str(Path(sys.executable).with_name("faultline"))
    per_log = {}
    for log in sorted(a.dir.glob("*.jsonl.gz")):
        name = log.name.removesuffix(".jsonl.gz")
        out = a.alerts / f"{name}.alerts.jsonl"
        if not a.no_run:
            subprocess.run([exe, "replay", str(log), "--alerts-out", str(out), "--quiet"],
                           check=True, stdout=subprocess.DEVNULL)
        per_log[name] = score(labels_of(log), alerts_of(out), name)
    print(report(per_log))
    if a.json:
        a.json.write_text(json.dumps(per_log, default=str, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
