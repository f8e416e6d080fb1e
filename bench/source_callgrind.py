"""Instructions per sample record through ``SourcePartition.process``, counted by callgrind.

The worker's path for thermal, NIC and ECC partitions: decode + monitors (the batch path
of detector.quiet, and the record path for what it cannot vouch for).  The first
``--prefix`` records of the bundled incident, samples only, cut by node into
``--partitions`` partitions a topic and fed in batches of ``--batch``, a fresh set of
partitions a pass; imports, loading and partition set-up cancel in the difference:

    (instructions of 3 passes - instructions of 1 pass) / (2 x samples)

    python bench/source_callgrind.py                 # ~2 minutes of CPU
    python bench/source_callgrind.py --record-path   # quiet_run off: every record one by one
    python bench/source_callgrind.py --steps         # the step partitions instead (by job)

``--record-path`` replaces ``quiet_run`` with one that takes nothing, so each sample goes
through ``Monitors.process`` and its unit's ``update`` (what a partition with steps, a
repeated fetch or records out of offset order does).  ``--digest`` prints, instead of a
count, the sha256 of every partition's findings messages, dead letters and state bytes
after the whole incident (no valgrind; compare two trees: the batch path's identity).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SAMPLE_TOPICS = ("telemetry.thermal", "telemetry.nic", "telemetry.ecc")


def batches(prefix: int, partitions: int, size: int, steps: bool = False) -> tuple[list, int]:
    """[(topic, partition, records)] in log order per partition, and the records' count:
    samples keyed by node, or (``steps``) step messages keyed by job."""
    import orjson

    from bench.engine_throughput import DEFAULT_LOG
    from replay.log import open_log

    parts: dict[tuple[str, int], list] = {}
    wanted = ("telemetry.step",) if steps else SAMPLE_TOPICS
    seen = 0
    with open_log(DEFAULT_LOG) as f:
        for line in f:
            rec = orjson.loads(line)
            topic = rec["topic"]
            if topic not in SAMPLE_TOPICS and topic != "telemetry.step":
                continue
            seen += 1
            if prefix and seen > prefix:
                break
            if topic not in wanted:
                continue
            value = rec["value"]
            key = str(value.get("job" if steps else "node", "")).encode()
            recs = parts.setdefault((topic, zlib.crc32(key) % partitions), [])
            recs.append((len(recs), key, orjson.dumps(value), None))
    out = [(topic, p, recs[k:k + size]) for (topic, p), recs in sorted(parts.items())
           for k in range(0, len(recs), size)]
    return out, sum(len(r) for r in parts.values())


def passes(n: int, prefix: int, partitions: int, size: int, record_path: bool,
           steps: bool = False) -> int:
    """The inner run: ``n`` passes of fresh partitions over the batches."""
    import detector.pipeline.source as source

    if record_path:
        source.quiet_run = lambda mon, evs, i, until=0.0: i
    work, samples = batches(prefix, partitions, size, steps)
    for _ in range(n):
        parts = {}
        for topic, p, recs in work:
            part = parts.get((topic, p))
            if part is None:
                part = parts[(topic, p)] = source.SourcePartition(topic, p, 8)
            part.process(recs, 0.0, [], [])
    return samples


def digest(partitions: int, size: int, record_path: bool, steps: bool = False) -> None:
    import detector.pipeline.source as source
    from detector.statecodec import UNSIGNED

    if record_path:
        source.quiet_run = lambda mon, evs, i, until=0.0: i
    work, samples = batches(0, partitions, size, steps)
    parts, emits, dead = {}, {}, {}
    for topic, p, recs in work:
        part = parts.get((topic, p))
        if part is None:
            part = parts[(topic, p)] = source.SourcePartition(topic, p, 8)
            emits[(topic, p)], dead[(topic, p)] = [], []
        part.process(recs, 0.0, emits[(topic, p)], dead[(topic, p)])
    total = hashlib.sha256()
    for key, part in sorted(parts.items()):
        h = hashlib.sha256()
        for e in emits[key]:
            h.update(repr((e.partition, e.key)).encode() + e.value)
        for d in dead[key]:
            h.update(repr(d).encode())
        h.update(UNSIGNED.encode(part.state()))
        total.update(h.digest())
        print(f"{key[0]}:{key[1]} emits {len(emits[key]):>5} dead {len(dead[key])} "
              f"{h.hexdigest()[:16]}")
    print(f"{samples} {'step records' if steps else 'samples'}, all partitions: "
          f"{total.hexdigest()}")


def count(n: int, args: argparse.Namespace, out: Path) -> tuple[int, int]:
    """(instructions, samples) of one inner run under callgrind."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
         __file__, "--passes", str(n), "--prefix", str(args.prefix), "--partitions",
         str(args.partitions), "--batch", str(args.batch),
         *(["--record-path"] if args.record_path else []), *(["--steps"] if args.steps else [])],
        env=env, capture_output=True, text=True, check=True)
    samples = int(run.stdout.split()[-1])
    total = re.search(r"^summary: (\d+)", out.read_text(errors="replace"), re.M)
    assert total is not None, "no summary line in the callgrind output"
    return int(total.group(1)), samples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", type=int, default=60000, help="records of the incident")
    ap.add_argument("--partitions", type=int, default=8, help="partitions a topic")
    ap.add_argument("--batch", type=int, default=500, help="records a fetched batch")
    ap.add_argument("--record-path", action="store_true",
                    help="quiet_run off: every sample through Monitors.process")
    ap.add_argument("--steps", action="store_true", help="the step partitions (by job) "
                    "instead of the samples")
    ap.add_argument("--digest", action="store_true", help="hashes of the whole incident's "
                    "output and state per partition, no valgrind")
    ap.add_argument("--passes", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.passes is not None:
        print(passes(args.passes, args.prefix, args.partitions, args.batch, args.record_path,
                     args.steps))
        return 0
    if args.digest:
        digest(args.partitions, args.batch, args.record_path, args.steps)
        return 0
    with tempfile.TemporaryDirectory(prefix="source-callgrind-") as tmp:
        one, samples = count(1, args, Path(tmp) / "one.out")
        three, _ = count(3, args, Path(tmp) / "three.out")
    path = "record path" if args.record_path else "batch path"
    what = "step records" if args.steps else "samples"
    print(f"{what} through SourcePartition.process ({path}): "
          f"{(three - one) / (2 * samples):,.0f} instructions/record "
          f"({samples:,} {what}, 1 pass {one:,}, 3 passes {three:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
