"""One path for a node lost under its job (issue 14; detector.liveness, path23).

The replay's source judged a node lost in seconds itself (``_fast``, from the steps it sees)
and the service's correlator judged the ``quiet`` findings of its step-blind partitions
(dark20): two mechanisms.  The service paged a part of the fleet going dark under a job in
pieces -- the correlator flushed the first node judged at once, the others joined the page
after it was sent, and a node of the part with no job of its own was never judged fast.  Now
every source tells ``quiet`` and the correlator judges a part's dark nodes together, waiting
at most FAST_WAIT_S for those its sources named but not quiet long enough yet: the replay and
the service page alike.
"""

from __future__ import annotations

import pytest

from detector import liveness
from detector.alerts import Alert, Scope
from detector.correlate import Correlator
from detector.findings import Finding
from detector.thresholds import Thresholds
from replay.runner import replay_log
from tests.test_liveness import T0, TIER_NODES, TIERS, fleet, silent_pages, write
from tests.test_service_stages import InMemoryCluster
from tests.test_silent19 import by_ts, steps

AFTER_S = 150.0  # fake wall seconds after the input (tests/test_dark20.py)


def pages(alerts: list[Alert]) -> list[tuple[str, str, list[str]]]:
    """(status, scope, dark nodes as sent) of the silent pages."""
    return [(a.status, a.scope.key, sorted(a.evidence.get("dark_nodes") or []))
            for a in silent_pages(alerts)]


def both(log, seed: int = 1) -> tuple[list[Alert], list[Alert]]:
    """The replay's alerts and the split stages' (in memory), both with the tiers."""
    svc = InMemoryCluster(log, seed=seed, topology=TIERS)
    svc.run(seconds_after_input=AFTER_S)
    return replay_log(log, topology=TIERS).alerts, svc.alerts


@pytest.mark.parametrize("part, dark", [("leaf4", range(16, 20)), ("spine0", range(16))])
def test_a_part_going_dark_under_a_job_is_one_page_listing_it_in_the_service_too(
        tmp_path, part, dark):
    """Every node under a switch stops at 400 s with the job on them: one page at the switch
    listing every one of its nodes when it is sent, in the replay and in the split stages
    alike, within 45 s (before: the service's page listed the first node judged only)."""
    down = {f"node-{n:03d}": (400.0, 1e9) for n in dark}
    replayed, served = both(write(tmp_path, fleet(seconds=800, dead=down, nodes=TIER_NODES)))
    want = [("firing", f"switch:{part}", sorted(down))]
    assert pages(replayed) == want
    assert pages(served) == want
    for a in (silent_pages(replayed)[0], silent_pages(served)[0]):
        assert a.detected_ts - (T0 + 400) <= 45
        assert "stopped stepping with it" in a.evidence["recommended_because"]


def test_a_node_of_the_part_with_no_job_of_its_own_joins_its_page(tmp_path):
    """leaf4's four nodes go dark at 400 s; the job runs on all but node-019 (idle): the
    node that went dark with the lost ones is judged with them, job or not -- in the service
    too, where it was never judged fast (its correlator judged only nodes that lost a job)."""
    down = {f"node-{n:03d}": (400.0, 1e9) for n in range(16, 20)}
    recs = fleet(seconds=800, dead=down, nodes=TIER_NODES, job=False)
    recs += steps("job-1", [n for n in TIER_NODES if n != "node-019"], 0, 400)  # (stalls)
    replayed, served = both(write(tmp_path, by_ts(recs)))
    want = [("firing", "switch:leaf4", sorted(down))]
    assert pages(replayed) == want
    assert pages(served) == want


def test_a_node_judged_with_its_part_and_heard_again_before_the_page_is_left_out(tmp_path):
    """leaf4's node-016..018 die at 400 s under the job; node-019's collectors all pause
    from 390 s to 425 s.  Quiet first as its job stops, node-019 is judged lost at ~419 s
    and waits for the others of its part (going dark with it) instead of being paged alone;
    heard again before they are judged, it is left out of the part's one page (the replay;
    the service hears it back a scan later and lists it until it does)."""
    down = {f"node-{n:03d}": (400.0, 1e9) for n in range(16, 19)}
    recs = fleet(seconds=800, dead=down, nodes=TIER_NODES,
                 quiet={"node-019": (390.0, 425.0, ("thermal", "ecc", "nic"))})
    replayed, served = both(write(tmp_path, recs))
    assert pages(replayed) == [("firing", "switch:leaf4", sorted(down))]
    [(status, scope, listed)] = pages(served)
    assert (status, scope) == ("firing", "switch:leaf4") and set(down) <= set(listed)


def _quiet(node: str, ts: float, named: list[str], late: float = 0.0) -> Finding:
    """A source's word that ``node`` (last record at 400 s, thermal every 10 s) is quiet at
    ``ts`` (``late`` s more past its bound: told late in its window), naming the nodes it
    saw go dark with it."""
    ev = {"quiet": "thermal", "last_ts": T0 + 400, "interval_s": 10.0, "bound_s": 20.0,
          "quiet_s": ts - 400.0 + late, "nodes_heard_since": 5}
    if named:
        ev["dark_with"] = named
    return Finding(T0 + ts, T0 + 400, "silent", "unattributed", "unknown",
                   Scope.of_node(node), True, False, 0.9, ev)


DARK = ["node-016", "node-017", "node-018"]


def _leaf4_judged(late: float = 0.0) -> tuple[Correlator, list[Alert]]:
    """The correlator alone: job-1 on node-016..018 and node-000 (busy) stops as leaf4's
    three go quiet (told at 422 s), their source naming node-019 with them, never told."""
    corr = Correlator(Thresholds(), TIERS)
    out: list[Alert] = []
    corr.on_finding(Finding(T0, T0, "job_layout", "slow_node", "unknown",
                            Scope.of_job("job-1"), True, False, 0.0, {"placement": [
                                [k, n, 0, k] for k, n in enumerate([*DARK, "node-000"])]},
                            "job-1"), out)
    corr.on_finding(Finding(T0, T0, "gpus_busy", "slow_node", "power",
                            Scope.of_node("node-000"), True, False, 0.0, {"idle_gpus": []}),
                    out)
    for n in DARK:
        corr.on_finding(_quiet(n, 422.0, [m for m in DARK if m != n] + ["node-019"], late),
                        out)
    corr.on_finding(Finding(T0 + 422, T0 + 399, "silent", "unattributed", "unknown",
                            Scope.of_job("job-1"), True, False, 0.0,
                            {"last_step_ts": T0 + 399, "step_period_s": 2.0}, "job-1"), out)
    return corr, out


def _paged(out: list[Alert]) -> list[tuple[str, float, list[str]]]:
    return [(a.scope.key, a.detected_ts - T0, sorted(a.evidence["dark_nodes"])) for a in out]


@pytest.mark.parametrize("still_named, paged_at", [(True, 443.0), (False, 432.0)])
def test_a_part_waits_for_a_node_named_with_it_until_it_is_not_or_fast_wait_s(
        still_named, paged_at):
    """Judged at 422 s, the part waits for node-019: paged once a re-tell no longer names
    it (432 s), else when a re-tell comes FAST_WAIT_S after the judgement (443 s) -- one page
    at leaf4, not three node pages and not the 240 s path."""
    corr, out = _leaf4_judged()
    assert out == [] and all(liveness._WAIT in corr._silent[n] for n in DARK)
    for ts in (432.0, 443.0):
        for n in DARK:
            corr.on_finding(_quiet(n, ts, [m for m in DARK if m != n]
                                   + (["node-019"] if still_named else [])), out)
        if ts < paged_at:
            assert out == []
    assert _paged(out) == [("switch:leaf4", paged_at, DARK)]


def test_a_part_judged_at_the_end_of_its_quiet_window_waits_for_nobody():
    """Judged when no re-tell is to come (told 55 s past the fast bound: the window ends at
    60), the part is paged at once, not left to the 240 s path's confirm."""
    _, out = _leaf4_judged(late=53.0)
    assert _paged(out) == [("switch:leaf4", 422.0, DARK)]
