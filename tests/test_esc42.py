"""esc42 (round 42, issue 10): one page per episode -- a second page only for a second fault.

esc41 made a quiet slow page's return on another part of the step (its host path late where it
was paged for compute, or the reverse) another fault: the page resolves ("ended_before") and the
new run is paged.  A run on the other part that began while the page's own run was still on is
the same episode, only told later (a host share's verdict waits minutes for its evidence): paged
anew, the pager sees the key resolve and fire again -- a human paged twice for one fault
(blind14 pipe-s0..s2, a cron on the node).  What the pager sees is counted here, message by
message, not only the score (DESIGN's rule does not count a re-fire).

A GPU's own slow page, quiet, whose rank is found slow again with one mate beside it is that
page's return, the mate named in it -- not a node page under a second key (blind30 held
canary-s7: node c-12 escalated at its job's cold restart, a mate's 4-step noise run beside its
paged GPU 1; correlate.problems._gpu_page_returns).
"""

from __future__ import annotations

import functools

import numpy as np

from bench.blind14 import score
from detector.engine import Engine
from detector.testing import T0, feed, step
from tests import blindcases as bc
from tests.test_esc41 import GPN, NODES, _job, _messages

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


# -- a quiet GPU page's return beside one mate (blind30 held canary-s7, case F5) -----------------

def _dp_job(mult, steps: int = 600, seed: int = 0) -> list:
    """Pure data parallelism, 4 nodes x 4 GPUs, 1 s steps; rank (node, gpu)'s compute at step s
    x ``mult(node, gpu, s)`` over 1.5 % noise."""
    rng = np.random.default_rng(seed)
    ranks = NODES * GPN
    ev = []
    for s in range(steps):
        c = 700.0 * rng.lognormal(0.0, 0.015, ranks)
        for r in range(ranks):
            c[r] *= mult(r // GPN, r % GPN, s)
        top = float(c.max())
        for r in range(ranks):
            ev.append(step(T0 + s + 0.001 * r, r, s, node=f"node-{r // GPN:03d}", gpu=r % GPN,
                           step_ms=round(top + 180.0, 2), compute_ms=round(float(c[r]), 2),
                           comm_ms=round(top - float(c[r]) + 120.0, 2), dp=r))
    return ev


def _pages(events) -> list[tuple[str, str, list | None]]:
    return [(a.status, a.scope.key, a.evidence.get("units_found_slow"))
            for a in feed(Engine(), events) if a.kind == "slow_node"]


def test_a_paged_gpu_slow_again_beside_a_mates_blip_is_its_pages_return() -> None:
    # (fails before: node-001 escalated at 406 s beside GPU 1's quiet page of 106 s, then
    # narrowed back to it at 425 s -- a second key paged for GPU 1's one fault)
    got = _pages(_dp_job(lambda n, g, s: 1.15 if (n, g) == (1, 1) and (
        100 <= s < 250 or s >= 400) else 1.07 if (n, g) == (1, 3) and 400 <= s < 405 else 1.0))
    assert got == [("firing", "gpu:node-001/1", None),
                   ("firing", "gpu:node-001/1", ["gpu:node-001/3"])], got


def test_guard_a_paged_gpus_node_slow_as_a_whole_is_still_the_nodes_page() -> None:
    # (every rank of node-001 x1.15 from 400 s, GPU 1's page quiet since ~255 s: the node)
    got = _pages(_dp_job(lambda n, g, s: 1.15 if n == 1 and (
        (g == 1 and 100 <= s < 250) or s >= 400) else 1.0))
    assert ("firing", "node:node-001", None) in got, got
