"""Writes blind25 incident logs: topology first, telemetry in arrival order, labels last.

    python -m bench.blind25.generate --out DIR --seeds 0..3 [--stories fabric,mixed] [--minutes M]

(15 minutes a log by default.)
Each log is DIR/STORY-sSEED.jsonl.gz (byte-identical for the same arguments); beside it
STORY-sSEED.effects.json lists the routine shapes in it (dcgm-exporter restarting with a gap and
a partial first scrape, a collector's batch delivered 30-90 s late with some rows twice, NIC
driver reloads renaming ports and zeroing counters, a GPU driver reload zeroing DCGM's volatile
counters, a healthy NVLink's few CRC errors, B200s at their cap beside H100s, checkpoint saves)
that should page nobody. Faults: a GPU's NVLink degraded (CRC / replay counters climbing, its
node's tensor-parallel all-reduces slower: comm grows, compute does not), a GPU's PCIe link
trained down under a loader-heavy job (slower in neither compute nor comm; its replay counter
creeping), an NVLink error (XID 74) slowing a pure-DP job's all-reduce, a B200 falling off the
bus (XID 79) mid-step and its job hanging until the watchdog kills it.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

from bench.blind import cli
from bench.blind25.stories import STORIES


def write(out: Path, story: str, seed: int, minutes: float = 15.0) -> Path:
    """Write STORY-sSEED.jsonl.gz (and its .effects.json) into ``out``; returns the log."""
    log, topo = STORIES[story](seed, minutes)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{story}-s{seed}.jsonl.gz"
    recs = sorted(log.recs, key=lambda r: (r[0], r[1]))
    with gzip.GzipFile(path, "wb", mtime=0) as fh:
        def put(topic: str, value: dict) -> None:
            fh.write(json.dumps({"topic": topic, "value": value},
                                separators=(",", ":")).encode() + b"\n")
        put("topology", topo)
        for _, _, topic, value in recs:
            put(topic, value)
        for lab in log.labels.values():
            if not math.isfinite(lab["start_ts"]):
                continue        # a fault whose onset fell past a short log's end
            put("labels", {k: v for k, v in lab.items() if k != "note"})
    effects = sorted(log.effects, key=lambda e: (e["start_ts"], e["effect"]))
    path.with_name(f"{story}-s{seed}.effects.json").write_text(json.dumps(effects, indent=1))
    return path


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, __doc__, STORIES, write)


if __name__ == "__main__":
    raise SystemExit(main())
