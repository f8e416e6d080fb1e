"""Replays blind6 logs through faultline and scores them by DESIGN's rule (score.py).

    python -m bench.blind6.measure DIR --alerts FRESHDIR [--jobs 2] [--no-run] [--json F]

One `faultline replay LOG --alerts-out FRESHDIR/LOG.alerts.jsonl --quiet` per log (the
topology comes from the log's first record), then per kind, per story and per fault type,
and every miss, wrong cause and false positive with the alert's evidence.
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# replaying and the report (per kind / story / fault type, misses, wrong causes, false
# positives) are blind5's: one piece of code; the scoring rule is score.py's, mine
from bench.blind5.measure import replay, report
from bench.blind6.score import alerts_of, labels_of, score

__all__ = ["main", "replay", "report"]


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
