"""Room loader35 (issue 10, blind25 P1): a rank slowed alone in its data loading -- its host path,
``step_ms - compute_ms - comm_ms`` -- while the job waits for it is paged from its step records
(detector.host_straggler, JobMonitor._page_lone), within DESIGN's ten steps; with PCIe replays
on its GPU the page is that GPU's hardware, else an escalation.  What is routine pages nobody.

The job is blind25's pure-DP image job (bench/blind25/sim.py): each rank's step is its loader
time plus its compute; the slowest arrival sets the step and every other rank waits the
difference in the all-reduce, so ``step_ms = loader + compute_ms + comm_ms`` on every rank.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator

from detector import host_straggler
from detector.engine import Engine
from detector.events import Event, StepSample
from detector.findings import Finding
from detector.testing import T0, ecc, feed, step
from detector.thresholds import Thresholds
from tests.test_steps_round12 import findings  # (a JobMonitor's slow_rank and host_late)

CFG = Thresholds()
COMPUTE, LOADER, ALLREDUCE = 270.0, 127.0, 50.0
STEP_S = 0.45
Extra = Callable[[int, int], float]  # (step, rank) -> ms


def _none(s: int, r: int) -> float:
    return 0.0


def job(*, steps: int = 400, ranks: int = 24, loader: Extra = _none, compute: Extra = _none,
        seed: int = 0, no_comm: bool = False, stages: int = 1, overlap_ms: float = 0.0,
        waits: bool = True) -> Iterator[StepSample]:
    """A synchronous job on ``ranks // 8`` nodes: ``loader(step, rank)`` ms more loader time,
    ``compute(step, rank)`` ms more compute.  ``stages``: pipeline stages (rank // (ranks //
    stages)), each its own peer group; ``overlap_ms``: that much of the all-reduce hidden in
    compute (comm_ms is what is exposed); ``waits=False``: a rank's extra loader time comes
    after the collective (its peers never wait for it: each step_ms its own)."""
    rng = random.Random(seed)
    per = ranks // stages
    for s in range(steps):
        parts = []
        for r in range(ranks):
            c = COMPUTE * (1.0 + 0.1 * (r // per)) * rng.gauss(1.0, 0.01) + compute(s, r)
            h = LOADER * rng.uniform(0.95, 1.05) + (loader(s, r) if waits else 0.0)
            parts.append((c, h))
        top = max(c + h for c, h in parts)
        ar = ALLREDUCE * rng.gauss(1.0, 0.03)
        for r, (c, h) in enumerate(parts):
            cm = max(top - (c + h) + ar - overlap_ms, 0.0)
            late = 0.0 if waits else loader(s, r)
            yield step(T0 + s * STEP_S + 0.001 * r, r, s,
                       step_ms=round(c + h + cm + late + 0.001, 3), compute_ms=round(c, 3),
                       comm_ms=None if no_comm else round(cm, 3), dp=r // per if stages > 1
                       else r, pp=r // per, node=f"node-{r // 8:03d}", gpu=r % 8)


def lone(found: list[Finding]) -> list[Finding]:
    """The slow ranks paged by their host path."""
    return [f for f in found if f.active and f.signal == "slow_rank"
            and f.evidence.get("basis") == "host_time"]


def firing(events: Iterable[Event]) -> list[tuple[str, str, str, float]]:
    return [(a.topic.split(".")[1], a.cause, a.scope.key, a.detected_ts)
            for a in feed(Engine(), events) if a.status == "firing"]


def _on(ranks: set[int], ms: float, start: int = 0, stop: int = 10**9) -> Extra:
    return lambda s, r: ms if r in ranks and start <= s < stop else 0.0


ONSET = 100
AT = T0 + ONSET * STEP_S


# -- what pages ---------------------------------------------------------------------------------


def test_a_rank_loading_slowly_alone_is_paged_within_ten_steps():
    # blind25 P1: a GPU's PCIe link trained down x16 -> x8; its rank's loader 127 -> 239 ms
    # from step 100, its compute its peers', the job's every step +23 % (the others wait).
    found = findings(job(loader=_on({13}, 112.0, ONSET, 300)))
    paged = lone(found)
    assert [(f.rank, f.scope.key) for f in paged] == [(13, "gpu:node-001/5")], found
    f = paged[0]
    assert f.verdict and f.cause == "unknown"
    assert f.evidence["step"] - ONSET <= 10
    assert AT - 2 * STEP_S <= f.onset_ts <= AT + STEP_S
    assert f.evidence["peer_median_comm_ms"] - f.evidence["comm_ms"] >= 100.0, "they wait"
    assert not [g for g in found if g.signal == "host_late"], "paged, not held as evidence"
    assert [g.rank for g in found if not g.active] == [13], "cleared at its peers' pace"


def test_a_ten_percent_slowdown_by_the_loader_is_paged_within_ten_steps():
    # DESIGN: a 10 % slowdown of one rank, caught within a median of 10 steps.
    steps_to = []
    for seed in range(5):
        paged = lone(findings(job(loader=_on({4}, 0.10 * (COMPUTE + LOADER + ALLREDUCE),
                                              ONSET), seed=seed)))
        assert [f.rank for f in paged] == [4], seed
        steps_to.append(paged[0].evidence["step"] - ONSET)
    assert sorted(steps_to)[2] <= 10, steps_to


def test_without_telemetry_naming_a_cause_it_is_escalated_at_its_gpu():
    alerts = firing(job(loader=_on({13}, 112.0, ONSET, 300)))
    assert [(t, c, k) for t, c, k, _ in alerts] == [
        ("escalation", "unknown", "gpu:node-001/5")], alerts
    # (no replay names it: escalated once its run has lasted host_straggler.LONE_S --
    # loaderfix35, revA35 1: a host path slow for a few seconds is routine)
    assert host_straggler.LONE_S <= alerts[0][3] - AT <= (
        host_straggler.LONE_S + 10 * STEP_S + CFG.escalate_after_s)


def test_with_pcie_replays_on_its_gpu_it_is_that_gpus_hardware():
    # The link replays ~1 a second from the onset (DCGM polled every 10 s): the poll after
    # the onset names it before the escalation's hold ends.
    steps = list(job(loader=_on({13}, 112.0, ONSET)))
    polls = [ecc(T0 + t, "node-001", g, pcie=int(max(0.0, T0 + t - AT)) if g == 5 else 0)
             for t in range(0, 180, 10) for g in range(8)]
    alerts = firing(sorted([*steps, *polls], key=lambda e: e.ts))
    assert alerts and alerts[0][:3] == ("isolation", "gpu_hardware", "gpu:node-001/5"), alerts
    assert alerts[0][3] - AT <= 25.0
    assert not [a for a in alerts if a[0] == "escalation"], alerts


def test_with_clean_ecc_polls_it_is_escalated_after_the_poll():
    steps = list(job(loader=_on({13}, 112.0, ONSET)))
    polls = [ecc(T0 + t, "node-001", g) for t in range(0, 180, 10) for g in range(8)]
    alerts = firing(sorted([*steps, *polls], key=lambda e: e.ts))
    assert [(t, c, k) for t, c, k, _ in alerts] == [
        ("escalation", "unknown", "gpu:node-001/5")], alerts
    assert alerts[0][3] - AT <= 1.25 * CFG.unknown_cadence_s + 3.0


# -- what must not page -------------------------------------------------------------------------


def test_a_loader_stall_on_one_rank_for_one_step_pages_nobody():
    rng = random.Random(3)
    stalls = {s: (rng.randrange(24), rng.uniform(200.0, 2000.0)) for s in range(30, 400, 30)}
    stalls[31] = (stalls[30][0], 800.0)  # (twice in a row on one rank)
    events = list(job(loader=lambda s, r: stalls[s][1] if s in stalls and stalls[s][0] == r
                      else 0.0))
    assert lone(findings(events)) == []
    assert firing(events) == []


def test_routine_loader_jitter_pages_nobody():
    # Every step a few ranks' loaders take 5-40 % longer (bigger images, a page-cache miss),
    # never the same rank for long.
    def extra(s: int, r: int) -> float:
        rng = random.Random(s * 1000 + r)
        return LOADER * rng.uniform(0.05, 0.4) if rng.random() < 0.15 else 0.0

    events = list(job(loader=extra, steps=600))
    assert lone(findings(events)) == []
    assert firing(events) == []


def test_sequence_length_imbalance_moving_between_ranks_pages_nobody():
    def draw(s: int) -> dict[int, float]:
        rng = random.Random(s)
        return {r: rng.uniform(0.05, 0.2) for r in rng.sample(range(24), 6)}

    heavy = [draw(s) for s in range(400)]
    events = list(job(compute=lambda s, r: COMPUTE * heavy[s].get(r, 0.0),
                      loader=lambda s, r: LOADER * heavy[s].get(r, 0.0) / 4.0))
    assert lone(findings(events)) == []
    assert firing(events) == []


def test_checkpoint_saves_page_nobody():
    # Every 50 steps a 6 s save on every rank (host time), +-10 % apart.
    events = list(job(loader=lambda s, r: 6000.0 * random.Random(s * 100 + r).uniform(0.9, 1.1)
                      if s % 50 == 0 else 0.0))
    assert lone(findings(events)) == []
    assert firing(events) == []


def test_a_pipeline_stage_persistently_slower_pages_nobody():
    # Stage 1 of 3 loads and computes more (its layers, its micro-batches): stages are never
    # compared with each other.
    events = list(job(stages=3, loader=lambda s, r: 60.0 if 8 <= r < 16 else 0.0))
    assert lone(findings(events)) == []
    assert firing(events) == []


def test_without_comm_ms_nothing_tells_a_ranks_loader_time():
    # Every step_ms is the slowest rank's: the loader straggler cannot be told from steps.
    assert lone(findings(job(loader=_on({13}, 112.0, ONSET), no_comm=True))) == []


def test_with_comm_overlapped_in_compute_routine_steps_page_nobody_and_a_straggler_pages():
    # Most of the all-reduce hidden in compute (comm_ms: its exposed part, 0-10 ms).
    assert firing(job(overlap_ms=45.0)) == []
    paged = lone(findings(job(overlap_ms=45.0, loader=_on({13}, 112.0, ONSET))))
    assert [f.rank for f in paged] == [13]


def test_every_rank_of_a_node_loading_slowly_is_not_paged_as_lone_ranks():
    # blind2's healthy stall: a node's input pipeline +25 % of a step for 3 minutes, every rank
    # of the node alike -- the node's rules (detector.host_time: 240 s) keep their holds.
    events = list(job(loader=_on(set(range(8, 16)), 0.25 * 450.0, ONSET, ONSET + 400),
                      steps=ONSET + 460))
    assert lone(findings(events)) == []
    assert firing(events) == []


def test_a_rank_late_from_the_jobs_start_keeps_the_holds():
    # Rank 0 logs after every step's load (+8 % of a step from the first): its own workload,
    # not a change -- host_late's holds, not a page within steps.
    found = findings(job(loader=_on({0}, 36.0), steps=300))
    assert lone(found) == []


def test_a_rank_its_peers_do_not_wait_for_is_no_straggler():
    # Its extra time comes after the collective, in a step of its own length: nobody waits.
    found = findings(job(loader=_on({13}, 112.0, ONSET), waits=False))
    assert lone(found) == []


def test_with_tensor_parallelism_inside_the_node_its_mates_waiting_in_compute_keep_it():
    # TP4 x DP8, a TP group on half a node: a rank late in its loader holds its TP mates
    # inside their compute (each layer's all-reduce waits for it) -- its mates slow in compute,
    # the node's PCIe rules' shape (Correlator._hold_for_ecc), not a lone straggler's.
    rng = random.Random(5)
    events = []
    for s in range(300):
        late = 112.0 if s >= ONSET else 0.0
        parts = []
        for g in range(8):  # replicas
            host = [LOADER * rng.uniform(0.95, 1.05) + (late if g * 4 + t == 13 else 0.0)
                    for t in range(4)]
            start = max(host)  # (the group's first layer waits for its latest rank)
            comp = COMPUTE * rng.gauss(1.0, 0.01)
            parts.append([(h, start - h + comp) for h in host])
        top = max(h + c for grp in parts for h, c in grp)
        for g, grp in enumerate(parts):
            for t, (h, c) in enumerate(grp):
                r = g * 4 + t
                cm = top - (h + c) + ALLREDUCE
                events.append(step(T0 + s * STEP_S + 0.001 * r, r, s, step_ms=round(
                    h + c + cm + 0.001, 3), compute_ms=round(c, 3), comm_ms=round(cm, 3),
                    tp=t, dp=g, node=f"node-{r // 8:03d}", gpu=r % 8))
    assert lone(findings(events)) == []
