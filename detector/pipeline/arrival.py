"""How far in event time a worker's inputs had got, by when they reached Kafka.

The correlator's clock is the slowest source's (:mod:`detector.pipeline.correlator`),
so a finding waited for the partition fetched least recently even when that
partition had nothing new: its next records were still on their way to Kafka
(a producer's linger, a slow round trip) or not yet fetched.  An
:class:`ArrivalClock` lets a worker say, for a source fetched to its end, how
far it can have got: everything that reached Kafka ``skew_s`` before the fetch
that found the source at its end was in Kafka when that fetch was answered,
so it was read, the source's records among it.  Its records still to come
reached Kafka after that, and producers writing in event-time order put them
after the event time those earlier inputs had reached -- unless one producer
is more than ``skew_s`` behind another, the same allowance the correlator
gives a quiet source (``hold_back_s``).

>>> clock = ArrivalClock()
>>> clock.note(100.00, 5000.0)   # inputs that reached Kafka by 100.00 s reached event time 5000
>>> clock.note(100.10, 5025.0)
>>> clock.reached(100.05), clock.reached(100.10), clock.reached(99.0)
(5000.0, 5025.0, -inf)
"""

from __future__ import annotations

import math
from bisect import bisect_right


class ArrivalClock:
    """Event time reached by the inputs a worker processed, as a function of their arrival.

    ``note(arrival, clock)`` after a partition's batch: its records reached Kafka by
    ``arrival`` (its last record's Kafka timestamp, epoch seconds) and took its
    event-time clock to ``clock``.  ``reached(t)`` is the highest such clock of the
    batches whose inputs all arrived by ``t``.  Batches are noted in any order (the
    partitions of one hand-over are not in arrival order).  Bounded: samples more
    than ``keep_s`` older than the newest are folded into one floor, and one older
    than that floor is left out (never more than was reached); and, whatever the
    timestamps, beyond ``MAX_SAMPLES`` the older half is folded -- a Kafka timestamp
    is its producer's CreateTime, and one record stamped 2100 stood newest for ever,
    so the time rule never folded again and every batch after it was kept.

    >>> clock = ArrivalClock()
    >>> clock.note(100.10, 4990.0)   # a lagging partition's batch, noted first
    >>> clock.note(100.05, 5025.0)   # the same hand-over: arrived earlier, got further
    >>> clock.reached(100.07), clock.reached(100.10)
    (5025.0, 5025.0)
    """

    MAX_SAMPLES = 4096

    def __init__(self, keep_s: float = 10.0) -> None:
        self.keep_s = keep_s
        self._arrivals: list[float] = []  # increasing
        self._clocks: list[float] = []    # the running maximum: nondecreasing
        self._floor = -math.inf           # reached by what arrived by _floor_at:
        self._floor_at = -math.inf        # the newest sample folded away

    def note(self, arrival: float, clock: float) -> None:
        arrivals, clocks = self._arrivals, self._clocks
        if not arrivals or arrival >= arrivals[-1]:
            if arrivals:
                if clock < clocks[-1]:
                    clock = clocks[-1]
                if arrival == arrivals[-1]:
                    clocks[-1] = clock
                    return
            elif clock < self._floor:
                clock = self._floor
            arrivals.append(arrival)
            clocks.append(clock)
            if arrival - arrivals[0] > 2 * self.keep_s:
                self._fold(bisect_right(arrivals, arrival - self.keep_s))
            elif len(arrivals) > self.MAX_SAMPLES:
                self._fold(len(arrivals) // 2)
            return
        if arrival < self._floor_at:
            return
        k = bisect_right(arrivals, arrival)
        before = clocks[k - 1] if k else self._floor
        if clock <= before:
            return  # what arrived by then had got as far already
        if k and arrivals[k - 1] == arrival:
            k -= 1
            clocks[k] = clock
        else:
            arrivals.insert(k, arrival)
            clocks.insert(k, clock)
        for j in range(k + 1, len(clocks)):  # everything that arrived later got as far
            if clocks[j] >= clock:
                break
            clocks[j] = clock
        if len(arrivals) > self.MAX_SAMPLES:
            self._fold(len(arrivals) // 2)

    def _fold(self, cut: int) -> None:
        """Fold the ``cut`` oldest samples into the floor: what arrived by the last of them
        had reached its clock (the running maximum)."""
        arrivals, clocks = self._arrivals, self._clocks
        self._floor_at, self._floor = arrivals[cut - 1], clocks[cut - 1]
        del arrivals[:cut], clocks[:cut]

    def reached(self, t: float) -> float:
        """The event time reached by every input that arrived by ``t`` (-inf: none known)."""
        k = bisect_right(self._arrivals, t)
        if k:
            return self._clocks[k - 1]
        return self._floor if t >= self._floor_at else -math.inf


# Kafka's timestamps are in milliseconds: two records stamped in the same one arrived in
# no known order.  Half of one, so that the millisecond before is in and this one is out.
ARRIVAL_RESOLUTION_S = 0.0005

# DESIGN.md: messages may arrive out of event-time order by up to 5 s.  A source later than
# that, beyond what most of a worker's sources are, is taken for a clock that lags (a node
# whose NTP is broken), not for a delivery to wait for.
OUT_OF_ORDER_S = 5.0

# A decision that waits for an explanation (a slow rank's wait for its GPU's next thermal
# sample: Correlator's "slow" timers) waits for a source up to this far behind the others'
# median, not OUT_OF_ORDER_S: Telegraf flushes every 10 s by default (flush_interval), a
# dcgm-exporter scraped every 30 s and forwarded is up to 30 s behind while the job's own
# producer sends its steps at once.  Only the wait for a cause is held so long: every other
# decision, and the alerts that answer a finding, keep the 5 s of DESIGN's disorder
# (CorrelatorPartition.release_to's ``hold``).  Review round 12, C1.
EXPLAIN_LATE_S = 30.0


class Lateness:
    """How far in event time one source's batches were behind the worker's inputs, at most.

    ``note(now, behind)`` after each batch of the source: when its last record reached
    Kafka, the worker's inputs (:class:`ArrivalClock`) had reached ``behind`` seconds of
    event time past the source's clock -- a collector that flushes every 2 s, a scrape
    that lags, is 2 s behind.  :attr:`value` is the highest of the last ``window_s`` to
    ``2 * window_s`` of wall time (``now``: the worker's clock, never a timestamp of the
    input), so a source measured every 10 s (DCGM) keeps its figure between batches and a
    delivery that got faster is forgotten; two numbers, whatever the input.

    >>> late = Lateness(window_s=30.0)
    >>> late.note(0.0, 2.0); late.note(10.0, 0.5); late.value
    2.0
    >>> late.note(40.0, 0.5); late.value   # 2.0 is in the bucket before: still counted
    2.0
    >>> late.note(70.0, 0.4); late.value   # ... and now more than 60 s old
    0.5
    """

    __slots__ = ("window_s", "value", "_cur", "_prev", "_since")

    def __init__(self, window_s: float = 30.0) -> None:
        self.window_s = window_s
        self.value = -math.inf   # the highest lateness of the window (-inf: none noted)
        self._cur = -math.inf    # the highest noted since _since
        self._prev = -math.inf   # the highest of the bucket before
        self._since = -math.inf  # wall time the current bucket began

    def note(self, now: float, behind: float) -> None:
        if now - self._since >= self.window_s:
            self._prev = self._cur if now - self._since < 2 * self.window_s else -math.inf
            self._cur = -math.inf
            self._since = now
            self.value = self._prev
        if behind > self._cur:
            self._cur = behind
            if behind > self.value:
                self.value = behind


def median(values: list[float], upper: bool = False) -> float:
    """The middle value of ``values`` (sorted in place); of two middle ones the lower, or the
    upper with ``upper``."""
    values.sort()
    return values[len(values) // 2 if upper else (len(values) - 1) // 2]
