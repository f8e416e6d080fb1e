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

import argparse
import gzip
import json
from pathlib import Path

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


def _seeds(text: str) -> list[int]:
    if ".." in text:
        a, b = text.split("..")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds", default="0..3")
    ap.add_argument("--stories", default=",".join(STORIES))
    ap.add_argument("--minutes", type=float, default=18.0)
    args = ap.parse_args(argv)
    for seed in _seeds(args.seeds):
        for story in args.stories.split(","):
            path = write(args.out, story, seed, args.minutes)
            print(path)
    (args.out / ".done").write_text("")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
