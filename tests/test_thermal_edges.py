"""GpuThermal's edges, sample by sample: when each finding is raised and cleared, and what
the clock baseline learns from.

A mutation sweep of issue 10 (notes/issue10-audit.md) left these unpinned: the sampling
interval told, the baseline learning while a reason or a finding is active, the clearing
count while capped, the power-cap decay count reset on clear, and ``power_cap``'s run and
clear.  Each test here fails when its rule is negated or dropped.
"""

from __future__ import annotations

from collections.abc import Iterable

from detector.events import ThermalSample
from detector.findings import Finding
from detector.testing import T0, thermal
from detector.thermal import GpuThermal, NodeTemps
from detector.thresholds import Thresholds

CFG = Thresholds()
BASE = 1980.0  # the healthy SM clock of every stream here


def _samples(spec: Iterable[tuple[int, float]], *, start: int = 0, temp_c: float = 65.0
             ) -> list[ThermalSample]:
    """(throttle bits, SM clock) per second from ``start``."""
    return [thermal(T0 + start + i, "node-000", 3, clock_mhz=clock, throttle=bits,
                    temp_c=temp_c) for i, (bits, clock) in enumerate(spec)]


def _healthy(n: int) -> list[tuple[int, float]]:
    return [(0, BASE)] * n


def _run(samples: Iterable[ThermalSample], gpu: GpuThermal | None = None
         ) -> tuple[list[tuple[int, str, bool]], list[Finding]]:
    """Feed ``update``; ([(sample index, signal, active)], findings)."""
    gpu = gpu if gpu is not None else GpuThermal("node-000", 3, CFG)
    out: list[Finding] = []
    seen: list[tuple[int, str, bool]] = []
    for i, s in enumerate(samples):
        n = len(out)
        gpu.update(s, CFG, out)
        seen += [(i, f.signal, f.active) for f in out[n:]]
    return seen, out


def _of(seen: list[tuple[int, str, bool]], signal: str) -> list[tuple[int, bool]]:
    return [(i, active) for i, sig, active in seen if sig == signal]


def test_the_sampling_interval_is_told_once_per_rate() -> None:
    gaps = [1.0] * 9 + [1.5, 0.7, 1.0]  # steady at 1 s, jitter within half to double
    gaps += [10.0] * 4                    # a new rate
    gaps += [400.0, 400.0]                # pauses, however alike, are not a rate
    ts, samples = T0, []
    for gap in [0.0, *gaps]:
        ts += gap
        samples.append(thermal(ts, "node-000", 3))
    seen, out = _run(samples)
    assert _of(seen, "sampling") == [(2, True), (14, True)]
    told = [f.evidence["sample_interval_s"] for f in out if f.signal == "sampling"]
    assert told == [1.0, 10.0]


def test_a_first_sample_with_a_reason_and_a_sample_without_a_clock_decide_nothing() -> None:
    # No baseline yet: no drop can be measured (and nothing divides by it), so no verdict;
    # a never-routine reason is evidence by itself (a GPU loaded straight from idle into
    # thermal slowdown: room thermal, round 11), told once.
    seen, out = _run(_samples([(0x40, 1500.0)] * 4))
    told = [x for x in seen if x[1] not in ("sampling", "gpus_busy")]
    assert told == [(0, "throttle_seen", True)]
    assert [f for f in out if f.signal == "throttle_seen"][0].evidence["clock_drop"] == 0.0
    seen, _ = _run(_samples([(0x4, 1500.0)] * 4))  # a SW power cap is routine: nothing
    assert [x for x in seen if x[1] not in ("sampling", "gpus_busy")] == []
    # With a baseline, a reason on a sample without a clock measures no drop either.
    samples = _samples(_healthy(10) + [(0x40, 1500.0)])
    samples.append(ThermalSample(T0 + 11, "node-000", 3, 65.0, 70.0, 600.0, None, 0x40))
    seen, _ = _run(samples)
    assert _of(seen, "throttle_seen") == [(10, True), (11, False)]


def test_the_baseline_does_not_learn_while_a_throttle_is_raised() -> None:
    # Raised at the third 0x40 sample; four samples without a reason but still at the
    # throttled clock (fewer than throttle_clear_samples: still raised) must not pull the
    # baseline down, so the next 0x40 sample is measured against the healthy clock.
    spec = _healthy(20) + [(0x40, 1500.0)] * 3 + [(0, 1500.0)] * 4 + [(0x40, 1500.0)]
    seen, out = _run(_samples(spec))
    assert _of(seen, "throttle") == [(22, True)]
    last = [f for f in out if f.signal == "throttle_seen"][-1]
    assert last.active and last.ts == T0 + 27
    assert last.evidence["clock_drop"] == round(1 - 1500.0 / BASE, 3)


def test_the_baseline_learns_from_a_hot_gpu_without_a_reason() -> None:
    # A GPU 15 C hotter than its siblings (a cooling problem) whose clock settled lower
    # with no reason set: that clock is its baseline now, so a HW thermal reason at the same
    # clock measures no drop.
    node = NodeTemps()
    node.temps.update({0: 65.0, 1: 65.0, 2: 65.0, 4: 65.0})
    gpu = GpuThermal("node-000", 3, CFG, node)
    spec = _healthy(10) + [(0, 1800.0)] * 60
    hot = _samples(spec[:10]) + _samples(spec[10:], start=10, temp_c=80.0)
    hot += _samples([(0x40, 1800.0)], start=70, temp_c=80.0)
    seen, _ = _run(hot, gpu)
    assert _of(seen, "hot") == [(12, True)]
    assert _of(seen, "throttle_seen") == []


def test_capped_samples_do_not_count_towards_clearing_a_throttle() -> None:
    # A never-routine throttle raised, then a SW power cap holding the clock 14 % low (a
    # GPU not yet recovered): those samples are not good ones; healthy ones clear it at the
    # fifth.
    spec = _healthy(20) + [(0x40, 1500.0)] * 3 + [(0x4, 1700.0)] * 6 + _healthy(5)
    seen, _ = _run(_samples(spec))
    assert _of(seen, "throttle") == [(22, True), (33, False)]


def test_the_sustained_cap_count_starts_afresh_after_the_throttle_clears() -> None:
    # A SW power cap holding the clock >= cap_clock_drop low is a fault once sustained (11
    # samples at 1 Hz reach the decayed limit of 10); cleared after 5 healthy samples; a
    # new run of the same needs its own 11 samples, not one.
    run = [(0x4, 1700.0)] * 11
    spec = _healthy(20) + run + _healthy(5) + run
    seen, out = _run(_samples(spec))
    assert _of(seen, "throttle") == [(30, True), (35, False), (46, True)]
    assert "sustained" in [f for f in out if f.signal == "throttle"][0].evidence[
        "recommended_because"]


def test_power_cap_evidence_needs_a_run_and_clears_after_a_quiet_run() -> None:
    heavy = (0x4, 1850.0)  # 6.6 % below baseline: >= clock_drop, short of cap_clock_drop
    spec = (_healthy(20) + [heavy] * 2 + _healthy(1)   # a run of two: nothing
            + [heavy] * 5                                # raised at the third, once
            + _healthy(4) + [heavy]                      # four quiet samples: still raised
            + _healthy(6))                               # cleared at the fifth quiet one
    seen, out = _run(_samples(spec))
    assert _of(seen, "power_cap") == [(25, True), (37, False)]
    raised = [f for f in out if f.signal == "power_cap"][0]
    assert raised.onset_ts == T0 + 23 and not raised.verdict  # evidence, not a verdict
    assert raised.evidence["clock_drop"] == round(1 - 1850.0 / BASE, 3)

