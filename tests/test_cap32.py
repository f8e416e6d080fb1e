"""Room cap32, round 32: the site's-power-cap rule's state checked at restore (revB31 4).

d1cap's ``_cap_waves`` / ``_fleet_held`` and the older ``_deep_caps`` / ``_routine_cap`` are
snapshotted with the correlator but were checked at restore only as maps (or a list): a value
``[t, d]`` in ``_cap_waves`` failed ``_fleet_cap``'s unpacking on every 0x4 finding, a string
time failed prune, so the worker failed its every batch instead of refusing the snapshot.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from detector.correlate import Correlator
from detector.pipeline.correlator import CorrelatorPartition
from detector.statecodec import UNSIGNED, SnapshotRefused
from detector.testing import T0
from detector.thresholds import Thresholds


def _sound() -> Correlator:
    corr = Correlator(Thresholds())
    corr._cap_waves = {"node-a": [T0 + 100.0, 0.085, T0 + 160.0]}
    corr._fleet_held = {"gpu:node-a/0": T0 + 170.0}
    corr._deep_caps = [(T0 + 90.0, "node-b"), (T0 + 100.0, "node-a")]
    corr._routine_cap = {"gpu:node-a/1": [(T0 + 10.0, T0 + 30.0, 0.03)]}
    return corr


def _restore(corr: Correlator) -> Correlator:
    part = CorrelatorPartition(0, now=T0)
    part.correlator = corr
    offset, blob = part.snapshot(UNSIGNED)
    return CorrelatorPartition.restore(0, offset, blob, now=T0).correlator


def test_sound_power_state_survives_a_snapshot() -> None:
    corr = _sound()
    back = _restore(corr)
    assert back._cap_waves == corr._cap_waves and back._fleet_held == corr._fleet_held
    assert back._deep_caps == corr._deep_caps and back._routine_cap == corr._routine_cap


@pytest.mark.parametrize(("attr", "value"), [
    ("_cap_waves", {"node-a": [T0, 0.085]}),                 # revB31 4's [t, d]
    ("_cap_waves", {"node-a": ["x", 0.085, T0]}),
    ("_cap_waves", {"node-a": (T0, 0.085, T0)}),              # (updated in place: a list)
    ("_cap_waves", {"node-a": [T0, math.nan, T0]}),
    ("_cap_waves", {"node-a": [T0, 0.085, math.inf]}),
    ("_cap_waves", {7: [T0, 0.085, T0]}),
    ("_fleet_held", {"gpu:node-a/0": "x"}),
    ("_fleet_held", {"gpu:node-a/0": math.nan}),
    ("_fleet_held", []),
    ("_deep_caps", [(T0, 5)]),
    ("_deep_caps", [[T0, "node-a"]]),
    ("_deep_caps", [(T0 + 100.0, "node-a"), (T0, "node-b")]),  # (bisected: sorted by onset)
    ("_deep_caps", [("x", "node-a")]),
    ("_routine_cap", {"gpu:node-a/1": []}),                  # (prune reads its newest slot)
    ("_routine_cap", {"gpu:node-a/1": [(T0, T0)]}),
    ("_routine_cap", {"gpu:node-a/1": [(T0, "x", 0.03)]}),
    ("_routine_cap", {"gpu:node-a/1": [[T0, T0, 0.03]]}),
    ("_routine_cap", {"gpu:node-a/1": [(T0, T0, math.nan)]}),
    ("_routine_cap", {"gpu:node-a/1": (T0, T0, 0.03)}),
], ids=lambda v: str(v)[:48])
def test_a_forged_power_cap_state_is_refused(attr: str, value: Any) -> None:
    corr = _sound()
    setattr(corr, attr, value)
    with pytest.raises(SnapshotRefused) as exc:
        _restore(corr)
    assert exc.value.reason == "malformed" and attr in str(exc.value)
