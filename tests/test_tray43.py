"""A TP group spanning two NVL72 trays (tray43, round 43; blind33 F1, F2).

A GB200 compute tray holds 4 GPUs: a TP 8 group is two trays over NVLink, and one GPU of it
slowed slows all 8 ranks alike from the same step -- the other tray's ranks wait in the same
all-reduce and show nothing of their own.  The unit is the tray whose GPU's DCGM rows say why
(detector/correlate/trays.py), not the replica and not the other tray; a group slow with no
GPU of it showing anything stays its replica's (review13 S3, peer42's REPLICA_ONSET_S).

The job: TP 8 x PP 2 x DP 3, 48 ranks on trays ``t-00`` .. ``t-11`` (rank r on GPU r % 4 of
tray r // 4): the TP group of replica d, stage p is trays 4d + 2p and 4d + 2p + 1.  Thermal
rows every 10 s, each GPU on its own phase; steps every 1.7 s.
"""

from __future__ import annotations

import numpy as np

from detector.engine import Engine
from detector.testing import T0, feed, step, thermal

TP, PP, DP = 8, 2, 3
N = TP * PP * DP
STEP_S, ROW_S = 1.7, 10.0
FAULT_TRAY, FAULT_GPU = 6, 1     # replica 1, stage 1: its TP group is trays 6 and 7
PARTNER = 7


def _tray(r: int) -> str:
    return f"t-{r // 4:02d}"


def _world(seed: int, *, steps: int = 260, slow_from: int = 130, factor: float = 1.09,
           shows: str = "ramp") -> list:
    """The job's steps and every GPU's thermal rows, in event-time order.  From step
    ``slow_from`` the fault GPU's TP group computes ``factor`` x; the fault GPU shows
    ``shows``: "ramp" (0x4 at 90 % of its mates' draw, clock -8 %), "shallow" (0x4 at 96.5 %
    of their draw, clock -3 %), "heat" (87 C, 0x20, clock -5 %) or "nothing"."""
    rng = np.random.default_rng(seed)
    group = [r for r in range(N) if r // 4 in (FAULT_TRAY, PARTNER)]
    base = 1650.0 * np.where((np.arange(N) // TP) % PP == 1, 1.04, 1.0)
    events: list = []
    for s in range(steps):
        # A TP group waits for its slowest GPU inside compute_ms: its 8 ranks alike (blind33's
        # jobs.py; steps' TP_LOCKED), each a 0.1 % jitter of its own.
        group_pace = rng.lognormal(0.0, 0.01, N // TP).repeat(TP)
        compute = base * group_pace * rng.lognormal(0.0, 0.001, N)
        if s >= slow_from:
            compute[group] *= factor
        step_ms = float(compute.max()) + 320.0
        for r in range(N):
            events.append(step(T0 + STEP_S * s + 0.001 * r, r, s, job="tp-job", node=_tray(r),
                               gpu=r % 4, step_ms=round(step_ms, 2),
                               compute_ms=round(float(compute[r]), 2), tp=r % TP,
                               pp=(r // TP) % PP, dp=r // (TP * PP)))
    fault_ts = T0 + STEP_S * slow_from
    end = T0 + STEP_S * steps
    for tray in range(N // 4):
        for gpu in range(4):
            t = T0 + rng.uniform(0.0, ROW_S)
            while t < end:
                temp, clock, power, bits = 60.0 + rng.normal(0, 0.5), 2040.0, 1000.0, 0
                power += rng.normal(0.0, 8.0)
                if (tray, gpu) == (FAULT_TRAY, FAULT_GPU) and t >= fault_ts:
                    if shows == "ramp":
                        clock, power, bits = 2040.0 * 0.92, 0.9 * power, 0x4
                    elif shows == "shallow":
                        clock, power, bits = 2040.0 * 0.97, 0.965 * power, 0x4
                    elif shows == "heat":
                        temp, clock, bits = 87.0, 2040.0 * 0.95, 0x20
                events.append(thermal(t, f"t-{tray:02d}", gpu, temp_c=temp, clock_mhz=clock,
                                      throttle=bits, power_w=power))
                t += ROW_S
    return sorted(events, key=lambda e: e.ts)


def _pages(events: list) -> set[tuple[str, str, str]]:
    return {(a.topic, a.cause, a.scope.key) for a in feed(Engine(), events)
            if a.status == "firing"}


def test_a_limited_ramp_on_one_gpu_of_a_two_tray_group_is_its_tray_for_power() -> None:
    # Before: the group's 8 ranks (two trays) escalated slow_node/unknown at replica 1 --
    # the first rank due decided for the group before the limited GPU's next row.
    for seed in range(4):
        pages = _pages(_world(430200 + seed, shows="ramp"))
        assert pages == {("alerts.isolation", "power", f"node:t-{FAULT_TRAY:02d}")}, (
            seed, pages)


def test_the_one_gpu_of_a_slow_two_tray_group_showing_a_cap_below_its_mates_is_its_tray(
        ) -> None:
    # A ramp limited a little: 0x4, clock -3 %, ~3.5 % under its mates' draw -- short of the
    # 5 % a GPU's own low limit is told by (power._own_limit), and a cap that deep explains a
    # 6 % slowdown only by its power, not its sampled clock (_power_impact).  The group's 7
    # other GPUs show nothing: by elimination the one that does is why (_lone_reason).
    for seed in range(4):
        pages = _pages(_world(430230 + seed, shows="shallow", factor=1.06))
        assert pages == {("alerts.isolation", "power", f"node:t-{FAULT_TRAY:02d}")}, (
            seed, pages)


def test_a_hot_gpu_of_a_two_tray_group_pages_its_tray_alone() -> None:
    # The other tray's ranks wait in the same all-reduce: they join the hot GPU's page.
    for seed in range(4):
        pages = _pages(_world(430210 + seed, shows="heat"))
        assert pages == {("alerts.isolation", "thermal", f"node:t-{FAULT_TRAY:02d}")}, (
            seed, pages)


def test_a_two_tray_group_slow_with_no_gpu_showing_why_is_still_its_replica() -> None:
    # No DCGM row names a GPU: the slow ranks' smallest unit holding them all is the replica.
    for seed in range(2):
        pages = _pages(_world(430220 + seed, shows="nothing"))
        assert pages == {("alerts.escalation", "unknown", "replica:tp-job/1")}, (seed, pages)
