"""A GPU routinely capped a few percent explains no later slowdown (issue 10, powercap=fleet).

Ninth reporting corpus, powercap=fleet: a 10.4 % slowdown ramp on a GPU that power
management capped (0x4) on and off all along, 2-5 % below its clock baseline.  A dip that
small is ``throttle_minor`` (under ``clock_drop``), which was never remembered as the
GPU's routine capping, so every look at the slow rank found a recent minor cap that
"explained" it (up to twice its clock loss plus 3 %) until its run ended: never paged.
"""

from __future__ import annotations

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.testing import T0, feed, healthy_job, thermal


def capped(early: bool, *, seconds: int = 120) -> list:
    """GPU node-000/3 at 1 Hz: capped (0x4) 4 % below baseline over 10-40 s when ``early``,
    and from 60 s on."""
    out = []
    for t in range(seconds):
        on = (early and 10 <= t < 40) or t >= 60
        out.append(thermal(T0 + t + 0.5, "node-000", 3, temp_c=70.0 if on else 66.0,
                           clock_mhz=1980.0 * (0.96 if on else 1.0),
                           throttle=0x4 if on else 0, power_w=700.0 if on else 640.0))
    return out


def paged(early: bool, slowdown: float) -> list[tuple[str, str, str, str]]:
    steps = healthy_job(steps=120, slow={3: slowdown}, slow_from=62)
    alerts = feed(Engine(), sorted(list(steps) + capped(early), key=lambda e: e.ts),
                  finish=False)  # (finish() moves the clock past any excuse's end)
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


def test_a_slowdown_on_a_gpu_routinely_capped_as_deep_pages() -> None:
    # Capped 4 % before, its rank at its peers' pace: the same 4 % cap explains no 8 %.
    assert paged(True, 1.08) == [(ESCALATION, "slow_node", "unknown", "gpu:node-000/3")]


def test_a_new_minor_cap_still_explains_a_small_slowdown() -> None:
    # Never capped before: a rank 5 % slower under a new 4 % cap is power management at work.
    assert paged(False, 1.05) == []


def test_a_routinely_capped_gpu_whose_rank_keeps_pace_pages_nobody() -> None:
    assert paged(True, 1.0) == []
