"""blind26: a twenty-sixth blind generator -- 4,096 GPUs at 30 s collectors, where the tails are
everywhere (one 4,096-GPU pretraining job; the same scale shared by many tenants).

    python -m bench.blind26.generate --out DIR --seeds 0..3 [--stories pretrain,tenants]
                                     [--minutes M]

Writes ``STORY-sSEED.jsonl.gz`` (the topology first, telemetry in arrival order -- 30-400 ms
after its time, 0.4 % 0.4-2.5 s late, 0.1 % twice up to 1.5 s later -- labels last) and
``STORY-sSEED.effects.json`` (the routine shapes, each "pages nobody").
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import orjson

from bench.blind import cli
from bench.blind26.stories import STORIES

FORMAT = {"pretrain": "faultline", "tenants": "slurm"}


def _arrival(rng: random.Random, recs: list) -> list:
    out = []
    for i, (ts, topic, v) in enumerate(recs):
        u = rng.random()
        late = rng.uniform(0.4, 2.5) if u < 0.004 else rng.uniform(0.03, 0.4)
        out.append((ts + late, i, topic, v))
        if rng.random() < 0.001:
            out.append((ts + late + rng.uniform(0.2, 1.5), i, topic, v))
    out.sort(key=lambda x: (x[0], x[1]))
    return out


def write(out: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    """Writes one story's log (and its effects) into ``out``; returns the log's path."""
    out.mkdir(parents=True, exist_ok=True)
    topo, log = STORIES[story](seed, minutes)
    rng = random.Random(f"blind26-arrival-{story}-{seed}")
    recs = sorted(log.recs, key=lambda r: (r[0], r[1], r[2].get("node", ""),
                                           r[2].get("rank", r[2].get("gpu", -1)),
                                           r[2].get("nic", "")))
    path = out / f"{story}-s{seed}.jsonl.gz"
    with gzip.GzipFile(path, "wb", mtime=0, compresslevel=5) as fh:
        fh.write(orjson.dumps({"topic": "topology", "value": {"format": FORMAT[story],
                                                               "text": topo}}) + b"\n")
        for _, _, topic, v in _arrival(rng, recs):
            fh.write(orjson.dumps({"topic": topic, "value": v}) + b"\n")
        for lab in log.labels:
            fh.write(orjson.dumps({"topic": "labels", "value": lab}) + b"\n")
    fx = sorted(log.effects, key=lambda e: (e["start_ts"], e["effect"],
                                            json.dumps(e["scope"], sort_keys=True)))
    (out / f"{story}-s{seed}.effects.json").write_text(json.dumps(fx, indent=0) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
