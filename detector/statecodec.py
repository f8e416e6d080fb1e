"""Snapshots as data, never code: a versioned msgpack format rebuilt only into allowlisted classes.

A worker's state travels through the compacted ``faultline.state`` topic,
which anyone with write access to the topic can fill.  ``pickle.loads`` of such
a message runs whatever the writer wants; this format cannot.  The state is
walked into plain msgpack (via msgspec) — numbers, strings, bytes and tagged
lists — and read back by rebuilding only the classes in :data:`REGISTRY`, each
from its listed fields (``cls.__new__`` plus attribute assignment, no
``__init__``/``__setstate__`` of the writer's choosing), river's ``EWMean``
from its numbers, and numpy arrays from dtype, shape and bytes within limits.

Frame: ``b"FLSN"``, a format version byte, a flags byte (1: signed), the
32-byte HMAC-SHA256 when signed, then the zlib-compressed msgpack of
``[schema, root]``.  ``schema`` is a fingerprint of the registry, so a state
written by a build whose state classes differ is refused instead of half
restored.  With a key (``snapshot_key``, plus ``snapshot_key_previous`` during
a rotation) a worker writes signed snapshots and refuses any it did not sign;
the MAC covers a ``context`` (which partition, at which offset), so a valid
snapshot cannot be replayed onto another partition or position.

Every refusal is a :class:`SnapshotRefused` with one of :data:`REASONS`.

>>> from detector.thresholds import Thresholds
>>> blob = encode_state({"cfg": Thresholds(), "seen": {("node-1", 0): {"ecc"}}}, key=b"k")
>>> decode_state(blob, key=b"k")["seen"]
{('node-1', 0): {'ecc'}}
>>> decode_state(blob, key=b"other")
Traceback (most recent call last):
...
detector.statecodec.SnapshotRefused: bad_signature: the snapshot's MAC matches no configured key
>>> decode_state(b"\\x80\\x04\\x95 a pickle").reason
Traceback (most recent call last):
...
detector.statecodec.SnapshotRefused: not_a_snapshot: no faultline snapshot header
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import math
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

import msgspec
import numpy as np
from river import stats as river_stats

MAGIC = b"FLSN"
FORMAT_VERSION = 1
_SIGNED = 1
_MAC_BYTES = 32
_HEADER_BYTES = len(MAGIC) + 2

REASONS = ("not_a_snapshot", "version", "unsigned", "bad_signature", "no_key", "too_large",
           "corrupt", "malformed", "schema", "unknown_class")

# Limits on what a snapshot may make us allocate (a crafted one could claim anything).
MAX_RAW_BYTES = 512 << 20        # decompressed msgpack
MAX_ARRAY_ELEMENTS = 1 << 24     # one numpy array (ranks < 2^24)
_ARRAY_DTYPES = frozenset({"<f8", "<f4", "<i8", "<i4", "<i2", "|i1", "<u8", "<u4", "<u2", "|u1",
                           "|b1"})

# Tags: every non-scalar value is a msgpack array whose first item says what it is.
_LIST, _TUPLE, _SET, _FROZENSET, _DICT, _ARRAY, _OBJ, _REF, _UNSET = range(9)
_MISSING = object()  # a slot never assigned (written as [_UNSET], only as a field)
_SCALARS = (str, int, float, bool, bytes, type(None))


class SnapshotRefused(ValueError):
    """A snapshot this worker will not restore; ``reason`` is one of :data:`REASONS`."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def refuse_unless(ok: bool, what: str) -> None:
    """:class:`SnapshotRefused` ``malformed`` unless ``ok``: for the checks a stage makes of
    what it restored (the codec rebuilds a registered class from fields of any type: a
    clock that is a string, a map that is a list -- well-formed frames of the right classes
    that a worker would then fail on with every record)."""
    if not ok:
        raise SnapshotRefused("malformed", what)


def is_time(x: Any) -> bool:
    """An event-time clock or deadline: a float (or int) not NaN and not +inf (-inf is
    "none yet")."""
    return type(x) in (float, int) and x == x and x != math.inf


def is_map_of(x: Any, key: type | tuple[type, ...], value: type | tuple[type, ...]) -> bool:
    """A dict whose keys and values are of these types."""
    return type(x) is dict and all(
        isinstance(k, key) and isinstance(v, value) for k, v in x.items())


def is_real(x: Any) -> bool:
    """A float (or int) that is not NaN (an infinity may mean "none yet")."""
    return type(x) in (float, int) and x == x


def is_finite(x: Any) -> bool:
    """A float (or int) neither NaN nor infinite: an event time a rule counted, a reading."""
    return type(x) in (float, int) and math.isfinite(x)


# How far past its clock a restored deadline (a prune, a sweep, a timer) may lie: a day, longer
# than any wait the code sets (forget_after_s, unit_idle_s: an hour).
DEADLINE_S = 86_400.0


def first_past(limit: float, times: Iterable[tuple[str, Any]]) -> str | None:
    """The name of the first time after ``limit``, or None: for a restored state's event times
    held to the restoring worker's clock (hard40: a *finite* far-future time -- year 2100 in a
    clock or a ``ts`` -- passed ``is_time``, and a clock restored there took every live record
    as late: the partition blind).  Non-numbers are the type checks' to refuse."""
    for name, t in times:
        if type(t) in (float, int) and t > limit:
            return name
    return None


def within(lo: float, hi: float) -> Callable[[Any], bool]:
    """A float (or int) from ``lo`` to ``hi`` (so finite when they are: NaN fails)."""
    return lambda v: type(v) in (float, int) and lo <= v <= hi


def one_of(*values: float) -> Callable[[Any], bool]:
    """One of these numbers (a state flag), of a numeric type (a bool is not one)."""
    return lambda v: type(v) in (float, int) and v in values


def list_of(*oks: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A list of ``len(oks)`` items, each taken by its own check."""
    n = len(oks)
    return lambda x: type(x) is list and len(x) == n and all(
        ok(v) for ok, v in zip(oks, x, strict=True))


def is_count(x: Any) -> bool:
    """A count (of samples, of GPUs): an int from 0 below DESIGN's counter bound (2^63)."""
    return type(x) is int and 0 <= x < 1 << 63


def is_signed_count(x: Any) -> bool:
    """A count that runs down as well as up (negative: samples since): an int within 2^63."""
    return type(x) is int and -(1 << 63) < x < 1 << 63


def is_int_set(x: Any) -> bool:
    """A set of ints (GPU indices)."""
    return type(x) is set and all(type(g) is int for g in x)


def is_real_map(x: Any) -> bool:
    """A dict from ints (GPU indices) to reals (is_real)."""
    return type(x) is dict and all(type(k) is int and is_real(v) for k, v in x.items())


def is_bool(x: Any) -> bool:
    return type(x) is bool


def is_int(x: Any) -> bool:
    return type(x) is int


def bad_field(obj: Any, spec: dict[str, Callable[[Any], bool]]) -> str | None:
    """The first of ``obj``'s fields that fails its check in ``spec`` (None: every one
    passes) -- a restored monitor's fields, each of the type its class gives it."""
    for name, ok in spec.items():
        if not ok(getattr(obj, name, None)):
            return name
    return None


class StateTypeError(TypeError):
    """The state holds an object the registry does not know (a bug: register its class)."""


@dataclass(frozen=True)
class _Entry:
    name: str
    cls: type
    fields: tuple[str, ...]
    make: Callable[[type, tuple[str, ...], list[Any]], Any]
    dump: Callable[[Any, tuple[str, ...]], list[Any]]
    # attributes not snapshotted (injected again on restore), and their value meanwhile
    transient: tuple[tuple[str, Any], ...] = ()


def _ordered(items: set[Any] | frozenset[Any]) -> Any:
    """A set's items in one order whatever the set's history: sorted when they sort (else as
    they are).  A set's iteration order depends on its table's size and what was inserted and
    discarded, and a restored set is built afresh: written as iterated, a snapshot of a restored
    state was not the bytes restored (review28: NodeNames.plain, ~1 hash seed in 3 --
    tests/test_nicport_round10's snapshot equality failed at random since round 27)."""
    try:
        return sorted(items)
    except TypeError:
        return items


def _dump_attrs(obj: Any, names: tuple[str, ...]) -> list[Any]:
    return [getattr(obj, n, _MISSING) for n in names]


def _make_slots(cls: type, names: tuple[str, ...], values: list[Any]) -> Any:
    obj = cls.__new__(cls)
    for n, v in zip(names, values, strict=True):
        if v is not _MISSING:
            object.__setattr__(obj, n, v)
    return obj


def _make_tuple(cls: type, names: tuple[str, ...], values: list[Any]) -> Any:
    if any(v is _MISSING for v in values):
        raise SnapshotRefused("malformed", f"{cls.__name__}: a field is missing")
    return tuple.__new__(cls, values)


def _make_struct(cls: type, names: tuple[str, ...], values: list[Any]) -> Any:
    if any(v is _MISSING for v in values):
        raise SnapshotRefused("malformed", f"{cls.__name__}: a field is missing")
    try:
        return cls(*values)  # its own checks run (names printable, step parts fit)
    except (TypeError, ValueError) as exc:
        raise SnapshotRefused("malformed", f"{cls.__name__}: {exc}") from None


def _dump_ewmean(obj: Any, names: tuple[str, ...]) -> list[Any]:
    mean = obj.get()
    started = True
    if mean == 0.0:
        # 0.0 is also what a fresh one says: probe a copy (first update takes x as the mean).
        probe = river_stats.EWMean(obj.fading_factor)
        probe.update(0.0)
        probe.update(1.0)
        twin = copy.deepcopy(obj)
        twin.update(1.0)
        started = twin.get() == probe.get()
    return [float(obj.fading_factor), float(mean), started]


def _make_ewmean(cls: type, names: tuple[str, ...], values: list[Any]) -> Any:
    fading, mean, started = values
    if type(fading) is not float or type(mean) is not float or type(started) is not bool:
        raise SnapshotRefused("malformed", "EWMean fields are not numbers")
    obj = river_stats.EWMean(fading_factor=fading)  # range-checked by river
    if started:
        obj.update(mean)  # the first update sets the mean exactly
    return obj


REGISTRY: dict[str, _Entry] = {}
_BY_CLASS: dict[type, _Entry] = {}


def register(cls: type, name: str | None = None, *, fields_: tuple[str, ...] | None = None,
             transient: dict[str, Any] | None = None) -> None:
    """Allow ``cls`` in snapshots: slotted, dict-based, NamedTuple, msgspec Struct or dataclass."""
    name = name or cls.__name__
    if name in REGISTRY:
        raise ValueError(f"state class name {name!r} registered twice")
    trans = tuple((transient or {}).items())
    if issubclass(cls, msgspec.Struct):  # the telemetry records
        entry = _Entry(name, cls, tuple(cls.__struct_fields__), _make_struct, _dump_attrs)
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        entry = _Entry(name, cls, tuple(cls._fields), _make_tuple, lambda o, n: list(o))
    elif is_dataclass(cls):
        entry = _Entry(name, cls, tuple(f.name for f in fields(cls)), _make_slots, _dump_attrs)
    elif fields_ is not None:
        entry = _Entry(name, cls, fields_, _make_slots, _dump_attrs, trans)
    elif "__slots__" in cls.__dict__:
        entry = _Entry(name, cls, tuple(cls.__dict__["__slots__"]), _make_slots, _dump_attrs)
    else:
        raise ValueError(f"{cls.__qualname__}: list its fields (fields_=...)")
    REGISTRY[name] = entry
    _BY_CLASS[cls] = entry


def _register_custom(cls: type, name: str, names: tuple[str, ...],
                     dump: Callable[[Any, tuple[str, ...]], list[Any]],
                     make: Callable[[type, tuple[str, ...], list[Any]], Any]) -> None:
    entry = _Entry(name, cls, names, make, dump)
    REGISTRY[name] = entry
    _BY_CLASS[cls] = entry


def _dict_fields(obj: Any, entry: _Entry) -> None:
    # A dict-based class that grew an attribute must list it, or it would be lost silently.
    have = set(obj.__dict__)
    want = set(entry.fields) | {n for n, _ in entry.transient}
    if have != want:
        raise StateTypeError(f"{entry.name}: attributes {sorted(have ^ want)} are not in its "
                             "registry entry (detector/statecodec.py)")


def _register_state_classes() -> None:
    from detector.alerts import Scope
    from detector.correlate import Correlator, Problem
    from detector.events import EccSample, NicSample, NonFinite, StepSample, ThermalSample
    from detector.findings import Finding
    from detector.gpu_health import GpuHealth
    from detector.monitors import Monitors
    from detector.network import NodeNics, _Port
    from detector.node_names import NodeNames
    from detector.overflow_source import OverflowSource
    from detector.pipeline.correlator import _Source
    from detector.port_names import PortName, PortNames
    from detector.recovery import Placement
    from detector.sdc import ReplicaLoss
    from detector.steps import JobMonitor, _StepBuffer
    from detector.thermal import GpuThermal, NodeTemps
    from detector.thresholds import Thresholds
    from models.counters import CounterDeltas
    from models.cusum_bank import CusumBank
    from models.decay import DecayingCount
    from models.rising import RisingRate

    for cls in (Scope, Finding, StepSample, EccSample, NicSample, ThermalSample, NonFinite,
                Thresholds, Problem, GpuHealth, NodeNics, GpuThermal, NodeTemps,
                CounterDeltas, DecayingCount, RisingRate, Placement, PortName, ReplicaLoss,
                OverflowSource):
        register(cls)
    register(PortNames, fields_=("_names",), transient={"topology": None})
    register(NodeNames, fields_=("alias", "plain", "steps"),
             transient={"topology": None, "_labels": None, "_taken": None})
    register(_Port, "NicPort")
    register(_StepBuffer, "StepBuffer")
    register(_Source, "CorrelatorSource", fields_=("wm", "idle", "heard", "last_id"))
    register(Monitors, fields_=tuple(k for k in Monitors().__dict__
                                     if k not in ("topology", "wall_clock", "_awake", "_made")),
             transient={"topology": None, "wall_clock": None, "_awake": None, "_made": 0})
    cfg = Thresholds()
    register(JobMonitor, fields_=tuple(JobMonitor("j", cfg).__dict__))
    register(CusumBank, fields_=tuple(CusumBank(1.0, 1.0, 1.0, 1).__dict__))
    register(Correlator, fields_=tuple(k for k in Correlator(cfg).__dict__
                                       if k not in ("topology", "seen")),
             transient={"topology": None, "seen": None})
    _register_custom(river_stats.EWMean, "river.EWMean", ("fading_factor", "mean", "started"),
                     _dump_ewmean, _make_ewmean)


def schema_fingerprint() -> str:
    """Names and fields of every state class: two builds with equal ones read each other."""
    _ensure_registry()
    text = ";".join(f"{n}({','.join(e.fields)})" for n, e in sorted(REGISTRY.items()))
    return hashlib.sha256(f"v{FORMAT_VERSION}|{text}".encode()).hexdigest()[:16]


_ready = False
_fingerprint = ""


def _ensure_registry() -> None:
    global _ready, _fingerprint
    if not _ready:
        _ready = True
        _register_state_classes()
        _fingerprint = schema_fingerprint()


# -- encoding --------------------------------------------------------------------------


class _Encoder:
    """Walks the state into tagged lists; an object met twice is written once, then referred to.

    (Two GPUs' thermal monitors share their node's temperatures; after a
    restore they must share one object again, as they did with pickle.)
    """

    __slots__ = ("memo", "busy")

    def __init__(self) -> None:
        self.memo: dict[int, int] = {}
        self.busy: set[int] = set()

    def enc(self, o: Any) -> Any:
        t = type(o)
        if t is str or t is float or t is int or t is bool or o is None or t is bytes:
            return o
        if t is list:
            return [_LIST, *map(self.enc, o)]
        if t is dict:
            out: list[Any] = [_DICT]
            enc = self.enc
            for k, v in o.items():
                out.append(enc(k))
                out.append(enc(v))
            return out
        if t is tuple:
            return [_TUPLE, *map(self.enc, o)]
        entry = _BY_CLASS.get(t)
        if entry is not None:
            return self._obj(o, entry)
        if t is set:
            return [_SET, *map(self.enc, _ordered(o))]
        if t is frozenset:
            return [_FROZENSET, *map(self.enc, _ordered(o))]
        if t is np.ndarray:
            dtype = o.dtype.str
            if dtype not in _ARRAY_DTYPES:
                raise StateTypeError(f"numpy dtype {dtype} is not allowed in snapshots")
            return [_ARRAY, dtype, list(o.shape), np.ascontiguousarray(o).tobytes()]
        if isinstance(o, np.generic):
            return self.enc(o.item())
        raise StateTypeError(f"{t.__module__}.{t.__qualname__} is not a registered state "
                             "class (detector/statecodec.py)")

    def _obj(self, o: Any, entry: _Entry) -> list[Any]:
        oid = id(o)
        ref = self.memo.get(oid)
        if ref is not None:
            return [_REF, ref]
        if oid in self.busy:
            raise StateTypeError(f"{entry.name} contains itself: cycles are not snapshotted")
        self.busy.add(oid)
        if entry.transient:
            _dict_fields(o, entry)
        out = [_OBJ, entry.name, *[[_UNSET] if v is _MISSING else self.enc(v)
                                   for v in entry.dump(o, entry.fields)]]
        self.busy.discard(oid)
        # Numbered after its fields, as the decoder numbers it after building it.
        self.memo[oid] = len(self.memo)
        return out


def _mac(key: bytes, header: bytes, context: bytes, body: bytes) -> bytes:
    h = hmac.new(key, b"faultline-state\0", hashlib.sha256)
    h.update(header)
    h.update(len(context).to_bytes(4, "big"))
    h.update(context)
    h.update(body)
    return h.digest()


def encode_state(obj: Any, *, key: bytes | None = None, context: bytes = b"",
                 level: int = 1) -> bytes:
    """``obj`` (made of scalars, containers, arrays and registered classes) as snapshot bytes."""
    _ensure_registry()
    try:
        raw = msgspec.msgpack.encode([_fingerprint, _Encoder().enc(obj)])
    except OverflowError as exc:
        raise StateTypeError(f"a number in the state does not fit msgpack: {exc}") from None
    body = zlib.compress(raw, level)
    header = MAGIC + bytes((FORMAT_VERSION, _SIGNED if key else 0))
    if key:
        return header + _mac(key, header, context, body) + body
    return header + body


# -- decoding --------------------------------------------------------------------------


class _Decoder:
    __slots__ = ("arrays", "objects")

    def __init__(self) -> None:
        self.arrays = 0
        self.objects: list[Any] = []

    def dec(self, o: Any) -> Any:
        t = type(o)
        if t is not list:
            if t in _SCALARS:
                return o
            raise SnapshotRefused("malformed", f"unexpected {t.__name__} in the state")
        tag = o[0]
        if tag == _OBJ:
            entry = REGISTRY.get(o[1]) if type(o[1]) is str else None
            if entry is None:
                raise SnapshotRefused("unknown_class", f"{str(o[1])[:80]!r} is not a state class")
            if len(o) - 2 != len(entry.fields):
                raise SnapshotRefused("malformed", f"{entry.name}: {len(o) - 2} fields, "
                                      f"expected {len(entry.fields)}")
            obj = entry.make(entry.cls, entry.fields, [
                _MISSING if type(v) is list and len(v) == 1 and v[0] == _UNSET else self.dec(v)
                for v in o[2:]])
            for name, value in entry.transient:
                object.__setattr__(obj, name, value)
            self.objects.append(obj)
            return obj
        if tag == _REF:
            ref = o[1] if len(o) == 2 else None
            if type(ref) is not int or not 0 <= ref < len(self.objects):
                raise SnapshotRefused("malformed", "a reference to no earlier object")
            return self.objects[ref]
        if tag == _LIST:
            return [self.dec(v) for v in o[1:]]
        if tag == _DICT:
            if len(o) % 2 != 1:
                raise SnapshotRefused("malformed", "a map with an odd number of items")
            dec = self.dec
            return {dec(o[i]): dec(o[i + 1]) for i in range(1, len(o), 2)}
        if tag == _TUPLE:
            return tuple(self.dec(v) for v in o[1:])
        if tag == _SET:
            return {self.dec(v) for v in o[1:]}
        if tag == _FROZENSET:
            return frozenset(self.dec(v) for v in o[1:])
        if tag == _ARRAY:
            return self._array(o)
        raise SnapshotRefused("malformed", f"unknown tag {tag!r}")

    def _array(self, o: list[Any]) -> np.ndarray:
        if len(o) != 4:
            raise SnapshotRefused("malformed", "an array needs dtype, shape and bytes")
        _, dtype, shape, data = o
        if dtype not in _ARRAY_DTYPES or type(data) is not bytes or type(shape) is not list:
            raise SnapshotRefused("malformed", f"array of dtype {str(dtype)[:20]!r}")
        if len(shape) > 4 or any(type(d) is not int or d < 0 for d in shape):
            raise SnapshotRefused("malformed", "array shape")
        n = math.prod(shape)
        self.arrays += n
        if n > MAX_ARRAY_ELEMENTS or self.arrays > 16 * MAX_ARRAY_ELEMENTS:
            raise SnapshotRefused("too_large", f"array of {n} elements")
        dt = np.dtype(dtype)
        if len(data) != n * dt.itemsize:
            raise SnapshotRefused("malformed", "array bytes do not match its shape")
        return np.frombuffer(data, dtype=dt).reshape(shape).copy()


def decode_state(blob: bytes, *, key: bytes | None = None, previous_key: bytes | None = None,
                 context: bytes = b"", max_bytes: int | None = None,
                 max_raw_bytes: int = MAX_RAW_BYTES) -> Any:
    """The state in ``blob``, or :class:`SnapshotRefused`; never runs code named by the blob.

    With ``key`` (and ``previous_key`` during a rotation), only snapshots signed
    with one of them for this ``context`` are read.  Without a key a signed
    snapshot is refused too (``no_key``): the worker cannot tell who wrote it.
    """
    _ensure_registry()
    if max_bytes is not None and len(blob) > max_bytes:
        raise SnapshotRefused("too_large", f"{len(blob)} bytes")
    blob = bytes(blob)
    if len(blob) < _HEADER_BYTES or not blob.startswith(MAGIC):
        raise SnapshotRefused("not_a_snapshot", "no faultline snapshot header")
    header = blob[:_HEADER_BYTES]
    version, flags = header[4], header[5]
    if version != FORMAT_VERSION:
        raise SnapshotRefused("version", f"format {version}, this build reads {FORMAT_VERSION}")
    if flags & ~_SIGNED:
        raise SnapshotRefused("malformed", f"unknown flags {flags:#x}")
    body = blob[_HEADER_BYTES:]
    keys = [k for k in (key, previous_key) if k]
    if flags & _SIGNED:
        if not keys:
            raise SnapshotRefused("no_key", "the snapshot is signed and no snapshot_key is set")
        mac, body = body[:_MAC_BYTES], body[_MAC_BYTES:]
        if len(mac) != _MAC_BYTES or not any(
                hmac.compare_digest(mac, _mac(k, header, context, body)) for k in keys):
            raise SnapshotRefused("bad_signature", "the snapshot's MAC matches no configured key")
    elif keys:
        raise SnapshotRefused("unsigned", "snapshot_key is set and the snapshot is not signed")
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(body, max_raw_bytes)
    except zlib.error as exc:
        raise SnapshotRefused("corrupt", f"zlib: {exc}") from None
    if inflater.unconsumed_tail:
        raise SnapshotRefused("too_large", f"more than {max_raw_bytes} bytes decompressed")
    if not inflater.eof:
        raise SnapshotRefused("corrupt", "truncated")
    try:
        doc = msgspec.msgpack.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise SnapshotRefused("malformed", f"msgpack: {exc}") from None
    if type(doc) is not list or len(doc) != 2 or type(doc[0]) is not str:
        raise SnapshotRefused("malformed", "not [schema, state]")
    if doc[0] != _fingerprint:
        raise SnapshotRefused("schema", f"written by a build with state schema {doc[0][:16]!r},"
                              f" this one has {_fingerprint!r}")
    try:
        return _Decoder().dec(doc[1])
    except SnapshotRefused:
        raise
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, RecursionError,
            OverflowError, MemoryError) as exc:
        raise SnapshotRefused("malformed", f"{type(exc).__name__}: {exc}"[:200]) from None


def raw_size(blob: bytes) -> int:
    """Bytes of state a snapshot holds before compression (for the benchmarks)."""
    start = _HEADER_BYTES + (_MAC_BYTES if blob[5] & _SIGNED else 0)
    return len(zlib.decompress(blob[start:]))


@dataclass(frozen=True)
class StateCodec:
    """The snapshot settings of one worker (keys, size limit), for its stages to use."""

    key: bytes | None = None
    previous_key: bytes | None = None
    max_bytes: int | None = None

    def encode(self, obj: Any, context: str = "") -> bytes:
        return encode_state(obj, key=self.key, context=context.encode())

    def decode(self, blob: bytes, context: str = "") -> Any:
        return decode_state(blob, key=self.key, previous_key=self.previous_key,
                            context=context.encode(), max_bytes=self.max_bytes)


UNSIGNED = StateCodec()
