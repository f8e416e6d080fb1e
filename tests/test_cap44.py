"""cap44 (round 44, issue 10): a fault that grows under a site's cap wave, measured against the
node mates the wave slows alike.

A rank told slow alike with its node's mates (``node_wide``, or told again ``node_grown`` as a
site's cap wave deepened) runs at the node's pace: the cap's.  detector.steps told such a run
again only once its pace doubled the told excess (+5 %) -- a GPU's own fault begun under the
wave, +12 % over its capped mates, stood at 1.27x against a bar of 1.42x and was paged only
after the wave lifted (cap41 F1: 446 s / 541 s for a fault begun at 300 s); +9 % under a site's
6 % never grew past it and was paged a minute after the whole site let go (511 s / 601 s).
Now such a run is told again once its pace over its mates' stands the margin past what it was
when told (detector.steps.slow ``_grown_runs``, ``_told_mates``), and the correlator's cap rule
weighs it as before (correlate.power ``_grown_past_cap``).  Guards: a wave whose GPUs' depths
follow their own demand (tests/test_d1cap.py, test_cap32.py) and a wave alone
(tests/test_cap40.py) page nobody more.
"""

from __future__ import annotations

import pytest

from tests.test_revA39 import _firing_at, _site
from tests.test_revA40 import _deepening_with_fault, _fired, _job


@pytest.mark.parametrize(("poll_s", "seed", "start"), [(30, 0, 300), (10, 1, 300), (30, 1, 300),
                                                       (10, 2, 330)])
def test_a_gpu_fault_begun_under_a_deepened_wave_is_paged_before_the_wave_lifts(
        poll_s: int, seed: int, start: int) -> None:
    # Before: at its GPU 446 s (10 s polls) / 541 s (30 s) for start 300, after the wave
    # lifted at 400 s.  Now 2-4 s after its onset.
    got = _fired(_job(_deepening_with_fault(start), poll_s=poll_s, steps=600, seed=seed))
    assert [g[:3] for g in got] == [("escalation", "unknown", "gpu:node-002/1")], got
    assert got[0][3] <= start + 10, got


@pytest.mark.parametrize(("gpn", "poll_s", "seed"), [(4, 10, 0), (4, 30, 0), (8, 30, 0),
                                                     (4, 10, 1)])
def test_a_nine_percent_fault_under_a_six_percent_site_cap_is_paged_as_it_begins(
        gpn: int, poll_s: int, seed: int) -> None:
    # Before: 511 s / 601 s (gpn 4, seed 0), a minute after the whole site's cap let go at
    # 400 s: the run, told alike with its capped mates at 1.06x, never reached 1.17x.
    got = _firing_at(_site(seed=seed, gpn=gpn, poll_s=poll_s, steps=600,
                           waves=[(100, 400, {2, 3, 6})], hidden=(2, 1, 200, 1.09)))
    assert [g[:3] for g in got] == [("escalation", "unknown", "gpu:node-002/1")], got
    assert got[0][3] <= 200 + 10, got
