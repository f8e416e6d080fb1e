"""Writes blind16 incident logs: topology first, telemetry in arrival order, labels last
(blind12's writer, the generators' CLI `bench.blind.cli`).

    python -m bench.blind16.generate --out DIR --seeds 0..3 [--stories overlap,fleet] [--minutes M]

Each log is DIR/STORY-sSEED.jsonl.gz (byte-identical for the same arguments); beside it
STORY-sSEED.effects.json lists the routine shapes in it (communication overlap, a storage
slowdown, a CDU derate, a subnet-manager sweep, a rolling driver update) that should page nobody.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind import cli
from bench.blind12.generate import save
from bench.blind16.stories import STORIES


def write(out_dir: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    world, topo = STORIES[story](seed, minutes)
    return save(out_dir / f"{story}-s{seed}.jsonl.gz", world, topo)


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
