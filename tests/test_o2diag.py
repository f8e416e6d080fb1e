"""Room o2diag, round 29: HW slowdown under `dcgmi diag` on a GPU that never ran free (blind19
O2; issue 10).

blind19 ops seed 3: op08 is drained for its driver upgrade, rebooted and run through `dcgmi
diag -r 3`; under the diag's targeted power every GPU sits at its limit (0x4, ~1850 MHz) and
GPU 4 trips HW slowdown (0x8) at 1224 MHz, 479 W, for 210 s.  Nothing was raised: a
never-routine reason is a verdict when the clock is ``hw_clock_drop`` below the GPU's
*baseline*, which is learned only on busy samples with no reason -- and GPU 4 had none.  Under
ft-o, before the drain, its demand was above its 700 W limit on every sample (0x4 throughout:
40 of 40 loaded samples), so it had no baseline at all and the 0x8 run was evidence only
(``throttle_seen``).  The other 7 of 8 ops logs' GPUs had run free on some sample and were
isolated 20 s after the onset.

The clock a SW power cap held a GPU at is a floor under the clock it runs free at (a cap only
lowers it): a never-routine reason holding the clock ``hw_clock_drop`` below even that is a
drop by any measure.  A GPU with no free-running baseline now judges a never-routine reason
against its own clock under its SW cap (``GpuThermal._cap_clock``).  The diag's own routine
load -- every GPU at 0x4 at the limit, 0x1 idle before and after -- still raises nothing
(0x4 is routine: the reference is only ever asked by a never-routine reason).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from bench.blind19.measure import replay
from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, thermal
from detector.thermal import GpuThermal
from detector.thresholds import Thresholds
from tests import blindcases as bc

IDLE, CAP, SLOW = 0x1, 0x4, 0x8


def diag(*, slow_gpu: int | None = 4, slow_from: int = 3, slow_to: int = 24,
         capped_before: bool = True, interval_s: float = 10.0) -> list:
    """node-000's eight GPUs every ``interval_s``: idle (0x1, 345 MHz, 70 W) for 4 polls, a
    diag at the limit (0x4, 1852 MHz, 695 W) for 30 polls, idle again for 6.  ``slow_gpu``
    holds HW slowdown (0x8, 1224 MHz, 479 W) from poll ``slow_from`` to ``slow_to`` of the
    diag (from its first loaded poll when not ``capped_before``)."""
    out = []
    for k in range(40):
        d = k - 4
        for g in range(8):
            ts = T0 + k * interval_s + 0.03 * g
            if not 0 <= d < 30:
                out.append(thermal(ts, "node-000", g, clock_mhz=345.0, throttle=IDLE,
                                   power_w=70.0, temp_c=50.0))
            elif g == slow_gpu and (slow_from <= d < slow_to or not capped_before and d < slow_to):
                out.append(thermal(ts, "node-000", g, clock_mhz=1224.0, throttle=SLOW,
                                   power_w=479.0, temp_c=62.0))
            else:
                out.append(thermal(ts, "node-000", g, clock_mhz=1852.0 + 3 * (g + k % 3),
                                   throttle=CAP, power_w=695.0, temp_c=70.0))
    return out


def pages(events: list) -> list:
    return [a for a in feed(Engine(), events) if a.status == "firing"]


def test_hw_slowdown_on_a_gpu_that_never_ran_free_is_isolated_at_the_gpu() -> None:
    # main bb06987: nothing (the GPU's 0x8 run was throttle_seen evidence only).
    got = pages(diag())
    assert [(a.topic, a.kind, a.scope.key) for a in got] == [
        (ISOLATION, "slow_node", "gpu:node-000/4")]
    assert got[0].cause == "power"  # 0x8 on a GPU that is not hot (throttle_cause)
    (ev,) = got[0].evidence["signals"]
    assert ev["throttle_reasons"] == "0x8" and ev["baseline_under_cap"] == "own"
    assert "own SW power cap" in ev["recommended_because"]
    assert ev["baseline_clock_mhz"] == pytest.approx(1867.0, abs=5.0)
    assert ev["clock_drop"] == pytest.approx(1.0 - 1224.0 / 1867.0, abs=0.005)


def test_the_diag_at_the_limit_alone_pages_nobody() -> None:
    assert pages(diag(slow_gpu=None)) == []


def test_a_slowdown_with_the_clock_at_its_capped_clock_is_no_verdict() -> None:
    # 0x8 with the clock where its cap held it (a reason bit with no clock lost): evidence.
    cfg = Thresholds()
    mon = GpuThermal("node-000", 4, cfg)
    out: list = []
    for k in range(12):
        mon.update(thermal(T0 + 10 * k, "node-000", 4, clock_mhz=1852.0, throttle=CAP,
                           power_w=695.0), cfg, out)
    for k in range(12, 24):
        mon.update(thermal(T0 + 10 * k, "node-000", 4, clock_mhz=1852.0 * (1 - 0.5 *
                   cfg.hw_clock_drop), throttle=SLOW, power_w=690.0), cfg, out)
    assert not [f for f in out if f.signal == "throttle" and f.active]
    assert not mon.has_open_fault()


def test_the_free_running_baseline_still_decides_when_there_is_one() -> None:
    # A GPU that ran free at 1980 and was capped at 1852: its 0x8 at 1900 is 4 % below its
    # baseline -- a verdict, as before (the capped clock is asked only with no baseline).
    cfg = Thresholds()
    mon = GpuThermal("node-000", 4, cfg)
    out: list = []
    for k in range(10):
        mon.update(thermal(T0 + 10 * k, "node-000", 4, clock_mhz=1980.0), cfg, out)
    for k in range(10, 20):
        mon.update(thermal(T0 + 10 * k, "node-000", 4, clock_mhz=1852.0, throttle=CAP), cfg,
                   out)
    for k in range(20, 24):
        mon.update(thermal(T0 + 10 * k, "node-000", 4, clock_mhz=1900.0, throttle=SLOW), cfg,
                   out)
    raised = [f for f in out if f.signal == "throttle" and f.active]
    assert len(raised) == 1 and raised[0].evidence["baseline_clock_mhz"] == pytest.approx(
        1980.0, abs=1.0)


def test_hw_slowdown_from_the_first_loaded_sample_is_judged_against_its_siblings() -> None:
    # No clock of its own at all (0x8 from its first loaded sample): its seven siblings'
    # clock under the diag's cap (1852-1870) is the reference.  main bb06987: nothing.
    got = pages(diag(capped_before=False))
    assert [(a.topic, a.scope.key) for a in got] == [(ISOLATION, "gpu:node-000/4")]
    (ev,) = got[0].evidence["signals"]
    assert ev["baseline_under_cap"] == "siblings"
    assert "7 siblings" in ev["recommended_because"]


def test_no_reference_at_all_is_evidence_only() -> None:
    # One GPU busy, at 0x8 from its first loaded sample, its siblings idle: nothing says how
    # far down it is -- throttle_seen evidence (a slow rank's explanation), no verdict.  (The
    # reading kept, not a DESIGN rule: DESIGN makes a never-routine reason a recommendation
    # when "sustained past a stated limit", and faultline's stated limit is a clock drop of
    # hw_clock_drop, which takes a reference.)
    cfg = Thresholds()
    out: list = []
    mons = {g: GpuThermal("node-000", g, cfg) for g in range(2)}
    mons[1]._node = mons[0].node_temps
    for k in range(12):
        mons[0].update(thermal(T0 + 10 * k, "node-000", 0, clock_mhz=345.0, throttle=IDLE),
                       cfg, out)
        mons[1].update(thermal(T0 + 10 * k + 0.1, "node-000", 1, clock_mhz=1224.0,
                               throttle=SLOW), cfg, out)
    assert not [f for f in out if f.signal == "throttle" and f.active]
    assert [f for f in out if f.signal == "throttle_seen" and f.active]


def test_blind19_o2_reproducer_is_caught() -> None:
    # bench/blind19/cases/O2-diag-hw-slowdown-unraised (ops seed 3, op08 cut 480-800 s).
    case = bc.cases_of("blind19") / "O2-diag-hw-slowdown-unraised.jsonl.gz"
    sc = replay(case, Path(tempfile.mkdtemp(prefix="o2diag-")) / "alerts.jsonl")
    assert bc.every_fault_caught(sc) and bc.no_false_positive(sc), sc
    assert all(f["cause_ok"] for f in sc["faults"])
