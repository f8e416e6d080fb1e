"""The lean fetch path against aiokafka's own over what a real log holds besides plain
batches: a compacted tail (a batch whose last offset outlives its last record), offsets
with gaps inside a batch, an aborted transaction and its abort marker, a committed one
and its commit marker (read_committed).  Each take size, and one record at a time:
the same records, the same position after every call that hands records over.

(Review, 2026-12-02: the first lean version put the position at the batch's end after a
take ending on a compacted batch's last record, where aiokafka's is after that record.)
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_faust_io import _Assignment

_TS = 1767225600000
_ATTRS_AT = 8 + 4 + 4 + 1 + 4          # v2 header: base offset, length, epoch, magic, crc
_LAST_DELTA_AT = _ATTRS_AT + 2
_CONTROL, _TRANSACTIONAL = 0x20, 0x10


def _batch(base: int, deltas: list[int], *, last_delta: int | None = None, pid: int = -1,
           control: bytes | None = None) -> bytes:
    """Records at ``base + delta``; ``last_delta`` past the last record's (compaction);
    ``pid`` >= 0 a transactional batch of that producer; ``control`` a control batch
    whose one record has this key (a commit or abort marker)."""
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(2, 0, int(pid >= 0), pid, 0 if pid >= 0 else -1, -1,
                                  1 << 20)
    if control is not None:
        b.append(0, _TS, control, b"\x00\x00\x00\x00\x00\x00", [])
    else:
        for d in deltas:
            b.append(d, _TS + base + d, b"k", f'{{"o": {base + d}}}'.encode(), [])
    raw = bytearray(b.build())
    raw[0:8] = base.to_bytes(8, "big")
    if last_delta is not None:
        raw[_LAST_DELTA_AT:_LAST_DELTA_AT + 4] = last_delta.to_bytes(4, "big")
    if control is not None:
        attrs = int.from_bytes(raw[_ATTRS_AT:_ATTRS_AT + 2], "big") | _CONTROL
        raw[_ATTRS_AT:_ATTRS_AT + 2] = attrs.to_bytes(2, "big")
    return bytes(raw)


_ABORT, _COMMIT = b"\x00\x00\x00\x00", b"\x00\x00\x00\x01"  # ControlRecord v0, type
# 0..2 (3, 4 compacted away) | 5, 6 aborted (producer 7) | abort marker 7 |
# 8, 9 committed (producer 8) | commit marker 10 | 11, 13 (12 compacted away) | 14, 15 |
# commit marker 16 (producer 9)
# (each batch with the offset after it: a fetch is answered from the batch holding its offset)
_LOG = [(5, _batch(0, [0, 1, 2], last_delta=4)), (7, _batch(5, [0, 1], pid=7)),
        (8, _batch(7, [0], pid=7, control=_ABORT)), (10, _batch(8, [0, 1], pid=8)),
        (11, _batch(10, [0], pid=8, control=_COMMIT)), (14, _batch(11, [0, 2], last_delta=2)),
        (16, _batch(14, [0, 1])), (17, _batch(16, [0], pid=9, control=_COMMIT))]
_KEPT = [0, 1, 2, 8, 9, 11, 13, 14, 15]


def _fetch(topic: str, fetch_offset: int, upto: int = 99) -> tuple[Any, Any]:
    from aiokafka.consumer.fetcher import READ_COMMITTED, FetchResult, PartitionRecords
    from aiokafka.record.memory_records import MemoryRecords
    from aiokafka.structs import TopicPartition

    tp = TopicPartition(topic, 0)
    assignment = _Assignment()
    state = assignment.state_value(tp)
    state.position = fetch_offset
    data = b"".join(raw for end, raw in _LOG if fetch_offset < end <= upto)
    part = PartitionRecords(tp, MemoryRecords(data), [(7, 5)], fetch_offset, None, None,
                            False, READ_COMMITTED)  # (the headers were patched: no CRC)
    return FetchResult(tp, assignment=assignment, backoff=0, partition_records=part), state


def _offset(r: Any) -> int:
    return r[0] if type(r) is tuple else r.offset


def _calls(res: Any, state: Any, take: int | None) -> list[tuple[list[int], int]]:
    """(offsets, position after) of each call that handed records over, until drained."""
    out = []
    for _ in range(100):
        if not res.has_more():
            break
        if take == 0:  # one at a time
            one = res.getone()
            recs = [] if one is None else [one]
        else:
            recs = res.getall(take)
        if recs:
            out.append(([_offset(r) for r in recs], state.position))
    return out


@pytest.mark.parametrize("take", [0, 1, 2, 3, 4, 5, None])
@pytest.mark.parametrize("fetch_offset", [0, 1, 3, 5, 8, 12])
def test_lean_takes_what_aiokafka_takes_from_compacted_and_transactional_batches(
        take: int | None, fetch_offset: int) -> None:
    from detector.service.faust_io import tolerate_unreadable_batches

    tolerate_unreadable_batches(frozenset({"review.lean"}))
    lean, lean_state = _fetch("review.lean", fetch_offset)
    theirs, their_state = _fetch("review.theirs", fetch_offset)
    got, want = _calls(lean, lean_state, take), _calls(theirs, their_state, take)
    assert got == want
    assert [o for offsets, _ in got for o in offsets] == [
        o for o in _KEPT if o >= fetch_offset]
    # Drained, both at the log's end (aiokafka's own may need one more, empty, call).
    _calls(theirs, their_state, take)
    assert not lean.has_more() and not theirs.has_more()
    assert lean_state.position == their_state.position == 17


@pytest.mark.parametrize("take", [1, 2, None])
@pytest.mark.parametrize("fetch_offset", [0, 3, 5, 7, 10, 12, 16])
@pytest.mark.parametrize("upto", [end for end, _ in _LOG])
def test_a_fetch_response_ending_anywhere_leaves_the_same_position(
        take: int | None, fetch_offset: int, upto: int) -> None:
    """A response ending after any batch (a batch with no record left to hand over, a
    marker last): drained, the position is where aiokafka's is."""
    from detector.service.faust_io import tolerate_unreadable_batches

    if upto <= fetch_offset:
        return
    tolerate_unreadable_batches(frozenset({"review.lean"}))
    lean, lean_state = _fetch("review.lean", fetch_offset, upto)
    theirs, their_state = _fetch("review.theirs", fetch_offset, upto)
    assert _calls(lean, lean_state, take) == _calls(theirs, their_state, take)
    _calls(theirs, their_state, take)
    assert not lean.has_more() and not theirs.has_more()
    assert lean_state.position == their_state.position == upto
