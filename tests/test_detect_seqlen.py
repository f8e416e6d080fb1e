"""Per-step sequence-length imbalance between replicas is workload, not a fault (issue 10).

Every rank of a data-parallel replica shares its batch: with +-20 % imbalance drawn anew
each step, a rank's ratio to its DP peers is mostly its replica's batch.  Scored also
against its replica mates, a GPU 10 % slow still stands out within the target's 10 steps,
a whole replica (a node) slower than its peers is still seen, and the imbalance pages nobody.
"""

from __future__ import annotations

import numpy as np

from detector.engine import Engine
from detector.testing import T0, feed, parallel_step

DP, TP, PP = 8, 4, 2  # rank = dp * 8 + pp * 4 + tp: one replica per 8-GPU node


def seqlen_job(*, steps: int = 100, slow: dict[int, float] | None = None, slow_from: int = 40,
               imbalance: float = 0.2, seed: int = 3) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for s in range(steps):
        batch = rng.uniform(1 - imbalance, 1 + imbalance, DP)
        compute = 700.0 * np.repeat(batch, TP * PP) * rng.lognormal(0.0, 0.015, DP * TP * PP)
        if slow and s >= slow_from:
            for r, f in slow.items():
                compute[r] *= f
        out += parallel_step(s, compute, tp=TP, pp=PP)
    return out


def paged(alerts: list) -> list[tuple[str, str, float]]:
    return [(a.kind, a.scope.key, a.detected_ts - (T0 + 40)) for a in alerts
            if a.status == "firing"]


def test_sequence_length_imbalance_alone_pages_nobody() -> None:
    for seed in (3, 4):
        assert paged(feed(Engine(), seqlen_job(steps=300, seed=seed))) == []


def test_a_gpu_ten_percent_slow_stands_out_of_the_imbalance_within_ten_steps() -> None:
    alerts = paged(feed(Engine(), seqlen_job(slow={13: 1.10})))
    assert [(k, u) for k, u, _ in alerts] == [("slow_node", "gpu:node-001/5")]
    # (scored against DP peers alone it is never found in these 60 steps)
    assert alerts[0][2] <= 12.0  # ~10 steps, then the wait for an explanation (<= 2 s)


def test_a_whole_replica_slower_than_its_peers_is_still_seen() -> None:
    alerts = paged(feed(Engine(), seqlen_job(steps=160, slow={r: 1.3 for r in range(16, 24)})))
    assert alerts and {k for k, _, _ in alerts} == {"slow_node"}
    assert all(u.startswith(("gpu:node-002/", "node:node-002")) for _, u, _ in alerts)
