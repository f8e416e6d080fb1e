"""old26 (round 26): blind14's psu-brake misses -- a node that is half of its peer group.

A PSU braking in 6-14 s bursts under a 30 s collector shows on one poll now and then (0x88
on every GPU of the node, the clock at 58 %); the node's ranks run 1.6x through each burst.
blind14 fleet (TP8 x DP2: the node is one of two replicas) and pipe (TP2 x PP4 x DP8: the
node holds 8 of stage 0's 16 ranks) put the braked node at HALF its ranks' peer group, so the
peer median sat between the halves (1.26x), no rank measured the burst rule's 30 % over it,
and a brake seen on a single poll during a burst (blind2 F3's page) found no burst to explain:
tune fleet-s2 gx-11, pipe-s2 hx01 and held pipe-s7 hx02 were never paged.  A burst is now a
rank ``gross_slowdown`` slower than HALF of its peers or more (steps.JobMonitor._check_burst).
"""

from __future__ import annotations

from msgspec.structs import replace

from detector.alerts import ISOLATION
from detector.testing import healthy_job
from tests.test_cause_round10 import _firing, _node_thermal

HALF = range(8)  # node-000's ranks / GPUs in a 16-rank job: half the job's one peer group


def _braked_half(bursts: list[tuple[int, int]], factor: float = 1.6, steps: int = 100,
                 slow_ranks: range = HALF) -> list:
    """A 16-rank data-parallel job on node-000 and node-001 stepping every 5 s; the ranks
    ``slow_ranks`` ``factor`` x slower on the steps of each ``(first, end)`` burst."""
    slow = {s for a, b in bursts for s in range(a, b)}
    return [replace(e, compute_ms=round(e.compute_ms * factor, 2))
            if e.step in slow and e.rank in slow_ranks else e
            for e in healthy_job(ranks=16, steps=steps, step_s=5.0)]


def _polls(braked: set[int], bits: int = 0x88, clock: float = 1155.0) -> list:
    """Both nodes' GPUs sampled every 30 s; on polls ``braked`` every GPU of node-000 reports
    ``bits`` at ``clock`` MHz (blind14's brake: 58 % of 1980)."""
    return _node_thermal(braked, bits=bits, clock=clock)


def test_a_brake_seen_once_during_a_burst_of_half_the_group_is_a_node_power_isolation() -> None:
    # Steps 41-43 (+205..+215 s) 1.6x on node-000's 8 of 16 ranks; the one braked poll at
    # +212.5 s falls inside.  On main: nothing (each slow rank 1.26x its group's median).
    assert _firing(_braked_half([(41, 44)]), _polls({7})) == [
        (ISOLATION, "slow_node", "power", "node:node-000")]


def test_a_half_group_burst_with_no_throttle_pages_nobody() -> None:
    assert _firing(_braked_half([(41, 44)]), _polls(set())) == []


def test_a_half_group_burst_beside_routine_power_capping_pages_nobody() -> None:
    assert _firing(_braked_half([(41, 44)]), _polls({7}, bits=0x4, clock=1742.0)) == []


def test_a_half_group_burst_long_before_the_brake_sample_pages_nobody() -> None:
    assert _firing(_braked_half([(10, 13)]), _polls({7})) == []


def test_more_than_half_of_the_group_slow_is_no_burst() -> None:
    # 9 of 16 ranks slow alike: the group's pace, no rank slower than half of its peers --
    # the brake on node-000 explains no burst (node-001's GPU 0 is slow with it).
    assert _firing(_braked_half([(41, 44)], slow_ranks=range(9)), _polls({7})) == []
