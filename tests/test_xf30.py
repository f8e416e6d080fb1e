"""xf30 (round 30): the twenty-ninth reporting corpus's leftovers (issue 10).

1. A power brake (0x80: a reason a node's supply asserts on all its GPUs) on a slow rank's GPU
   waited ``why_wait_s`` (3 s) for the node's other GPUs' samples of the same poll
   (Correlator._throttle_impact), though at dcgm-exporter's 30 s they come in the same scrape
   with the same ts: 3 steps on 6 of 20 power faults (seeds 2880-2899), interval-30-s2901's
   power fault caught with the wrong cause.  The poll is in once every GPU of the node has
   reported it (detector.thermal's ``poll_in``, told only for a poll with a GPU braking alone);
   a sibling whose sample is not in keeps the wait, as before.
"""

from __future__ import annotations

import msgspec
import numpy as np

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, parallel_step, thermal

SLOW_FROM = 120          # the slowdown's first step (step s ends at T0 + s)
PHASE = 25.4             # every node's samples at T0 + PHASE + 30 k (dcgm-exporter's 30 s)
NEXT_SAMPLE = 145.4      # the first sample after the slowdown began


def _run(braking: dict[int, float], *, skew: dict[int, float] | None = None,
         no_temp: int | None = None, slow: tuple[int, ...] = (3,), order: str = "gpu") -> list:
    """16 ranks (DP 16, TP 1) on node-000/001, 1 s steps; the ranks in ``slow`` 12 % slower
    from SLOW_FROM.  Every GPU sampled every 30 s, clean; from NEXT_SAMPLE on the node-000 GPUs
    in ``braking`` (GPU -> the lag of their brake's first sample: 0.0 is the same poll) show
    the brake 0x80 at the clock that explains the 12 %.  ``skew``: GPU -> seconds its samples
    come after the poll's ts (the same poll, a later scrape); ``no_temp``: a node-000 GPU that
    reports no temperature.  ``order`` "gpu": the poll's samples by GPU number; "last": the
    braking GPU's sample the poll's last."""
    rng = np.random.default_rng(30)
    events: list = []
    for s in range(240):
        compute = 700.0 * rng.lognormal(0.0, 0.015, 16)
        if s >= SLOW_FROM:
            for r in slow:
                compute[r] *= 1.12
        events += parallel_step(s, compute, tp=1, pp=1)
    skew = skew or {}
    for k in range(8):
        poll = T0 + PHASE + 30.0 * k
        batch = []
        for n in range(2):
            for g in range(8):
                ts = poll + (skew.get(g, 0.0) if n == 0 else 0.0)
                lag = braking.get(g) if n == 0 else None
                braked = lag is not None and poll >= T0 + NEXT_SAMPLE + lag
                sample = thermal(ts, f"node-{n:03d}", g, throttle=0x80 if braked else 0,
                                 clock_mhz=1980.0 / 1.12 if braked else 1980.0,
                                 power_w=480.0 if braked else 640.0)
                if n == 0 and g == no_temp:
                    sample = msgspec.structs.replace(sample, gpu_temp_c=None, mem_temp_c=None)
                batch.append(sample)
        if order == "last":
            batch.sort(key=lambda e: (e.node == "node-000" and e.gpu in braking))
        events += batch
    events.sort(key=lambda e: e.ts)
    return [a for a in feed(Engine(), events, finish=False) if a.status == "firing"]


def _first(alerts: list) -> tuple[str, str, str, str, float]:
    a = alerts[0]
    return (a.topic, a.kind, a.cause, a.scope.key, round(a.detected_ts - T0, 1))


def test_a_brake_on_one_gpu_is_decided_once_its_nodes_poll_is_in() -> None:
    # GPU 3's siblings' samples of the same poll (same ts) come right after its own: nothing
    # is left to wait for.  Main waited why_wait_s: the page at 148.4, three steps later.
    first = _first(_run({3: 0.0}))
    assert first == (ISOLATION, "slow_node", "power", "gpu:node-000/3", NEXT_SAMPLE)


def test_the_braking_gpus_sample_the_polls_last_decides_at_once() -> None:
    first = _first(_run({3: 0.0}, order="last"))
    assert first == (ISOLATION, "slow_node", "power", "gpu:node-000/3", NEXT_SAMPLE)


def test_a_sibling_sampled_later_in_the_same_poll_still_waits_and_finds_the_node() -> None:
    # The node's brake on every GPU, GPUs 5-7 scraped 2 s after the others (the same poll):
    # the wait holds until their samples are in, and the node is the unit -- one page.
    skew = {5: 2.0, 6: 2.0, 7: 2.0}
    alerts = _run({g: 0.0 for g in range(8)}, skew=skew)
    assert _first(alerts)[:4] == (ISOLATION, "slow_node", "power", "node:node-000")
    assert [a.scope.key for a in alerts if a.topic == ISOLATION] == ["node:node-000"]


def test_a_sibling_with_no_temperature_keeps_the_wait() -> None:
    # GPU 6 reports no temperature, so whether its sample of the poll is in is not known:
    # the wait of why_wait_s decides, as before.
    first = _first(_run({3: 0.0}, no_temp=6))
    assert first == (ISOLATION, "slow_node", "power", "gpu:node-000/3",
                     round(NEXT_SAMPLE + 3.0, 1))


# 2. powercap-fleet-s2902: a single GPU's SW power cap inside a fleet-wide cap.  node-005 GPU 4
#    at 0x4 28 % below its baseline, its rank 38 % slower than its peers, a 2.6 % routine dip
#    on it 100 s before -- and GPU 3 beside it capped 3.5 % all along (the fleet's routine
#    capping on ~40 % of GPUs).  pcap29's _capped_alone drops the routine discount only when no
#    sibling shows 0x4 at all, so the rank was escalated 'unknown' (38 % > 34.7 % + 2 %) and the
#    sustained rule isolated power 2 s later: caught with the wrong cause.  A sibling's cap
#    cap_clock_drop (10 points) shallower is not the same limit (thermal's cap_shared reads
#    depth so: P2/P5) -- the peers' comparison still rules routine capping out.

PC_GPU, PC_RANK = 4, 4  # node-000 GPU 4 runs rank 4 (detector.testing.step)
PC_FROM, PC_TO, PC_STEPS = 300, 420, 480
PC_DROP, PC_SLOWER, PC_ROUTINE = 0.28, 1.48, 0.026


def _pc_polls(sibling_drop: float) -> list:
    """Every GPU of node-000/001 sampled each second; node-000 GPU 4 capped PC_DROP deep for
    its rank's slow run, dipped PC_ROUTINE 100 s before; node-000 GPU 3 and node-001 GPUs 0, 5
    under a SW cap ``sibling_drop`` deep but for 6 s a minute (0: none)."""
    out = []
    for i in range(PC_STEPS):
        t = T0 + i + 0.5
        for n in range(2):
            for g in range(8):
                clock, bits, power = 1980.0, 0, 640.0
                if n == 0 and g == PC_GPU and PC_FROM <= i < PC_TO:
                    clock, bits, power = 1980.0 * (1.0 - PC_DROP), 0x4, 549.0
                elif n == 0 and g == PC_GPU and 200 <= i < 206:
                    clock, bits, power = 1980.0 * (1.0 - PC_ROUTINE), 0x4, 620.0
                elif sibling_drop and (n, g) in ((0, 3), (1, 0), (1, 5)) and (i + 30) % 60 >= 6:
                    clock, bits, power = 1980.0 * (1.0 - sibling_drop), 0x4, 699.0
                out.append(thermal(t + 0.001 * g, f"node-{n:03d}", g, clock_mhz=clock,
                                   throttle=bits, power_w=power))
    return out


def _pc_alerts(sibling_drop: float) -> list:
    from detector.testing import healthy_job
    steps = list(healthy_job(steps=PC_STEPS, slow={PC_RANK: PC_SLOWER}, slow_from=PC_FROM,
                             slow_to=PC_TO))
    events = sorted(steps + _pc_polls(sibling_drop), key=lambda e: e.ts)
    return [a for a in feed(Engine(), events) if a.status == "firing"]


def test_a_gpus_own_cap_inside_a_fleets_shallow_cap_is_paged_power_first() -> None:
    fired = _pc_alerts(0.035)
    assert fired, "the capped GPU's slow rank was never paged"
    first = fired[0]
    assert (first.topic, first.kind, first.cause, first.scope.key) == (
        ISOLATION, "slow_node", "power", f"gpu:node-000/{PC_GPU}"), fired
    assert not [a for a in fired if a.topic == ESCALATION], fired


def test_the_same_cap_with_no_sibling_capped_was_already_power_first() -> None:
    fired = _pc_alerts(0.0)  # pcap29's case: unchanged
    assert [(a.topic, a.cause) for a in fired][:1] == [(ISOLATION, "power")], fired
