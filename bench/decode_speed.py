"""Decode against orjson.loads on an incident log, interleaved: robust to a shared machine.

bench/engine_throughput.py times each stage best-of-N one after the other, so a
neighbour's burst during one stage skews the ratio; here the stages take turns,
``--rounds`` times, each timed in process CPU seconds, and the best of each is
kept.  Stages (all over the same messages):

  parse    orjson.loads of each message (the yardstick of DESIGN.md's decode target)
  decode   the worker's path: chunks of --batch messages, each chunk's messages of one
           topic decoded at once (decoding.decode_chunked; bench/engine_throughput.py's
           decode row), a refused chunk message by message
  decode1  decoding.decode on each message alone

    python bench/decode_speed.py [LOG] [--rounds N] [--batch N] [--limit N]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import engine_throughput as et  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", default=str(et.DEFAULT_LOG))
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--limit", type=int, default=0, help="only the first N messages")
    args = ap.parse_args()
    msgs = et.load(Path(args.log))
    if args.limit:
        msgs = msgs[:args.limit]
    chunks = et.batches(msgs, args.batch)

    parse, decode_batched, decode_one = et.decode_stages(msgs, chunks)
    stages = {"parse": parse, "decode": decode_batched, "decode1": decode_one}
    best = dict.fromkeys(stages, float("inf"))
    for _ in range(args.rounds):
        for name, fn in stages.items():
            gc.collect()
            t0 = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t0)
    n = len(msgs)
    print(f"{n:,} messages, best of {args.rounds} interleaved rounds (process CPU time), "
          f"batches of {args.batch}")
    for name, secs in best.items():
        print(f"  {name:<8} {secs * 1e9 / n:7.0f} ns/message  {n / secs:>10,.0f} messages/s  "
              f"{best['parse'] / secs:5.3f}x orjson.loads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
