"""Writes blind11's labelled incident logs (DESIGN's format): topology first, every record in
arrival order, labels last.

    python -m bench.blind11.generate --out DIR --seed N [--story rl|mixed] [--minutes M]
    python -m bench.blind11.generate --out DIR --corpus --seeds 0..3     # both stories x seeds

Arrival: 40-500 ms after the record's true time (a node's clock skew moves its `ts`, not
when it arrives), 0.2 % of records 0.6-1.2 s late, 0.1 % delivered twice.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

from bench.blind11.stories import STORIES
from bench.blind11.world import node_rows
from replay.evaluation.corpus import parse_seeds


def records(story: str, seed: int, minutes: float = 20.0) -> list[dict]:
    w = STORIES[story](seed, minutes)
    rows = [r for job in w.jobs for r in job.records]
    for node in w.nodes:
        rows += node_rows(node, w.fleet_caps, w.dur_s, w.t0)
    skew = {n.name: n.skew_s for n in w.nodes}
    end = w.t0 + w.dur_s
    rng = random.Random(f"blind11-arrival-{story}-{seed}")
    timed = []
    for ts, topic, value in rows:
        if ts - skew[value["node"]] >= end:
            continue
        value = {"ts": round(ts, 3), **value}
        late = rng.uniform(0.6, 1.2) if rng.random() < 0.002 else 0.0
        arrive = ts - skew[value["node"]] + rng.uniform(0.04, 0.5) + late
        timed.append((arrive, topic, value))
        if rng.random() < 0.001:
            timed.append((arrive + rng.uniform(0.05, 1.0), topic, value))
    timed.sort(key=lambda x: x[0])
    out = [{"topic": "topology", "value": w.topology}]
    out += [{"topic": tp, "value": v} for _, tp, v in timed]
    out += [lab.record() for lab in w.labels if lab.start_ts is not None]
    return out


def write(out: Path, story: str, seed: int, minutes: float = 20.0) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{story}-s{seed}.jsonl.gz"
    with gzip.GzipFile(path, "wb", mtime=0) as fh:
        for rec in records(story, seed, minutes):
            fh.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
    return path



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--story", choices=sorted(STORIES), default="rl")
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--corpus", action="store_true", help="both stories x --seeds")
    ap.add_argument("--seeds", default="0..3")
    args = ap.parse_args(argv)
    todo = ([(st, s) for s in parse_seeds(args.seeds) for st in sorted(STORIES)] if args.corpus
            else [(args.story, args.seed)])
    for st, s in todo:
        print(write(args.out, st, s, args.minutes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
