"""Cut a small reproducing case out of a blind log: a time window, some nodes, NICs, topics, labels.

    python -m bench.blind.cut LOG --out CASE.jsonl.gz --start S --end S [--nodes A,B]
        [--topics telemetry.nic,...] [--drop-nics mlx5_2] [--labels FAULT_ID,...]

``--start``/``--end`` are seconds from the log's first record. The topology
record is kept; labels only when named (a case with none says "nothing here
should page"). Records are kept in the log's own (arrival) order.
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import orjson


def cut(
    log: Path,
    start_s: float,
    end_s: float,
    nodes: set[str] | None,
    topics: set[str] | None,
    drop_nics: set[str],
    labels: set[str],
) -> list[dict]:
    with gzip.open(log, "rb") as fh:
        recs = [orjson.loads(line) for line in fh]
    t0 = min(r["value"]["ts"] for r in recs if "ts" in r.get("value", {}))
    out = []
    for r in recs:
        topic, v = r["topic"], r["value"]
        if topic == "topology":
            out.append(r)
        elif topic == "labels":
            if v["fault_id"] in labels:
                out.append(r)
        elif (
            t0 + start_s <= v["ts"] < t0 + end_s
            and (nodes is None or v.get("node") in nodes)
            and (topics is None or topic in topics)
            and v.get("nic") not in drop_nics
        ):
            out.append(r)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--start", type=float, default=0.0)
    ap.add_argument("--end", type=float, default=1e9)
    ap.add_argument("--nodes")
    ap.add_argument("--topics")
    ap.add_argument("--drop-nics", default="")
    ap.add_argument("--labels", default="")
    a = ap.parse_args(argv)

    def split(s: str | None) -> set[str] | None:
        return None if not s else {x for x in s.split(",") if x}

    recs = cut(
        a.log, a.start, a.end, split(a.nodes), split(a.topics), split(a.drop_nics) or set(),
        split(a.labels) or set(),
    )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(a.out, "wb", compresslevel=9) as fh:
        fh.write(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    print(f"{a.out}: {len(recs)} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
