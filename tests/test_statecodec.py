"""Snapshots are data: a crafted state message runs no code, and a worker only reads its own.

Every malformed, foreign, unsigned or oversized snapshot is refused with a
reason (``SnapshotRefused``), never another exception; a real one restores an
engine that goes on exactly as the one that wrote it.
"""

from __future__ import annotations

import os
import pickle
import random
import zlib
from pathlib import Path

import msgspec
import numpy as np
import pytest
from river import stats

from detector.engine import Engine
from detector.monitors import Monitors
from detector.pipeline.source import SourcePartition
from detector.settings import Settings
from detector.statecodec import (
    MAGIC,
    REASONS,
    SnapshotRefused,
    StateCodec,
    StateTypeError,
    decode_state,
    encode_state,
    schema_fingerprint,
)
from detector.testing import T0, ecc, feed, healthy_job, thermal


class _Boom:
    """Writes a marker file when unpickled: what a crafted state message would do."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return (os.system, (f"touch {self.path}",))


def _frame(raw: bytes, flags: int = 0) -> bytes:
    return MAGIC + bytes((1, flags)) + zlib.compress(raw)


def _refused(blob: bytes, **kw: object) -> str:
    with pytest.raises(SnapshotRefused) as info:
        decode_state(blob, **kw)  # type: ignore[arg-type]
    assert info.value.reason in REASONS
    return info.value.reason


def _busy_engine() -> Engine:
    eng = Engine()
    events = [*healthy_job(ranks=8, steps=12),
              *(thermal(T0 + t, f"node-{n}", g, clock_mhz=1980.0 - 300 * (t > 5))
                for t in range(10) for n in range(2) for g in range(4)),
              ecc(T0 + 2.0, "node-0", 1, dbe=1)]
    feed(eng, sorted(events, key=lambda e: e.ts), finish=False)
    return eng


def test_a_pickle_on_the_state_topic_runs_no_code(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = pickle.dumps(_Boom(str(marker)))
    assert _refused(evil) == "not_a_snapshot"
    assert _refused(zlib.compress(evil)) == "not_a_snapshot"  # the old snapshot format
    assert _refused(_frame(evil)) == "malformed"               # our header, a pickle inside
    for reason in ("not_a_snapshot", "malformed"):
        assert reason in REASONS
    assert not marker.exists()


def test_only_allowlisted_classes_are_built() -> None:
    fp = schema_fingerprint()
    for name in ("os.system", "builtins.eval", "subprocess.Popen", "Monitors.__init__"):
        raw = msgspec.msgpack.encode([fp, [6, name, "touch /tmp/x"]])
        assert _refused(_frame(raw)) == "unknown_class"
    # msgpack's own extension types (timestamps, ext) are not state either
    raw = msgspec.msgpack.encode([fp, msgspec.msgpack.Ext(5, b"x")])
    assert _refused(_frame(raw)) == "malformed"


def test_restored_engine_goes_on_as_the_one_that_wrote_it() -> None:
    events = sorted([*healthy_job(ranks=8, steps=30),
                     *(ecc(T0 + t, "node-0", 2, sbe=40 * t, pending=t >= 20)
                       for t in range(30))],
                    key=lambda e: e.ts)
    whole = feed(Engine(), events)
    eng = Engine()
    first = feed(eng, events[:len(events) // 2], finish=False)
    codec = StateCodec(key=b"k1")
    rest = feed(Engine.restore(eng.snapshot(codec), codec=codec), events[len(events) // 2:])
    assert [a.to_dict() for a in first + rest] == [a.to_dict() for a in whole]
    assert any(a.cause == "gpu_memory" for a in whole)


def test_shared_objects_stay_shared() -> None:
    eng = _busy_engine()
    back = Engine.restore(eng.snapshot())
    mon = back.monitors
    temps = mon._node_temps["node-0"]
    assert temps.temps  # the node's GPUs' temperatures came through
    assert mon._thermal[("node-0", 0)]._node is temps is mon._thermal[("node-0", 3)]._node
    assert back.correlator.cfg is back.cfg or back.correlator.cfg == back.cfg


def test_keys_signatures_and_rotation() -> None:
    state = {"x": [1, 2.5, None]}
    signed = encode_state(state, key=b"new", context=b"telemetry.step:3@41")
    assert decode_state(signed, key=b"new", context=b"telemetry.step:3@41") == state
    assert decode_state(signed, key=b"newer", previous_key=b"new",
                        context=b"telemetry.step:3@41") == state  # during a rotation
    assert _refused(signed, key=b"other", context=b"telemetry.step:3@41") == "bad_signature"
    # the MAC covers which partition and offset: it cannot be moved to another one
    assert _refused(signed, key=b"new", context=b"telemetry.step:4@41") == "bad_signature"
    assert _refused(signed, key=b"new", context=b"telemetry.step:3@99") == "bad_signature"
    assert _refused(signed) == "no_key"
    assert _refused(encode_state(state), key=b"new") == "unsigned"
    tampered = bytearray(signed)
    tampered[-3] ^= 1
    assert _refused(bytes(tampered), key=b"new", context=b"telemetry.step:3@41") == (
        "bad_signature")


def test_settings_make_the_codec() -> None:
    s = Settings.load(env={"FAULTLINE_SNAPSHOT_KEY": "s3cret",
                           "FAULTLINE_SNAPSHOT_KEY_PREVIOUS": "old"})
    codec = s.state_codec()
    assert codec.key == b"s3cret" and codec.previous_key == b"old"
    assert "s3cret" not in s.to_toml() and "s3cret" not in repr(s)
    assert Settings.load(env={}).state_codec().key is None
    with pytest.raises(ValueError, match="snapshot_key_previous"):
        Settings.load(env={"FAULTLINE_SNAPSHOT_KEY_PREVIOUS": "old"})


def test_limits_on_what_a_snapshot_may_allocate() -> None:
    fp = schema_fingerprint()
    bomb = MAGIC + bytes((1, 0)) + zlib.compress(b"\0" * (64 << 20), 9)
    assert len(bomb) < 100_000
    assert _refused(bomb, max_raw_bytes=16 << 20) == "too_large"
    assert _refused(bomb, max_bytes=1_000) == "too_large"
    huge = msgspec.msgpack.encode([fp, [5, "<f8", [1 << 40], b""]])
    assert _refused(_frame(huge)) == "too_large"
    short = msgspec.msgpack.encode([fp, [5, "<f8", [4], b"\0" * 8]])
    assert _refused(_frame(short)) == "malformed"
    objects = msgspec.msgpack.encode([fp, [5, "|O", [1], b"\0" * 8]])
    assert _refused(_frame(objects)) == "malformed"
    deep = b"\x91" * 100_000 + b"\xc0"  # a list in a list ... 100,000 deep
    assert _refused(_frame(deep)) == "malformed"
    nested = b"\x92\xb0" + fp.encode() + b"\x92\x00" * 5_000 + b"\xc0"  # [fp, [0, [0, ...]]]
    assert _refused(_frame(nested)) == "malformed"
    assert _refused(_frame(b"\x92\xa3abc\xc0")) == "schema"
    assert _refused(MAGIC + bytes((9, 0)) + b"x") == "version"
    assert _refused(MAGIC + bytes((1, 0)) + b"not zlib") == "corrupt"
    assert _refused(encode_state([1])[:-4]) == "corrupt"


def test_random_damage_is_refused_with_a_reason_never_a_crash() -> None:
    blob = _busy_engine().snapshot()
    inner = zlib.decompress(blob[6:])
    rng = random.Random(11)
    outcomes: dict[str, int] = {}
    for _ in range(300):
        raw = bytearray(inner)
        for _ in range(rng.randint(1, 8)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        try:
            state = decode_state(_frame(bytes(raw)))
        except SnapshotRefused as exc:
            outcomes[exc.reason] = outcomes.get(exc.reason, 0) + 1
        else:
            outcomes["read"] = outcomes.get("read", 0) + 1
            assert isinstance(state, dict)
    assert sum(v for k, v in outcomes.items() if k != "read") >= 100, outcomes
    # Signed, any change at all is refused.
    signed = _busy_engine().snapshot(StateCodec(key=b"k"))
    for i in range(0, len(signed), max(1, len(signed) // 200)):
        damaged = bytearray(signed)
        damaged[i] ^= 0x40
        assert _refused(bytes(damaged), key=b"k", context=b"engine") in (
            "bad_signature", "not_a_snapshot", "version", "malformed", "no_key", "unsigned")


def test_a_foreign_state_of_the_wrong_shape_is_refused() -> None:
    blob = encode_state({"v": 1, "monitors": [1, 2, 3]})
    with pytest.raises(SnapshotRefused, match="malformed"):
        SourcePartition.restore("telemetry.ecc", 0, 1, 5, blob)
    ok = encode_state({"v": 1, "monitors": Monitors(), "idle_seq": 0, "events": 0,
                       "invalid": 0})
    assert SourcePartition.restore("telemetry.ecc", 0, 1, 5, ok).offset == 5


def test_unregistered_state_fails_at_encode() -> None:
    with pytest.raises(StateTypeError, match="not a registered state class"):
        encode_state({"x": object()})
    with pytest.raises(StateTypeError, match="dtype"):
        encode_state(np.array(["a"], dtype=object))
    eng = _busy_engine()
    eng.monitors.extra_map = {}  # a new attribute nobody registered would be lost silently
    with pytest.raises(StateTypeError, match="extra_map"):
        eng.snapshot()


@pytest.mark.parametrize("updates", [[], [0.0], [0.0, 0.0], [1980.0], [1980.0, 1500.0]])
def test_river_ewmean_is_rebuilt_from_its_numbers(updates: list[float]) -> None:
    m = stats.EWMean(fading_factor=0.3)
    for x in updates:
        m.update(x)
    back = decode_state(encode_state(m))
    for x in (7.0, 1000.0):
        m.update(x)
        back.update(x)
        assert back.get() == m.get()
