"""Writes blind37's labelled incident logs: hybrid-sharded data parallelism (HSDP) with
overlapped communication, sharded within a node and across a node pair.

    python -m bench.blind37.generate --out DIR --seeds 0..3 [--stories node8,pair16] \
        [--minutes M]

One ``STORY-sSEED.jsonl.gz`` a (seed, story) -- the topology first, telemetry in arrival order
(DESIGN's disorder and duplicates), labels last -- beside ``STORY-sSEED.effects.json`` (the
routine shapes, each "pages nobody"). Deterministic per seed. README.md says what is in them.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind import cli
from bench.blind37.stories import STORIES, build


def write(out: Path, story: str, seed: int, minutes: float | None = 15.0) -> Path:
    """Write one log; its path."""
    return build(story, seed, 15.0 if minutes is None else minutes).write(
        Path(out) / f"{story}-s{seed}.jsonl.gz")


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
