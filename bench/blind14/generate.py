"""Writes blind14 incident logs: topology first, telemetry in arrival order, labels last.

blind12's writer (`bench.blind12.generate.save`) and the generators' CLI (`bench.blind.cli`).

    python -m bench.blind14.generate --out DIR --seeds 0..3 [--stories fleet,pipe] [--minutes M]

Each log is DIR/STORY-sSEED.jsonl.gz (byte-identical for the same arguments); beside it
STORY-sSEED.effects.json lists the routine shapes in it (checkpoints, GC pauses, the hot GPU,
DCGM blank sentinels, the second NTP source) that should page nobody, with their spans.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind import cli
from bench.blind12.generate import save
from bench.blind14.stories import STORIES


def write(out_dir: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    world, topo = STORIES[story](seed, minutes)
    return save(out_dir / f"{story}-s{seed}.jsonl.gz", world, topo)


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
