"""Adversarial review (room harden, round 8): forged messages on the findings topic.

Workers read each other's findings through a Kafka topic, so a findings message
is untrusted input too (anyone who can write the topic writes it).  The rule
(README, DESIGN.md "Bounds"): bad input is counted and never loses the good
messages around it; names that reach an alert are printable and at most 256
characters.  Each test makes a real findings stream -- a telemetry partition's
:meth:`SourcePartition.process` on a fault -- and feeds it, with one forged
message first, to a :class:`CorrelatorPartition` through ``on_message`` (the
path a worker's consumer takes), then compares the alerts with a clean run.
"""

from __future__ import annotations

import copy
import math
import time
from typing import Any

import msgspec
import orjson
import pytest

from detector.alerts import Alert
from detector.decoding import MAX_MESSAGE_BYTES
from detector.events import ECC, MAX_NAME_CHARS, NIC, STEP, THERMAL
from detector.findings import decode_message
from detector.pipeline.correlator import CorrelatorPartition, alert_message
from detector.pipeline.source import DeadLetter, Emit, SourcePartition, watermarks
from detector.testing import healthy_job

T0 = 1767225600.0


def _stream(topic: str, values: list[dict[str, Any]]) -> tuple[SourcePartition, list[Emit]]:
    src = SourcePartition(topic, 0, 1, wall_clock=lambda: T0 + 100.0)
    emits: list[Emit] = []
    dead: list[DeadLetter] = []
    src.process([(i, b"k", orjson.dumps(v), None) for i, v in enumerate(values)], T0, emits,
                dead)
    assert dead == []
    src.caught_up = True
    return src, [*emits, watermarks([src], T0, 5.0)]


def _xid_stream() -> tuple[SourcePartition, list[Emit]]:
    """GPU node-001/0 falls off the bus (XID 79) among healthy samples."""
    values = [{"ts": T0 + i, "node": "node-001", "gpu": 0, "sbe_volatile": 0,
               "dbe_volatile": 0, **({"xid": 79} if i == 5 else {})} for i in range(11)]
    return _stream(ECC, values)


def _link_down_stream() -> tuple[SourcePartition, list[Emit]]:
    """node-001's mlx5_0 goes down at +10 s; 4 nodes of 2 NICs, no topology."""
    values = []
    for i in range(30):
        for n in range(4):
            for k in range(2):
                down = n == 1 and k == 0 and i >= 10
                values.append({"ts": T0 + i, "node": f"node-{n:03d}", "nic": f"mlx5_{k}",
                               "port": 1, "link_state": "down" if down else "up",
                               "symbol_errors": 0, "link_downed": int(down)})
    return _stream(NIC, values)


def _correlate(src: SourcePartition, emits: list[Emit], forged: list[bytes]
               ) -> tuple[CorrelatorPartition, list[Alert]]:
    corr = CorrelatorPartition(0, expected=[src.source], now=T0)
    for offset, raw in enumerate([*forged, *(e.value for e in emits)]):
        corr.on_message(offset, raw, T0)
    alerts: list[Alert] = []
    corr.release(T0, alerts)
    return corr, alerts


def _firing(alerts: list[Alert]) -> list[str]:
    return [a.dedup_key for a in alerts if a.status == "firing"]


def _finding_message(emits: list[Emit]) -> dict[str, Any]:
    return next(m for e in emits if (m := orjson.loads(e.value))["type"] == "finding")


def _forge(emits: list[Emit], **changes: Any) -> bytes:
    """The stream's finding, re-sent under its own source with an earlier id and changes
    (``scope_X`` changes the scope's X)."""
    msg = copy.deepcopy(_finding_message(emits))
    msg["id"] = [-1, 0]
    f = msg["finding"]
    for k, v in changes.items():
        if k.startswith("scope_"):
            f["scope"][k.removeprefix("scope_")] = v
        elif k in ("tag", "arrived"):
            msg[k] = v
        else:
            f[k] = v
    return orjson.dumps(msg)


# -- pins --------------------------------------------------------------------------------

@pytest.mark.parametrize("changes", [
    {"scope_node": ["node-9"]}, {"scope_node": {"a": 1}}, {"ts": "x"},
    {"evidence": [1]}, {"signal": ["x"]}, {"scope_level": "rack"}, {"scope_gpu": True},
    {"tag": "x"}, {"arrived": "x"}, {"scope": None},
], ids=lambda c: ",".join(c))
def test_a_malformed_finding_on_another_unit_changes_no_real_alert(changes: dict[str, Any]
                                                                   ) -> None:
    src, emits = _xid_stream()
    _, clean = _correlate(src, emits, [])
    assert _firing(clean) == ["fl:iso:hardware:gpu:node-001/0"]
    if "scope_node" not in changes and "scope" not in changes:
        changes = {"scope_node": "node-9", **changes}
    corr, got = _correlate(src, emits, [_forge(emits, **changes)])
    assert _firing(got) == _firing(clean)
    assert corr.invalid + corr.errors == 1  # counted, as the module says


@pytest.mark.parametrize("raw", [
    b"", b"\xff\xfe", b"[]", b"null", b'{"type": "finding"}', b'{"type": "watermarks"}',
    b'{"type": "watermarks", "clocks": [["s", 1.0]]}', b"[" * 2000,
    b'{"type": "seen", "source": "s", "node": "' + b"n" * (1 << 20) + b'", "what": "ecc"}',
], ids=lambda r: f"{len(r)}B:{r[:24]!r}")
def test_garbage_on_the_findings_topic_is_counted_and_the_stream_goes_on(raw: bytes) -> None:
    src, emits = _xid_stream()
    corr, got = _correlate(src, emits, [raw])
    assert _firing(got) == ["fl:iso:hardware:gpu:node-001/0"]
    assert corr.invalid == 1


# -- findings ----------------------------------------------------------------------------

def test_a_finding_tagged_nan_does_not_stall_the_partition() -> None:
    src, emits = _xid_stream()
    corr, got = _correlate(src, emits, [_forge(emits, tag="nan", scope_node="node-9")])
    assert "fl:iso:hardware:gpu:node-001/0" in _firing(got)
    assert len(corr._heap) == 0


@pytest.mark.parametrize("ts", [1e300, "wall+301", "inf"])
def test_a_watermark_far_ahead_does_not_erase_a_nic_fault(ts: Any) -> None:
    # (A well-typed time more than 300 s ahead of the wall clock is no source's:
    # detector.findings.decode_message refuses it.)
    if ts == "wall+301":
        ts = time.time() + 301.0  # (now: a suite runs for minutes after collecting)
    src, emits = _link_down_stream()
    _, clean = _correlate(src, emits, [])
    assert _firing(clean) == ["fl:iso:network:nic:node-001/mlx5_0:1"]
    forged = orjson.dumps({"type": "watermarks", "clocks": [[src.source, ts, False]]})
    corr, got = _correlate(src, emits, [forged])
    assert _firing(got) == _firing(clean)
    assert corr.released < T0 + 3600.0
    assert corr.invalid == 1


@pytest.mark.parametrize("field", ["tag", "ts", "onset_ts", "arrived"])
def test_a_finding_far_ahead_of_the_wall_clock_is_refused(field: str) -> None:
    src, emits = _xid_stream()
    corr, got = _correlate(src, emits, [_forge(emits, **{field: 1e300})])
    assert corr.invalid == 1
    assert _firing(got) == ["fl:iso:hardware:gpu:node-001/0"]


def test_times_within_the_wall_clock_skew_are_taken() -> None:
    wall = T0 + 1000.0
    for ts in (wall + 300.0, wall - 1e6):
        raw = orjson.dumps({"type": "watermarks", "clocks": [["telemetry.ecc:0", ts, False]]})
        assert decode_message(raw, wall).clocks[0][1] == ts
    with pytest.raises(ValueError, match="ts_out_of_range"):
        decode_message(orjson.dumps({"type": "watermarks", "clocks": [
            ["telemetry.ecc:0", math.nextafter(wall + 300.0, math.inf), False]]}), wall)


def _slow_rank_beside_thermal() -> list[tuple[SourcePartition, list[Emit]]]:
    """Rank 3 (gpu:node-000/3) 20 % slow from step 15 of a 16-rank job, with node-000's and
    node-001's thermal telemetry every second, unthrottled: an unexplained slow rank."""
    steps = [orjson.loads(msgspec.json.encode(e)) for e in healthy_job(slow={3: 1.2},
                                                                       slow_from=15)]
    temps = [{"ts": T0 + i + 0.5, "node": f"node-{n:03d}", "gpu": g, "gpu_temp_c": 60.0,
              "sm_clock_mhz": 1980.0, "power_w": 600.0, "throttle": 0}
             for i in range(45) for n in range(2) for g in range(8)]
    return [_stream(STEP, steps), _stream(THERMAL, temps)]


def test_a_forged_sampling_interval_does_not_hold_a_slow_rank_for_ever() -> None:
    # A "sampling" finding tells the correlator a node's thermal cadence; a slow rank on the
    # node waits for the first sample after its slowdown (at most 1.25 intervals + 1 s).
    # Forged at 1e300 s that wait was for ever: the slow rank never paged.
    parts = _slow_rank_beside_thermal()

    def run(forged: list[bytes]) -> list[str]:
        corr = CorrelatorPartition(0, expected=[p.source for p, _ in parts], now=T0)
        raws = [*forged, *(e.value for _, emits in parts for e in emits)]
        for offset, raw in enumerate(raws):
            corr.on_message(offset, raw, T0)
        alerts: list[Alert] = []
        corr.release(T0, alerts)
        assert corr.invalid == 0
        return _firing(alerts)

    clean = run([])
    assert clean == ["fl:esc:slow_node:gpu:node-000/3"]
    thermal = parts[1]
    msg = next(m for e in thermal[1] if (m := orjson.loads(e.value))["type"] == "finding"
               and m["finding"]["signal"] == "sampling" and m["finding"]["scope"]["node"]
               == "node-000")
    msg["id"] = [-1, 0]  # (sent first, decided after the real one: a second later)
    msg["tag"] += 1.0
    msg["finding"]["ts"] += 1.0
    msg["finding"]["evidence"]["sample_interval_s"] = 1e300
    assert run([orjson.dumps(msg)]) == clean


@pytest.mark.parametrize("changes", [{"severity": "high"}, {"evidence": {"xid": [79]}}],
                         ids=lambda c: ",".join(c))
def test_a_malformed_finding_on_a_faulty_unit_does_not_hide_its_fault(changes: dict[str, Any]
                                                                      ) -> None:
    src, emits = _xid_stream()
    _, got = _correlate(src, emits, [_forge(emits, **changes)])
    assert "fl:iso:hardware:gpu:node-001/0" in _firing(got)


@pytest.mark.parametrize("node", ["node-\u202e100", "\x1b[2Jnode-1", "n" * 100_000],
                         ids=["bidi", "ansi", "100k"])
def test_a_forged_scope_name_never_reaches_an_alert(node: str) -> None:
    src, emits = _xid_stream()
    corr, got = _correlate(src, emits, [_forge(emits, scope_node=node)])
    for a in got:
        for name in (a.scope.node, a.dedup_key):
            assert name is not None and name.isprintable()
        assert len(a.scope.node or "") <= MAX_NAME_CHARS
    assert corr.invalid == 1


@pytest.mark.parametrize("raw", [b'{"type": "forget", "source": "telemetry.ecc:99"}',
                                 b'{"type": 7, "source": "telemetry.ecc:99"}',
                                 b'{"type": "finding", "source": "telemetry.ecc:99"}'])
def test_a_refused_findings_message_holds_no_clock_back(raw: bytes) -> None:
    src, emits = _xid_stream()
    corr, got = _correlate(src, emits, [raw])
    assert corr.invalid == 1
    assert _firing(got) == ["fl:iso:hardware:gpu:node-001/0"]


@pytest.mark.parametrize("onset", ["0", [1]], ids=["str", "list"])
def test_every_alert_a_forged_finding_makes_can_be_produced(onset: Any) -> None:
    src, emits = _xid_stream()
    _, got = _correlate(src, emits, [_forge(emits, onset_ts=onset, scope_node="node-9")])
    assert "fl:iso:hardware:gpu:node-001/0" in _firing(got)
    for a in got:
        alert_message(a)  # what detector.service.app's _alerts does with each


@pytest.mark.parametrize("raw, reason", [
    (orjson.dumps({"type": "rewound", "source": "telemetry.ecc:0", "ts": 1e300}),
     "ts_out_of_range"),
    (orjson.dumps({"type": "rewound", "source": "telemetry.ecc:0", "ts": "NaN"}), None),
    (orjson.dumps({"type": "rewound", "source": "telemetry.ecc:0", "ts": T0, "x": 1}),
     "unknown field"),
    (orjson.dumps({"type": "rewound", "source": "bad\nname", "ts": T0}), None),
    (orjson.dumps({"type": "rewound", "source": {"a": [[[[1]]]]}, "ts": T0}), None),
    (b'{"type": "rewound", "source": "telemetry.ecc:0", "ts": ' + b"[" * 5000, None),
    (b'{"type": "rewound", "source": "' + b"x" * (MAX_MESSAGE_BYTES + 1) + b'", "ts": 1}',
     "bytes"),
])
def test_a_forged_rewound_notice_is_refused(raw: bytes, reason: str | None) -> None:
    """Round 14 (clock14) made ``rewound`` a findings-topic message: a far-future, non-finite,
    nested, oversized or unknown-field one is refused like any other (then counted and
    skipped by CorrelatorPartition.on_message); a well-formed one decodes."""
    with pytest.raises(ValueError, match=reason):
        decode_message(raw, T0 + 100.0)
    ok = decode_message(orjson.dumps({"type": "rewound", "source": "telemetry.ecc:0",
                                      "ts": T0}), T0 + 100.0)
    assert (ok.source, ok.ts) == ("telemetry.ecc:0", T0)
