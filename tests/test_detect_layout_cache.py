"""Which replicas sit on one node is kept per rank and taken again only when the layout changes.

``JobMonitor._one_node_replicas`` was recomputed whenever a step's messages came in another
order than the last step's (the columns are in arrival order): a loop over every rank of the
job at nearly every step (bench/big_job_steps.py).  Kept per slot, the answer must still be
what a fresh look at the step says, whatever the order, and follow a rank that moves to
another node, names another replica, or is missing from a step.
"""

from __future__ import annotations

import random

import numpy as np

from detector.findings import Finding
from detector.steps import JobMonitor
from detector.testing import T0, step
from detector.thresholds import Thresholds

TP, PP, DP = 2, 2, 8  # replicas of 4 ranks: replica d on node d // 2 (two replicas a node)


def _fresh(buf, r: np.ndarray, slot_of: dict[int, int]) -> np.ndarray:
    """The answer from scratch: every rank of its replica this step on its node."""
    nodes: dict[int, set[str]] = {}
    for (node, _), rep in zip(buf.hw, buf.dp, strict=True):
        nodes.setdefault(rep, set()).add(node)
    by_slot = {slot_of[rank]: len(nodes[rep]) == 1
               for rank, rep in zip(buf.ranks, buf.dp, strict=True)}
    return np.array([by_slot[int(s)] for s in r], dtype=bool)


def test_one_node_replicas_follows_the_layout_not_the_arrival_order() -> None:
    mon = JobMonitor("job-1", Thresholds())
    rng = random.Random(7)
    checked = []
    orig = JobMonitor._one_node_replicas

    def check(self: JobMonitor, buf, r: np.ndarray) -> np.ndarray:
        got = orig(self, buf, r)
        want = _fresh(buf, r, self._slot)
        assert got.tolist() == want.tolist()
        checked.append((buf.ranks, got.sum()))
        return got

    JobMonitor._one_node_replicas = check  # type: ignore[method-assign]
    try:
        found: list[Finding] = []
        ranks = TP * PP * DP
        for s in range(40):
            order = list(range(ranks))
            rng.shuffle(order)
            if s == 20:
                order.remove(5)  # a step without rank 5 (replica 1 then has 3 ranks)
            for r in order:
                dp = r // (TP * PP)
                node = f"node-{dp // 2}"
                if s >= 25 and r == 0:
                    node = "node-9"  # rank 0 moved: replica 0 now spans two nodes
                if s >= 30 and r == 12:
                    dp = 4  # rank 12 (on node-1) now says replica 4, which is on node-2
                mon.add(step(T0 + s + 0.001 * r, r, s, node=node, gpu=r % 8,
                             compute_ms=1000.0 * (1.2 if dp % 2 else 0.85),
                             tp=r % TP, pp=(r // TP) % PP, dp=dp), found)
            mon.expire(T0 + s + 0.9, found)
    finally:
        JobMonitor._one_node_replicas = orig  # type: ignore[method-assign]
    assert len(checked) >= 30, "the replica-imbalance path was not taken"
    # Replica 0 (4 ranks) spans two nodes from step 25, replica 4 (its 4 and rank 12) from 30.
    assert [int(n) for _, n in checked[-1:]] == [ranks - 4 - 5]


def test_one_node_replicas_is_not_taken_again_when_only_the_order_changes() -> None:
    mon = JobMonitor("job-1", Thresholds())
    found: list[Finding] = []
    ranks = TP * PP * DP
    layouts = []
    rng = random.Random(3)
    for s in range(30):
        order = list(range(ranks))
        rng.shuffle(order)
        for r in order:
            dp = r // (TP * PP)
            mon.add(step(T0 + s + 0.001 * r, r, s, node=f"node-{dp // 2}", gpu=r % 8,
                         compute_ms=1000.0 * (1.2 if dp % 2 else 0.85),
                         tp=r % TP, pp=(r // TP) % PP, dp=dp), found)
        mon.expire(T0 + s + 0.9, found)
        layouts.append(id(mon._layout_one))
    assert layouts[-1] != id(JobMonitor._layout_one), "never taken"
    first = layouts.index(layouts[-1])  # (a new job's first step is decided at its second)
    assert first <= 2
    taken = [i for i in range(first + 1, len(layouts)) if layouts[i] != layouts[i - 1]]
    assert taken == [], f"taken again at steps {taken} with the same layout"
