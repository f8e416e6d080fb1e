"""Cuts a small reproducer out of a blind10 log: a time window, the jobs' step records, the
telemetry of a few nodes, and the labels that overlap the window (clipped to it).

    python -m bench.blind10.cut LOG OUT --from S --to S [--nodes a,b] [--jobs j] [--labels id]

Times are seconds from the log's first record. Without `--nodes` every node's telemetry stays;
without `--jobs` every job's steps; without `--labels` every overlapping label
(`--labels ''`: none).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path


def cut(log: Path, out: Path, t_from: float, t_to: float, nodes: set | None = None,
        jobs: set | None = None, labels: set | None = None) -> Path:
    with gzip.open(log, "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh]
    t0 = min(r["value"]["ts"] for r in recs if r["topic"].startswith("telemetry."))
    a, b = t0 + t_from, t0 + t_to
    keep, labs = [], []
    for r in recs:
        topic, v = r["topic"], r["value"]
        if topic == "topology":
            keep.append(r)
        elif topic == "labels":
            if v["start_ts"] <= b and v["end_ts"] >= a and (labels is None
                                                            or v["fault_id"] in labels):
                labs.append({"topic": "labels", "value": {
                    **v, "start_ts": max(v["start_ts"], a), "end_ts": min(v["end_ts"], b)}})
        elif a <= v["ts"] < b:
            if topic == "telemetry.step":
                if jobs is None or v["job"] in jobs:
                    keep.append(r)
            elif nodes is None or v["node"] in nodes:
                keep.append(r)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                               filename="") as fh:
        for r in keep + labs:
            fh.write(json.dumps(r, separators=(",", ":")).encode() + b"\n")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--from", dest="t_from", type=float, required=True)
    ap.add_argument("--to", dest="t_to", type=float, required=True)
    ap.add_argument("--nodes", default=None)
    ap.add_argument("--jobs", default=None)
    ap.add_argument("--labels", default=None)

    def split(s):
        return None if s is None else {x for x in s.split(",") if x}
    args = ap.parse_args(argv)
    print(cut(args.log, args.out, args.t_from, args.t_to, split(args.nodes), split(args.jobs),
              split(args.labels)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
