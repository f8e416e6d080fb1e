"""Room steps, round 12 (issue 10, blind3 B4's second signal): a rank late by its host path
(``step_ms - compute_ms - comm_ms``) while its compute is normal -- raised as evidence
(``host_late``, not a verdict): blind2's healthy slow input pipeline is the same signal.

The job is modelled as blind3's generator models it (bench/blind3/emit.py): each rank's
step is its host time (data loading, copies) plus its compute; the slowest arrival sets the
step, every other rank waits the difference in its collectives.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from detector.engine import Engine
from detector.events import Event, StepSample
from detector.findings import Finding
from detector.steps import JobMonitor
from detector.testing import T0, ecc, feed, step
from detector.thresholds import Thresholds

CFG = Thresholds()
COMPUTE, HOST, COMM = 700.0, 60.0, 200.0
Extra = Callable[[int, int], float]  # (step, rank) -> ms


def _none(s: int, r: int) -> float:
    return 0.0


def job(*, steps: int = 300, ranks: int = 16, host: Extra = _none, compute: Extra = _none,
        seed: int = 0, fields: str = "all", step_s: float = 1.0) -> Iterator[StepSample]:
    """Steps of a synchronous pure-DP job on ``ranks // 8`` nodes; ``host(step, rank)`` ms
    more host time, ``compute(step, rank)`` ms more compute.  ``fields``: "all",
    "no_comm" (no comm_ms), "no_compute" (no compute_ms)."""
    rng = random.Random(seed)
    for s in range(steps):
        parts = []
        for r in range(ranks):
            c = COMPUTE * rng.gauss(1.0, 0.008) + compute(s, r)
            h = HOST * rng.uniform(0.9, 1.1) + host(s, r)
            parts.append((c, h))
        top = max(c + h for c, h in parts)
        comm = COMM * rng.gauss(1.0, 0.02)
        for r, (c, h) in enumerate(parts):
            cm = top - (c + h) + comm
            yield step(T0 + s * step_s + 0.001 * r, r, s, step_ms=round(top + comm + 0.001, 3),
                       compute_ms=None if fields == "no_compute" else round(c, 3),
                       comm_ms=None if fields == "no_comm" else round(cm, 3), dp=r,
                       node=f"node-{r // 8:03d}", gpu=r % 8)


def findings(events: Iterator[StepSample], cfg: Thresholds = CFG) -> list[Finding]:
    mon = JobMonitor("job-1", cfg)
    out: list[Finding] = []
    for e in events:
        mon.add(e, out)
    mon.expire(float("inf"), out)
    return [f for f in out if f.signal in ("slow_rank", "host_late")]


def _on(ranks: set[int], ms: float, start: int = 0, stop: int = 10**9) -> Extra:
    return lambda s, r: ms if r in ranks and start <= s < stop else 0.0


def _host_fired(found: list[Finding]) -> dict[int, Finding]:
    # (each rank's raise, not its re-telling once lasting: round 17's host_node_page_s, 240 s,
    # comes within these jobs' node-wide runs)
    return {f.rank: f for f in found if f.active and f.signal == "host_late"
            and "lasting_s" not in f.evidence}


# -- what pages -------------------------------------------------------------------------------


def test_one_rank_late_by_its_host_path_is_slow_its_compute_normal():
    # A downtrained PCIe link: the rank's copies take +10 % of a step's compute (blind3 K4),
    # from step 100.  The compute CUSUM sees nothing (its compute is its peers').  Alone on its
    # node, the job waiting for it, it is a slow rank within steps (round 35, loader35:
    # detector.host_straggler; it was host_late evidence, held host_hold_s, 180 s).
    found = findings(job(host=_on({5}, 0.10 * COMPUTE, start=100)))
    assert _host_fired(found) == {}, found
    fired = [f for f in found if f.active and f.signal == "slow_rank"]
    assert [f.rank for f in fired] == [5], found
    f = fired[0]
    assert f.verdict and f.kind == "slow_node" and f.cause == "unknown"
    assert f.scope.key == "gpu:node-000/5" and f.evidence["basis"] == "host_time"
    assert f.ts - f.onset_ts <= 10.0
    assert T0 + 99 <= f.onset_ts <= T0 + 110
    assert 0.07 <= f.evidence["host_excess_over_run"] <= 0.11
    assert 0.98 <= f.evidence["compute_ratio_to_peers"] <= 1.02, "not by its compute"


def test_every_rank_of_a_node_late_by_its_host_is_slow_each():
    # A node's host path slows (CPU throttled, a starved input pipeline): every rank of the
    # node +16 % of a step's compute in host time, compute normal (blind3 K2 without its
    # +6 % compute).
    # (seed 5: the node's ranks leave zero up to four steps apart)
    found = findings(job(ranks=32, host=_on(set(range(8, 16)), 0.16 * COMPUTE, 120, 360),
                         steps=420, seed=5))
    fired = _host_fired(found)
    assert sorted(fired) == list(range(8, 16))
    assert all(f.scope.node == "node-001" for f in fired.values())
    # on one step: sent a step apart, the first was escalated on its GPU alone
    assert len({f.evidence["step"] for f in fired.values()}) == 1
    cleared = {f.rank for f in found if not f.active}
    assert cleared == set(range(8, 16)), "clears when the host path recovers"


def test_a_path_slow_from_before_the_job_began_is_not_learned_as_normal():
    # blind3 K4: the link trained down before the log; the rank's host time is +10 % of a
    # step's compute from its first step.  Only host_offset_max of it is learned.  Alone on
    # its node, its peers waiting for it, it is a lone straggler once its run has lasted 60
    # steps past the warm-up (loader36, revA35 8: JobMonitor._lone_from_start), else host_late.
    found = findings(job(host=_on({3}, 0.10 * COMPUTE)))
    fired = _host_fired(found) or {f.rank: f for f in found if f.active
                                   and f.evidence.get("basis") == "host_time"}
    assert list(fired) == [3]
    assert fired[3].evidence["step"] <= 20 + CFG.host_hold_s


def test_the_engine_pages_nobody_on_a_nodes_host_time_alone():
    # Evidence, not a verdict: blind2's healthy slow input pipeline on one tray is this (a
    # node's every rank late alike: paged by detector.host_time only after minutes).  One
    # rank late alone, its node's others not, is its own path's: escalated at its GPU
    # (loader35, tests/test_loader35.py).
    assert [(a.topic, a.scope.key) for a in feed(Engine(), job(
        host=_on({5}, 0.10 * COMPUTE, start=100))) if a.status == "firing"] == [
        ("alerts.escalation", "gpu:node-000/5")]
    assert [a for a in feed(Engine(), job(ranks=32, host=_on(set(range(8, 16)),
                                                                0.16 * COMPUTE, 100), seed=5))
            if a.status == "firing"] == []


def test_with_pcie_replays_on_its_gpu_the_late_rank_is_the_gpus_hardware():
    # The replay rate names the link (round 11); the late rank is its impact.
    steps = list(job(host=_on({5}, 0.10 * COMPUTE, start=100)))
    samples: list[Event] = [ecc(T0 + t, "node-000", 5, pcie=int(max(0, t - 60) * 0.6))
                            for t in range(0, 300, 10)]
    events = sorted([*steps, *samples], key=lambda e: e.ts)
    eng = Engine()
    firing = [(a.topic, a.cause, a.scope.key) for a in feed(eng, events, finish=False)
              if a.status == "firing"]
    assert firing and all(c == "gpu_hardware" for _, c, _ in firing), firing
    assert {k for _, _, k in firing} == {"gpu:node-000/5"}
    # the late rank joined the link's problem as its evidence
    p = next(p for p in eng.correlator.problems.values() if p.status == "firing")
    late = [e for e in p.evidence if e["signal"] == "slow_rank"]  # (host_late till round 35)
    assert late and late[0]["unit"] == "gpu:node-000/5" and late[0]["basis"] == "host_time"


# -- what must not page ---------------------------------------------------------------------------


def test_a_loader_stall_on_one_rank_for_one_step_pages_nobody():
    # Every 40 steps a random rank waits 1-5 s for its data, for one step (the matrix's
    # workload=loader_stall), twice on the same rank too.
    rng = random.Random(7)
    stalls = {s: (rng.randrange(16), rng.uniform(1000.0, 5000.0)) for s in range(40, 300, 40)}
    stalls[41] = (stalls[40][0], 3000.0)
    assert findings(job(host=lambda s, r: stalls[s][1] if s in stalls and stalls[s][0] == r
                        else 0.0)) == []


def test_checkpoints_every_ranks_host_time_up_together_page_nobody():
    # Every 15 steps a 9 s checkpoint: every rank's host time, +-10 % apart (blind3 extremes).
    found = findings(job(host=lambda s, r: 9000.0 * random.Random(s * 100 + r).uniform(0.9, 1.1)
                         if s % 15 == 0 else 0.0, steps=400))
    assert found == []


def test_a_job_whose_ranks_all_have_the_same_host_time_pages_nobody():
    # The whole job's input pipeline slows from step 100 (every rank +30 %): no rank is late.
    assert findings(job(host=lambda s, r: 0.3 * COMPUTE if s >= 100 else 0.0)) == []


def test_a_rank_with_a_small_host_offset_from_the_start_pages_nobody():
    # Rank 0 logs: 2 % of a step more host time, from the job's first step.
    assert findings(job(host=_on({0}, 0.02 * COMPUTE), steps=600)) == []


def test_per_step_sequence_length_imbalance_pages_nobody():
    # Each step a random quarter of the ranks draws longer sequences: +5-15 % compute, and
    # a little more host time for the bigger batch (+1-3 %).
    def draw(s: int) -> dict[int, float]:
        rng = random.Random(s)
        return {r: rng.uniform(0.05, 0.15) for r in rng.sample(range(16), 4)}

    heavy = [draw(s) for s in range(400)]
    found = findings(job(compute=lambda s, r: COMPUTE * heavy[s].get(r, 0.0),
                         host=lambda s, r: HOST * heavy[s].get(r, 0.0) / 5.0, steps=400))
    assert _host_fired(found) == {}


# -- producers without the fields -----------------------------------------------------------------


def test_without_comm_ms_no_rank_is_late_by_its_host():
    # Every step_ms is the slowest rank's: nothing tells a rank's host time.
    assert _host_fired(findings(job(host=_on({5}, 0.10 * COMPUTE, 100), fields="no_comm"))) \
        == {}


def test_without_compute_ms_the_host_time_is_in_what_the_cusum_scores():
    # step_ms - comm_ms is compute plus host time: the late rank is the compute CUSUM's.
    found = findings(job(host=_on({5}, 0.10 * COMPUTE, 100), fields="no_compute"))
    fired = {f.rank for f in found if f.active}
    assert fired == {5}
    assert _host_fired(found) == {}


def test_a_node_slow_in_compute_and_host_is_reported_on_its_compute_with_its_host_excess():
    # blind3 K2: +6 % compute and +16 % of a step's compute in host time: the compute CUSUM
    # reports it first; the host excess rides in its evidence.
    found = findings(job(ranks=32, compute=_on(set(range(8, 16)), 0.06 * COMPUTE, 120),
                         host=_on(set(range(8, 16)), 0.16 * COMPUTE, 120), steps=300))
    active = [f for f in found if f.active and f.signal == "slow_rank"]
    assert sorted(f.rank for f in active) == list(range(8, 16))
    assert all(f.evidence.get("basis") is None for f in active)
    assert all(f.evidence["host_excess"] > 0.08 for f in active), \
        [f.evidence.get("host_excess") for f in active]
