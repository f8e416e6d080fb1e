"""blind31: multimodal training whose work follows its data -- a vision-language model and a
video diffusion model.

    python -m bench.blind31.generate --out DIR --seeds 0..3 [--stories vlm,diffusion]
        [--minutes M]

Each (story, seed) is ``STORY-sSEED.jsonl.gz`` (topology first, telemetry in arrival order,
labels last) beside ``STORY-sSEED.effects.json`` (routine shapes that must page nobody).
"""

from __future__ import annotations

from pathlib import Path

from bench.blind import cli
from bench.blind31.stories import STORIES


def write(out: Path, story: str, seed: int, minutes: float | None = 15.0) -> Path:
    """Write one log; its path."""
    log, topo = STORIES[story](seed, int(round((minutes or 15.0) * 60)))
    return log.write(Path(out) / f"{story}-s{seed}.jsonl.gz", topo)


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
