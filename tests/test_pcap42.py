"""Room pcap42, round 42: a GPU's power limit left low is a cause; a limit it shares is not.

blind32 F1: a GPU whose power limit was left at 440-480 W shows 0x4 on every row at its limit
while its node's other GPUs, busy on the same work and free of any cap, draw ~500-520 W; its
clock only 4-7 % down, its rank (its TP group) x1.10-1.12.  The impact rule bounds a cap's
slowdown by its sampled clock (1.04x), and a 4 % dip read as power management's routine few
percent: escalated slow_node/unknown, "no thermal or power throttling".  Under one limit (the
board's, a rack's, a site's) a capped GPU draws at least what its free mates do; one capped
drawing 5 % or more *below* them is held by a limit of its own (detector.thermal's
``_below_mates``, the correlator's ``_own_limit``).
"""

from __future__ import annotations

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, healthy_job, thermal

RANK = 4  # node-000 GPU 4 runs rank 4 (detector.testing.step)
SLOW_FROM, STEPS, SLOWER = 200, 300, 1.10
MATES_W = 515.0


def _polls(gpu: int, *, capped_w: float, clock_mhz: float = 1900.0, parked_first: bool = False,
           node_capped: bool = False) -> list:
    """10 s polls of two 8-GPU nodes, GPUs sampled in order; ``gpu`` of node-000 at 0x4 from
    SLOW_FROM drawing ``capped_w`` (its mates at MATES_W, free -- or capped alike)."""
    out = []
    for i in range(0, STEPS, 10):
        t = T0 + i + 0.5
        for n in range(2):
            for g in range(8):
                clock, bits, power = 1980.0, 0, MATES_W + 3.0 * (g % 3)
                if parked_first and i == 0:
                    clock, power = 345.0, 148.0  # (a parked clock, no idle bit)
                elif n == 0 and i >= SLOW_FROM and (g == gpu or node_capped):
                    clock, bits, power = clock_mhz, 0x4, capped_w
                out.append(thermal(t + 0.01 * g, f"node-{n:03d}", g, clock_mhz=clock,
                                   throttle=bits, power_w=power))
    return out


def _fired(gpu: int = RANK, slower: float = SLOWER, **kw) -> list:
    steps = list(healthy_job(steps=STEPS, slow={gpu: slower}, slow_from=SLOW_FROM))
    events = sorted(steps + _polls(gpu, **kw), key=lambda e: e.ts)
    return [a for a in feed(Engine(), events) if a.status == "firing"]


def _power_pages(fired: list, gpu: int) -> list:
    return [a for a in fired if (a.topic, a.kind, a.cause) == (ISOLATION, "slow_node", "power")
            and a.scope.node == "node-000" and a.scope.gpu in (gpu, None)]


def test_a_limit_left_low_below_free_mates_is_paged_power() -> None:
    fired = _fired(capped_w=470.0)  # 8.7 % below its mates, clock -4 %, rank x1.10
    assert _power_pages(fired, RANK), fired
    assert not [a for a in fired if a.topic == ESCALATION], fired
    first = fired[0]
    assert first.cause == "power" and first.detected_ts - (T0 + SLOW_FROM) < 15.0, first
    assert "below the" in first.evidence["recommended_because"], first.evidence


def test_a_cap_at_or_above_its_mates_draw_is_no_limit_left_low() -> None:
    # The board's limit: the capped GPU draws more than its free mates -- the clock rule
    # stands (a 4 % clock explains no 10 % slowdown: something else, escalated).
    fired = _fired(capped_w=700.0)
    assert not _power_pages(fired, RANK), fired
    assert [a for a in fired if a.topic == ESCALATION], fired


def test_a_cap_every_gpu_of_the_node_shares_is_no_limit_left_low() -> None:
    # Every GPU of node-000 capped alike at 470 W (a rack's or the node's limit): no free mate
    # to draw below, so this rule says nothing of the slow rank's GPU.
    fired = _fired(capped_w=470.0, node_capped=True)
    assert not [a for a in fired if a.scope.gpu == RANK and a.cause == "power"], fired


def test_a_parked_first_row_does_not_hide_the_cap() -> None:
    # The job's first row parked at 345 MHz without the idle bit: the clock baseline starts
    # again at the free clock, so the cap 4 % down is seen (blind32 zb-s0).
    fired = _fired(capped_w=470.0, parked_first=True)
    assert _power_pages(fired, RANK), fired
