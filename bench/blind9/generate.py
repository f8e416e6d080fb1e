"""Writes blind9's labelled incident logs (DESIGN's format: topology first, labels last).

    python -m bench.blind9.generate --out DIR --seed N [--story ops-hgx|nvl72] [--minutes M]
    python -m bench.blind9.generate --out DIR --corpus --seeds 0..3     # both stories x seeds

Records go out in arrival order: event time on the sender's clock plus 30-600 ms of transport,
0.2 % of them 1-4 s late, 0.1 % delivered twice (an at-least-once producer retrying).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

from bench.blind9.stories import STORIES
from bench.blind9.world import World
from replay.evaluation.corpus import parse_seeds


def records(story: str, seed: int, minutes: float = 20.0) -> list[dict]:
    w = World(seed * 1000 + (1 if story == "nvl72" else 0), minutes)
    topo = STORIES[story](w)
    w.telemetry()
    net = random.Random(f"net:{story}:{seed}")
    out = []
    for i, (_, rec) in enumerate(w.records):
        ts = rec["value"]["ts"]
        late = net.uniform(1.0, 4.0) if net.random() < 0.002 else net.uniform(0.03, 0.6)
        out.append((ts + late, i, rec))
        if net.random() < 0.001:
            out.append((ts + late + net.uniform(0.3, 0.9), i, rec))
    out.sort(key=lambda x: (x[0], x[1]))
    labels = []
    for f in w.faults:
        span = f.span or w.marks.get(f.fid)
        if span is None:     # a shortened log ended before the fault began
            continue
        labels.append({"topic": "labels", "value": {
            "fault_id": f.fid, "kind": f.kind, "cause": f.cause, "scope": f.scope,
            "start_ts": span[0], "end_ts": span[1], "attributable": f.attributable}})
    return ([{"topic": "topology", "value": {"format": "faultline", "text": topo}}]
            + [rec for _, _, rec in out] + labels)


def write(out_dir: Path, story: str, seed: int, minutes: float = 20.0) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{story}-s{seed}.jsonl.gz"
    with gzip.GzipFile(path, "wb", compresslevel=6, mtime=0) as fh:
        for rec in records(story, seed, minutes):
            fh.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
    return path



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", default=None)
    ap.add_argument("--story", choices=sorted(STORIES), default="ops-hgx")
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--corpus", action="store_true", help="every story for every --seeds")
    args = ap.parse_args(argv)
    if args.corpus:
        for seed in parse_seeds(args.seeds or "0..3"):
            for story in sorted(STORIES):
                print(write(args.out, story, seed, args.minutes))
    else:
        print(write(args.out, args.story, args.seed, args.minutes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
