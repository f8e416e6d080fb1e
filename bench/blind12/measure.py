"""Replays blind12 logs with faultline and scores them by DESIGN's rule (score.py).

    python -m bench.blind12.measure DIR --alerts FRESHDIR [--no-run] [--json F]

One `faultline replay LOG --alerts-out FRESHDIR/NAME.alerts.jsonl --quiet` a log, one at a
time (the topology rides in the log); then recall, precision, attribution and median latency
overall, per story, per kind and per fault, every miss, wrong cause and false positive -- and,
for each false positive, the routine shapes of the log's `.effects.json` on its node or job
within 60 s of the alert (what it most likely paged on).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bench.blind11.measure import report
from bench.blind12.score import alerts_of, labels_of, score


def _near_effects(prob: dict, alerts: list, effects: list) -> list[str]:
    """Routine shapes on the false positive's node or job around its detection."""
    sc = prob["scope"] if isinstance(prob["scope"], dict) else {}
    jobs = {a.get("job") for tp, a in alerts if a.get("dedup_key") == prob["dedup_key"]}
    jobs.add(sc.get("job"))
    det = prob["detected_ts"] or 0.0
    out = []
    for e in effects:
        es = e["scope"]
        if e["start_ts"] - 60.0 <= det <= e["end_ts"] + 60.0 and (
                (es.get("job") and es["job"] in jobs) or (es.get("node") and es["node"] ==
                                                          sc.get("node"))):
            out.append(f"{e['effect']}@{es.get('job') or es.get('node')}")
    return sorted(set(out))


def replay(log: Path, out: Path) -> dict:
    """`faultline replay LOG --alerts-out OUT --quiet` (a fresh process), then the score."""
    exe = Path(sys.executable).with_name("faultline")
    subprocess.run([str(exe), "replay", str(log), "--alerts-out", str(out), "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    return score(labels_of(log), alerts_of(out), log.name.removesuffix(".jsonl.gz"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--alerts", type=Path, required=True, help="a fresh folder for alerts")
    ap.add_argument("--no-run", action="store_true", help="score the alert files already there")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    alerts_dir = args.alerts.resolve()
    alerts_dir.mkdir(parents=True, exist_ok=True)
    per_log, notes = {}, []
    for log in sorted(args.dir.glob("*.jsonl.gz")):
        name = log.name.removesuffix(".jsonl.gz")
        out = alerts_dir / f"{name}.alerts.jsonl"
        if args.no_run:
            per_log[name] = score(labels_of(log), alerts_of(out), name)
        else:
            per_log[name] = replay(log, out)
        alerts = alerts_of(out)
        fx = log.with_name(f"{name}.effects.json")
        effects = json.loads(fx.read_text()) if fx.exists() else []
        for p in per_log[name]["problems"]:
            if not p["caught"]:
                near = _near_effects(p, alerts, effects)
                notes.append(f"  {name} {p['kind']}/{p['cause']} "
                             f"{json.dumps(p['scope'], sort_keys=True)}: "
                             f"{', '.join(near) or 'no routine shape near it'}")
    print(report(per_log))
    print("false positives beside routine shapes:")
    print("\n".join(notes) if notes else "  none")
    if args.json:
        args.json.write_text(json.dumps(per_log, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
