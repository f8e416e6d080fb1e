"""Deltas of cumulative hardware counters that survive resets, duplicates and reordering.

DCGM and the InfiniBand port counters are cumulative.  A GPU or driver reset
puts them back to zero, messages may arrive twice or a few seconds late, and a
field may be missing from one sample.  None of that may look like a burst of
errors, so: a value lower than the last one is a reset (delta 0, new
baseline), a sample older than the last one is ignored for deltas, and a
missing value leaves the baseline alone.

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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from keyword import iskeyword
from operator import sub
from typing import Any


class CounterDeltas:
    """Per-sample increments of a fixed set of cumulative counters of one device."""

    __slots__ = ("_last", "_last_ts", "resets")

    def __init__(self, n: int) -> None:
        self._last: list[int | None] = [None] * n
        self._last_ts = float("-inf")
        self.resets = 0

    @property
    def last_ts(self) -> float:
        """Time of the newest sample taken (-inf before the first)."""
        return self._last_ts

    def update(self, ts: float, values: Sequence[int | None]) -> tuple[int, ...] | None:
        """Increments since the previous sample, or None when this sample is late or a duplicate."""
        if ts <= self._last_ts:
            return None
        self._last_ts = ts
        last = self._last
        try:
            # Common case, at C speed: every counter present now and before (a None on
            # either side is a TypeError, before anything changed).
            deltas = tuple(map(sub, values, last))
        except TypeError:
            return self._update_partial(values)
        last[:] = values  # (in place: no new list a sample)
        if min(deltas) >= 0:
            return deltas
        self.resets += sum(1 for d in deltas if d < 0)
        return tuple(d if d > 0 else 0 for d in deltas)

    def _update_partial(self, values: Sequence[int | None]) -> tuple[int, ...]:
        """Some counter missing, in this sample or the baseline: counter by counter."""
        last = self._last
        out = []
        for i, v in enumerate(values):
            if v is None:
                out.append(0)
                continue
            prev = last[i]
            last[i] = v
            if prev is None:
                out.append(0)
            elif v >= prev:
                out.append(v - prev)
            else:
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
    src = "\n".join([
        "def read_deltas(counters, ts, s):",
        *(f"    {x} = s.{f}" for x, f in zip(v, fields, strict=True)),
        "    if ts > counters._last_ts:",
        "        last = counters._last",
        f"        {''.join(f'{x}, ' for x in b)}= last",
        # (an if, not an expression: CPython 3.11 specializes its compares; a new list for
        # the baseline: fewer bytecodes than storing eleven items in the old one)
        "        try:",
        f"            if {' and '.join(f'{x} >= {y}' for x, y in zip(v, b, strict=True))}:",
        "                counters._last_ts = ts",
        f"                counters._last = [{''.join(f'{x}, ' for x in v)}]",
        f"                return ({''.join(f'{x} - {y}, ' for x, y in zip(v, b, strict=True))})",
        "        except TypeError:",  # a None on either side: counter by counter
        "            pass",
        f"    return counters.update(ts, {values})",
    ])
    namespace: dict[str, Any] = {}
    exec(compile(src, f"<delta_reader {' '.join(fields)}>", "exec"), namespace)  # noqa: S102
    fn: DeltaReader = namespace["read_deltas"]
    return fn
