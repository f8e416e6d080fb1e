"""Writes blind17 incident logs: topology first, telemetry in arrival order, labels last
(blind12's writer, the generators' CLI `bench.blind.cli`).

    python -m bench.blind17.generate --out DIR --seeds 0..3 [--stories clocks,names] [--minutes M]

Each log is DIR/STORY-sSEED.jsonl.gz (byte-identical for the same arguments); beside it
STORY-sSEED.effects.json lists the routine shapes in it (a host clock ahead / behind, chrony
stepping it back, a collector naming hosts by FQDN, an NCCL hang, an elastic restart onto a
faster spare) that should page nobody.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind import cli
from bench.blind12.generate import save
from bench.blind17.stories import STORIES


def write(out_dir: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    return save(out_dir / f"{story}-s{seed}.jsonl.gz", *STORIES[story](seed, minutes))


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
