"""Room fabric, round 12: trouble spreading over a leaf; rates that change mid-job (issue 10).

A leaf's ASIC or optics degrading reaches its nodes one after another over minutes, the
first still erring when the fourth begins: older trouble still rising (errors, flaps -- not
a state held) counts beside trouble begun in the switch's window once more nodes than the
fewest that make a part show it at once; one cable flapping for minutes and one new fault
beside it stay two NICs' own (tests/test_review_round11.py, R1 and its control).


A NIC renegotiating 400 -> 200 Gb/s without going down (an InfiniBand link's width
degradation, an Ethernet port's autonegotiation after a transceiver fault) shows only in its
``rate_gbps``: no flap, no error, traffic at its node's pace.  ``NodeNics.quiet`` took such
a sample without looking at the rate, so the port kept its old rate for ever and was never
judged (BENCHMARKS "fabric, round 11", open).  And a port that *fell* from the rate its node's
other ports run at is degraded whatever share of the other nodes does the same: no node
model changes its NIC mid-job (the share rule, tests/test_lead_round11.py, is for rates held
from a port's first sample).
"""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.testing import T0, ecc, feed
from detector.topology import Topology
from tests.test_detectors import NVL
from tests.test_fabric_round11 import T_NEW, T_OLD, firing, small_leaves
from tests.test_rate_round10 import RAILS, rate_findings, run
from tests.test_review_round9 import SLURM
from tests.test_review_round11 import rates, spreading_errors

NODES = [f"n{k}" for k in range(8)]


def downshift(low: set[str], *, port: str = "mlx5_2", at: int = 6, back: int | None = None):
    """Every port of every node at 400 Gb/s carrying 300 Gb/s; ``port`` on the ``low`` nodes
    renegotiates to 200 at sample ``at`` (back to 400 at ``back``), the link up throughout."""
    def spec(node: str, name: str, i: int) -> tuple[float | None, float, bool]:
        dropped = (node in low and name == port and i >= at
                   and (back is None or i < back))
        return (200.0 if dropped else 400.0), 300.0, True
    return spec


def test_a_live_downshift_without_a_flap_is_a_degraded_link() -> None:
    found = rate_findings(run(NODES, RAILS, 16, downshift({"n3"})))
    assert [(f.scope.key, f.active) for f in found] == [("nic:n3/mlx5_2:1", True)]
    assert found[0].evidence["rate_gbps"] == 200.0
    # nic_rate_samples (3) 30 s samples from the shift, spanning nic_rate_hold_s (60 s).
    assert found[0].onset_ts - found[0].ts == -60.0


def test_three_of_eight_nodes_downshifting_live_are_three_degraded_links() -> None:
    # More than one in MIXED (4) of the name's other nodes now report it at 200 -- but each
    # ran at 400 with its siblings for three minutes first: three links degraded.
    low = {"n1", "n4", "n6"}
    found = rate_findings(run(NODES, RAILS, 16, downshift(low)))
    assert sorted(f.scope.key for f in found if f.active) == [
        f"nic:{n}/mlx5_2:1" for n in sorted(low)]
    assert {f.evidence["judged_because"] for f in found} == {
        "it ran at 400 Gb/s earlier in the job and retrained lower"}


@pytest.mark.parametrize("many", [False, True], ids=["process", "process_many"])
def test_a_live_downshift_is_paged_by_the_engine_one_by_one_and_in_batches(many: bool) -> None:
    # The same through the engine: Engine.process, and process_many's batch path of samples
    # (detector.quiet), which takes a healthy-looking sample through NodeNics.quiet alone.
    records = rates(8, {"node-004"}, t_end=T0 + 900.0, from_s=300.0, flap=False)
    engine = Engine()
    alerts = [*engine.process_many(records), *engine.finish()] if many else feed(engine, records)
    assert sorted(firing(alerts)) == ["nic:node-004/mlx5_3:1"]


def test_a_live_downshift_that_recovers_clears() -> None:
    found = rate_findings(run(NODES, RAILS, 16, downshift({"n3"}, back=11)))
    assert [(f.scope.key, f.active) for f in found] == [("nic:n3/mlx5_2:1", True),
                                                        ("nic:n3/mlx5_2:1", False)]


def test_a_downshift_shorter_than_a_minute_is_not_paged() -> None:
    # Two 30 s samples at 200 (a retraining that recovers): not held for nic_rate_hold_s.
    assert rate_findings(run(NODES, RAILS, 16, downshift({"n3"}, back=8))) == []


def test_a_node_whose_ports_all_downshift_together_is_not_a_degraded_link() -> None:
    # Every port of n3 renegotiates to 200 (its HCAs' firmware, or its switch's ports
    # reconfigured): no port of it is below its siblings -- the node's rate, not one link's:
    # no link_rate per port, one finding of the node (room fabric14: review round 12's F4,
    # which found it paged nobody).
    def spec(node: str, name: str, i: int) -> tuple[float | None, float, bool]:
        return (200.0 if node == "n3" and i >= 6 else 400.0), 300.0, True
    found = rate_findings(run(NODES, RAILS, 16, spec))
    assert [(f.scope.key, f.active) for f in found] == [("node:n3", True)]
    assert found[0].evidence["ports_retrained"] == "4 of the node's 4 ports of its name family"


def test_most_of_a_node_s_ports_downshifting_is_not_judged_by_their_history() -> None:
    # Three of n3's four rails renegotiate to 200 on every node: its own history is no
    # exception's -- the name's share (most nodes at 200 too) decides: nothing.
    def spec(node: str, name: str, i: int) -> tuple[float | None, float, bool]:
        return (200.0 if name != "mlx5_0" and i >= 6 else 400.0), 300.0, True
    assert rate_findings(run(NODES, RAILS, 16, spec)) == []


# -- a leaf's errors spreading over minutes ---------------------------------------------------


def test_a_leaf_whose_errors_spread_slower_than_its_window_is_still_named() -> None:
    # The errors reach leaf0's 8 nodes 90 s apart -- beyond the 76 s a window looks back, so
    # no two nodes' trouble ever begins in one window: named when the fourth begins, its three
    # predecessors still erring.
    first = firing(feed(Engine(topology=SLURM), spreading_errors(T0 + 600.0, 90.0)))
    assert "switch:leaf0" in first
    assert 270.0 < first["switch:leaf0"] - (T0 + 600.0) <= 270.0 + 2.1 + 10.0 + 13.5 + 0.1
    assert not any(k.startswith(("nic:node-004", "nic:node-005", "nic:node-006",
                                 "nic:node-007")) for k in first)


LEAF8 = Topology.from_text("SwitchName=leaf0 Nodes=node-[000-007]\n")


def test_two_cables_flapping_for_minutes_and_a_new_fault_are_three_nics() -> None:
    # Support, not a count of its own: on an 8-node leaf two cables (node-001, node-005) flap
    # for ten minutes and then node-002's mlx5_0 goes down -- three nodes of eight, not the
    # half that makes the leaf: three NIC alerts.
    flapping = {("node-001", "mlx5_1"), ("node-005", "mlx5_0")}

    def down(node: str, name: str, ts: float) -> bool:
        if (node, name) in flapping and ts >= T_OLD:
            return int((ts - T0) // 10) % 3 == 0
        return (node, name) == ("node-002", "mlx5_0") and ts >= T_NEW

    first = firing(feed(Engine(topology=LEAF8), small_leaves(T_NEW + 200.0, down=down)))
    assert sorted(first) == ["nic:node-001/mlx5_1:1", "nic:node-002/mlx5_0:1",
                             "nic:node-005/mlx5_0:1"]


def nvlink_spreading(spread_s: float, seconds: float = 500.0) -> list:
    """rack-0's 4 trays x 4 GPUs (tests/test_detectors.py's NVL), ECC every 5 s; from
    ``spread_s`` x n on, every GPU of tray n counts 200 more NVLink CRC errors a sample (and a
    third as many replays), on and on: an NVSwitch tray degrading, one node after another."""
    out, total = [], {}
    t = 0.0
    while t < seconds:
        for n in range(4):
            node = f"tray-0{n}"
            for g in range(4):
                if t >= 10.0 + spread_s * n:
                    total[node, g] = total.get((node, g), 0) + 200
                errs = total.get((node, g), 0)
                out.append(ecc(T0 + t + 0.3 * n + 0.01 * g, node, g,
                               nvlink=(errs, errs // 3, 0)))
        t += 5.0
    return out


def test_nvlink_errors_spreading_over_a_domain_slower_than_its_window_name_it() -> None:
    # 90 s apart: no two trays' errors begin in one window; when the third begins, two still
    # count -- three of the rack's four trays: domain:rack-0 (main: one isolation per GPU).
    alerts = feed(Engine(topology=NVL), nvlink_spreading(90.0))
    first = firing(alerts)
    assert "domain:rack-0" in first
    assert first["domain:rack-0"] - T0 < 10.0 + 2 * 90.0 + 30.0
    assert not any(k.startswith(("gpu:tray-02", "gpu:tray-03")) for k in first)


def test_nvlink_errors_on_one_tray_beside_another_s_old_ones_stay_the_gpus() -> None:
    # The control: two trays (90 s apart) -- one old, one new: each GPU its own alert.
    alerts = feed(Engine(topology=NVL), [
        e for e in nvlink_spreading(90.0) if e.node in ("tray-00", "tray-01")])
    assert not any(k.startswith("domain:") for k in firing(alerts))
