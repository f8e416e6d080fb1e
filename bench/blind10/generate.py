"""Writes blind10's labelled incident logs (DESIGN's format): topology first, then every record
in arrival order, labels last.

    python -m bench.blind10.generate --out DIR --seed N [--story life|zero3] [--minutes M]
    python -m bench.blind10.generate --out DIR --corpus --seeds 0..3     # both stories x seeds

Arrival: 30-600 ms after the sample, 0.2 % of records 1-4 s late, 0.1 % delivered twice; a node
whose agent ships its buffer every 3 s delivers everything in bursts (up to 3.3 s late).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
from pathlib import Path

from bench.blind10.stories import STORIES
from replay.evaluation.corpus import parse_seeds


def records(story: str, seed: int, minutes: float = 20.0) -> list[dict]:
    w = STORIES[story](seed, minutes)
    end = w.t0 + w.dur_s
    rows = [row for job in w.jobs for row in job.records]
    for node in w.nodes:
        rows += node.rows(w.t0, end)
    rows = [row for row in rows if row[0] < end]
    for lab, pred in w.post:
        for tt, topic, val in rows:
            if pred(topic, val, tt):
                lab.touch(val["ts"])
    r = random.Random(f"blind10/{story}/{seed}/arrival")
    by_name = {n.name: n for n in w.nodes}
    phase = {n.name: r.uniform(0, 3) for n in w.nodes}
    timed = []
    for seq, (tt, topic, val) in enumerate(rows):
        node = by_name[val["node"]]
        if node.late_burst_s:
            period = node.late_burst_s
            at = (math.floor((tt - phase[node.name]) / period) + 1) * period \
                + phase[node.name] + r.uniform(0.05, 0.25)
        else:
            at = tt + (r.uniform(1.0, 4.0) if r.random() < 0.002 else r.uniform(0.03, 0.6))
        timed.append((at, seq, topic, val))
        if r.random() < 0.001:
            timed.append((at + r.uniform(0.1, 2.0), seq, topic, val))
    timed.sort(key=lambda x: (x[0], x[1]))
    out = [{"topic": "topology", "value": w.topology}]
    out += [{"topic": topic, "value": val} for _, _, topic, val in timed]
    out += [lab.record(e) for lab, e in w.labels if math.isfinite(lab.first)]
    return out


def write(out_dir: Path, story: str, seed: int, minutes: float = 20.0) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{story}-s{seed}.jsonl.gz"
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                filename="") as fh:
        for rec in records(story, seed, minutes):
            fh.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
    return path



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--story", choices=sorted(STORIES), default="life")
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--corpus", action="store_true", help="both stories x --seeds")
    ap.add_argument("--seeds", default="0..3", help="with --corpus: 0..3 or 0,2,5")
    args = ap.parse_args(argv)
    todo = ([(s, n) for n in parse_seeds(args.seeds) for s in sorted(STORIES)] if args.corpus
            else [(args.story, args.seed)])
    for story, seed in todo:
        print(write(args.out, story, seed, args.minutes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
