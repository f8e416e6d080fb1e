"""Deltas of cumulative hardware counters that survive resets, duplicates and reordering.

DCGM and the InfiniBand port counters are cumulative.  A GPU or driver reset
puts them back to zero, messages may arrive twice or a few seconds late, and a
field may be missing from one sample.  None of that may look like a burst of
errors, so: a value lower than the last one is a reset (delta 0, new
baseline), a sample older than the last one is ignored for deltas, and a
missing value leaves the baseline alone.  Nor may a value that is no reading: DCGM's
INT64 blank (:data:`BLANK`, 0x7ffffffffffffff0 and up, "no value") that a collector copied
into the field is taken as missing and counted (``blanks``), and an increase beyond what
any GPU or NIC counter can count in the interval (:data:`MAX_COUNTS_PER_S`) is bad input
for that sample: counted (``implausible``), delta 0, the baseline kept -- a good counter
beside it in the same sample keeps its delta.

>>> c = CounterDeltas(2)
>>> c.update(10.0, (5, 100))
(0, 0)
>>> c.update(11.0, (7, 100))
(2, 0)
>>> c.update(10.5, (9, 100)) is None      # late: already past this time
True
>>> c.update(12.0, (0, 101)), c.resets    # counter 0 was reset
((0, 1), 1)

On a hot path, :func:`delta_reader` reads the counters from a record's named
fields and takes the same deltas without building the values first:

>>> from types import SimpleNamespace as Rec
>>> deltas = delta_reader(("sbe", "dbe"))
>>> c = CounterDeltas(2)
>>> deltas(c, 10.0, Rec(sbe=5, dbe=100)), deltas(c, 11.0, Rec(sbe=7, dbe=100))
((0, 0), (2, 0))
>>> deltas(c, 12.0, Rec(sbe=0, dbe=None)), c.resets   # a reset and a missing value
((0, 0), 1)

A blank sentinel and a jump no hardware counts leave the baseline alone:

>>> c = CounterDeltas(2)
>>> c.update(10.0, (5, 100)), c.update(20.0, (BLANK + 2, 103)), c.update(30.0, (6, 2**62))
((0, 0), (0, 3), (1, 0))
>>> c.blanks, c.implausible, c.resets, c.update(40.0, (6, 104))
(1, 1, 0, (0, 1))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from keyword import iskeyword
from operator import sub
from typing import Any

# DCGM's blank values of an INT64 field (DCGM_INT64_BLANK 0x7ffffffffffffff0 and the
# not-found / not-supported / not-permissioned codes above it): "no value", never a count.
BLANK = 0x7FFFFFFFFFFFFFF0
# No cumulative counter of a GPU or a NIC counts faster than this a second: a 1.6 Tb/s
# port moves 2e11 bytes a second (the fastest: byte counters); PCIe Gen5 x16 carries under
# 3e9 TLPs a second (replays), NVLink 4's 18 links under 6e10 flits (CRC errors).
MAX_COUNTS_PER_S = 1e12


class CounterDeltas:
    """Per-sample increments of a fixed set of cumulative counters of one device."""

    __slots__ = ("_last", "_last_ts", "resets", "blanks", "implausible")

    def __init__(self, n: int) -> None:
        self._last: list[int | None] = [None] * n
        self._last_ts = float("-inf")
        self.resets = 0
        self.blanks = 0       # DCGM blank values taken as missing
        self.implausible = 0  # increases beyond MAX_COUNTS_PER_S dropped

    def restored_ok(self, n: int) -> bool:
        """Its fields as the live code keeps them (a snapshot restored from fields of any
        type): ``n`` baselines, each None or a counter below :data:`BLANK` (a blank is never
        kept), its time finite or -inf (none yet), its counts ints >= 0."""
        last, ts = self._last, self._last_ts
        return (type(last) is list and len(last) == n
                and all(v is None or type(v) is int and 0 <= v < BLANK for v in last)
                and type(ts) in (float, int) and -math.inf <= ts < math.inf
                and all(type(c) is int and c >= 0
                        for c in (self.resets, self.blanks, self.implausible)))

    @property
    def last_ts(self) -> float:
        """Time of the newest sample taken (-inf before the first)."""
        return self._last_ts

    def update(self, ts: float, values: Sequence[int | None]) -> tuple[int, ...] | None:
        """Increments since the previous sample, or None when this sample is late or a duplicate."""
        if ts <= self._last_ts:
            return None
        cap = (ts - self._last_ts) * MAX_COUNTS_PER_S  # (inf on the first sample)
        self._last_ts = ts
        last = self._last
        try:
            # Common case, at C speed: every counter present now and before (a None on
            # either side is a TypeError, before anything changed).
            deltas = tuple(map(sub, values, last))
        except TypeError:
            return self._update_partial(values, cap)
        if min(deltas) >= 0 and max(deltas) <= cap:
            last[:] = values  # (in place: no new list a sample)
            return deltas
        return self._update_partial(values, cap)

    def _update_partial(self, values: Sequence[int | None], cap: float) -> tuple[int, ...]:
        """Some counter missing, blank, fallen back or jumped: counter by counter."""
        last = self._last
        out = []
        for i, v in enumerate(values):
            if v is None:
                out.append(0)
                continue
            if v >= BLANK:
                self.blanks += 1
                out.append(0)
                continue
            prev = last[i]
            if prev is None:
                last[i] = v
                out.append(0)
            elif v >= prev:
                if v - prev > cap:
                    self.implausible += 1
                    out.append(0)
                    continue
                last[i] = v
                out.append(v - prev)
            else:
                last[i] = v
                self.resets += 1
                out.append(0)
        return tuple(out)


DeltaReader = Callable[[CounterDeltas, float, Any], "tuple[int, ...] | None"]


def delta_reader(fields: Sequence[str]) -> DeltaReader:
    """``f(counters, ts, record)``: the same as ``counters.update(ts, (record.<field>, ...))``
    for these fields, in about half the instructions in the common case.

    The common case -- every counter present now and before, none fallen back -- is
    compiled for the given fields (unpacked locals and one comparison a counter: the
    generic loop's C calls a counter, its tuple of values and ``min`` cost more than the
    work); anything else (a missing value, a reset, a late sample) goes through
    :meth:`CounterDeltas.update` itself, with the values as read.
    """
    n = len(fields)
    if n == 0 or not all(f.isidentifier() and not iskeyword(f) for f in fields):
        raise ValueError(f"counter fields must be names: {fields!r}")
    v = [f"v{i}" for i in range(n)]
    b = [f"b{i}" for i in range(n)]
    values = "(" + "".join(f"{x}, " for x in v) + ")"
    zipped = list(zip(v, b, strict=True))
    src = "\n".join([
        "def read_deltas(counters, ts, s):",
        *(f"    {x} = s.{f}" for x, f in zip(v, fields, strict=True)),
        "    if ts > counters._last_ts:",
        f"        cap = (ts - counters._last_ts) * {MAX_COUNTS_PER_S!r}",
        "        last = counters._last",
        f"        {''.join(f'{x}, ' for x in b)}= last",
        # (an if, not an expression: CPython 3.11 specializes its compares; a new list for
        # the baseline: fewer bytecodes than storing eleven items in the old one)
        "        try:",
        # (the deltas first, then none negative and their sum within the cap: a sum is a
        # bytecode a counter, a compare with the cap three -- a sum over it is rare and goes
        # counter by counter, which takes each within the cap: the same deltas)
        *(f"            d{i} = {x} - {y}" for i, (x, y) in enumerate(zipped)),
        f"            if {' and '.join(f'd{i} >= 0' for i in range(n))} "
        f"and {' + '.join(f'd{i}' for i in range(n))} <= cap:",
        "                counters._last_ts = ts",
        f"                counters._last = [{''.join(f'{x}, ' for x in v)}]",
        f"                return ({''.join(f'd{i}, ' for i in range(n))})",
        "        except TypeError:",  # a None on either side: counter by counter
        "            pass",
        f"    return counters.update(ts, {values})",
    ])
    namespace: dict[str, Any] = {}
    exec(compile(src, f"<delta_reader {' '.join(fields)}>", "exec"), namespace)  # noqa: S102
    fn: DeltaReader = namespace["read_deltas"]
    return fn
