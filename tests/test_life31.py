"""life31 (round 31, issue 10): blind21 F1 -- a node Slurm reboots for a firmware flash 45-90 s
after its job ended is no "gone silent" page -- and review30 finding 5 -- a stopped job alone in
its service step partition has its slow ranks withdrawn within minutes, not at job_idle_s.

F1: the 240 s path counted every job that stepped within RUNNING_S (120 s) of a node's last
record as "on it to the end".  A job whose last step came more than :func:`liveness.stop_s` of
its period (three steps, 20 s at least) before the node's newest record stopped stepping while
the node still reported: it ended first, and the node's going dark lost nothing -- unless its
GPUs on its other nodes wait for the node now (busy, no step, no other job there: a save or an
eval's idle spell that the node died in).  The mirror -- a node that dies under its job, whose
last step comes at the silence -- stays paged (test_liveness, test_silent19, test_live26,
review29); the step period sets the scale (a 30 s step's job 25 s before the silence still
counts, a 2 s step's does not).
"""

from __future__ import annotations

import msgspec
import orjson
import pytest

from detector.engine import Engine
from detector.testing import T0, healthy_job
from replay.runner import replay_log
from tests.test_liveness import NODES, fleet, silent_pages, write
from tests.test_silent19 import by_ts

DARK = "node-003"


def job_steps(nodes: list[str], t0: float, t1: float, period: float = 2.0,
              job: str = "job-1") -> list[dict]:
    """A job's step records, a rank on each of 2 GPUs of each node, every ``period`` s in
    [t0, t1)."""
    out = []
    for s in range(int((t1 - t0) / period)):
        t = T0 + t0 + period * s + 1.0
        for k, node in enumerate(nodes):
            for gpu in range(2):
                out.append({"topic": "telemetry.step", "value": {
                    "ts": t, "job": job, "step": s, "rank": 2 * k + gpu, "node": node,
                    "gpu": gpu, "step_ms": 1000.0 * period, "compute_ms": 750.0 * period,
                    "comm_ms": 240.0 * period}})
    return out


def pages(recs: list[dict], tmp_path) -> list[tuple[str, str]]:
    return [(a.status, a.scope.key)
            for a in silent_pages(replay_log(write(tmp_path, by_ts(recs))).alerts)]


# -- F1: the job ended, then the node went dark for a flash ------------------------------------


@pytest.mark.parametrize("after", [45.0, 60.0, 87.0])
@pytest.mark.parametrize("nodes", [["node-002", DARK], [DARK]], ids=["two-nodes", "alone"])
def test_a_node_flashed_after_its_job_ended_is_not_paged(tmp_path, after, nodes) -> None:
    """job-1 (2 s steps) ends at 400 s, every GPU idle from then; DARK is dark for its
    firmware flash from ``after`` s later for 250 s (every topic), then back.  No page (main:
    'gone silent' 240 s on -- the job stepped within RUNNING_S of its last record)."""
    recs = fleet(seconds=1100, dead={DARK: (400.0 + after, 650.0 + after)}, job=False,
                 idle=(400.0, 1e9))
    recs += job_steps(nodes, 0.0, 400.0)
    assert pages(recs, tmp_path) == []


def test_a_node_dying_under_its_job_alone_is_still_paged(tmp_path) -> None:
    """The mirror, on the 240 s path (no other node of the job to see wait): job-1 on DARK
    alone steps until DARK dies at 400 s for good -- paged, as on main."""
    recs = fleet(seconds=1100, dead={DARK: (400.0, 1e9)}, job=False)
    recs += job_steps([DARK], 0.0, 400.0)
    assert pages(recs, tmp_path) == [("firing", f"node:{DARK}")]


@pytest.mark.parametrize("period, paged", [(30.0, True), (2.0, False)])
def test_the_step_period_sets_how_long_before_the_silence_a_job_ended(tmp_path, period,
                                                                      paged) -> None:
    """job-1 on DARK alone, its last step at 391 s; DARK dark from 416 s for good (25 s on):
    with 30 s steps the next was not due yet (the node died under it: paged), with 2 s steps
    twelve were missed while the node reported (it ended first: no page)."""
    recs = fleet(seconds=1100, dead={DARK: (416.0, 1e9)}, job=False)
    recs += job_steps([DARK], 0.0, 392.0 if period == 2.0 else 420.0, period)
    assert max(r["value"]["ts"] for r in recs if r["topic"] == "telemetry.step") == T0 + 391.0
    assert pages(recs, tmp_path) == ([("firing", f"node:{DARK}")] if paged else [])


def test_a_node_dying_in_its_jobs_save_is_still_paged(tmp_path) -> None:
    """job-1 on all 8 nodes stops stepping at 400 s for a save (every GPU idle 400-460 s);
    DARK dies at 440 s, 40 s after the last step; from 460 s the other GPUs spin busy in the
    collective for it, no step again.  The job ended before the silence by its steps, but
    its GPUs elsewhere wait for the node: still paged (main: paged, the 240 s path)."""
    recs = fleet(seconds=1100, dead={DARK: (440.0, 1e9)}, job=False, idle=(400.0, 460.0))
    recs += job_steps(NODES, 0.0, 400.0)
    assert pages(recs, tmp_path) == [("firing", f"node:{DARK}")]


# -- review30 5: the service withdraws a stopped job's slow ranks within minutes -------------


def _slow_job() -> list:
    """review30's job-1 (16 ranks, one step a second from 1001 s), rank 3 x1.3 slow from step
    80: its GPU escalated at ~1087 s; the job's last step at ~1200 s."""
    return list(healthy_job(steps=200, t0=1_001.0, slow={3: 1.3}, slow_from=80))


def _as_log(tmp_path, evs: list) -> object:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"".join(orjson.dumps({"topic": "telemetry.step", "value": {
        k: v for k, v in msgspec.structs.asdict(e).items() if v is not None}}) + b"\n"
        for e in evs))
    return log


def _service(tmp_path, monkeypatch, evs: list, idle_s: float, more: list | None = None
             ) -> list:
    """``evs`` through the service's stages (the job alone in its step partition), then
    ``idle_s`` of fake wall time with no input (the idle advance, 2 s ticks), then ``more``
    (the job's later steps), run out.  Its slow_node alerts."""
    import tests.test_service_stages as stages
    c = stages.InMemoryCluster(_as_log(tmp_path, evs), 1)
    c.run(seconds_after_input=30.0)
    monkeypatch.setattr(stages, "TICK_S", 2.0)
    stop = c.now + idle_s
    while c.now < stop:
        c.step()
    if more:
        (tp,) = c.queues
        q = c.queues[tp]
        for e in more:
            q.append((len(q), e.job.encode(), orjson.dumps({
                k: v for k, v in msgspec.structs.asdict(e).items() if v is not None}), 0.0))
        c.run(seconds_after_input=30.0)
    return [a for a in c.alerts if a.kind == "slow_node"]


def test_the_service_resolves_a_stopped_jobs_slow_page_within_minutes(tmp_path,
                                                                      monkeypatch) -> None:
    # review30 5: 6,102 s on main (withdrawn only when the job is forgotten, job_idle_s)
    alerts = _service(tmp_path, monkeypatch, _slow_job(), 2_000.0)
    assert [(a.status, a.scope.key) for a in alerts] == [
        ("firing", "gpu:node-000/3"), ("resolved", "gpu:node-000/3")]
    assert alerts[-1].detected_ts <= 1_200.0 + 900.0


def test_a_short_quiet_spell_keeps_the_slow_page(tmp_path, monkeypatch) -> None:
    """The control: the job's partition idle 120 s (a broker hiccup, or a pause) and then
    the job steps on, rank 3 still slow -- the page stays firing (an idle advance is no
    evidence that the job stopped: not withdrawn within STOPPED_QUIET_S)."""
    evs = list(healthy_job(steps=400, t0=1_001.0, slow={3: 1.3}, slow_from=80))
    first = [e for e in evs if e.step < 200]
    later = [msgspec.structs.replace(e, ts=e.ts + 150.0) for e in evs if e.step >= 200]
    alerts = _service(tmp_path, monkeypatch, first, 120.0, later)
    assert [(a.status, a.scope.key) for a in alerts] == [("firing", "gpu:node-000/3")]


def test_the_replay_still_withdraws_at_ten_step_periods() -> None:
    """The replay (another record moves the clock) is unchanged: withdrawn at the job's stop,
    resolved flap_window_s on (review30's control)."""
    from detector.testing import ecc
    evs = _slow_job() + [ecc(1_000.0 + 100 * k, "node-009", 0) for k in range(40)]
    alerts = []
    eng = Engine()
    for ev in sorted(evs, key=lambda e: e.ts):
        alerts += eng.process(ev)
    slow = [(a.status, a.detected_ts) for a in alerts if a.kind == "slow_node"]
    assert [s for s, _ in slow] == ["firing", "resolved"]
    assert slow[1][1] <= 1_200.0 + 800.0
