"""Cuts a small reproducer out of a blind9 log: a time window, some nodes, some jobs, labels.

    python -m bench.blind9.cut LOG OUT [--from S] [--to S] [--nodes a,b] [--jobs j,k]
        [--labels fault_id,...] [--topics telemetry.step,...]

Times are seconds after the log's t = 0 (world.T0). The topology record is always kept; labels
only those named (all without --labels).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from bench.blind9.world import T0


def cut(src: Path, dst: Path, t_from: float = 0.0, t_to: float = 1e9,
        nodes: set | None = None, jobs: set | None = None, labels: set | None = None,
        topics: set | None = None) -> int:
    n = 0
    with gzip.open(src, "rt", encoding="utf-8") as fin, \
            gzip.GzipFile(dst, "wb", compresslevel=9, mtime=0) as fout:
        for line in fin:
            r = json.loads(line)
            topic, v = r["topic"], r["value"]
            if topic == "topology":
                keep = True
            elif topic == "labels":
                keep = labels is None or v["fault_id"] in labels
            else:
                keep = (t_from <= v["ts"] - T0 <= t_to
                        and (nodes is None or v["node"] in nodes)
                        and (topics is None or topic in topics)
                        and (jobs is None or topic != "telemetry.step" or v["job"] in jobs))
            if keep:
                fout.write(line.encode())
                n += 1
    return n


def _set(s: str | None) -> set | None:
    return set(s.split(",")) if s else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--from", dest="t_from", type=float, default=0.0)
    ap.add_argument("--to", dest="t_to", type=float, default=1e9)
    for k in ("nodes", "jobs", "labels", "topics"):
        ap.add_argument(f"--{k}")
    a = ap.parse_args(argv)
    n = cut(a.log, a.out, a.t_from, a.t_to, _set(a.nodes), _set(a.jobs), _set(a.labels),
            _set(a.topics))
    print(f"{a.out}: {n} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
