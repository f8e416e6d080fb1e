"""Writes blind23 incident logs: topology first, telemetry in arrival order, labels last.

    python -m bench.blind23.generate --out DIR --seeds 0..3 [--stories fleet,loop] [--minutes M]

Each log is DIR/STORY-sSEED.jsonl.gz (byte-identical for the same arguments); beside it
STORY-sSEED.effects.json lists the routine shapes in it (a mixed fleet's per-type normal, a
rolling driver upgrade, a crash requeued from its checkpoint onto other nodes with a container
5 % slower, Python GC pauses, rank 0's logging, saves, a warm rack, a CDU pump switchover, a
slower pipeline stage) that should page nobody. Faults: a GPU stuck at a low clock after its
node's upgrade, a NUMA mis-binding starving half a node's loaders, an L40S node's fan failing,
a rack's CDU losing flow (four nodes throttling together), one node's coolant flow restricted, a
host CPU thermal-throttling while its GPUs look healthy.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from bench.blind import cli
from bench.blind23.stories import STORIES


def _dump(rec: dict) -> bytes:
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


def write(out: Path, story: str, seed: int, minutes: float = 18.0) -> Path:
    """Generate one log (and its effects file) into ``out``; returns the log's path."""
    sim, faults, fmt, topo = STORIES[story](seed, minutes)
    rng = np.random.default_rng([23, 9, seed, len(story)])
    arrivals = []
    for i, (ts, topic, value, _) in enumerate(sim.records):
        arr = ts + float(rng.uniform(0.03, 0.5))
        arrivals.append((arr, i, topic, value))
        if rng.random() < 0.001:       # at-least-once delivery: a second copy
            arrivals.append((arr + float(rng.uniform(0.2, 2.0)), i, topic, value))
    arrivals.sort(key=lambda x: (x[0], x[1]))
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{story}-s{seed}.jsonl.gz"
    lines = [_dump({"topic": "topology", "value": {"format": fmt, "text": topo}})]
    lines += [_dump({"topic": topic, "value": value}) for _, _, topic, value in arrivals]
    lines += [_dump({"topic": "labels", "value": lab}) for lab in sim.labels(faults)]
    with gzip.GzipFile(path, "wb", compresslevel=6, mtime=0) as fh:
        fh.write(b"".join(lines))
    (out / f"{story}-s{seed}.effects.json").write_text(json.dumps(sim.effects, indent=1))
    return path


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write, minutes=18.0, done=True)


if __name__ == "__main__":
    raise SystemExit(main())
