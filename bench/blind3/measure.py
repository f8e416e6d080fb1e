"""Replay every blind3 log with ``faultline replay`` and score it by DESIGN's rule (score.py).

    python -m bench.blind3.measure DIR --alerts FRESHDIR [--reuse] [--json OUT]

Prints per kind, per story and per fault type, then every miss (with the alerts that
named the unit at all) and every false positive with its evidence.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import orjson

from bench.blind3 import score as sc


def faultline_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("faultline")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "detector.cli"]


def replay(log: Path, out: Path) -> None:
    cmd = [*faultline_cmd(), "replay", str(log), "--alerts-out", str(out), "--quiet"]
    root = str(Path(__file__).resolve().parents[2])  # this checkout's faultline, not another
    path = os.environ.get("PYTHONPATH")
    env = dict(os.environ, PYTHONPATH=root if not path else f"{root}{os.pathsep}{path}")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root)
    if done.returncode != 0 or not out.exists():
        raise SystemExit(f"replay failed on {log}:\n{done.stderr[-2000:]}")


def _short(v: dict, width: int = 420) -> str:
    ev = orjson.dumps(v.get("evidence")).decode()
    return ev if len(ev) <= width else ev[:width] + "..."


def _scope(s: dict) -> str:
    s = s or {}
    return ":".join(
        str(s[k])
        for k in ("level", "node", "gpu", "nic", "switch", "domain", "job", "dp_rank")
        if k in s
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.blind3.measure")
    ap.add_argument("logs", type=Path)
    ap.add_argument("--alerts", type=Path, required=True, help="folder for the alerts (fresh)")
    ap.add_argument("--reuse", action="store_true", help="score alerts already in --alerts")
    ap.add_argument("--json", type=Path, default=None, help="write the per-fault results here")
    args = ap.parse_args(argv)
    args.alerts.mkdir(parents=True, exist_ok=True)
    logs = sorted(args.logs.glob("*.jsonl.gz")) if args.logs.is_dir() else [args.logs]
    results, per_log = [], {}
    for log in logs:
        out = args.alerts / (log.name.replace(".jsonl.gz", "") + ".alerts.jsonl")
        if not (args.reuse and out.exists()):
            replay(log, out)
        labels = [r["value"] for r in sc.read_records(log) if r["topic"] == "labels"]
        res = sc.score(labels, sc.read_records(out), log.name)
        results.append(res)
        per_log[log.name] = res
    allr = sc.merge(results)
    print(f"blind3: {len(logs)} logs from {args.logs}\n")
    print("per kind (FPs under the alert's kind)")
    print(sc.format_rows(sc.table(allr, sc.by_kind, sc.fp_kind)))
    print("\nper fault type")
    print(sc.format_rows(sc.table(allr, sc.by_type, sc.fp_type)))
    print("\nper story")
    story = {}
    for name, res in per_log.items():
        story.setdefault(name.rsplit("-s", 1)[0], []).append(res)
    for name, rs in sorted(story.items()):
        m = sc.merge(rs)
        rows = sc.table(m, lambda lab, n=name: n, lambda a, n=name: n)
        print(sc.format_rows(rows).splitlines()[-1].replace("all", name[:16].ljust(3), 1))
    print("\nmisses")
    dump = []
    for name, res in per_log.items():
        alerts = [
            a
            for a in sc.read_records(args.alerts / name.replace(".jsonl.gz", ".alerts.jsonl"))
            if a["value"].get("status") == "firing"
        ]
        for lab, first, _src in res.faults:
            dump.append(
                {
                    "log": name,
                    "fault_id": lab["fault_id"],
                    "caught": first is not None,
                    "latency_s": (first[1]["detected_ts"] - lab["start_ts"]) if first else None,
                    "cause_right": (first[1].get("cause") == lab["cause"]) if first else None,
                }
            )
            if first is not None:
                continue
            near = [
                a
                for a in alerts
                if (a["value"].get("scope") or {}).get("node") == lab["scope"].get("node")
            ]
            print(
                f"  {name} {lab['fault_id']} {lab['kind']}/{lab['cause']} "
                f"attributable={lab['attributable']} [{lab['start_ts']:.1f}, {lab['end_ts']:.1f}]"
            )
            for a in near[:4]:
                v = a["value"]
                print(
                    f"      saw {a['topic'].split('.')[1]} {v.get('kind')}/{v.get('cause')} "
                    f"{_scope(v.get('scope'))} at {v['detected_ts'] - lab['start_ts']:+.1f}s: "
                    f"{_short(v, 200)}"
                )
        wrong = [
            (lab, f)
            for lab, f, _s in res.faults
            if f is not None and f[1].get("cause") != lab["cause"]
        ]
        for lab, f in wrong:
            print(
                f"  (caught, cause wrong) {name} {lab['fault_id']}: "
                f"said {f[1].get('kind')}/{f[1].get('cause')}"
            )
    print("\nfalse positives")
    for name, res in per_log.items():
        for (topic, key), alerts in res.problems.items():
            if res.caught_by[(topic, key)]:
                continue
            v = alerts[0]
            print(
                f"  {name} {topic.split('.')[1]} {v.get('kind')}/{v.get('cause')} "
                f"{_scope(v.get('scope'))} job={v.get('job')} detected {v['detected_ts']:.1f} "
                f"conf {v.get('confidence')}\n"
                f"      {_short(v)}"
            )
    if args.json is not None:
        args.json.write_bytes(orjson.dumps(dump, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
