"""Cuts a small reproducer out of a blind6 log: a time window, some nodes, jobs, topics, labels.

    python -m bench.blind6.cut LOG OUT --from S --to S [--nodes a,b] [--jobs j,k]
        [--topics step,ecc] [--labels SUFFIX,...] [--step-nodes a,b]

Times are seconds from the log's first record. The topology record is kept; a label is kept
when its fault id ends with one of the suffixes, clipped to nothing (its times stay as they
are: a reproducer's label says what the full log said).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path


def cut(log: Path, out: Path, t_from: float, t_to: float, nodes: set[str] | None = None,
        jobs: set[str] | None = None, topics: set[str] | None = None,
        labels: list[str] | None = None, step_nodes: set[str] | None = None) -> int:
    with gzip.open(log, "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh]
    t0 = min(r["value"]["ts"] for r in recs if r["topic"].startswith("telemetry."))
    kept = []
    for r in recs:
        topic, v = r["topic"], r["value"]
        if topic == "topology":
            kept.append(r)
            continue
        if topic == "labels":
            if labels and any(v["fault_id"].endswith(s) for s in labels):
                kept.append(r)
            continue
        if not t_from <= v["ts"] - t0 <= t_to:
            continue
        if topics and topic.split(".", 1)[1] not in topics:
            continue
        if topic == "telemetry.step":
            if jobs and v["job"] not in jobs:
                continue
            if step_nodes and v["node"] not in step_nodes:
                continue
        elif nodes and v["node"] not in nodes:
            continue
        kept.append(r)
    kept.sort(key=lambda r: 2 if r["topic"] == "labels" else (0 if r["topic"] == "topology" else 1))
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        for r in kept:
            fh.write(json.dumps(r, separators=(",", ":")) + "\n")
    return len(kept)


def _set(text: str | None) -> set[str] | None:
    return set(text.split(",")) if text else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--from", dest="t_from", type=float, default=0.0)
    ap.add_argument("--to", dest="t_to", type=float, default=1e9)
    ap.add_argument("--nodes")
    ap.add_argument("--jobs")
    ap.add_argument("--topics")
    ap.add_argument("--labels")
    ap.add_argument("--step-nodes")
    a = ap.parse_args(argv)
    n = cut(a.log, a.out, a.t_from, a.t_to, _set(a.nodes), _set(a.jobs), _set(a.topics),
            a.labels.split(",") if a.labels else None, _set(a.step_nodes))
    print(f"{a.out}: {n} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
