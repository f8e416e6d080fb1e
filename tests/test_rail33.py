"""rail33 (round 33): a rail leaf retraining its ports lower is the switch's, whatever the
topology names (revB32 6); remap32's loose ends (issue 10).

link32 (round 32) pages a port that bounced and came back lower beside a sibling of its node
up at the old rate at that poll (blind22 W1: 400 -> 100 Gb/s): the sibling says the node's
HCAs did not reset and its switch did not fail.  In a rail-optimised fabric the sibling faces
another switch, so it says nothing of the port's rail leaf -- and a rail fabric described by
a plain Slurm topology.conf (a leaf per node, no NICs named), or by no topology at all, is
common.  revB32 6: a rail leaf retraining mlx5_2 of hgx001-008 400 -> 200 paged
nic:hgx001/mlx5_2 at once and switch:leaf1 38.5 s later on a Slurm file (one extra firing
page), 7 NIC isolations with no topology; stated rails: the switch alone.

The same port name retrained lower on another node within one poll is the rail's: the window
decides them.  One poll: each node samples once an interval at its own phase, so one event
on a rail shows on every node's next sample up to an interval after the first sighting (10 s
or 30 s) -- the part's window, an interval and a quarter plus a second.  The first node's
retrain has nothing beside it yet, the same as a lone port's (blind22 W1, kept at its poll):
decided at once, and taken back when a second node shows the same port within the poll --
before a pager's group wait (10 s) sends it, at the phases these fabrics have.
"""

from __future__ import annotations

import random

import pytest

from detector.alerts import ESCALATION, ISOLATION, FiredAlert
from detector.engine import Engine
from detector.events import NicSample
from detector.pager.config import StormConfig
from detector.pager.storm import StormControl
from detector.testing import T0, feed
from detector.topology import Topology
from tests.test_link32 import _topology, fabric, poll_ts

SLURM = Topology.from_text("SwitchName=leaf1 Nodes=hgx[001-008]\n"
                           "SwitchName=leaf2 Nodes=hgx[009-016]\n"
                           "SwitchName=spine Switches=leaf[1-2]\n")
PORTS = [f"mlx5_{k}" for k in range(8)]
RAIL = {(f"hgx{n:03d}", "mlx5_2"): (10, 200.0, 100) for n in range(1, 9)}  # revB32's probe


def phased(poll: float, polls: int, retrain: dict, seed: int = 3360, nodes: int = 16
           ) -> list[NicSample]:
    """``nodes`` x 8 ports at 400 Gb/s polled every ``poll`` s, each node at its own random
    phase (blind22's fabric: phases spread over the whole interval).  ``retrain[(node, nic)]
    = (ts, rate)``: the port bounced at ``T0 + ts`` and is up at ``rate`` from then on."""
    rng = random.Random(seed)
    out = []
    for n in range(nodes):
        node, phase = f"hgx{n + 1:03d}", rng.uniform(0.0, poll)
        state = {p: [0, 0] for p in PORTS}  # bytes, link_downed
        for i in range(polls):
            base = T0 + phase + i * poll
            for j, p in enumerate(PORTS):
                st, rate = state[p], 400.0
                r = retrain.get((node, p))
                if r is not None and base >= T0 + r[0]:
                    rate = r[1]
                    if base - poll < T0 + r[0]:
                        st[1] += 1
                st[0] += int(min(rate, 300.0) * poll / 8 * 1e9)
                half = st[0] // 2
                out.append(NicSample(base + 0.005 * j, node, p, 1, "up", rate, half, half, 0,
                                     st[1], 0, 0, 0, None, None, None, None))
    return sorted(out, key=lambda s: s.ts)


def seen_lower(recs: list[NicSample], node: str, nic: str) -> float:
    """When ``nic`` of ``node`` was first sampled after its bounce."""
    return min(s.ts for s in recs if (s.node, s.nic) == (node, nic) and s.link_downed)


def isolations(alerts: list, level: str | None = None) -> list:
    return [a for a in alerts if a.topic == ISOLATION
            and (level is None or a.scope.level == level)]


def paged(alerts: list) -> list[str]:
    """The dedup keys a storm-controlled sink (PagerDuty, webhook: default settings) sends a
    trigger for, the alerts offered at their event time."""
    storm, sent = StormControl("pd", StormConfig(), now=T0), []
    for a in alerts:
        now = a.detected_ts
        sent += storm.due(now)
        sent += storm.offer(FiredAlert.from_record(a.topic, a.to_dict()), "critical", None,
                            now=now)
    sent += storm.due(max(a.detected_ts for a in alerts) + 3600.0)
    return [n.alert.scope.key for n in sent if n.event == "trigger" and n.alert is not None]


# -- 1. revB32 6: the rail leaf on a Slurm file, or on none ------------------------------

def test_a_rail_leaf_on_a_slurm_file_is_the_switch_and_the_first_nic_is_taken_back() -> None:
    recs = fabric(20, retrain=RAIL)
    alerts = feed(Engine(topology=SLURM), recs)
    first, second = seen_lower(recs, "hgx001", "mlx5_2"), seen_lower(recs, "hgx002", "mlx5_2")
    nics = isolations(alerts, "nic")
    # hgx001 alone has nothing beside it yet (a lone port's shape, paged at its poll) ...
    assert [(a.status, a.scope.key) for a in nics] == [
        ("firing", "nic:hgx001/mlx5_2:1"), ("resolved", "nic:hgx001/mlx5_2:1")]
    assert nics[0].detected_ts - first <= 1.0
    # ... and is taken back within one poll, at the sighting that makes the leaf failing by
    # its window's count (railfix33: not at hgx002's alone -- two nodes are two links).
    seen = sorted(seen_lower(recs, f"hgx{n:03d}", "mlx5_2") for n in range(1, 9))
    assert second < nics[1].detected_ts
    assert any(0.0 <= nics[1].detected_ts - s <= 0.1 for s in seen[2:])
    assert "withdrawn" in nics[1].evidence
    assert [(a.status, a.scope.key) for a in isolations(alerts, "switch")] == [
        ("firing", "switch:leaf1")]
    # Storm control drops a page resolved inside its group wait: PagerDuty sees the switch.
    assert paged(alerts) == ["switch:leaf1"]


def test_with_no_topology_the_rail_is_one_escalation_not_seven_nics() -> None:
    recs = fabric(20, retrain=RAIL)
    alerts = feed(Engine(), recs)
    assert [a.scope.key for a in isolations(alerts) if a.status == "firing"] == [
        "nic:hgx001/mlx5_2:1"]
    resolved = [a for a in isolations(alerts) if a.status == "resolved"]
    assert [a.scope.key for a in resolved] == ["nic:hgx001/mlx5_2:1"]
    # Withdrawn at the sighting that makes the rail a share of the fabric (railfix33: not at
    # hgx002's alone), 13.3 s after the first -- past a pager's group wait, so PagerDuty
    # sends the first NIC too, resolved before the escalation fires.
    seen = sorted(seen_lower(recs, f"hgx{n:03d}", "mlx5_2") for n in range(1, 9))
    assert any(0.0 <= resolved[0].detected_ts - s <= 0.1 for s in seen[2:])
    esc = [a for a in alerts if a.topic == ESCALATION and a.status == "firing"]
    assert [a.scope.key for a in esc] == ["switch:unknown"]
    assert esc[0].evidence["rail"].startswith("mlx5_2 on 8 of")
    assert paged(alerts)[-1:] == ["switch:unknown"]
    assert set(paged(alerts)) <= {"nic:hgx001/mlx5_2:1", "switch:unknown"}


def test_control_stated_rails_stay_the_switch_alone() -> None:
    alerts = feed(Engine(topology=_topology(rails=True)), fabric(20, retrain=RAIL))
    assert [(a.status, a.scope.key) for a in isolations(alerts)] == [
        ("firing", "switch:rail2-leaf0")]


@pytest.mark.parametrize("poll", [10.0, 30.0])
@pytest.mark.parametrize("topo", ["slurm", "none"])
def test_at_10_and_30_s_with_per_node_phases_one_poll_is_one_rail(poll: float, topo: str
                                                                   ) -> None:
    # The leaf retrains mlx5_2 of hgx001-008 at one instant; each node shows it at its own
    # phase, over up to one interval.  At most the first sighting pages (and is taken back
    # once the part is failing by its window's count); the part is decided by its window.
    retrain = {(f"hgx{n:03d}", "mlx5_2"): (300.0 + 0.3, 200.0) for n in range(1, 9)}
    recs = phased(poll, int(900 / poll), retrain)
    alerts = feed(Engine(topology=SLURM if topo == "slurm" else None), recs)
    seen = sorted(seen_lower(recs, f"hgx{n:03d}", "mlx5_2") for n in range(1, 9))
    nics = isolations(alerts, "nic")
    assert len([a for a in nics if a.status == "firing"]) <= 1
    for a in nics:
        if a.status == "firing":
            assert a.detected_ts - seen[0] <= 1.0
        else:
            # taken back at a later sighting within the poll, once the part's count is met
            assert any(0.0 <= a.detected_ts - s <= 0.1 for s in seen[1:])
    part = "switch:leaf1" if topo == "slurm" else "switch:unknown"
    fired = [a.scope.key for a in alerts if a.status == "firing" and a.scope.level == "switch"]
    assert fired == [part]
    assert all(a.status == "resolved" or a.detected_ts < seen[1]
               for a in nics)  # nothing NIC-level fires once two nodes show the rail


# -- the lone port (blind22 W1) keeps its latency ----------------------------------------

@pytest.mark.parametrize("poll", [10.0, 30.0])
@pytest.mark.parametrize("topo", ["slurm", "none"])
def test_a_lone_port_retrained_lower_is_still_paged_at_its_poll(poll: float, topo: str
                                                                 ) -> None:
    recs = phased(poll, int(900 / poll), {("hgx007", "mlx5_2"): (300.3, 100.0)})
    alerts = feed(Engine(topology=SLURM if topo == "slurm" else None), recs)
    fired = [a for a in alerts if a.status == "firing"]
    assert [a.scope.key for a in fired] == ["nic:hgx007/mlx5_2:1"]
    assert fired[0].detected_ts - seen_lower(recs, "hgx007", "mlx5_2") <= 1.0
    assert not [a for a in alerts if a.status == "resolved"]


def test_control_the_same_port_of_two_nodes_minutes_apart_is_two_links() -> None:
    # Two cables of the same rail degrading 5 min apart: not one poll, each paged at its own.
    recs = fabric(30, retrain={("hgx003", "mlx5_2"): (8, 100.0, 0),
                               ("hgx011", "mlx5_2"): (18, 100.0, 0)})
    alerts = feed(Engine(topology=SLURM), recs)
    fired = [a for a in alerts if a.status == "firing"]
    assert [a.scope.key for a in fired] == ["nic:hgx003/mlx5_2:1", "nic:hgx011/mlx5_2:1"]
    assert fired[0].detected_ts - poll_ts(recs, "hgx003", "mlx5_2", 8) <= 1.0
    assert fired[1].detected_ts - poll_ts(recs, "hgx011", "mlx5_2", 18) <= 1.0
    assert not [a for a in alerts if a.status == "resolved"]


@pytest.mark.parametrize("other", ["mlx5_6", "mlx5_2"])
def test_control_ports_of_two_leaves_in_one_poll_are_two_links(other: str) -> None:
    # hgx003 (leaf1) and hgx012 (leaf2) retrained in the same poll: each part's window decides
    # only its own nodes -- one port behind each is a lone port's, paged at its poll, whether
    # their names differ or not.
    recs = fabric(20, retrain={("hgx003", "mlx5_2"): (10, 100.0, 0),
                               ("hgx012", other): (10, 100.0, 0)})
    alerts = feed(Engine(topology=SLURM), recs)
    fired = [a for a in alerts if a.status == "firing"]
    assert [a.scope.key for a in fired] == ["nic:hgx003/mlx5_2:1", f"nic:hgx012/{other}:1"]
    assert fired[0].detected_ts - poll_ts(recs, "hgx003", "mlx5_2", 10) <= 1.0
    assert fired[1].detected_ts - poll_ts(recs, "hgx012", other, 10) <= 1.0
    assert not [a for a in alerts if a.status == "resolved"]


# -- 2a. remap32's loose end: a remap's page and a worse verdict of the same instant -----

REMAP_NODE, REMAP_GPU = "sx11", 4


def _ecc_quiet(t0: float, t1: float, **kw) -> list:
    from detector.testing import ecc
    out, t = [], t0
    while t <= t1:
        out.append(ecc(T0 + t, REMAP_NODE, REMAP_GPU, **kw))
        t += 30.0
    return out


@pytest.mark.parametrize("late", [False, True])
@pytest.mark.parametrize("worse", [92, 48, 64])
def test_a_remap_flag_and_a_worse_xid_of_one_instant_are_one_page(worse: int, late: bool
                                                                   ) -> None:
    # blind3 k8s-mixed-s2: the sample that sets row_remap_pending, then XID 92's record at
    # the same ts -- paged reset_gpu, then drain_gpu at that ts: two messages of one problem.
    # Records of one ts are one instant: the worse verdict's action is its first message.
    # ``late``: as in blind3, another node's record 1.5 s ahead came first (the stream's
    # clock ahead of both records of the instant).
    from detector.testing import ecc
    ahead = [ecc(T0 + 76.5, "sx12", 0)] if late else []
    events = [*_ecc_quiet(0.0, 60.0), *ahead,
              ecc(T0 + 75.0, REMAP_NODE, REMAP_GPU, pending=True),
              ecc(T0 + 75.0, REMAP_NODE, REMAP_GPU, pending=True, xid=worse,
                  failure=worse == 64),
              *_ecc_quiet(90.0, 300.0, pending=True, failure=worse == 64)]
    alerts = feed(Engine(), events)
    fired = [a for a in alerts if a.status == "firing"]
    assert [(a.action.name, a.detected_ts) for a in fired] == [("drain_gpu", T0 + 75.0)]
    signals = [s["signal"] for s in fired[0].evidence["signals"]]
    assert "row_remap_pending" in signals  # (the remap is its evidence)


@pytest.mark.parametrize("first", ["flag", "xid63"])
def test_a_lone_remap_is_paged_within_a_second_of_its_instant(first: str) -> None:
    # The remap waits REMAP_INSTANT_S (half of DESIGN's 1 s) of the stream's clock for a
    # worse verdict of its instant, then pages as before, that much later.
    from detector.correlate import REMAP_INSTANT_S
    from detector.testing import ecc
    engine = Engine()
    for ev in _ecc_quiet(0.0, 60.0):
        engine.process(ev)
    out = engine.process(ecc(T0 + 75.0, REMAP_NODE, REMAP_GPU, pending=first == "flag",
                             xid=63 if first == "xid63" else None))
    out += engine.process(ecc(T0 + 75.2, "sx12", 0))
    assert [a for a in out if a.status == "firing"] == []  # (still its instant's wait)
    out += engine.process(ecc(T0 + 75.6, "sx12", 1))
    fired = [a for a in out if a.status == "firing"]
    assert [(a.action.name, a.detected_ts) for a in fired] == [
        ("reset_gpu", T0 + 75.0 + REMAP_INSTANT_S)]
    assert REMAP_INSTANT_S < 1.0


def test_control_a_worse_xid_a_second_later_still_widens_the_remap_page() -> None:
    # Not one instant: the remap's page first, then the drain (remap32's widening).
    from detector.correlate import REMAP_INSTANT_S
    from detector.testing import ecc
    events = [*_ecc_quiet(0.0, 60.0),
              ecc(T0 + 75.0, REMAP_NODE, REMAP_GPU, pending=True),
              ecc(T0 + 76.0, REMAP_NODE, REMAP_GPU, pending=True, xid=92),
              *_ecc_quiet(90.0, 300.0, pending=True)]
    fired = [a for a in feed(Engine(), events) if a.status == "firing"]
    assert [(a.action.name, a.detected_ts) for a in fired] == [
        ("reset_gpu", T0 + 75.0 + REMAP_INSTANT_S), ("drain_gpu", T0 + 76.0)]
    assert fired[1].evidence.get("action_was") == "reset_gpu"


# -- 2b. a reset at the job's end costs the job nothing ----------------------------------

def test_a_remap_pages_recovery_estimate_is_no_restart() -> None:
    from detector.testing import ecc
    events = [*_ecc_quiet(0.0, 60.0), ecc(T0 + 75.0, REMAP_NODE, REMAP_GPU, xid=63),
              *_ecc_quiet(90.0, 300.0, pending=True)]
    fired = [a for a in feed(Engine(), events) if a.status == "firing"]
    assert [a.action.name for a in fired] == ["reset_gpu"]
    assert fired[0].recovery.estimate_s == 0.0
    assert "job's end" in fired[0].recovery.basis


def test_control_other_resets_and_drains_keep_the_restart_estimate() -> None:
    from detector.recovery import estimate
    # An NVLink reset stops the job (reset when the job allows): restart + half an interval.
    assert estimate("reset_gpu", "hardware", 0.0, 1.0, 1800.0, 300.0).estimate_s == 1200.0
    assert estimate("drain_gpu", "hardware", 0.0, 1.0, 1800.0, 300.0,
                    at_jobs_end=False).estimate_s == 1200.0
    assert estimate("reset_gpu", "hardware", 0.0, 1.0, 1800.0, 300.0,
                    at_jobs_end=True).estimate_s == 0.0
