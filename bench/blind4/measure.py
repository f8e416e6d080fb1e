"""Replay bench/blind4 logs through this tree's faultline and score them by DESIGN's rule.

    python -m bench.blind4.measure DIR --alerts FRESHDIR [--reuse] [--quiet]

Prints per kind, per story and per fault type, then every miss and false positive with
the alert's evidence. Replay runs `faultline replay LOG --alerts-out ...` of the tree this
file lives in (its topology comes from the log's first record).
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.blind4.score import describe_alert, read_records, score

ROOT = Path(__file__).resolve().parents[2]
RUN = "import sys; from detector.cli import main; sys.argv[0] = 'faultline'; sys.exit(main())"


def replay(log: Path, alerts: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", RUN, "replay", str(log), "--alerts-out", str(alerts), "--quiet"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.monotonic() - t0


def _row(
    name: str, faults: int, caught: int, problems: int, fp: int, lats: list, attr: list
) -> str:
    prec = (problems - fp) / problems if problems else float("nan")
    rec = caught / faults if faults else float("nan")
    lat = f"{statistics.median(lats):8.1f}" if lats else "       -"
    att = f"{sum(attr) / len(attr):6.3f}" if attr else "     -"
    counts = f"{faults:6d} {caught:6d} {problems:8d} {fp:5d}"
    return f"{name:22s} {counts} {prec:9.3f} {rec:6.3f} {lat} {att}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.blind4.measure", description=__doc__)
    ap.add_argument("dir", type=Path)
    ap.add_argument("--alerts", type=Path, required=True, help="where replay writes alerts")
    ap.add_argument("--reuse", action="store_true", help="score alert files already there")
    ap.add_argument("--quiet", action="store_true", help="no per-miss / per-FP listing")
    args = ap.parse_args(argv)
    args.alerts.mkdir(parents=True, exist_ok=True)
    logs = sorted(args.dir.glob("*.jsonl.gz"))
    by_kind = collections.defaultdict(lambda: [0, 0, 0, 0, [], []])
    by_story = collections.defaultdict(lambda: [0, 0, 0, 0, [], []])
    by_type = collections.defaultdict(lambda: [0, 0, 0, 0, [], []])
    listing = []
    for log in logs:
        out = args.alerts / (log.name.replace(".jsonl.gz", "") + ".alerts.jsonl")
        took = None
        if not (args.reuse and out.exists()):
            took = replay(log, out)
        labels = [r["value"] for r in read_records(log) if r["topic"] == "labels"]
        res = score(labels, read_records(out))
        story = log.name.rsplit("-s", 1)[0]
        n_fp = len(res.false_positives)
        print(
            f"{log.name}: {sum(1 for c in res.caught.values() if c)}/{len(labels)} caught, "
            f"{n_fp} FP, {len(res.problems)} problems"
            + (f", replay {took:.0f} s" if took is not None else "")
        )
        for lab in labels:
            c = res.caught[lab["fault_id"]]
            for table, key in (
                (by_kind, lab["kind"]),
                (by_story, story),
                (by_type, lab["fault_id"]),
            ):
                table[key][0] += 1
                if c:
                    table[key][1] += 1
                    table[key][4].append(c["latency_s"])
                    table[key][5].append(c["cause_right"])
            if not c:
                near = [
                    describe_alert(p["topic"], p["first"])
                    for p in res.problems.values()
                    if abs(p["first"].get("detected_ts", 0) - lab["start_ts"]) < 900
                ][:4]
                listing.append(
                    f"MISS {log.name} {lab['fault_id']} {lab['kind']}/{lab['cause']} "
                    f"{lab['scope']} attributable={lab['attributable']}"
                    + "".join(f"\n     near: {d}" for d in near)
                )
            elif not c["cause_right"]:
                listing.append(
                    f"CAUSE {log.name} {lab['fault_id']} want {lab['cause']}: "
                    + describe_alert(c["topic"], c["alert"])
                )
        for p in res.problems.values():
            kinds = p["kinds"] or {p["first"].get("kind")}
            for kind in kinds:
                by_kind[kind][2] += 1
                by_kind[kind][3] += 0 if p["catching"] else 1
            by_story[story][2] += 1
            by_story[story][3] += 0 if p["catching"] else 1
            if not p["catching"]:
                listing.append(f"FP {log.name} " + describe_alert(p["topic"], p["first"]))
    head = (
        f"{'':22s} {'faults':>6s} {'caught':>6s} {'problems':>8s} {'FP':>5s} {'precision':>9s} "
        f"{'recall':>6s} {'lat_med':>8s} {'attrib':>6s}"
    )
    for title, table in (("kind", by_kind), ("story", by_story), ("fault", by_type)):
        print(f"\nper {title}\n{head}")
        for key in sorted(table, key=str):
            print(_row(str(key), *table[key]))
    tot = [sum(v[i] for v in by_story.values()) for i in range(4)]
    lats = [x for v in by_story.values() for x in v[4]]
    attr = [x for v in by_story.values() for x in v[5]]
    print("\n" + _row("all", *tot, lats, attr))
    if not args.quiet:
        print("\n" + "\n".join(listing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
