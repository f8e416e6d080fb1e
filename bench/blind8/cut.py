"""Cuts a small reproducer out of a blind8 log: a window, some nodes, jobs, topics, labels.

    python -m bench.blind8.cut LOG OUT --from S --to S [--nodes a,b] [--jobs j] \
        [--topics telemetry.step,...] [--labels fault_id,...] [--step-nodes a,b]

Times are seconds since the log's t = 0 (fleet.T0). The topology record is kept; labels are
kept whole (pass --labels to keep only some). `--step-nodes` keeps step records only from
those nodes (a job's peers thinned), other topics from `--nodes`.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from bench.blind8.fleet import T0


def _set(text: str | None) -> set | None:
    return set(text.split(",")) if text else None


def cut(src: Path, dst: Path, t_from: float, t_to: float, nodes: set | None = None,
        jobs: set | None = None, topics: set | None = None, labels: set | None = None,
        step_nodes: set | None = None) -> int:
    kept = 0
    with gzip.open(src, "rt", encoding="utf-8") as fin, \
            gzip.GzipFile(dst, "wb", compresslevel=9, mtime=0) as fout:
        for line in fin:
            r = json.loads(line)
            topic, v = r["topic"], r["value"]
            if topic == "labels":
                ok = labels is None or v["fault_id"] in labels
            elif topic == "topology":
                ok = True
            else:
                rel = v["ts"] - T0
                only = step_nodes if (topic == "telemetry.step" and step_nodes) else nodes
                ok = (t_from <= rel <= t_to and (only is None or v["node"] in only)
                      and (topics is None or topic in topics)
                      and (jobs is None or topic != "telemetry.step" or v["job"] in jobs))
            if ok:
                fout.write(line.encode())
                kept += 1
    return kept


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--from", dest="t_from", type=float, default=0.0)
    ap.add_argument("--to", dest="t_to", type=float, default=1e9)
    ap.add_argument("--nodes")
    ap.add_argument("--step-nodes")
    ap.add_argument("--jobs")
    ap.add_argument("--topics")
    ap.add_argument("--labels")
    a = ap.parse_args(argv)
    n = cut(a.log, a.out, a.t_from, a.t_to, _set(a.nodes), _set(a.jobs), _set(a.topics),
            _set(a.labels), _set(a.step_nodes))
    print(f"{a.out}: {n} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
