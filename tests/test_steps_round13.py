"""Room steps13 (round 13): blind4's D3, D4 and D5 on synthetic jobs of their shape.

- D4: an MoE job's heavy-tailed compute extra per TP group, drawn anew each step, pages
  nobody (JobMonitor._persistent scores an alarmed run on the job's own measured tail), while
  a node 10 % slower in the same job is still found;
- D3: with TP8 inside a node, the node's ranks slowed alike are found on one step and paged as
  one node problem (JobMonitor._node_alike), not as a GPU and then the node;
- D5: after a restart that moved ranks to a spare whose GPU slows its TP group 18 %, the spare
  is found within DESIGN's 10 steps of the restart (no start offset learned, the CUSUM runs
  from the restart's first step).
"""

from __future__ import annotations

import numpy as np

from detector.engine import Engine
from detector.testing import T0, feed, parallel_step, step

TP, PP, DP = 8, 1, 4  # one TP group per node: ranks 8k..8k+7 on node-00k


def moe_job(*, steps: int, seed: int, slow_node: int | None = None, slow_from: int = 0,
            factor: float = 1.10, heavy: bool = True) -> list:
    """Steps of a TP8 x DP4 job; each TP group's compute gets ``0.02 x (Pareto(2) - 1)`` extra
    (cap +40 %) drawn anew each step (blind4's MoE imbalance) when ``heavy``."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(steps):
        extra = np.minimum(0.02 * rng.pareto(2.0, DP), 0.4) if heavy else np.zeros(DP)
        group = 1.0 + extra
        if slow_node is not None and s >= slow_from:
            group[slow_node] *= factor
        compute = 1500.0 * np.repeat(group, TP) * rng.lognormal(0.0, 0.012, TP * DP)
        out += parallel_step(s, compute, tp=TP, pp=PP, step_s=2.0)
    return out


def firing(alerts: list) -> list[tuple[str, str, float]]:
    return [(a.kind, a.scope.key, a.detected_ts) for a in alerts if a.status == "firing"]


def test_moe_heavy_tail_pages_nobody() -> None:
    # 4 seeds x 1,500 steps x 32 ranks: main a6d23a2 paged a healthy rank or node on 3 of 4.
    for seed in range(4):
        assert firing(feed(Engine(), moe_job(steps=1500, seed=seed))) == [], seed


def test_a_node_ten_percent_slow_under_the_heavy_tail_is_one_node_page() -> None:
    got = []
    for seed in range(4):
        alerts = firing(feed(Engine(), moe_job(steps=400, seed=seed, slow_node=2,
                                               slow_from=200)))
        assert [(k, u) for k, u, _ in alerts] == [("slow_node", "node:node-002")], seed
        got.append((alerts[0][2] - (T0 + 2.0 * 200)) / 2.0)  # steps after the onset
    # The heavy tail widens the job's noise (sigma ~1.6 % -> its z): measured 6-9 steps
    # (and the wait for an explanation), against 4-6 without the tail (below).
    assert max(got) <= 14.0, got


def test_a_slow_tp_group_without_a_tail_is_one_node_page_within_ten_steps() -> None:
    for seed in range(3):
        alerts = firing(feed(Engine(), moe_job(steps=120, seed=seed, slow_node=1, slow_from=60,
                                               heavy=False)))
        assert [(k, u) for k, u, _ in alerts] == [("slow_node", "node:node-001")], seed
        assert alerts[0][2] - (T0 + 2.0 * 60) <= 2.0 * 10, seed


def restart_on_spare(*, factor: float, seed: int = 7) -> tuple[list, float]:
    """(steps, restart ts): a TP8 x DP4 job for 120 steps; node-001 fails; the job restarts
    from step 100 with ranks 8-15 on the spare node-009, ``factor`` slower from its first
    step, under a warm-up alike on every rank (first step x10, then x2.6 decaying)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(120):
        compute = 1500.0 * rng.lognormal(0.0, 0.012, TP * DP)
        out += parallel_step(s, compute, tp=TP, pp=PP, step_s=2.0)
    t_restart = T0 + 2.0 * 120 + 300.0
    t = t_restart
    for i, s in enumerate(range(100, 160)):
        warm = 10.0 if i == 0 else 1.0 + 1.6 * max(0.0, 1.0 - i / 30)
        compute = 1500.0 * warm * rng.lognormal(0.0, 0.012, TP * DP)
        compute[8:16] *= factor
        step_ms = float(compute.max()) + 250.0
        for r in range(TP * DP):
            node = "node-009" if 8 <= r < 16 else None
            out.append(step(t + 0.001 * r, r, s, node=node, step_ms=round(step_ms, 2),
                            compute_ms=round(float(compute[r]), 2), tp=r % TP, pp=0,
                            dp=r // TP))
        t += step_ms / 1000.0
    return out, t_restart


def test_a_spare_slow_from_the_restart_is_found_within_ten_steps() -> None:
    events, t_restart = restart_on_spare(factor=1.18)
    alerts = firing(feed(Engine(), events))
    assert [(k, u) for k, u, _ in alerts] == [("slow_node", "node:node-009")]
    # steps of the restarted job decided by the page (its first 10 take 15-23 s each)
    detected = alerts[0][2]
    steps = {e.step for e in events if t_restart <= e.ts <= detected}
    assert len(steps) <= 10, len(steps)


def test_a_healthy_spare_after_the_restart_pages_nobody() -> None:
    events, _ = restart_on_spare(factor=1.01)
    assert firing(feed(Engine(), events)) == []
