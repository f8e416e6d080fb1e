"""Room pcap29, round 29: a GPU's own SW power cap slowing its rank, paged 'unknown' first.

Twenty-ninth reporting corpus (seed 2902, every cell): one GPU at 0x4, its clock 19.3 % below
its own baseline and its node's other GPUs free, its rank 23.1 % slower than its peers.  The
impact rule (Correlator._power_impact) bounds what a cap explains by the clock loss beyond the
GPU's routine capping -- a 2.6 % dip minutes earlier left 20.7 % -- so the rank was escalated
slow_node/unknown with "ruled out: no thermal or power throttling on the GPU", and the
sustained-cap rule isolated it as power 3.7 s later: caught with the wrong cause.  A deep cap
on one GPU while its siblings run free is not that routine capping (the peers rule it out):
the whole clock loss counts, and the first page is the power isolation.
"""

from __future__ import annotations

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, healthy_job, thermal

GPU, RANK = 4, 4  # node-000 GPU 4 runs rank 4 (detector.testing.step)
SLOW_FROM, SLOW_TO, STEPS = 300, 420, 480
DROP, SLOWER, ROUTINE = 0.193, 1.2307, 0.06


def _polls(*, routine_dip: bool = True, siblings_capped: bool = False) -> list:
    out = []
    for i in range(STEPS):
        t = T0 + i + 0.5
        for n in range(2):
            for g in range(8):
                clock, bits, power = 1980.0, 0, 680.0
                mine = n == 0 and g == GPU
                if mine and SLOW_FROM <= i < SLOW_TO:
                    clock, bits, power = 1980.0 * (1.0 - DROP), 0x4, 577.0
                elif mine and routine_dip and 200 <= i < 204:
                    clock, bits, power = 1980.0 * (1.0 - ROUTINE), 0x4, 700.0  # routine
                elif siblings_capped and n == 0 and SLOW_FROM <= i < SLOW_TO:
                    clock, bits, power = 1980.0 * (1.0 - DROP), 0x4, 577.0
                out.append(thermal(t + 0.001 * g, f"node-{n:03d}", g, clock_mhz=clock,
                                   throttle=bits, power_w=power))
    return out


def _alerts(**kw: bool) -> list:
    steps = list(healthy_job(steps=STEPS, slow={RANK: SLOWER}, slow_from=SLOW_FROM,
                             slow_to=SLOW_TO))
    events = sorted(steps + _polls(**kw), key=lambda e: e.ts)
    return [a for a in feed(Engine(), events) if a.status == "firing"]


def test_a_gpu_capped_alone_past_a_routine_dip_is_paged_power_first() -> None:
    fired = _alerts()
    assert fired, "the capped GPU's slow rank was never paged"
    first = fired[0]
    assert (first.topic, first.kind, first.cause, first.scope.key) == (
        ISOLATION, "slow_node", "power", f"gpu:node-000/{GPU}"), fired
    assert not [a for a in fired if a.topic == ESCALATION], fired
    assert first.detected_ts - (T0 + SLOW_FROM) < 10.0  # before the sustained rule (~11 s)


def test_without_the_routine_dip_the_impact_rule_already_paged_power() -> None:
    fired = _alerts(routine_dip=False)
    assert [(a.topic, a.cause) for a in fired][:1] == [(ISOLATION, "power")], fired


def test_an_escalation_beside_a_cap_never_says_no_throttling() -> None:
    # The rank 50 % slow: more than the 19 % cap explains, escalated -- but not with
    # "ruled out: no thermal or power throttling on the GPU" while the GPU is at 0x4.
    steps = list(healthy_job(steps=STEPS, slow={RANK: 1.5}, slow_from=SLOW_FROM,
                             slow_to=SLOW_TO))
    events = sorted(steps + _polls(), key=lambda e: e.ts)
    esc = [a for a in feed(Engine(), events) if a.status == "firing" and a.topic == ESCALATION]
    assert esc, "the rank slower than its cap explains was not escalated"
    ruled = esc[0].evidence["ruled_out"]
    assert "no thermal or power throttling on the GPU" not in ruled, ruled
    assert any(r.startswith("not ruled out: throttle reasons 0x4") for r in ruled), ruled
