"""In-process engine throughput on an incident log: events/s on one core.

Measures, in one run so the ratios hold on a noisy machine:
  parse   orjson.loads of each line (the floor for any Python consumer of JSON)
  decode  parse + validation into typed records (detector.events), as the worker does it:
          the log in chunks of --batch messages (a fetched batch), each chunk's messages of
          one topic decoded at once (decoding.decode_chunked: chunks of ~32), a chunk it
          refuses message by message; "decode, one a call" is decoding.decode on each message alone
  engine  Engine.process on already-decoded records (the detection work alone)
  engine, batched  the same records through Engine.process_many in chunks of --batch (runs of
          healthy samples in one loop, detector.quiet; the same alerts and state)
  total   decode + engine, as `faultline replay` does it
and the engine's state per GPU tracked (uncompressed snapshot size / GPUs).

    python bench/engine_throughput.py [LOG] [--topology FILE] [--repeat N] [--batch N]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from detector.decoding import decode, decode_chunked  # noqa: E402
from detector.engine import Engine  # noqa: E402
from detector.events import TELEMETRY_TOPICS, InvalidMessage  # noqa: E402
from detector.statecodec import raw_size  # noqa: E402
from detector.topology import Topology  # noqa: E402
from replay.log import open_log  # noqa: E402

DEFAULT_LOG = ROOT / "replay" / "incidents" / "h100-128-all-faults.jsonl.gz"
DEFAULT_TOPOLOGY = ROOT / "topologies" / "h100-128.topo"


def load(path: Path) -> list[tuple[str, bytes]]:
    """(topic, value bytes) of every telemetry record, as a Kafka consumer would see them."""
    out = []
    telemetry = set(TELEMETRY_TOPICS)
    with open_log(path) as f:
        for line in f:
            rec = orjson.loads(line)
            if rec["topic"] in telemetry:
                out.append((rec["topic"], orjson.dumps(rec["value"])))
    return out


def batches(msgs: list[tuple[str, bytes]], size: int) -> list[tuple[str, list[bytes]]]:
    """The messages as a worker is handed them: chunks of ``size`` in log order, by topic."""
    out: list[tuple[str, list[bytes]]] = []
    for i in range(0, len(msgs), size):
        by_topic: dict[str, list[bytes]] = {}
        for topic, raw in msgs[i:i + size]:
            by_topic.setdefault(topic, []).append(raw)
        out.extend(by_topic.items())
    return out


def decode_batch(topic: str, raws: list[bytes]) -> list[Any]:
    """What the worker makes of one batch (SourcePartition.process): decode_chunked, and
    decode() for each message it leaves undecided; None for an invalid message."""
    evs: list[Any] = decode_chunked(topic, raws)
    if None not in evs:
        return evs
    for k, raw in enumerate(raws):
        if evs[k] is None:
            try:  # noqa: SIM105 - cheaper than contextlib.suppress in a hot loop
                evs[k] = decode(topic, raw)
            except InvalidMessage:
                pass
    return evs


def decode_stages(msgs: list[tuple[str, bytes]], chunks: list[tuple[str, list[bytes]]]
                  ) -> tuple[Callable[[], None], Callable[[], None], Callable[[], None]]:
    """The three parse/decode passes timed here and in decode_speed.py: orjson.loads
    alone, the worker's batched decode, and decode() one message a call."""
    def parse() -> None:
        for _, raw in msgs:
            orjson.loads(raw)

    def decode_batched() -> None:
        for topic, raws in chunks:
            decode_batch(topic, raws)

    def decode_one() -> None:
        for topic, raw in msgs:
            try:  # noqa: SIM105 - cheaper than contextlib.suppress in a hot loop
                decode(topic, raw)
            except InvalidMessage:
                pass

    return parse, decode_batched, decode_one


def best_of(repeat: int, fn, clock=time.perf_counter) -> float:  # noqa: ANN001
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def measure(msgs: list[tuple[str, bytes]], topo: Topology | None, repeat: int = 3,
            clock=time.perf_counter, batch: int = 500) -> dict[str, float]:  # noqa: ANN001
    """Seconds (best of ``repeat``) of each stage over ``msgs``; plus the state per GPU."""
    chunks = batches(msgs, batch)
    events = []
    for topic, raw in msgs:
        try:  # noqa: SIM105 - cheaper than contextlib.suppress in a hot loop
            events.append(decode(topic, raw))
        except InvalidMessage:
            pass

    parse, decode_all, decode_one = decode_stages(msgs, chunks)

    def engine_only() -> None:
        eng = Engine(topology=topo)
        for ev in events:
            eng.process(ev)
        eng.finish()

    def engine_batched() -> None:
        eng = Engine(topology=topo)
        for k in range(0, len(events), batch):
            eng.process_many(events[k:k + batch])
        eng.finish()

    def total() -> None:
        eng = Engine(topology=topo)
        for topic, raw in msgs:
            try:  # noqa: SIM105 - cheaper than contextlib.suppress in a hot loop
                eng.process(decode(topic, raw))
            except InvalidMessage:
                pass
        eng.finish()

    stages = (("parse", parse), ("decode", decode_all), ("decode1", decode_one),
              ("engine", engine_only), ("engine_many", engine_batched),
              ("decode+engine", total))
    out = {name: best_of(repeat, fn, clock) for name, fn in stages}
    eng = Engine(topology=topo)
    for ev in events:
        eng.process(ev)
    snap = eng.snapshot()
    out["gpus"] = eng.monitors.tracked_gpus()
    out["state_bytes"] = raw_size(snap)
    out["snapshot_bytes"] = len(snap)
    return out


LABELS = {"parse": "parse (orjson only)", "decode": "decode (parse + validate)",
          "decode1": "decode, one message a call",
          "engine": "engine (decoded records)", "engine_many": "engine, process_many",
          "decode+engine": "decode + engine"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", default=str(DEFAULT_LOG))
    ap.add_argument("--topology", default=str(DEFAULT_TOPOLOGY))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch", type=int, default=500, help="messages a fetched batch holds "
                    "(all topics; the worker decodes each topic's share at once)")
    ap.add_argument("--cpu", action="store_true", help="process CPU time instead of wall "
                    "time: on a shared machine, less of the other tenants in the figures")
    args = ap.parse_args()
    topo = Topology.load(args.topology) if args.topology else None
    msgs = load(Path(args.log))
    n = len(msgs)
    print(f"log: {args.log} ({n:,} telemetry messages)")
    res = measure(msgs, topo, args.repeat, time.process_time if args.cpu else time.perf_counter,
                  args.batch)
    for name, label in LABELS.items():
        secs = res[name]
        print(f"  {label:<28} {n / secs:>12,.0f} events/s  ({secs * 1e6 / n:6.2f} us/event)")
    gpus, raw_state = int(res["gpus"]), int(res["state_bytes"])
    print(f"  state: {gpus} GPUs tracked, snapshot {raw_state:,} bytes uncompressed "
          f"({raw_state / max(gpus, 1):,.0f} B/GPU), {int(res['snapshot_bytes']):,} bytes "
          f"compressed")
    return 0

if __name__ == "__main__":
    sys.exit(main())
