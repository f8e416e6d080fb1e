"""A node that dies while its collector holds its rows (live26; live25's open double fault).

A node's collector holds its thermal / ECC / NIC rows for minutes and sends them at once
(blind15 O4's shape) while its ranks step: live25 holds its dark judgement while a job with
ranks on it steps well past its newest row (detector.liveness._stepping).  If the node loses
power during such a hold, the held rows die with it: its newest row stays minutes older than
its death, its job stalls with it (its ranks elsewhere spin in the collective) and stops --
and the stop's last step, well past the row, held the judgement for good: nothing paged.
Now a job lost with the node (liveness._lost: stopped everywhere, its GPUs on the other
nodes busy) proves the node alive only up to its last step -- the node's last sign of life --
and the node is judged: paged within the dark-node bound of that step (here ~40 s).  A job
that simply ended (its GPUs idle) keeps the hold, as before.
"""

from __future__ import annotations

from detector.engine import Engine
from detector.testing import feed
from replay.runner import replay_log
from tests.test_dark20 import DEAD, pages_of, service
from tests.test_liveness import T0, firing, fleet, silent_pages, write


def dies_in_hold(node: str, start: float, death: float, *, seconds: float = 1300.0,
                 job_end: float | None = None) -> list[dict]:
    """A fleet whose ``node``'s collector holds its rows from ``start`` and dies with them at
    ``death`` (nothing of it from there); its ranks step until then.  ``job_end``: the job
    ends there instead (every GPU idle after it, no step) and the node lives on, its held rows
    sent at ``death`` -- the collector's hold, no death."""
    if job_end is None:
        recs = fleet(seconds=seconds, dead={node: (death, 1e9)})
        return [r for r in recs if not (r["topic"] != "telemetry.step"
                                        and r["value"]["node"] == node
                                        and start <= r["value"]["ts"] - T0 < death)]
    recs = [r for r in fleet(seconds=seconds, idle=(job_end, 1e9))
            if r["topic"] != "telemetry.step" or r["value"]["ts"] - T0 < job_end]
    held = [r for r in recs if r["topic"] != "telemetry.step" and r["value"]["node"] == node
            and start <= r["value"]["ts"] - T0 < death]
    ids = {id(r) for r in held}
    out = [r for r in recs if id(r) not in ids]
    at = next(i for i, r in enumerate(out) if r["value"]["ts"] >= T0 + death + 2.0)
    return out[:at] + held + out[at:]


def test_a_node_dying_while_its_collector_holds_its_rows_is_paged(tmp_path):
    """node-003's rows from 400 s are held; it dies at 600 s, its job stalls with it: paged
    within 60 s of its death (its newest row 200 s older).  main: no page at all."""
    pages = silent_pages(replay_log(write(tmp_path, dies_in_hold("node-003", 400.0, 600.0)))
                         .alerts)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", "node:node-003")]
    assert 0 < pages[0].detected_ts - (T0 + 600) <= 60


def test_the_service_pages_a_node_dying_while_its_collector_holds_its_rows(tmp_path):
    """The same in the service (its telemetry partitions see no steps: the job's stop and
    layout, the busy GPUs of its other nodes)."""
    svc = service(write(tmp_path, dies_in_hold(DEAD, 300.0, 500.0, seconds=900.0)))
    assert pages_of(svc.alerts) == [("firing", f"node:{DEAD}")]
    assert 0 < silent_pages(svc.alerts)[0].detected_ts - (T0 + 500) <= 60


def test_a_job_ending_while_a_collector_holds_its_rows_pages_nobody(tmp_path):
    """Control: node-003's rows of 300-700 s are held and sent at 702 s; its job ends at 560 s
    (every GPU idle after): the node lives, its job was not lost with it -- no page."""
    recs = dies_in_hold("node-003", 300.0, 700.0, seconds=1000.0, job_end=560.0)
    assert firing(replay_log(write(tmp_path, recs)).alerts) == []


def test_a_slow_gpu_under_routing_that_started_late_is_found_alone() -> None:
    """review25's late-routed MoE job (routing from step 250 after a calm), rank 42's GPU
    (node-005) 1.18x slower from step 450: its node paged 3 steps in, no other (main: every
    node paged from step 254 on; the twins learnt in the calm would name experts that do not
    move together)."""
    from tests.test_moe18 import pages
    from tests.test_review25 import _late_routed_job
    for seed in range(2):
        got = pages(feed(Engine(), _late_routed_job(steps=520, seed=seed, route_from=250,
                                                    slow_rank=42, slow_from=450)))
        assert [u for u, _ in got] == ["node:node-005"] and 450 < got[0][1] < 470, (seed, got)
