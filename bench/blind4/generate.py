"""Write bench/blind4's labelled incident logs (DESIGN's format: topology first, labels last).

python -m bench.blind4.generate --out DIR --seed N [--story quiet-hours|fabric-3tier]
python -m bench.blind4.generate --out DIR --corpus --seeds 0..3
"""

from __future__ import annotations

import argparse
import gzip
import random
import sys
from pathlib import Path

import orjson

from bench.blind4 import jobs
from bench.blind4.emit import sample_node
from bench.blind4.story import STORIES
from replay.evaluation.corpus import parse_seeds

DUP_RATE = 0.002  # at-least-once delivery: a record sent twice
EPOCH_S = 1_775_000_000.0  # 2026-03-31 UTC: logs sit in the past, never ahead of a worker's clock
MAX_DELAY_S = 4.5  # collector batching + Kafka produce, inside DESIGN's 5 s


def build(story_name: str, seed: int) -> tuple[list, list[dict], dict]:
    """Return (records in arrival order, labels, topology value) of one log."""
    rng = random.Random(f"blind4|{story_name}|{seed}")
    story = STORIES[story_name](rng, seed)
    fleet = story.fleet
    skew = {n.name: n.skew_s for n in fleet.nodes}
    out: list[tuple[float, str, dict, str]] = []
    epoch = EPOCH_S + 86400.0 * seed + rng.uniform(0, 86400)

    def emit(true_t: float, topic: str, value: dict, node: str) -> None:
        value["ts"] = round(value["ts"] + epoch, 4)
        out.append((true_t, topic, value, node))

    busy_map: dict[tuple[str, int], list[tuple[float, float, object]]] = {}
    for att in story.attempts:
        jobs.run(att, rng, story.faults, lambda n: skew.get(n, 0.0), emit)
        for r in range(att.world):
            node, gpu = att.place(r)[:2]
            busy_map.setdefault((node, gpu), []).append((att.start_t, att.end_t, att))

    def busy(node: str, gpu: int, t: float):
        for a, b, att in busy_map.get((node, gpu), ()):
            if a <= t < b:
                return att
        return None

    for node in fleet.nodes:
        opts = story.options[node.name]
        for r_node, r_t, silent_s, _ in story.resend:
            if r_node == node.name:
                opts.down.append((r_t, r_t + silent_s))
        sample_node(fleet, node, busy, story.faults, opts, rng, story.duration_s, emit)

    # Arrival: a per-node path delay plus jitter, bounded by MAX_DELAY_S.
    path = {n.name: rng.uniform(0.02, 0.6) for n in fleet.nodes}
    arrivals = []
    for i, (true_t, topic, value, node) in enumerate(out):
        arr = true_t + path[node] + min(MAX_DELAY_S - 0.6, rng.expovariate(1 / 0.15))
        arrivals.append((arr, i, topic, value))
        if rng.random() < DUP_RATE:
            arrivals.append((arr + rng.uniform(0.01, 3.0), i, topic, value))
    # A collector restart re-sends the last minute it had buffered (at-least-once), after
    # its silence: duplicates that arrive up to ~80 s after their event time.
    for r_node, r_t, silent_s, back_s in story.resend:
        again = [
            (tt, i, topic, v)
            for i, (tt, topic, v, n) in enumerate(out)
            if n == r_node and topic != "telemetry.step" and r_t - back_s <= tt < r_t
        ]
        for k, (_tt, i, topic, v) in enumerate(sorted(again)):
            arrivals.append((r_t + silent_s + 0.001 * k, i, topic, v))
    arrivals.sort(key=lambda x: (x[0], x[1]))
    labels = [lab for f in story.faults if (lab := f.label()) is not None]
    for lab in labels:
        lab["start_ts"] = round(lab["start_ts"] + epoch, 4)
        lab["end_ts"] = round(lab["end_ts"] + epoch, 4)
    topo = {"format": fleet.topo_format, "text": fleet.topo_text}
    return [(topic, v) for _, _, topic, v in arrivals], labels, topo


def write_log(path: Path, story_name: str, seed: int) -> dict:
    recs, labels, topo = build(story_name, seed)
    with gzip.open(path, "wb", compresslevel=6) as fh:
        fh.write(orjson.dumps({"topic": "topology", "value": topo}) + b"\n")
        for topic, v in recs:
            fh.write(orjson.dumps({"topic": topic, "value": v}) + b"\n")
        for lab in labels:
            fh.write(orjson.dumps({"topic": "labels", "value": lab}) + b"\n")
    return {"path": str(path), "records": len(recs), "labels": len(labels)}



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.blind4.generate", description=__doc__)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--story", choices=sorted(STORIES), default="quiet-hours")
    ap.add_argument("--corpus", action="store_true", help="every story x --seeds")
    ap.add_argument("--seeds", default="0..3")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    todo = (
        [(s, n) for n in parse_seeds(args.seeds) for s in sorted(STORIES)]
        if args.corpus
        else [(args.story, args.seed)]
    )
    for story_name, seed in todo:
        info = write_log(args.out / f"{story_name}-s{seed}.jsonl.gz", story_name, seed)
        print(f"{info['path']}: {info['records']} records, {info['labels']} labels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
