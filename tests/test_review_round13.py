"""Room review13, round 14: cases round 13's landings get wrong (steps, clock, fabric, sdc).

Each finding is a strict xfail: it states what an operator needs, fails on main today for the
reason given, and turns into an unexpected pass (a failure) the moment the detector is fixed
-- then drop the mark and keep the reason as a comment "(Was a strict xfail: ...)".  Where
the reason says what a case was before, it was run on a6d23a2 (main before round 13, a ``git
archive``).  Beside each, where the boundary matters, a plain test of the neighbouring case
that passes (the control).  Nothing here was tuned on the blind or simulated corpora;
findings and suggested fixes: /work/helpers/review13-findings.md.
"""

from __future__ import annotations

import numpy as np
import pytest
from msgspec.structs import replace

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.testing import T0, ecc, feed, step
from tests.test_clock_round13 import RIGHT, fleet
from tests.test_clock_round13 import firing as clock_firing
from tests.test_fabric_round13 import leaves_of, run, scopes, whole
from tests.test_review_round9 import RAIL


def _seen(alerts: list) -> list[tuple[str, str, str, str, str]]:
    return [(a.status, a.topic, a.kind, a.cause, a.scope.key) for a in alerts]


# -- steps (891a9bd, b954699): a node's ranks slow alike; a restart's ranks on other hardware --


def _tp4_job(*, xid_gpu: int | None, steps: int = 300, slow_from: int = 150,
             seed: int = 3) -> list:
    """TP4 x DP4 on GPUs 0-3 of node-000..003 (GPUs 4-7 of each node run something else or
    nothing), a step every 2 s; from ``slow_from`` node-000's TP group is 15 % slower alike
    (its host, its NVLink: TP inside the node); ``xid_gpu``: a GPU of node-000 *outside the
    job* that fell off the bus (XID 79) at +20 s."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(steps):
        comp = 1500.0 * rng.lognormal(0.0, 0.012, 16)
        if s >= slow_from:
            comp[0:4] *= 1.15
        sm = round(float(comp.max()) + 250.0, 2)
        t = T0 + 2.0 * s
        for r in range(16):
            out.append(step(t + 0.001 * r, r, s, node=f"node-{r // 4:03d}", gpu=r % 4,
                            step_ms=sm, compute_ms=round(float(comp[r]), 2), tp=r % 4, pp=0,
                            dp=r // 4))
        if xid_gpu is not None and s == 10:
            out.append(ecc(t + 0.5, "node-000", xid_gpu, xid=79))
    return out


@pytest.mark.xfail(strict=True, reason=(
    "891a9bd (steps13): Correlator._node_verdict hands a node_wide slow rank to ANY firing "
    "hardware isolation on a GPU of its node -- not one of the slow ranks' GPUs, not the "
    "job's, from any time before: GPU 6 of node-000 (not in the job) off the bus at +20 s "
    "swallows the job's TP group slowed 15 % alike at +300 s, and node-000's slowness is "
    "paged nowhere (a6d23a2: the hardware isolation and the slow_node node:node-000 "
    "escalation at +307 s)"))
def test_a_node_slow_alike_beside_a_dead_gpu_outside_the_job_is_still_paged() -> None:
    alerts = feed(Engine(), _tp4_job(xid_gpu=6))
    assert ("firing", ESCALATION, "slow_node", "unknown", "node:node-000") in _seen(alerts)


def test_a_node_slow_alike_is_paged() -> None:
    # The control: the same job without the dead GPU beside it.
    assert _seen(feed(Engine(), _tp4_job(xid_gpu=None))) == [
        ("firing", ESCALATION, "slow_node", "unknown", "node:node-000")]


def _restarted(*, swap: bool, seed: int = 5) -> list:
    """Pure DP 16 on node-000 and node-001 (rank r on GPU r % 8), GPU 3 of node-000 8 %
    slower than its peers from the job's first step (learned: start_offset_max is 15 %);
    at step 120 the job restarts from its step-100 checkpoint on the same two nodes, with
    the nodes' order ``swap``-ed (torchrun's rendezvous numbers nodes in the order they join
    unless --node-rank is fixed; a Slurm requeue lists them again): ranks 0-7 on node-001."""
    rng = np.random.default_rng(seed)
    out: list = []

    def emit(t: float, s: int, flip: bool) -> float:
        where = [((r // 8) ^ flip, r % 8) for r in range(16)]
        comp = 1500.0 * rng.lognormal(0.0, 0.012, 16)
        comp *= [1.08 if w == (0, 3) else 1.0 for w in where]
        sm = round(float(comp.max()) + 250.0, 2)
        out.extend(step(t + 0.001 * r, r, s, node=f"node-{n:03d}", gpu=g, step_ms=sm,
                        compute_ms=round(float(comp[r]), 2), dp=r)
                   for r, (n, g) in enumerate(where))
        return sm / 1000.0 + 0.2

    for s in range(120):
        emit(T0 + 2.0 * s, s, False)
    t = T0 + 2.0 * 120 + 300.0
    for s in range(100, 400):
        t += emit(t, s, swap)
    return out


@pytest.mark.xfail(strict=True, reason=(
    "891a9bd (steps13): _track_hardware's `_fresh = restarts == 0` -- after a restart a rank "
    "on other hardware may learn no start offset: the job restarting on the SAME two nodes "
    "with their order swapped moves every rank, and node-000's GPU 3, 8 % slower from the "
    "job's start (learned then), is paged slow_node gpu:node-000/3 9 s (5 steps) after the "
    "restart (a6d23a2: nothing -- the offset learned again in the restart's warm-up)"))
def test_a_restart_on_the_same_nodes_in_another_order_pages_nobody() -> None:
    assert feed(Engine(), _restarted(swap=True)) == []


def test_a_restart_on_the_same_nodes_in_the_same_order_pages_nobody() -> None:
    # The control: no rank moved, every learned offset kept.
    assert feed(Engine(), _restarted(swap=False)) == []


# -- clock (e28b982 / bb9047d): a node whose clock is ahead is that node's offset -------------


def _ahead(nodes: tuple[str, ...], skew: float) -> list:
    """clock13's fleet (job-1 on node-000/001, node-009's own job, thermal of the three) in
    arrival order, with ``nodes`` stamping ``skew`` s ahead."""
    return [replace(e, ts=round(e.ts + skew, 4)) if e.node in nodes else e
            for e in fleet(0.0)]


@pytest.mark.xfail(strict=True, reason=(
    "bb9047d (clock13): Monitors._ahead takes a second node whose lead agrees with a skewed "
    "node's offset (within SKEW_S) for 'the fleet's time moved' and drops both offsets: two "
    "nodes that follow one bad NTP relay (+30 s alike) move the clock for all -- job-1's "
    "steps decided as their first messages came, 1200 messages late, the job taken to have "
    "shrunk to 8 of 16 ranks, node-009's alerts stamped 30 s late (as a6d23a2 did with one "
    "node ahead: blind4 D6)"))
def test_two_nodes_ahead_alike_move_no_other_job() -> None:
    eng = Engine()
    alerts = feed(eng, _ahead(("node-001", "node-009"), 30.0))
    job = eng.monitors._jobs["job-1"]
    assert (job.late, job._expected) == (0, 16)
    assert [(k, s) for k, s, _o, _l in clock_firing(alerts)] == [(k, s) for k, s, _o, _l in RIGHT]


def test_one_node_of_a_job_ahead_moves_no_other_job() -> None:
    # The control: node-001 alone 30 s ahead (its job's other node keeps the clock).
    eng = Engine()
    alerts = feed(eng, _ahead(("node-001",), 30.0))
    job = eng.monitors._jobs["job-1"]
    assert (job.late, job._expected) == (0, 16)
    assert clock_firing(alerts) == RIGHT


# -- fabric (9ca07d8): a spine named as the spine ---------------------------------------------


@pytest.mark.xfail(strict=True, reason=(
    "9ca07d8 (fabric13): _spine_shape never applies to a rail fabric ('a rail leaf faces one "
    "port of each node'), and nothing else looks above a rail leaf: a spine failing in the "
    "project's own rail topology (topologies/h100-128.topo, DGX SuperPOD: every port of every "
    "node carries flows through it) is 16 switch isolations -- every leaf of the cluster "
    "drained -- and spine[0-1] never named (a6d23a2 the same)"))
def test_every_rail_leaf_erring_at_once_is_one_alert_above_them() -> None:
    assert scopes(run(whole(leaves_of(range(16))), RAIL, nodes=16)) == [
        (ESCALATION, "switch:spine[0-1]")]


def test_one_rail_leaf_erring_is_that_leaf() -> None:
    # The control: mlx5_3 of the 8 nodes under rail3-leaf0 erring is that leaf.
    assert scopes(run({n: {3} for n in leaves_of(range(8))}, RAIL, nodes=16)) == [
        (ISOLATION, "switch:rail3-leaf0")]
