"""Writes blind22 incident logs: topology first, telemetry in arrival order, labels last.

    python -m bench.blind22.generate --out DIR --seeds 0..3 [--stories fabric,sched] [--minutes M]

Each log is DIR/STORY-sSEED.jsonl.gz (byte-identical for the same arguments); beside it
STORY-sSEED.effects.json lists the routine shapes in it (a checkpoint storm on shared storage
every 5 min, adaptive routing / ECMP making one spine hot, a pipeline stage's imbalance, a
healthy link's rare symbol errors, an elastic job shrinking and growing with new dp_ranks and
repeated step numbers, a low-priority job preempted mid-step and its nodes reused by another
tenant within seconds, synchronous saves, a lone corrected ECC error) that should page nobody.
Faults: an IB link that flaps once and retrains at 1x width (400 -> 100 Gb/s), a marginal optic
whose symbol errors climb three decades, a node's local NVMe stalling its data loader (slow in
neither compute nor comm; unattributable), a GSP timeout (XID 119) hanging an elastic job until
its watchdog, a GPU whose parameters silently differ from its peers', a GPU whose corrected
errors climb under one tenant and whose row remap fails (XID 64) under the next.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from bench.blind import cli
from bench.blind22.stories import STORIES


def write(out: Path, story: str, seed: int, minutes: float | None = None) -> Path:
    """Generate ``story`` for ``seed`` into ``out``; returns the log's path."""
    fn = STORIES[story]
    topo, sim, faults, effects = fn(seed) if minutes is None else fn(seed, minutes)
    recs = sim.recs
    labels = []
    for f in faults:
        ts = [ts for ts, _, _, tags in recs if f["fault_id"] in tags]
        if not ts:
            continue
        labels.append({"fault_id": f["fault_id"], "kind": f["kind"], "cause": f["cause"],
                       "scope": f["scope"], "start_ts": min(ts), "end_ts": max(ts),
                       "attributable": f["attributable"]})
    rng = np.random.default_rng([22, 9, seed, len(story)])
    arrival = []
    for i, (ts, topic, v, _) in enumerate(recs):
        arr = ts + float(rng.uniform(0.03, 0.6))
        arrival.append((arr, i, topic, v))
        if rng.random() < 0.001:
            arrival.append((arr + float(rng.uniform(0.2, 2.0)), i, topic, v))
    arrival.sort(key=lambda x: (x[0], x[1]))
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{story}-s{seed}.jsonl.gz"
    lines = [{"topic": "topology", "value": topo}]
    lines += [{"topic": topic, "value": v} for _, _, topic, v in arrival]
    lines += [{"topic": "labels", "value": lab} for lab in labels]
    body = "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines).encode()
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="",
                                                compresslevel=6) as fh:
        fh.write(body)
    path.with_name(f"{story}-s{seed}.effects.json").write_text(
        json.dumps(effects, indent=1) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write, minutes=None)


if __name__ == "__main__":
    raise SystemExit(main())
