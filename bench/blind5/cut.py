"""Cuts a small reproducer out of a blind5 log (topology kept first, labels last).

    python -m bench.blind5.cut LOG OUT [--from S] [--to S] [--nodes A,B] [--jobs J]
        [--topics step,thermal,ecc,nic] [--only TOPIC=NODES ...] [--labels ID,ID | --no-labels]

`--from`/`--to` are seconds after the log's first telemetry record (event time). A step
record is kept when its job is in `--jobs` (all jobs when not given) and its node in
`--nodes`; other records when their node is; `--only thermal=A,B` keeps that topic's
records of those nodes only. Labels are kept as they are (their span may
reach outside the window).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path


def cut(src: Path, dst: Path, t_from: float | None = None, t_to: float | None = None,
        nodes: set[str] | None = None, jobs: set[str] | None = None,
        topics: set[str] | None = None, labels: set[str] | None = None,
        only: dict[str, set[str]] | None = None) -> dict[str, int]:
    """Writes the reproducer; returns records kept per topic."""
    opener = gzip.open if str(src).endswith(".gz") else open
    with opener(src, "rt", encoding="utf-8") as fh:
        recs = [json.loads(x) for x in fh if x.strip()]
    t0 = min(r["value"]["ts"] for r in recs if r["topic"].startswith("telemetry."))
    kept: dict[str, int] = {}
    out = []
    for r in recs:
        topic, v = r["topic"], r["value"]
        if topic == "topology":
            out.append(r)
            continue
        if topic == "labels":
            if labels is None or v["fault_id"] in labels:
                out.append(r)
                kept["labels"] = kept.get("labels", 0) + 1
            continue
        short = topic.split(".")[-1]
        if topics and short not in topics:
            continue
        rel = v["ts"] - t0
        if (t_from is not None and rel < t_from) or (t_to is not None and rel > t_to):
            continue
        if nodes and v.get("node") not in nodes:
            continue
        if only and short in only and v.get("node") not in only[short]:
            continue
        if short == "step" and jobs and v.get("job") not in jobs:
            continue
        out.append(r)
        kept[short] = kept.get(short, 0) + 1
    out.sort(key=lambda r: {"topology": 0, "labels": 2}.get(r["topic"], 1))  # stable
    dst.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(dst, "wt", encoding="utf-8", compresslevel=9) as fh:
        for r in out:
            fh.write(json.dumps(r, separators=(",", ":")) + "\n")
    return kept


def _set(text: str | None) -> set[str] | None:
    return set(text.split(",")) if text else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--from", dest="t_from", type=float)
    ap.add_argument("--to", dest="t_to", type=float)
    ap.add_argument("--nodes")
    ap.add_argument("--jobs")
    ap.add_argument("--topics")
    ap.add_argument("--only", action="append", default=[], metavar="TOPIC=NODES")
    ap.add_argument("--labels")
    ap.add_argument("--no-labels", action="store_true")
    args = ap.parse_args(argv)
    labels = set() if args.no_labels else _set(args.labels)
    kept = cut(args.src, args.dst, args.t_from, args.t_to, _set(args.nodes), _set(args.jobs),
               _set(args.topics), labels,
               {k: set(v.split(",")) for k, v in (o.split("=", 1) for o in args.only)})
    print(f"{args.dst}: {kept}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
