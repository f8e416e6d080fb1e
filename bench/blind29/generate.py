"""blind29's generator: training whose ranks do not all step together (round 38).

    python -m bench.blind29.generate --out DIR --seeds 0..3 [--stories diloco,async] [--minutes M]

Writes `STORY-sSEED.jsonl.gz` (the topology first, telemetry in arrival order with DESIGN's
disorder, labels last) beside `STORY-sSEED.effects.json` (routine shapes that must page
nobody). Every choice comes from the seed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.blind29 import asyncps, diloco

STORIES = {"diloco": diloco.story, "async": asyncps.story}
T0 = 1_790_000_000.0


def write(out: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    """One story's log for ``seed`` in ``out``; its path."""
    log = STORIES[story](seed, minutes, T0 + seed * 86_400.0)
    return log.save(Path(out), f"{story}-s{seed}")


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("..")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds", default="0..3")
    ap.add_argument("--stories", default=",".join(STORIES))
    ap.add_argument("--minutes", type=float, default=15.0)
    args = ap.parse_args(argv)
    for seed in _seeds(args.seeds):
        for story in args.stories.split(","):
            print(write(args.out, story, seed, args.minutes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
