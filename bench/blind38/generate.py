"""Writes blind38's labelled incident logs: rack-scale NVLink domains (NVL72-class racks of 18
four-GPU compute trays), tensor parallelism across trays, the racks' coolant loops.

    python -m bench.blind38.generate --out DIR --seeds 0..3 [--stories tp8,cdu] [--minutes M]

One ``STORY-sSEED.jsonl.gz`` a (seed, story) -- the topology first, telemetry in arrival order
(DESIGN's disorder and duplicates), labels last -- beside ``STORY-sSEED.effects.json`` (the
routine shapes, each "pages nobody"). Deterministic per seed. README.md says what is in them.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind import cli
from bench.blind38.stories import STORIES, build


def write(out: Path, story: str, seed: int, minutes: float | None = 15.0) -> Path:
    """Write one log; its path."""
    world, name = build(story, seed, 15.0 if minutes is None else minutes)
    return world.write(Path(out) / f"{story}-s{seed}.jsonl.gz", name)


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
