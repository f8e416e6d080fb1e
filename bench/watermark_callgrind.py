"""Instructions a hand-over spends on its watermarks message, counted by callgrind: main's (every
source's own clock) against round 11's (every source's at-its-end check and reported clock,
PipelineWorker._watermarks), 32 sources after the bundled incident's first 60,000 records:

    for m in "old 1" "old 2001" "new 1" "new 2001"; do set -- $m
        valgrind --tool=callgrind --callgrind-out-file=/tmp/wm-$1-$2.out \\
            python bench/watermark_callgrind.py $1 $2 2>&1 | grep Collected; done

(instructions of 2,001 calls - of 1) / 2,000 = one hand-over's.
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from detector.events import STEP, TELEMETRY_TOPICS  # noqa: E402
from detector.pipeline.source import watermarks  # noqa: E402
from detector.pipeline.worker import PipelineWorker, WorkerOutput  # noqa: E402
from replay.log import Record, read_records  # noqa: E402


def main() -> int:
    mode, calls = sys.argv[1], int(sys.argv[2])
    w = PipelineWorker(telemetry_topics={t: t for t in TELEMETRY_TOPICS}, findings_topic="f",
                       findings_partitions=1)
    w.sources = {(t, p): w.new_partition((t, p), 0.0)  # type: ignore[misc]
                 for t in TELEMETRY_TOPICS for p in range(8)}
    by: dict[tuple[str, int], list[tuple[int, bytes, bytes, int]]] = {}
    n = 0
    for rec in read_records(ROOT / "replay" / "incidents" / "h100-128-all-faults.jsonl.gz"):
        if isinstance(rec, Record) and rec.topic in TELEMETRY_TOPICS:
            key = str(rec.value["job" if rec.topic == STEP else "node"]).encode()
            recs = by.setdefault((rec.topic, zlib.crc32(key) % 8), [])
            recs.append((len(recs), key, orjson.dumps(rec.value), 1_796_000_000_000 + n // 100))
            n += 1
            if n >= 60_000:
                break
    for tp, recs in by.items():
        w._telemetry(tp, recs, 0.0, lambda tp, off: True, 1000.0, WorkerOutput())

    def at_end(tp: object, offset: int) -> float:
        return 1_796_000_000.7

    for _ in range(calls):
        if mode == "old":
            watermarks(w.sources.values(), 0.0, w.hold_back_s)
        else:
            w._note_ends(at_end)
            w._watermarks(0.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
