"""Room cause, round 10: blind2's F3 and F4 (issue 10) -- a throttle's cause, told as it is.

F4: a GPU's thermal monitor told ``throttle_seen`` once when a reason with a clock drop first
appeared (a routine SW power cap, 0x4) and not again when the reasons turned to thermal
slowdown (0x60, 84 C): the correlator judged the slow rank against the stale 0x4 (routine,
no power-cap impact) and escalated it ``unknown`` before the thermal isolation came.
"""

from __future__ import annotations

from msgspec.structs import replace

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


# F3: a power brake in bursts (0x88 on every GPU of a node, its ranks 2.3x slow a few steps a
# burst, one 30 s sample inside it): the CUSUM clips each step and the burst ends before it
# alarms, so no slow_rank was ever found and nobody was paged.  A burst of >= 30 % slower
# steps (steps.JobMonitor._check_burst) is evidence; with a never-routine reason seen by a
# sample taken during it, a recommendation.

NODE0 = range(8)  # node-000's ranks / GPUs in a 32-rank job (detector.testing.step)


def _braked_job(bursts: list[tuple[int, int]], factor: float = 2.3, steps: int = 100) -> list:
    """A 32-rank job stepping every 5 s; node-000's 8 ranks ``factor`` x slower on the steps
    of each ``(first, end)`` burst."""
    slow = {s for a, b in bursts for s in range(a, b)}
    return [replace(e, compute_ms=round(e.compute_ms * factor, 2))
            if e.step in slow and e.rank in NODE0 else e
            for e in healthy_job(ranks=32, steps=steps, step_s=5.0)]


def _node_thermal(braked_samples: set[int], bits: int = 0x88, clock: float = 825.0,
                  samples: int = 17) -> list:
    """node-000 and node-001's GPUs sampled every 30 s; on samples ``braked_samples`` every
    GPU of node-000 reports ``bits`` at ``clock`` MHz."""
    out = []
    for i in range(samples):
        ts = T0 + 2.5 + 30.0 * i
        for node in ("node-000", "node-001"):
            for g in range(8):
                on = node == "node-000" and i in braked_samples
                out.append(thermal(ts + 0.001 * g, node, g, temp_c=60.0,
                                   clock_mhz=clock if on else 1980.0, throttle=bits if on else 0))
    return out


def _firing(*streams: list) -> list[tuple[str, str, str, str]]:
    alerts = feed(Engine(), sorted([e for s in streams for e in s], key=lambda e: e.ts),
                  finish=False)
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


def test_a_power_brake_burst_seen_by_one_sample_is_a_node_power_isolation() -> None:
    # Two slow steps, 42 and 43 (+205..+215 s); the 30 s sample at +212.5 s falls inside.
    assert _firing(_braked_job([(42, 44)]), _node_thermal({7})) == [
        (ISOLATION, "slow_node", "power", "node:node-000")]


def test_a_one_sample_brake_blip_with_no_slow_rank_pages_nobody() -> None:
    assert _firing(_braked_job([]), _node_thermal({7})) == []


def test_a_burst_beside_routine_power_capping_on_every_gpu_pages_nobody() -> None:
    # The same burst (a loader stall, say) while every GPU of the node is SW power capped
    # (0x4, clock 12 % down) on that sample: routine capping explains no burst.
    assert _firing(_braked_job([(42, 44)]), _node_thermal({7}, bits=0x4, clock=1742.0)) == []


def test_a_burst_with_no_throttle_pages_nobody() -> None:
    assert _firing(_braked_job([(42, 44)]), _node_thermal(set())) == []


def test_a_burst_long_before_the_brake_sample_pages_nobody() -> None:
    # Slow steps 10-11 (+45..+55 s), the brake on one sample at +212.5 s: not the same time.
    assert _firing(_braked_job([(10, 12)]), _node_thermal({7})) == []


def test_a_second_burst_is_no_page_without_a_sample_in_either() -> None:
    # Two bursts (+195..+205 s, +245..+255 s), the brake on the samples at +152.5 and
    # +482.5 s, before and after them and 330 s apart (beyond brake_repeat_s, so not one
    # sustained brake either): never seen meanwhile.
    assert _firing(_braked_job([(40, 42), (50, 52)]), _node_thermal({5, 16})) == []


def test_a_brake_seen_on_two_polls_within_the_repeat_window_is_a_node_power_isolation() -> None:
    # The same bursts with the brake on the samples at +152.5 and +272.5 s (120 s apart):
    # a HW power brake on every GPU of the node twice within brake_repeat_s is sustained,
    # never routine (therm24, blind14 N3) -- a page whether or not a sample fell in a burst.
    assert _firing(_braked_job([(40, 42), (50, 52)]), _node_thermal({5, 9})) == [
        (ISOLATION, "slow_node", "power", "node:node-000")]
