"""Writes blind12 incident logs: topology first, telemetry in event-time order, labels last.

    python -m bench.blind12.generate --out DIR --seeds 0..3 [--stories nvl72,pool] [--minutes M]

Each log is DIR/STORY-sSEED.jsonl.gz (byte-identical for the same arguments); beside it
STORY-sSEED.effects.json lists the routine shapes in it (cold starts, checkpoints, loss-scale
skips, a tenant's XID 13) that should page nobody, with their spans, to explain a false positive.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from bench.blind import cli
from bench.blind12.stories import STORIES


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


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
