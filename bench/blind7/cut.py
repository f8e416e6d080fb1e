"""Cuts a small reproducer out of a blind7 log: a window, some nodes / jobs / topics, labels.

    python -m bench.blind7.cut LOG OUT --from S --to S [--nodes a,b] [--jobs j] [--topics t,..]
        [--labels id,..] [--ranks 0,1,..] [--drop-nics node/nic,..]

S are seconds from the log's first telemetry record. The topology record is kept; labels
are kept by fault id (all when --labels is not given), unchanged.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path


def cut(log: Path, out: Path, t_from: float, t_to: float, nodes=None, jobs=None, topics=None,
        labels=None, ranks=None, drop_nics=None, topic_nodes=None) -> int:
    """Keeps the records in [t_from, t_to) s that pass every filter given; `topic_nodes` maps
    a topic to the only nodes whose rows of that topic are kept."""
    with gzip.open(log, "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh]
    t0 = min(r["value"]["ts"] for r in recs if "ts" in r.get("value", {}))
    keep = []
    for r in recs:
        topic, v = r["topic"], r["value"]
        if topic == "topology":
            keep.append(r)
            continue
        if topic == "labels":
            if labels is None or v["fault_id"] in labels:
                keep.append(r)
            continue
        if not t_from <= v["ts"] - t0 < t_to:
            continue
        if topics and topic not in topics:
            continue
        if nodes and topic != "telemetry.step" and v.get("node") not in nodes:
            continue
        if topic_nodes and topic in topic_nodes and v.get("node") not in topic_nodes[topic]:
            continue
        if drop_nics and topic == "telemetry.nic" and f"{v['node']}/{v['nic']}" in drop_nics:
            continue
        if topic == "telemetry.step":
            if jobs and v["job"] not in jobs:
                continue
            if ranks and v["rank"] not in ranks:
                continue
        keep.append(r)
    keep.sort(key=lambda r: (r["topic"] == "labels", r["topic"] != "topology"))
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        for r in keep:
            fh.write(json.dumps(r, separators=(",", ":")) + "\n")
    return len(keep)


def _list(text):
    return [x for x in text.split(",") if x] if text else None


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
    ap.add_argument("--ranks")
    ap.add_argument("--drop-nics")
    a = ap.parse_args(argv)
    ranks = [int(x) for x in _list(a.ranks)] if a.ranks else None
    n = cut(a.log, a.out, a.t_from, a.t_to, _list(a.nodes), _list(a.jobs), _list(a.topics),
            _list(a.labels), ranks, _list(a.drop_nics))
    print(f"{a.out}: {n} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
