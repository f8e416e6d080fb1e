"""Cut a small reproducer out of a blind3 log.

    python -m bench.blind3.cut LOG --out CASE.jsonl.gz --from S --to S [--nodes a,b]
        [--topics step,thermal,ecc,nic] [--jobs j1,j2] [--labels id1,id2] [--no-topology]

``--from``/``--to`` are seconds after the log's first telemetry record.  Telemetry is kept
in file (arrival) order; the topology record stays first unless ``--no-topology``; the
labels kept are the ones named, or by default those whose unit is on a kept node and whose
[start, end] overlaps the window.  Label times are not changed.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import orjson


def cut(
    records: list[dict],
    t_from: float,
    t_to: float,
    nodes: set | None,
    topics: set | None,
    jobs: set | None,
    labels: set | None,
    topology: bool = True,
) -> list[dict]:
    t0 = min(r["value"]["ts"] for r in records if r["topic"].startswith("telemetry."))
    lo, hi = t0 + t_from, t0 + t_to
    out = []
    for r in records:
        topic, v = r["topic"], r["value"]
        if topic == "topology":
            if topology:
                out.append(r)
            continue
        if topic == "labels":
            continue
        if not lo <= v["ts"] <= hi:
            continue
        if topics is not None and topic.split(".", 1)[1] not in topics:
            continue
        if nodes is not None and v["node"] not in nodes:
            continue
        if jobs is not None and topic == "telemetry.step" and v["job"] not in jobs:
            continue
        out.append(r)
    for r in records:
        if r["topic"] != "labels":
            continue
        lab = r["value"]
        if labels is not None:
            keep = lab["fault_id"] in labels
        else:
            node = lab["scope"].get("node")
            keep = (
                (nodes is None or node in nodes) and lab["start_ts"] <= hi and lab["end_ts"] >= lo
            )
        if keep:
            out.append(r)
    return out


def _set(text: str | None) -> set | None:
    return None if text is None else {x for x in text.split(",") if x}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.blind3.cut")
    ap.add_argument("log", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--from", dest="t_from", type=float, required=True)
    ap.add_argument("--to", dest="t_to", type=float, required=True)
    ap.add_argument("--nodes")
    ap.add_argument("--topics")
    ap.add_argument("--jobs")
    ap.add_argument("--labels")
    ap.add_argument("--no-topology", action="store_true")
    a = ap.parse_args(argv)
    with gzip.open(a.log, "rb") as fh:
        records = [orjson.loads(line) for line in fh]
    out = cut(
        records,
        a.t_from,
        a.t_to,
        _set(a.nodes),
        _set(a.topics),
        _set(a.jobs),
        _set(a.labels),
        not a.no_topology,
    )
    with gzip.open(a.out, "wb", compresslevel=9) as fh:
        for r in out:
            fh.write(orjson.dumps(r) + b"\n")
    n_lab = sum(r["topic"] == "labels" for r in out)
    print(f"{a.out}: {len(out) - n_lab} records, {n_lab} labels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
