"""The lead's round-31 review of the round's code (revB31), mended with tests that fail on
the round's main 406abbe.

d1cap's facility-cap rule (Correlator._fleet_cap) matched another node's cap wave by when it
began alone: a node's own BMC cap begun 40 s after another node's 25 s routine dip (ended
before it began) was read as the site's, and its page held past the cap's end (revB31 1,
main: node-004 paged at +901 s in a 900 s probe, alone at +180 s).  And a node already paged
for its own cap counted as the site's partner of a shallower cap begun with it, hiding that
one's page for as long as both lasted (revB31 2, its S4).
"""

from __future__ import annotations

import pytest

from detector.alerts import ISOLATION
from detector.testing import T0
from tests.test_d1cap import CAP_FROM, CAP_TO, _pages, _run


def test_a_cap_that_ended_before_another_began_is_no_partner_of_it() -> None:
    # node-011's routine dip 100-125 s (7 %), node-004's own cap from 140 s: node-004 paged
    # as it would be alone (~75 s after its cap's sample), long before its cap ends.
    alerts = _run({11: (0.0, 0.07, CAP_FROM + 25.0), 4: (40.0, 0.085)}, nodes=16)
    mine = [a for a in alerts if a.scope.key == "node:node-004"]
    assert mine and (mine[0].topic, mine[0].kind, mine[0].cause) == (
        ISOLATION, "slow_node", "power"), _pages(alerts)
    assert mine[0].detected_ts < T0 + CAP_TO - 60.0, mine[0].detected_ts - T0


def test_a_node_paged_for_its_own_cap_is_no_site_partner() -> None:
    # node-004 capped 18 % (paged: its own), node-011 capped 8.5 % 20 s later and alone
    # besides: its own limit too, paged within the cap -- not held as a site's with node-004.
    alerts = _run({4: (0.0, 0.18), 11: (20.0, 0.085)}, nodes=16)
    pages = _pages(alerts)
    assert (ISOLATION, "slow_node", "power", "node:node-004") in pages, pages
    late = [a for a in alerts if a.scope.key == "node:node-011"]
    assert late and late[0].topic == ISOLATION and late[0].cause == "power", pages
    assert late[0].detected_ts < T0 + CAP_TO - 60.0, late[0].detected_ts - T0


def test_a_forged_noise_sigma_is_refused_at_the_door() -> None:
    # revB31 3: xf31's cap bound reads a slow rank's noise_sigma; a string there was taken by
    # the findings codec and raised in the correlator (the finding lost, a timer half done).

    from detector.findings import decode_message
    from tests.test_harden_findings import _forge, _xid_stream
    _, emits = _xid_stream()
    assert decode_message(_forge(emits, evidence={"noise_sigma": 0.01}), 1e12) is not None
    with pytest.raises(ValueError, match="noise_sigma"):
        decode_message(_forge(emits, evidence={"noise_sigma": "x"}), 1e12)


def test_a_huge_noise_sigma_cannot_make_every_cap_explain_every_slowdown() -> None:
    # revB31 3: 1e308 made the allowance infinite -- any rank under a cap 'explained'.
    from types import SimpleNamespace

    from detector.correlate import _pace_noise
    assert _pace_noise(SimpleNamespace(evidence={"noise_sigma": 1e308})) <= 0.61
    assert _pace_noise(SimpleNamespace(evidence={"noise_sigma": -5.0})) == 0.02
    assert _pace_noise(SimpleNamespace(evidence={"noise_sigma": 0.03})) == max(0.02, 3.0 * 0.03)


# -- revA31 2: life31's F1 rule against a node that dies in a lone job's save ----------------


# revA31 2, mended by defer32 (round 32): the node's judgement deferred, not dropped -- paged
# once still dark liveness.DEFER_S after its last record (tests/test_defer32.py).
def test_a_node_dying_in_a_lone_jobs_save_and_never_back_is_paged(tmp_path) -> None:
    from tests.test_life31 import DARK, fleet, job_steps, pages
    recs = fleet(seconds=3600, dead={DARK: (440.0, 1e9)}, job=False, idle=(400.0, 460.0))
    recs += job_steps([DARK], 0.0, 400.0)
    assert pages(recs, tmp_path) == [("firing", f"node:{DARK}")]


# -- revA31 1: an SDC split in a DP-2 job whose job crashes at once --------------------------


@pytest.mark.parametrize("end", [60, 61])
def test_an_sdc_split_is_paged_when_the_job_crashes_at_once(end: int) -> None:
    # TP4 x DP2, rank 1's copy corrupted at step 60 (a checksum split, its grad norm x1.3),
    # the job's last step ``end`` (it crashed on the corruption), another node's ECC records
    # moving the clock for an hour.  xf31's held tiebreak (reverted) paged only on the job's
    # next steps: never.
    import tests.test_sdc19 as sdc19
    from detector.engine import Engine
    from detector.testing import ecc, feed
    evs = [e for e in sdc19._job(4, 2, 140, bad=1) if e.step <= end]
    eng = Engine()
    alerts = feed(eng, evs)
    last = max(e.ts for e in evs)
    alerts += feed(eng, [ecc(last + 10.0 * k, "node-009", 0) for k in range(1, 360)])
    assert [a for a in alerts if a.kind == "sdc" and a.status == "firing"], alerts
