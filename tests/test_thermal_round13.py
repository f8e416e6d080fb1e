"""Room sdc13, round 13: `hot_seen` judged against the GPU's own poll (power round 12, Not done).

A node's GPUs are sampled one after another (milliseconds apart), so a node's median of
latest temperatures, taken at the first GPUs of a poll, holds mostly the previous poll: after
a load step that heats the node as a whole, the first GPUs sampled stood out by all of it
(``hot_seen``) and held a slow rank's page for one more interval (blind2 ``bad-gpu-silent``:
6 of 16 pages 37 s later).  Now a GPU standing out against such a median is judged once most
of its poll is in, from a sibling's sample: a load step holds nothing, a GPU warming faster
than its node still does, wherever it falls in its poll.
"""

from __future__ import annotations

import pytest

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, healthy_job, thermal
from tests.test_power_round12 import FREE, IDLE, firing, node_polls, rack_cap


def _temps(temp_of, first: int = 0, samples: int = 9) -> list:
    """node-000 and node-001's 8 GPUs every 30 s, GPU ``first`` sampled first in each poll
    (then the others, 1 ms apart); GPU g of node n on sample i at ``temp_of(i, n, g)``."""
    return [thermal(T0 + 0.5 + 30.0 * i + 0.01 * n + 0.001 * ((g - first) % 8), f"node-00{n}",
                    g, temp_c=temp_of(i, n, g))
            for i in range(samples) for n in range(2) for g in range(8)]


def _pages(temps: list) -> list[tuple[str, str, str, float]]:
    events = sorted(list(healthy_job(steps=260, slow={3: 1.3}, slow_from=100)) + temps,
                    key=lambda e: e.ts)
    return [(a.topic, a.cause, a.scope.key, round(a.detected_ts - T0, 2))
            for a in feed(Engine(), events, finish=False) if a.status == "firing"]


def test_a_load_step_of_the_whole_node_does_not_hold_the_page() -> None:
    # node-000's GPUs heat 14 C together on the poll at +120.5 s (a job's load step), rank 3
    # (GPU 3, sampled 4th) slow for another reason since +100 s: paged `unknown` when it is
    # with the node steady -- not one interval and a quarter later (main: +159.0 s).
    plain = _pages(_temps(lambda i, n, g: 40.0))
    assert plain == [(ESCALATION, "unknown", "gpu:node-000/3", plain[0][3])]
    for first in (0, 3, 5):  # GPU 3 sampled 4th, first, last-but-two in its poll
        step = _pages(_temps(lambda i, n, g: 54.0 if n == 0 and i >= 4 else 40.0, first))
        # (the same page; its time by GPU 3's own sample, a few ms apart as it moves in its
        # poll -- wait44: a rank waits for its own GPU's sample, not its node's last phase)
        assert [p[:3] for p in step] == [p[:3] for p in plain], first
        assert step[0][3] == pytest.approx(plain[0][3], abs=0.05), first


def test_a_gpu_warming_faster_than_its_node_still_holds_the_page_wherever_it_is_sampled() -> None:
    # GPU 3 8 C over its node's others on the sample after its rank slowed (+120.5 s), 8 C
    # more than on the one before; 24 C over on the next: one thermal isolation, first or
    # last in its poll alike.
    def temp(i: int, n: int, g: int) -> float:
        return {4: 68.0, 5: 84.0}.get(i, 84.0 if i > 5 else 60.0) if (n, g) == (0, 3) else 60.0
    for first in (0, 3, 4):  # GPU 3 sampled 4th, first, last
        pages = _pages(_temps(temp, first))
        assert [p[:3] for p in pages] == [(ISOLATION, "thermal", "gpu:node-000/3")], first


# -- power round 12's other open item: one busy GPU of a node under a rack cap -------------
#
# What is right: a rack's power limit lowered holds every busy GPU of the rack alike, and a
# node whose job uses one GPU (the other seven idle, 0x1) has no busy sibling to share it with
# -- but the GPUs of the other node under the same cap, begun in the same minute, are its
# peers: the cap is the rack's (facility power management), no GPU's fault, and nobody is
# paged, as for the busy node beside it.  faultline judges a GPU's cap against its own node
# only (NodeTemps.cap_shared) and the correlator's facility rule wants 3 nodes: the lone busy
# GPU was isolated `slow_node/power`.  Fixed by power14: the node's only busy GPU under a cap
# is judged across nodes (Correlator._node_cap).  (Without temperatures: with them the lone
# busy GPU was isolated `thermal` first -- below, fixed too.)


def _no_temps(state) -> list:
    return [e._replace(gpu_temp_c=None, mem_temp_c=None) for e in node_polls(state)]


# (Was a strict xfail, fixed by power14: a rack cap on two nodes, one of them running the job
# on a single GPU (7 idle): that GPU has no busy sibling under the cap and is isolated
# slow_node/power (NodeTemps.cap_shared looks at its own node, the correlator's facility rule
# wants 3 nodes))
def test_a_rack_cap_on_a_node_with_one_busy_gpu_pages_nobody() -> None:
    def one_busy(n: int, g: int, t: float) -> str:
        return IDLE if n == 1 and g != 0 else rack_cap(n, g, t)
    assert firing(_no_temps(one_busy)) == []


def test_a_gpu_capped_alone_while_its_rack_runs_free_is_still_paged() -> None:
    # The control: the same lone busy GPU capped while the other node's GPUs run free is an
    # exception among the rack's busy GPUs -- a supply that cannot keep up -- and isolated.
    def lone_cap(n: int, g: int, t: float) -> str:
        return (IDLE if g != 0 else rack_cap(n, g, t)) if n == 1 else FREE
    assert firing(_no_temps(lone_cap)) == [(ISOLATION, "slow_node", "power", "gpu:node-001/0")]


# -- found on the way: a busy GPU beside idle siblings is "hot" against them ----------------
#
# The cooling rule compares a GPU with the median of its node's GPUs (same inlet air), idle
# ones included: a healthy GPU running a one-GPU job at 61 C beside seven idle siblings at
# 28 C is 33 C "above its node" and isolated slow_node/thermal after 3 samples.  What is right:
# idle GPUs (0x1) are no peers for temperature either -- as for the power cap, the reference
# is the node's busy GPUs (and none, fewer than 4 of them).  Fixed by power14
# (NodeTemps.reference and poll_median take busy GPUs only).


# (Was a strict xfail, fixed by power14: a healthy busy GPU (61 C) beside 7 idle siblings (28
# C, 0x1) is isolated slow_node/thermal: NodeTemps.reference takes idle GPUs' temperatures
# into the median)
def test_a_busy_gpu_beside_idle_siblings_is_not_hot() -> None:
    assert firing(node_polls(lambda n, g, t: IDLE if n == 1 and g != 0 else FREE)) == []


def test_a_gpu_hot_against_busy_siblings_is_still_isolated() -> None:
    # The control: the same GPU 33 C over busy siblings is a cooling fault.
    hot = [e._replace(gpu_temp_c=94.0) if (e.node, e.gpu) == ("node-001", 0) else e
           for e in node_polls(lambda n, g, t: FREE)]
    assert firing(hot) == [(ISOLATION, "slow_node", "thermal", "gpu:node-001/0")]
