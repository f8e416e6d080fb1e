"""Writes blind13's labelled incident logs: topology first, records in *arrival* order, labels last.

    python -m bench.blind13.generate OUT [--story lake|grow|all] [--seeds 0..3] [--minutes 15]

Arrival order is event time plus the lag of the record's Kafka partition (at most 4.8 s:
DESIGN allows 5 s out of order) and a rebalance's re-deliveries; ``STORY-sSEED.effects.json``
beside each log lists the routine shapes (no label: they page nobody).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from bench.blind13 import stories
from replay.evaluation.corpus import parse_seeds


def write(out: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    """Generate one log (deterministic in story, seed and minutes); return its path."""
    if story not in stories.STORIES:
        raise ValueError(f"unknown story {story!r}: one of {stories.STORIES}")
    topo, records, labels, effects = stories.build(story, seed, minutes)
    records.sort(key=lambda r: r[0])
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{story}-s{seed}.jsonl.gz"
    with gzip.GzipFile(path, "wb", mtime=0) as fh:
        def put(topic: str, value: dict) -> None:
            fh.write(json.dumps({"topic": topic, "value": value},
                                separators=(",", ":")).encode() + b"\n")
        put("topology", {"format": "faultline", "text": topo})
        for _, topic, value in records:
            put(topic, value)
        for lab in labels:
            put("labels", lab)
    fx = [{**e, "start_ts": round(e["start_ts"], 3), "end_ts": round(e["end_ts"], 3)}
          for e in effects]
    path.with_name(f"{story}-s{seed}.effects.json").write_text(json.dumps(fx, indent=0))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--story", default="all", choices=(*stories.STORIES, "all"))
    ap.add_argument("--seeds", default="0..3")
    ap.add_argument("--minutes", type=float, default=15.0)
    args = ap.parse_args(argv)
    for story in stories.STORIES if args.story == "all" else (args.story,):
        for seed in parse_seeds(args.seeds):
            print(write(args.out, story, seed, args.minutes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
