"""The reference consumers of bench/kafka_throughput.py, one per process: how fast can Python read?

Each mode consumes a backlog of ``--expect`` messages from ``--topics`` as
one consumer (a fresh group, from the earliest offset) and prints one JSON
line: messages, wall time and CPU time (the whole process, every thread)
from the first message to the last, and resident memory.

- ``raw``: confluent-kafka ``consume()`` in batches and ``orjson.loads`` of
  each value, nothing else: the physical limit of a Python worker that
  reads JSON telemetry;
- ``faust-agent``: a Faust app whose agent does nothing (``async for _ in
  stream``): Faust's default, per-message path;
- ``faust-batch``: the same app with the service's batch delivery
  (:func:`detector.service.faust_io.batch_transport`) and a stage that only
  counts: what Faust's consumer costs before faultline does any work.

    python bench/kafka_consumers.py MODE --bootstrap HOST:PORT --topics T1,T2 --expect N
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_bench import rss_kib  # noqa: E402


class Meter:
    """Counts messages; notes wall and CPU time at the first and after the last."""

    def __init__(self, expect: int) -> None:
        self.expect = expect
        self.n = 0
        self.first_wall = self.first_cpu = 0.0

    def start(self) -> None:
        self.first_wall, self.first_cpu = time.time(), time.process_time()

    def result(self, mode: str) -> dict[str, Any]:
        wall, cpu = time.time(), time.process_time()
        rss, hwm = rss_kib()
        return {"mode": mode, "messages": self.n, "wall_s": wall - self.first_wall,
                "cpu_s": cpu - self.first_cpu, "first_wall": self.first_wall, "last_wall": wall,
                "rss_kib": rss, "hwm_kib": hwm}


def report(result: dict[str, Any]) -> None:
    sys.stdout.write(orjson.dumps(result).decode() + "\n")
    sys.stdout.flush()


def run_raw(args: argparse.Namespace) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": True,
                         # librdkafka 2.x waits 1 s before fetching again once its queue
                         # is full (64 MB): half the backlog's time went there.
                         "fetch.queue.backoff.ms": 10})
    consumer.subscribe(args.topics)
    meter = Meter(args.expect)
    loads = orjson.loads
    deadline = time.monotonic() + args.timeout_s
    try:
        while meter.n < args.expect and time.monotonic() < deadline:
            msgs = consumer.consume(10_000, 0.5)
            if not msgs:
                continue
            if not meter.n:
                meter.start()
            for m in msgs:
                if m.error() is None:
                    loads(m.value())
                    meter.n += 1
        report(meter.result("raw"))
    finally:
        consumer.close()


def _faust_app(args: argparse.Namespace) -> Any:
    import faust

    app = faust.App(args.group, broker=f"kafka://{args.bootstrap}", value_serializer="raw",
                    key_serializer="raw", web_enabled=False, autodiscover=False,
                    store="memory://", datadir=f"/tmp/faultline-bench-{args.group}",
                    consumer_auto_offset_reset="earliest", broker_max_poll_records=2000)
    return app


def _done(meter: Meter, mode: str) -> None:
    report(meter.result(mode))
    os._exit(0)  # a benchmark child: no graceful Faust shutdown to wait for


def run_faust_agent(args: argparse.Namespace) -> None:
    import faust

    app = _faust_app(args)
    topic = app.topic(*args.topics, value_serializer="raw", key_serializer="raw")
    meter = Meter(args.expect)

    @app.agent(topic, concurrency=1)
    async def nothing(stream: faust.StreamT) -> None:
        async for _ in stream:
            if not meter.n:
                meter.start()
            meter.n += 1
            if meter.n >= meter.expect:
                _done(meter, "faust-agent")

    _run_worker(app, args)


def run_faust_batch(args: argparse.Namespace) -> None:
    from detector.service.faust_io import install_batch_delivery

    app = _faust_app(args)
    topic = app.topic(*args.topics, value_serializer="raw", key_serializer="raw", acks=False)
    meter = Meter(args.expect)

    def stage(by_tp: dict[Any, list[Any]]) -> None:
        if not meter.n:
            meter.start()
        for records in by_tp.values():
            meter.n += len(records)
        if meter.n >= meter.expect:
            _done(meter, "faust-batch")

    # The service's own entry point (lean records of these topics, batch hand-over).
    install_batch_delivery(app, stage, frozenset(args.topics))
    app.topics.add(topic)
    _run_worker(app, args)


def _run_worker(app: Any, args: argparse.Namespace) -> None:
    import asyncio

    import faust

    async def watchdog() -> None:
        await asyncio.sleep(args.timeout_s)
        sys.stderr.write(f"timed out after {args.timeout_s:.0f}s\n")
        os._exit(2)

    app.task(watchdog)
    faust.Worker(app, loglevel="WARNING", quiet=True, redirect_stdouts=False
                 ).execute_from_commandline()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["raw", "faust-agent", "faust-batch"])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topics", required=True, type=lambda s: s.split(","))
    ap.add_argument("--expect", required=True, type=int)
    ap.add_argument("--group", default=f"bench-{uuid.uuid4().hex[:10]}")
    ap.add_argument("--timeout-s", type=float, default=600.0)
    args = ap.parse_args()
    {"raw": run_raw, "faust-agent": run_faust_agent, "faust-batch": run_faust_batch}[args.mode](
        args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
