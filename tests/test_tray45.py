"""tray45 (round 45, issue 10): a TP group spanning nodes -- which GPU of it is the cause, and
which slow ranks are its partners (detector.correlate.trays; revA44 F2, F3, F9).

The jobs are tests/test_revA44.py's ``_tp_world`` (TP x PP x DP on trays of 1-8 GPUs, steps
every 1.7 s, every GPU's rows on a phase of its own; from step 130 replica 1's stage-1 TP
group computes ``factor`` x, onset at 221.0 s) and ``_two_stage_faults`` (that group slowed by
a hot GPU on t-06, the replica's stage-0 group on t-04/t-05 slowed ``off`` steps later with
nothing shown).  Seeds 4504xx.
"""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from detector.engine import Engine
from detector.events import ThermalSample
from detector.testing import T0, feed
from tests.test_revA44 import SHAPES, _firing, _tp_pages, _tp_world, _two_stage_faults

ONSET = 1.7 * 130  # the group's first slow step, s after T0


@pytest.mark.parametrize("seed", [450401, 450402])
def test_a_warm_gpu_on_the_slow_tray_is_not_its_tp_groups_cause(seed: int) -> None:
    # revA44 F2's other half: the warm GPU (76 C, full clock, no reason) on the tray of the
    # group's nominal fault GPU, its rank found before the other tray's -- main f08a653
    # isolated that tray thermal at once, its partners joining (4 of 4 seeds); with nothing
    # shown by any GPU of the group, the group's replica is the smallest scope holding it
    events, fault = _tp_world(seed, shows="nothing", warm=(6, 2), **SHAPES["tp8-2n"])
    assert fault == "t-06"
    assert _tp_pages(events) == {("escalation", "unknown", "replica:tp-job/1")}


@pytest.mark.parametrize(("row_s", "within_s"), [(1.0, 12.0), (10.0, 22.0), (30.0, 50.0)])
def test_a_tp_pair_slowed_by_a_shallow_cap_is_paged_power_at_the_capped_gpu(
        row_s: float, within_s: float) -> None:
    # revA44 F3 at every poll it was seen at: TP2 over two one-GPU nodes, the cap on t-07's
    # GPU (0x4, clock -3 %); main f08a653 escalated the partner t-06 unknown, 10-117 s after
    # onset.  The one GPU showing why is paged once the group's wait is over, not after
    # GROUP_LOOKS more of its rows: 8-19 s at 1-10 s rows, 43-45 s at 30 s (34-38 s and
    # 103-117 s with the looks)
    events, fault = _tp_world(450410, shows="shallow", factor=1.06, row_s=row_s,
                              **SHAPES["tp2-2n"])
    fired = _firing(feed(Engine(), events))
    assert [f[:3] for f in fired] == [("isolation", "power", f"gpu:{fault}/0")], fired
    assert fired[0][3] - ONSET <= within_s


@pytest.mark.parametrize("off", [2, 3])
def test_a_stage_slowed_steps_after_its_replicas_hot_group_is_paged_on_its_own(
        off: int) -> None:
    # revA44 F9: a stage slowed 2-3 steps after its replica's other stage is no pipeline mate
    # of it (a paced stage is slow from the pacing stage's step): main f08a653 joined it to
    # the hot GPU's thermal page and never paged it (seeds 450420..450427 at 2 and 3 steps
    # apart: stage 0 paged in 2 of 16 on main, 13 of 16 here; the 3 left found a step apart)
    pages = _tp_pages(_two_stage_faults(450424, off=off))
    assert pages == {("isolation", "thermal", "node:t-06"),
                     ("escalation", "unknown", "replica:tp-job/1")}, pages


@pytest.mark.parametrize("pp", [1, 2])
def test_guard_a_hot_gpu_at_full_clock_under_its_slow_tp_group_on_one_node_is_paged_thermal(
        pp: int) -> None:
    # blind32's hot-h-09 (30 C over its node at full clock, its replica's 8 ranks on that
    # node slow alike: thermal at the node) in _tp_world's job on 8-GPU nodes: the group on
    # one node, its replica on one node (pp 1) or two (pp 2: its rank waits for a partner on
    # another node that never comes) -- thermal at its node alone, as on main f08a653
    events, fault = _tp_world(450430, tp=8, gpn=8, pp=pp, shows="nothing")
    fnode, fgpu = fault, (8 * (pp + 1) + 1) % 8
    events = [replace(e, gpu_temp_c=85.0) if isinstance(e, ThermalSample) and e.node == fnode
              and e.gpu == fgpu and e.ts >= T0 + 1.7 * 128 else e for e in events]
    assert _tp_pages(events) == {("isolation", "thermal", f"node:{fnode}")}
