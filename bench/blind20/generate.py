"""Writes blind20 incident logs: topology first, telemetry in arrival order, labels last.

    python -m bench.blind20.generate --out DIR --seeds 0..3 [--stories fabric,board] [--minutes M]

Each log is DIR/STORY-sSEED.jsonl.gz (byte-identical for the same arguments); beside it
STORY-sSEED.effects.json lists the routine shapes in it (a shared file system stalling every
job's checkpoint at once, DCQCN's everyday CNPs, a flapping port's collateral step stalls, a
warm aisle, a cooling loss's idle node, SBE trickles, a pipeline stage's imbalance, a cold
start) that should page nobody. Faults: a NIC trained at PCIe x8 under a job that starts on it,
a flapping port, a PCIe switch replaying on its two GPUs, an SBE storm ending in a row remap,
a rack's lost rear-door cooling.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from bench.blind import cli
from bench.blind20.stories import STORIES
from bench.blind20.world import T0


def _line(rec: dict) -> bytes:
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


def write(out: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    """Generate one log (and its effects file) into ``out``; return the log's path."""
    rng = random.Random(f"blind20:{story}:{seed}")
    t0 = T0 + 86400.0 * seed + rng.uniform(0, 3600)
    st = STORIES[story](rng, t0, minutes * 60.0, seed)
    out.mkdir(parents=True, exist_ok=True)
    log = out / f"{story}-s{seed}.jsonl.gz"
    with gzip.GzipFile(log, "wb", mtime=0) as fh:
        fh.write(_line({"topic": "topology", "value": st.topology}))
        for _arr, _seq, topic, value in sorted(st.records, key=lambda r: (r[0], r[1])):
            fh.write(_line({"topic": topic, "value": value}))
        for lab in st.labels:
            fh.write(_line({"topic": "labels", "value": lab}))
    (out / f"{story}-s{seed}.effects.json").write_text(json.dumps(st.effects, indent=1) + "\n")
    return log


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
