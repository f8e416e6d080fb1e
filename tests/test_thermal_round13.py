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

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, healthy_job, thermal


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
        assert step == plain, first


def test_a_gpu_warming_faster_than_its_node_still_holds_the_page_wherever_it_is_sampled() -> None:
    # GPU 3 8 C over its node's others on the sample after its rank slowed (+120.5 s), 8 C
    # more than on the one before; 24 C over on the next: one thermal isolation, first or
    # last in its poll alike.
    def temp(i: int, n: int, g: int) -> float:
        return {4: 68.0, 5: 84.0}.get(i, 84.0 if i > 5 else 60.0) if (n, g) == (0, 3) else 60.0
    for first in (0, 3, 4):  # GPU 3 sampled 4th, first, last
        pages = _pages(_temps(temp, first))
        assert [p[:3] for p in pages] == [(ISOLATION, "thermal", "gpu:node-000/3")], first
