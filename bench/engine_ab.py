"""CPU time of two checkouts' engine and worker, interleaved in one run: a ratio a shared box keeps.

Each round runs, for each checkout in turn (the order alternating round by round), one fresh
process that loads the first ``--prefix`` telemetry records of the bundled incident, warms
up on one pass and then measures the process CPU time of one pass of

  worker  the service's PipelineWorker on the records' message bytes (decode, the
          partitions' monitors, the findings codec, the correlator: bench/pipeline_throughput.py)
  engine  Engine.process_many on the decoded records in chunks of 500 (the batch path)

and prints each round's times and, per part, the median of the rounds' ratios (this checkout
over ``--base``).  Only the ratio is a claim: a time on a box shared with other jobs is not.

    python bench/engine_ab.py --base /tmp/main-archive [--rounds 7] [--prefix 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The inner run, given to ``python -c`` in each checkout (older checkouts have no copy of
# this script; both have bench/pipeline_throughput.py and bench/engine_throughput.py).
INNER = r"""
import gc, json, sys, time
sys.path.insert(0, "bench")
import orjson
from engine_throughput import DEFAULT_LOG, DEFAULT_TOPOLOGY
from pipeline_throughput import partitioned, run_pipeline
from detector.decoding import decode
from detector.engine import Engine
from detector.events import TELEMETRY_TOPICS, InvalidMessage
from detector.topology import Topology
from replay.log import open_log

prefix = int(sys.argv[1])
topo = Topology.load(str(DEFAULT_TOPOLOGY))
msgs = []
telemetry = set(TELEMETRY_TOPICS)
with open_log(DEFAULT_LOG) as f:
    for line in f:
        rec = orjson.loads(line)
        if rec["topic"] in telemetry:
            msgs.append((rec["topic"], orjson.dumps(rec["value"])))
            if len(msgs) == prefix:
                break
events = []
for topic, raw in msgs:
    try:
        events.append(decode(topic, raw))
    except InvalidMessage:
        pass
queues = partitioned(msgs, 8)

def engine():
    eng = Engine(topology=topo)
    for k in range(0, len(events), 500):
        eng.process_many(events[k:k + 500])
    eng.finish()

def worker():
    run_pipeline(queues, topo, 40, 20)

out = {"records": len(msgs)}
for name, fn in (("worker", worker), ("engine", engine)):
    fn()  # (warm: imports, caches, the allocator)
    gc.collect()
    t0 = time.process_time()
    fn()
    out[name] = time.process_time() - t0
print(json.dumps(out))
"""

PARTS = ("worker", "engine")


def run(tree: Path, prefix: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-c", INNER, str(prefix)], cwd=tree, env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the other checkout (e.g. a git archive of "
                    "main)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--prefix", type=int, default=100_000, help="telemetry records of the "
                    "incident")
    ap.add_argument("--json", default=None, help="also write the rounds here")
    args = ap.parse_args()
    arms = {"base": Path(args.base).resolve(), "this": ROOT}
    rounds = []
    for i in range(args.rounds):
        order = ("base", "this") if i % 2 == 0 else ("this", "base")
        res = {arm: run(arms[arm], args.prefix) for arm in order}
        rounds.append(res)
        print(f"round {i + 1} ({' then '.join(order)}): " + "; ".join(
            f"{p} {res['base'][p]:.3f} / {res['this'][p]:.3f} s "
            f"({res['this'][p] / res['base'][p]:.3f})" for p in PARTS), flush=True)
    n = rounds[0]["base"]["records"]
    for p in PARTS:
        ratios = sorted(r["this"][p] / r["base"][p] for r in rounds)
        print(f"{p}: this / base CPU time, median of {len(ratios)} rounds "
              f"{statistics.median(ratios):.3f} (min {ratios[0]:.3f}, max {ratios[-1]:.3f}; "
              f"{n:,} records)")
    if args.json:
        Path(args.json).write_text(json.dumps({"base": str(arms["base"]), "rounds": rounds},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
