"""Cuts a reproducer out of a blind24 log: blind11's cutter (window, nodes, jobs, topics, labels),
then, optionally, only the step records of some (tp_rank, pp_rank) peer groups and only some
nodes' DCGM and port samples -- a big job's cut stays small and keeps every peer of the rank.

    python -m bench.blind24.cut LOG OUT --from S --to S [--nodes a,b] [--jobs j] \
        [--topics telemetry.step,...] [--labels fault-id,...]
"""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

from bench.blind11.cut import cut as _cut
from bench.blind11.cut import main

__all__ = ["cut", "main"]


def cut(log: Path, out: Path, t_from: float, t_to: float, nodes=None, jobs=None, topics=None,
        labels=None, coords=None, sampled=None) -> int:
    """blind11's cut; then step records only of the (tp_rank, pp_rank) in ``coords`` (records
    without them kept) and thermal / ECC / port records only of the nodes in ``sampled``."""
    with tempfile.TemporaryDirectory() as tmp:
        first = Path(tmp) / "cut.jsonl.gz"
        _cut(log, first, t_from, t_to, nodes, jobs, topics, labels)
        with gzip.open(first, "rt", encoding="utf-8") as fh:
            recs = [json.loads(line) for line in fh]
    kept = []
    for rec in recs:
        topic, v = rec["topic"], rec["value"]
        if (coords is not None and topic == "telemetry.step" and "tp_rank" in v
                and (v["tp_rank"], v["pp_rank"]) not in coords):
            continue
        if (sampled is not None and topic in ("telemetry.thermal", "telemetry.ecc",
                                              "telemetry.nic") and v["node"] not in sampled):
            continue
        kept.append(rec)
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(out, "wb", mtime=0) as fh:
        for rec in kept:
            fh.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
    return len(kept)


if __name__ == "__main__":
    raise SystemExit(main())
