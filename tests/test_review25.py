"""Round 25's review of round 24's changes: each test fails on main b569a9c."""

from __future__ import annotations

import math
from typing import Any

import pytest

from detector.engine import Engine
from detector.statecodec import SnapshotRefused
from detector.testing import T0, feed, thermal

# -- thermal: every NodeTemps / GpuThermal field checked on snapshot restore -------------------


def _thermal_engine() -> Engine:
    eng = Engine()
    feed(eng, [thermal(T0 + k, "node-000", g) for k in range(0, 60, 5) for g in range(4)],
         finish=False)
    return eng


def _braked(eng: Engine) -> None:
    """The node's next polls: every GPU braked, clock down (the brake / median paths)."""
    feed(eng, [thermal(T0 + k, "node-000", g, throttle=0x80 if k > 80 else 0,
                       clock_mhz=1500.0 if k > 80 else 1980.0)
               for k in range(60, 200, 5) for g in range(4)])


@pytest.mark.parametrize(("owner", "field", "value"), [
    ("temps", "braking", [1]), ("temps", "braking", {"a"}), ("temps", "idle", 5),
    ("temps", "pending", {0: "x"}), ("temps", "power", {0: "x"}),
    ("temps", "median_ts", "x"), ("temps", "median_c", math.nan), ("temps", "temps", {0: "x"}),
    ("temps", "seen_cause", 3), ("temps", "peers", "abc"),
    ("gpu", "_last_ts", "x"), ("gpu", "_bad", "x"), ("gpu", "_excess", math.nan),
    ("gpu", "_hot_active", 1), ("gpu", "_node", None), ("gpu", "_clock", 3.0)],
    ids=lambda v: str(v)[:20])
def test_a_forged_thermal_field_is_refused(owner: str, field: str, value: Any) -> None:
    # main: only GpuThermal.unread and NodeTemps' two brake fields were checked; the others
    # restored as is, and several raised on the node's next sample (braking as a list, idle
    # as an int, a short pending entry, a string power or median time).
    eng = _thermal_engine()
    obj = (eng.monitors._node_temps["node-000"] if owner == "temps"
           else eng.monitors._thermal[("node-000", 1)])
    setattr(obj, field, value)
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed" and field in str(exc.value)


def test_a_gpu_thermal_of_another_nodes_temps_is_refused() -> None:
    eng = _thermal_engine()
    from detector.thermal import NodeTemps
    eng.monitors._thermal[("node-000", 1)]._node = NodeTemps()
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert "_node" in str(exc.value)


def test_a_sound_thermal_state_restores_and_runs() -> None:
    eng = _thermal_engine()
    back = Engine.restore(eng.snapshot())
    assert back.monitors._thermal[("node-000", 1)]._node is back.monitors._node_temps["node-000"]
    _braked(back)  # (runs on without raising)
