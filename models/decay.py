"""An exponentially decaying event count: "how many errors lately", in O(1) memory.

Error counters matter as rates: one symbol error a day is noise, a hundred in a
minute is a failing link.  A sliding window needs a queue per device; a
decaying count needs two floats and gives nearly the same answer.

>>> c = DecayingCount(half_life_s=60.0)
>>> c.add(0.0, 100)
100.0
>>> round(c.value(60.0), 1)
50.0
>>> round(c.add(120.0, 10), 1)
35.0
"""

from __future__ import annotations

import math


class DecayingCount:
    """Sum of events weighted by ``0.5 ** (age / half_life_s)``."""

    __slots__ = ("half_life_s", "_value", "_ts")

    def __init__(self, half_life_s: float) -> None:
        self.half_life_s = half_life_s
        self._value = 0.0
        self._ts = float("-inf")

    def value(self, ts: float) -> float:
        if self._value == 0.0 or ts <= self._ts:
            return self._value
        return self._value * math.exp2(-(ts - self._ts) / self.half_life_s)

    def restored_ok(self) -> bool:
        """Its fields as the live code keeps them (a snapshot restored from fields of any
        type): a half-life > 0 (``value`` divides by it), a count >= 0, its time finite or
        -inf (none yet) -- all finite, NaN failing every comparison."""
        h, v, t = self.half_life_s, self._value, self._ts
        return (type(h) in (float, int) and 0.0 < h < math.inf
                and type(v) in (float, int) and 0.0 <= v < math.inf
                and type(t) in (float, int) and -math.inf <= t < math.inf)

    def reset(self) -> None:
        """Forget everything counted so far (a signal cleared: the next burst starts from zero)."""
        self._value = 0.0

    def add(self, ts: float, n: float) -> float:
        """Count ``n`` events at ``ts``; a late ``ts`` is counted as if it were the latest time."""
        v = self.value(ts) + n
        self._value = v
        if ts > self._ts:
            self._ts = ts
        return v
