"""live36: one rule for "this topic of this node has missed its rows" (issue 10).

live35 held a node's quickest topic to its fast bound (``_waited``) and every quiet topic to
its own interval (``_overdue``), both reading the ``quiet_s`` its source told: counted on the
topic's own progress -- up to the fleet's newest record on that topic.  A topic polled in
bursts (the fleet's ECC rows every 30 s, within seconds of each other) lags the source's
clock by up to an interval, so a node whose ECC poll was due 16 s ago was told "29 s quiet"
for two scans (blind9 G2, an NVL72 rack dark: 28.4 -> 39.7 s in live35).  Now one function
(``liveness._overdue``) reads the time quiet re-aged to the correlator's clock (less DESIGN's
5 s disorder) against the topic's own interval; port counters quiet 26-29 s while the node's
GPU collector restarts across a checkpoint (blind26 F1) still page nobody.
"""

from __future__ import annotations

import importlib

from detector.alerts import Alert
from detector.correlate import Correlator
from detector.thresholds import Thresholds
from tests import blindcases as bc
from tests.test_liveness import T0, TIERS
from tests.test_path24 import _job, _quiet, _stop


def _told(corr: Correlator, out: list[Alert], ts: float, ecc_quiet_s: float,
          ecc_last: float = 390.0) -> None:
    """node-016 (thermal every 10 s, last at 400 s; ECC every 30 s, last at ``ecc_last``)
    told quiet at ``ts`` on both, its ECC ``ecc_quiet_s`` by its source's count."""
    th = _quiet("node-016", "thermal", ts)
    ecc = _quiet("node-016", "ecc", ts, last=ecc_last)
    ecc = ecc._replace(evidence={**ecc.evidence, "quiet_s": ecc_quiet_s})
    corr.on_finding(th, out)
    corr.on_finding(ecc, out)


def test_a_topic_polled_in_bursts_is_overdue_by_the_clock_not_the_fleets_last_poll():
    """node-016 dies under job-1 at ~400 s; at 432 s its ECC source's newest row of any node
    is at 419 s (a poll of the fleet read in a burst), so it tells the node's ECC 29 s quiet
    -- but its row was due at 420 s: overdue by the correlator's clock (432 - 5 s of
    disorder).  Paged at 432 s (before: not overdue, the page waited for a later scan)."""
    corr = Correlator(Thresholds(), TIERS)
    out: list[Alert] = []
    _job(corr, out, ["node-016", "node-000"], [])
    _told(corr, out, 432.0, 29.0)
    _stop(corr, out, 432.0)
    assert [(a.scope.key, a.detected_ts - T0) for a in out] == [("node:node-016", 432.0)]


def test_a_row_not_due_yet_within_designs_disorder_pages_nobody():
    """The same node whose ECC row (every 30 s, last at 406 s) is not due yet: the fleet's
    newest ECC row 3 s before the clock, 26 s after the node's (blind26 F1's port counters,
    quiet 26-29 s across a checkpoint) -- a row stamped in the last 5 s may still come."""
    corr = Correlator(Thresholds(), TIERS)
    out: list[Alert] = []
    _job(corr, out, ["node-016", "node-000"], [])
    _told(corr, out, 435.0, 26.0, ecc_last=406.0)
    _stop(corr, out, 435.0)
    assert out == []


def test_blind9_g2_a_rack_dark_is_paged_at_the_first_scan_after_its_jobs_stop():
    """blind9 G2: nvl72-s0's rack 3 (18 trays) loses power at 868.4 s; its jobs' stop is told
    at 896.8 s.  Two trays' ECC rows (due 880.6-880.9 s) were told 29 s quiet then, the
    fleet's ECC poll read in bursts: live35 judged them a scan later, 39.7 s.  Now 28.4 s."""
    score = importlib.import_module("bench.blind9.score")
    sc = bc.cli_scorer(bc.cases_of("blind9"), score)("G2-nvl72-rack-dark-node-pages")
    assert bc.no_false_positive(sc)
    assert bc.caught_within(30.0)(sc), [f["latency_s"] for f in sc["faults"]]
