"""Room steps, round 11 (issue 10, blind3 B4 and B5): a PCIe replay rate held for minutes,
and a rank slow on a fixed share of its steps."""

from __future__ import annotations

import random

from detector.events import EccSample
from detector.findings import Finding
from detector.gpu_health import GpuHealth
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
