"""b13fix (round 22): a rank hung in its job, its peers spinning in the collective, is named
(detector.hang; blind13 M1: nothing paged for 216 s until NCCL's watchdog)."""

from __future__ import annotations

import math

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
    # liveness._stops: the stop at stop_s once, the hang's look at every hang_s of silence
    # (hang23: a look too early for the peers' wait is made again), each once; a job that
    # stepped again before hang_s is never told (blind13 lake: 35-42 s stalls of every job
    # at once, a shared filesystem's, are no hang).
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
        # (silent to T0 + 390: looks at 60, 120, 180 and 240 s of silence, one scan late)
        looks = [(f.ts - f.evidence["last_step_ts"]) // hang_s(2.0) for f in hang]
        assert looks == ([] if resume else [1, 2, 3, 4]) and len(stops) >= 1, (resume, told)


def test_a_job_that_ended_and_whose_gpus_the_next_job_took_is_no_hang() -> None:
    # A pool (blind12 pool: ~100 jobs in 15 min): job-1 ends, job-2 is laid out on 15 of its
    # 16 GPUs and spins them; job-1's silence with "15 busy, node-a/1 idle" is job-2's work,
    # not job-1's ranks waiting in a collective (16 false escalations on blind12 tune).
    assert _pages(_hung({"node-a": [1], "node-b": []}, reused=True)) == []


def test_a_job_whose_pace_was_never_measured_is_no_hang() -> None:
    # blind12 pool-s6: sweep-6065 ran a few steps (step period not measured: 0.0) and ended;
    # 3 of its 4 GPUs busy 65 s later is someone else's work -- no cadence was broken.
    assert _pages(_hung({"node-a": [1], "node-b": []}, period=0.0)) == []


# -- hang23 (round 23): what a hang is, against a pool's next job and a paused job ----------

_NODES = ("node-a", "node-b")


def _job(ranks: dict[int, tuple[str, int]] | None = None) -> tuple:
    """A correlator that heard job-1's layout (16 ranks on node-a/node-b, rank r on GPU r % 8
    of node r // 8, unless ``ranks``), both nodes' 10 s thermal cadence and every GPU busy
    (T0); its alerts list."""
    corr = CorrelatorPartition(0).correlator
    corr.seen = lambda node, topic: True
    out: list = []
    where = ranks or {r: (_NODES[r // 8], r % 8) for r in range(16)}
    corr.on_finding(Finding(T0, T0, "job_layout", "slow_node", "unknown", Scope.of_job("job-1"),
                            True, False, 0.0, {"placement": [[r, n, g, r] for r, (n, g)
                                                             in where.items()]}, "job-1"), out)
    for n in _NODES:
        corr.on_finding(Finding(T0, T0, "sampling", "slow_node", "thermal", Scope.of_node(n),
                                True, False, 0.0, {"sample_interval_s": 10.0}), out)
        _busy(corr, out, T0, n, [])
    return corr, out


def _busy(corr, out: list, ts: float, node: str, idle: list[int] | None) -> None:
    """``node``'s GPUs told (detector.thermal's gpus_busy): ``idle`` idle, the rest busy;
    None: every GPU idle."""
    corr.on_finding(Finding(ts, ts, "gpus_busy", "slow_node", "power", Scope.of_node(node),
                            idle is not None, False, 0.0,
                            {} if idle is None else {"idle_gpus": idle}), out)


def _looks(corr, out: list, last: float, until: float, period: float = 2.0) -> None:
    """job-1's source: silent since ``last``, a look every hang_s (liveness._stops) to
    ``until``; then the correlator advanced to ``until``."""
    k = 1
    while last + k * hang_s(period) <= until:
        t = last + k * hang_s(period)
        corr.advance(t, out)
        corr.on_finding(Finding(t, last, "silent", "unattributed", "unknown",
                                Scope.of_job("job-1"), True, False, 0.0,
                                {"last_step_ts": last, "step_period_s": period,
                                 "hang_s": hang_s(period)}, "job-1"), out)
        k += 1
    corr.advance(until, out)


def test_a_silent_job_is_looked_at_every_hang_s_to_look_s_and_a_job_of_long_steps_once():
    from detector.hang import LOOK_S, look_due
    assert [k for k in range(1, 20) if look_due(2.0, 60.0 * k - 10, 60.0 * k + 5)] == list(
        range(1, int(LOOK_S // 60) + 1))
    assert not look_due(2.0, 0.0, 59.0) and look_due(2.0, -math.inf, 125.0)
    # 90 s steps: hang_s 1800 s, beyond LOOK_S -- still one look.
    assert look_due(90.0, 1790.0, 1801.0) and not look_due(90.0, 1801.0, 3700.0)


def test_a_job_that_ended_and_whose_gpus_the_next_job_wakes_before_its_layout_is_no_hang():
    # blind8 held scale-1k-s7 (ft-4d18d1, a TP2xDP2 job of the pool, 0.7 s steps): it ends
    # (its GPUs idle 10 s later), 60 s on the next job starts on them: the look at 68 s of
    # silence caught three of them sampled busy before the fourth, the next job's layout
    # told only with its first step, 4.5 s later.  A hung job's peers spin from its last
    # step on; GPUs idle after it and busy again were let go and taken (and by the next
    # looks the next job's layout is told, or, not told, they still woke after it).
    for told in (True, False):
        corr, out = _job()
        last = T0 + 100.0
        for n in _NODES:
            _busy(corr, out, last + 8, n, None)     # (the job ended: every GPU idle)
        _busy(corr, out, last + 59.5, "node-a", [1])  # (the next job: 15 busy, node-a/1 not
        _busy(corr, out, last + 59.6, "node-b", [])   # yet sampled)
        _looks(corr, out, last, last + 61.0)
        assert out == []
        _busy(corr, out, last + 62.0, "node-a", [])
        if told:  # (its first step: the layout)
            corr.on_finding(Finding(last + 64, last + 64, "job_layout", "slow_node", "unknown",
                                    Scope.of_job("job-2"), True, False, 0.0,
                                    {"placement": [[r, _NODES[r // 8], r % 8, r]
                                                   for r in range(16)]}, "job-2"), out)
        _looks(corr, out, last, last + 900.0)
        assert out == []


def test_gpus_idle_after_the_last_step_then_busy_are_not_its_peers_at_any_look() -> None:
    # Every GPU of job-1 idle after its last step, 15 busy again 45 s on, node-a/1 idle: work
    # no step source tells (a burn-in, an un-instrumented job) or a whole-job pause and a
    # hang in the first step after it -- nothing says those GPUs are its ranks': no page at
    # any look (the looks go on to LOOK_S).
    corr, out = _job()
    last = T0 + 100.0
    for n in _NODES:
        _busy(corr, out, last + 5, n, None)
    _busy(corr, out, last + 45, "node-a", [1])
    _busy(corr, out, last + 45, "node-b", [])
    _looks(corr, out, last, last + 900.0)
    assert out == []


def test_a_peer_sampled_idle_between_steps_is_still_a_peer() -> None:
    # A peer's GPU sampled idle in the gap after the last step (its loader's turn) and busy
    # at its next sample: within a step and a sample (WOKE_SAMPLES) -- a spinning peer.
    corr, out = _job()
    last = T0 + 100.0
    _busy(corr, out, last + 0.3, "node-b", [4])
    _busy(corr, out, last + 1.0, "node-a", [1])
    _busy(corr, out, last + 10.3, "node-b", [])
    _looks(corr, out, last, last + 61.0)
    assert _pages(out) == [("firing", "unattributed", "gpu:node-a/1")]
    # ... and a later look does not page it again.
    _looks(corr, out, last, last + 300.0)
    assert len(out) == 1


def test_rank_0_idle_alone_is_named_after_a_checkpoint_s_length_not_at_hang_s() -> None:
    # Rank 0 writing a checkpoint alone (torch.save under `if rank == 0`) holds every other
    # rank in a barrier -- their GPUs spinning, its own idle -- for as long as the write:
    # minutes on slow storage.  Rank 0 idle alone is named at CKPT_S (5 min: half the NCCL
    # watchdog's default 10), its text naming the checkpoint; a write that ends sooner
    # (the job steps again: its source tells no more looks) pages nobody.
    from detector.hang import CKPT_S
    corr, out = _job()
    last = T0 + 100.0
    _busy(corr, out, last + 1.0, "node-a", [0])
    _looks(corr, out, last, last + CKPT_S - 1.0)
    assert out == []
    _looks(corr, out, last, last + CKPT_S + 1.0)
    assert _pages(out) == [("firing", "unattributed", "gpu:node-a/0")]
    assert out[0].detected_ts == last + CKPT_S
    assert "checkpoint" in out[0].evidence["recommended_because"]
    # Any other rank idle alone: named at hang_s as before (test above); rank 0 idle with
    # another GPU of its node: no checkpoint shape -- at hang_s.
    corr, out = _job()
    _busy(corr, out, last + 1.0, "node-a", [0, 3])
    _looks(corr, out, last, last + 61.0)
    assert _pages(out) == [("firing", "unattributed", "node:node-a")]


def test_which_job_a_gpu_was_laid_out_for_last_is_by_the_layouts_time() -> None:
    # Placement.last_on: a layout told late (a lagging partition, a source telling it
    # again) does not make an ended job the newest on its GPUs.
    from detector.recovery import Placement
    lay = Placement()
    lay.learn("new", [[0, "n", 1, 0]], 200.0)
    lay.learn("old", [[0, "n", 1, 0]], 100.0)   # (told after, laid out before)
    assert lay.last_on("n", 1) == "new"
    lay.learn("old", [[0, "n", 1, 0]], 250.0)   # (told again where it was: its first time)
    assert lay.last_on("n", 1) == "new" and lay.since[("old", 0)] == 100.0
    lay.learn("new", [[0, "n", 2, 0]], 400.0)   # (moved: laid out anew)
    assert lay.last_on("n", 2) == "new" and lay.last_on("n", 1) == "old"
    # A snapshot keeps it (detector.statecodec: the times, and the order learned).
    from detector.statecodec import decode_state, encode_state
    back = decode_state(encode_state({"p": lay}))["p"]
    assert back.since == lay.since and back.last_on("n", 1) == "old"
    lay.forget("old")
    assert lay.last_on("n", 1) is None and ("old", 0) not in lay.since
    # Untimed (learned without a time): the order learned, as before.
    lay = Placement()
    lay.learn("a", [[0, "n", 1, 0]])
    lay.learn("b", [[0, "n", 1, 0]])
    assert lay.last_on("n", 1) == "b"


def test_a_hung_job_whose_gpus_an_ended_job_s_late_layout_names_is_still_named() -> None:
    # job-0 ran on node-a's GPUs before job-1; its layout reaches the correlator only after
    # job-1's (another partition, lagging): job-1's hang is still job-1's.
    corr, out = _job()
    corr.on_finding(Finding(T0 - 500, T0 - 500, "job_layout", "slow_node", "unknown",
                            Scope.of_job("job-0"), True, False, 0.0,
                            {"placement": [[r, "node-a", r, r] for r in range(8)]}, "job-0"),
                    out)
    last = T0 + 100.0
    _busy(corr, out, last + 1.0, "node-a", [1])
    _looks(corr, out, last, last + 61.0)
    assert _pages(out) == [("firing", "unattributed", "gpu:node-a/1")]
