"""Decoding of the four telemetry topics: every way a message can break the contract."""

from __future__ import annotations

import json

import orjson
import pytest

from detector.decoding import decode, decode_value, salvage_nonfinite
from detector.events import (
    ECC,
    NIC,
    STEP,
    THERMAL,
    EccSample,
    InvalidMessage,
    NicSample,
    StepSample,
    ThermalSample,
)

GOOD = {
    STEP: {"ts": 1767225600.25, "job": "job-1", "step": 12, "rank": 5, "node": "node-000",
           "gpu": 5, "step_ms": 1000.0, "compute_ms": 700.0, "comm_ms": 280.0, "tp_rank": 5,
           "pp_rank": 0, "dp_rank": 0, "loss": 2.4, "grad_norm": 1.1, "param_checksum": "ab12",
           "tenant": "t", "cluster": "c"},
    ECC: {"ts": 1767225600.5, "node": "node-000", "gpu": 2, "sbe_volatile": 3, "dbe_volatile": 0,
          "retired_pages_sbe": 0, "retired_pages_dbe": 0, "row_remap_pending": False,
          "row_remap_failure": False, "xid": None, "pcie_replay": 1, "nvlink_crc_errors": 0,
          "nvlink_replay_errors": 0, "nvlink_recovery_errors": 0, "recovery_action": "none"},
    NIC: {"ts": 1767225600.5, "node": "node-000", "nic": "mlx5_0", "port": 1,
          "link_state": "up", "rate_gbps": 400, "tx_bytes": 10, "rx_bytes": 20,
          "symbol_errors": 0, "link_downed": 0, "rcv_errors": 0, "xmit_discards": 0,
          "xmit_wait": 5, "out_of_sequence": 0, "packet_seq_err": 0, "np_cnp_sent": 0,
          "rp_cnp_handled": 0},
    THERMAL: {"ts": 1767225600.5, "node": "node-000", "gpu": 2, "gpu_temp_c": 65,
              "mem_temp_c": 70.5, "power_w": 600.0, "sm_clock_mhz": 1980, "throttle": 0},
}
TYPES = {STEP: StepSample, ECC: EccSample, NIC: NicSample, THERMAL: ThermalSample}
REQUIRED = {STEP: ["ts", "job", "step", "rank", "node", "gpu", "step_ms"],
            ECC: ["ts", "node", "gpu"], NIC: ["ts", "node", "nic", "port"],
            THERMAL: ["ts", "node", "gpu"]}


def with_(topic: str, **changes: object) -> dict[str, object]:
    d = dict(GOOD[topic])
    for k, v in changes.items():
        if v is ...:
            d.pop(k, None)
        else:
            d[k] = v
    return d


@pytest.mark.parametrize("topic", list(GOOD))
def test_good_messages_decode_to_their_record(topic: str) -> None:
    rec = decode(topic, orjson.dumps(GOOD[topic]))
    assert isinstance(rec, TYPES[topic])
    assert rec.ts == GOOD[topic]["ts"]


def test_integers_are_accepted_for_float_fields() -> None:
    rec = decode(THERMAL, orjson.dumps(GOOD[THERMAL]))
    assert rec.gpu_temp_c == 65.0 and isinstance(rec.gpu_temp_c, float)
    assert rec.sm_clock_mhz == 1980.0


def test_unknown_fields_are_ignored_and_optional_fields_may_be_null_or_absent() -> None:
    d = with_(THERMAL, extra="x", mem_temp_c=None, power_w=...)
    rec = decode_value(THERMAL, d)
    assert rec.mem_temp_c is None and rec.power_w is None


@pytest.mark.parametrize("topic,field", [(t, f) for t, fs in REQUIRED.items() for f in fs])
def test_a_missing_required_field_is_invalid_and_named(topic: str, field: str) -> None:
    with pytest.raises(InvalidMessage) as exc:
        decode_value(topic, with_(topic, **{field: ...}))
    assert exc.value.field == field
    assert f"'{field}': is required" in str(exc.value)


@pytest.mark.parametrize("topic,field,value,words", [
    (STEP, "ts", "yesterday", "must be a number"),
    (STEP, "step", 1.5, "integer"),
    (STEP, "rank", -1, ">= 0"),
    (STEP, "gpu", True, "integer"),
    (STEP, "job", 7, "must be a string"),
    (STEP, "job", "", "non-empty"),
    (STEP, "step_ms", -3.0, ">= 0"),
    (STEP, "compute_ms", -0.5, ">= 0"),
    (STEP, "grad_norm", "big", "must be a number"),
    (STEP, "param_checksum", 1234, "must be a string"),
    (ECC, "xid", "48", "integer"),
    (ECC, "row_remap_pending", 1, "true or false"),
    (ECC, "recovery_action", "panic", "must be one of"),
    (ECC, "dbe_volatile", -2, ">= 0"),
    (NIC, "link_state", "flapping", "must be one of"),
    (NIC, "port", "1", "integer"),
    (NIC, "tx_bytes", 1.5, "integer"),
    (THERMAL, "throttle", [64], "integer"),
    (THERMAL, "power_w", -1, ">= 0"),
    (THERMAL, "gpu_temp_c", {"c": 1}, "must be a number"),
])
def test_wrong_types_and_negative_values_are_invalid(topic: str, field: str, value: object,
                                                     words: str) -> None:
    with pytest.raises(InvalidMessage) as exc:
        decode_value(topic, with_(topic, **{field: value}))
    assert exc.value.field == field
    assert words in exc.value.reason


def test_the_reason_names_the_record() -> None:
    with pytest.raises(InvalidMessage) as exc:
        decode_value(STEP, with_(STEP, step_ms="slow"))
    assert "job=job-1" in exc.value.reason and "rank=5" in exc.value.reason


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_are_invalid(value: float) -> None:
    with pytest.raises(InvalidMessage, match="finite"):
        decode_value(THERMAL, with_(THERMAL, gpu_temp_c=value))


def test_non_finite_json_literals_are_invalid() -> None:
    raw = json.dumps(with_(STEP, loss=float("nan"))).encode()  # Python writes NaN
    with pytest.raises(InvalidMessage, match="must be a finite number"):
        decode(STEP, raw)
    raw = json.dumps(with_(THERMAL, gpu_temp_c=1e400)).encode()
    with pytest.raises(InvalidMessage):
        decode(THERMAL, raw)


def test_a_nan_loss_is_salvaged_for_the_engine() -> None:
    raw = json.dumps(with_(STEP, loss=float("nan"))).encode()
    nf = salvage_nonfinite(STEP, raw)
    assert nf is not None and nf.field == "loss" and nf.rank == 5 and nf.dp_rank == 0
    assert salvage_nonfinite(STEP, orjson.dumps(with_(STEP, step_ms="x"))) is None
    assert salvage_nonfinite(THERMAL, raw) is None


def test_step_parts_must_fit_in_the_step() -> None:
    with pytest.raises(InvalidMessage, match="compute_ms \\+ comm_ms"):
        decode_value(STEP, with_(STEP, compute_ms=800.0, comm_ms=300.0))
    # rounding at both ends is not a violation
    rec = decode_value(STEP, with_(STEP, compute_ms=700.3, comm_ms=300.0))
    assert rec.comm_ms == 300.0


def test_parallel_ranks_come_all_three_or_none() -> None:
    rec = decode_value(STEP, with_(STEP, tp_rank=..., pp_rank=..., dp_rank=...))
    assert (rec.tp_rank, rec.pp_rank, rec.dp_rank) == (0, 0, 5)
    with pytest.raises(InvalidMessage, match="all three or none") as exc:
        decode_value(STEP, with_(STEP, pp_rank=..., dp_rank=...))
    assert exc.value.field == "pp_rank"


@pytest.mark.parametrize("raw,words", [
    (b"", "not valid JSON"),
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "JSON object"),
    (b'"text"', "JSON object"),
    (b"\xff\xfe", "not valid JSON"),
])
def test_garbage_is_invalid(raw: bytes, words: str) -> None:
    with pytest.raises(InvalidMessage, match=words):
        decode(NIC, raw)


def test_unknown_topic_is_invalid() -> None:
    with pytest.raises(InvalidMessage, match="unknown topic"):
        decode("telemetry.power", b"{}")


def test_fast_and_slow_paths_agree_after_a_bad_message() -> None:
    # The fast path caches plans per message shape; a bad message must not poison it.
    with pytest.raises(InvalidMessage):
        decode_value(ECC, with_(ECC, sbe_volatile=-1))
    assert decode_value(ECC, GOOD[ECC]).sbe_volatile == 3


# -- bounds of untrusted input (DESIGN.md "Bounds") ------------------------------------


def test_a_deeply_nested_message_is_invalid_and_never_a_recursion_error() -> None:
    for depth in (3, 2_000, 200_000):
        raw = b'{"ts": 1.0, "node": "n", "gpu": 0, "x": ' + b"[" * depth + b"]" * depth + b"}"
        if depth == 3:
            assert decode(THERMAL, raw).gpu == 0  # an unknown field is skipped, nested or not
            continue
        with pytest.raises(InvalidMessage, match="nested too deep"):
            decode(THERMAL, raw)
        raw_nan = raw.replace(b'"gpu": 0', b'"gpu": 0, "gpu_temp_c": NaN')
        with pytest.raises(InvalidMessage):
            decode(THERMAL, raw_nan)
        assert salvage_nonfinite(STEP, raw) is None


def test_a_message_over_one_mebibyte_is_invalid() -> None:
    raw = orjson.dumps(with_(THERMAL, note="x" * (1 << 20)))
    with pytest.raises(InvalidMessage, match="over the limit"):
        decode(THERMAL, raw)


@pytest.mark.parametrize("field,value", [
    ("rank", 1 << 24), ("rank", 1 << 63), ("tp_rank", 1 << 63), ("gpu", 1 << 24),
    ("step", 1 << 64), ("step", 1 << 200),
])
def test_integers_beyond_their_field_range_are_invalid(field: str, value: int) -> None:
    for check in (lambda d: decode(STEP, orjson.dumps(d) if value < 1 << 64 else
                                   json.dumps(d).encode()), lambda d: decode_value(STEP, d)):
        with pytest.raises(InvalidMessage) as exc:
            check(with_(STEP, **{field: value}))
        assert exc.value.field == field and "must be an integer >= 0" in exc.value.reason
        assert len(exc.value.reason) < 300


def test_a_float_too_large_for_a_double_is_invalid() -> None:
    with pytest.raises(InvalidMessage, match="finite"):
        decode_value(THERMAL, with_(THERMAL, gpu_temp_c=1 << 1100))


@pytest.mark.parametrize("name", [
    "node\x00", "\x1b[31mnode-000\x1b[0m", "node-\u202e000", "n" * 257, "a\nb",
])
def test_names_with_control_characters_or_over_256_characters_are_invalid(name: str) -> None:
    for field in ("node", "job", "cluster", "tenant"):
        for check in (lambda d: decode(STEP, orjson.dumps(d)), lambda d: decode_value(STEP, d)):
            with pytest.raises(InvalidMessage) as exc:
                check(with_(STEP, **{field: name}))
            assert exc.value.field == field and "must be a name of" in exc.value.reason
            assert name not in exc.value.reason  # the reason itself is safe to print
    assert decode_value(STEP, with_(STEP, node="n" * 256, job="jöb-ünicode")).node == "n" * 256


def test_names_that_fail_the_byte_scan_but_are_printable_still_decode() -> None:
    # decode() scans the message bytes for ASCII without escapes first; non-ASCII and
    # JSON-escaped but printable names take the name-by-name path and stay valid.
    ok = decode(STEP, orjson.dumps(with_(STEP, job="jöb-ünicode", node="node-ß")))
    assert (ok.job, ok.node) == ("jöb-ünicode", "node-ß")
    raw = orjson.dumps(with_(STEP, job="a/b")).replace(b'"a/b"', b'"a\\/b"')
    assert decode(STEP, raw).job == "a/b"


def test_a_nan_literal_is_non_finite_not_bad_json() -> None:
    raw = json.dumps(with_(STEP, grad_norm=float("inf"))).encode()
    with pytest.raises(InvalidMessage, match="finite") as exc:
        decode(STEP, raw)
    assert exc.value.nonfinite is not None and exc.value.nonfinite.field == "grad_norm"
