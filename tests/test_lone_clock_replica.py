"""b15fix (round 24): a slow replica whose one GPU runs under load well below its job's clock
with no clock-event reason is that GPU's escalation, the replica's slowness its evidence
(blind15 O2: a stage GPU at 1455 MHz against 1980; the job's timer holds the pipeline's waits,
so all 16 ranks of its replica looked slow and the replica was paged, never the GPU).  A clock
below peers alone pages nothing; two such GPUs in the replica leave it the replica's."""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.testing import T0, feed, thermal
from tests.test_review_round13 import _tp_group_slow


def _with_clocks(low: dict[tuple[str, int], float]) -> list:
    """TP8 x DP4 on 4-GPU nodes (replica 0 on node-000 and node-001, slow 10 % from step
    120), every GPU's thermal row every 10 s: busy at 1980 MHz, ``low`` GPUs at theirs from the
    start, no throttle reason."""
    steps = _tp_group_slow(8)
    rows = [thermal(T0 + 10.0 * i + 0.01 * g, f"node-{n:03d}", g,
                    clock_mhz=low.get((f"node-{n:03d}", g), 1980.0))
            for i in range(50) for n in range(8) for g in range(4)]
    return sorted(steps + rows, key=lambda e: e.ts)


def _fired(events: list) -> list[tuple[str, str]]:
    return [(a.kind, a.scope.key) for a in feed(Engine(), events) if a.status == "firing"]


def test_a_slow_replicas_one_gpu_below_the_jobs_clock_is_escalated_not_the_replica() -> None:
    assert _fired(_with_clocks({("node-001", 1): 1455.0})) == [("slow_node", "gpu:node-001/1")]


@pytest.mark.parametrize("low", [
    {},  # no GPU below: the replica's (test_review_round13)
    {("node-000", 2): 1455.0, ("node-001", 1): 1455.0},  # two: no one GPU to name
    {("node-001", 1): 1900.0},  # 4 % below (a routine power cap's step): no held clock
])
def test_control_the_replica_stays_the_replicas(low: dict) -> None:
    assert _fired(_with_clocks(low)) == [("slow_node", "replica:job-1/0")]
