"""wait46 (round 46): a slow rank's wait for its GPU's sample at real collector cadences.

revA45 F3: GPUs sampled each on its own phase every 30 s, each row +-3 s (dcgm-exporter's
default interval, a query per GPU): a GPU's cadence was told from one gap (27.84 s, read as
28) on a row two polls old, so the wait for a capped GPU's next row ended 4-9 s before the row
came, and its slow rank was escalated slow_node/unknown first.  A GPU's rows that fall off the
grid it told are told again (detector.cadence): the phase that row, the interval the mean gap,
the jitter seen; the rank waits for its own GPU's grid (its own told interval) plus its node's
jitter.  revA45 F8 (the agreeing sample of a clock down with no reason) is in
tests/test_revA45.py.

What is pinned: a steady collector is told once (nothing changes for it); a jittered one is
told again with its jitter and an interval that converges on its own; the correlator's
per-GPU cadences and node jitter round-trip a snapshot and refuse forged values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from detector.engine import Engine
from detector.findings import Finding
from detector.statecodec import SnapshotRefused
from detector.testing import T0, thermal
from detector.thermal import GpuThermal
from detector.thresholds import Thresholds


def _told(rows: list[float]) -> list[dict]:
    """The ``sampling`` findings' evidence one GPU's monitor tells on rows at ``rows``."""
    cfg = Thresholds()
    gpu = GpuThermal("node-000", 3, cfg)
    out: list[Finding] = []
    for ts in rows:
        gpu.update(thermal(ts, "node-000", 3), cfg, out)
    return [f.evidence for f in out if f.signal == "sampling"]


@pytest.mark.parametrize("interval", [1.0, 10.0, 30.0])
def test_a_steady_collector_is_told_once(interval: float) -> None:
    told = _told([T0 + 0.4 + interval * k for k in range(60)])
    assert [e["sample_interval_s"] for e in told] == [interval]
    assert "sample_jitter_s" not in told[0]


def test_a_jittered_collector_is_told_again_with_its_jitter() -> None:
    rng = np.random.default_rng(460301)
    told = _told([T0 + 7.0 + 30.0 * k + rng.uniform(-3.0, 3.0) for k in range(60)])
    assert len(told) >= 2  # (told once from one gap before: revA45 F3)
    last = told[-1]
    assert abs(last["sample_interval_s"] - 30.0) < 0.5  # (the mean gap: rounds to 30)
    assert 0.0 < last["sample_jitter_s"] <= 6.0  # (a gap off by twice the jitter at most)
    assert len(told) <= 12  # (once the jitter is known, its rows are on the grid)


def _engine(rows: list) -> Engine:
    eng = Engine()
    for e in rows:
        eng.process(e)
    return eng


def test_the_cadences_and_jitter_round_trip_a_snapshot() -> None:
    rng = np.random.default_rng(460302)
    rows = [thermal(T0 + ph + 30.0 * k + rng.uniform(-3.0, 3.0), f"node-{n:03d}", g)
            for n in range(2) for g, ph in enumerate(rng.uniform(0.0, 30.0, 8))
            for k in range(20)]
    eng = _engine(sorted(rows, key=lambda e: e.ts))
    corr = eng.correlator
    assert sorted(corr._jitter) == ["node-000", "node-001"]
    assert all(0.0 < j <= 6.0 for j in corr._jitter.values())
    assert all(abs(iv - 30.0) < 3.0 for g in corr._cadences.values() for iv in g.values())
    back = Engine.restore(eng.snapshot()).correlator
    assert (back._jitter, back._cadences) == (corr._jitter, corr._cadences)


@pytest.mark.parametrize(("field", "value"), [
    ("_jitter", math.nan), ("_jitter", -1.0), ("_jitter", 1e9),
    ("_cadences", math.inf), ("_cadences", "30")])
def test_a_forged_cadence_or_jitter_is_refused(field: str, value: object) -> None:
    # (a slow rank's wait reads both: a NaN or an infinite one would hold it for ever)
    eng = _engine([thermal(T0 + 0.4 + 30.0 * k, "node-000", g) for k in range(4)
                   for g in range(2)])
    corr = eng.correlator
    if field == "_jitter":
        corr._jitter["node-000"] = value  # type: ignore[assignment]
    else:
        corr._cadences["node-000"][1] = value  # type: ignore[assignment]
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed" and field in str(exc.value)


def test_a_forged_grid_is_refused() -> None:
    eng = _engine([thermal(T0 + 0.4 + 30.0 * k, "node-000", 0) for k in range(4)])
    mon = eng.source.monitors_of(None, make=False)
    gpu = next(iter(mon._thermal.values()))
    gpu._grid = [T0, -1, T0, 0.0]
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed"


@pytest.mark.parametrize("jitter", [0.0, 1.5])
def test_a_cadence_told_at_a_multiple_is_told_again_at_the_rows(jitter: float) -> None:
    # wait46's flaw: a GPU's first rows lost every other poll (10 s rows at 0, 20, 40 s), its
    # cadence told 20 s, then re-told on the grid as 16.67 s +- 6.67 s (the mean over an
    # interval told at a multiple): every wait of its node 6.67 s longer for good.  Two short
    # gaps alike tell the rows' own interval, with no jitter made of the multiple
    rng = np.random.default_rng(460600)
    told = _told([T0 + 0.4 + 10.0 * k + (rng.uniform(-jitter, jitter) if jitter else 0.0)
                  for k in range(60) if k >= 5 or k % 2 == 0])
    assert abs(told[0]["sample_interval_s"] - 20.0) < 0.5
    assert abs(told[-1]["sample_interval_s"] - 10.0) < 0.5
    assert all(e.get("sample_jitter_s", 0.0) <= 2.0 * jitter + 0.5 for e in told), told


def test_a_silent_slowdown_after_a_cadence_told_at_a_multiple_waits_one_poll() -> None:
    # the same flaw in the engine: 16 ranks, rank 3 12 % slow from step 120 with nothing shown
    # (tests/test_revA45._sampled's rows at 10 s, every GPU's first rows at 20 s): escalated
    # unknown 3.0 s after onset (its next row; main at e7cabfd 23.4 s, 6 seeds 8.6-23.4 s,
    # wait46's grid; 3.0-5.3 s with no rows lost)
    from msgspec.structs import replace

    from detector.events import ThermalSample
    from detector.testing import feed
    from tests.test_revA45 import CLOCK, _firing, _sampled
    seen: dict[tuple[str, int], int] = {}
    events = []
    for e in _sampled(interval=10.0, seed=450820):
        if isinstance(e, ThermalSample):
            k = seen[(e.node, e.gpu)] = seen.get((e.node, e.gpu), -1) + 1
            if k < 5 and k % 2:
                continue
            e = replace(e, throttle=0, sm_clock_mhz=CLOCK, power_w=640.0)
        events.append(e)
    fired = _firing(feed(Engine(), events, finish=False))
    assert fired[0][:3] == ("escalation", "unknown", "gpu:node-000/3"), fired
    assert fired[0][3] - 120.0 <= 6.0, fired
