"""Telemetry records of the data contract (DESIGN.md, "Input contract").

Each topic has one immutable record type, a :mod:`msgspec` Struct whose field
annotations carry the contract's bounds, so :mod:`detector.decoding` turns a
Kafka message value into its record at C speed.  Records are built
positionally (tests, the engine's harness) or decoded; fields are read by
name.

>>> StepSample(1.5, "j", 3, 0, "n0", 0, 1000.0).dp_rank
0
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NamedTuple

import msgspec
from msgspec import Meta

STEP = "telemetry.step"
ECC = "telemetry.ecc"
NIC = "telemetry.nic"
THERMAL = "telemetry.thermal"
TELEMETRY_TOPICS = (STEP, ECC, NIC, THERMAL)

# step_ms >= compute_ms + comm_ms must hold; producers round each field on its
# own, so allow rounding slack before calling a message inconsistent.
SUM_SLACK_MS = 0.5
SUM_SLACK_REL = 1e-3

# Bounds of untrusted input (DESIGN.md, "Bounds").
MAX_NAME_CHARS = 256
INDEX_LIMIT = 1 << 24      # rank, tp/pp/dp rank, gpu, port, xid
COUNTER_LIMIT = 1 << 63    # cumulative counters, step numbers, bitmasks
# A negotiated link rate no link trains at: InfiniBand XDR / 800GbE is the top today (2x
# headroom for the next generation); above it the collector is wrong, or the record forged.
MAX_RATE_GBPS = 1600.0
MAX_AHEAD_S = 300.0        # a ts further ahead of its partition's clock is out of range
JUMP_AGREE = 3             # ... unless this many consecutive records agree on the new time

RECOVERY_ACTIONS = frozenset({"none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset"})
LINK_STATES = frozenset({"up", "down"})

# Float fields: finite (a NaN fails every comparison, so the bounds reject it too).
_FMAX = 1.7976931348623157e308
Finite = Annotated[float, Meta(ge=-_FMAX, le=_FMAX)]
OptFinite = Finite | None
Name = Annotated[str, Meta(min_length=1, max_length=MAX_NAME_CHARS)]
OptName = Annotated[str, Meta(max_length=MAX_NAME_CHARS)] | None
Index = Annotated[int, Meta(ge=0, lt=INDEX_LIMIT)]
OptIndex = Index | None
Counter = Annotated[int, Meta(ge=0, le=COUNTER_LIMIT - 1)] | None
NonNeg = Annotated[float, Meta(ge=0.0, le=_FMAX)]
OptNonNeg = NonNeg | None
OptRate = Annotated[float, Meta(ge=0.0, le=MAX_RATE_GBPS)] | None
RecoveryAction = Literal["none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset"]
LinkState = Literal["up", "down"]


class InvalidMessage(ValueError):
    """A message that breaks the contract; ``reason`` goes to the dead-letter topic.

    ``nonfinite`` is set when a step message was rejected only for a NaN or
    infinite ``loss``/``grad_norm`` (see :class:`NonFinite`), and ``cluster`` to its
    `cluster` value (the NonFinite's cluster: not a field of it, which is snapshot schema).
    """

    def __init__(self, topic: str, reason: str, field: str | None = None,
                 nonfinite: NonFinite | None = None, cluster: str | None = None) -> None:
        super().__init__(f"{topic}: {reason}")
        self.topic = topic
        self.reason = reason
        self.field = field
        self.nonfinite = nonfinite
        self.cluster = cluster


def names_printable(ev: Any) -> bool:
    """True when every name a record carries is printable (no control, escape or bidi
    characters): names end up in alert scopes, dedup keys and terminals.

    The decoder checks the message's bytes instead where it can (see
    detector.decoding); this is the check for what they cannot vouch for.
    """
    for name in _NAME_FIELDS[type(ev)]:
        v = getattr(ev, name)
        if v is not None and not v.isprintable():
            return False
    return True


class _Record(msgspec.Struct, frozen=True, gc=False):
    """Common behaviour of the telemetry records (the NamedTuple helpers tests rely on)."""

    def _replace(self, **changes: Any) -> Any:
        return msgspec.structs.replace(self, **changes)

    def _asdict(self) -> dict[str, Any]:
        return msgspec.structs.asdict(self)

    @classmethod
    def _make(cls, values: Any) -> Any:
        return cls(*values)

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        return cls.__struct_fields__


class _StepMeta(msgspec.StructMeta):
    """Building a StepSample applies :func:`fill_ranks` (ValueError if only some are given).

    Not a ``__post_init__``: msgspec would call that for every decoded step too, a
    Python call each (~650 instructions, 6 % of a step's decode); the decoders apply
    the rule in the checks they run anyway.  Types, bounds and the length of names
    are msgspec's; printable names and step_ms >= compute_ms + comm_ms are the
    decoder's (tests and simulators build records that bend the latter on purpose).
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        s = super().__call__(*args, **kwargs)
        if not fill_ranks(s):
            raise ValueError("tp_rank, pp_rank and dp_rank come all three or none")
        return s


class StepSample(_Record, frozen=True, gc=False, metaclass=_StepMeta):
    """One rank's report of one training step (``telemetry.step``)."""

    ts: Finite
    job: Name
    step: Annotated[int, Meta(ge=0, le=COUNTER_LIMIT - 1)]
    rank: Index
    node: Name
    gpu: Index
    step_ms: NonNeg
    compute_ms: OptNonNeg = None
    comm_ms: OptNonNeg = None
    tp_rank: OptIndex = None
    pp_rank: OptIndex = None
    dp_rank: OptIndex = None
    loss: OptFinite = None
    grad_norm: OptNonNeg = None
    param_checksum: OptName = None
    cluster: OptName = None
    tenant: OptName = None


def fill_ranks(s: StepSample) -> bool:
    """The rank rule of a step, in place: False if only some of tp/pp/dp_rank are given.

    None of the three means pure data parallelism: ``tp_rank = pp_rank = 0``,
    ``dp_rank = rank``.  Building a StepSample applies it (see :class:`_StepMeta`);
    decoding does not run the constructor, so :mod:`detector.decoding` calls it.
    """
    if s.dp_rank is None or s.tp_rank is None or s.pp_rank is None:
        if s.tp_rank is not None or s.pp_rank is not None or s.dp_rank is not None:
            return False
        setattr_ = msgspec.structs.force_setattr
        setattr_(s, "tp_rank", 0)
        setattr_(s, "pp_rank", 0)
        setattr_(s, "dp_rank", s.rank)
    return True


def parts_fit(s: StepSample) -> bool:
    """step_ms >= compute_ms + comm_ms, with the producers' rounding allowed."""
    return (s.compute_ms or 0.0) + (s.comm_ms or 0.0) <= (
        s.step_ms + SUM_SLACK_MS + SUM_SLACK_REL * s.step_ms)


class EccSample(_Record, frozen=True, gc=False):
    """One GPU's memory/XID/interconnect health sample (``telemetry.ecc``); counters cumulative."""

    ts: Finite
    node: Name
    gpu: Index
    sbe_volatile: Counter = None
    dbe_volatile: Counter = None
    retired_pages_sbe: Counter = None
    retired_pages_dbe: Counter = None
    row_remap_pending: bool | None = None
    row_remap_failure: bool | None = None
    xid: OptIndex = None
    pcie_replay: Counter = None
    nvlink_crc_errors: Counter = None
    nvlink_replay_errors: Counter = None
    nvlink_recovery_errors: Counter = None
    recovery_action: RecoveryAction | None = None
    cluster: OptName = None
    tenant: OptName = None


class NicSample(_Record, frozen=True, gc=False):
    """One NIC port's counters (``telemetry.nic``); counters cumulative."""

    ts: Finite
    node: Name
    nic: Name
    port: Index
    link_state: LinkState | None = None
    rate_gbps: OptRate = None
    tx_bytes: Counter = None
    rx_bytes: Counter = None
    symbol_errors: Counter = None
    link_downed: Counter = None
    rcv_errors: Counter = None
    xmit_discards: Counter = None
    xmit_wait: Counter = None
    out_of_sequence: Counter = None
    packet_seq_err: Counter = None
    np_cnp_sent: Counter = None
    rp_cnp_handled: Counter = None
    cluster: OptName = None
    tenant: OptName = None


class ThermalSample(_Record, frozen=True, gc=False):
    """One GPU's temperature, power and clock sample (``telemetry.thermal``)."""

    ts: Finite
    node: Name
    gpu: Index
    gpu_temp_c: OptFinite = None
    mem_temp_c: OptFinite = None
    power_w: OptNonNeg = None
    sm_clock_mhz: OptNonNeg = None
    throttle: Counter = None
    cluster: OptName = None
    tenant: OptName = None


Event = StepSample | EccSample | NicSample | ThermalSample
RECORD_TYPES: dict[str, type[_Record]] = {STEP: StepSample, ECC: EccSample, NIC: NicSample,
                                          THERMAL: ThermalSample}

# The name fields of each record (DESIGN.md, "Bounds": printable, at most 256 characters).
_NAME_FIELDS: dict[type, tuple[str, ...]] = {
    StepSample: ("job", "node", "param_checksum", "cluster", "tenant"),
    EccSample: ("node", "cluster", "tenant"),
    NicSample: ("node", "nic", "cluster", "tenant"),
    ThermalSample: ("node", "cluster", "tenant"),
}

ECC_COUNTERS = (
    "sbe_volatile", "dbe_volatile", "retired_pages_sbe", "retired_pages_dbe", "pcie_replay",
    "nvlink_crc_errors", "nvlink_replay_errors", "nvlink_recovery_errors",
)
NIC_COUNTERS = (
    "tx_bytes", "rx_bytes", "symbol_errors", "link_downed", "rcv_errors", "xmit_discards",
    "xmit_wait", "out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled",
)


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


def __getattr__(name: str) -> Any:
    # The decoder lives in detector.decoding (it needs these records first); its
    # functions are still found here for code written before the move.
    if name in ("decode", "decode_value", "salvage_nonfinite"):
        from detector import decoding

        return getattr(decoding, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
