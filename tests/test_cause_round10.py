"""Room cause, round 10: blind2's F3 and F4 (issue 10) -- a throttle's cause, told as it is.

F4: a GPU's thermal monitor told ``throttle_seen`` once when a reason with a clock drop first
appeared (a routine SW power cap, 0x4) and not again when the reasons turned to thermal
slowdown (0x60, 84 C): the correlator judged the slow rank against the stale 0x4 (routine,
no power-cap impact) and escalated it ``unknown`` before the thermal isolation came.
"""

from __future__ import annotations

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, healthy_job, thermal
from detector.thermal import GpuThermal, NodeTemps
from detector.thresholds import Thresholds

CFG = Thresholds()


def _node_samples(gpu_state) -> list:
    """node-000's 8 GPUs sampled every 30 s for 150 s; ``gpu_state(i)`` is GPU 3's
    (temp, clock, throttle) on sample ``i``, the others at 60 C, 1980 MHz, no reason."""
    out = []
    for i in range(6):
        ts = T0 + 0.5 + 30.0 * i
        for g in range(8):
            temp, clock, bits = gpu_state(i) if g == 3 else (60.0, 1980.0, 0)
            out.append(thermal(ts + 0.001 * g, "node-000", g, temp_c=temp, clock_mhz=clock,
                               throttle=bits))
    return out


def _capped_then_hot(i: int, hot_until: int = 99) -> tuple[float, float, int]:
    # sample 1: a routine SW cap (5 % down); from sample 2: 84 C, SW+HW thermal, 22 % down
    if i == 1:
        return 62.0, 1880.0, 0x4
    if 2 <= i <= hot_until:
        return 84.0, 1540.0, 0x60
    return 60.0, 1980.0, 0


def test_a_reason_change_while_seen_is_told_again() -> None:
    temps, out = NodeTemps(), []
    mon = GpuThermal("n1", 0, CFG, temps)
    for i, (temp, clock, bits) in enumerate([(60.0, 1980.0, 0), (62.0, 1880.0, 0x4),
                                             (84.0, 1540.0, 0x60)]):
        mon.update(thermal(T0 + 30.0 * i, "n1", 0, temp_c=temp, clock_mhz=clock,
                           throttle=bits), CFG, out)
    seen = [(f.cause, f.evidence["throttle_reasons"]) for f in out
            if f.signal == "throttle_seen" and f.active]
    assert seen == [("power", "0x4"), ("thermal", "0x60")]


def test_a_slow_rank_on_a_gpu_turned_hot_after_a_cap_is_one_thermal_isolation() -> None:
    # Rank 3 (node-000 GPU 3) 1.33x from step 62, the 84 C 0x60 sample at +60.5 s before it.
    job = healthy_job(steps=150, slow={3: 1.33}, slow_from=62)
    alerts = feed(Engine(), sorted([*job, *_node_samples(_capped_then_hot)],
                                   key=lambda e: e.ts), finish=False)
    firing = [a for a in alerts if a.status == "firing"]
    assert firing, "the hot GPU's slow rank is reported"
    assert (firing[0].topic, firing[0].cause, firing[0].scope.key) == (
        ISOLATION, "thermal", "gpu:node-000/3")
    assert len({a.dedup_key for a in firing}) == 1, "one problem, one page"


def test_a_hot_gpu_whose_rank_is_not_slower_pages_nobody() -> None:
    # The same telemetry for one sample only (cap, then one 84 C 0x60 sample), rank 3 at
    # its peers' pace: evidence, never a verdict.
    job = healthy_job(steps=150)
    samples = _node_samples(lambda i: _capped_then_hot(i, hot_until=2))
    alerts = feed(Engine(), sorted([*job, *samples], key=lambda e: e.ts), finish=False)
    assert [a for a in alerts if a.status == "firing"] == []
