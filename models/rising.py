"""Whether an error count's rate is climbing: a part failing, not a part erring.

A healthy part may err at a steady rate for weeks (a GPU trickling corrected errors), or in
one burst; a failing one errs ever faster -- weak HBM cells multiplying in the minutes before
the driver's XID 92 ("high single-bit error rate") and a row remap.  A steady rate, however
high, is flat in expectation: bin to bin its counts wander by their Poisson spread (~8 in 60),
so one bin above the one before is noise one time in six.  Readings are counted in bins of at
least ``bin_s`` (a rate needs time enough per bin to be more than counting noise: one 60 s
poll is a bin, two 30 s polls, five 10 s polls), cut only at readings that changed the count
(a counter the driver or DCGM refreshes every 30 s, read every 10 s, changes at one reading of
three: the readings that repeat it are no edge).  The run's first bin is no rate, only its
start: its events began somewhere in its span (a steady rate caught mid-bin reads as a rise
from it).  The last ``bins`` full bins of a run are judged at each bin's close; the rate climbs
when all of these hold:

- every bin's rate is at least ``step`` times the bin's before and ``step_z`` Poisson standard
  errors above it: a rise bin over bin, ``bins - 1`` times in a row (a steady rate's noise
  rises twice in a row by that much a few times in a thousand bins);
- the last is ``z`` standard errors above the first judged: the whole rise is beyond noise (a
  burst, a lull and a burst are not a climb);
- the bins judged hold ``events`` or more: a trickle of a few a poll is no storm, however it
  wanders;
- it is ``history_factor`` times the rate before the run (the events of earlier runs and of
  bins past the window, counted decaying with ``history_half_life_s``): a part erring at some
  steady rate for weeks must leave it far behind.

A reading's span with no reading as long as a bin, or two bins' span without a change, ends
the run: its events become history.

>>> def rising():
...     return RisingRate(bin_s=50.0, bins=3, events=100, step=1.25, step_z=1.0, z=3.0,
...                       history_half_life_s=3600.0, history_factor=10.0)
>>> r = rising()
>>> polls = ((60.0, 29), (120.0, 39), (180.0, 92), (240.0, 136))
>>> [r.add(t - 60.0, t, n) is not None for t, n in polls]
[False, False, False, True]
>>> r.onset_ts, r.add(240.0, 300.0, 0) is None, r.running, r.add(300.0, 360.0, 0), r.running
(60.0, True, True, None, False)

A steady storm whose first poll caught its start, one rise then level, a burst, and a lull
between bursts:

>>> r = rising()
>>> [r.add(t - 60.0, t, n) for t, n in ((60.0, 27), (120.0, 66), (180.0, 87), (240.0, 71))]
[None, None, None, None]
>>> [r.add(t - 60.0, t, n) for t, n in ((600.0, 400), (660.0, 60), (720.0, 450))]
[None, None, None]

Two 30 s polls make a bin, and a poll without an error inside one is part of it; so are the
readings of a counter refreshed every 30 s that repeat it:

>>> r = rising()
>>> [r.add(t - 30.0, t, n) for t, n in ((30.0, 20), (60.0, 20), (120.0, 40))], r.running
([None, None, None], True)
>>> [r.add(t - 10.0, t, n) for t, n in ((130.0, 0), (140.0, 0), (150.0, 30), (160.0, 0))]
[None, None, None, None]
"""

from __future__ import annotations

import math
from typing import Any

from models.decay import DecayingCount


def _rise_z(n0: float, span0: float, n1: float, span1: float) -> float:
    """How many Poisson standard errors the second rate is above the first (0 for none)."""
    var = n0 / (span0 * span0) + n1 / (span1 * span1)
    return 0.0 if var <= 0.0 else (n1 / span1 - n0 / span0) / math.sqrt(var)


class RisingRate:
    """Judge a count's rate, bin by bin: climbing by orders of magnitude, or not."""

    __slots__ = ("bin_s", "bins", "events", "step", "step_z", "z", "history_factor",
                 "_history", "_edges", "_counts", "_open", "_last_ts", "_first_ts", "_lead",
                 "_changed_ts")

    def __init__(self, bin_s: float, bins: int, events: float, step: float, step_z: float,
                 z: float, history_half_life_s: float, history_factor: float) -> None:
        self.bin_s = bin_s
        self.bins = bins
        self.events = events
        self.step = step
        self.step_z = step_z
        self.z = z
        self.history_factor = history_factor
        self._history = DecayingCount(history_half_life_s)  # events before the bins judged
        self._edges: list[float] = []  # the run's bins: its start, then each closed bin's end
        self._counts: list[int] = []   # events of the closed bins (the last ``bins``)
        self._open = 0                 # events since the last edge
        self._last_ts = -math.inf      # the latest reading counted
        self._first_ts = math.nan      # the run's first reading with an event
        self._lead = -1                # events of the run's first bin (-1: still open)
        self._changed_ts = -math.inf   # the latest reading with an event

    def restored_ok(self) -> bool:
        """Its fields as the live code keeps them (a snapshot restored from fields of any type;
        hard40: only its type was checked): settings finite, a bin's span and ``step`` > 0
        (``_judge`` divides by the spans), ``bins`` from 1; a run's bin edges finite and rising,
        one more than its closed bins' counts (ints >= 0, at most ``bins``) or none at all; its
        times finite or "none yet" (-inf; NaN for the onset of no run); its history sound."""
        real = (float, int)
        settings = (self.bin_s, self.events, self.step, self.step_z, self.z, self.history_factor)
        if not (all(type(x) in real and math.isfinite(x) for x in settings)
                and self.bin_s > 0.0 and self.step > 0.0 and self.events >= 0.0
                and self.history_factor >= 0.0 and type(self.bins) is int and self.bins >= 1):
            return False
        edges, counts = self._edges, self._counts
        if not (type(edges) is list and type(counts) is list and len(counts) <= self.bins
                and (len(edges) == len(counts) + 1 if edges else not counts)
                and all(type(t) in real and math.isfinite(t) for t in edges)
                and all(a < b for a, b in zip(edges, edges[1:], strict=False))
                and all(type(n) is int and n >= 0 for n in counts)):
            return False
        first = self._first_ts
        return (type(self._open) is int and self._open >= 0
                and type(self._lead) is int and self._lead >= -1
                and all(type(t) in real and -math.inf <= t < math.inf
                        for t in (self._last_ts, self._changed_ts))
                and type(first) in real and (math.isfinite(first) or math.isnan(first))
                and type(self._history) is DecayingCount and self._history.restored_ok())

    @property
    def running(self) -> bool:
        """Whether a run is open (its next reading must be counted, with an event or not)."""
        return bool(self._edges)

    @property
    def onset_ts(self) -> float:
        """Time of the run's first reading with an event (nan with no run)."""
        return self._first_ts

    def add(self, start_ts: float, ts: float, n: int) -> dict[str, Any] | None:
        """Count ``n`` events read at ``ts`` since the reading before (``start_ts``): the
        evidence of a climbing rate when the bin this closes shows one, else None."""
        if ts <= start_ts or ts <= self._last_ts:
            return None  # (no span, or late: readings come in order)
        if self._edges and start_ts - self._last_ts >= self.bin_s:
            self._end_run()  # (a bin's span went by without a reading)
        if not self._edges:
            if n <= 0:
                return None
            self._edges.append(start_ts)
            self._first_ts = ts
        self._last_ts = ts
        if n <= 0:
            # (a reading repeating the counter is no bin's edge: a counter refreshed every
            # 30 s and read every 10 s changes at one reading of three; two bins' span
            # without a change ends the run)
            if ts - self._changed_ts >= 2.0 * self.bin_s:
                self._end_run()
            return None
        self._open += n
        self._changed_ts = ts
        if ts - self._edges[-1] < self.bin_s:
            return None
        if self._lead < 0:
            # (the run's first bin: its errors began somewhere in its span -- a steady rate
            # caught mid-bin reads as a rise from it -- so it is no rate, only a start)
            self._lead = self._open
            self._open = 0
            self._edges[-1] = ts
            return None
        self._edges.append(ts)
        self._counts.append(self._open)
        self._open = 0
        if len(self._counts) > self.bins:
            self._history.add(self._edges[1], self._counts.pop(0))
            del self._edges[0]
        return self._judge()

    def _end_run(self) -> None:
        self._history.add(self._last_ts, sum(self._counts) + self._open + max(self._lead, 0))
        self._lead = -1
        self._edges.clear()
        self._counts.clear()
        self._open = 0
        self._first_ts = math.nan

    def _judge(self) -> dict[str, Any] | None:
        counts, edges = self._counts, self._edges
        if len(counts) < self.bins or sum(counts) < self.events:
            return None
        spans = [b - a for a, b in zip(edges, edges[1:], strict=False)]
        rates = [n / s for n, s in zip(counts, spans, strict=True)]
        for k in range(1, len(rates)):  # (every bin a rise over the bin before it)
            if (rates[k] < self.step * rates[k - 1]
                    or _rise_z(counts[k - 1], spans[k - 1], counts[k], spans[k]) < self.step_z):
                return None
        last = rates[-1]
        if _rise_z(counts[0], spans[0], counts[-1], spans[-1]) < self.z:
            return None
        before = self._history.value(edges[0]) * math.log(2) / self._history.half_life_s
        if last < self.history_factor * before:
            return None
        return {"per_min": [round(r * 60.0, 1) for r in rates],
                "bins_s": [round(s, 1) for s in spans], "errors": sum(counts),
                "before_per_min": round(before * 60.0, 3)}

    def reset(self) -> None:
        """Forget the run and the history (the part was reset or replaced)."""
        self._edges.clear()
        self._counts.clear()
        self._open = 0
        self._last_ts = -math.inf
        self._first_ts = math.nan
        self._lead = -1
        self._changed_ts = -math.inf
        self._history.reset()
