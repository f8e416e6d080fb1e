"""Decoding of the four telemetry topics: message bytes (or parsed JSON) to records, at C speed.

A valid message is decoded and validated in one pass by :mod:`msgspec`
against the record types of :mod:`detector.events`, whose field
annotations carry the contract's types and bounds.  Only a message that
fails (rare) takes the describing path, which parses it again and names the
first bad field and the record, so the dead letter says what to fix.
Nothing here raises anything but :class:`InvalidMessage` for bad input: not
a ``RecursionError``, not an ``OverflowError``.

>>> s = decode(STEP, b'{"ts": 1.5, "job": "j", "step": 3, "rank": 0, "node": "n0", "gpu": 0,'
...            b' "step_ms": 1000, "compute_ms": 700.0, "comm_ms": 250.0}')
>>> s.step_ms, s.dp_rank, s.loss
(1000.0, 0, None)
>>> decode(THERMAL, b'{"ts": 1.0, "node": "n0", "gpu": -1}')
Traceback (most recent call last):
...
detector.events.InvalidMessage: telemetry.thermal: field 'gpu': must be an integer >= 0 ...
>>> decode(STEP, b'{"ts": 1.5, "job": "j", "step": 3, "rank": 0, "node": "n0", "gpu": 0,'
...        b' "step_ms": 1000, "loss": NaN}').nonfinite
Traceback (most recent call last):
...
detector.events.InvalidMessage: telemetry.step: field 'loss': must be a finite number, got nan ...
"""

from __future__ import annotations

import json
import math
import reprlib
from typing import Any, Literal

import msgspec
import orjson

from detector.events import (
    COUNTER_LIMIT,
    ECC,
    INDEX_LIMIT,
    LINK_STATES,
    MAX_NAME_CHARS,
    MAX_RATE_GBPS,
    NIC,
    NIC_COUNTERS,
    RECORD_TYPES,
    RECOVERY_ACTIONS,
    STEP,
    SUM_SLACK_MS,
    SUM_SLACK_REL,
    THERMAL,
    Event,
    InvalidMessage,
    NonFinite,
    StepSample,
    fill_ranks,
    names_printable,
    parts_fit,
)

__all__ = ["BATCH_MIN", "CHUNK", "MAX_MESSAGE_BYTES", "InvalidMessage", "decode",
           "decode_chunked", "decode_many", "decode_value", "describe", "salvage_nonfinite"]

MAX_MESSAGE_BYTES = 1 << 20
# Known fields are scalars (a list or object there is the wrong type); an unknown
# field is skipped unread however it nests, up to the parsers' own depth limits
# (msgspec's and the interpreter's recursion limit, orjson's 1,024), past which the
# message is dead-lettered as nested too deep, never raised.

_DECODERS = {t: msgspec.json.Decoder(cls).decode for t, cls in RECORD_TYPES.items()}
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)

# The smallest batch decode_many pays for: callgrind, instructions a message of the bundled
# incident in batches of one topic: 2 -> 13,450, 4 -> 11,703, 8 -> 10,675, 500 -> ~9,950;
# decode() one at a time 11,136.
BATCH_MIN = 6
# decode_chunked's chunks: about this many messages (one bad message sends only its chunk
# message by message; callgrind: 16 a chunk 10,207 instructions a message, 32 10,003, 64 9,935).
CHUNK = 32
# decode_many's separator: a JSON string no message it decodes can hold (they are ASCII
# with no escape, and this is not), decoded as itself (msgspec returns the Literal's object).
_SEP = "\u00a7"
_SEP_JOIN = b',"' + _SEP.encode() + b'",'
_BATCH_DECODERS = {t: msgspec.json.Decoder(list[cls | Literal[_SEP]]).decode  # type: ignore
                   for t, cls in RECORD_TYPES.items()}


def decode(topic: str, raw: bytes | bytearray | memoryview | str) -> Event:
    """Decode one Kafka message value (UTF-8 JSON) from ``topic``; InvalidMessage if bad.

    Everything but two rules is msgspec's, in C: types, bounds, lengths.  The
    two are checked here with as little Python as a message allows.  Printable
    names: a message of ASCII bytes with no backslash (no escape) and no DEL
    holds only printable strings (JSON forbids raw control bytes in a string),
    which three scans of the bytes at C speed tell; any other message has its
    records' names checked one by one.  ``step_ms >= compute_ms + comm_ms``
    for a step.

    A valid message of bytes takes one pass through the lines below (this runs
    for every message: each bytecode shows in the worker's rate); anything
    else -- an unknown topic, a message over the size limit, a str, a
    memoryview, an escape, an invalid message -- falls through to
    :func:`_decode_checked`, which decides it from the start, checks in their
    order (so the dead-letter reasons do not depend on which path ran).
    """
    try:
        # The size first: a message over the limit is never parsed (the fall-back refuses it).
        if len(raw) > MAX_MESSAGE_BYTES:
            return _decode_checked(topic, raw)
        ev = _DECODERS[topic](raw)
        # Backslash 0x5C, DEL 0x7F; as ints: ``0x5C in raw`` is a memchr, ``b"\\" in raw``
        # a substring search several times slower.  (A str raises TypeError here.)
        if raw.isascii() and 0x5C not in raw and 0x7F not in raw:  # type: ignore[union-attr]
            if type(ev) is not StepSample:
                return ev  # type: ignore[return-value]
            step_ms = ev.step_ms  # parts_fit and fill_ranks, inline: this runs for every step
            if (ev.compute_ms or 0.0) + (ev.comm_ms or 0.0) <= (
                    step_ms + SUM_SLACK_MS + SUM_SLACK_REL * step_ms) and (
                    (ev.dp_rank is not None and ev.tp_rank is not None
                     and ev.pp_rank is not None) or fill_ranks(ev)):
                return ev
    except Exception:  # noqa: BLE001, S110 - decided again, from the start, just below
        pass
    return _decode_checked(topic, raw)


def decode_many(topic: str, raws: list[Any]) -> list[Event | None] | None:
    """Decode a batch of message values from ``topic`` in one msgspec call, where it may.

    The records of :func:`decode`, one a message, where ``None`` marks a step
    whose parts exceed its ``step_ms`` (its reason is :func:`decode`'s); or
    ``None`` for the whole batch when any message is not a clean, valid JSON
    object of bytes (not ASCII, an escape, invalid, over the size limit, not
    bytes): the caller then decodes each message with :func:`decode`, so a bad
    message gets its own dead letter and the good ones around it are kept.

    The messages are decoded as one JSON array with a separator element
    between each two, ``[m1,"§",m2,"§",m3]``.  A message that is not one JSON
    value cannot change what the batch means unnoticed: the scan finds every
    message ASCII with no escape, so the only ``"§"`` strings are the
    separators; a message boundary inside a string or inside an object leaves a
    separator out of the top level (or the buffer invalid); and with all n - 1
    at the odd positions of a list of 2n - 1, each message is exactly one
    element between two of them, which the decoder only takes as a record.
    """
    n = len(raws)
    if not n:
        return []
    try:
        flat = b",".join(raws)
        # The three scans of decode(), once for the batch (a comma is ASCII and printable).
        if not (flat.isascii() and 0x5C not in flat and 0x7F not in flat):
            return None
        if len(flat) > MAX_MESSAGE_BYTES and max(map(len, raws)) > MAX_MESSAGE_BYTES:
            return None
        # One copy, not three: the brackets ride on the first and the last message.
        parts = raws.copy()
        parts[0] = b"[" + parts[0]
        parts[-1] = parts[-1] + b"]"
        out = _BATCH_DECODERS[topic](_SEP_JOIN.join(parts))
    except Exception:  # noqa: BLE001 - decided message by message by the caller
        return None
    if len(out) != 2 * n - 1 or out[1::2].count(_SEP) != n - 1:
        return None
    evs: list[Any] = out[::2]
    if topic == STEP:
        for ev in evs:  # parts_fit and fill_ranks, inline: this runs for every step
            step_ms = ev.step_ms
            if (ev.compute_ms or 0.0) + (ev.comm_ms or 0.0) > (
                    step_ms + SUM_SLACK_MS + SUM_SLACK_REL * step_ms) or (
                    (ev.dp_rank is None or ev.tp_rank is None or ev.pp_rank is None)
                    and not fill_ranks(ev)):
                return [ev if parts_fit(ev) and fill_ranks(ev) else None for ev in evs]
    return evs


def decode_chunked(topic: str, raws: list[Any]) -> list[Event | None]:
    """A fetched batch of ``topic``: :func:`decode_many` over chunks of about ``CHUNK``.

    One entry a message: its record, or None where the caller decodes that message
    alone with :func:`decode` (a batch under ``BATCH_MIN``, a chunk decode_many
    refuses, a step whose parts exceed it), so a steady trickle of bad messages
    costs their chunks, not every whole batch, the one-at-a-time path.
    """
    n = len(raws)
    if n < BATCH_MIN:
        return [None] * n
    chunks = -(-n // CHUNK)
    if chunks == 1:
        return decode_many(topic, raws) or [None] * n
    size = -(-n // chunks)
    out: list[Event | None] = []
    for i in range(0, n, size):
        part = raws[i:i + size]
        out += decode_many(topic, part) or [None] * len(part)
    return out


def _decode_checked(topic: str, raw: bytes | bytearray | memoryview | str) -> Event:
    """:func:`decode` for any message, every check in turn (the fast path's fall-back)."""
    decoder = _DECODERS.get(topic)
    if decoder is None:
        raise InvalidMessage(topic, f"unknown topic {topic[:80]!r}")
    if type(raw) is not bytes:
        raw = raw.encode() if isinstance(raw, str) else bytes(raw)
    if len(raw) > MAX_MESSAGE_BYTES:
        raise InvalidMessage(topic, f"message of {len(raw)} bytes is over the limit of "
                             f"{MAX_MESSAGE_BYTES} bytes")
    try:
        ev = decoder(raw)
    except _DECODE_ERRORS:
        return describe(topic, raw)
    if not (raw.isascii() and 0x5C not in raw and 0x7F not in raw) and not names_printable(ev):
        return describe(topic, raw)
    if type(ev) is StepSample and not (parts_fit(ev) and fill_ranks(ev)):
        return describe(topic, raw)
    return ev  # type: ignore[return-value]


def decode_value(topic: str, value: Any) -> Event:
    """Validate an already-parsed JSON object from ``topic`` into its record."""
    cls = RECORD_TYPES.get(topic)
    if cls is None:
        raise InvalidMessage(topic, f"unknown topic {topic[:80]!r}")
    if type(value) is dict:
        try:
            ev = msgspec.convert(value, cls)
        except _DECODE_ERRORS:
            pass
        else:
            if names_printable(ev) and (type(ev) is not StepSample
                                        or (parts_fit(ev) and fill_ranks(ev))):
                return ev  # type: ignore[return-value]
    return _check_parsed(topic, value)


def salvage_nonfinite(topic: str, raw: bytes | str | dict[str, Any]) -> NonFinite | None:
    """For a step message that fails only on a NaN/inf loss or grad_norm, what the engine needs."""
    if topic != STEP:
        return None
    try:
        if isinstance(raw, dict):
            decode_value(topic, raw)
        else:
            decode(topic, raw)
    except InvalidMessage as exc:
        return exc.nonfinite
    return None


# -- the describing path: why a message is invalid --------------------------------------


def describe(topic: str, raw: bytes) -> Event:
    """Parse and check field by field: the record if valid after all, else InvalidMessage.

    orjson rejects the ``NaN``/``Infinity`` literals Python's json module
    writes; those messages are parsed again with the standard library (whose
    recursion is bounded first) so the reason says ``non-finite``, not
    ``not valid JSON``.
    """
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc):
            raise InvalidMessage(topic, f"nested too deep: {exc}") from None
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            raise InvalidMessage(topic, f"not valid JSON: {exc}") from None
    return _check_parsed(topic, value)


def _check_parsed(topic: str, value: Any) -> Event:
    if type(value) is not dict:
        raise InvalidMessage(topic, f"message must be a JSON object, got {type(value).__name__}")
    try:
        return _slow(topic, value)
    except _Bad as bad:
        nf = _salvage(value) if topic == STEP and bad.problem.startswith(_NON_FINITE) else None
        raise InvalidMessage(topic, f"field {bad.field!r}: {bad.problem}{_identify(value)}",
                             bad.field, *(nf or (None, None))) from None


class _Bad(Exception):
    """Internal: which field failed and why; turned into InvalidMessage with the record's ids."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem


_NON_FINITE = "must be a finite number"


def _show(v: Any) -> str:
    # reprlib stops a few levels down and a few items in: a value nested 10,000 deep (or a
    # list of 100,000) must not blow the stack or the dead letter's size.
    text = reprlib.repr(v) if isinstance(v, (list, dict)) else repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _float(d: dict[str, Any], name: str, required: bool, minimum: float | None = None,
           maximum: float | None = None) -> Any:
    v: Any = d.get(name)
    t = type(v)
    if t is float:
        if not math.isfinite(v):
            raise _Bad(name, f"{_NON_FINITE}, got {_show(v)}")
    elif t is int:
        try:
            v = float(v)
        except OverflowError:
            raise _Bad(name, f"{_NON_FINITE}, got an integer of {v.bit_length()} bits") from None
    elif v is None:
        if required:
            raise _Bad(name, "is required")
        return None
    else:
        raise _Bad(name, f"must be a number, got {type(v).__name__} {_show(v)}")
    if minimum is not None and v < minimum or maximum is not None and v > maximum:
        upto = "" if maximum is None else f" and <= {maximum:g}"
        raise _Bad(name, f"must be >= {minimum:g}{upto}, got {_show(v)}")
    return v


def _int(d: dict[str, Any], name: str, required: bool, limit: int) -> Any:
    v: Any = d.get(name)
    if type(v) is int:
        if v < 0 or v >= limit:
            shown = v if v.bit_length() < 64 else f"an integer of {v.bit_length()} bits"
            raise _Bad(name, f"must be an integer >= 0 and < 2^{limit.bit_length() - 1}, "
                       f"got {shown}")
        return v
    if v is None:
        if required:
            raise _Bad(name, "is required")
        return None
    raise _Bad(name, f"must be an integer >= 0, got {type(v).__name__} {_show(v)}")


def _str(d: dict[str, Any], name: str, required: bool) -> Any:
    v: Any = d.get(name)
    if type(v) is str:
        if not v and required:
            raise _Bad(name, "must be a non-empty string")
        if len(v) > MAX_NAME_CHARS:
            raise _Bad(name, f"must be a name of at most {MAX_NAME_CHARS} characters, "
                       f"got {len(v)}")
        if not v.isprintable():
            raise _Bad(name, f"must be a name of printable characters (no control, escape "
                       f"or bidirectional characters), got {_show(v)}")
        return v
    if v is None:
        if required:
            raise _Bad(name, "is required")
        return None
    raise _Bad(name, f"must be a string, got {type(v).__name__} {_show(v)}")


def _bool(d: dict[str, Any], name: str) -> Any:
    v: Any = d.get(name)
    if v is None or type(v) is bool:
        return v
    raise _Bad(name, f"must be true or false, got {type(v).__name__} {_show(v)}")


def _one_of(d: dict[str, Any], name: str, allowed: frozenset[str]) -> Any:
    v: Any = d.get(name)
    if v is not None and (type(v) is not str or v not in allowed):
        if type(v) is not str:
            raise _Bad(name, f"must be a string, got {type(v).__name__} {_show(v)}")
        raise _Bad(name, f"must be one of {sorted(allowed)}, got {_show(v)}")
    return v


# Field specs, in record order: (name, kind, required, minimum or limit); kinds are F
# float (its minimum, or a (minimum, maximum) pair), I non-negative int below the limit, S
# name, B bool, or a frozenset of strings.
F, I, S, B = "float", "int", "str", "bool"  # noqa: E741 (the spec table reads as a grid)
X, C = INDEX_LIMIT, COUNTER_LIMIT
_COMMON = (("cluster", S, False, None), ("tenant", S, False, None))
_SPECS: dict[str, tuple[tuple[str, Any, bool, Any], ...]] = {
    STEP: (
        ("ts", F, True, None), ("job", S, True, None), ("step", I, True, C),
        ("rank", I, True, X), ("node", S, True, None), ("gpu", I, True, X),
        ("step_ms", F, True, 0.0), ("compute_ms", F, False, 0.0), ("comm_ms", F, False, 0.0),
        ("tp_rank", I, False, X), ("pp_rank", I, False, X), ("dp_rank", I, False, X),
        ("loss", F, False, None), ("grad_norm", F, False, 0.0), ("param_checksum", S, False, None),
        *_COMMON),
    ECC: (
        ("ts", F, True, None), ("node", S, True, None), ("gpu", I, True, X),
        ("sbe_volatile", I, False, C), ("dbe_volatile", I, False, C),
        ("retired_pages_sbe", I, False, C), ("retired_pages_dbe", I, False, C),
        ("row_remap_pending", B, False, None), ("row_remap_failure", B, False, None),
        ("xid", I, False, X), ("pcie_replay", I, False, C),
        ("nvlink_crc_errors", I, False, C), ("nvlink_replay_errors", I, False, C),
        ("nvlink_recovery_errors", I, False, C),
        ("recovery_action", RECOVERY_ACTIONS, False, None), *_COMMON),
    NIC: (
        ("ts", F, True, None), ("node", S, True, None), ("nic", S, True, None),
        ("port", I, True, X), ("link_state", LINK_STATES, False, None),
        ("rate_gbps", F, False, (0.0, MAX_RATE_GBPS)), *[(n, I, False, C) for n in NIC_COUNTERS],
        *_COMMON),
    THERMAL: (
        ("ts", F, True, None), ("node", S, True, None), ("gpu", I, True, X),
        ("gpu_temp_c", F, False, None), ("mem_temp_c", F, False, None),
        ("power_w", F, False, 0.0), ("sm_clock_mhz", F, False, 0.0),
        ("throttle", I, False, C), *_COMMON),
}
for _topic, _spec in _SPECS.items():
    assert tuple(f[0] for f in _spec) == RECORD_TYPES[_topic].fields(), _topic


def _check_field(d: dict[str, Any], name: str, kind: Any, required: bool, bound: Any) -> Any:
    if kind is F:
        if type(bound) is tuple:
            return _float(d, name, required, *bound)
        return _float(d, name, required, bound)
    if kind is I:
        return _int(d, name, required, bound)
    if kind is S:
        return _str(d, name, required)
    if kind is B:
        return _bool(d, name)
    return _one_of(d, name, kind)


def _finish_step(v: list[Any]) -> None:
    """Cross-field rules of telemetry.step, applied to values in StepSample order."""
    step_ms, compute_ms, comm_ms = v[6], v[7], v[8]
    parts = (compute_ms or 0.0) + (comm_ms or 0.0)
    if parts > step_ms + SUM_SLACK_MS + SUM_SLACK_REL * step_ms:
        raise _Bad("step_ms", f"must be >= compute_ms + comm_ms ({parts:g}), got {step_ms:g}")
    tp, pp, dp = v[9], v[10], v[11]
    if (tp is None or pp is None or dp is None) and not (tp is None and pp is None
                                                         and dp is None):
        missing = [n for n, x in (("tp_rank", tp), ("pp_rank", pp), ("dp_rank", dp)) if x is None]
        raise _Bad(missing[0], "tp_rank, pp_rank and dp_rank come all three or none; "
                   f"missing {', '.join(missing)}")


def _slow(topic: str, d: dict[str, Any]) -> Event:
    """Field-by-field validation that names the first bad field."""
    vals = [_check_field(d, *f) for f in _SPECS[topic]]
    if topic == STEP:
        _finish_step(vals)
    return RECORD_TYPES[topic](*vals)  # type: ignore[return-value]


def _salvage(value: dict[str, Any]) -> tuple[NonFinite, str | None] | None:
    """A NaN step's NonFinite and its `cluster` value (None: no record to salvage)."""
    bad = [f for f in ("loss", "grad_norm")
           if isinstance(value.get(f), float) and not math.isfinite(value[f])]
    if not bad:
        return None
    try:
        s = _slow(STEP, {k: v for k, v in value.items() if k not in bad})
    except _Bad:
        return None
    assert isinstance(s, StepSample)
    return NonFinite(s.ts, s.job, s.step, s.rank, s.node, s.gpu, bad[0],
                     s.tp_rank, s.pp_rank, s.dp_rank), s.cluster  # type: ignore[arg-type]


_ID_FIELDS = ("job", "step", "rank", "node", "gpu", "nic", "ts")


def _identify(d: dict[str, Any]) -> str:
    """The record's identifying fields, so a person can find it in the source."""
    ids = []
    for k in _ID_FIELDS:
        if k in d:
            v = d[k]
            ids.append(f"{k}={v[:40] if type(v) is str and v.isprintable() else _show(v)}")
    return f" ({' '.join(ids)})" if ids else ""
