"""Writes blind5's labelled incident logs (DESIGN's format: topology first, labels last).

    python -m bench.blind5.generate --out DIR --seed N [--story ops|workloads] [--minutes M]
    python -m bench.blind5.generate --out DIR --corpus --seeds 0..3

Records are written in arrival order: a path delay of 0.02-0.4 s, 0.4 % of records
held up to 4.5 s more, 0.2 % duplicated (at-least-once delivery), and the story's late
partitions delivered in one burst at the end of their hold, in their own order (a
partition's order is kept by Kafka; 120 s drain in 1.5 s).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from pathlib import Path

from bench.blind5.emit import emit_ecc, emit_nic, emit_thermal
from bench.blind5.fleet import simulate_gpu
from bench.blind5.jobs import emit_steps, mark_busy
from bench.blind5.story import STORIES, Story
from replay.evaluation.corpus import parse_seeds

NODE_TOPICS = ("telemetry.thermal", "telemetry.ecc", "telemetry.nic")


def build(story: Story, seed: int) -> tuple[list, list[dict]]:
    """All records of a story as (arrival, topic, value) in arrival order, and its labels."""
    rng = random.Random(f"blind5-emit-{story.name}-{seed}")
    mark_busy(story.jobs, story.nodes)
    traces = {}
    for node in story.nodes.values():
        for g in range(node.gpus):
            traces[(node.name, g)] = simulate_gpu(rng, node, g, story.t0, story.seconds)
    recs: list = []
    for job in story.jobs:
        emit_steps(rng, job, story.nodes, traces, story.t0, story.seconds, recs)
    for node in story.nodes.values():
        emit_thermal(rng, node, traces, story.t0, story.seconds, recs)
        emit_ecc(rng, node, story.xids, story.t0, story.seconds, recs)
        emit_nic(rng, node, story.nic_events, story.roce, story.t0, story.seconds, recs)
    labels = []
    for f in story.faults:
        stamps = [v["ts"] for (_t, _topic, v, fids, _k) in recs if f.fid in fids]
        if not stamps:
            print(f"note: {story.name} seed {seed}: {f.fid} changed no record, no label",
                  file=sys.stderr)
            continue
        labels.append({"fault_id": f"{story.name}-s{seed}-{f.fid}", "kind": f.kind,
                       "cause": f.cause, "scope": f.scope, "start_ts": min(stamps),
                       "end_ts": max(stamps), "attributable": f.attributable})
    out = []
    for (t, topic, v, _fids, _key) in recs:
        arrival = t + rng.uniform(0.02, 0.4)
        if rng.random() < 0.004:
            arrival += rng.uniform(1.0, 4.1)
        if topic in NODE_TOPICS:
            for late_nodes, a, b in story.late:
                if v["node"] in late_nodes and a <= t < b:
                    # Kafka keeps a partition's order: the held minutes drain in order.
                    arrival = b + (t - a) * 0.0125
        out.append((arrival, topic, v))
        if rng.random() < 0.002:
            # A re-delivery within the 5 s of disorder DESIGN allows.
            out.append((max(arrival, min(arrival + rng.uniform(0.1, 3.0), t + 4.6)), topic, v))
    out.sort(key=lambda r: r[0])
    return out, labels


def write(path: Path, story: Story, seed: int) -> dict:
    records, labels = build(story, seed)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=5) as fh:
        fh.write(json.dumps({"topic": "topology", "value": story.topology}) + "\n")
        for _a, topic, v in records:
            fh.write(json.dumps({"topic": topic, "value": v}, separators=(",", ":")) + "\n")
        for lab in labels:
            fh.write(json.dumps({"topic": "labels", "value": lab}) + "\n")
    return {"log": path.name, "story": story.name, "seed": seed, "records": len(records),
            "labels": [lab["fault_id"] for lab in labels],
            "faults": {f.fid: f.what for f in story.faults}, "notes": story.notes}



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", default=None, help="A..B or A,B,C (with --corpus)")
    ap.add_argument("--story", choices=sorted(STORIES), default=None)
    ap.add_argument("--corpus", action="store_true", help="every story x every seed")
    ap.add_argument("--minutes", type=int, default=25)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = parse_seeds(args.seeds) if args.seeds else [args.seed]
    stories = sorted(STORIES) if (args.corpus or not args.story) else [args.story]
    manifest = []
    for seed in seeds:
        for name in stories:
            story = STORIES[name](seed, args.minutes)
            path = args.out / f"{name}-s{seed}.jsonl.gz"
            entry = write(path, story, seed)
            manifest.append(entry)
            print(f"{path}: {entry['records']} records, {len(entry['labels'])} labels")
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
