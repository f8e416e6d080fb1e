"""rl46 (round 46): RL post-training's rollout engines -- a step whose ranks end apart by design.

An inference engine reports one step record a generation round, when its own batch's longest
answer is done (blind36's reading of DESIGN's step record for rollout engines): the records of
one round end 4-10 s apart with no fault, and the slowest engine's -- a GPU slow at decode among
them -- came after DESIGN's 5 s of disorder past the round's first record.  The step was decided
without it, on exactly the rounds it was slowest in, and the slow GPU was never paged (blind36
F1: 0 of 8).  A step now waits for its missing ranks as much longer as the job's complete steps
have spread (JobMonitor._step_spread, from 2 s); a synchronous job's ranks end a step within
milliseconds, and its steps are decided as before.
"""

from __future__ import annotations

import numpy as np

from detector.alerts import Alert
from detector.engine import Engine
from detector.findings import Finding
from detector.steps import JobMonitor
from detector.testing import T0, feed, parallel_step, step
from detector.thresholds import Thresholds


def _rounds(n: int, *, spread: float, slow_from: int = 10**9, ranks: int = 16,
            seed: int = 460601) -> tuple[JobMonitor, list[Finding], list[int], int]:
    """``n`` rounds of ``ranks`` engines, each record at its round's start + its own compute
    (x lognormal(0, ``spread``) of 7 s) + a weight sync of 2 s, fed in ``ts`` order; rank 3
    x1.3 from round ``slow_from``.  Returns the monitor, its findings, a round the ranks it was
    decided with (negative: decided without some, which came late) and the late messages of
    its first 5 rounds (the job's size and spread being learned)."""
    rng = np.random.default_rng(seed)
    mon = JobMonitor("grpo-gen", Thresholds())
    out: list[Finding] = []
    start = T0
    early = 0
    for s in range(n):
        if s == 5:
            early = mon.late
        c = 7000.0 * rng.lognormal(0.0, spread, ranks)
        if s >= slow_from:
            c[3] *= 1.3
        ends = start + 2.0 + c / 1000.0
        for r in np.argsort(ends).tolist():
            mon.add(step(float(ends[r]), r, s, step_ms=2000.0 + float(c[r]),
                         compute_ms=float(c[r]), comm_ms=2000.0, dp=r), out)
        start = float(ends.max()) + 0.5  # (the next round begins after the sync)
    mon.expire(start + 60.0, out)
    return mon, out, [mon._done[s] for s in sorted(mon._done)], early


def test_rounds_ending_seconds_apart_are_decided_with_every_engine() -> None:
    mon, _, sizes, early = _rounds(40, spread=0.35)
    # (the first rounds' spread is being learned: a round cut at 5 s may come before it)
    assert sizes[5:] == [16] * 35, sizes
    assert mon.late == early
    assert mon._step_spread >= 2.0


def test_the_slow_engine_is_in_every_round_it_is_slowest_in() -> None:
    mon, _, sizes, early = _rounds(40, spread=0.35, slow_from=15)
    assert sizes[5:] == [16] * 35, sizes
    assert mon.late == early


def test_a_synchronous_job_learns_no_spread_and_waits_as_before() -> None:
    mon = JobMonitor("job-1", Thresholds())
    out: list[Finding] = []
    for s in range(30):
        for r in range(16):
            if s == 25 and r in (6, 7):
                continue  # two ranks lost on step 25: decided without them at DESIGN's 5 s
            mon.add(step(T0 + s + 0.001 * r, r, s), out)
    assert mon._step_spread < 0.1
    # step 25 (first record at T0 + 25) is still waiting at T0 + 29.9, decided at T0 + 30.1
    mon.expire(T0 + 29.9, out)
    assert 25 in mon._pending
    mon.expire(T0 + 30.1, out)
    assert 25 not in mon._pending


def test_without_the_spread_the_slowest_engines_were_decided_out() -> None:
    # (the mechanism: with the learned spread forgotten every round, rounds are cut at 5 s)
    mon = JobMonitor("grpo-gen", Thresholds())
    rng = np.random.default_rng(460602)
    out: list[Finding] = []
    start = T0
    for s in range(30):
        mon._step_spread = 0.0
        c = 7000.0 * rng.lognormal(0.0, 0.35, 16)
        ends = start + 2.0 + c / 1000.0
        for r in np.argsort(ends).tolist():
            mon._step_spread = 0.0
            mon.add(step(float(ends[r]), r, s, step_ms=2000.0 + float(c[r]),
                         compute_ms=float(c[r]), comm_ms=2000.0, dp=r), out)
        start = float(ends.max()) + 0.5
    assert mon.late > 10


# -- a colocated RL job's faults on three nodes: no slowness visiting them ---------------------
# blind36's hybrid job (TP8 x DP8, one record an iteration of 25-60 s, ~30 a log): a GPU slow
# in both phases, one hot in decodes, one capped -- three faults on three nodes, each found
# again and again on its own GPU -- read as slowness visiting nodes (MoE routing) and held
# until the job's wander index could be read, its 130th step: never paged (blind36 tune hybrid
# 5/12, held 7/12).  Nodes found on end for _SETTLED_STEPS steps, at most _SETTLED_NODES of
# them, are faults that stay (JobMonitor._settled).

SLOW = {8 + 7: (8, 1.13), 32 + 0: (10, 1.14), 48 + 6: (9, 1.15)}  # rank -> (from step, pace)


def _colocated(steps: int = 30, *, slow: dict[int, tuple[int, float]] = SLOW,
               seed: int = 460603) -> list[Alert]:
    """TP8 x DP8 on node-0..7, 30 s iterations, each replica's iteration x lognormal(0, 0.14)
    (its longest answers), its ranks in lockstep (x lognormal(0, 0.003)); ``slow`` ranks
    slower from a step on."""
    rng = np.random.default_rng(seed)
    events = []
    for s in range(steps):
        c = 20000.0 * np.repeat(rng.lognormal(0.0, 0.14, 8), 8) * rng.lognormal(0.0, 0.003, 64)
        for r, (at, pace) in slow.items():
            if s >= at:
                c[r] *= pace
        events += parallel_step(s, c, tp=8, pp=1, step_s=30.0)
    return feed(Engine(), events)


def _paged(alerts: list[Alert]) -> set[str]:
    return {a.scope.key for a in alerts if a.status == "firing" and a.kind == "slow_node"}


def test_three_faults_on_three_nodes_of_a_colocated_job_are_each_paged() -> None:
    assert _paged(_colocated()) == {"gpu:node-001/7", "gpu:node-004/0", "gpu:node-006/6"}


def test_the_colocated_job_healthy_pages_nobody() -> None:
    assert _paged(_colocated(slow={})) == set()


# -- a rollout engine's GPU against its TP partner (detector.steps.phases) --------------------
# Against its 15 engine peers a GPU x1.25 at decode is ~1 of the rounds' spread (0.6-2x: each
# engine's round ends at its batch's longest answer); against its TP partner, which computes
# the same shards in lockstep and waits for it in comm_ms, it is x1.25 on every round.


def _engines(n: int, *, slow: float = 1.25, slow_from: int = 15, seed: int = 460604
             ) -> list[Finding]:
    """``n`` rounds of 16 TP2 engines (32 ranks: engine e's ranks 2e, 2e + 1, tp 0 and 1),
    each engine's compute 7 s x lognormal(0, 0.35), its two ranks within 0.3 %; rank 7 (engine
    3, tp 1) ``slow`` x from round ``slow_from``, its partner waiting for it in comm_ms."""
    rng = np.random.default_rng(seed)
    mon = JobMonitor("grpo-gen", Thresholds())
    out: list[Finding] = []
    start = T0
    for s in range(n):
        c = np.repeat(7000.0 * rng.lognormal(0.0, 0.35, 16), 2) * rng.lognormal(0.0, 0.003, 32)
        if s >= slow_from:
            c[7] *= slow
        pair = np.maximum(c, c.reshape(16, 2)[:, ::-1].ravel())  # (the pair ends together)
        ends = start + 2.0 + pair / 1000.0
        for r in np.argsort(ends, kind="stable").tolist():
            mon.add(step(float(ends[r]), r, s, step_ms=2000.0 + float(pair[r]),
                         compute_ms=float(c[r]), comm_ms=2000.0 + float(pair[r] - c[r]),
                         tp=r % 2, dp=r // 2), out)
        start = float(ends.max()) + 0.5
    mon.expire(start + 60.0, out)
    return [f for f in out if f.signal == "slow_rank" and f.active]


def test_a_rollout_gpu_slow_against_its_tp_partner_is_found() -> None:
    found = _engines(40)
    assert {f.rank for f in found} == {7}, [(f.rank, f.evidence) for f in found]
    first = found[0]
    assert first.evidence["tp_mates_ratio"] > 1.2
    assert 15 + 8 <= first.evidence["step"] <= 15 + 12


def test_healthy_rollout_engines_find_nobody() -> None:
    assert _engines(40, slow=1.0) == []


def test_a_gpu_five_percent_over_its_partner_is_under_the_rule() -> None:
    assert [f for f in _engines(40, slow=1.05) if "tp_mates_ratio" in f.evidence] == []
