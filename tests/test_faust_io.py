"""The private names of faust-streaming/aiokafka/mode the service leans on are all there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from detector.service.faust_io import _private_names, check_supported, missing_names


def test_the_installed_faust_and_aiokafka_have_every_internal_the_batch_path_uses() -> None:
    assert missing_names(_private_names()) == []
    check_supported()


def test_a_missing_internal_is_named() -> None:
    class Consumer:
        def _commit(self) -> None: ...

    names = [(Consumer, "_commit", "attr"), (Consumer, "_drain_messages", "attr"),
             (Consumer, "_read_offset", "source")]
    missing = missing_names(names)
    assert [m.rsplit(".", 1)[1] for m in missing] == ["_drain_messages", "_read_offset"]


def _batch(base: int, values: list[bytes], codec: int = 0) -> bytes:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    for i, v in enumerate(values):
        b.append(i, 1767225600000, b"k", v, [])
    raw = bytearray(b.build())
    raw[0:8] = base.to_bytes(8, "big")
    if codec:  # a codec id no library reads, as a crafted or foreign batch may carry
        attrs_at = 8 + 4 + 4 + 1 + 4
        raw[attrs_at:attrs_at + 2] = codec.to_bytes(2, "big")
    return bytes(raw)


def test_a_batch_that_cannot_be_decompressed_is_one_dead_letter_not_a_dead_worker() -> None:
    from aiokafka.consumer.fetcher import READ_UNCOMMITTED, PartitionRecords
    from aiokafka.record.memory_records import MemoryRecords
    from aiokafka.structs import TopicPartition

    from detector.pipeline.source import DeadLetter, Emit, SourcePartition
    from detector.service.faust_io import tolerate_unreadable_batches

    tolerate_unreadable_batches()
    good = b'{"ts": 1767225600.0, "node": "n0", "gpu": 0, "xid": 79}'
    data = _batch(0, [good, good]) + _batch(2, [good] * 3, codec=6) + _batch(5, [good])
    tp = TopicPartition("telemetry.ecc", 0)
    recs = list(PartitionRecords(tp, MemoryRecords(data), [], 0, None, None, False,
                                 READ_UNCOMMITTED))
    assert [r.offset for r in recs] == [0, 1, 2, 5]  # (aiokafka's records: not a lean topic)
    src = SourcePartition("telemetry.ecc", 0, 1)
    emits: list[Emit] = []
    dead: list[DeadLetter] = []
    src.process([(r.offset, r.key, r.value, None) for r in recs], 0.0, emits, dead)
    assert [d.offset for d in dead] == [2]
    assert "offsets 2..4 cannot be decompressed" in dead[0].reason
    assert src.events == 3 and src.offset == 5


def test_the_service_topics_come_out_of_the_fetcher_as_lean_records_with_the_same_marker() -> None:
    from aiokafka.consumer.fetcher import READ_UNCOMMITTED, PartitionRecords
    from aiokafka.record.memory_records import MemoryRecords
    from aiokafka.structs import TopicPartition

    from detector.pipeline.source import Undecodable
    from detector.service.faust_io import tolerate_unreadable_batches

    tolerate_unreadable_batches(frozenset({"lean.telemetry.ecc"}))
    good = b'{"ts": 1767225600.0, "node": "n0", "gpu": 0, "xid": 79}'
    data = _batch(0, [good, good]) + _batch(2, [good] * 3, codec=6) + _batch(5, [good])
    recs = list(PartitionRecords(TopicPartition("lean.telemetry.ecc", 0), MemoryRecords(data),
                                 [], 0, None, None, False, READ_UNCOMMITTED))
    assert all(type(r) is tuple and len(r) == 4 for r in recs)  # (offset, key, value, ts)
    assert [(r[0], r[2]) for r in recs if r[0] != 2] == [(0, good), (1, good), (5, good)]
    assert isinstance(recs[2][2], Undecodable) and recs[2][0] == 2
    assert recs[0][1] == b"k" and recs[0][3] > 0  # Kafka's timestamp, in ms
    # Other topics (Faust's own) keep aiokafka's records.
    other = list(PartitionRecords(TopicPartition("other", 0), MemoryRecords(_batch(0, [good])),
                                  [], 0, None, None, False, READ_UNCOMMITTED))
    assert type(other[0]) is not tuple and other[0].value == good


def test_findings_are_handed_over_before_telemetry_fetched_earlier() -> None:
    """The fetcher's buffered results, in the order they came: findings go to the front."""
    from collections import OrderedDict

    from aiokafka.structs import TopicPartition

    from detector.service.faust_io import to_front

    came = [("t.step", 7), ("f", 1), ("t.nic", 0), ("f", 0), ("t.ecc", 3)]
    buffered = OrderedDict((TopicPartition(t, p), k) for k, (t, p) in enumerate(came))
    to_front(buffered, frozenset({"f"}))
    assert [(tp.topic, tp.partition) for tp in buffered] == [
        ("f", 1), ("f", 0), ("t.step", 7), ("t.nic", 0), ("t.ecc", 3)]
    assert list(buffered.values()) == [1, 3, 0, 2, 4]  # nothing else changed


def test_the_fetch_time_of_records_handed_over_is_noted_for_stage_tracing() -> None:
    import time

    from aiokafka.consumer.fetcher import READ_UNCOMMITTED, PartitionRecords
    from aiokafka.record.memory_records import MemoryRecords
    from aiokafka.structs import TopicPartition

    from detector.service.faust_io import FETCHED_AT, tolerate_unreadable_batches

    tolerate_unreadable_batches(frozenset({"stamped.telemetry.ecc"}))
    tp = TopicPartition("stamped.telemetry.ecc", 0)
    before = time.time()
    records = PartitionRecords(tp, MemoryRecords(_batch(0, [b"{}"])), [], 0, None, None,
                               False, READ_UNCOMMITTED)
    assert tp not in FETCHED_AT  # noted when the records are taken, not when fetched
    assert len(list(records)) == 1
    assert before <= FETCHED_AT[tp] <= time.time()


# -- the list is the truth: every private name used is listed, and used nowhere else ------

FAUST_IO = Path(__file__).resolve().parent.parent / "detector" / "service" / "faust_io.py"
DETECTOR = FAUST_IO.parent.parent


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_names_used(source: str) -> set[str]:
    """The private names of other libraries a module like faust_io.py relies on: private
    attributes it reads or sets, and private methods its classes override -- less its own
    (module-level definitions, ``_faultline_*`` marks, what its own ``__init__``s set)."""
    tree = ast.parse(source)
    used: set[str] = set()
    ours = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            used.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    if _private(item.name):
                        used.add(item.name)  # an override: the library must still call it
                    elif item.name == "__init__":
                        ours |= {t.attr for s in ast.walk(item) if isinstance(s, ast.Assign)
                                 for t in s.targets if isinstance(t, ast.Attribute)
                                 and isinstance(t.value, ast.Name) and t.value.id == "self"}
    return {n for n in used if n not in ours and not n.startswith("_faultline")}


def test_every_private_name_faust_io_uses_is_checked_at_start() -> None:
    listed = {name for _, name, _ in _private_names()}
    assert sorted(private_names_used(FAUST_IO.read_text()) - listed) == []


def test_the_completeness_check_sees_an_unlisted_private_name() -> None:
    src = ("class C(Lib):\n    def __init__(self):\n        self._mine = 1\n"
           "    def _hook(self):\n        return self._theirs + self._mine\n"
           "def _helper(x):\n    x._faultline_mark = x._buf\n")
    assert private_names_used(src) == {"_hook", "_theirs", "_buf"}


@pytest.mark.parametrize("path", sorted(p for p in DETECTOR.rglob("*.py") if p != FAUST_IO),
                         ids=lambda p: str(p.relative_to(DETECTOR)))
def test_no_other_module_reaches_into_faust_or_aiokafka(path: Path) -> None:
    """A listed private name read off anything but ``self`` outside faust_io.py is a leak
    (``app.consumer._commit`` in the service was one)."""
    listed = {name for _, name, _ in _private_names() if _private(name)}
    leaks = [f"{path.name}:{n.lineno}: .{n.attr}" for n in ast.walk(ast.parse(path.read_text()))
             if isinstance(n, ast.Attribute) and n.attr in listed
             and not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"))]
    assert leaks == []


def test_the_worker_refuses_to_start_on_a_faust_that_lacks_an_internal(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``faultline serve`` checks before it creates a topic or a state folder (a newer
    faust-streaming cannot be installed here: the list is made to name one it lacks)."""
    import faust

    from detector.service import app, faust_io
    from detector.settings import Settings

    monkeypatch.setattr(faust_io, "_private_names",
                        lambda: [(faust.Worker, "_gone_in_a_newer_faust", "attr")])
    state = tmp_path / "state"
    settings = Settings.load(env={}, overrides={"bootstrap_servers": "127.0.0.1:9",
                                                "state_dir": str(state)})
    with pytest.raises(RuntimeError, match=r"lacks: faust\.worker\.Worker\._gone_in_a_newer"):
        app.run(settings, on_force=lambda signum: None)
    assert not state.exists()


class _Position:
    def __init__(self) -> None:
        self.paused = False
        self.position = 0

    def consumed_to(self, offset: int) -> None:
        self.position = offset


class _Assignment:
    active = True

    def __init__(self) -> None:
        self.states: dict[object, _Position] = {}

    def state_value(self, tp: object) -> _Position:
        return self.states.setdefault(tp, _Position())


def _buffered(parts: dict[tuple[str, int], list[int]]) -> object:
    """aiokafka's buffer of fetched results: per partition, records at these ms timestamps."""
    from collections import OrderedDict

    from aiokafka.consumer.fetcher import READ_UNCOMMITTED, FetchResult, PartitionRecords
    from aiokafka.record.default_records import DefaultRecordBatchBuilder
    from aiokafka.record.memory_records import MemoryRecords
    from aiokafka.structs import TopicPartition

    assignment = _Assignment()
    out: OrderedDict[object, object] = OrderedDict()
    for (topic, p), stamps in parts.items():
        b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 22)
        for i, ts in enumerate(stamps):
            b.append(i, ts, b"k", b"{}", [])
        tp = TopicPartition(topic, p)
        out[tp] = FetchResult(tp, assignment=assignment, backoff=0, partition_records=(
            PartitionRecords(tp, MemoryRecords(bytes(b.build())), [], 0, None, None, False,
                             READ_UNCOMMITTED)))
    return out


def test_buffered_telemetry_is_handed_over_oldest_first_across_partitions() -> None:
    """A partition with a large buffer, fetched first, no longer takes whole hand-overs while
    the others' older records wait: the partitions move on together, findings first."""
    from detector.service.faust_io import take_in_time_order, tolerate_unreadable_batches

    tolerate_unreadable_batches(frozenset({"t.step", "t.nic", "t.ecc", "f"}))
    big = [1_000 + i for i in range(5_000)]             # 5 s of a busy partition
    sparse = [1_000 + 50 * i for i in range(100)]       # 5 s, a record every 50 ms
    buffered = _buffered({("t.step", 7): big, ("t.nic", 0): sparse, ("f", 0): [990, 5_990],
                          ("t.ecc", 3): sparse})
    handed: list[dict[object, list[object]]] = []
    while buffered:
        taken = take_in_time_order(buffered, None, 1_000, first=frozenset({"f"}), chunk=20)
        assert taken
        handed.append(taken)
    first = handed[0]
    assert next(iter(first)).topic == "f" and len(first[next(iter(first))]) == 2
    # The first hand-over: about a second of every partition, not 1,000 records of one.
    newest = {tp.topic: recs[-1][3] for tp, recs in first.items()}
    assert newest["t.nic"] >= 1_800 and newest["t.ecc"] >= 1_800 and newest["t.step"] <= 2_100
    assert sum(map(len, first.values())) <= 1_000 + 3 * (20 + 1) + 2
    # Every record exactly once, in offset order per partition.
    for topic, n in (("t.step", 5_000), ("t.nic", 100), ("t.ecc", 100)):
        offsets = [r[0] for h in handed for tp, recs in h.items() if tp.topic == topic
                   for r in recs]
        assert offsets == list(range(n))


def test_an_unusual_buffer_is_left_to_aiokafka() -> None:
    from aiokafka.consumer.fetcher import FetchError
    from aiokafka.errors import KafkaError
    from aiokafka.structs import TopicPartition

    from detector.service.faust_io import take_in_time_order

    buffered = _buffered({("t.nic", 0): [1, 2], ("t.ecc", 3): [1, 2]})
    assert take_in_time_order(buffered, {TopicPartition("t.nic", 0)}, 100) is None
    buffered[TopicPartition("t.step", 0)] = FetchError(error=KafkaError(), backoff=0)
    assert take_in_time_order(buffered, None, 100) is None
    assert len(buffered) == 3  # nothing taken


def test_time_order_is_for_a_live_feed_not_for_catching_up() -> None:
    from aiokafka.structs import TopicPartition

    from detector.service.faust_io import CATCH_UP_S, Fetched, is_live

    now = 1_800_000_000.0

    def at(age_s: float) -> list[Fetched]:
        return [(0, None, b"{}", int((now - age_s) * 1000))]

    nic, f = TopicPartition("t.nic", 0), TopicPartition("f", 0)
    assert is_live({nic: at(0.5)}, now=now)
    assert not is_live({nic: at(CATCH_UP_S + 1), f: at(0)}, frozenset({"f"}), now=now)
    assert is_live({f: at(60)}, frozenset({"f"}), now=now)  # findings say nothing of the feed
    # A topic that is not the service's (Faust's own) comes as aiokafka's records: read too,
    # not a crash in the consumer thread (the bench's Faust batch run died on it once).
    from aiokafka.structs import ConsumerRecord

    other = TopicPartition("faust-internal", 0)
    old = ConsumerRecord("faust-internal", 0, 0, int((now - CATCH_UP_S - 1) * 1000), 0,
                         None, b"{}", None, -1, -1, ())
    assert not is_live({other: [old], nic: at(0.5)}, now=now)


def test_a_partition_drained_at_a_chunks_end_is_fetched_again_at_once() -> None:
    """Records that run out exactly at a chunk's end leave no empty result in the buffer
    (it would hold the partition's next fetch, and every fetch for the prefetch backoff)."""
    from detector.service.faust_io import take_in_time_order, tolerate_unreadable_batches

    tolerate_unreadable_batches(frozenset({"t.nic", "t.ecc"}))
    buffered = _buffered({("t.nic", 0): list(range(20)), ("t.ecc", 3): list(range(7))})
    taken = take_in_time_order(buffered, None, 1_000, chunk=20)
    assert taken is not None and sorted(map(len, taken.values())) == [7, 20]
    assert not buffered


def test_untrusted_kafka_timestamps_neither_starve_a_partition_nor_lose_records() -> None:
    """Kafka timestamps are the producer's (CreateTime): a partition stamped in 2100 or at
    the epoch only sorts last or first; every partition still moves on at every hand-over
    and every record is handed over exactly once."""
    from detector.service.faust_io import is_live, take_in_time_order, tolerate_unreadable_batches

    tolerate_unreadable_batches(frozenset({"t.step", "t.nic", "t.ecc"}))
    year_2100 = 4_102_444_800_000
    buffered = _buffered({("t.step", 0): [1_000 + i for i in range(400)],
                          ("t.nic", 0): [year_2100 + i for i in range(100)],
                          ("t.ecc", 0): [0] * 100})
    handed = []
    while buffered:
        waiting = {tp.topic for tp in buffered}
        taken = take_in_time_order(buffered, None, 100, chunk=20)
        assert taken
        handed.append(taken)
        assert {tp.topic for tp in taken} == waiting  # every partition with records moves
    assert len(handed) > 3  # (several hand-overs: the rule was exercised, not one big take)
    for topic, n in (("t.step", 400), ("t.nic", 100), ("t.ecc", 100)):
        offsets = [r[0] for h in handed for tp, recs in h.items() if tp.topic == topic
                   for r in recs]
        assert offsets == list(range(n))
    # A far-future stamp reads as live (time order: the latency path), never as a crash.
    assert is_live({tp: recs for tp, recs in handed[0].items() if tp.topic == "t.nic"})


def _fetch_result(topic: str, data: bytes, fetch_offset: int) -> tuple[object, _Assignment]:
    from aiokafka.consumer.fetcher import READ_UNCOMMITTED, FetchResult, PartitionRecords
    from aiokafka.record.memory_records import MemoryRecords
    from aiokafka.structs import TopicPartition

    tp = TopicPartition(topic, 0)
    assignment = _Assignment()
    assignment.state_value(tp).position = fetch_offset
    return FetchResult(tp, assignment=assignment, backoff=0, partition_records=PartitionRecords(
        tp, MemoryRecords(data), [], fetch_offset, None, None, True, READ_UNCOMMITTED)), \
        assignment


@pytest.mark.parametrize("take", [1, 3, 4, 7, 100])
def test_lean_records_are_taken_a_record_batch_at_a_time_as_aiokafka_hands_them(
        take: int) -> None:
    """The lean path (whole record batches in C) hands over what aiokafka's generator does:
    the same records from a fetch offset inside a batch, at most ``max_records`` a call,
    the position after the last one taken; and it says it is drained the moment it is."""
    from detector.service.faust_io import tolerate_unreadable_batches

    tolerate_unreadable_batches(frozenset({"bulk.telemetry.nic"}))
    values = [f'{{"n": {i}}}'.encode() for i in range(15)]
    data = _batch(0, values[:5]) + _batch(5, values[5:12]) + _batch(12, values[12:])
    lean, lean_assignment = _fetch_result("bulk.telemetry.nic", data, 2)
    theirs, their_assignment = _fetch_result("bulk.other", data, 2)
    got: list[tuple[int, bytes, bytes, int]] = []
    while lean.has_more():  # type: ignore[attr-defined]
        recs = lean.getall(take)  # type: ignore[attr-defined]
        assert 0 < len(recs) <= take
        ref = theirs.getall(take)  # type: ignore[attr-defined]
        assert [r[0] for r in recs] == [r.offset for r in ref]
        assert [(r[1], r[2], r[3]) for r in recs] == [(r.key, r.value, r.timestamp) for r in ref]
        positions = [a.state_value(tp).position for a, tp in (
            (lean_assignment, lean._topic_partition),  # type: ignore[attr-defined]
            (their_assignment, theirs._topic_partition))]  # type: ignore[attr-defined]
        assert positions[0] == positions[1] == recs[-1][0] + 1
        got += recs
    assert [r[0] for r in got] == list(range(2, 15)) and [r[2] for r in got] == values[2:]
    if theirs.has_more():  # type: ignore[attr-defined]
        # aiokafka's own learns it is drained one call later, when a call ends on a full take
        assert theirs.getall(take) == []  # type: ignore[attr-defined]
    assert not theirs.has_more()  # type: ignore[attr-defined]


def test_lean_records_one_at_a_time_and_after_a_seek() -> None:
    from detector.service.faust_io import tolerate_unreadable_batches

    tolerate_unreadable_batches(frozenset({"one.telemetry.ecc"}))
    data = _batch(0, [b"{}"] * 3) + _batch(3, [b"{}"] * 2)
    res, assignment = _fetch_result("one.telemetry.ecc", data, 0)
    offsets = [res.getone()[0] for _ in range(4)]  # type: ignore[attr-defined]
    assert offsets == [0, 1, 2, 3]
    assert res.has_more()  # type: ignore[attr-defined]
    # The consumer seeks elsewhere: the buffered records are not handed over.
    assignment.state_value(res._topic_partition).position = 0  # type: ignore[attr-defined]
    assert res.getall(10) == [] and not res.has_more()  # type: ignore[attr-defined]


def _calls(res: object, take: int | None, n: int = 4) -> list[object]:
    """What each of up to ``n`` getall calls gives: the offsets, or the error's name."""
    out: list[object] = []
    for _ in range(n):
        try:
            recs = res.getall(take)  # type: ignore[attr-defined]
            out.append([r[0] if type(r) is tuple else r.offset for r in recs])
        except Exception as exc:  # noqa: BLE001 -- the error is what is compared
            out.append(type(exc).__name__)
        if not res.has_more():  # type: ignore[attr-defined]
            break
    return out


@pytest.mark.parametrize("take", [3, None])
def test_a_batch_failing_its_crc_is_fetched_again_not_passed_over(take: int | None) -> None:
    """aiokafka raises once, then ends the fetch with the position at the bad batch, so it
    is fetched again; the lean path did the same only inside one call, and a take ending at
    the batch before it went on after it, its records lost (review, 2026-12-02)."""
    from detector.service.faust_io import tolerate_unreadable_batches

    tolerate_unreadable_batches(frozenset({"crc.telemetry.nic"}))
    bad = bytearray(_batch(3, [b"{}"] * 2))
    bad[-1] ^= 0xFF  # a payload byte: the CRC no longer matches
    data = _batch(0, [b"{}"] * 3) + bytes(bad) + _batch(5, [b"{}"] * 2)
    lean, lean_assignment = _fetch_result("crc.telemetry.nic", data, 0)
    theirs, their_assignment = _fetch_result("crc.other", data, 0)
    got = _calls(lean, take)
    assert got == _calls(theirs, take)
    assert "CorruptRecordException" in got and [5] not in got
    assert not lean.has_more()  # type: ignore[attr-defined]
    positions = [a.state_value(r._topic_partition).position  # type: ignore[attr-defined]
                 for a, r in ((lean_assignment, lean), (their_assignment, theirs))]
    # at the bad batch (3), or before the records the failing call took (0: they are
    # fetched again, as aiokafka does; none is lost)
    assert positions[0] == positions[1] == (3 if take == 3 else 0)


def test_getall_of_zero_takes_one_record_as_aiokafka_does() -> None:
    from detector.service.faust_io import tolerate_unreadable_batches

    tolerate_unreadable_batches(frozenset({"zero.telemetry.ecc"}))
    data = _batch(0, [b"{}"] * 3)
    lean, _ = _fetch_result("zero.telemetry.ecc", data, 0)
    theirs, _ = _fetch_result("zero.other", data, 0)
    assert [r[0] for r in lean.getall(0)] == [  # type: ignore[attr-defined]
        r.offset for r in theirs.getall(0)] == [0]  # type: ignore[attr-defined]


def test_an_aiokafka_release_the_lean_path_was_not_written_for_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import aiokafka

    from detector.service.faust_io import aiokafka_version_ok

    assert aiokafka_version_ok(aiokafka.__version__)
    assert not aiokafka_version_ok("0.15.0") and not aiokafka_version_ok("0.13.2")
    assert not aiokafka_version_ok("1.0") and not aiokafka_version_ok("dev")
    monkeypatch.setattr(aiokafka, "__version__", "0.15.0")
    with pytest.raises(RuntimeError, match=r"aiokafka 0\.15\.0"):
        check_supported()
