"""Where the service bends Faust: batch delivery, fetch sizes, commits, a forcing second
signal, no terminal spinner, Kafka credentials.

Every private name of faust-streaming, aiokafka and mode the service uses is
used here and nowhere else, and listed in :func:`_private_names` (read from
faust-streaming 0.15.3, aiokafka 0.14, mode 0.4): :func:`check_supported`
refuses to start the batch path on an installation that lacks any of them,
and a test runs it, so an upgrade that moves one fails loudly, not at 3 am.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable
from itertools import chain, islice
from operator import attrgetter
from typing import Any

import faust
from faust.types import TP

from detector.settings import Settings

log = logging.getLogger("faultline.service")


def _private_names() -> list[tuple[Any, str, str]]:
    """(object, name, how it is found) of every private name this module relies on."""
    import aiokafka
    from aiokafka.consumer import fetcher
    from faust.transport.drivers import aiokafka as driver

    return [
        (driver.Consumer, "_drain_messages", "attr"),
        (driver.Consumer, "_wait_next_records", "attr"),
        (driver.Consumer, "perform_seek", "attr"),
        (driver.Consumer, "_new_consumer_thread", "attr"),
        (driver.Consumer, "_commit", "attr"),
        (driver.Consumer, "_to_message", "attr"),
        (driver.Consumer, "_read_offset", "source"),
        (driver.Consumer, "_stopped", "source"),
        (driver.Consumer, "consumer_stopped_errors", "attr"),
        (driver.AIOKafkaConsumerThread, "_create_worker_consumer", "attr"),
        (driver.AIOKafkaConsumerThread, "_fetch_records", "attr"),
        (driver.Transport, "Consumer", "attr"),
        (aiokafka.AIOKafkaConsumer, "_fetch_min_bytes", "source"),
        (aiokafka.AIOKafkaConsumer, "_fetch_max_wait_ms", "source"),
        (aiokafka.AIOKafkaConsumer, "_max_partition_fetch_bytes", "source"),
        (aiokafka.AIOKafkaConsumer, "_fetcher", "source"),
        (fetcher.Fetcher, "_records", "source"),
        (fetcher.Fetcher, "_prefetch_backoff", "source"),
        (fetcher.Fetcher, "_subscriptions", "source"),
        (fetcher.Fetcher, "_notify", "attr"),
        (fetcher.Fetcher, "_wait_consume_future", "source"),
        (fetcher.Fetcher, "_proc_fetch_request", "attr"),  # fetch ends; the fetch log
        (faust.Worker, "_schedule_shutdown", "attr"),
        (faust.Worker, "_signal_stop_time", "source"),
        (faust.Worker, "spinner", "source"),
        (fetcher.PartitionRecords, "_unpack_records", "attr"),
        (fetcher.PartitionRecords, "_tp", "source"),
        (fetcher.PartitionRecords, "_records", "source"),
        (fetcher.PartitionRecords, "_check_crcs", "source"),
        (fetcher.PartitionRecords, "_isolation_level", "source"),
        (fetcher.PartitionRecords, "_consume_aborted_up_to", "attr"),
        (fetcher.PartitionRecords, "_contains_abort_marker", "attr"),
        (fetcher.PartitionRecords, "_aborted_producers", "source"),
        (fetcher.PartitionRecords, "_consumer_record", "attr"),
        (fetcher.PartitionRecords, "next_fetch_offset", "source"),
        (fetcher.FetchResult, "getall", "attr"),
        (fetcher.FetchResult, "getone", "attr"),
        (fetcher.FetchResult, "check_assignment", "attr"),
        (fetcher.FetchResult, "_update_position", "attr"),
        (fetcher.FetchResult, "_partition_records", "source"),
        (fetcher.FetchResult, "_topic_partition", "source"),
    ]


def missing_names(names: list[tuple[Any, str, str]]) -> list[str]:
    """Those of ``names`` the installed libraries do not have."""
    import inspect

    out = []
    for obj, name, how in names:
        if how == "attr":
            found = hasattr(obj, name)
        else:  # an instance attribute: set somewhere in the class's (or a base's) source
            found = any(f".{name}" in inspect.getsource(k) for k in obj.__mro__
                        if k.__module__.split(".")[0] in ("faust", "aiokafka", "mode"))
        if not found:
            out.append(f"{obj.__module__}.{obj.__qualname__}.{name}")
    return out


# The aiokafka releases whose fetcher code the lean path (tolerate_unreadable_batches,
# lean_fetch_results) follows: it re-implements parts of their PartitionRecords and
# FetchResult, so a release that changes them must be read before it is let in (the same
# bound is in pyproject.toml).
AIOKAFKA_SUPPORTED = ((0, 14), (0, 15))  # [from, to)


def aiokafka_version_ok(version: str) -> bool:
    """Whether ``version`` (e.g. ``"0.14.0"``) is within AIOKAFKA_SUPPORTED."""
    try:
        major_minor = tuple(int(p) for p in version.split(".")[:2])
    except ValueError:
        return False
    return AIOKAFKA_SUPPORTED[0] <= major_minor < AIOKAFKA_SUPPORTED[1]


def check_supported() -> None:
    """Refuse, naming what is missing, an installation whose internals the batch path misses."""
    import aiokafka

    missing = missing_names(_private_names())
    if not aiokafka_version_ok(aiokafka.__version__):
        missing.append(f"aiokafka {aiokafka.__version__} (the lean fetch path follows "
                       f"{'.'.join(map(str, AIOKAFKA_SUPPORTED[0]))}.x)")
    if missing:
        raise RuntimeError(
            "faultline's batch delivery relies on internals that this faust-streaming/aiokafka "
            f"installation lacks: {', '.join(missing)}.  Install the versions pyproject.toml "
            "names, or set delivery = \"agents\" (Faust's public API, about 15x slower).")


async def commit_offsets(app: faust.App, offsets: dict[TP, int]) -> None:
    """Commit these positions now (Faust's own commits are off for our topics)."""
    await app.consumer._commit(offsets)


# A record of the service's own topics as the fetcher hands it over: a plain tuple
# (offset, key, value, timestamp in ms), what the pipeline reads, made in C a record batch
# at a time (operator.attrgetter over aiokafka's records) where aiokafka builds an
# 11-field ConsumerRecord dataclass in Python (about a tenth of a worker's CPU per event).
# A plain tuple, not a NamedTuple: making the subclass cost 0.13 µs a record more.
Fetched = tuple[int, "bytes | None", "bytes | None", int]
OFFSET, KEY, VALUE, TIMESTAMP = range(4)  # its fields


# When the fetch response holding a partition's records now being handed over reached the
# consumer (epoch seconds, by partition): for stage tracing (see detector.pipeline.worker's
# StageTrace).  Written by the consumer thread as a batch is taken, read by the handler.
FETCHED_AT: dict[Any, float] = {}


# Per partition: (when the request of its last answered fetch was sent, epoch seconds; the
# high watermark that fetch found), written by the fetcher as each response is handled
# (note_fetch_ends), read by the handler: a partition processed up to that high watermark
# was at its end as of that request (DetectorService._at_end, PipelineWorker.reported_clock).
FETCH_ENDS: dict[Any, tuple[float, int]] = {}


def note_fetch_ends() -> None:
    """Keep FETCH_ENDS up to date: wraps aiokafka's ``Fetcher._proc_fetch_request`` (once a
    process; a partition whose fetch failed keeps its last entry)."""
    from aiokafka.consumer import fetcher
    from aiokafka.structs import TopicPartition

    cls = fetcher.Fetcher
    if getattr(cls, "_faultline_ends", False):
        return
    orig = cls._proc_fetch_request
    ends = FETCH_ENDS
    wall = time.time
    failed = fetcher.FetchError

    async def _proc_fetch_request(self: Any, assignment: Any, node_id: Any,
                                  request: Any) -> Any:
        sent = wall()  # no later than the request went out: the broker answered after it
        ok = await orig(self, assignment, node_id, request)
        records = self._records
        try:
            for topic, partitions in request.topics:
                for part in partitions:
                    tp = TopicPartition(topic, part[0])
                    state = assignment.state_value(tp)
                    if state is None or state.highwater is None \
                            or type(records.get(tp)) is failed:
                        continue
                    ends[tp] = (sent, state.highwater)
        except Exception:  # noqa: BLE001 - never break the fetch; the partition then holds
            log.exception("noting a fetch's ends failed")
        return ok

    cls._proc_fetch_request = _proc_fetch_request
    cls._faultline_ends = True


# Stage tracing's fetch log (None: off; see trace_fetches): one entry per fetch response.
FETCH_LOG: list[tuple[float, float, list[tuple[str, int, int, int, bool]]]] | None = None


def trace_fetches() -> None:
    """Stage tracing: log every fetch response of this process's consumers in FETCH_LOG as
    (request sent, response handled, [(topic, partition, fetch offset, high watermark,
    records came)] for each partition asked), epoch seconds.

    What tells an input that reached Kafka late (the responses before the one that
    brought it had a high watermark at or below its offset) from one the worker did
    not ask for in time (no request for its partition between its append and its
    fetch: its earlier records still buffered, or the consumer thread without a CPU).
    A diagnostic, installed only with ``trace_stages``: it wraps aiokafka's
    ``Fetcher._proc_fetch_request``.
    """
    global FETCH_LOG
    from aiokafka.consumer import fetcher
    from aiokafka.structs import TopicPartition

    if FETCH_LOG is None:
        FETCH_LOG = []
    cls = fetcher.Fetcher
    orig = getattr(cls, "_proc_fetch_request", None)
    if orig is None or getattr(orig, "_faultline_traced", False):
        return
    log_ = FETCH_LOG
    wall = time.time

    async def _proc_fetch_request(self: Any, assignment: Any, node_id: Any,
                                  request: Any) -> Any:
        sent = wall()
        ok = await orig(self, assignment, node_id, request)
        done = wall()
        parts = []
        try:
            for topic, partitions in request.topics:
                for partition, offset, *_ in partitions:
                    tp = TopicPartition(topic, partition)
                    state = assignment.state_value(tp)
                    high = -1 if state is None or state.highwater is None else state.highwater
                    parts.append((topic, partition, offset, high, tp in self._records))
        except Exception:  # noqa: BLE001 - a diagnostic never breaks the fetch
            pass
        log_.append((sent, done, parts))
        return ok

    _proc_fetch_request._faultline_traced = True  # type: ignore[attr-defined]
    cls._proc_fetch_request = _proc_fetch_request


def install_batch_delivery(app: faust.App, handler: Callable[[dict[TP, list[Any]]], None],
                           topics: frozenset[str], first: frozenset[str] = frozenset()) -> None:
    """Make ``app`` hand ``topics`` to ``handler`` in fetched batches (see batch_transport)."""
    tolerate_unreadable_batches(topics)
    note_fetch_ends()
    app.transport = batch_transport(app, handler, topics, first)


def tolerate_unreadable_batches(lean_topics: frozenset[str] = frozenset()) -> None:
    """A record batch aiokafka cannot decompress becomes one marker record, not a dead worker.

    Records of ``lean_topics`` (the service's, read by the batch handler) come out as
    :class:`Fetched` tuples; those of other topics (Faust's own) as aiokafka's records.

    aiokafka raises ``UnsupportedCodecError`` (a codec whose library is missing, or
    an unknown codec id in a crafted batch) from inside its fetcher, which ends
    the worker, and on restart it meets the same batch again.  Here
    ``PartitionRecords._unpack_records`` (aiokafka 0.14's, with one change; the lean
    path below, ``_faultline_take``, takes the same records a batch at a time) hands
    such a batch over as a single record at its base offset whose value is an
    :class:`~detector.pipeline.source.Undecodable` carrying the reason; stage 1
    dead-letters it and the partition goes on after the batch.
    """
    from aiokafka.consumer import fetcher
    from aiokafka.errors import UnsupportedCodecError
    from aiokafka.structs import ConsumerRecord

    from detector.pipeline.source import Undecodable

    cls = fetcher.PartitionRecords
    cls._faultline_lean = frozenset(getattr(cls, "_faultline_lean", ())) | lean_topics
    if getattr(cls, "_faultline_tolerant", False):
        return
    fields = attrgetter("offset", "key", "value", "timestamp")
    fetched_at = FETCHED_AT
    wall = time.time
    init = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._faultline_fetched = wall()  # the fetch response is being read: one per partition
        # The lean path (see _faultline_take): the record batch being handed over, as an
        # iterator of Fetched tuples made as they are taken (None: none open), and the
        # offset after that batch.
        self._faultline_is_lean = self._tp.topic in cls._faultline_lean
        self._faultline_it = None
        self._faultline_end = 0
        self._faultline_started = False
        self._faultline_closed = False  # a corrupt batch was met: nothing more from this fetch

    def usable(self: Any, next_batch: Any) -> bool:
        """aiokafka's checks of a record batch before its records: False to pass it over
        (an aborted transaction's, a control batch), ``next_fetch_offset`` then after it."""
        if self._check_crcs and not next_batch.validate_crc():
            raise fetcher.Errors.CorruptRecordException(f"Invalid CRC - {self._tp}")
        if (self._isolation_level == fetcher.READ_COMMITTED
                and next_batch.producer_id is not None):
            self._consume_aborted_up_to(next_batch.base_offset)
            if next_batch.is_control_batch and self._contains_abort_marker(next_batch):
                self._aborted_producers.discard(next_batch.producer_id)
            if (next_batch.is_transactional
                    and next_batch.producer_id in self._aborted_producers):
                self.next_fetch_offset = next_batch.next_offset
                return False
        if next_batch.is_control_batch:
            self.next_fetch_offset = next_batch.next_offset
            return False
        return True

    def unreadable(self: Any, next_batch: Any, exc: Exception) -> tuple[int, int, Undecodable]:
        """(first offset, offset after it, the marker's value) of a batch that cannot be read."""
        tp = self._tp
        first, end = max(next_batch.base_offset, self.next_fetch_offset), next_batch.next_offset
        reason = f"record batch at offsets {first}..{end - 1} cannot be decompressed: {exc}"
        log.error("%s:%d: %s", tp.topic, tp.partition, reason)
        return first, end, Undecodable(reason)

    def fill(self: Any) -> bool:
        """The lean path: open the next record batch with records to hand over (its records
        from the fetch offset on); False when there is none left."""
        records = self._records
        while not self._faultline_closed and records.has_next():
            next_batch = records.next_batch()
            try:
                if not usable(self, next_batch):
                    continue
            except fetcher.Errors.CorruptRecordException:
                # As aiokafka's generator: raised once, then this fetch is over, and the
                # position stays at the bad batch, which is fetched again (not passed over).
                self._faultline_closed = True
                raise
            end = next_batch.next_offset
            try:
                it = map(fields, next_batch)  # (a Fetched tuple per record, made in C)
                first = next(it, None)
            except UnsupportedCodecError as exc:  # the one change
                first_offset, end, value = unreadable(self, next_batch, exc)
                self._faultline_it, self._faultline_end = iter(
                    [(first_offset, None, value, -1)]), end
                return True
            start = self.next_fetch_offset
            while first is not None and first[0] < start:  # a fetch from inside the batch
                first = next(it, None)
            if first is None:
                self.next_fetch_offset = end
                continue
            self._faultline_it, self._faultline_end = chain((first,), it), end
            return True
        return False

    def _faultline_take(self: Any, max_records: int | None) -> list[Fetched]:
        """Up to ``max_records`` (None: all) records of a lean partition, taken from its
        record batches in slices at C speed: what aiokafka's generator gives one record
        a call, made as they are taken (nothing decoded ahead), with
        ``next_fetch_offset`` where it would be after the last one taken."""
        if not self._faultline_started:  # when the records are first taken
            self._faultline_started = True
            fetched_at[self._tp] = self._faultline_fetched
        out: list[Fetched] = []
        while True:
            it = self._faultline_it
            if it is not None:
                if max_records is None:
                    chunk, done = list(it), True
                else:
                    want = max_records - len(out)
                    chunk = list(islice(it, want))
                    # (the batch's last offset taken: it is done, as far as its offsets tell)
                    done = len(chunk) < want or chunk[-1][0] + 1 >= self._faultline_end
                if out:
                    out += chunk
                else:
                    out = chunk
                if done:  # the batch is handed over
                    self._faultline_it = None
                    self.next_fetch_offset = self._faultline_end
                else:
                    self.next_fetch_offset = chunk[-1][0] + 1
                    return out
                if max_records is not None and len(out) >= max_records:
                    return out
            if not fill(self):
                return out

    def _faultline_drained(self: Any) -> bool:
        return self._faultline_it is None and (self._faultline_closed
                                               or not self._records.has_next())

    def _unpack_records(self: Any) -> Any:
        if self._faultline_is_lean:  # the iterator protocol over the lean path
            while True:
                got = self._faultline_take(1)
                if not got:
                    return
                yield got[0]
        tp = self._tp
        records = self._records
        while records.has_next():
            next_batch = records.next_batch()
            if not usable(self, next_batch):
                continue
            try:
                for record in next_batch:
                    offset = record.offset
                    if offset < self.next_fetch_offset:
                        continue
                    self.next_fetch_offset = offset + 1
                    yield self._consumer_record(tp, record)
            except UnsupportedCodecError as exc:  # the one change
                first, end, value = unreadable(self, next_batch, exc)
                self.next_fetch_offset = end
                yield ConsumerRecord(tp.topic, tp.partition, first, -1, 0, None, value, None,
                                     -1, -1, ())
                continue
            self.next_fetch_offset = next_batch.next_offset

    cls.__init__ = __init__
    cls._unpack_records = _unpack_records
    cls._faultline_take = _faultline_take
    cls._faultline_drained = _faultline_drained
    cls._faultline_tolerant = True
    lean_fetch_results(fetcher.FetchResult)


def lean_fetch_results(cls: Any) -> None:
    """``FetchResult.getall`` / ``getone`` of a lean partition take its records a record batch
    at a time (``PartitionRecords._faultline_take``), not through a Python generator
    resumed per record, with aiokafka's contract: at most ``max_records``, the position
    moved to after the last one taken, ``has_more()`` false once none is left.

    aiokafka's path cost the consumer thread ~2.8 CPU µs an event, about a quarter of
    the worker's (bench/kafka_throughput.py, per-thread CPU); see BENCHMARKS.md, round 7.
    """
    getall, getone = cls.getall, cls.getone

    def lean_getall(self: Any, max_records: int | None = None) -> list[Any]:
        part = self._partition_records
        if part is None or not part._faultline_is_lean:
            return getall(self, max_records)
        if not self.check_assignment(self._topic_partition):
            return []
        if max_records is not None and max_records < 1:
            max_records = 1  # aiokafka's loop takes a record before it counts them
        out = part._faultline_take(max_records)
        self._update_position()
        if part._faultline_drained():
            self._partition_records = None
        return out

    def lean_getone(self: Any) -> Any:
        part = self._partition_records
        if part is None or not part._faultline_is_lean:
            return getone(self)
        if not self.check_assignment(self._topic_partition):
            return None
        got = part._faultline_take(1)
        self._update_position()
        if not got or part._faultline_drained():
            self._partition_records = None
        return got[0] if got else None

    cls.getall = lean_getall
    cls.getone = lean_getone


def credentials(s: Settings) -> Any:
    if s.security_protocol == "PLAINTEXT":
        return None
    ctx = None
    if s.security_protocol.endswith("SSL"):
        import ssl

        ctx = ssl.create_default_context(cafile=s.ssl_cafile)
        if s.ssl_certfile:
            ctx.load_cert_chain(s.ssl_certfile, s.ssl_keyfile,
                                s.ssl_password.reveal() if s.ssl_password else None)
    if s.security_protocol.startswith("SASL"):
        return faust.SASLCredentials(
            username=s.sasl_username, mechanism=s.sasl_mechanism, ssl_context=ctx,
            password=s.sasl_password.reveal() if s.sasl_password else None)
    return faust.SSLCredentials(ctx)


# A live stream arrives a few records at a time, and aiokafka's default fetch (answer
# as soon as one byte is there) then spends a fetch round, all Python in its consumer
# thread, on every few records.  Asking the broker to gather this many bytes, or to
# wait at most this long, makes each fetch (and each batch) tens of milliseconds of
# traffic: at 20,000 events/s the consumer thread's CPU went from 6.9-12.4 to
# 6.6-8.0 µs an event (bench/kafka_throughput.py's live runs, noisy machine).  The
# price: at most FETCH_MAX_WAIT_MS more latency on a quiet stream -- twice, since the
# findings partition is fetched in the same requests and a findings message is too
# small to fill one.  At 10,000 events/s (stage tracing, 2 paced runs each) 40 ms made
# the input fetch 50 ms and the findings fetch 43 ms (p50); 10 ms: 21 and 15 ms, alerts
# p50 173 -> 85 ms, for ~10 % of a core more in fetch rounds at that rate.  At 44,000
# events/s the minimum fills in ~20 ms and the wait hardly matters.
FETCH_MIN_BYTES = 256 * 1024
FETCH_MAX_WAIT_MS = 10
# How long aiokafka waits, while any fetched partition still holds records not handed
# over, before it fetches the partitions that were (default 100 ms): the findings
# partition, drained first (see _fetch_records), is fetched again this much sooner.
PREFETCH_BACKOFF_S = 0.02
# At most this much of one partition in a fetch response (aiokafka's default: 1 MiB, about
# 3,500 telemetry records).  A job's steps all go to one partition (keyed by job): in the
# bundled incident one partition of 32 carries 31 % of the records, and the correlator's
# clock waits for it.  A partition is fetched again only once all its fetched records are
# handed over, so a busy one that fell behind caught up at most 1 MiB a round.
MAX_PARTITION_FETCH_BYTES = 4 << 20


def batch_transport(app: faust.App, handler: Callable[[dict[TP, list[Any]]], None],
                     topics: frozenset[str], first: frozenset[str] = frozenset()) -> Any:
    """Faust's aiokafka transport, its consumer handing ``topics`` over in fetched batches.

    Records of ``first`` (the findings topic) are handed over before any other
    fetched record: see ``_fetch_records``.
    """
    from faust.transport.drivers import aiokafka as driver

    class FetchingThread(driver.AIOKafkaConsumerThread):  # type: ignore[misc]
        # The last hand-over's telemetry was at most CATCH_UP_S old: hand over in time order.
        live = False

        def _create_worker_consumer(self, transport: Any) -> Any:
            consumer = super()._create_worker_consumer(transport)
            # Read by the fetcher the consumer creates when it starts (aiokafka 0.14).
            consumer._fetch_min_bytes = FETCH_MIN_BYTES
            consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
            consumer._max_partition_fetch_bytes = MAX_PARTITION_FETCH_BYTES
            return consumer

        async def _fetch_records(self, consumer: Any, active_partitions: Any,
                                 timeout: float | None = None,
                                 max_records: int | None = None) -> Any:
            """Faust's, with the findings handed over first, the telemetry in time order.

            aiokafka hands buffered partitions over in the order their fetch
            responses came, up to ``max_records`` a call: a findings message waited
            behind every telemetry record fetched before it, 0.4-0.9 s (p50) on a
            busy 2-core machine (bench/kafka_throughput.py --stages).  Here, in the
            consumer thread where the fetcher runs, ``first`` goes to the front,
            and the telemetry of several buffered partitions is taken oldest first
            (:func:`take_in_time_order`).  (Taking turns among the telemetry
            partitions by count was tried and made it worse: the busiest partition,
            which the correlator's clock waits for, then waited for all the others.)
            """
            fetcher = consumer._fetcher
            buffered = fetcher._records  # an OrderedDict, TP -> fetched result
            fetcher._prefetch_backoff = PREFETCH_BACKOFF_S
            if first:
                to_front(buffered, first)
            if (max_records and len(buffered) > 1 and self.live and self.consumer.flow_active
                    and not fetcher._subscriptions.reassignment_in_progress):
                with fetcher._subscriptions.fetch_context():
                    taken = take_in_time_order(buffered, active_partitions, max_records, first)
                if taken:
                    fetcher._notify(fetcher._wait_consume_future)  # refetch what was drained
                    self.live = is_live(taken, first)
                    return taken
            records = await super()._fetch_records(consumer, active_partitions, timeout,
                                                   hand_over_size(max_records, self.live))
            if records:
                self.live = is_live(records, first)
            return records

    class BatchConsumer(_BatchConsumer, driver.Consumer):  # type: ignore[misc]
        def _new_consumer_thread(self) -> Any:
            return FetchingThread(self, loop=self.loop, beacon=self.beacon)

    BatchConsumer.fetching_thread = FetchingThread  # (its class, for the tests)
    BatchConsumer.batch_handler = staticmethod(handler)  # type: ignore[assignment]
    BatchConsumer.batch_topics = topics

    class BatchTransport(driver.Transport):  # type: ignore[misc]
        Consumer = BatchConsumer

    return BatchTransport(app.conf.broker_consumer, app)


# A worker whose oldest telemetry handed over is older than this is catching up (a
# restart, a backlog): it takes buffered partitions in aiokafka's order, whole, so that
# each is fetched again as soon as it is drained.  In time order they all drain
# together and the fetches go in lockstep, the buffer running empty between them
# (catching up on the bench's backlog: 12-15 against 11-12 CPU µs an event in two of
# three interleaved pairs).  Time order is for a live feed, where latency counts.
CATCH_UP_S = 5.0
# Catching up, a hand-over takes up to this many times ``batch_size`` records (aiokafka's
# ``max_records``): each hand-over costs the same whatever its size -- the thread hop, the
# watermarks of every source, the correlator's release, the output producer's poll, the
# fetch loop's turns -- and a backlog is already seconds late, so a longer handler call
# costs no alert anything it has not lost.  A live feed keeps ``batch_size`` (a handler call
# holds every alert decided in it: 2,000 records, 40-60 ms p50 at half load).  The bench's
# backlog (bench/kafka_throughput.py --ratio 3 --baseline, 452,781 messages, load 7-9),
# 8,000 against 2,000 a hand-over: CPU µs an event 8.45 / 8.02, 9.28 / 8.65, 8.44 / 7.49.
CATCH_UP_BATCHES = 4


def _timestamp(record: Any) -> int:
    """A handed-over record's Kafka timestamp (ms): a lean tuple's (the service's topics) or
    an aiokafka record's (any other topic the app reads, e.g. Faust's own)."""
    return record[TIMESTAMP] if type(record) is tuple else record.timestamp


def hand_over_size(max_records: int | None, live: bool) -> int | None:
    """The most records the next hand-over takes: ``max_records`` (the ``batch_size``) after
    a live one, CATCH_UP_BATCHES times it while catching up (None: no bound)."""
    return max_records if live or not max_records else max_records * CATCH_UP_BATCHES


def is_live(records: dict[Any, list[Any]], first: frozenset[str] = frozenset(),
            now: float | None = None) -> bool:
    """Whether the oldest telemetry record handed over is at most CATCH_UP_S old (by its
    Kafka timestamp; ``first`` topics and records without a timestamp aside)."""
    oldest = min((_timestamp(recs[0]) for tp, recs in records.items()
                  if recs and tp.topic not in first and _timestamp(recs[0]) >= 0), default=None)
    if oldest is None:
        return True
    return (time.time() if now is None else now) * 1000.0 - oldest <= CATCH_UP_S * 1000.0


def take_in_time_order(buffered: Any, partitions: Any, max_records: int,
                       first: frozenset[str] = frozenset(), chunk: int | None = None
                       ) -> dict[Any, list[Any]] | None:
    """About ``max_records`` buffered records, taken oldest first across partitions.

    aiokafka fills a call's ``max_records`` from the buffered partitions in the
    order their fetch responses came, so one partition with a large buffer (the
    step topic's busiest one, fetched up to MAX_PARTITION_FETCH_BYTES at a time)
    took whole hand-overs while the other partitions' older records waited --
    and the correlator's clock, the slowest partition's, with them: at 47,000
    events/s on a loaded 2-core box, 80 % of hand-overs were at the 2,000 cap and
    a quarter of those were >= 1,500 records of that one partition, 3-4 of 33
    partitions in each; the slow alerts' clocks were held by the others
    (bench/kafka_throughput.py --stages, held_by; a fetcher probe).  Here the
    records go in Kafka-timestamp order, ``chunk`` records of a partition at a
    time: the partitions move on together, as the correlator needs.
    ``first`` topics' records all come first.  Every record taken is handed over,
    so a call gives up to ``max_records`` plus a chunk and a record per partition.

    None, leaving everything to aiokafka's own path, when anything is unusual: a
    fetch error buffered, or a partition not among ``partitions``.
    """
    import heapq

    from aiokafka.consumer.fetcher import FetchResult

    results = []
    for tp, res in buffered.items():
        if type(res) is not FetchResult or (partitions and tp not in partitions):
            return None
        results.append((tp, res))
    if chunk is None:
        chunk = max(16, max_records // (4 * max(1, len(results))))
    taken: dict[Any, list[Any]] = {}
    total = 0
    heads: list[tuple[int, int, Any, Any, list[Any]]] = []
    for seq, (tp, res) in enumerate(results):
        if tp.topic in first:
            recs = res.getall(None)
            if recs:
                taken[tp] = recs
                total += len(recs)
        else:
            recs = res.getall(chunk)
            if recs:
                heads.append((_timestamp(recs[0]), seq, tp, res, recs))
    heapq.heapify(heads)
    while heads and total < max_records:
        _, seq, tp, res, recs = heapq.heappop(heads)
        taken.setdefault(tp, []).extend(recs)
        total += len(recs)
        if res.has_more():
            more = res.getall(chunk)
            if more:
                heapq.heappush(heads, (_timestamp(more[0]), seq, tp, res, more))
    for _, _, tp, _, recs in heads:  # taken from the buffer already: handed over too
        taken.setdefault(tp, []).extend(recs)
    for tp, res in results:
        # A partition whose records ran out at a chunk's end would still look buffered
        # (aiokafka's own path; the lean path reports it drained at once), so it would not
        # be fetched again before the next hand-over, and for PREFETCH_BACKOFF_S no
        # partition would: its next record (or its end) is taken now.
        if res.has_more() and tp in taken and tp.topic not in first:
            one = res.getone()
            if one is not None:
                taken[tp].append(one)
    for tp, res in results:
        if not res.has_more():
            del buffered[tp]
    return taken


def to_front(buffered: Any, topics: frozenset[str]) -> None:
    """Move the partitions of ``topics`` to the front of an OrderedDict keyed by partition
    (aiokafka's fetched results), each group keeping its order."""
    for tp in reversed([tp for tp in buffered if tp.topic in topics]):
        buffered.move_to_end(tp, last=False)


class _BatchConsumer:
    """Replaces the fetch loop of Faust's consumer: batches to a handler, not messages to streams.

    Mirrors ``Consumer._drain_messages`` + ``getmany`` (faust-streaming 0.15):
    fetch only active (assigned, unpaused) partitions; when the flow was
    stopped for a rebalance, seek back to the committed offsets and drop the
    fetch; drop a fetch that straddles a generation change.  The handler is
    synchronous, so a rebalance or shutdown never sees a batch half done and
    there is nothing in flight to wait for.  Other topics (Faust's own) take
    the usual path.
    """

    batch_handler: Callable[[dict[TP, list[Any]]], None]
    batch_topics: frozenset[str]

    async def _drain_messages(self, fetcher: Any) -> None:  # pragma: no cover - needs Kafka
        consumer_stopped = self._stopped.is_set  # type: ignore[attr-defined]
        fetcher_stopped = fetcher._stopped.is_set
        app = self.app  # type: ignore[attr-defined]
        read_offset = self._read_offset  # type: ignore[attr-defined]
        ours = self.batch_topics
        try:
            while not (consumer_stopped() or fetcher_stopped()):
                generation = app.consumer_generation_id
                records, active = await self._wait_next_records(1.0)  # type: ignore[attr-defined]
                await asyncio.sleep(0)
                if not records or self.should_stop:  # type: ignore[attr-defined]
                    continue
                if not self.flow_active:  # type: ignore[attr-defined]
                    await self.perform_seek()  # type: ignore[attr-defined]
                    continue
                if app.consumer_generation_id != generation:
                    continue  # fetched for an assignment that is gone
                batch: dict[TP, list[Any]] = {}
                for tp, recs in records.items():
                    if not recs or (active is not None and tp not in active):
                        continue
                    if tp.topic in ours:
                        batch[tp] = recs
                        read_offset[tp] = recs[-1][OFFSET]
                    else:
                        for r in recs:
                            await self.callback(self._to_message(tp, r))  # type: ignore[attr-defined]
                        read_offset[tp] = recs[-1].offset
                if batch:
                    self.batch_handler(batch)
        except self.consumer_stopped_errors:  # type: ignore[attr-defined]
            if not app.should_stop:
                raise
        except asyncio.CancelledError:
            if not app.should_stop:
                raise


class ServiceWorker(faust.Worker):
    """Faust's worker, with a second SIGINT/SIGTERM forcing the exit (the first one is graceful)."""

    def __init__(self, *args: Any, on_force: Callable[[int], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_force = on_force
        # No terminal spinner.  At log levels >= WARNING Faust installs one that spins on
        # every log record, setting the root logger to DEBUG to see them all: every
        # debug call in aiokafka's fetch loop then builds a LogRecord (~10 % of the CPU).
        self.spinner = None

    def _schedule_shutdown(self, signum: signal.Signals) -> None:
        if self._signal_stop_time:
            self._on_force(int(signum))
            return
        log.info("%s: stopping (snapshot, commit, flush); send it again to force",
                 signal.Signals(signum).name)
        super()._schedule_shutdown(signum)
