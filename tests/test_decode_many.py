"""Batch decoding (decoding.decode_many) through the worker: the same records and reasons as
one message at a time, whatever the messages of a batch hold.

The batch is one JSON array with a separator between messages; these tests
try to make a batch mean something its messages do not -- a message of two
objects, two messages that form one object, a forged separator -- and check
that every message still gets exactly the outcome :func:`decode` gives it.
"""

from __future__ import annotations

import contextlib
import random

import msgspec
import pytest

from detector.decoding import BATCH_MIN, CHUNK, decode, decode_chunked, decode_many
from detector.events import ECC, STEP, THERMAL, InvalidMessage, StepSample, ThermalSample
from detector.pipeline.source import DeadLetter
from detector.pipeline.worker import PipelineWorker
from detector.testing import T0, step, thermal


def _thermal(i: int) -> bytes:
    return msgspec.json.encode(thermal(T0 + i * 0.01, f"node-{i % 4:03d}", i % 8))


def _step(i: int) -> bytes:
    return msgspec.json.encode(step(T0 + i * 0.01, i % 8, i // 8))


def alone(topic: str, raw: bytes) -> object:
    """What decode() makes of one message: its record, or its dead-letter reason."""
    try:
        return decode(topic, raw)
    except InvalidMessage as exc:
        return str(exc)


def through_worker(topic: str, raws: list[bytes]) -> tuple[list[DeadLetter], int]:
    """The batch through the real worker path: its dead letters and the records kept.

    Valid messages go first, so the batch is one the worker decodes at once; they are
    left out of what is returned (offsets count from the first of ``raws``).
    """
    w = PipelineWorker(telemetry_topics={topic: topic}, findings_topic="findings",
                       findings_partitions=1, wall_clock=lambda: T0)
    tp = (topic, 0)
    part = w.new_partition(tp, 0.0)
    w.sources = {tp: part}  # type: ignore[dict-item]
    pad = [(_step if topic == STEP else _thermal)(i) for i in range(BATCH_MIN)]
    out = w.process({tp: [(i, b"k", raw, None) for i, raw in enumerate(pad + raws)]}, 0.0,
                    lambda tp, offset: True)
    dead = [d._replace(offset=d.offset - len(pad)) for _, d in out.dead]
    return dead, part.events - len(pad)  # type: ignore[union-attr]


def test_a_clean_batch_is_the_records_of_its_messages() -> None:
    for topic, make in ((THERMAL, _thermal), (STEP, _step)):
        raws = [make(i) for i in range(200)]
        assert decode_many(topic, raws) == [decode(topic, r) for r in raws]
    assert decode_many(THERMAL, []) == []


@pytest.mark.parametrize("bad", [
    b'{"ts": 1.0, "node": "n0", "gpu": -1}',                # out of range
    b'{"ts": 1.0, "node": "n0"}',                           # a required field missing
    b'{"ts": 1.0, "node": "n\\u001b[31m", "gpu": 0}',       # an escaped control character
    b'{"ts": 1.0, "node": "n\x7f", "gpu": 0}',              # DEL in a name
    b'{"ts": NaN, "node": "n0", "gpu": 0}',                 # not JSON
    b"[1, 2]",                                              # not an object
    b"",                                                    # nothing
    b'{"ts": 1.0, "node": "n0", "gpu": 0, "x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    #                                                         nested far too deep
])
def test_a_bad_message_in_the_middle_of_a_batch_gets_its_own_dead_letter(bad: bytes) -> None:
    raws = [_thermal(i) for i in range(5)] + [bad] + [_thermal(i) for i in range(5, 10)]
    dead, kept = through_worker(THERMAL, raws)
    assert [(d.offset, d.value, d.reason) for d in dead] == [(5, bad, alone(THERMAL, bad))]
    assert kept == 10  # the good messages around it are all kept


def test_a_step_whose_parts_exceed_it_is_dead_lettered_alone() -> None:
    bad = msgspec.json.encode(step(T0, 3, 0, step_ms=500.0, compute_ms=700.0))
    raws = [_step(i) for i in range(8)] + [bad] + [_step(i) for i in range(8, 16)]
    many = decode_many(STEP, raws)
    assert many is not None and many[8] is None  # only that one is decided on its own
    assert [m for k, m in enumerate(many) if k != 8] == [decode(STEP, r) for r in raws if r != bad]
    dead, kept = through_worker(STEP, raws)
    assert [(d.offset, d.reason) for d in dead] == [(8, alone(STEP, bad))]
    assert "compute_ms + comm_ms" in dead[0].reason and kept == 16


GOOD = b'{"ts":1.0,"node":"n0","gpu":0}'
# Batches whose messages are not one JSON object each, yet join into a valid array: a
# message of two objects beside two messages that make one object (a string or a list
# across the boundary), a forged separator (raw or escaped), and brackets that close the
# batch early.
ADVERSARIAL = [
    [GOOD + b"," + GOOD, b'{"ts":1.0,"node":"}', b'{","gpu":0}'],
    [b'{"ts":1.0,"node":"n0","gpu":0,"x":[1', b'2]}', GOOD + b"," + GOOD],
    [b'{"ts":1.0,"node":"n0","gpu":0,"x":[{}', b'{}]}', GOOD + b",\n" + GOOD],
    [GOOD + ',"\u00a7",'.encode() + GOOD, GOOD, GOOD],
    [GOOD + b',"\\u00a7",' + GOOD, GOOD, GOOD],
    [GOOD + b',"\\u00a7"', b'"\\u00a7",' + GOOD, GOOD],
    [GOOD + b"]", b"[" + GOOD, GOOD],
    [b'{"ts":1.0,"node":"n0","gpu":0,"x":"', b'"}', GOOD],
    [b"  " + GOOD + b"\n", b"\t" + GOOD, GOOD],             # whitespace: valid, one value each
]


@pytest.mark.parametrize("raws", ADVERSARIAL)
def test_messages_that_are_not_one_object_cannot_change_the_batch(raws: list[bytes]) -> None:
    expected = [alone(THERMAL, r) for r in raws]
    many = decode_many(THERMAL, raws)
    assert many is None or many == expected
    dead, kept = through_worker(THERMAL, raws)
    assert [(d.offset, d.reason) for d in dead] == [
        (k, e) for k, e in enumerate(expected) if isinstance(e, str)]
    assert kept == sum(not isinstance(e, str) for e in expected)


def test_valid_messages_cut_at_random_never_decode_as_another_batch() -> None:
    """Join valid messages and cut the bytes anywhere: a batch decoded at once is always
    exactly its pieces' own records (else decode_many must refuse it)."""
    rng = random.Random(14)
    pool = [_thermal(i) for i in range(8)] + [b'{"ts":1.0,"node":"n0","gpu":0,"x":[1,{}]}',
                                              b'{"ts":2.0,"node":"}{","gpu":1,"y":"],["}']
    naive = msgspec.json.Decoder(list[ThermalSample])
    fooled = 0  # cuts a plain join would decode as that many records although some are bad
    for _ in range(3000):
        msgs = [rng.choice(pool) for _ in range(rng.randint(2, 6))]
        glue = rng.choice([b",", b"", b",\n", b' ,"\\u00a7", '])
        text = glue.join(msgs)
        cuts = sorted(rng.sample(range(1, len(text)), len(msgs) - 1))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        expected = [alone(THERMAL, p) for p in pieces]
        many = decode_many(THERMAL, pieces)
        assert many is None or many == expected, pieces
        if any(isinstance(e, str) for e in expected):
            with contextlib.suppress(msgspec.MsgspecError):
                fooled += len(naive.decode(b"[" + b",".join(pieces) + b"]")) == len(pieces)
    assert fooled > 50  # the cuts do try what a plain join would fall for


def test_a_batch_that_is_not_bytes_or_over_the_limit_is_decided_message_by_message() -> None:
    huge = b'{"ts":1.0,"node":"n0","gpu":0,"pad":"' + b"x" * (1 << 20) + b'"}'
    assert decode_many(ECC, [GOOD, huge]) is None
    assert decode_many(ECC, [GOOD, None]) is None  # type: ignore[list-item]
    assert decode_many(ECC, [GOOD, "{}"]) is None  # type: ignore[list-item]
    assert decode_many("telemetry.unknown", [GOOD, GOOD]) is None
    dead, kept = through_worker(THERMAL, [GOOD, huge, GOOD])
    assert [(d.offset, d.reason) for d in dead] == [(1, alone(THERMAL, huge))] and kept == 2


def test_every_decoder_applies_the_rank_rule_that_the_constructor_does() -> None:
    """No ranks: pure data parallelism; only some: invalid -- built, decoded alone, in a
    batch or from a parsed value alike (decoding skips the constructor, so it applies it)."""
    from detector.decoding import decode_value

    base = {"ts": T0, "job": "j", "step": 3, "rank": 5, "node": "n0", "gpu": 5,
            "step_ms": 1000.0}
    none = msgspec.json.encode(base)
    some = msgspec.json.encode({**base, "tp_rank": 1, "dp_rank": 2})
    built = StepSample(T0, "j", 3, 5, "n0", 5, 1000.0)
    assert (built.tp_rank, built.pp_rank, built.dp_rank) == (0, 0, 5)
    with pytest.raises(ValueError, match="all three or none"):
        StepSample(T0, "j", 3, 5, "n0", 5, 1000.0, tp_rank=1)
    many = decode_many(STEP, [none, some, none])
    assert many is not None and many[1] is None
    for ev in (decode(STEP, none), decode_value(STEP, base), many[0], many[2]):
        assert ev == built
    reason = alone(STEP, some)
    assert isinstance(reason, str) and "'pp_rank'" in reason and "all three or none" in reason
    with pytest.raises(InvalidMessage) as exc:
        decode_value(STEP, msgspec.json.decode(some))
    assert str(exc.value) == reason
    dead, kept = through_worker(STEP, [none, some, none])
    assert [(d.offset, d.reason) for d in dead] == [(1, reason)] and kept == 2


def test_mutated_streams_give_the_same_output_in_batches_as_one_by_one() -> None:
    """The fuzzer's mutated messages (valid ones among them) through a partition in fetched
    batches and through another one message at a time: the same dead letters with the same
    reasons, the same findings, the same counts."""
    from detector.pipeline.source import Emit, SourcePartition
    from replay.fuzz import mixed_stream

    by_topic: dict[str, list[bytes]] = {}
    for topic, data, _ in mixed_stream(400, seed=14, valid_per_mutated=20.0):
        by_topic.setdefault(topic, []).append(data)
    rng = random.Random(14)
    batched_any = 0
    for topic, raws in by_topic.items():
        records = [(i, b"k", raw, None) for i, raw in enumerate(raws)]
        outs = []
        for batched in (True, False):
            part = SourcePartition(topic, 0, 1, wall_clock=lambda: T0 + 3600.0)
            emits: list[Emit] = []
            dead: list[DeadLetter] = []
            i = 0
            while i < len(records):
                n = rng.randint(BATCH_MIN, 24) if batched else 1
                if batched:
                    batched_any += decode_many(topic, [r[2] for r in records[i:i + n]]) is not None
                part.process(records[i:i + n], 0.0, emits, dead)
                i += n
            outs.append((dead, emits, part.events, part.invalid))
        assert outs[0] == outs[1], topic
        assert outs[0][3] > 0  # some were dead-lettered
    assert batched_any > 20  # and many batches were decoded at once


def test_a_bad_message_costs_only_its_chunk_of_a_fetched_batch() -> None:
    bad = b'{"ts": 1.0, "node": "n0", "gpu": -1}'
    raws = [_thermal(i) for i in range(50)] + [bad] + [_thermal(i) for i in range(50, 100)]
    evs = decode_chunked(THERMAL, raws)
    undecided = [k for k, ev in enumerate(evs) if ev is None]
    assert 50 in undecided and len(undecided) <= CHUNK  # the rest decoded at once
    assert all(ev == decode(THERMAL, raws[k]) for k, ev in enumerate(evs) if ev is not None)
    assert decode_chunked(THERMAL, raws[:BATCH_MIN - 1]) == [None] * (BATCH_MIN - 1)
