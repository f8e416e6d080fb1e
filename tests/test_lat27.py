"""Round 27 (room lat27, issue 14): the worker's fetch loop -- a lever measured, not landed,
and the tools that measured it.

aiokafka fetches a partition again only once all its fetched records are handed over; main
hands a live feed's buffer over a batch at a time, oldest first across partitions.  lat27
measured handing over everything buffered at once (every partition fetched again at once;
bench/fetch_loop.py's ``take_live`` / ``split_off``) and found no shorter tail on this box
(BENCHMARKS.md, "lat27, round 27"): records then wait for the engine in the worker's
memory instead of in Kafka.  What stays pinned here: main's hand-over delivers a quiet
partition's new records while a busy one's backlog is still being handed over (against the
real broker), the lever's own properties (so its A/B can be re-run), and the count
bench/fetch_rounds.py reads from a kept trace.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiokafka.structs import TopicPartition

from detector.service.faust_io import take_in_time_order, tolerate_unreadable_batches

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from fetch_loop import LIVE_TAKE_BATCHES, split_off, take_live  # noqa: E402
from fetch_rounds import fetch_counts  # noqa: E402


def split_in_time_order(batch: dict[Any, list[Any]], size: int | None,
                        first: frozenset[str] = frozenset()) -> list[dict[Any, list[Any]]]:
    """The pieces the engine gets of ``batch`` with no take between them."""
    pieces = []
    while batch:
        piece, batch = split_off(batch, size, first)
        pieces.append(piece)
    return pieces


def _recs(stamps: list[int], start: int = 0) -> list[tuple[int, None, bytes, int]]:
    return [(start + i, None, b"{}", ts) for i, ts in enumerate(stamps)]


def _offsets(pieces: list[dict[Any, list[Any]]], tp: Any) -> list[int]:
    return [r[0] for p in pieces for r in p.get(tp, ())]


STEP, NIC, ECC, F = (TopicPartition("t.step", 7), TopicPartition("t.nic", 0),
                     TopicPartition("t.ecc", 3), TopicPartition("f", 0))


# -- the pieces the engine gets --------------------------------------------------------------

def test_a_large_take_reaches_the_engine_in_batch_sized_pieces_partitions_together() -> None:
    """5 s of a busy partition and of two sparse ones, taken at once: three pieces of at most
    about a batch, each the same span of time of every partition, findings in the first."""
    batch = {F: _recs([990, 5_990]), STEP: _recs([1_000 + i for i in range(5_000)]),
             NIC: _recs([1_000 + 50 * i for i in range(100)]),
             ECC: _recs([1_000 + 50 * i for i in range(100)])}
    pieces = split_in_time_order(batch, 2_000, frozenset({"f"}))
    assert len(pieces) == 3
    assert pieces[0][F] == batch[F] and all(F not in p for p in pieces[1:])
    for p in pieces:
        assert sum(map(len, p.values())) <= 2_000 + 2
        assert {STEP, NIC, ECC} <= set(p)  # every partition moves on in every piece
    for a, b in zip(pieces, pieces[1:], strict=False):  # and no piece reaches past the next
        assert max(r[3] for tp, rs in a.items() if tp != F for r in rs) <= min(
            r[3] for tp, rs in b.items() for r in rs)
    for tp in (STEP, NIC, ECC, F):  # every record once, in offset order
        assert _offsets(pieces, tp) == list(range(len(batch[tp])))


def test_a_take_no_larger_than_a_batch_is_one_piece_and_nothing_is_none() -> None:
    batch = {NIC: _recs([5, 6]), F: _recs([1])}
    assert split_off(batch, 2_000, frozenset({"f"})) == (batch, {})
    assert split_off(batch, None) == (batch, {})
    assert split_off({NIC: []}, 10) == ({}, {})
    assert split_off({}, 10) == ({}, {})


@pytest.mark.parametrize("stamps", [
    [0] * 300,                                    # one millisecond (a burst, or no clock)
    [4_102_444_800_000 - i for i in range(300)],  # a clock stepped back every record
    [(i * 7919) % 1_000 for i in range(300)],     # several producers, out of order
])
def test_untrusted_timestamps_lose_no_record_in_the_pieces(stamps: list[int]) -> None:
    """Kafka timestamps are the producers': out of order, equal, or far off they only move
    the cuts -- every record is in exactly one piece, every partition in offset order."""
    batch = {STEP: _recs(stamps), NIC: _recs([500 + i for i in range(200)])}
    pieces = split_in_time_order(batch, 100)
    assert all(pieces) and all(all(p.values()) for p in pieces)
    for tp in (STEP, NIC):
        assert _offsets(pieces, tp) == list(range(len(batch[tp])))


# -- the take -------------------------------------------------------------------------------

class _Subscriptions:
    reassignment_in_progress = False

    def fetch_context(self) -> Any:
        import contextlib

        return contextlib.nullcontext()


class _Fetcher:
    """What take_live reads of aiokafka's Fetcher: its buffer, subscriptions and waker."""

    def __init__(self, records: Any) -> None:
        self._records = records
        self._subscriptions = _Subscriptions()
        self._wait_consume_future = object()
        self.woken = 0

    def _notify(self, fut: object) -> None:
        assert fut is self._wait_consume_future
        self.woken += 1


def test_a_live_take_drains_every_partition_so_each_is_fetched_again() -> None:
    """Three batches of a busy partition buffered beside a sparse one: one take hands them all
    over and leaves nothing buffered (aiokafka then fetches both again), where main's took
    one batch and left the busy partition buffered, unfetched, for two more hand-overs."""
    from test_faust_io import _buffered  # aiokafka's real FetchResult / PartitionRecords

    tolerate_unreadable_batches(frozenset({"t.step", "t.nic"}))
    buffered = _buffered({("t.step", 7): [1_000 + i for i in range(3_000)],
                          ("t.nic", 0): [1_000 + 50 * i for i in range(60)]})
    fetcher = _Fetcher(buffered)
    taken = take_live(fetcher, None, 1_000)
    assert taken is not None
    assert sorted(map(len, taken.values())) == [60, 3_000]
    assert not buffered and fetcher.woken == 1


def test_a_live_take_is_bounded_and_leaves_the_rest_oldest_first() -> None:
    """A burst beyond LIVE_TAKE_BATCHES batches: the take stops there, oldest first across
    partitions, and the rest stays buffered for the next hand-over (nothing lost)."""
    from test_faust_io import _buffered

    tolerate_unreadable_batches(frozenset({"t.step", "t.nic"}))
    n = 100 * LIVE_TAKE_BATCHES * 3
    buffered = _buffered({("t.step", 7): [1_000 + i for i in range(n)],
                          ("t.nic", 0): [1_000 + 3 * i for i in range(n // 3)]})
    fetcher = _Fetcher(buffered)
    handed = []
    while buffered:
        taken = take_live(fetcher, None, 100)
        assert taken
        bound = 100 * LIVE_TAKE_BATCHES  # (+ a chunk and a record a partition: see
        chunk = max(16, bound // (4 * 2))  # take_in_time_order)
        assert sum(map(len, taken.values())) <= bound + 2 * (chunk + 1)
        handed.append(taken)
    assert len(handed) >= 3
    assert [r[0] for h in handed for tp, rs in h.items() if tp.topic == "t.step"
            for r in rs] == list(range(n))


# -- against the real broker ----------------------------------------------------------------

def _main_take(fetcher: Any, partitions: Any, max_records: int) -> Any:
    """faust_io's FetchingThread._fetch_records on a live feed: a batch, oldest first."""
    with fetcher._subscriptions.fetch_context():
        taken = take_in_time_order(fetcher._records, partitions, max_records)
    if taken:
        fetcher._notify(fetcher._wait_consume_future)
    return taken


@pytest.mark.kafka
@pytest.mark.parametrize("policy", ["main", "take_live"])
def test_a_quiet_partition_is_delivered_while_a_busy_ones_backlog_is_handed_over(
        kafka_bootstrap: str, policy: str) -> None:
    """A partition fetched three batches deep beside a quiet one, read by aiokafka's fetcher
    with the service's fetch settings.  main: the quiet partition's records produced after
    the first hand-over come while the busy one's backlog is still being handed over (it was
    drained, so fetched again).  take_live: the whole backlog goes in the first hand-over
    and every later one holds only records produced after it."""
    take = _main_take if policy == "main" else take_live
    from aiokafka import AIOKafkaConsumer
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from detector.service.faust_io import (
        FETCH_MAX_WAIT_MS,
        FETCH_MIN_BYTES,
        MAX_PARTITION_FETCH_BYTES,
    )

    topic = f"lat27-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    tolerate_unreadable_batches(frozenset({topic}))
    busy, quiet = TopicPartition(topic, 0), TopicPartition(topic, 1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})

    def produce(counts: dict[TopicPartition, int]) -> None:
        for tp, n in counts.items():
            for _ in range(n):
                producer.produce(topic, b"x" * 100, b"k", partition=tp.partition)
        assert producer.flush(30) == 0

    produce({quiet: 5})  # older than the busy partition's backlog
    produce({busy: 3_000})

    async def read() -> tuple[list[Any], list[Any]]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=kafka_bootstrap, group_id=None, enable_auto_commit=False,
            auto_offset_reset="earliest", fetch_min_bytes=FETCH_MIN_BYTES,
            fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
            max_partition_fetch_bytes=MAX_PARTITION_FETCH_BYTES)
        await consumer.start()
        takes: list[dict[Any, list[Any]]] = []
        got: dict[TopicPartition, int] = {busy: 0, quiet: 0}

        def hand_over() -> None:
            taken = take(consumer._fetcher, None, 1_000)
            if taken:
                takes.append(taken)
                got.update({tp: recs[-1][0] + 1 for tp, recs in taken.items()})

        try:
            consumer.assign([busy, quiet])
            records = consumer._fetcher._records
            # (each wait up to a minute: the fetcher's own pace, nothing timed)
            for _ in range(6_000):  # both partitions' records fetched and buffered
                if all(tp in records and (consumer.highwater(tp) or 0) >= n
                       for tp, n in ((busy, 3_000), (quiet, 5))):
                    break
                await asyncio.sleep(0.01)
            hand_over()
            if policy == "take_live":
                assert got == {busy: 3_000, quiet: 5}  # the whole backlog in one hand-over
            else:
                assert got[quiet] == 5 and got[busy] < 3_000 and busy in records
            first = len(takes)
            await asyncio.get_running_loop().run_in_executor(
                None, produce, {busy: 3, quiet: 2})
            # the new records fetched: the quiet partition's (drained, so fetched again), and
            # with take_live the busy one's (main: its backlog is buffered, so not fetched)
            want = {quiet: 7, **({busy: 3_003} if policy == "take_live" else {})}
            for _ in range(6_000):
                if all(tp in records and (consumer.highwater(tp) or 0) >= n
                       for tp, n in want.items()):
                    break
                await asyncio.sleep(0.01)
            for _ in range(6_000):  # hand over what is buffered until all of it came
                if records:
                    hand_over()
                if got == {busy: 3_003, quiet: 7}:
                    break
                await asyncio.sleep(0.01)
            return takes[:first], takes[first:]
        finally:
            await consumer.stop()

    before, after = asyncio.run(read())
    handed = [r[0] for t in before + after for r in t.get(busy, ())]
    assert handed == list(range(3_003))  # every record once, in order
    assert [r[0] for t in before for r in t.get(quiet, ())] == list(range(5))
    assert [r[0] for t in after for r in t.get(quiet, ())] == [5, 6]
    # the take that brought the quiet partition's new records
    came = next(t for t in after if quiet in t)
    if policy == "main":  # ... while the busy one's backlog was still being handed over
        assert busy in came and came[busy][0][0] < 3_000
    else:  # ... after all of it: later takes hold only the records produced after the first
        assert [r[0] for t in after for r in t.get(busy, ())] == [3_000, 3_001, 3_002]


# -- the count bench/fetch_rounds.py reads from a kept trace ---------------------------------

def test_rounds_a_partition_sat_out_are_counted_from_the_fetch_log(tmp_path: Any) -> None:
    """step:0's records came in the first response; two requests went out without it (its
    records buffered) before the fourth asked for it again: 2 rounds sat out.  nic:0 came
    empty-handed each time it was asked: nothing to count."""
    import json

    both = [["p.step", 0, 0, 10, True], ["p.nic", 0, 0, 0, False]]
    nic = [["p.nic", 0, 0, 0, False]]
    log = [{"fetch": [0.00, 0.01, both]}, {"fetch": [0.02, 0.03, nic]},
           {"fetch": [0.04, 0.05, nic]}, {"fetch": [0.06, 0.07, both]},
           {"batch": [0.01, 0.02, 0.0, 10, 0, 1, 0, 0, 0]}]
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in log) + "\n")
    c = fetch_counts(path)
    assert c is not None
    assert c["sat_out"] == [2] and c["spans"] == [pytest.approx(0.05)]
    assert c["left_out_share"] == pytest.approx(2 / 8) and c["pieces"] == [10]
