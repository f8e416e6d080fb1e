"""wait25 (round 25): a busy GPU's clock falling with no clock-event reason is told to the
correlator on the sample that shows it (blind15 O2's 3 of 8: held pipe-s6 pp05/3 at 1545 MHz
from +242 s on 10 s rows; the thermal monitor's quiet path took those rows as healthy -- the
same interval, no reason bit, not hot -- so the `sm_clock` evidence came 30 s later, from
the general path, after the slow replica had been paged as the replica)."""

from __future__ import annotations

from detector.engine import Engine
from detector.testing import T0, feed, thermal
from tests.test_review_round13 import _tp_group_slow


def _clock_falls(gpu: tuple[str, int] | None, clock: float, first: int = 24) -> list:
    """TP8 x DP4 on 4-GPU nodes, replica 0 (node-000, node-001) 10 % slow from step 120
    (+240 s); every GPU's row every 10 s busy at 1980 MHz, ``gpu`` at ``clock`` from row
    ``first`` (+240.01 s: just after the slowdown began, before the replica is decided)."""
    steps = _tp_group_slow(8)
    rows = [thermal(T0 + 10.0 * i + 0.01 * g, f"node-{n:03d}", g,
                    clock_mhz=clock if (f"node-{n:03d}", g) == gpu and i >= first else 1980.0)
            for i in range(50) for n in range(8) for g in range(4)]
    return sorted(steps + rows, key=lambda e: e.ts)


def _fired(events: list) -> list[tuple[str, str]]:
    return [(a.kind, a.scope.key) for a in feed(Engine(), events) if a.status == "firing"]


def test_a_clock_falling_with_no_reason_after_the_slowdown_names_the_gpu() -> None:
    assert _fired(_clock_falls(("node-001", 1), 1455.0)) == [("slow_node", "gpu:node-001/1")]


def test_control_a_clock_falling_4_percent_leaves_the_replica() -> None:
    # (a routine cap's step: no held clock; and none at all)
    assert _fired(_clock_falls(("node-001", 1), 1900.0)) == [("slow_node", "replica:job-1/0")]
    assert _fired(_clock_falls(None, 1980.0)) == [("slow_node", "replica:job-1/0")]
