"""Stage tracing's slow-alert split (bench/kafka_throughput.py ``explain``): who held an alert.

The split is what the latency rounds classify stalls by, so it must put the
time where the evidence says: an input the broker had not appended yet is the
feed's, one appended but not asked for is the worker's fetch.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import kafka_throughput as kt  # noqa: E402

PREFIX = "p."


def trace(fetched: float) -> dict[str, object]:
    return {"source": "telemetry.ecc:3", "offset": 5, "fetched": fetched, "handed": fetched + 0.01,
            "found": fetched + 0.02, "findings_fetched": fetched + 0.03,
            "findings_handed": fetched + 0.04, "decided": fetched + 0.05, "held_by": []}


def test_an_input_appended_late_is_the_feeds() -> None:
    # Fetched at +0.51 s; the response sent at +0.3 s still ended the partition at offset 5,
    # and the feed's message produced with it was acked 0.45 s after its produce().
    fetches = {(PREFIX + "telemetry.ecc", 3): [[100.3, 100.31, 5, 5, False],
                                              [100.5, 100.51, 5, 9, True]]}
    acked = [(100.001, 0.5, 0.45, "t", 0, 1)]
    x = kt.explain(100.0, 100.57, trace(100.51), PREFIX, fetches, [], acked, [])
    assert abs(x["feed"] - 0.45) < 1e-9 and abs(x["fetch"] - 0.06) < 1e-9
    assert kt.classify(x) == "a"


def test_an_input_there_but_not_asked_for_is_the_workers() -> None:
    # Acked after 20 ms; its partition not asked for again until +0.6 s.
    fetches = {(PREFIX + "telemetry.ecc", 3): [[100.0, 100.005, 5, 5, False],
                                              [100.6, 100.61, 5, 9, True]]}
    acked = [(100.0, 0.03, 0.02, "t", 0, 1)]
    x = kt.explain(100.0, 100.67, trace(100.61), PREFIX, fetches, [], acked, [])
    assert abs(x["feed"] - 0.02) < 1e-9
    assert abs(x["asked_gap"] - 0.58) < 1e-9  # from its append to the request that got it
    assert kt.classify(x) == "b"


def test_without_an_ack_nearby_the_last_fetch_that_missed_bounds_the_feed() -> None:
    fetches = {(PREFIX + "telemetry.ecc", 3): [[100.4, 100.41, 5, 5, False],
                                              [100.5, 100.51, 5, 9, True]]}
    x = kt.explain(100.0, 100.57, trace(100.51), PREFIX, fetches, [], [], [])
    assert not x["ack_known"] and abs(x["feed"] - 0.4) < 1e-9
