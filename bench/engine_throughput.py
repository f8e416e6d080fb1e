"""In-process engine throughput on an incident log: events/s on one core.

Measures, in one run so the ratios hold on a noisy machine:
  parse   orjson.loads of each line (the floor for any Python consumer of JSON)
  decode  parse + validation into typed records (detector.events)
  engine  Engine.process on already-decoded records (the detection work alone)
  total   decode + engine, as `faultline replay` does it
and the engine's state per GPU tracked (uncompressed snapshot size / GPUs).

    python bench/engine_throughput.py [LOG] [--topology FILE] [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from detector.decoding import decode  # noqa: E402
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


def best_of(repeat: int, fn, clock=time.perf_counter) -> float:  # noqa: ANN001
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def measure(msgs: list[tuple[str, bytes]], topo: Topology | None, repeat: int = 3,
            clock=time.perf_counter) -> dict[str, float]:  # noqa: ANN001
    """Seconds (best of ``repeat``) of each stage over ``msgs``; plus the state per GPU."""
    events = []
    for topic, raw in msgs:
        try:  # noqa: SIM105 - cheaper than contextlib.suppress in a hot loop
            events.append(decode(topic, raw))
        except InvalidMessage:
            pass

    def parse() -> None:
        for _, raw in msgs:
            orjson.loads(raw)

    def decode_all() -> None:
        for topic, raw in msgs:
            try:  # noqa: SIM105 - cheaper than contextlib.suppress in a hot loop
                decode(topic, raw)
            except InvalidMessage:
                pass

    def engine_only() -> None:
        eng = Engine(topology=topo)
        for ev in events:
            eng.process(ev)
        eng.finish()

    def total() -> None:
        eng = Engine(topology=topo)
        for topic, raw in msgs:
            try:  # noqa: SIM105 - cheaper than contextlib.suppress in a hot loop
                eng.process(decode(topic, raw))
            except InvalidMessage:
                pass
        eng.finish()

    stages = (("parse", parse), ("decode", decode_all), ("engine", engine_only),
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
          "engine": "engine (decoded records)", "decode+engine": "decode + engine"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", default=str(DEFAULT_LOG))
    ap.add_argument("--topology", default=str(DEFAULT_TOPOLOGY))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu", action="store_true", help="process CPU time instead of wall "
                    "time: on a shared machine, less of the other tenants in the figures")
    args = ap.parse_args()
    topo = Topology.load(args.topology) if args.topology else None
    msgs = load(Path(args.log))
    n = len(msgs)
    print(f"log: {args.log} ({n:,} telemetry messages)")
    res = measure(msgs, topo, args.repeat, time.process_time if args.cpu else time.perf_counter)
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
