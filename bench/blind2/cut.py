"""Cut a small reproducing log out of a blind2 log: a time window, some topics,
nodes and jobs, the topology record and the labels named.

    python -m bench.blind2.cut LOG OUT --fault ID [--before S] [--after S]
        [--topics nic,thermal,...] [--nodes a,b] [--jobs j] [--stage PP:TP,TP]

The window is [start_ts - before, start_ts + after] of the named label (a
negative --before opens it after the fault began); the label's end_ts is cut to
the last kept record not later than it.
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import orjson

from .measure import read_jsonl


def cut(records: list[dict], fault: str, before: float, after: float, topics: set[str],
        nodes: set[str] | None, jobs: set[str] | None,
        stage: tuple[int, set[int]] | None = None) -> list[dict]:
    label = next(r["value"] for r in records
                 if r["topic"] == "labels" and r["value"]["fault_id"] == fault)
    lo, hi = label["start_ts"] - before, label["start_ts"] + after
    out = [records[0]] if records[0]["topic"] == "topology" else []
    for rec in records:
        topic, v = rec["topic"], rec["value"]
        if not topic.startswith("telemetry.") or topic.split(".")[1] not in topics:
            continue
        if not lo <= v["ts"] <= hi:
            continue
        if topic == "telemetry.step":
            if jobs is not None and v["job"] not in jobs:
                continue
            if stage is not None and (v.get("pp_rank") != stage[0]
                                      or v.get("tp_rank") not in stage[1]):
                continue
        elif nodes is not None and v["node"] not in nodes:
            continue
        out.append(rec)
    kept = [r["value"]["ts"] for r in out[1:]]
    label = dict(label, end_ts=max(t for t in kept if t <= label["end_ts"]))
    if label["start_ts"] < lo:
        # a window opened after the fault began: it starts again on the first kept record
        # of its unit (good enough for a reproducer; the full log has the exact label)
        unit = label["scope"].get("node")
        label["start_ts"] = min(r["value"]["ts"] for r in out[1:]
                                if unit is None or r["value"].get("node") == unit)
    out.append({"topic": "labels", "value": label})
    return out


def _stage(text: str) -> tuple[int, set[int]]:
    pp, tps = text.split(":")
    return int(pp), {int(t) for t in tps.split(",")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.blind2.cut", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--fault", required=True)
    ap.add_argument("--before", type=float, default=120.0)
    ap.add_argument("--after", type=float, default=180.0)
    ap.add_argument("--topics", default="step,ecc,nic,thermal")
    ap.add_argument("--nodes", default=None)
    ap.add_argument("--jobs", default=None)
    ap.add_argument("--stage", default=None,
                    help="PP:TP,TP,...: keep only these ranks' steps (the slow ranks' peers)")
    args = ap.parse_args(argv)
    records = read_jsonl(args.log)
    out = cut(records, args.fault, args.before, args.after, set(args.topics.split(",")),
              set(args.nodes.split(",")) if args.nodes else None,
              set(args.jobs.split(",")) if args.jobs else None,
              _stage(args.stage) if args.stage else None)
    with gzip.open(args.out, "wb", compresslevel=9) as fh:
        for rec in out:
            fh.write(orjson.dumps(rec) + b"\n")
    print(f"{args.out}: {len(out)} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
