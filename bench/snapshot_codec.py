"""Snapshot format: the data-only codec against pickle on the bundled incident's engine state.

Replays an incident log through one Engine, then times and sizes its state
written by :mod:`detector.statecodec` (unsigned and HMAC-signed) and by
``pickle`` + zlib (what snapshots were before), each the best of ``--repeat``.
It also checks that an engine restored half-way raises exactly the alerts of
an uninterrupted run.

    python bench/snapshot_codec.py [LOG] [--repeat 5]
"""

from __future__ import annotations

import argparse
import contextlib
import pickle
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from detector.engine import Engine  # noqa: E402
from detector.events import TELEMETRY_TOPICS, InvalidMessage, decode_value  # noqa: E402
from detector.statecodec import StateCodec, raw_size  # noqa: E402
from replay.log import log_topology, read_records  # noqa: E402

LOG = ROOT / "replay/incidents/h100-128-all-faults.jsonl.gz"


def events(path: Path) -> list:
    out = []
    for rec in read_records(path):
        if getattr(rec, "topic", None) in TELEMETRY_TOPICS:
            with contextlib.suppress(InvalidMessage):
                out.append(decode_value(rec.topic, rec.value))
    return out


def run(evs: list, topo, split: int | None, codec: StateCodec) -> list[tuple]:
    eng = Engine(topology=topo)
    alerts = []
    for i, ev in enumerate(evs):
        if i == split:
            eng = Engine.restore(eng.snapshot(codec), topo, codec)
        alerts += eng.process(ev)
    alerts += eng.finish()
    return [(a.dedup_key, a.status, a.detected_ts) for a in alerts]


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", default=str(LOG))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    path = Path(args.log)
    topo = log_topology(path)
    evs = events(path)
    eng = Engine(topology=topo)
    for ev in evs:
        eng.process(ev)
    print(f"{path.name}: {len(evs):,} events, engine state at the end: {eng.stats()['gpus']} "
          f"GPUs, {eng.stats()['jobs']} jobs, {eng.stats()['problems']} problems")
    state = {"cfg": eng.cfg, "monitors": eng.monitors, "correlator": eng.correlator}
    plain, signed = StateCodec(), StateCodec(key=b"bench-key")

    def pickled() -> bytes:
        return zlib.compress(pickle.dumps(state, pickle.HIGHEST_PROTOCOL), 1)

    rows = []
    for name, enc, dec in (
            ("pickle + zlib (before)", pickled, lambda b: pickle.loads(zlib.decompress(b))),
            ("statecodec, unsigned", lambda: plain.encode(state, "engine"),
             lambda b: plain.decode(b, "engine")),
            ("statecodec, HMAC-signed", lambda: signed.encode(state, "engine"),
             lambda b: signed.decode(b, "engine"))):
        blob = enc()
        raw = len(zlib.decompress(blob)) if name.startswith("pickle") else raw_size(blob)
        rows.append((name, len(blob), raw, best(enc, args.repeat),
                     best(lambda blob=blob, dec=dec: dec(blob), args.repeat)))
    print("| format | snapshot bytes | uncompressed bytes | encode ms | decode ms |")
    print("|---|---:|---:|---:|---:|")
    for name, size, raw, t_enc, t_dec in rows:
        print(f"| {name} | {size:,} | {raw:,} | {t_enc * 1e3:.1f} | {t_dec * 1e3:.1f} |")
    whole = run(evs, topo, None, plain)
    halves = run(evs, topo, len(evs) // 2, signed)
    print(f"restored half-way: {len(halves)} alerts, uninterrupted: {len(whole)}, "
          f"{'identical' if halves == whole else 'DIFFERENT'}")
    return 0 if halves == whole else 1


if __name__ == "__main__":
    raise SystemExit(main())
