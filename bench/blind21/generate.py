"""Writes blind21 incident logs: topology first, telemetry in arrival order, labels last.

    python -m bench.blind21.generate --out DIR --seeds 0..3 [--stories facility,model] [--minutes M]

Each log is DIR/STORY-sSEED.jsonl.gz (byte-identical for the same arguments); beside it
STORY-sSEED.effects.json lists the routine shapes in it (a demand-response power cap on a row,
a rolling firmware flash of idle nodes, a warm afternoon on one aisle, a job ending, MoE expert
load moving between ranks, context-parallel ranks reported as data-parallel, an NCCL teardown
and a requeue's cold start, checkpoint saves) that should page nobody. Faults: a node's PSU
failing (HW power brake in bursts), a GPU's heat sink losing contact over tens of minutes, a GPU
falling off the bus (XID 79) under an MoE job, a GPU of a long-context job silently slow.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from bench.blind import cli
from bench.blind21.stories import STORIES, build


def _line(topic: str, value: dict) -> bytes:
    return json.dumps({"topic": topic, "value": value}, separators=(",", ":")).encode() + b"\n"


def write(out: Path, story: str, seed: int, minutes: float | None = None) -> Path:
    """One log (and its effects file) into ``out``; returns the log's path."""
    out.mkdir(parents=True, exist_ok=True)
    b = build(story, seed, minutes)
    log = out / f"{story}-s{seed}.jsonl.gz"
    with gzip.GzipFile(log, "wb", mtime=0) as fh:
        fh.write(_line("topology", b.topology))
        for topic, value in b.records:
            fh.write(_line(topic, value))
        for lab in b.labels:
            fh.write(_line("labels", lab))
    (out / f"{story}-s{seed}.effects.json").write_text(json.dumps(b.effects, indent=1))
    return log


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write, minutes=None, done=True)


if __name__ == "__main__":
    raise SystemExit(main())
