"""Cuts a reproducer out of a blind11 log: a window, some nodes, jobs and topics, some labels.

    python -m bench.blind11.cut LOG OUT --from S --to S [--nodes a,b] [--jobs j] \
        [--topics telemetry.step,...] [--labels fault-id,...]

Times are seconds after the log's first record. Kept labels are clipped to the window; the
topology record rides along.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path


def cut(log: Path, out: Path, t_from: float, t_to: float, nodes=None, jobs=None, topics=None,
        labels=None) -> int:
    with gzip.open(log, "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh]
    t0 = min(r["value"]["ts"] for r in recs if r["topic"].startswith("telemetry."))
    lo, hi = t0 + t_from, t0 + t_to
    kept = []
    for rec in recs:
        topic, v = rec["topic"], rec["value"]
        if topic == "topology":
            kept.append(rec)
        elif topic == "labels":
            if (labels is None or v["fault_id"] in labels) and v["start_ts"] <= hi and (
                    v["end_ts"] >= lo):
                v = {**v, "start_ts": max(v["start_ts"], lo), "end_ts": min(v["end_ts"], hi)}
                kept.append({"topic": topic, "value": v})
        elif (lo <= v["ts"] <= hi and (nodes is None or v["node"] in nodes)
              and (topics is None or topic in topics)
              and (jobs is None or topic != "telemetry.step" or v["job"] in jobs)):
            kept.append(rec)
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(out, "wb", mtime=0) as fh:
        for rec in kept:
            fh.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
    return len(kept)


def _names(text: str | None):
    return None if text is None else set(text.split(","))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--from", dest="t_from", type=float, default=0.0)
    ap.add_argument("--to", dest="t_to", type=float, default=1e9)
    for opt in ("nodes", "jobs", "topics", "labels"):
        ap.add_argument(f"--{opt}")
    a = ap.parse_args(argv)
    n = cut(a.log, a.out, a.t_from, a.t_to, _names(a.nodes), _names(a.jobs), _names(a.topics),
            _names(a.labels))
    print(f"{a.out}: {n} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
