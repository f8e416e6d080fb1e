"""The worker's fetch loop alone, A/B: how long records wait between Kafka and the engine under
main's hand-over (a batch at a time from aiokafka's buffer, oldest first: faust_io's
FetchingThread) and lat27's (a live take of all that is buffered, so that every partition
is fetched again at once, handed to the engine a batch at a time with what later takes
bring: ``take_live`` / ``split_off`` below, measured in round 27 and not landed).

A real broker and aiokafka's real fetcher with the service's settings and lean records
(detector.service.faust_io); a paced feed (one producer thread, a skewed key spread: one
partition of ``--partitions`` takes ``--busy-share`` of the records, as the step topic's
busiest); in place of the engine, a handler in the main thread that costs ``--cost-us``
per record plus ``--overhead-us`` a batch -- burnt on the CPU, holding the GIL as the
pipeline does (``--cost sleep``: slept, no GIL, less the box's noise) -- and a stall of
``--stall-ms`` every ``--stall-every-s`` (a box that takes the worker's CPU away: where the
slow tail comes from).  The consumer's thread runs the fetcher as Faust's does; hand-overs
go through it as Faust's ``call_thread``.

Per record handled: wall time at the end of its batch less its CreateTime.  Per run also
the fetch log's count (bench/fetch_rounds.py): fetch requests a partition sat out after its
records came.  Arms alternate run by run, ``--rounds`` times.

    PYTHONPATH=$PWD python bench/fetch_loop.py --rounds 5 --rate 20000 --seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import threading
import time
import uuid
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fetch_rounds import percentile, rounds_sat_out  # noqa: E402

from detector.service import faust_io  # noqa: E402
from detector.service.faust_io import (  # noqa: E402
    FETCH_MAX_WAIT_MS,
    FETCH_MIN_BYTES,
    MAX_PARTITION_FETCH_BYTES,
    PREFETCH_BACKOFF_S,
    TIMESTAMP,
    is_live,
    take_in_time_order,
    tolerate_unreadable_batches,
)

ARMS = ("main", "lat27")

# -- lat27's hand-over (measured, not landed: BENCHMARKS.md, "lat27, round 27"; in the
# service it was branch lat27-b's faust_io.FetchingThread._fetch_records and
# _BatchConsumer._drain_messages)

# A live take: every record aiokafka has buffered, up to this many batches; no take while
# this many batches of taken records wait for the engine.
LIVE_TAKE_BATCHES = 4
_STAMP = itemgetter(TIMESTAMP)


def take_live(fetcher: Any, partitions: Any, max_records: int,
              first: frozenset[str] = frozenset()) -> dict[Any, list[Any]] | None:
    """A live worker's hand-over from aiokafka's ``fetcher``: every buffered record, up to
    LIVE_TAKE_BATCHES x ``max_records`` (oldest first across partitions, ``first`` topics'
    all), and the fetcher woken to fetch again every partition drained -- all of them,
    unless the bound was met.  None: an unusual buffer, left to aiokafka (see
    take_in_time_order).  Called in the consumer's thread, where the fetcher runs."""
    with fetcher._subscriptions.fetch_context():
        taken = take_in_time_order(fetcher._records, partitions,
                                   max_records * LIVE_TAKE_BATCHES, first)
    if taken:
        fetcher._notify(fetcher._wait_consume_future)  # refetch what was drained
    return taken


def split_off(batch: dict[Any, list[Any]], size: int | None,
              first: frozenset[str] = frozenset()
              ) -> tuple[dict[Any, list[Any]], dict[Any, list[Any]]]:
    """(the oldest ~``size`` records of ``batch``, the rest): the next piece for the engine
    of the records taken and not yet handed to it (records by partition, each in offset
    order; ``size`` None: all of them).

    The piece cuts every partition at the same Kafka timestamp (the ``size``-th oldest of
    all the telemetry), so that the partitions move on together, as take_in_time_order
    hands them over and the correlator's clock needs; ``first`` topics' records all go in
    the piece.  Timestamps out of order (several producers, a clock stepped back) or equal
    only move the cut: each record is in exactly one of the two, each partition's in
    offset order, and the piece always holds some telemetry if there is any.
    """
    import bisect

    telemetry = {tp: recs for tp, recs in batch.items() if recs and tp.topic not in first}
    n = sum(map(len, telemetry.values()))
    if not size or n <= size:
        return {tp: recs for tp, recs in batch.items() if recs}, {}
    stamps = sorted(chain.from_iterable(map(_STAMP, recs) for recs in telemetry.values()))
    cut = stamps[size - 1]
    piece = {tp: recs for tp, recs in batch.items() if recs and tp.topic in first}
    rest: dict[Any, list[Any]] = {}
    for tp, recs in telemetry.items():
        at = bisect.bisect_right(recs, cut, key=_STAMP)
        if at:
            piece[tp] = recs[:at]
        if at < len(recs):
            rest[tp] = recs[at:]
    if not any(tp in piece for tp in telemetry):  # no cut found: all of it, not none
        return {tp: recs for tp, recs in batch.items() if recs}, {}
    return piece, rest


def feed(bootstrap: str, topic: str, parts: int, busy: float, rate: float, seconds: float,
         stop: threading.Event) -> int:
    """Records at ``rate``/s for ``seconds`` (CreateTime: when produced), ``busy`` of them to
    partition 0, the rest spread; returns how many."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "compression.type": "lz4"})
    value = b'{"ts": 0, "node": "node-000", "gpu": 0, "step": 1, "dur_ms": 512.0}'
    n = 0
    t0 = time.time()
    rng = random.Random(7)
    while not stop.is_set():
        now = time.time()
        due = int((now - t0) * rate)
        if now - t0 >= seconds:
            break
        while n < due:
            part = 0 if rng.random() < busy else rng.randrange(1, parts)
            try:
                p.produce(topic, value, b"k", partition=part)
            except BufferError:  # the broker behind (a fresh one's first seconds): wait
                p.poll(0.05)
                continue
            n += 1
        p.poll(0)
        time.sleep(0.002)
    p.flush(30)
    return n


class Loop:
    """The consumer's thread: an asyncio loop running aiokafka's consumer (Faust's
    AIOKafkaConsumerThread, as far as the hand-over goes)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, coro: Any, timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def run(arm: str, bootstrap: str, args: argparse.Namespace) -> dict[str, Any]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"fetchloop-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(30)
    tolerate_unreadable_batches(frozenset({topic}))
    faust_io.trace_fetches()
    assert faust_io.FETCH_LOG is not None
    faust_io.FETCH_LOG.clear()
    tps = [TopicPartition(topic, p) for p in range(args.partitions)]
    size = args.batch
    loop = Loop()

    async def start() -> Any:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             fetch_min_bytes=FETCH_MIN_BYTES, fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
                             max_partition_fetch_bytes=MAX_PARTITION_FETCH_BYTES)
        await c.start()
        c.assign(tps)
        c._fetcher._prefetch_backoff = PREFETCH_BACKOFF_S
        return c

    consumer = loop.call(start())
    fetcher = consumer._fetcher
    state = {"live": False}

    async def take(timeout: float) -> dict[Any, list[Any]]:
        # faust_io's FetchingThread._fetch_records, by arm
        buffered = fetcher._records
        if state["live"] and buffered:
            if arm == "main":
                if len(buffered) > 1:
                    with fetcher._subscriptions.fetch_context():
                        got = take_in_time_order(buffered, None, size)
                    if got:
                        fetcher._notify(fetcher._wait_consume_future)
                        state["live"] = is_live(got)
                        return got
            else:
                got = take_live(fetcher, None, size)
                if got:
                    state["live"] = is_live(got)
                    return got
        with fetcher._subscriptions.fetch_context():
            got = await fetcher.fetched_records(None, timeout=timeout, max_records=size)
        if got:
            state["live"] = is_live(got)
        return got

    stop = threading.Event()
    fed: list[int] = []
    feeder = threading.Thread(target=lambda: fed.append(feed(
        bootstrap, topic, args.partitions, args.busy_share, args.rate, args.seconds, stop)),
        daemon=True)
    waits: list[float] = []
    pieces: list[int] = []
    t0 = time.time()
    next_stall = t0 + args.stall_every_s
    handled = 0
    pending: dict[Any, list[Any]] = {}
    feeder.start()

    def handle(piece: dict[Any, list[Any]]) -> None:
        n = sum(map(len, piece.values()))
        cost = (args.overhead_us + args.cost_us * n) / 1e6
        if args.cost == "burn":
            end = time.thread_time() + cost
            while time.thread_time() < end:
                pass
        else:
            time.sleep(cost)
        done = time.time()
        waits.extend(done - r[3] / 1000.0 for recs in piece.values() for r in recs)
        pieces.append(n)

    try:
        while True:
            if fed and handled >= fed[0] and not pending:
                break
            if time.time() - t0 > args.seconds + 60:
                break
            if time.time() >= next_stall:  # the box takes the worker's CPU away
                time.sleep(args.stall_ms / 1000.0)
                next_stall += args.stall_every_s
            if arm == "main":
                got = loop.call(take(0.2))
                if got:
                    handle(got)
                    handled += sum(map(len, got.values()))
                continue
            room = size * LIVE_TAKE_BATCHES
            if not pending or sum(map(len, pending.values())) < room:
                got = loop.call(take(0.0 if pending else 0.2))
                for tp, recs in got.items():
                    pending[tp] = pending[tp] + recs if tp in pending else recs
            if pending:
                piece, pending = split_off(pending, size)
                handle(piece)
                handled += sum(map(len, piece.values()))
    finally:
        stop.set()
        feeder.join(60)
        loop.call(consumer.stop())
        loop.close()
    log = list(faust_io.FETCH_LOG)
    return {"arm": arm, "fed": fed[0] if fed else 0, "handled": handled, "waits": waits,
            "pieces": pieces, "sat_out": rounds_sat_out(
                [(s, d, {(t, p): c for t, p, _, _, c in parts}) for s, d, parts in log])[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", default=None, help="an existing Kafka (default: start one)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rate", type=float, default=20_000.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--busy-share", type=float, default=0.31)
    ap.add_argument("--batch", type=int, default=2_000)
    ap.add_argument("--cost-us", type=float, default=7.0)
    ap.add_argument("--overhead-us", type=float, default=2_000.0)
    ap.add_argument("--cost", choices=("burn", "sleep"), default="sleep")
    ap.add_argument("--stall-ms", type=float, default=300.0)
    ap.add_argument("--stall-every-s", type=float, default=2.0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        sys.path.insert(0, str(ROOT / "deploy" / "kafka"))
        from broker import KafkaBroker

        broker = KafkaBroker()
        broker.__enter__()
        bootstrap = broker.bootstrap
    rows = []
    try:
        for r in range(args.rounds):
            for arm in (ARMS if r % 2 == 0 else ARMS[::-1]):
                res = run(arm, bootstrap, args)
                w, so = res["waits"], res["sat_out"]
                print(f"round {r + 1} {arm:6s}: fed {res['fed']:,} handled {res['handled']:,};"
                      f" waits p50 {1e3 * percentile(w, 50):.0f} p99 {1e3 * percentile(w, 99):.0f}"
                      f" max {1e3 * max(w, default=0):.0f} ms; batches {len(res['pieces'])};"
                      f" rounds sat out p50 {percentile(so, 50):.0f} p90 {percentile(so, 90):.0f}"
                      f" p99 {percentile(so, 99):.0f}", flush=True)
                rows.append({**{k: v for k, v in res.items() if k != "waits"}, "round": r + 1,
                             "p50": percentile(w, 50), "p99": percentile(w, 99),
                             "max": max(w, default=0.0)})
    finally:
        if broker is not None:
            broker.__exit__(None, None, None)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "runs": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
