"""cap39 (round 39, issue 10): routine power capping pages nobody; a capped site's real faults
keep their cause.

revA38 F1's site cap in waves (tests/test_revA38.py's ``capped_log`` / ``site_waves``) on seeds
and node sizes the finding's test does not run: before this round 12 of 48 runs paged (seeds
0-7, 4 and 8 GPUs a node, 10 and 30 s polls, waves and one wave), 8 after (a node's wave back
after minutes free: revA38's F1 xfail).  Guards: a node capped alone by its own limit, the
site's other nodes free, is still paged power at the node.

revA38 F7's node brake at 30 s polls with every record up to 4 s late (tests/test_revA38.py's
``_late``), on six seeds: before, 5 of 12 runs escalated slow_node/unknown before the node's
power page.
"""

from __future__ import annotations

import math

import pytest

from detector.engine import Engine
from detector.statecodec import SnapshotRefused
from detector.testing import T0, feed, thermal
from tests.test_revA38 import _late, capped_log, pages, site_waves
from tests.test_revA39 import _site
from tests.test_therm36 import node_polls


@pytest.mark.parametrize(("seed", "gpn"), [(2, 8), (2, 4), (4, 8), (7, 4)])
def test_a_site_cap_in_waves_at_30_s_polls_pages_nobody(seed: int, gpn: int) -> None:
    # Before: seed 2 x8 node-004 and gpu:node-000/7 isolated power as node-004's second wave
    # began (its first wave ended: two of eight GPUs told first).  (Seeds 1, 3, 5, 6: still
    # paged -- tests/test_revA38.py's F1 xfail, a wave back after minutes free.)
    log = capped_log(seed=seed, nodes=8, gpn=gpn, poll_s=30, steps=1800, capped=False,
                     cooling=False, waves=site_waves(seed))
    assert pages(log) == []


def test_one_wave_on_three_nodes_pages_no_gpu_told_again_grown() -> None:
    # Before: gpu:node-003/0 and gpu:node-002/1 isolated power 183 and 198 s in -- each a
    # rank held as the site's, told again grown on one noisy step (node_alarmed, not
    # node_wide), then read as its GPU's own cap.
    log = capped_log(seed=0, nodes=8, gpn=4, poll_s=10, steps=500, capped=False,
                     cooling=False, waves=[(100, 400, {2, 3, 6})])
    assert pages(log) == []


@pytest.mark.parametrize("poll_s", [10, 30])
def test_guard_one_nodes_own_cap_beside_free_nodes_is_paged_power(poll_s: int) -> None:
    log = capped_log(seed=4, nodes=8, gpn=4, poll_s=poll_s, steps=600, capped=False,
                     cooling=False, waves=[(100, 500, {5})])
    assert ("isolation", "power", "node:node-005") in pages(log)


# -- revA38 F7: a node's brake delivered within DESIGN's 5 s of disorder -----------------------


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("first", "bits"), [({2: 6, 5: 6}, 0x80),
                                             ({g: 6 + g for g in range(8)}, 0x8)],
                         ids=["two-0x80", "spreading-0x8"])
def test_a_nodes_brake_at_30_s_with_late_rows_is_one_node_page_at_its_sample(
        first: dict, bits: int, seed: int) -> None:
    # Before: seeds 2, 3 (two-0x80) and 1, 2, 5 (spreading-0x8) escalated slow_node/unknown
    # at the node or its first GPU 1.5 s after the poll's sample, the sample still on its
    # way; the node's power isolation 30-60 s later than in order.  Now one page, at the
    # sample's time as in order (180 s; 210 s spreading: its second GPU's poll).
    alerts = feed(Engine(), _late(node_polls(first, bits=bits, interval=30.0, polls=30), seed),
                  finish=False)
    fired = [a for a in alerts if a.status == "firing"]
    assert [(a.cause, a.scope.key) for a in fired] == [("power", "node:node-000")]
    assert fired[0].detected_ts <= T0 + (6 if bits == 0x80 else 7) * 30.0 + 1.0


@pytest.mark.parametrize("interval", [10.0, 30.0])
def test_guard_in_order_rows_keep_the_wait_of_before(interval: float) -> None:
    # (a node whose rows come in order: no delivery noted, its slow ranks' wait unchanged --
    # the brake's page at its sample, as on main)
    eng = Engine()
    alerts = feed(eng, node_polls({2: 6, 5: 6}, bits=0x80, interval=interval, polls=30),
                  finish=False)
    assert [(a.cause, a.scope.key) for a in alerts if a.status == "firing"] == [
        ("power", "node:node-000")]
    assert eng.correlator._late_rows == {}


def _late_engine() -> Engine:
    eng = Engine()
    feed(eng, _late(node_polls({2: 6, 5: 6}, bits=0x80, interval=30.0, polls=5), 2),
         finish=False)
    late = eng.correlator._late_rows.get("node-000", 0.0)
    assert 0.0 < late <= 4.0  # (what the disorder was: up to 4 s)
    return eng


def test_a_nodes_late_rows_round_trip_a_snapshot() -> None:
    eng = _late_engine()
    back = Engine.restore(eng.snapshot())
    assert back.correlator._late_rows == eng.correlator._late_rows


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 1e308, "4.0"])
def test_a_forged_late_row_figure_is_refused(value: object) -> None:
    # (a wait for a sample reads it: a NaN or a huge one would hold every slow rank's page)
    eng = _late_engine()
    eng.correlator._late_rows["node-000"] = value  # type: ignore[assignment]
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed" and "_late_rows" in str(exc.value)


@pytest.mark.parametrize("onset", [202, 205, 208])
def test_a_rank_waiting_when_its_nodes_rows_come_later_still_is_paged(onset: int) -> None:
    # cap40: blind28 held spread-s6's straggler hgx-a07/6 was never paged with the late-row
    # wait (its wait grew 5.31 -> 5.34 s while it waited: a node mate's row came later than
    # any before; the timer at the old end found it not yet due and nothing re-armed it).
    # Here a hidden 15 % fault waits for node-000's 10 s sample when a spare GPU's row of the
    # node comes 3 s late: paged once the sample and its 3 s are due (210.5 + 1 + 3 s).
    # Before: never paged (3 of 3 onsets).
    eng = Engine()
    out: list = []
    events = iter(_site(waves=[], hidden=(0, 1, onset, 1.15), steps=260, gpn=4))
    for e in events:
        out += eng.process(e)
        if "gpu:node-000/1" in eng.correlator._slow_wait:
            break
    out += eng.process(thermal(e.ts - 3.0, "node-000", 7, throttle=0x1, power_w=90.0))
    assert eng.correlator._late_rows == {"node-000": 3.0}
    out += feed(eng, events)
    assert [(a.cause, a.scope.key, round(a.detected_ts - T0, 1)) for a in out
            if a.status == "firing"] == [("unknown", "gpu:node-000/1", 214.5)]


# -- reporting corpus 38, powercap=fleet: the one false isolation ------------------------------


@pytest.mark.xfail(strict=True, reason=(
    "cap39 OPEN (reporting corpus 38 powercap=fleet s3802, pre-existing): a fleet holding 30-70 % "
    "of its GPUs at their cap (0x4, clock 2-6 % down, ranks not slower), and a routine power-cap "
    "dip of 0.5-3 % more on node-003/0 with its rank slowed by the dip (the simulator's benign "
    "power_cap): its clock 5.5 % down crosses clock_drop, its rank 4.6 % over its peers is "
    "within what the cap explains (its routine loss before was smaller), so _power_impact "
    "isolates it slow_node/power at +111.7 s.  DESIGN calls a cap that measurably hurts the "
    "job a recommendation; the operator's reading (cap39's brief) calls a routine-depth cap "
    "(under cap_clock_drop) under a fleet routinely capped the site's policy.  Fix idea: a 0x4 "
    "cap under cap_clock_drop on a GPU of a fleet capped on facility_cap_nodes nodes or more "
    "at that depth, the rank within what it explains, is evidence, not a page -- checked "
    "against the pinned shallow-cap power faults (blind19 R3, blind5 E2b, pcap29) first."))
def test_a_routine_cap_dip_under_a_capped_fleet_isolates_nothing(tmp_path) -> None:
    from pathlib import Path

    from detector.topology import Topology
    from replay.evaluation.corpus import build_pairs, resolve_topology
    from replay.evaluation.matrix import matrix_recipes
    from replay.runner import replay_log

    recipe = next(r for r in matrix_recipes("matrix") if r.name == "powercap-fleet")
    entry = build_pairs(tmp_path, [(recipe, 3802)], workers=1)["logs"][0]
    topo = Topology.load(resolve_topology(entry["topology"], Path(tmp_path)))
    fired = [a.scope.key for a in replay_log(tmp_path / entry["file"], topology=topo).alerts
             if a.status == "firing" and a.kind == "slow_node" and a.cause == "power"]
    assert "gpu:node-003/0" not in fired
