"""Room cap32, round 32: a node capped alone paged sooner, a site's hold that ends, the
site's-power-cap rule's state checked at restore.

1. d1cap (round 31) held a node's own node-wide 0x4 cap, every other node free, for
   ``impact_onset_s`` (60 s) and a sample for another node's cap to join (~75 s at 10 s: blind19
   replicas-s0/s2 2.7 -> 76.2 s).  A site's cap reaches its nodes within seconds (blind21 D1:
   every busy GPU of the row within 25 s; the tune logs' first partner wave 1-5 s after the
   first, the last 30 s): the wait is ``site_cap_join_s`` (30 s) and a sample now.
2. revB31 2: ``_fleet_explains`` re-armed ``_fleet_held[unit] = now`` at every 15 s look, so
   "escalated if still slow ``flap_window_s`` after" never began while the cap lasted: a
   node's own cap begun with one unrelated node's was never paged.  Two nodes' caps are held
   ``flap_window_s`` from the first explanation; a site's on ``facility_cap_nodes`` nodes or
   more (the count the sustained rule reads as facility power management since blind2) for
   as long as it lasts, and ``flap_window_s`` after it last explained the rank.
3. revB31 4 (below): the state checked at restore.

d1cap's ``_cap_waves`` / ``_fleet_held`` and the older ``_deep_caps`` / ``_routine_cap`` are
snapshotted with the correlator but were checked at restore only as maps (or a list): a value
``[t, d]`` in ``_cap_waves`` failed ``_fleet_cap``'s unpacking on every 0x4 finding, a string
time failed prune, so the worker failed its every batch instead of refusing the snapshot.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

import tests.test_d1cap as d1cap
from detector.alerts import ISOLATION
from detector.correlate import Correlator
from detector.pipeline.correlator import CorrelatorPartition
from detector.statecodec import UNSIGNED, SnapshotRefused
from detector.testing import T0
from detector.thresholds import Thresholds

LONG = 1000  # steps (s) of the long runs below; caps end at 880 s


def _long(monkeypatch: pytest.MonkeyPatch, caps: dict, **kw: Any) -> list:
    monkeypatch.setattr(d1cap, "STEPS", LONG)
    return d1cap._run(caps, **kw)


def test_a_node_capped_alone_is_paged_within_the_join_window() -> None:
    # node-004 capped 8.5 % from 100 s (its first capped sample at 106.2 s), fifteen nodes
    # free: c8371d9 paged it at +179.7 s (106.2 + 60 + 12.5 + 1); now 106.2 + 30 + 12.5 + 1.
    alerts = d1cap._run({4: (0.0, 0.085)}, nodes=16)
    assert d1cap._pages(alerts) == [(ISOLATION, "slow_node", "power", "node:node-004")]
    assert alerts[0].detected_ts - (T0 + d1cap.CAP_FROM) < 50.0, alerts[0].detected_ts - T0


def test_two_nodes_capped_25_s_apart_still_wait_for_each_other() -> None:
    # A site's cap reaching its second node 25 s after its first (blind21 D1's spread):
    # still one limit, nobody paged.
    assert d1cap._pages(d1cap._run({4: (0.0, 0.085), 11: (25.0, 0.085)}, nodes=16)) == []


def test_a_node_s_own_cap_beside_one_unrelated_cap_is_paged_within_the_cap(monkeypatch) -> None:
    # revB31 2 (S2 with the caps 10 s apart, both to 880 s): two nodes' caps held as one
    # limit for ever -- no page while they lasted.  Held flap_window_s from the first
    # explanation, then each is paged as its node's power limit.
    alerts = _long(monkeypatch, {4: (0.0, 0.085, 880.0), 11: (10.0, 0.085, 880.0)}, nodes=16)
    pages = d1cap._pages(alerts)
    assert sorted(pages) == [(ISOLATION, "slow_node", "power", "node:node-004"),
                             (ISOLATION, "slow_node", "power", "node:node-011")], pages
    assert all(a.detected_ts < T0 + 880.0 - 60.0 for a in alerts), [
        a.detected_ts - T0 for a in alerts]


def test_a_row_cap_longer_than_the_flap_window_still_pages_nobody(monkeypatch) -> None:
    # blind21 D1's row caps last 12-15 min: four nodes capped within 21 s for 780 s -- a
    # site's, held for as long as it lasts and a while after (its ranks' runs end 1-80 s
    # after the cap lets go).
    row = {n: (*c, 880.0) for n, c in d1cap.ROW.items()}
    assert d1cap._pages(_long(monkeypatch, row)) == []


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
