"""How long a fetch round takes in a second thread while the worker's handler is busy, by the
interpreter's GIL switch interval (detector.service.app.SWITCH_INTERVAL_S).

A ``faultline serve`` worker has two Python threads: the handler (decode, Monitors, the
correlator over fetched batches: CPU-bound) and aiokafka's consumer thread, whose fetch
round is mostly I/O -- every socket read and write and every loop wake-up gives the GIL up
and must take it back, waiting up to a whole switch interval (CPython's default 5 ms) while
the handler holds it.  This measures that, without Kafka, so it reads on a loaded box:

- the main thread runs the worker's pipeline (:class:`PipelineWorker`) over the bundled
  incident in batches of ``--batch`` records, as fast as it can (events/s: the cost side);
- a second thread runs an asyncio loop that asks a server process for ``--response-kib``
  KiB (the server waits ``--server-wait-ms`` before it answers, as the broker's
  fetch.max.wait does) and reads the answer with ``StreamReader.readexactly``, as
  aiokafka reads a fetch response, then asks again: the round trip's wall time, p50 / p99,
  less the server's wait, is what the fetch costs the consumer thread;

switch intervals alternating every ``--seconds``, ``--rounds`` times each, and once with
the main thread idle (the floor).

    PYTHONPATH=$PWD python bench/gil_convoy.py [--intervals 0.005,0.001] [--rounds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import socket
import struct
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from detector.events import STEP, TELEMETRY_TOPICS  # noqa: E402
from detector.pipeline.worker import PipelineWorker  # noqa: E402
from replay.log import Record, read_records  # noqa: E402

LOG = ROOT / "replay" / "incidents" / "h100-128-all-faults.jsonl.gz"
PARTS = 8


def serve(sock: socket.socket, wait_s: float) -> None:
    """The server process: for each 4-byte size asked, wait, then send that many bytes."""
    conn, _ = sock.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    blob = b"x" * (64 << 20)
    while True:
        head = b""
        while len(head) < 4:
            got = conn.recv(4 - len(head))
            if not got:
                return
            head += got
        (n,) = struct.unpack("!I", head)
        time.sleep(wait_s)
        conn.sendall(memoryview(blob)[:n])


def records() -> list[tuple[tuple[str, int], tuple[int, bytes | None, bytes, int]]]:
    """The bundled incident as (partition, (offset, key, value, arrival ms)) in log order."""
    out = []
    offsets: dict[tuple[str, int], int] = {}
    t0 = None
    for rec in read_records(LOG):
        if isinstance(rec, Record) and rec.topic in TELEMETRY_TOPICS:
            key = str(rec.value["job" if rec.topic == STEP else "node"]).encode()
            tp = (rec.topic, zlib.crc32(key) % PARTS)
            off = offsets[tp] = offsets.get(tp, -1) + 1
            ts = float(rec.value["ts"])
            t0 = ts if t0 is None else t0
            out.append((tp, (off, key, orjson.dumps(rec.value), int(1e3 * (ts - t0)))))
    return out


class Handler:
    """The worker's pipeline over the incident, batch after batch (a fresh worker per pass)."""

    def __init__(self, recs: list[Any], batch: int) -> None:
        self.recs, self.batch = recs, batch
        self.tps = sorted({tp for tp, _ in recs})
        self.k = len(recs)
        self.w: PipelineWorker | None = None

    def _fresh(self) -> None:
        w = PipelineWorker(telemetry_topics={t: t for t in TELEMETRY_TOPICS},
                           findings_topic="f", findings_partitions=1,
                           expected_sources=[f"{t}:{p}" for t, p in self.tps],
                           local_findings=True, wall_clock=None)
        w.sources = {tp: w.new_partition(tp, 0.0) for tp in self.tps}  # type: ignore[misc]
        w.correlators = {("f", 0): w.new_partition(("f", 0), 0.0)}  # type: ignore[misc]
        self.w, self.k = w, 0

    def step(self) -> int:
        """One batch; how many records."""
        if self.w is None or self.k >= len(self.recs):
            self._fresh()
        assert self.w is not None
        part = self.recs[self.k:self.k + self.batch]
        self.k += len(part)
        by_tp: dict[Any, list[Any]] = {}
        for tp, r in part:
            by_tp.setdefault(tp, []).append(r)
        now = part[-1][1][3] / 1e3
        self.w.process(by_tp, now, lambda tp, off: True, arrivals_per_s=1000.0)
        return len(part)


def fetcher(port: int, size: int, wait_s: float, out: list[float], stop: threading.Event
            ) -> None:
    """The consumer thread's part: ask, read the answer, ask again; round trips in ``out``."""
    async def run() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.transport.get_extra_info("socket").setsockopt(
            socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        req = struct.pack("!I", size)
        while not stop.is_set():
            t = time.perf_counter()
            writer.write(req)
            await writer.drain()
            await reader.readexactly(size)
            out.append(time.perf_counter() - t - wait_s)
        writer.close()

    asyncio.run(run())


def arm(port: int, args: argparse.Namespace, handler: Handler | None, interval: float
        ) -> dict[str, Any]:
    """One measured span: (round trips p50 / p99 / max ms, rounds, handler events/s)."""
    sys.setswitchinterval(interval)
    trips: list[float] = []
    stop = threading.Event()
    th = threading.Thread(target=fetcher, args=(port, args.response_kib << 10,
                                                args.server_wait_ms / 1e3, trips, stop))
    th.start()
    n = 0
    t0 = time.perf_counter()
    end = t0 + args.seconds
    cpu0 = time.thread_time()
    while time.perf_counter() < end:
        if handler is None:
            time.sleep(0.01)
        else:
            n += handler.step()
    secs = time.perf_counter() - t0
    cpu = time.thread_time() - cpu0
    stop.set()
    th.join()
    trips.sort()

    def pct(p: float) -> float:
        return 1e3 * trips[min(len(trips) - 1, int(p / 100 * len(trips)))] if trips else 0.0

    return {"interval": interval, "busy": handler is not None, "rounds": len(trips),
            "p50": pct(50), "p90": pct(90), "p99": pct(99), "max": 1e3 * max(trips, default=0),
            "events_s": n / secs, "handler_cpu_us_event": 1e6 * cpu / n if n else None,
            "load": os.getloadavg()[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--intervals", default="0.005,0.001", help="switch intervals, s")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--batch", type=int, default=2000, help="records a hand-over")
    ap.add_argument("--response-kib", type=int, default=256)
    ap.add_argument("--server-wait-ms", type=float, default=10.0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    intervals = [float(x) for x in args.intervals.split(",")]
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(8)
    port = lsock.getsockname()[1]
    pid = os.fork()  # before any thread: the server is a process of its own
    if pid == 0:
        try:
            while True:
                serve(lsock, args.server_wait_ms / 1e3)
        finally:
            os._exit(0)
    lsock.close()
    rows = []
    try:
        handler = Handler(records(), args.batch)
        gc.collect()
        gc.freeze()  # the loaded log out of the collector's scans, as the worker's start-up
        for _ in range(2):  # warm: the first pass builds the Monitors' state
            handler.step()
        for k in range(args.rounds):
            for interval in intervals:
                rows.append(arm(port, args, handler, interval))
                print(json.dumps({"round": k, **rows[-1]}), flush=True)
        for interval in intervals:
            rows.append(arm(port, args, None, interval))
            print(json.dumps({"round": "idle", **rows[-1]}), flush=True)
    finally:
        os.kill(pid, 15)
        os.waitpid(pid, 0)
    print(f"\n| switch interval | handler | fetch round trip p50 / p90 / p99 / max ms "
          f"(less the server's {args.server_wait_ms:.0f} ms) | rounds | handler events/s |")
    print("|---|---|---|---|---|")
    for interval in intervals:
        for busy in (True, False):
            rs = [r for r in rows if r["interval"] == interval and r["busy"] == busy]
            if not rs:
                continue
            f = lambda key, rs=rs: "/".join(f"{r[key]:.1f}" for r in rs)  # noqa: E731
            print(f"| {1e3 * interval:g} ms | {'busy' if busy else 'idle'} | "
                  f"{f('p50')} ; {f('p90')} ; {f('p99')} ; {f('max')} | "
                  f"{'/'.join(str(r['rounds']) for r in rs)} | "
                  + ("/".join(f"{r['events_s']:,.0f}" for r in rs) if busy else "-") + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
