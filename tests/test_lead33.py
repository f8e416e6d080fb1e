"""The lead's end-of-round review of round 33 (revA33, revB33): each test failed on main before
its mend (the commit that adds it says which)."""

from __future__ import annotations

import numpy as np
import pytest

from detector.engine import Engine
from detector.testing import T0, feed
from tests.test_steps_round12 import COMPUTE, _on, job


def _pages(alerts: list) -> list[tuple[str, str, float]]:
    return [(a.topic, a.scope.key, round(a.detected_ts - T0, 1)) for a in alerts
            if a.status == "firing"]


# -- revA33 1: start33's from-the-start host rule paged a node's cold start --------------------


@pytest.mark.parametrize("stop", [25, 40, 60])
@pytest.mark.parametrize("extra", [0.10, 0.30])
def test_a_node_cold_for_its_jobs_first_minute_pages_nobody(extra: float, stop: int) -> None:
    """revA33 1: node-001's 8 ranks +10/30 % of a step's compute in host time from step 0 until
    step 25/40/60 (a cold page cache or dataset shard on one node), then at pace.  Main
    (_START_STEPS 10): escalated at the node at step 19, held up ~10 minutes; 3cb6b2b: nothing."""
    got = _pages(feed(Engine(), job(ranks=32, steps=400,
                                    host=_on(set(range(8, 16)), extra * COMPUTE, 0, stop))))
    assert got == [], got


@pytest.mark.parametrize("seed", range(3))
def test_loaders_warming_up_over_thirty_five_steps_page_nobody(seed: int) -> None:
    """revA33 1: node-001's loaders back at pace one by one, each at a step between 15 and 35."""
    rng = np.random.default_rng(seed)
    stop = {r: int(rng.integers(15, 36)) for r in range(8, 16)}
    late = lambda s, r: 0.3 * COMPUTE if r in stop and s < stop[r] else 0.0  # noqa: E731
    assert _pages(feed(Engine(), job(ranks=32, steps=300, seed=seed, host=late))) == []


def test_a_node_catching_up_from_the_first_step_seen_pages_nobody() -> None:
    """revA33 1: +30 % falling linearly to 0 over 120 steps from the first step seen (a replay or
    a consumer joining mid-stall; blind2's healthy pipeline catching up): not flat."""
    late = lambda s, r: 0.3 * COMPUTE * max(0.0, 1 - s / 120) if 8 <= r < 16 else 0.0  # noqa: E731
    assert _pages(feed(Engine(), job(ranks=32, steps=400, host=late))) == []


def test_a_node_late_from_the_start_past_seventy_steps_is_paged_at_the_node() -> None:
    """The trade, pinned: node-001's ranks +30 % from step 0 to 120 -- paged at the node once,
    about 60 steps past the warm-up (held for ever on 3cb6b2b: a 120-step run is under its
    420 s holds; at step 19 on start33's main)."""
    got = _pages(feed(Engine(), job(ranks=32, steps=400,
                                    host=_on(set(range(8, 16)), 0.3 * COMPUTE, 0, 120))))
    assert [p[1] for p in got] == ["node:node-001"] and 60 <= got[0][2] <= 75, got


# -- revB33 2: a GPU's own locked/application clocks read as hardware --------------------------


def test_a_stuck_clock_page_says_to_look_for_a_clock_setting_on_the_gpu_first() -> None:
    """revB33 2: locked or application clocks set on one GPU alone (``nvidia-smi -lgc``) show
    no reason bit in DESIGN's ``throttle`` field (0x2 is not in it): clock33's page names
    the GPU's hardware and a reset.  The reset clears a setting too, but the operator is told
    to check for one first and how to clear it alone (main: not a word of it)."""
    from detector.alerts import Scope
    from detector.playbook import action_for
    a = action_for("slow_node", "gpu_hardware", Scope.of_gpu("node-000", 3))
    assert "nvidia-smi -q -d CLOCK" in a.detail and "nvidia-smi -rgc -i 3" in a.detail
    assert a.detail.index("-rgc") < a.detail.index("nvidia-smi -r -i 3"), a.detail


# -- capfix33: a withdrawn page's node held the site's for as long as its own cap lasted -------


def test_a_withdrawn_node_still_capped_long_after_the_site_is_paged_again(monkeypatch) -> None:
    """capfix33 kept a node whose page was withdrawn as the site's held for as long as its own
    cap wave lasts: node-004 capped 0-1500 s (a PSU lost, its BMC's cap), the site's
    roll-out reaching 11/7/2 at 45-52 s and letting go at T0+200 -- never paged again (623042d).
    Held as the two-node case is (revB31 2): flap_window_s after the site last explained it,
    paged once more, late but not never."""
    from tests.test_cap33 import _all, _rel, _story
    caps = {4: (0.0, 0.085, 1500.0), 11: (45.0, 0.085, 200.0), 7: (50.0, 0.085, 200.0),
            2: (52.0, 0.085, 200.0)}
    alerts = [a for a in _all(monkeypatch, caps, steps=1600, nodes=16)
              if a.scope.key == "node:node-004"]
    story = _story(alerts)
    # (fired, withdrawn at the site's third node, fired again 650 s after the site let go,
    # resolved after its own cap's end)
    assert [s[0] for s in story] == ["firing", "resolved", "firing", "resolved"], story
    assert 600.0 <= _rel(alerts[2]) - 200.0 <= 900.0, story


# -- revC33: therm33's heat hold left a node's other slow ranks to an unknown escalation -------


def test_a_node_slow_as_one_behind_its_first_throttling_gpu_is_one_thermal_page() -> None:
    """blind16 fleet-s1's CDU-hot node: its 8 ranks slow alike behind GPU 7 (its node's
    ranks wait on it), GPU 7 throttling (0x20) beside warm mates.  therm33 held GPU 7's rank
    for its mates' heat; its mates' ranks, no heat of their own, went to a node escalation
    slow_node/unknown a few seconds in (9dfb88e; the thermal page 39.7 s later superseding
    it -- the first catch's cause wrong).  Held as long as GPU 7's rank: one page, thermal."""
    from detector.engine import Engine
    from tests.test_therm33 import cooling, firing
    events = cooling({7: 6}, polls=14)
    lead = {e.step: e.compute_ms for e in events if getattr(e, "rank", None) == 7
            and getattr(e, "compute_ms", None) is not None}
    tied = [e.__class__(**{**{f: getattr(e, f) for f in e.__struct_fields__},
                           "compute_ms": lead[e.step]})
            if getattr(e, "rank", None) in range(7) and getattr(e, "compute_ms", None)
            else e for e in events]
    got = firing(feed(Engine(), tied))
    assert got and got[0][1:3] == ("slow_node", "thermal"), got
    assert [g for g in got if g[2] == "unknown"] == [], got


# -- untrusted findings: a forged throttling_since (the findings topic crosses Kafka) ----------


@pytest.mark.parametrize("since", [T0 + 2.5e9, "x", float("nan"), -1e18, None],
                         ids=["year-2100", "string", "nan", "far-past", "none"])
def test_a_forged_throttling_since_holds_no_longer_than_from_its_sample(since: object) -> None:
    """therm33's heat hold reads ``throttling_since`` off a GPU's ``throttle_seen``: a value
    that is no time, or one after the sample, counts from the sample itself (a year-2100 one
    would otherwise hold the rank for ever); one far in the past holds nothing.  Paged at the
    GPU, thermal, within the hold from the sample, and nothing raises."""
    from detector.alerts import Scope
    from detector.correlate import Correlator
    from detector.findings import Finding
    from detector.thresholds import Thresholds
    gpu = Scope.of_gpu("node-000", 3)
    seen = Finding(T0, T0, "throttle_seen", "slow_node", "thermal", gpu, True, False, 0.6,
                   {"throttle_reasons": "0x20", "clock_drop": 0.12, "gpu_temp_c": 88.0,
                    "node_warm": True, "throttling_since": since}, None, None, None)
    slow = Finding(T0 + 5.0, T0 - 10.0, "slow_rank", "slow_node", "unknown", gpu, True, False,
                   0.6, {"step": 100, "rank": 3, "compute_ratio_to_peers": 1.14,
                         "mean_ratio_over_run": 1.13, "run_steps": 11,
                         "clearly_slow_since": T0 - 5.0}, job="job-1", rank=3, dp_rank=3)
    c, out = Correlator(Thresholds()), []
    c.on_finding(seen, out)
    c.fire_due(T0 + 5.0, out)
    c.on_finding(slow, out)
    for t in range(6, 200):
        c.fire_due(T0 + t, out)
    fired = [a for a in out if a.status == "firing"]
    assert fired and fired[0].cause == "thermal" and fired[0].scope.key == gpu.key, fired
    assert fired[0].detected_ts - T0 <= Thresholds().impact_onset_s + 60.0, fired[0].detected_ts
