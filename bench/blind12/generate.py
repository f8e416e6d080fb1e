"""Writes blind12 incident logs: topology first, telemetry in event-time order, labels last.

    python -m bench.blind12.generate --out DIR --seeds 0..3 [--stories nvl72,pool] [--minutes M]

Each log is DIR/STORY-sSEED.jsonl.gz (byte-identical for the same arguments); beside it
STORY-sSEED.effects.json lists the routine shapes in it (cold starts, checkpoints, loss-scale
skips, a tenant's XID 13) that should page nobody, with their spans, to explain a false positive.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from bench.blind12.stories import STORIES
from replay.evaluation.corpus import parse_seeds


def write(out_dir: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    world, topo = STORIES[story](seed, minutes)
    return save(out_dir / f"{story}-s{seed}.jsonl.gz", world, topo)


def save(path: Path, world, topo: str) -> Path:
    """``world``'s log at ``path`` (topology, its records in (arrival, sequence) order, the
    labels its faults touched) and its routine shapes at ``path``'s ``.effects.json``; blind14's
    writer too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = "slurm" if topo.startswith("SwitchName") else "faultline"
    lines = [{"topic": "topology", "value": {"format": fmt, "text": topo}}]
    lines += [{"topic": topic, "value": value}
              for _, _, topic, value in sorted(world.records, key=lambda r: (r[0], r[1]))]
    lines += [{"topic": "labels", "value": lab.value()} for lab in world.labels
              if lab.start_ts is not None]
    with gzip.GzipFile(path, "wb", mtime=0) as fh:
        for rec in lines:
            fh.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
    effects = sorted(world.effects, key=lambda e: e["start_ts"])
    name = path.name.removesuffix(".jsonl.gz")
    path.with_name(f"{name}.effects.json").write_text(json.dumps(effects, indent=1))
    return path


def main(argv: list[str] | None = None, doc: str = __doc__, stories=STORIES, write=write) -> int:
    """The CLI over ``stories`` and ``write`` (blind14's too)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds", default="0", help="A..B or A,B,C")
    ap.add_argument("--stories", default=",".join(stories))
    ap.add_argument("--minutes", type=float, default=15.0)
    args = ap.parse_args(argv)
    for seed in parse_seeds(args.seeds):
        for story in args.stories.split(","):
            path = write(args.out, story, seed, args.minutes)
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
