"""b13fix (round 22): a rank hung in its job, its peers spinning in the collective, is named
(detector.hang; blind13 M1: nothing paged for 216 s until NCCL's watchdog)."""

from __future__ import annotations

from detector.alerts import ESCALATION, ISOLATION, Scope
from detector.findings import Finding
from detector.hang import hang_s
from detector.liveness import stop_s
from detector.pipeline.correlator import CorrelatorPartition
from detector.testing import T0

# -- M1: a rank hung in its job (detector.hang) --------------------------------------------

def _hung(idle: dict[str, list[int]], *, kill: bool = False, isolated: str = "",
          reused: bool = False, period: float = 2.0) -> list:
    """A 16-rank job on node-a/node-b (8 GPUs each) steps every 2 s to T0 + 100, then stops;
    from then the nodes' GPUs ``idle`` (node -> its idle GPUs; a node absent: all idle) --
    the alerts of a correlator told so (as the sources tell it: job_layout, gpus_busy, the
    job's stop, its silence hang_s), advanced to T0 + 2000 (``kill``: every GPU idle at
    T0 + 250, the watchdog's kill; ``isolated``: node-a/1 isolated of that kind first;
    ``reused``: job-1 ended and job-2 took its GPUs but node-a/1 at T0 + 103)."""
    corr = CorrelatorPartition(0).correlator
    corr.seen = lambda node, topic: True  # (both nodes' thermal telemetry heard)
    out: list = []
    nodes = ("node-a", "node-b")
    layout = [[8 * i + g, n, g, 8 * i + g] for i, n in enumerate(nodes) for g in range(8)]
    job = Scope.of_job("job-1")
    corr.on_finding(Finding(T0, T0, "job_layout", "slow_node", "unknown", job, True, False,
                            0.0, {"placement": layout}, "job-1"), out)

    def busy(ts: float, node: str, idle_gpus: list[int] | None) -> None:
        corr.on_finding(Finding(ts, ts, "gpus_busy", "slow_node", "power", Scope.of_node(node),
                                idle_gpus is not None, False, 0.0,
                                {} if idle_gpus is None else {"idle_gpus": idle_gpus}), out)

    for n in nodes:
        busy(T0, n, [])
    last = T0 + 100.0
    if reused:  # (a pool: the next job laid out on the GPUs the ended one left)
        again = [r for r in layout if (r[1], r[2]) != ("node-a", 1)]
        corr.on_finding(Finding(last + 3, last + 3, "job_layout", "slow_node", "unknown",
                                Scope.of_job("job-2"), True, False, 0.0,
                                {"placement": again}, "job-2"), out)
    for n in nodes:
        if n in idle and len(idle[n]) == 8:
            busy(last + 5, n, None)
        else:
            busy(last + 5, n, idle.get(n, list(range(8))))
    if isolated:
        g = Finding(last, last, "x", isolated, "unknown", Scope.of_gpu("node-a", 1), True, True,
                    0.9, {})
        corr._raise(ISOLATION, isolated, "unknown", g.scope, g, [])
    for t, ev in ((last + stop_s(2.0), {}), (last + hang_s(2.0), {"hang_s": hang_s(2.0)})):
        # (the job's stop, then its source's word that it is silent hang_s: liveness._stops)
        corr.on_finding(Finding(t, last, "silent", "unattributed", "unknown", job, True, False,
                                0.0, {"last_step_ts": last, "step_period_s": period, **ev},
                                "job-1"), out)
    corr.advance(T0 + 200, out)
    if kill:
        for n in nodes:
            busy(T0 + 250, n, None)
    corr.advance(T0 + 2000, out)
    return out


def _pages(out: list) -> list[tuple[str, str, str]]:
    return [(a.status, a.kind, a.scope.key) for a in out]


def test_a_rank_hung_while_its_peers_spin_is_escalated_at_its_gpu() -> None:
    # node-a/1 idles (the rank hung outside the collective), its 15 peers spin: named once
    # the job has been silent hang_s (60 s, 20 of its 2 s steps), long before the watchdog.
    out = _hung({"node-a": [1], "node-b": []})
    assert _pages(out) == [("firing", "unattributed", "gpu:node-a/1")]
    a = out[0]
    assert a.topic == ESCALATION
    assert a.detected_ts == T0 + 100.0 + hang_s(2.0)
    assert a.evidence["idle_gpus"] == {"node-a": [1]} and a.evidence["job_gpus_busy"] == 15
    # Two idle on one node: the node.
    assert _pages(_hung({"node-a": [1, 5], "node-b": []})) == [
        ("firing", "unattributed", "node:node-a")]
    # A GPU isolated for its pace first (blind13 grow-s2) hangs: still news; one whose
    # hardware is isolated (a DBE's XID killed the rank): that isolation is the cause.
    assert _pages(_hung({"node-a": [1], "node-b": []}, isolated="slow_node")) == [
        ("firing", "unattributed", "gpu:node-a/1")]
    assert _pages(_hung({"node-a": [1], "node-b": []}, isolated="hardware")) == []
    # The watchdog kills the job (every GPU idle): resolved.
    assert _pages(_hung({"node-a": [1], "node-b": []}, kill=True)) == [
        ("firing", "unattributed", "gpu:node-a/1"), ("resolved", "unattributed", "gpu:node-a/1")]


def test_control_a_job_stopped_on_purpose_or_paused_whole_pages_nobody() -> None:
    # Every GPU idle together (the job stopped, or ended): nobody.
    assert _pages(_hung({"node-a": list(range(8)), "node-b": list(range(8))})) == []
    # Every GPU busy without steps (a checkpoint, an evaluation; a hang inside the
    # collective): nobody -- no one place to name.
    assert _pages(_hung({"node-a": [], "node-b": []})) == []
    # Idle GPUs on both nodes: no one place.
    assert _pages(_hung({"node-a": [1], "node-b": [2]})) == []


def test_a_job_silent_long_is_told_once_by_its_source_and_not_after_it_steps_again() -> None:
    # liveness._stops: the stop at stop_s, the hang's look at hang_s -- each once; a job
    # that stepped again before hang_s is never told (blind13 lake: 35-42 s stalls of every
    # job at once, a shared filesystem's, are no hang).
    from detector import liveness
    from detector.monitors import Monitors
    from detector.testing import step
    for resume in (False, True):
        mon = Monitors()
        told: list = []
        for k in range(50):
            for r in range(2):
                mon.process(step(T0 + 2.0 * k, r, k, step_ms=2000.0), told)
        for c in range(100, 400, 10):
            if resume and c == 140:
                for r in range(2):
                    mon.process(step(T0 + 138.0, r, 50, step_ms=2000.0), told)
            mon.clock = max(mon.clock, T0 + c)
            liveness._stops(mon, told)
        hang = [f for f in told if f.signal == "silent" and "hang_s" in f.evidence
                and f.evidence["last_step_ts"] == T0 + 98.0]  # (the stop after step 49)
        stops = [f for f in told if f.signal == "silent" and "hang_s" not in f.evidence]
        assert len(hang) == (0 if resume else 1) and len(stops) >= 1, (resume, told)
        if not resume:
            assert hang[0].ts - hang[0].evidence["last_step_ts"] >= hang_s(2.0)


def test_a_job_that_ended_and_whose_gpus_the_next_job_took_is_no_hang() -> None:
    # A pool (blind12 pool: ~100 jobs in 15 min): job-1 ends, job-2 is laid out on 15 of its
    # 16 GPUs and spins them; job-1's silence with "15 busy, node-a/1 idle" is job-2's work,
    # not job-1's ranks waiting in a collective (16 false escalations on blind12 tune).
    assert _pages(_hung({"node-a": [1], "node-b": []}, reused=True)) == []


def test_a_job_whose_pace_was_never_measured_is_no_hang() -> None:
    # blind12 pool-s6: sweep-6065 ran a few steps (step period not measured: 0.0) and ended;
    # 3 of its 4 GPUs busy 65 s later is someone else's work -- no cadence was broken.
    assert _pages(_hung({"node-a": [1], "node-b": []}, period=0.0)) == []
