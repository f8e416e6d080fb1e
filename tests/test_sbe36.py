"""A GPU whose corrected (single-bit) ECC errors climb by multiples in minutes is paged at the
GPU, hardware/gpu_memory, before the driver's XID 92 (room sbe36, round 36; issue 10).

blind26 tenants ``sbe-*``: an HBM corrected-error storm, +15-200 a 60 s poll and climbing,
XID 92 ("high single-bit error rate") 150-240 s in, XID 63 after it -- faultline paged at the
XID 92 only, 138-205 s after the first changed ECC row.  A corrected-error rate alone is no
fault (blind6's healthy MIG GPU: 0.5-2 a second for minutes; a trickle for weeks): what pages
is the climb (GpuHealth._sbe_climbing, models.rising).  Before: every climb here was paged at
its XID 92 or not at all.
"""

from __future__ import annotations

import numpy as np
import pytest

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.testing import T0, ecc, feed

NODE, GPU = "hgx-202", 7


def _firing(alerts):
    return [a for a in alerts if a.status == "firing"]


def _polls(counts, *, every: float = 60.0, quiet: int = 8, start: float = 4.0):
    """The GPU's ECC rows: ``quiet`` polls without an error, then one poll a count of
    ``counts`` (errors since the poll before); returns the rows and the first changed row's
    time."""
    rows, sbe, t = [], 0, T0 + start
    for _ in range(quiet):
        rows.append(ecc(t, NODE, GPU, sbe=sbe))
        t += every
    first = t
    for n in counts:
        sbe += int(n)
        rows.append(ecc(t, NODE, GPU, sbe=sbe))
        t += every
    return rows, first


def test_a_climbing_storm_is_paged_at_its_fourth_poll_before_xid_92() -> None:
    # blind26 tenants-s1 hgx-202 GPU 7, its counts and XIDs.  Failed before: the first page
    # came with the XID 92, 190.3 s after the first changed row.  (The first poll is the
    # storm's start, no rate: 78 -> 99 -> 155, two rises, at the fourth poll, 180 s.)
    rows, first = _polls([54, 78, 99, 155])
    xid92 = first + 190.3
    rows += [ecc(xid92, NODE, GPU, sbe=386, xid=92), ecc(xid92 + 1.5, NODE, GPU, sbe=386, xid=63),
             ecc(first + 240.0, NODE, GPU, sbe=565, pending=True),
             ecc(first + 300.0, NODE, GPU, sbe=720, pending=True)]
    fired = _firing(feed(Engine(), rows))
    assert {(a.topic, a.kind, a.cause, a.scope.key) for a in fired} == {
        (ISOLATION, "hardware", "gpu_memory", f"gpu:{NODE}/{GPU}")}
    assert len({a.dedup_key for a in fired}) == 1  # (the XIDs after it: the same incident)
    a = fired[0]
    assert a.detected_ts == first + 180.0 and a.onset_ts == first
    assert a.evidence["signals"][0]["per_min"] == [78.0, 99.0, 155.0]
    assert a.action.name == "drain_gpu"


def test_blind26_s3s_climb_is_paged_at_its_fourth_poll() -> None:
    # tenants-s3: 39 -> 92 -> 136 after its first poll (29), two rises (XID 92 at 205 s)
    rows, first = _polls([29, 39, 92, 136, 148])
    fired = _firing(feed(Engine(), rows))
    assert [(a.cause, a.detected_ts - first) for a in fired] == [("gpu_memory", 180.0)]


@pytest.mark.parametrize("counts", [
    [44, 45, 114, 74, 79],  # tenants-s2: two polls level, one rise, then level
    [27, 66, 87, 71, 68],   # tenants-s0: 66 -> 87 -> 71, a steady 70 a minute's noise
])
def test_one_rise_then_level_is_no_climb(counts) -> None:
    # revA36 F2: one rise after the storm's first (partial) poll, then level, is what a
    # steady storm looks like (~8 in 60 of Poisson spread); these two are paged at their
    # XID 92 (138 s, 168 s), as before sbe36.
    rows, _ = _polls(counts)
    assert _firing(feed(Engine(), rows)) == []


@pytest.mark.parametrize("every", [10.0, 30.0, 60.0])
@pytest.mark.parametrize("per_s", [0.5, 1.0, 2.0])
def test_a_storm_at_a_steady_rate_pages_nothing(every: float, per_s: float) -> None:
    # blind6's healthy MIG GPU: 0.5-2 corrected errors a second for 4-6 min, no XID, no
    # remap; its start falls 30 % into a poll, so the first poll counts a part of it.
    rows, t, t_on, sbe = [], T0, T0 + 10 * every + 0.7 * every, 0
    while t <= t_on + 360.0 + 3 * every:
        sbe = int(per_s * max(0.0, min(t, t_on + 330.0) - t_on))
        rows.append(ecc(t, NODE, GPU, sbe=sbe))
        t += every
    assert sbe > 100
    assert _firing(feed(Engine(), rows)) == []


def test_a_steady_trickle_for_hours_pages_nothing() -> None:
    # A GPU correcting ~40 errors a minute for 12 hours (counting noise: Poisson), as
    # some sites see for weeks: no climb, however the polls wander.
    counts = np.random.default_rng(3660).poisson(40.0, 720)
    rows, _ = _polls(counts, quiet=1)
    assert _firing(feed(Engine(), rows)) == []


@pytest.mark.parametrize("counts", [
    [500, 0, 0, 0],              # one burst
    [500, 200, 120, 60, 20],     # a burst falling back
    [30, 80, 40, 20, 10],        # a rise that falls back
    [120, 10, 150, 20, 170],     # bursts and lulls
    [1, 2, 3, 5, 8, 13],         # a trickle doubling: too few errors to be a storm
])
def test_a_burst_or_a_rate_falling_back_pages_nothing(counts) -> None:
    rows, _ = _polls(counts)
    rows += _polls([0, 0], quiet=0, start=rows[-1].ts + 60.0 - T0)[0]
    assert _firing(feed(Engine(), rows)) == []


def test_a_climb_after_a_long_steady_rate_needs_to_leave_it_far_behind() -> None:
    # An hour at ~40 a minute, then 40 -> 60 -> 80: climbing, but not far above its own
    # history (10x) -- a storm that went on is no new failure; 40 -> 400 -> 1600 is, at its
    # 1600 (two rises).
    counts = list(np.random.default_rng(3661).poisson(40.0, 60))
    rows, _ = _polls(counts + [40, 60, 80], quiet=1)
    assert _firing(feed(Engine(), rows)) == []
    rows, first = _polls(counts + [40, 400, 1600], quiet=1)
    fired = _firing(feed(Engine(), rows))
    assert [a.detected_ts for a in fired] == [first + 62 * 60.0]
