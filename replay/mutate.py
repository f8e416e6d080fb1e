"""Seeded mutations of contract records: the bad input a worker must survive.

Each mutation takes a valid telemetry record (a dict of the DESIGN.md
contract) and returns message bytes that break it in one of the ways real
producers, broken shippers or attackers do: deep nesting, integers past 2^63,
NaN and infinities, wrong types, missing and unknown fields, control
characters and bidi overrides in names, huge strings and arrays, timestamps
in 2100 or before 1970, truncated or non-UTF-8 bytes, and messages that are
not objects at all.  Some mutations leave a record valid but extreme (a rank
of 1,048,575, a year-2100 ``ts``): the engine must survive those too.

The same seed gives the same bytes, so a failure found by ``bench/fuzz.py``
is a test case:

>>> m = Mutator(seed=7)
>>> rec = {"ts": 1767225600.0, "node": "node-001", "gpu": 3, "sbe_volatile": 0}
>>> data, ops = m.mutate(rec)
>>> data == Mutator(seed=7).mutate(rec)[0], isinstance(data, bytes), len(ops) >= 1
(True, True, True)
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

from detector.events import ECC, NIC, STEP, TELEMETRY_TOPICS, THERMAL
from detector.testing import T0, ecc, healthy_job, nic, thermal

_DEEP = "\x00deep\x00"  # placeholder replaced by nested brackets in the JSON text
HUGE_INTS = (2**63, 2**63 - 1, 2**64, 2**64 + 1, -(2**63) - 1, 10**30, 2**24, 1_048_575,
             2**31, -1, -(10**20))
ODD_FLOATS = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e-400", "-0.0")
ODD_STRINGS = ("", " ", "\x00", "\x1b[31mred\x1b[0m", "node\u202e100-edon", "\ud800", "\t\n\r",
               "node-001\x00hidden", "\u0000\u0085\u2028", "ñødé-ü", "💥" * 8, "a" * 257,
               "node-001; rm -rf /", "${jndi:ldap://x}", "{{7*7}}")
FAR_TS = (4102444800.0, 4102444800.0 * 10, 1e18, -1.0, 0.0, 1.0, 1e-9, T0 + 10 * 86400.0,
          T0 - 365 * 86400.0)


class Mutator:
    """Breaks records in one to three seeded ways; ``mutate`` returns (bytes, names of ops)."""

    def __init__(self, seed: int = 0, *, max_string: int = 1 << 20) -> None:
        self.rng = random.Random(seed)
        self.max_string = max_string
        self._ops: list[tuple[float, Callable[[dict[str, Any]], Any]]] = [
            (3.0, self.wrong_type), (2.0, self.huge_int), (1.0, self.odd_float),
            (2.0, self.odd_string), (1.5, self.far_ts), (1.0, self.drop_field),
            (1.0, self.extra_fields), (0.6, self.deep_nesting), (0.2, self.huge_string),
            (0.2, self.huge_array), (0.6, self.not_an_object), (1.0, self.extreme_rank),
            (0.6, self.duplicate_key), (0.5, self.null_everything), (0.4, self.bool_for_int),
        ]
        self._bytes_ops: list[Callable[[bytes], bytes]] = [
            self.truncate, self.flip_bytes, self.bad_utf8, self.wrap_garbage]
        self._weights = [w for w, _ in self._ops]

    # -- record-level ----------------------------------------------------------------

    def mutate(self, record: dict[str, Any]) -> tuple[bytes, list[str]]:
        rng = self.rng
        rec: Any = dict(record)  # records are flat: a shallow copy is a copy
        names: list[str] = []
        tokens: dict[str, str] = {}
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            op = rng.choices(self._ops, self._weights)[0][1]
            names.append(op.__name__)
            out = op(rec) if isinstance(rec, dict) else None
            if isinstance(out, tuple):  # a raw JSON token to splice in: (placeholder, text)
                tokens[out[0]] = out[1]
            elif out is not None:
                rec = out
        text = json.dumps(rec, ensure_ascii=rng.random() < 0.5, allow_nan=True)
        for placeholder, raw in tokens.items():
            text = text.replace(json.dumps(placeholder), raw)
        data = text.encode("utf-8", "surrogatepass")
        if rng.random() < 0.15:
            op_b = rng.choice(self._bytes_ops)
            names.append(op_b.__name__)
            data = op_b(data)
        return data, names

    def _field(self, rec: dict[str, Any]) -> str:
        return self.rng.choice(list(rec)) if rec else "ts"

    def _token(self, rec: dict[str, Any], raw: str, field: str | None = None) -> tuple[str, str]:
        placeholder = f"{_DEEP}{self.rng.random()}"
        rec[field or self._field(rec)] = placeholder
        return placeholder, raw

    def wrong_type(self, rec: dict[str, Any]) -> None:
        rng = self.rng
        rec[self._field(rec)] = rng.choice(
            ([], {}, [1, 2], {"a": 1}, "12", "1e3", True, False, None, 1.5, 7, "NaN", [None]))

    def huge_int(self, rec: dict[str, Any]) -> None:
        ints = [k for k, v in rec.items() if type(v) is int] or list(rec) or ["gpu"]
        rec[self.rng.choice(ints)] = self.rng.choice(HUGE_INTS)

    def odd_float(self, rec: dict[str, Any]) -> tuple[str, str]:
        return self._token(rec, self.rng.choice(ODD_FLOATS))

    def odd_string(self, rec: dict[str, Any]) -> None:
        strs = [k for k, v in rec.items() if type(v) is str] or ["node"]
        rec[self.rng.choice(strs)] = self.rng.choice(ODD_STRINGS)

    def far_ts(self, rec: dict[str, Any]) -> None:
        rec["ts"] = self.rng.choice(FAR_TS)

    def drop_field(self, rec: dict[str, Any]) -> None:
        if rec:
            del rec[self._field(rec)]

    def extra_fields(self, rec: dict[str, Any]) -> None:
        rng = self.rng
        for i in range(rng.choice((1, 3, 50, 300))):
            rec[f"x{rng.randrange(10**6)}_{i}"] = rng.choice((1, "y", None, [1], {"z": 2}))

    def deep_nesting(self, rec: dict[str, Any]) -> Any:
        depth = self.rng.choice((50, 500, 1_000, 5_000, 20_000))
        opener, closer = self.rng.choice((("[", "]"), ('{"a":', "}")))
        raw = opener * depth + "1" + closer * depth
        if self.rng.random() < 0.3:
            rec.clear()  # the whole record is one nested value
        return self._token(rec, raw)

    def huge_string(self, rec: dict[str, Any]) -> tuple[str, str]:
        n = self.rng.choice((4_096, 65_536, self.max_string))
        # spliced in as JSON text: json.dumps of a megabyte is the fuzzer's own bottleneck
        raw = '"' + self.rng.choice("AZ\u00e9\u202e") * n + '"'
        return self._token(rec, raw, self.rng.choice(
            ("node", "job", "nic", "cluster", "tenant", self._field(rec))))

    def huge_array(self, rec: dict[str, Any]) -> tuple[str, str]:
        n = self.rng.choice((1_000, 100_000))
        return self._token(rec, "[" + "7," * (n - 1) + "7]")

    def not_an_object(self, rec: dict[str, Any]) -> Any:
        return self.rng.choice(([rec], list(rec.values()), 42, "telemetry", None, [], 1e308))

    def extreme_rank(self, rec: dict[str, Any]) -> None:
        """Valid but extreme: the engine must stay bounded."""
        for k in ("rank", "tp_rank", "pp_rank", "dp_rank", "gpu", "port", "step", "xid"):
            if k in rec and self.rng.random() < 0.5:
                rec[k] = self.rng.choice((1_048_575, 2**24 - 1, 2**24, 2**31 - 1, 2**62))

    def duplicate_key(self, rec: dict[str, Any]) -> tuple[str, str]:
        key = self._field(rec)
        return self._token(rec, f'1, "{key}": "dup"', key)

    def null_everything(self, rec: dict[str, Any]) -> None:
        for k in list(rec):
            if self.rng.random() < 0.5:
                rec[k] = None

    def bool_for_int(self, rec: dict[str, Any]) -> None:
        ints = [k for k, v in rec.items() if type(v) is int] or ["gpu"]
        rec[self.rng.choice(ints)] = self.rng.random() < 0.5

    # -- byte-level ------------------------------------------------------------------

    def truncate(self, data: bytes) -> bytes:
        return data[:self.rng.randrange(len(data) + 1)]

    def flip_bytes(self, data: bytes) -> bytes:
        b = bytearray(data)
        for _ in range(self.rng.randint(1, 4)):
            if b:
                b[self.rng.randrange(len(b))] = self.rng.randrange(256)
        return bytes(b)

    def bad_utf8(self, data: bytes) -> bytes:
        at = self.rng.randrange(len(data) + 1)
        return data[:at] + self.rng.choice((b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\x00")) + (
            data[at:])

    def wrap_garbage(self, data: bytes) -> bytes:
        return self.rng.choice((b"\xef\xbb\xbf", b"\x1f\x8b\x08\x00", b"  ", b"")) + data + (
            self.rng.choice((b"", b"\n{}", b"garbage", b"\x00")))


def valid_records(seed: int = 0, *, jobs: int = 2, ranks: int = 16, steps: int = 30,
                  nodes: int = 4) -> Iterator[tuple[str, dict[str, Any]]]:
    """(topic, record) of a small healthy cluster in time order: what mutations start from."""
    events: list[tuple[str, Any]] = []
    for j in range(jobs):
        events += [(STEP, e) for e in healthy_job(ranks=ranks, steps=steps, seed=seed + j,
                                                  job=f"job-{j}")]
    for t in range(steps):
        for n in range(nodes):
            node = f"node-{n:03d}"
            for g in range(8):
                events.append((THERMAL, thermal(T0 + t + 0.2, node, g)))
                if t % 5 == 0:
                    events.append((ECC, ecc(T0 + t + 0.3, node, g)))
            for k in range(2):
                events.append((NIC, nic(T0 + t + 0.4, node, f"mlx5_{k}", tx=10**9 * t,
                                        rx=10**9 * t)))
    events.sort(key=lambda te: te[1].ts)
    for topic, ev in events:
        assert topic in TELEMETRY_TOPICS
        yield topic, {k: v for k, v in ev._asdict().items() if v is not None}
