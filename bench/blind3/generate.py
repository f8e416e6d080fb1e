"""Write blind3's labelled incident logs.

python -m bench.blind3.generate --out DIR --seed N [--story k8s-mixed|extremes]
python -m bench.blind3.generate --out DIR --corpus --seeds 0..3
"""

from __future__ import annotations

import argparse
import gzip
import random
import sys
from pathlib import Path

import orjson

from bench.blind3 import emit
from bench.blind3.story import STORIES, Story
from replay.evaluation.corpus import parse_seeds

MAX_DISORDER_S = 4.8  # DESIGN allows 5 s; the margin is for the stamping jitter
T_BASE = 1_789_000_000.0  # 2026-09-09 UTC: in the past, so no ts is ahead of wall clock


def build(story: Story, seed: int) -> tuple[list, list]:
    """(records in arrival order, labels): every record a (topic, value) pair."""
    rng = random.Random(f"blind3/emit/{story.name}/{seed}")
    t_base = T_BASE + seed * 86_400.0 + (0 if story.name == "k8s-mixed" else 43_200.0)
    fl = story.fleet
    made = []
    for job in fl.jobs:
        made.extend(emit.steps(fl, job, t_base, rng))
    made.extend(emit.dcgm(fl, t_base, rng))
    made.extend(emit.nic(fl, t_base, rng))
    arrivals = []
    for i, (t_true, node, topic, value) in enumerate(made):
        arrive = t_true + rng.uniform(0.02, 0.4)
        for bn, b0, b1 in story.blips:
            if bn == node and b0 <= t_true < b1:
                arrive = b1 + rng.uniform(0.0, 0.2)
        arrivals.append((arrive, i, topic, value, False))
        if rng.random() < story.dup_rate:
            arrivals.append((arrive + rng.uniform(0.05, 1.5), i, topic, value, True))
    arrivals.sort(key=lambda a: (a[0], a[1]))
    out, high = [], -1e18
    for _arr, _i, topic, value, dup in arrivals:
        ts = value["ts"]
        if ts < high - MAX_DISORDER_S:
            if dup:
                continue  # a late duplicate past the contract's disorder: not sent
            raise AssertionError(f"{topic} at {ts} arrives {high - ts:.2f} s after newer records")
        high = max(high, ts)
        out.append((topic, value))
    labels = []
    for f in story.faults:
        if f.first == float("inf"):
            print(
                f"  {story.name} seed {seed}: {f.fault_id} changed no record: not labelled",
                file=sys.stderr,
            )
            continue
        labels.append(f.label())
    return out, labels


def write(path: Path, story: Story, seed: int) -> tuple[int, int]:
    records, labels = build(story, seed)
    with gzip.open(path, "wb", compresslevel=5) as fh:
        if story.topology is not None:
            fh.write(orjson.dumps({"topic": "topology", "value": story.topology}) + b"\n")
        for topic, value in records:
            fh.write(orjson.dumps({"topic": topic, "value": value}) + b"\n")
        for lab in labels:
            fh.write(orjson.dumps({"topic": "labels", "value": lab}) + b"\n")
    return len(records), len(labels)



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.blind3.generate")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--story", choices=sorted(STORIES), default=None)
    ap.add_argument("--corpus", action="store_true", help="both stories for every seed of --seeds")
    ap.add_argument("--seeds", default="0..3")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = parse_seeds(args.seeds) if args.corpus else [args.seed]
    names = sorted(STORIES) if (args.corpus or args.story is None) else [args.story]
    for seed in seeds:
        for name in names:
            story = STORIES[name](seed)
            path = args.out / f"{name}-s{seed}.jsonl.gz"
            n, k = write(path, story, seed)
            print(f"{path}: {n} records, {k} labels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
