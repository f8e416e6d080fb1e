"""Replays blind7 logs through faultline and scores them by DESIGN's rule (score.py).

    python -m bench.blind7.measure DIR --alerts FRESHDIR [--jobs 2] [--no-run] [--json F]

One `faultline replay LOG --alerts-out FRESHDIR/LOG.alerts.jsonl --quiet` per log (the
topology rides in the log), then recall / precision / attribution per story and per kind,
every miss, wrong cause and false positive.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.blind7.score import alerts_of, labels_of, score


def replay(log: Path, out: Path) -> None:
    exe = Path(sys.executable).with_name("faultline")
    cmd = [str(exe), "replay", str(log), "--alerts-out", str(out), "--quiet"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def _row(name: str, faults: list, problems: list) -> str:
    caught = sum(f["caught"] for f in faults)
    good = sum(p["caught"] for p in problems)
    cause = sum(bool(f["cause_ok"]) for f in faults if f["caught"])
    lat = sorted(f["latency_s"] for f in faults if f["caught"])
    med = f"{lat[len(lat) // 2]:.1f}" if lat else "-"
    rec = f"{caught / len(faults):.3f}" if faults else "-"
    prec = f"{good / len(problems):.3f}" if problems else "-"
    return (f"{name:<22} faults {len(faults):>3} caught {caught:>3} recall {rec:>5}  problems "
            f"{len(problems):>3} FP {len(problems) - good:>3} precision {prec:>5}  "
            f"cause {cause}/{caught}  lat_med {med}")


def report(scores: dict) -> str:
    faults = [f for s in scores.values() for f in s.faults]
    probs = [p for s in scores.values() for p in s.problems]
    out = [_row("all", faults, probs)]
    for story in sorted({n.rsplit("-s", 1)[0] for n in scores}):
        out.append(_row(story, [f for f in faults if f["log"].startswith(story)],
                        [p for p in probs if p["log"].startswith(story)]))
    for kind in sorted({f["kind"] for f in faults} | {p["kind"] for p in probs}):
        out.append(_row(f"kind {kind}", [f for f in faults if f["kind"] == kind],
                        [p for p in probs if p["kind"] == kind]))
    per = defaultdict(list)
    for f in faults:
        per[f["fault_id"]].append(f)
    out.append("per fault type:")
    for fid, fs in sorted(per.items()):
        c = sum(f["caught"] for f in fs)
        ok = sum(bool(f["cause_ok"]) for f in fs if f["caught"])
        out.append(f"  {fid:<12} {c}/{len(fs)} caught, cause right {ok}/{c}")
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
    ap.add_argument("--alerts", type=Path, required=True, help="folder for fresh alert files")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-run", action="store_true", help="score alert files already there")
    ap.add_argument("--json", type=Path, default=None)
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
        args.json.write_text(json.dumps({n: {"faults": s.faults, "problems": s.problems}
                                         for n, s in scores.items()}, default=str, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
