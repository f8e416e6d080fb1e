"""blind27's writer and command line: one labelled incident log a story and seed.

    python -m bench.blind27.generate --out DIR --seeds 0..3 [--stories spot,serve] [--minutes M]

Each log is `STORY-sSEED.jsonl.gz` (the topology first, telemetry in arrival order within
DESIGN's 5 s of disorder, labels last) beside `STORY-sSEED.effects.json` (the routine shapes,
each `"expect": "pages nobody"`).
"""

from __future__ import annotations

from pathlib import Path

from bench.blind import cli
from bench.blind27.stories import STORIES


def write(out: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    """Generate ``story`` at ``seed`` into ``out``; the log's path."""
    return STORIES[story](seed, minutes).write(Path(out) / f"{story}-s{seed}.jsonl.gz")


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
