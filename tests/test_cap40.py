"""cap40 (round 40, issue 10): a real fault under or beside a site's routine power-cap wave.

revA39 F5 (tests/test_revA39.py's ``_site``): a GPU 9-20 % slow with nothing in its telemetry
(a hidden fault, from step 200) on a node of a site's cap wave (0x4 on nodes 2, 3, 6 from 100
to 400 s, clock -6 %).  Before: never paged in 1,100 s (24 of 24 runs: 4/8 GPUs a node, 10/30 s
polls, seeds 0-1, +9/12/20 %) -- the rank's run, begun under the cap, was told again grown
(1.30x) with a run mean of 1.066x, read as within the cap's 1.064x and held as the site's until
its chain of looks died.  A cap slows work at most as its clock: a run grown past that is its
GPU's own (power._grown_pace, _past_cap_now, _grown_past_cap, _held_for_site), paged at its
GPU, not as the node its capped mates were found alike with (_site_lately): 22 of the 24 runs
within 10 s of the onset.  (Open till cap43: the two +9 % runs whose run never grew past the
cap, paged at the node 640-740 s after the cap let go; now at their GPU a minute after the whole
site's cap let go.)  Guards: the same waves with no fault page nobody (a capped rank's two noisy
steps told grown stay the site's).
"""

from __future__ import annotations

import pytest

from tests.test_revA39 import _firing_at, _site

WAVE = [(100, 400, {2, 3, 6})]


@pytest.mark.parametrize(("gpn", "poll_s", "seed", "factor"), [
    (4, 10, 1, 1.12), (4, 30, 1, 1.2), (8, 10, 0, 1.09), (8, 30, 0, 1.12), (8, 10, 1, 1.2)])
def test_a_hidden_fault_under_a_site_cap_is_paged_at_its_gpu_as_it_grows_past_the_cap(
        gpn: int, poll_s: int, seed: int, factor: float) -> None:
    # Before: nothing paged in 1,100 s.  Now within 10 s of the fault's onset (step 200).
    got = _firing_at(_site(seed=seed, gpn=gpn, poll_s=poll_s, steps=600, waves=WAVE,
                           hidden=(2, 1, 200, factor)))
    assert [g[:3] for g in got] == [("escalation", "unknown", "gpu:node-002/1")], got
    assert got[0][3] <= 200 + 10


# (Was a strict xfail, cap40 OPEN (real fault late, wrong scope): +9 % under a site's 6 % cap
# (seed 0, 4 GPUs a node), its run never told grown past the cap, was held as the site's until
# flap_window_s past the cap's last say and escalated as node:node-002 at 1,038 s (10 s polls) /
# 1,141 s (30 s), 640-740 s after the cap let go at 400 s.  cap43: a site's hold ends
# impact_onset_s after the whole site's cap let go (correlate.power._site_let_go; a node's
# own let-go alone would release blind21 facility-s1 dc04, whose saves' idle samples clear its
# throttle while the site's cap goes on): its GPU at 511 s / 601 s.  cap44: at 204 s, as it
# begins -- told alike with its capped mates, its run is told again once it stands 5 % past
# their pace (steps.slow._grown_runs): tests/test_cap44.py.)
@pytest.mark.parametrize("poll_s", [10, 30])
def test_a_hidden_fault_the_cap_hid_is_paged_once_the_cap_let_go(poll_s: int) -> None:
    # +9 % under the site's 6 %: its run never told grown past the cap (seed 0, 4 GPUs a
    # node).  Before: never paged.
    got = _firing_at(_site(seed=0, gpn=4, poll_s=poll_s, steps=900, waves=WAVE,
                           hidden=(2, 1, 200, 1.09)))
    assert [g[:3] for g in got] == [("escalation", "unknown", "gpu:node-002/1")], got
    assert got[0][3] <= 400 + 5 * poll_s + 60 + 2 * poll_s


@pytest.mark.parametrize(("gpn", "poll_s", "seed"), [(4, 10, 0), (4, 30, 1), (8, 10, 1)])
def test_guard_the_site_cap_wave_alone_pages_nobody(gpn: int, poll_s: int, seed: int) -> None:
    # (gpn 4, 10 s, seed 0: gpu:node-003/0's run under the cap, told again grown at 1.09x on
    # two noisy steps -- within the cap and its noise, the site's)
    assert _firing_at(_site(seed=seed, gpn=gpn, poll_s=poll_s, steps=700, waves=WAVE)) == []
