"""Writes blind24 incident logs: topology first, telemetry in arrival order, labels last.

    python -m bench.blind24.generate --out DIR --seeds 0..3 [--stories drift,churn] [--minutes M]

Each log is DIR/STORY-sSEED.jsonl.gz (byte-identical for the same arguments); beside it
STORY-sSEED.effects.json lists the routine shapes in it (an elastic job losing a node and taking
it back with its ranks renumbered and every rank's share changed, a GPU ageing 0.3-0.5 % per 10
min, one node's clock stepped back 2-4 s by NTP and later forward, a bad batch on every replica,
a hyper-parameter sweep churning 1-2-node jobs of minutes, inference servers' bursty power with
no steps, eval passes, saves, a stage's imbalance) that should page nobody. Faults: a GPU's draw
creeping up until its power cap takes its clock (a drift), a GPU's compute drifting up with
nothing in its telemetry, a GPU computing wrong once every 50-150 steps, a GPU whose HBM runs hot
under each job that lands on it, an inference GPU throttling (0x20 / 0x40) in its bursts only.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from bench.blind import cli
from bench.blind24.stories import STORIES, build


def _dumps(rec: dict) -> bytes:
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


def write(out: Path, story: str, seed: int, minutes: float = 18.0) -> Path:
    """Write one log (and its effects file); return the log's path."""
    topo, rec, labels, effects = build(story, seed, minutes)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{story}-s{seed}.jsonl.gz"
    with gzip.GzipFile(path, "wb", mtime=0, compresslevel=6) as fh:
        fh.write(_dumps({"topic": "topology", "value": topo}))
        for _, _, topic, value in sorted(rec.recs, key=lambda r: (r[0], r[1])):
            fh.write(_dumps({"topic": topic, "value": value}))
        for lab in labels:
            if lab.start_ts <= lab.end_ts:
                fh.write(_dumps({"topic": "labels", "value": lab.value()}))
    path.with_name(f"{story}-s{seed}.effects.json").write_text(json.dumps(effects, indent=1))
    return path


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write, minutes=18.0, done=True)


if __name__ == "__main__":
    raise SystemExit(main())
