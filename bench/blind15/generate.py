"""Writes blind15's labelled incident logs.

    python -m bench.blind15.generate --out DIR --seeds 0..3 [--stories pipe,fabric] [--minutes M]

Each log: the topology record first, telemetry in arrival order (as a consumer reads it), the
labels last; `STORY-sSEED.effects.json` beside it lists the routine shapes (what pages nobody).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from bench.blind import cli
from bench.blind15.stories import STORIES
from bench.blind15.world import Log


def save(path: Path, log: Log) -> Path:
    """`log` at `path` (gzip with no timestamp: same seed, same bytes) and its effects."""
    lines = [json.dumps({"topic": "topology", "value": log.topology}, separators=(",", ":"))]
    for _, _, topic, value in sorted(log.records, key=lambda r: (r[0], r[1])):
        lines.append(json.dumps({"topic": topic, "value": value}, separators=(",", ":")))
    for f in log.faults:
        if f.start_ts <= f.end_ts:
            lines.append(json.dumps({"topic": "labels", "value": f.label()},
                                    separators=(",", ":")))
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(("\n".join(lines) + "\n").encode())
    path.with_name(path.name.removesuffix(".jsonl.gz") + ".effects.json").write_text(
        json.dumps(log.effects, indent=1) + "\n")
    return path


def write(out_dir: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    return save(out_dir / f"{story}-s{seed}.jsonl.gz", STORIES[story](seed, minutes))


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
