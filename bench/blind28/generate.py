"""blind28's writer and command line: one labelled incident log a story and seed.

    python -m bench.blind28.generate --out DIR --seeds 0..3 [--stories packed,spread] [--minutes M]

Each log is `STORY-sSEED.jsonl.gz` (the topology first, telemetry in arrival order within
DESIGN's 5 s of disorder, labels last) beside `STORY-sSEED.effects.json` (the routine shapes,
each `"expect": "pages nobody"`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.blind28.stories import STORIES


def write(out: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    """Generate ``story`` at ``seed`` into ``out``; the log's path."""
    return STORIES[story](seed, minutes).write(Path(out) / f"{story}-s{seed}.jsonl.gz")


def _seeds(text: str) -> list[int]:
    a, _, b = text.partition("..")
    return list(range(int(a), int(b or a) + 1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds", default="0..3", help="A..B or N")
    ap.add_argument("--stories", default=",".join(STORIES))
    ap.add_argument("--minutes", type=float, default=15.0)
    args = ap.parse_args(argv)
    for seed in _seeds(args.seeds):
        for story in args.stories.split(","):
            print(write(args.out, story, seed, args.minutes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
