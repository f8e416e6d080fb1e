"""Room steps, round 11 (issue 10, blind3 B4 and B5): a PCIe replay rate held for minutes,
and a rank slow on a fixed share of its steps."""

from __future__ import annotations

import dataclasses
import math
import random

from detector.events import EccSample
from detector.findings import Finding
from detector.gpu_health import GpuHealth
from detector.steps import JobMonitor
from detector.testing import T0, step
from detector.thresholds import Thresholds

CFG = Thresholds()


def _pcie(replays_at: list[tuple[float, int]], cfg: Thresholds = CFG) -> list[Finding]:
    """Feed one GPU's samples (ts, cumulative pcie_replay); its findings."""
    mon = GpuHealth("n0", 3, cfg)
    out: list[Finding] = []
    for ts, total in replays_at:
        mon.update(EccSample(ts=ts, node="n0", gpu=3, sbe_volatile=0, dbe_volatile=0,
                             retired_pages_sbe=0, retired_pages_dbe=0, pcie_replay=total,
                             nvlink_crc_errors=0, nvlink_replay_errors=0,
                             nvlink_recovery_errors=0), cfg, out)
    return [f for f in out if f.signal == "pcie_replay"]


def _climb(per_s: float, seconds: float, period: float = 10.0, seed: int = 0,
           start: int = 0) -> list[tuple[float, int]]:
    rng = random.Random(seed)
    total, out, carry = start, [], 0.0
    for i in range(int(seconds / period) + 1):
        out.append((1000.0 + i * period, total))
        carry += per_s * period
        n = int(carry)
        if rng.random() < carry - n:
            n += 1
        carry -= n
        total += max(n, 0)
    return out


def test_a_downtrained_links_replay_rate_is_raised_within_minutes():
    # blind3 B4: ~0.6 replays/s on every 10 s sample while busy, ~1/3 of the burst rule's
    # 100 within ~a minute: never raised before.  DCGM's limit is 8/min.
    found = _pcie(_climb(0.6, 240))
    assert found, "a replay rate held for minutes is a link problem"
    first = found[0]
    assert first.active and first.verdict and first.cause == "gpu_hardware"
    assert first.ts - 1000.0 <= 120.0, "within two minutes"
    assert "replays_lately" in first.evidence and "rule" in first.evidence


def test_replays_just_under_dcgms_rate_limit_are_not_raised():
    # 6/min for 30 minutes: below DCGM's 8/min.
    assert _pcie(_climb(0.1, 1800, seed=1)) == []


def test_healthy_trickles_never_page():
    # blind / blind2 / blind3 healthy GPUs: up to ~20 replays an hour, one or a few a sample;
    # a GPU with an old count from before the log.
    for seed in range(20):
        assert _pcie(_climb(20 / 3600, 4 * 3600, period=5.0, seed=seed, start=50)) == []


def test_a_lone_burst_is_no_rate():
    # 60 replays on one sample then nothing: under the burst rule's 100, and on one sample.
    samples = [(1000.0 + 10 * i, 60 if i >= 3 else 0) for i in range(60)]
    assert _pcie(samples) == []


def test_the_rate_clears_when_replays_stop():
    busy = _climb(0.6, 240)
    last_ts, total = busy[-1]
    idle = [(last_ts + 10 * i, total) for i in range(1, 13)]
    found = _pcie(busy + idle)
    assert [f.active for f in found] == [True, False]


def _job(slow_of, steps: int = 200, ranks: int = 8, seed: int = 0,
         cfg: Thresholds = CFG) -> list[Finding]:
    """A job of ``ranks`` data-parallel ranks (one peer group), ~1 % compute jitter;
    ``slow_of(step, rng)`` -> {rank: compute factor} this step.  Its slow_rank findings."""
    rng = random.Random(seed)
    mon = JobMonitor("job-1", cfg)
    out: list[Finding] = []
    for s in range(steps):
        slow = slow_of(s, rng)
        for r in range(ranks):
            c = 700.0 * (1.0 + rng.gauss(0.0, 0.01)) * slow.get(r, 1.0)
            mon.add(step(T0 + s + 0.001 * r, r, s, compute_ms=c, step_ms=1000.0 * max(
                1.0, max(slow.values(), default=1.0)), dp=r), out)
    return [f for f in out if f.signal == "slow_rank"]


def test_a_rank_slow_on_one_step_in_five_is_slow():
    # blind3 B5: +35-40 % on every fifth step, its peers' pace between (mean +7-8 %).
    found = _job(lambda s, rng: {5: 1.35 + 0.05 * rng.random()} if s % 5 == 2 else {})
    assert found and found[0].active and found[0].rank == 5
    assert found[0].evidence["step"] <= 100, "within tens of steps after warm-up"
    assert {f.rank for f in found} == {5}


def test_a_recurring_straggler_clears_when_it_stops():
    found = _job(lambda s, rng: {5: 1.4} if s % 5 == 2 and s < 100 else {}, steps=800)
    assert [(f.rank, f.active) for f in found] == [(5, True), (5, False)]


def test_random_one_step_spikes_on_random_ranks_page_nobody():
    # faultline's dp4-10s healthy fleet: 1.5-3x one-step spikes on random GPUs, here one a
    # step in six job-wide (every rank spikes ~once in 48 steps), over 1,000 steps.
    def spikes(s, rng):
        return {rng.randrange(8): rng.uniform(1.5, 3.0)} if rng.random() < 1 / 6 else {}
    for seed in range(3):
        assert _job(spikes, steps=1000, seed=seed) == []


def test_two_spikes_on_one_rank_page_nobody():
    # (healthy fleet dp4-10s seed 145006: two one-step spikes on one GPU 17 s apart)
    assert _job(lambda s, rng: {3: 2.5} if s in (40, 42) else {}) == []


def test_a_workload_that_makes_any_rank_the_outlier_pages_nobody_more():
    # Sequence-length imbalance: on a share of steps one random rank draws the long batch,
    # +30-60 %; each rank is the outlier as often as the others.  The recurring rule adds
    # no slow rank to what the CUSUM finds (the runs of such a workload) without it.
    without = dataclasses.replace(CFG, slow_recur_count=math.inf)
    for share in (0.25, 0.5, 1.0):
        for seed in range(3):
            def imbalance(s, rng, share=share):
                return {rng.randrange(8): rng.uniform(1.3, 1.6)} if rng.random() < share else {}
            assert _job(imbalance, 1000, seed=seed) == _job(imbalance, 1000, seed=seed,
                                                            cfg=without), (share, seed)
