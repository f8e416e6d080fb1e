"""Telemetry records of the data contract (DESIGN.md, "Input contract"), decoded once at the edge.

Each topic has one immutable record type. ``decode(topic, raw)`` turns a Kafka
message value (JSON bytes) into that record or raises :class:`InvalidMessage`
with a reason a person can act on: the field, what was wrong, and which record.

This is the hot path (every event passes here), so records are NamedTuples
built positionally, and a message of a shape seen before is checked by a small
function generated for that shape (see "The fast path" below), not by a
validation framework.

>>> s = decode(STEP, b'{"ts": 1.5, "job": "j", "step": 3, "rank": 0, "node": "n0", "gpu": 0,'
...            b' "step_ms": 1000, "compute_ms": 700.0, "comm_ms": 250.0}')
>>> s.step_ms, s.dp_rank, s.loss
(1000.0, 0, None)
>>> decode(THERMAL, b'{"ts": 1.0, "node": "n0", "gpu": -1}')
Traceback (most recent call last):
...
detector.events.InvalidMessage: telemetry.thermal: field 'gpu': must be an integer >= 0, got -1 ...
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

import orjson

STEP = "telemetry.step"
ECC = "telemetry.ecc"
NIC = "telemetry.nic"
THERMAL = "telemetry.thermal"
TELEMETRY_TOPICS = (STEP, ECC, NIC, THERMAL)

# step_ms >= compute_ms + comm_ms must hold; producers round each field on its
# own, so allow rounding slack before calling a message inconsistent.
_SUM_SLACK_MS = 0.5
_SUM_SLACK_REL = 1e-3

RECOVERY_ACTIONS = frozenset({"none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset"})
LINK_STATES = frozenset({"up", "down"})


class InvalidMessage(ValueError):
    """A message that breaks the contract; ``reason`` goes to the dead-letter topic."""

    def __init__(self, topic: str, reason: str, field: str | None = None) -> None:
        super().__init__(f"{topic}: {reason}")
        self.topic = topic
        self.reason = reason
        self.field = field


class StepSample(NamedTuple):
    """One rank's report of one training step (``telemetry.step``)."""

    ts: float
    job: str
    step: int
    rank: int
    node: str
    gpu: int
    step_ms: float
    compute_ms: float | None
    comm_ms: float | None
    tp_rank: int
    pp_rank: int
    dp_rank: int
    loss: float | None
    grad_norm: float | None
    param_checksum: str | None
    cluster: str | None
    tenant: str | None


class EccSample(NamedTuple):
    """One GPU's memory/XID/interconnect health sample (``telemetry.ecc``); counters cumulative."""

    ts: float
    node: str
    gpu: int
    sbe_volatile: int | None
    dbe_volatile: int | None
    retired_pages_sbe: int | None
    retired_pages_dbe: int | None
    row_remap_pending: bool | None
    row_remap_failure: bool | None
    xid: int | None
    pcie_replay: int | None
    nvlink_crc_errors: int | None
    nvlink_replay_errors: int | None
    nvlink_recovery_errors: int | None
    recovery_action: str | None
    cluster: str | None
    tenant: str | None


class NicSample(NamedTuple):
    """One NIC port's counters (``telemetry.nic``); counters cumulative."""

    ts: float
    node: str
    nic: str
    port: int
    link_state: str | None
    rate_gbps: float | None
    tx_bytes: int | None
    rx_bytes: int | None
    symbol_errors: int | None
    link_downed: int | None
    rcv_errors: int | None
    xmit_discards: int | None
    xmit_wait: int | None
    out_of_sequence: int | None
    packet_seq_err: int | None
    np_cnp_sent: int | None
    rp_cnp_handled: int | None
    cluster: str | None
    tenant: str | None


class ThermalSample(NamedTuple):
    """One GPU's temperature, power and clock sample (``telemetry.thermal``)."""

    ts: float
    node: str
    gpu: int
    gpu_temp_c: float | None
    mem_temp_c: float | None
    power_w: float | None
    sm_clock_mhz: float | None
    throttle: int | None
    cluster: str | None
    tenant: str | None


Event = StepSample | EccSample | NicSample | ThermalSample

ECC_COUNTERS = (
    "sbe_volatile", "dbe_volatile", "retired_pages_sbe", "retired_pages_dbe", "pcie_replay",
    "nvlink_crc_errors", "nvlink_replay_errors", "nvlink_recovery_errors",
)
NIC_COUNTERS = (
    "tx_bytes", "rx_bytes", "symbol_errors", "link_downed", "rcv_errors", "xmit_discards",
    "xmit_wait", "out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled",
)


class _Bad(Exception):
    """Internal: which field failed and why; turned into InvalidMessage with the record's ids."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem


def _show(v: Any) -> str:
    text = repr(v) if not isinstance(v, float) else f"{v!r}"
    return text if len(text) <= 40 else text[:37] + "..."


def _float(d: dict[str, Any], name: str, required: bool, minimum: float | None = None) -> Any:
    v = d.get(name)
    t = type(v)
    if t is float:
        if v - v != 0.0:  # NaN or inf; orjson never yields them, dicts from Python may
            raise _Bad(name, f"must be a finite number, got {_show(v)}")
    elif t is int:
        v = float(v)
    elif v is None:
        if required:
            raise _Bad(name, "is required")
        return None
    else:
        raise _Bad(name, f"must be a number, got {type(v).__name__} {_show(v)}")
    if minimum is not None and v < minimum:
        raise _Bad(name, f"must be >= {minimum:g}, got {_show(v)}")
    return v


def _int(d: dict[str, Any], name: str, required: bool) -> Any:
    v = d.get(name)
    if type(v) is int:
        if v < 0:
            raise _Bad(name, f"must be an integer >= 0, got {v}")
        return v
    if v is None:
        if required:
            raise _Bad(name, "is required")
        return None
    raise _Bad(name, f"must be an integer >= 0, got {type(v).__name__} {_show(v)}")


def _str(d: dict[str, Any], name: str, required: bool) -> Any:
    v = d.get(name)
    if type(v) is str:
        if not v and required:
            raise _Bad(name, "must be a non-empty string")
        return v
    if v is None:
        if required:
            raise _Bad(name, "is required")
        return None
    raise _Bad(name, f"must be a string, got {type(v).__name__} {_show(v)}")


def _bool(d: dict[str, Any], name: str) -> Any:
    v = d.get(name)
    if v is None or type(v) is bool:
        return v
    raise _Bad(name, f"must be true or false, got {type(v).__name__} {_show(v)}")


def _one_of(d: dict[str, Any], name: str, allowed: frozenset[str]) -> Any:
    v = _str(d, name, False)
    if v is not None and v not in allowed:
        raise _Bad(name, f"must be one of {sorted(allowed)}, got {_show(v)}")
    return v


# Field specs, in record order: (name, kind, required, minimum); kinds are F float,
# I non-negative int, S string, B bool, or a frozenset of allowed strings.
F, I, S, B = "float", "int", "str", "bool"  # noqa: E741 (the spec table reads as a grid)
_COMMON = (("cluster", S, False, None), ("tenant", S, False, None))
_SPECS: dict[str, tuple[type, tuple[tuple[str, Any, bool, float | None], ...]]] = {
    STEP: (StepSample, (
        ("ts", F, True, None), ("job", S, True, None), ("step", I, True, None),
        ("rank", I, True, None), ("node", S, True, None), ("gpu", I, True, None),
        ("step_ms", F, True, 0.0), ("compute_ms", F, False, 0.0), ("comm_ms", F, False, 0.0),
        ("tp_rank", I, False, None), ("pp_rank", I, False, None), ("dp_rank", I, False, None),
        ("loss", F, False, None), ("grad_norm", F, False, 0.0), ("param_checksum", S, False, None),
        *_COMMON)),
    ECC: (EccSample, (
        ("ts", F, True, None), ("node", S, True, None), ("gpu", I, True, None),
        ("sbe_volatile", I, False, None), ("dbe_volatile", I, False, None),
        ("retired_pages_sbe", I, False, None), ("retired_pages_dbe", I, False, None),
        ("row_remap_pending", B, False, None), ("row_remap_failure", B, False, None),
        ("xid", I, False, None), ("pcie_replay", I, False, None),
        ("nvlink_crc_errors", I, False, None), ("nvlink_replay_errors", I, False, None),
        ("nvlink_recovery_errors", I, False, None),
        ("recovery_action", RECOVERY_ACTIONS, False, None), *_COMMON)),
    NIC: (NicSample, (
        ("ts", F, True, None), ("node", S, True, None), ("nic", S, True, None),
        ("port", I, True, None), ("link_state", LINK_STATES, False, None),
        ("rate_gbps", F, False, 0.0), *[(n, I, False, None) for n in NIC_COUNTERS], *_COMMON)),
    THERMAL: (ThermalSample, (
        ("ts", F, True, None), ("node", S, True, None), ("gpu", I, True, None),
        ("gpu_temp_c", F, False, None), ("mem_temp_c", F, False, None),
        ("power_w", F, False, 0.0), ("sm_clock_mhz", F, False, 0.0),
        ("throttle", I, False, None), *_COMMON)),
}
for _cls, _spec in _SPECS.values():
    assert tuple(f[0] for f in _spec) == _cls._fields, _cls


def _check_field(d: dict[str, Any], name: str, kind: Any, required: bool,
                 minimum: float | None) -> Any:
    if kind is F:
        return _float(d, name, required, minimum)
    if kind is I:
        return _int(d, name, required)
    if kind is S:
        return _str(d, name, required)
    if kind is B:
        return _bool(d, name)
    return _one_of(d, name, kind)


def _finish_step(v: list[Any]) -> None:
    """Cross-field rules of telemetry.step, applied to values in StepSample order."""
    step_ms, compute_ms, comm_ms = v[6], v[7], v[8]
    parts = (compute_ms or 0.0) + (comm_ms or 0.0)
    if parts > step_ms + _SUM_SLACK_MS + _SUM_SLACK_REL * step_ms:
        raise _Bad("step_ms", f"must be >= compute_ms + comm_ms ({parts:g}), got {step_ms:g}")
    tp, pp, dp = v[9], v[10], v[11]
    if tp is None and pp is None and dp is None:
        v[9], v[10], v[11] = 0, 0, v[3]  # absent means pure data parallelism
    elif tp is None or pp is None or dp is None:
        missing = [n for n, x in (("tp_rank", tp), ("pp_rank", pp), ("dp_rank", dp)) if x is None]
        raise _Bad(missing[0], "tp_rank, pp_rank and dp_rank come all three or none; "
                   f"missing {', '.join(missing)}")


def _slow(topic: str, d: dict[str, Any]) -> Event:
    """Field-by-field validation that names the first bad field."""
    cls, spec = _SPECS[topic]
    vals = [_check_field(d, *f) for f in spec]
    if topic == STEP:
        _finish_step(vals)
    return cls._make(vals)  # type: ignore[attr-defined,no-any-return]


_NONE = type(None)


def _allowed(kind: Any, required: bool) -> tuple[type, ...]:
    base = {F: (float, int), I: (int,), S: (str,), B: (bool,)}.get(kind, (str,))
    return base if required else (*base, _NONE)


# The fast path.  Messages from one producer nearly always have the same shape: the
# same keys in the same order, each value of the same JSON type.  For each shape seen,
# a small function is generated once that takes the values positionally and runs only
# the checks that shape still needs (a sign here, a non-empty string there); the
# per-message work is then one C-level pass over the dict's keys and one over its
# values' types (together, the shape), one dict lookup and one call.  Any failed check
# returns None and the message takes the field-by-field path (_slow), which says what
# is wrong.  Shapes that cannot be valid (a string where a number belongs) are
# remembered as None.
Shape = tuple[Any, ...]  # the keys in order, then the type of each value
_SHAPES: dict[str, dict[Shape, Any]] = {t: {} for t in _SPECS}
_MAX_SHAPES = 256  # per topic; shapes are few in practice, bad input must not grow this
_UNSEEN = object()


def _compile(topic: str, shape: Shape) -> Any:
    """The checking function of one message shape, or None if no message of it is valid."""
    keys, types = shape[:len(shape) // 2], shape[len(shape) // 2:]
    cls, spec = _SPECS[topic]
    where = {k: i for i, k in enumerate(keys)}
    params = [f"_{i}" for i in range(len(keys))]  # values of keys no field reads
    ns: dict[str, Any] = {"_new": tuple.__new__, "_cls": cls, "_float": float,
                          "_SLACK_MS": _SUM_SLACK_MS, "_SLACK_REL": _SUM_SLACK_REL}
    body: list[str] = []
    floats: list[str] = []
    bad: list[str] = []       # any of these true: not valid (the slow path says why)
    out: list[str] = []       # the record's values, in field order
    for name, kind, required, minimum in spec:
        i = where.get(name)
        t = types[i] if i is not None else _NONE
        if t not in _allowed(kind, required):
            return None  # e.g. a required field absent or null, a bool for an integer
        if t is _NONE:
            out.append("None")
            continue
        x = params[i] = f"v{i}"
        if kind is F:
            if t is int:
                body.append(f"    {x} = _float({x})")
            floats.append(x)
            if minimum is not None:
                bad.append(f"{x} < {float(minimum)!r}")
        elif kind is I:
            bad.append(f"{x} < 0")
        elif kind is S:
            if required:
                bad.append(f"not {x}")
        elif kind is not B:  # a set of allowed strings
            ns[f"_allowed{i}"] = kind
            bad.append(f"{x} not in _allowed{i}")
        out.append(x)
    if topic == STEP:
        # As _finish_step: the parts must fit in the step; tp/pp/dp all three or none.
        parts = [out[7], out[8]]
        bad.append(f"({parts[0]} or 0.0) + ({parts[1]} or 0.0) > "
                   f"{out[6]} + _SLACK_MS + _SLACK_REL * {out[6]}")
        present = [x != "None" for x in out[9:12]]
        if not all(present):
            if any(present):
                return None
            out[9:12] = ["0", "0", out[3]]  # absent means pure data parallelism
    if floats:
        # NaN or an infinity among them (orjson never yields them; dicts from Python may)
        body.append(f"    total = {' + '.join(floats)}")
        bad.insert(0, "total - total != 0.0")
    if bad:
        body.append(f"    if {' or '.join(bad)}:\n        return None")
    body.append(f"    return _new(_cls, ({', '.join(out)},))")
    src = f"def check({', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(compile(src, f"<decode {topic}>", "exec"), ns)  # noqa: S102 - our own source
    return ns["check"]


def _learn(topic: str, shape: Shape) -> Any:
    """Compile a shape not seen before and remember it."""
    shapes = _SHAPES[topic]
    check = _compile(topic, shape)
    if len(shapes) >= _MAX_SHAPES:
        shapes.clear()  # a flood of odd shapes: start again rather than stop caching
    shapes[shape] = check
    return check


_ID_FIELDS = ("job", "step", "rank", "node", "gpu", "nic", "ts")


def _identify(d: dict[str, Any]) -> str:
    """The record's identifying fields, so a person can find it in the source."""
    ids = [f"{k}={_show(d[k]) if not isinstance(d[k], str) else d[k][:40]}"
           for k in _ID_FIELDS if k in d]
    return f" ({' '.join(ids)})" if ids else ""


def decode_value(topic: str, value: Any) -> Event:
    """Validate an already-parsed JSON object from ``topic`` into its record."""
    shapes = _SHAPES.get(topic)
    if shapes is None:
        raise InvalidMessage(topic, f"unknown topic {topic!r}")
    if type(value) is not dict:
        raise InvalidMessage(topic, f"message must be a JSON object, got {type(value).__name__}")
    values = value.values()
    shape = (*value, *map(type, values))
    check = shapes.get(shape, _UNSEEN)
    if check is _UNSEEN:
        check = _learn(topic, shape)
    if check is not None:
        event = check(*values)
        if event is not None:
            return event  # type: ignore[no-any-return]
    try:
        return _slow(topic, value)
    except _Bad as bad:
        raise InvalidMessage(topic, f"field {bad.field!r}: {bad.problem}{_identify(value)}",
                             bad.field) from None


def decode(topic: str, raw: bytes | bytearray | memoryview | str) -> Event:
    """Decode one Kafka message value (UTF-8 JSON) from ``topic``."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidMessage(topic, f"not valid JSON: {exc}") from None
    return decode_value(topic, value)


class NonFinite(NamedTuple):
    """A step record rejected only because ``loss`` or ``grad_norm`` is NaN or infinite.

    The contract makes such a message invalid (it is dead-lettered), yet a NaN
    loss on one replica is exactly what silent data corruption looks like, so
    the engine is told about it separately.
    """

    ts: float
    job: str
    step: int
    rank: int
    node: str
    gpu: int
    field: str
    tp_rank: int
    pp_rank: int
    dp_rank: int


def salvage_nonfinite(topic: str, raw: bytes | str | dict[str, Any]) -> NonFinite | None:
    """For a step message that failed to decode, recover it if only loss/grad_norm were non-finite.

    orjson rejects the ``NaN``/``Infinity`` literals Python's json module writes,
    so the slow path re-parses with the standard library.  Only called for
    messages that already failed, never on the hot path.
    """
    if topic != STEP:
        return None
    if isinstance(raw, dict):
        value: Any = raw
    else:
        try:
            value = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return None
    if type(value) is not dict:
        return None
    bad = [f for f in ("loss", "grad_norm")
           if isinstance(value.get(f), float) and not math.isfinite(value[f])]
    if not bad:
        return None
    cleaned = {k: v for k, v in value.items() if k not in bad}
    try:
        s = _slow(STEP, cleaned)
    except _Bad:
        return None
    assert isinstance(s, StepSample)
    return NonFinite(s.ts, s.job, s.step, s.rank, s.node, s.gpu, bad[0],
                     s.tp_rank, s.pp_rank, s.dp_rank)
