"""brake45 (round 45, issue 10): application clocks on several GPUs of a node are the node's
setting (revA44 F4), whatever order its GPUs' rows come in; a setting the job's nodes share is
its profile and explains no node; GPUs of a node braking in turn are its brake (F5) beside a
GPU braking alone on another node.

Probes in process (Engine, no broker), built on tests/test_revA44.py's jobs, with the GPUs of
a poll on random phases (a collector querying them one by one) -- revA44's rows came at 0.3 s
a GPU, so a slow rank was decided after every GPU's sample of the poll.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_revA44 import CLOCK, HELD, _brake_rows, _firing

from detector.engine import Engine
from detector.events import ThermalSample
from detector.testing import T0, feed, step


def _held_job(held: set[tuple[int, int]], slow: dict[int, float], *, nodes: int = 4,
              interval: float = 30.0, seed: int = 4505) -> list:
    """A DP job on ``nodes`` x 8 GPUs (1 s steps, 700 ms compute +-1.2 %); from 120 s the GPUs
    (node, gpu) of ``held`` show 0x2 at HELD MHz and rank r of ``slow`` computes x slow[r];
    every GPU sampled each ``interval`` s on a phase of its own (seeded)."""
    rng = np.random.default_rng(seed)
    n = nodes * 8
    out: list = []
    for s in range(400):
        end = T0 + 1.0 + s
        c = 700.0 * rng.lognormal(0.0, 0.012, n)
        if end >= T0 + 120.0:
            for r, f in slow.items():
                c[r] *= f
        out += [step(end + 0.001 * r, r, s, step_ms=round(float(c.max()) + 250.0, 2),
                     compute_ms=round(float(c[r]), 2)) for r in range(n)]
    phase = rng.uniform(0.0, interval, (nodes, 8))
    for k in range(int(400 / interval)):
        for ni in range(nodes):
            for g in range(8):
                ts = T0 + k * interval + phase[ni, g]
                on = ts >= T0 + 120.0 and (ni, g) in held
                out.append(ThermalSample(ts, f"node-{ni:03d}", g, 60.0 + 0.2 * g, 68.0,
                                         560.0 if on else 640.0, HELD if on else CLOCK,
                                         0x2 if on else 0))
    return sorted(out, key=lambda e: e.ts)


@pytest.mark.parametrize("seed", [450501, 450502, 450503, 450504])
@pytest.mark.parametrize("held", [(2, 5), (0, 1, 2, 3), tuple(range(8))],
                         ids=["two", "half", "all-eight"])
def test_application_clocks_on_gpus_of_a_node_sampled_on_their_own_phases_are_one_node_page(
        held: tuple[int, ...], seed: int) -> None:
    # main: a GPU page (reset_clocks for the GPU sampled first) -- or, once a second GPU's
    # 0x2 was in before its rank was decided, the node's own slowness escalated
    slow = {g: CLOCK / HELD for g in held}
    alerts = feed(Engine(), _held_job({(0, g) for g in held}, slow, seed=seed), finish=False)
    fired = _firing(alerts)
    assert [f[:3] for f in fired] == [("isolation", "power", "node:node-000")], fired
    page = next(a for a in alerts if a.status == "firing")
    assert page.action.name == "reset_clocks"
    assert "-i " not in page.action.detail  # (the node's GPUs, not one of them)


def test_one_gpus_application_clocks_stay_its_own_page() -> None:
    # brake43's F3 shape on random phases: the GPU's page, reset_clocks for it alone
    alerts = feed(Engine(), _held_job({(0, 4)}, {4: CLOCK / HELD}, seed=450505), finish=False)
    assert [f[:3] for f in _firing(alerts)] == [("isolation", "power", "gpu:node-000/4")]


def test_a_profile_the_jobs_nodes_share_explains_no_nodes_slowness() -> None:
    # 0x2 on half of every node (the job's profile); node-000's GPU 6 -- free of it -- and
    # node-000's held GPUs 0-3 slowed 12 % more than the profile's own ranks: not the node's
    # application clocks (its mates on every node hold the same)
    held = {(n, g) for n in range(4) for g in range(4)}
    slow = {r: CLOCK / HELD for r in range(32) if r % 8 < 4}
    slow.update({r: 1.12 * CLOCK / HELD for r in range(4)})
    fired = _firing(feed(Engine(), _held_job(held, slow, seed=450506), finish=False))
    assert ("isolation", "power", "node:node-000") not in [f[:3] for f in fired], fired


def test_gpus_braking_in_turn_beside_a_gpu_braking_alone_on_another_node() -> None:
    # node-000's GPUs 3 and 5 in turn: the node's page; node-001's GPU 2 alone: its own
    rows = _brake_rows({6: {3}, 8: {5}, 9: {3}, 11: {5}, 13: {3}, 15: {5}}, 10.0, 30)
    other = [ThermalSample(e.ts + 0.05, "node-001", e.gpu, e.gpu_temp_c, e.mem_temp_c,
                           e.power_w, e.sm_clock_mhz, e.throttle)
             for e in _brake_rows({7: {2}, 10: {2}, 12: {2}, 14: {2}}, 10.0, 30)]
    fired = _firing(feed(Engine(), sorted(rows + other, key=lambda e: e.ts), finish=False))
    assert sorted(f[:3] for f in fired) == [("isolation", "power", "gpu:node-001/2"),
                                            ("isolation", "power", "node:node-000")], fired
