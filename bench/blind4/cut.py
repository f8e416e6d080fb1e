"""Cut a small reproducer out of a blind4 log: a window, some nodes, topics, jobs, stages.

    python -m bench.blind4.cut LOG --out CASE.jsonl.gz --from S --to S
        [--nodes a,b] [--topics step,nic] [--jobs j1] [--pp 0] [--labels id1,id2]

`--from`/`--to` are seconds after the log's first telemetry record. The topology
record stays first; chosen labels go last, clipped to the window.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import orjson

from bench.blind4.score import read_records


def cut(
    records: list[dict],
    t_from: float,
    t_to: float,
    nodes=None,
    topics=None,
    jobs=None,
    pp=None,
    labels=None,
) -> list[dict]:
    t0 = min(r["value"]["ts"] for r in records if r["topic"].startswith("telemetry."))
    lo, hi = t0 + t_from, t0 + t_to
    out = [r for r in records if r["topic"] == "topology"]
    for r in records:
        topic, v = r["topic"], r["value"]
        if not topic.startswith("telemetry."):
            continue
        if not lo <= v["ts"] <= hi:
            continue
        if topics and topic.split(".", 1)[1] not in topics:
            continue
        if nodes and v["node"] not in nodes:
            continue
        if topic == "telemetry.step":
            if jobs and v["job"] not in jobs:
                continue
            if pp is not None and v.get("pp_rank", 0) != pp:
                continue
        out.append(r)
    for r in records:
        if r["topic"] == "labels" and labels and r["value"]["fault_id"] in labels:
            lab = dict(r["value"])
            lab["start_ts"] = max(lab["start_ts"], lo)
            lab["end_ts"] = min(lab["end_ts"], hi)
            out.append({"topic": "labels", "value": lab})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.blind4.cut", description=__doc__)
    ap.add_argument("log", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--from", dest="t_from", type=float, required=True)
    ap.add_argument("--to", dest="t_to", type=float, required=True)
    ap.add_argument("--nodes", default="")
    ap.add_argument("--topics", default="", help="step,ecc,thermal,nic")
    ap.add_argument("--jobs", default="")
    ap.add_argument("--pp", type=int, default=None, help="keep one pipeline stage's step records")
    ap.add_argument("--labels", default="")
    args = ap.parse_args(argv)

    def split(text: str) -> set[str] | None:
        return set(text.split(",")) if text else None

    recs = cut(
        read_records(args.log),
        args.t_from,
        args.t_to,
        split(args.nodes),
        split(args.topics),
        split(args.jobs),
        args.pp,
        split(args.labels),
    )
    with gzip.open(args.out, "wb", compresslevel=9) as fh:
        for r in recs:
            fh.write(orjson.dumps(r) + b"\n")
    n_lab = sum(1 for r in recs if r["topic"] == "labels")
    print(f"{args.out}: {len(recs)} records, {n_lab} labels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
