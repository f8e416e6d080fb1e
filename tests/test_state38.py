"""state38: a restored snapshot's node thermal state is held to the bounds the live code keeps.

therm37 added per-GPU ``back`` (a GPU's temperatures on its samples before its latest) and
``noise`` (the mean square of its temperature's move) to NodeTemps; the typed codec restores
them, but a forged snapshot's NaN / inf / negative / huge value restored as is and silently
changed what pages (a huge noise hides every climb of the mates; a NaN disables their rule).
Every reading NodeTemps keeps -- temperatures, their moves, powers -- is now held to readable()'s
bounds on restore, and every GPU it keys to the decoder's index bound; a snapshot that fails is
refused ``malformed`` (the worker starts cold), never restored.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from detector.engine import Engine
from detector.events import INDEX_LIMIT
from detector.statecodec import SnapshotRefused
from detector.testing import T0, feed, thermal

NODE = "node-000"


def _samples(start: int, stop: int) -> list[Any]:
    """Eight GPUs at 5 s flickering half a degree about 65 C; GPU 3 climbs from 100 s on to
    90 C (a cooling fault: paged thermal)."""
    return [thermal(T0 + k, NODE, g,
                    temp_c=(65.0 + (min(25.0, (k - 100) * 0.5) if g == 3 and k > 100 else 0.0)
                            + (0.5 if (k // 5 + g) % 2 else 0.0)))
            for k in range(start, stop, 5) for g in range(8)]


def _warm_engine() -> Engine:
    eng = Engine()
    feed(eng, _samples(0, 100), finish=False)
    temps = eng.monitors._node_temps[NODE]
    assert temps.noise and temps.back and temps.power and temps.raw  # (the fields are live)
    return eng


BIG = 1e308
FORGED = [
    ("noise", {0: math.nan}), ("noise", {0: math.inf}), ("noise", {0: -0.25}),
    ("noise", {0: BIG}), ("noise", {0: "0.25"}), ("noise", {INDEX_LIMIT: 0.25}),
    ("noise", {-1: 0.25}),
    ("back", {0: [65.0, math.nan]}), ("back", {0: [math.inf]}), ("back", {0: [-math.inf]}),
    ("back", {0: [-300.0]}), ("back", {0: [BIG]}), ("back", {0: ["65"]}),
    ("back", {0: (65.0,)}), ("back", {0: [65.0] * 4}), ("back", {INDEX_LIMIT: [65.0]}),
    ("temps", {0: math.inf}), ("temps", {0: -math.inf}), ("temps", {0: BIG}),
    ("temps", {0: -300.0}), ("temps", {INDEX_LIMIT: 65.0}),
    ("times", {0: math.inf}), ("times", {0: -math.inf}),
    ("power", {0: math.inf}), ("power", {0: -600.0}), ("power", {0: BIG}),
    ("raw", {0: math.inf}), ("raw", {0: -1.0}), ("raw", {0: BIG}),
    ("gpus", {INDEX_LIMIT}), ("gpus", {-1}), ("gpus", set(range(INDEX_LIMIT, INDEX_LIMIT + 9))),
    ("idle", {INDEX_LIMIT}), ("hot", {1 << 40}),
]


@pytest.mark.parametrize(("field", "value"), FORGED, ids=lambda v: repr(v)[:24])
def test_a_forged_node_thermal_reading_is_refused(field: str, value: Any) -> None:
    # 33 of 34 fail before (all but ("back", {0: ["65"]})): is_real / is_real_map / is_int_set
    # took any non-NaN number and any int GPU, so these restored as they were.
    eng = _warm_engine()
    setattr(eng.monitors._node_temps[NODE], field, value)
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed" and f"NodeTemps.{field}" in str(exc.value)


def test_a_huge_restored_noise_would_hide_a_climb() -> None:
    # Why the bound matters: the poisoned value is one no live path makes.  (Fails before: the
    # snapshot restored.)
    eng = _warm_engine()
    eng.monitors._node_temps[NODE].noise = dict.fromkeys(range(8), BIG)
    with pytest.raises(SnapshotRefused):
        Engine.restore(eng.snapshot())


def test_a_real_snapshot_round_trips_and_pages_the_same() -> None:
    straight = Engine()
    want = feed(straight, _samples(0, 400))
    assert [(a.status, a.cause, a.scope.gpu) for a in want][:1] == [("firing", "thermal", 3)]
    eng = _warm_engine()
    back = Engine.restore(eng.snapshot())
    temps, was = back.monitors._node_temps[NODE], eng.monitors._node_temps[NODE]
    assert (temps.noise, temps.back, temps.power) == (was.noise, was.back, was.power)
    got = feed(back, _samples(100, 400))
    assert got == want
