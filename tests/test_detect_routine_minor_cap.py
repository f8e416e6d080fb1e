"""A GPU routinely capped a few percent explains no later slowdown (issue 10, powercap=fleet).

Ninth reporting corpus, powercap=fleet: a 10.4 % slowdown ramp on a GPU that power
management capped (0x4) on and off all along, 2-5 % below its clock baseline.  A dip that
small is ``throttle_minor`` (under ``clock_drop``), which was never remembered as the
GPU's routine capping, so every look at the slow rank found a recent minor cap that
"explained" it (up to twice its clock loss plus 3 %) until its run ended: never paged.
"""

from __future__ import annotations

from detector.alerts import ESCALATION
from detector.testing import firing_beside_slow_rank, power_capped


def paged(early: bool, slowdown: float) -> list[tuple[str, str, str, str]]:
    """GPU node-000/3 capped (0x4) 4 % below baseline over 10-40 s when ``early``, and from
    60 s on; its rank ``slowdown`` x from step 62."""
    capped = power_capped(lambda t: 0.04 if (early and 10 <= t < 40) or t >= 60 else 0.0)
    return firing_beside_slow_rank(capped, slowdown)


def test_a_slowdown_on_a_gpu_routinely_capped_as_deep_pages() -> None:
    # Capped 4 % before, its rank at its peers' pace: the same 4 % cap explains no 8 %.
    assert paged(True, 1.08) == [(ESCALATION, "slow_node", "unknown", "gpu:node-000/3")]


def test_a_new_minor_cap_still_explains_a_small_slowdown() -> None:
    # Never capped before: a rank 5 % slower under a new 4 % cap is power management at work.
    assert paged(False, 1.05) == []


def test_a_routinely_capped_gpu_whose_rank_keeps_pace_pages_nobody() -> None:
    assert paged(True, 1.0) == []
