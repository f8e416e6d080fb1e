"""cap39 (round 39, issue 10): routine power capping pages nobody; a capped site's real faults
keep their cause.

revA38 F1's site cap in waves (tests/test_revA38.py's ``capped_log`` / ``site_waves``) on seeds
and node sizes the finding's test does not run: before this round 12 of 48 runs paged (seeds
0-7, 4 and 8 GPUs a node, 10 and 30 s polls, waves and one wave), 8 after (a node's wave back
after minutes free: revA38's F1 xfail).  Guards: a node capped alone by its own limit, the
site's other nodes free, is still paged power at the node.

(revA38 F7's tests -- a node's brake at 30 s polls with its rows up to 4 s late -- left with
their fix, reverted by the lead in round 39: the wait it lengthened lost blind28 held
spread-s6's straggler hgx-a07/6 altogether.)
"""

from __future__ import annotations

import pytest

from tests.test_revA38 import capped_log, pages, site_waves


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
