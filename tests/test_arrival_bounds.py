"""detector.pipeline.arrival under untrusted Kafka timestamps (the lead, round 11).

A record's Kafka timestamp is its producer's CreateTime unless the topic appends its own:
any producer can write the year 2100 there.  The ArrivalClock must stay bounded and keep
answering for the real arrivals around such a record.
"""

from __future__ import annotations

from detector.pipeline.arrival import ArrivalClock


def test_a_far_future_arrival_neither_grows_the_clock_nor_blinds_it() -> None:
    clock = ArrivalClock(keep_s=10.0)
    clock.note(4_102_444_800.0, 9e9)  # 2100-01-01: a forged CreateTime
    for i in range(100_000):  # a batch every 10 ms for 1,000 s of real arrivals
        t = 1_767_225_600.0 + 0.01 * i
        clock.note(t, t + 3.0)
    assert len(clock._arrivals) <= 2 * ArrivalClock.MAX_SAMPLES
    now = 1_767_225_600.0 + 0.01 * 99_999
    assert clock.reached(now) == now + 3.0       # the newest real batch answers
    assert abs(clock.reached(now - 5.0) - (now - 2.0)) <= 0.011  # and one 5 s before it


def test_arrivals_out_of_order_stay_bounded_too() -> None:
    clock = ArrivalClock(keep_s=10.0)
    for i in range(50_000):  # two partitions' batches noted newest first, then the older
        t = 1_767_225_600.0 + 0.01 * i
        clock.note(t + 0.005, t + 1.0)
        clock.note(t, t)
    assert len(clock._arrivals) <= 2 * ArrivalClock.MAX_SAMPLES
    last = 1_767_225_600.0 + 0.01 * 49_999
    assert clock.reached(last + 0.005) == last + 1.0
