"""esc42 (round 42, issue 10): one page per episode -- a second page only for a second fault.

esc41 made a quiet slow page's return on another part of the step (its host path late where it
was paged for compute, or the reverse) another fault: the page resolves ("ended_before") and the
new run is paged.  A run on the other part that began while the page's own run was still on is
the same episode, only told later (a host share's verdict waits minutes for its evidence): paged
anew, the pager sees the key resolve and fire again -- a human paged twice for one fault
(blind14 pipe-s0..s2, a cron on the node).  What the pager sees is counted here, message by
message, not only the score (DESIGN's rule does not count a re-fire).
"""

from __future__ import annotations

import functools

from bench.blind14 import score
from tests import blindcases as bc
from tests.test_esc41 import _job, _messages

_CASE = "N9-cron-straggler-paged-twice"


@functools.cache
def _case() -> dict:
    return bc.cli_scorer(bc.cases_of("blind14"), score, with_alerts=True)(_CASE)


def _pager(alerts: list, key: str) -> list[str]:
    """The statuses a pager de-duplicating by ``key`` receives, in order."""
    return [a["status"] for _, a in alerts if a["dedup_key"] == key]


def test_a_cron_paged_for_compute_is_not_paged_again_for_its_host_share() -> None:
    # (fails before: firing at 186 s, resolved "ended_before" and firing again at 799 s --
    # the host_share run's onset 0.1 s after the compute run's, told while the page was quiet)
    sc = _case()
    assert bc.every_fault_caught(sc), sc["faults"]
    assert _pager(sc["alerts"], "fl:esc:slow_node:node:hx01") == ["firing"], [
        (a["status"], a["detected_ts"], a["evidence"].get("ended_before"))
        for _, a in sc["alerts"]]


def test_a_host_run_begun_beside_the_compute_run_joins_its_page() -> None:
    # (fails before: node-001 slow in compute over steps 100-130, its host late from step
    # 105 -- told ~235 s later, the compute page quiet since ~135 s: resolved and paged anew)
    got = _messages(_job(range(100, 130), range(105, 520)))
    assert [(s, sig) for s, _, sig, _ in got] == [("firing", "slow_rank")], got


def test_guard_a_host_run_begun_after_the_page_went_quiet_is_still_another_fault() -> None:
    # (esc41's rule kept: the host run from step 200, the compute page quiet since ~135 s)
    got = _messages(_job(range(100, 130), range(200, 520)))
    assert [(s, sig) for s, _, sig, _ in got] == [
        ("firing", "slow_rank"), ("resolved", "slow_rank"), ("firing", "host_late")], got
