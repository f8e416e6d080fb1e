"""blind29's generator: training whose ranks do not all step together (round 38).

    python -m bench.blind29.generate --out DIR --seeds 0..3 [--stories diloco,async] [--minutes M]

Writes `STORY-sSEED.jsonl.gz` (the topology first, telemetry in arrival order with DESIGN's
disorder, labels last) beside `STORY-sSEED.effects.json` (routine shapes that must page
nobody). Every choice comes from the seed.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind import cli
from bench.blind29 import asyncps, diloco

STORIES = {"diloco": diloco.story, "async": asyncps.story}
T0 = 1_790_000_000.0


def write(out: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    """One story's log for ``seed`` in ``out``; its path."""
    log = STORIES[story](seed, minutes, T0 + seed * 86_400.0)
    return log.save(Path(out), f"{story}-s{seed}")


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
