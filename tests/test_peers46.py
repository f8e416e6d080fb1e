"""peers46 (round 46, issue 10): jobs with two peers -- which of two is slow.

A data-parallel job of two ranks has no peer median: the partner is the referee.  The rank
whose own compute rose against its own past while its partner's held its pace, and whom its
partner waits for in the collective, is the slow one (detector/steps/duo.py's
``_duo_update``; revA45 F2: 9 % / 15 % for 600 steps never paged).  Workload effects move
both ranks (a job-wide change) or one up and the other down (a sequence-length imbalance
moving between the two): no page.  A loader stall is no compute.

Probes in process (Engine, no broker, no wall clock); seeds 4605xx.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from detector.engine import Engine
from detector.testing import T0, feed, step


def _firing(alerts) -> list[tuple[str, str, str, float]]:
    """(topic's last word, cause, scope key, detected_ts - T0) of every firing message."""
    return [(a.topic.split(".")[1], a.cause, a.scope.key, round(a.detected_ts - T0, 1))
            for a in alerts if a.status == "firing"]


STEP_S = 0.45


def _pair(*, steps: int = 600, seed: int = 0, sigma: float = 0.01, rho: float = 0.0,
          slow: dict[int, tuple[int | float, ...]] | None = None,
          imbalance: tuple[str, float, int] | None = None,
          stall: tuple[int, int, int, float] | None = None, fields: str = "all",
          job_change: tuple[float, int] | None = None) -> list:
    """A synchronous DP job of two ranks on two one-GPU nodes (tests/test_revA45.py's
    ``_dp_job``: 0.45 s steps, compute 270 ms x (1 + noise), loader 127 ms +-5 %, all-reduce
    50 ms +-3 %), noise ``sigma`` an AR(1) ``rho`` per rank.  ``slow``: rank -> (factor, from
    step[, to step]).  ``imbalance``: a sequence-length imbalance -- ("swap", amp, period): one rank
    draws ``amp`` more tokens and the other ``amp`` less, the two swapping every ``period``
    steps; ("one", amp, period): one rank ``amp`` more, the other as it was, turn about;
    ("draw", amp, 0): each step's lognormal ``amp`` a rank.  ``stall``: (rank, from, steps,
    ms) its loader ``ms`` longer.  ``fields``: "all", "no-compute" (compute_ms absent: the
    detector reads step_ms - comm_ms), "step-only" (neither).  ``job_change``: (factor, from
    step) both ranks' compute."""
    rng = np.random.default_rng(seed)
    e = rng.normal(0.0, 1.0, (steps + 200, 2))
    x = np.zeros_like(e)
    for t in range(1, len(e)):
        x[t] = rho * x[t - 1] + math.sqrt(1.0 - rho * rho) * e[t]
    x = sigma * x[200:]
    out = []
    for st in range(steps):
        c = 270.0 * (1.0 + x[st])
        if imbalance is not None:
            kind, amp, period = imbalance
            if kind == "draw":
                c *= rng.lognormal(0.0, amp, 2)
            else:
                turn = (st // period) % 2
                c[turn] *= 1.0 + amp
                if kind == "swap":
                    c[1 - turn] *= 1.0 - amp
        if job_change is not None and st >= job_change[1]:
            c *= job_change[0]
        for r, (f, start, *end) in (slow or {}).items():
            if start <= st < (end[0] if end else steps):
                c[r] *= f
        h = 127.0 * rng.uniform(0.95, 1.05, 2)
        if stall is not None and stall[1] <= st < stall[1] + stall[2]:
            h[stall[0]] += stall[3]
        top = float((c + h).max())
        ar = 50.0 * rng.normal(1.0, 0.03)
        for r in range(2):
            cm = max(top - (c[r] + h[r]) + ar, 0.0)
            sm = round(top + ar + 0.001, 3)
            out.append(step(T0 + st * STEP_S + 0.001 * r, r, st, step_ms=sm,
                            compute_ms=round(float(c[r]), 3) if fields == "all" else None,
                            comm_ms=round(cm, 3) if fields != "step-only" else None,
                            dp=r, pp=0, node=f"node-{r:03d}", gpu=0))
    return out


def _pages(**kw) -> list[tuple[str, str, str, float]]:
    return _firing(feed(Engine(), _pair(**kw)))


ONSET = 200 * STEP_S  # (the slowdowns below begin at step 200)


@pytest.mark.parametrize("seed", [460520, 460521, 460522])
def test_a_ten_percent_slow_rank_of_a_two_rank_job_is_paged_within_ten_steps(seed: int) -> None:
    # (revA45 F2: never paged -- _check_pair asks 20 % for 20 steps; found 4-6 steps in, its
    # escalation 3 s after)
    alerts = [a for a in feed(Engine(), _pair(seed=seed, slow={1: (1.10, 200)}))
              if a.status == "firing"]
    assert [f[:3] for f in _firing(alerts)] == [("escalation", "unknown", "gpu:node-001/0")]
    sig = alerts[0].evidence["signals"][0]
    assert sig["partner"] == 0 and sig["past_ratio"] > 1.05, sig
    assert sig["step"] - 200 <= 10, sig


def test_a_nine_percent_slow_rank_on_noise_with_memory_is_paged() -> None:
    # 2 % AR(1) 0.55 noise a rank: 7 of 8 seeds paged 6-38 steps in (460510-460517; 460511
    # not in 400 steps: its partner's smoothed change left its pace)
    fired = _pages(seed=460512, sigma=0.02, rho=0.55, slow={0: (1.09, 200)})
    assert [f[:3] for f in fired] == [("escalation", "unknown", "gpu:node-000/0")], fired
    assert fired[0][3] - ONSET <= 20 * STEP_S


def test_a_slowdown_that_ends_is_cleared() -> None:
    alerts = feed(Engine(), _pair(seed=460523, slow={0: (1.12, 200, 400)}))
    assert [(a.status, a.scope.key) for a in alerts] == [
        ("firing", "gpu:node-000/0"), ("resolved", "gpu:node-000/0")]


@pytest.mark.parametrize("kw", [
    {},
    {"sigma": 0.02, "rho": 0.55},
    {"sigma": 0.03, "rho": 0.9},
    {"imbalance": ("swap", 0.05, 20)},
    {"imbalance": ("swap", 0.08, 200)},
    {"imbalance": ("one", 0.1, 50)},
    {"imbalance": ("draw", 0.2, 0)},
    {"job_change": (1.5, 300)},
    {"job_change": (0.8, 300)},
    {"stall": (0, 300, 30, 100.0)},
    {"stall": (1, 300, 200, 60.0)},
    {"stall": (1, 300, 200, 60.0), "fields": "no-compute"},
], ids=["iid", "ar0.55", "ar0.9", "swap5%-20", "swap8%-200", "one10%-50", "draw0.2",
        "job-x1.5", "job-x0.8", "stall-30", "stall-200", "stall-200-no-compute"])
def test_a_two_rank_jobs_workload_pages_nobody(kw: dict) -> None:
    # healthy noise, a sequence-length imbalance moving between the two ranks (one up and the
    # other down, or one up then the other, or drawn each step), a job-wide change, a loader
    # stall: 0 pages in 1,500 steps (3 seeds each when probed, 460510-460512)
    assert _pages(seed=460510, steps=1500, **kw) == []


def test_a_two_rank_job_with_only_step_ms_tells_no_slow_rank() -> None:
    # (the limit README's detector table states: with neither compute_ms nor comm_ms a step's
    # time is the slower rank's on both -- nothing tells which of two is slow)
    assert _pages(seed=460524, slow={1: (1.3, 200)}, fields="step-only") == []


def test_a_tp_group_of_a_two_replica_job_slowed_with_nothing_shown_is_paged_at_its_node() -> None:
    # (revA45 F6 with no GPU showing why: never paged; now its node's ranks are found against
    # their partners on the other replica, 4 steps in)
    from tests.test_revA45 import _tp_node
    fired = _firing(feed(Engine(), _tp_node(nodes=2, seed=460525, shows="nothing",
                                            factor=1.12), finish=False))
    assert [f[:3] for f in fired] == [("escalation", "unknown", "node:node-000")], fired
    assert fired[0][3] - 120.0 <= 15.0
