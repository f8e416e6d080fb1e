"""The correlator's clock at start-up: which empty sources hold it, and for how long.

A fresh worker's first alerts used to wait ``empty_grace_s`` (the worker's
idle_advance_s) for partitions that never get a record (a topic keyed by job
with one job: seven of eight partitions empty).  An empty partition fetched to
its end while its topic is being fed lets the clock go after ``fed_grace_s``;
one of a topic with no data yet, or one not known to be at its end, still holds.
"""

from __future__ import annotations

import orjson
import pytest

from detector.pipeline.correlator import CorrelatorPartition

EMPTY_GRACE_S = 5.0
FED_GRACE_S = 0.25
T = 1767225600.0
SOURCES = ("telemetry.step:0", "telemetry.step:1", "telemetry.ecc:0", "telemetry.ecc:1")


def corr() -> CorrelatorPartition:
    return CorrelatorPartition(0, expected=SOURCES, now=0.0, empty_grace_s=EMPTY_GRACE_S,
                               fed_grace_s=FED_GRACE_S)


class Feed:
    """Watermarks messages into one correlator partition, as workers send them."""

    def __init__(self, part: CorrelatorPartition) -> None:
        self.part = part
        self.offset = 0

    def clocks(self, now: float, *clocks: tuple[str, float | None, bool]) -> None:
        self.part.on_message(self.offset, orjson.dumps(
            {"type": "watermarks", "clocks": [list(c) for c in clocks]}), now)
        self.offset += 1


def test_an_empty_partition_at_its_end_of_a_fed_topic_lets_the_clock_go() -> None:
    part = corr()
    feed = Feed(part)
    both_ecc = (("telemetry.ecc:0", T + 1.0, False), ("telemetry.ecc:1", T + 2.0, False))
    # step:1 has data; step:0 is empty and fetched to its end (idle, no clock).
    feed.clocks(1.0, ("telemetry.step:0", None, True), ("telemetry.step:1", T + 3.0, False),
                *both_ecc)
    assert part.clock(1.0) is None  # said at its end in the same report as the first data
    feed.clocks(1.1, ("telemetry.step:0", None, True), ("telemetry.step:1", T + 3.0, False),
                *both_ecc)
    assert part.clock(1.1) is None  # within the producer's skew: still held
    feed.clocks(1.0 + FED_GRACE_S, ("telemetry.step:0", None, True),
                ("telemetry.step:1", T + 3.0, False), *both_ecc)
    assert part.clock(1.0 + FED_GRACE_S) == T + 1.0  # long before EMPTY_GRACE_S


def test_an_empty_partition_of_a_topic_with_no_data_yet_holds_for_the_grace() -> None:
    part = corr()
    feed = Feed(part)

    def report(now: float) -> None:
        # No step partition has had a record: the steps' producer may not have started.
        feed.clocks(now, ("telemetry.step:0", None, True), ("telemetry.step:1", None, True),
                    ("telemetry.ecc:0", T + 1.0, False), ("telemetry.ecc:1", T + 2.0, False))

    report(1.0)
    report(1.0 + EMPTY_GRACE_S - 0.1)
    assert part.clock(1.0 + EMPTY_GRACE_S - 0.1) is None
    report(1.0 + EMPTY_GRACE_S)
    assert part.clock(1.0 + EMPTY_GRACE_S) == T + 1.0


def test_an_empty_partition_whose_end_is_not_known_holds_the_clock() -> None:
    part = corr()
    feed = Feed(part)

    def report(now: float) -> None:
        # step:0 not fetched to its end (its end unknown, or records not yet handed over).
        feed.clocks(now, ("telemetry.step:0", None, False),
                    ("telemetry.step:1", T + 3.0, False),
                    ("telemetry.ecc:0", T + 1.0, False), ("telemetry.ecc:1", T + 2.0, False))

    for now in (1.0, 1.0 + FED_GRACE_S, 1.0 + EMPTY_GRACE_S + 1.0):
        report(now)
        assert part.clock(now) is None
    # Once it has a record, its clock is the slowest.
    feed.clocks(10.0, ("telemetry.step:0", T + 0.5, False))
    assert part.clock(10.0) == T + 0.5


def test_the_fed_grace_counts_from_the_report_not_from_the_wall_clock() -> None:
    """An 'at its end' said before its topic's data plus the skew does not count, however long
    ago: only a report made ``fed_grace_s`` after the topic had data lets it go."""
    part = corr()
    feed = Feed(part)
    feed.clocks(1.0, ("telemetry.step:0", None, True), ("telemetry.step:1", T + 3.0, False),
                ("telemetry.ecc:0", T + 1.0, False), ("telemetry.ecc:1", T + 2.0, False))
    # Later reports from the other sources only (another worker's): step:0's stays old.
    feed.clocks(3.0, ("telemetry.step:1", T + 4.0, False), ("telemetry.ecc:0", T + 1.5, False),
                ("telemetry.ecc:1", T + 2.0, False))
    assert part.clock(3.0) is None


def test_a_replayed_message_older_than_the_state_never_makes_a_source_idle() -> None:
    """A correlator restored from a snapshot its predecessor took while it held findings
    in memory (local_findings) reads that predecessor's messages again, some older than
    its state: "ecc:1 idle at T+1" must not let the clock past ecc:1's T+2 data."""
    def msg(idle: bool) -> bytes:
        return orjson.dumps({"type": "watermarks", "clocks": [
            ["telemetry.step:0", T + 9.0, False], ["telemetry.step:1", T + 9.0, False],
            ["telemetry.ecc:0", T + 9.0, False], ["telemetry.ecc:1", T + 1.0, idle]]})

    def restored() -> CorrelatorPartition:
        part = corr()
        part.on_message(0, orjson.dumps({"type": "watermarks", "clocks": [
            [s, T + 2.0, False] for s in SOURCES]}), 1.0)
        return part

    part = restored()
    part.on_message(1, msg(True), 2.0, key=b"\0predecessor|watermark")
    assert part.clock(2.0) == T + 2.0  # ecc:1 still holds at its T+2
    part.on_message(2, msg(False), 2.1, key=b"\0predecessor|watermark")
    assert part.clock(2.1) == T + 2.0
    plain = restored()
    plain.on_message(1, msg(True), 2.0, key=b"watermark")
    # As a fresh report too (round 12): a source with data holds at its clock, idle or not --
    # its worker reports how far an idle source can have got (PipelineWorker.reported_clock);
    # before, "idle" let the clock run to the other sources' T+9.
    assert plain.clock(2.0) == T + 2.0


@pytest.mark.parametrize("wall_ahead_s", [None, 1.8e9])
def test_an_at_its_end_of_a_fetch_sent_before_the_feed_holds_however_late_heard(
        wall_ahead_s: float | None) -> None:
    """svc37: a worker whose fetcher thread is starved (its fetch answers 3 s late) while its
    heartbeats run says "step:0 at its end" each heartbeat -- of a fetch sent before the feed
    began, whose high watermark is older than the feed's records.  The word counts as of when
    that fetch was sent (the message's ``ended``), not as of when it was heard; a fetch sent
    after the feed began lets it go, and one claiming to be sent later than it is heard counts
    as heard.  ``ended`` is wall time, ``now`` the service's monotonic clock
    (``wall_ahead_s``: the wall clock that far ahead of it; None: ``now`` is wall time).
    (Fails before: let go at 1.0 + FED_GRACE_S on the fetch sent at 0.5; with the clocks
    apart, a7b5ca0 took every fetch for sent now.)"""
    ahead = wall_ahead_s or 0.0
    others = (("telemetry.step:1", T + 3.0, False), ("telemetry.ecc:0", T + 1.0, False),
              ("telemetry.ecc:1", T + 2.0, False))

    def fresh() -> tuple[CorrelatorPartition, Feed]:
        part = corr()
        if wall_ahead_s is not None:
            part.wall_clock = lambda: heard[0] + ahead
        return part, Feed(part)

    heard = [0.0]

    def report(now: float, sent: float) -> None:
        heard[0] = now
        part.on_message(feed.offset, orjson.dumps(
            {"type": "watermarks", "clocks": [["telemetry.step:0", None, True],
                                              *map(list, others)],
             "ended": [["telemetry.step:0", sent + ahead]]}), now)
        feed.offset += 1

    part, feed = fresh()
    report(1.0, 0.5)  # the feed's first data
    for now in (1.0 + FED_GRACE_S, 2.0, 1.0 + EMPTY_GRACE_S + 1.0):
        report(now, 0.5)  # the same stale fetch: held past both graces
        assert part.clock(now) is None
    report(7.0, 1.0 + FED_GRACE_S)  # a fetch sent after the feed began, answered late
    assert part.clock(7.0) == T + 1.0

    part, feed = fresh()
    report(1.0, 0.5)
    report(1.1, 1e9)  # (sent "later" than heard: as of when heard, within the skew)
    assert part.clock(1.1) is None
    report(1.0 + FED_GRACE_S, 1e9)
    assert part.clock(1.0 + FED_GRACE_S) == T + 1.0
