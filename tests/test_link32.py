"""link32 (round 32): a port that goes down and retrains lower is paged at the poll that shows it
(blind22 W1, issue 10).

A ``link_downed`` increment is a discrete event: the port went down and trained again between
two samples.  Trained back at its old rate it may be routine (a healthy link's rare bounce, a
leaf's firmware upgrade bouncing every port it serves): evidence (``flap_seen``), a page only
when it repeats (``link_flap``: two within about 5 min, ByteRobust's "network alerts fire
twice").  Trained back *lower* than it ran and than its node's other ports of its family still
run (400 -> 100 Gb/s: a width 4x -> 1x, lanes lost) it is a degraded link, a fault by itself --
errors or not -- and DESIGN pages a link down within 1 s of event time.  blind22 W1: such a
port was paged 38.5 s after that poll (its switch's window, on its symbol errors alone; the
retrain named nowhere), and with its errors zeroed not within 120 s.

Whose link: a node's sibling port sampled in the same poll (or after it), up at the port's
old rate with no bounce of its own, says its HCA and the node did not reset (a node's ports
all retraining lower together is the node's, tests/test_fabric_round12.py); a switch failing
brings its ports back at the rate they had, not at a quarter of it.  The window still decides
when the part is failing by its other nodes' word (and a switch decided failing later
supersedes the port, as a link down decided beside a sibling: test_link_down_beside.py).
"""

from __future__ import annotations

import random

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.events import NicSample
from detector.findings import Finding
from detector.network import NodeNics
from detector.port_names import PortNames
from detector.testing import T0, feed
from detector.thresholds import Thresholds
from tests.test_nic_window import SLURM

CFG = Thresholds()
POLL = 30.0
PORTS = [f"mlx5_{k}" for k in range(8)]


def fabric(polls: int, *, retrain: dict | None = None, bounce: dict | None = None,
           nodes: int = 16, ports: list[str] = PORTS, gap: dict | None = None,
           seed: int = 7) -> list[NicSample]:
    """``nodes`` HGX nodes x ``ports`` at 400 Gb/s, each busy at ~300 Gb/s, polled every 30 s
    at the node's own phase, its ports 0-40 ms apart in a shuffled order (one collector's
    scrape).  ``retrain[(node, nic)] = (poll, rate, errors)``: the port bounced (link_downed +1)
    before that poll and is up at ``rate`` from it on, ``errors`` symbol errors counted on it.
    ``bounce[(node, nic)]``: polls before which the port bounced and came back at its rate.
    ``gap[node] = poll``: the node silent for 10 min before that poll (a reboot: counters from
    zero)."""
    retrain, bounce, gap = retrain or {}, bounce or {}, gap or {}
    rng = random.Random(seed)
    out = []
    for n in range(nodes):
        node = f"hgx{n + 1:03d}"
        state = {p: [0, 0, 0] for p in ports}  # bytes, link_downed, symbol errors
        for i in range(polls):
            base = T0 + 1.9 * n + i * POLL + (600.0 if node in gap and i >= gap[node] else 0.0)
            if gap.get(node) == i:
                state = {p: [0, 0, 0] for p in ports}
            order = list(ports)
            rng.shuffle(order)
            for j, p in enumerate(order):
                st = state[p]
                rate = 400.0
                r = retrain.get((node, p))
                if r is not None and i >= r[0]:
                    rate = r[1]
                    if i == r[0]:
                        st[1] += 1
                        st[2] += r[2]
                if i in bounce.get((node, p), ()):
                    st[1] += 1
                st[0] += int(min(rate, 300.0) * POLL / 8 * 1e9)
                half = st[0] // 2
                out.append(NicSample(base + 0.005 * j, node, p, 1, "up", rate, half, half, st[2],
                                     st[1], 0, 0, 0, None, None, None, None))
    return sorted(out, key=lambda s: s.ts)


def findings(records: list[NicSample]) -> list[Finding]:
    names = PortNames()
    nics: dict[str, NodeNics] = {}
    out: list[Finding] = []
    for s in records:
        nics.setdefault(s.node, NodeNics(s.node, names)).update(s, CFG, out)
    return out


def rates(out: list[Finding]) -> list[Finding]:
    return [f for f in out if f.signal == "link_rate" and f.active]


def poll_ts(records: list[NicSample], node: str, nic: str, poll: int) -> float:
    return [s.ts for s in records if (s.node, s.nic) == (node, nic)][poll]


def pages(alerts: list) -> list:
    return [a for a in alerts if a.status == "firing" and a.topic == ISOLATION]


W1 = {("hgx007", "mlx5_2"): (12, 100.0, 0)}  # the probe: W1 with its errors zeroed


def test_a_port_retrained_at_a_quarter_rate_is_told_at_the_poll_that_shows_it() -> None:
    recs = fabric(20, retrain=W1)
    found = rates(findings(recs))
    at = poll_ts(recs, "hgx007", "mlx5_2", 12)
    assert [f.scope.key for f in found] == ["nic:hgx007/mlx5_2:1"]
    f = found[0]
    # (at its own sample, or its next sibling's of that scrape: ms later)
    assert at <= f.ts <= at + 0.05
    assert f.verdict and f.evidence["rate_gbps"] == 100.0
    assert f.evidence["rate_before_gbps"] == 400.0
    assert "400 -> 100 Gb/s" in f.evidence["judged_because"]


def test_the_retrain_is_paged_within_a_second_of_its_poll_errors_or_not() -> None:
    # On a Slurm topology.conf (no NICs named: the switch window's fallback), with the W1
    # errors (226 symbol errors on that poll) and without them (the probe).
    for errors in (0, 226):
        recs = fabric(20, retrain={("hgx007", "mlx5_2"): (12, 100.0, errors)})
        alerts = feed(Engine(topology=SLURM), recs)
        got = pages(alerts)
        assert [a.scope.key for a in got] == ["nic:hgx007/mlx5_2:1"], errors
        at = poll_ts(recs, "hgx007", "mlx5_2", 12)
        assert got[0].detected_ts - at <= 1.0, errors
        signals = [s["signal"] for s in got[0].evidence["signals"]]
        assert signals[0] == "link_rate", (errors, signals)
        assert got[0].evidence["signals"][0]["rate_before_gbps"] == 400.0


def test_a_retrain_at_half_rate_beside_siblings_at_full_is_paged_at_once_too() -> None:
    recs = fabric(20, retrain={("hgx003", "mlx5_5"): (9, 200.0, 0)})
    got = pages(feed(Engine(topology=SLURM), recs))
    assert [a.scope.key for a in got] == ["nic:hgx003/mlx5_5:1"]
    assert got[0].detected_ts - poll_ts(recs, "hgx003", "mlx5_5", 9) <= 1.0


def test_control_one_bounce_at_full_rate_is_evidence_not_a_page() -> None:
    # A healthy link's rare bounce (blind22's "occasional" shape, a leaf firmware's): told as
    # flap_seen, paged by nobody.
    recs = fabric(20, bounce={("hgx007", "mlx5_2"): [12]})
    out = findings(recs)
    assert [f.signal for f in out if f.scope.key == "nic:hgx007/mlx5_2:1" and f.active] == [
        "flap_seen"]
    assert pages(feed(Engine(topology=SLURM), recs)) == []


def test_control_bounces_that_repeat_within_minutes_are_a_flapping_link() -> None:
    # (nic_flaps: 2 within a 300 s half-life -- a third bounce within about 5 min, or two
    # on one poll; every flapping fault of blind2-22 bounced 2-8 times, none once but with
    # errors that page it by themselves.)
    recs = fabric(20, bounce={("hgx007", "mlx5_2"): [8, 10, 12]})
    assert [a.scope.key for a in pages(feed(Engine(topology=SLURM), recs))] == [
        "nic:hgx007/mlx5_2:1"]


def test_control_every_port_of_a_node_retrained_lower_together_is_not_a_port_at_once() -> None:
    # The node's HCAs reset (firmware, driver): every port bounced and came back at 200 in
    # one scrape -- no sibling at the old rate without a bounce: the node's rule, not 8 NICs.
    retrain = {("hgx004", p): (10, 200.0, 0) for p in PORTS}
    out = findings(fabric(20, retrain=retrain))
    assert [f for f in rates(out) if f.scope.level == "nic"] == []
    assert [f.scope.key for f in rates(out)] == ["node:hgx004"]


def test_control_a_leaf_bouncing_every_port_at_full_rate_pages_no_nic() -> None:
    # leaf1's firmware upgrade bounces every port of hgx001-008 in one poll, each back at 400.
    bounce = {(f"hgx{n:03d}", p): [10] for n in range(1, 9) for p in PORTS}
    recs = fabric(20, bounce=bounce)
    assert rates(findings(recs)) == []
    assert [a.scope.level for a in pages(feed(Engine(topology=SLURM), recs))
            if a.scope.level == "nic"] == []


def test_control_a_rate_after_a_reboot_is_link_training_not_a_retrain() -> None:
    # The node back from 10 min of silence (counters from zero): a port at 100 on its first
    # sample back is training, judged by the rate rules' minute, not at once.
    recs = fabric(20, retrain={("hgx007", "mlx5_2"): (12, 100.0, 0)}, gap={"hgx007": 12})
    found = rates(findings(recs))
    at = poll_ts(recs, "hgx007", "mlx5_2", 12)
    assert all(f.ts - at >= CFG.nic_rate_hold_s for f in found)


def test_control_a_port_with_no_sibling_is_left_to_the_rate_rules() -> None:
    # One fabric port a node: nothing on the node says its HCA did not reset.
    recs = fabric(20, retrain={("hgx007", "mlx5_0"): (12, 100.0, 0)}, ports=["mlx5_0"])
    at = poll_ts(recs, "hgx007", "mlx5_0", 12)
    assert all(f.ts - at >= CFG.nic_rate_hold_s for f in rates(findings(recs)))


def _topology(rails: bool):
    from detector.topology import Topology
    head = "Topology=t Version=1\nNodeSet=hgx[001-016] Gpus=8 Nics=mlx5_[0-7]\n"
    if rails:
        return Topology.from_text(head + "".join(
            f"SwitchName=rail{k}-leaf[0-1] Nodes=hgx[001-016] Nics=mlx5_{k}\n"
            for k in range(8)) + "SwitchName=spine0 Switches=rail[0-7]-leaf[0-1]\n")
    return Topology.from_text(head + "SwitchName=leaf1 Nodes=hgx[001-008]\n"
                              "SwitchName=leaf2 Nodes=hgx[009-016]\n"
                              "SwitchName=spine Switches=leaf[1-2]\n")


def test_a_stated_leaf_of_every_nic_decides_at_once_as_slurm_s_does() -> None:
    recs = fabric(20, retrain=W1)
    got = pages(feed(Engine(topology=_topology(rails=False)), recs))
    assert [a.scope.key for a in got] == ["nic:hgx007/mlx5_2:1"]
    assert got[0].detected_ts - poll_ts(recs, "hgx007", "mlx5_2", 12) <= 1.0
    assert got[0].evidence["decided_beside"]["retrained"] == "400.0 -> 100.0 Gb/s"


def test_control_on_a_stated_rail_fabric_the_sibling_faces_another_leaf_and_the_window_decides(
        ) -> None:
    # The file says mlx5_2 faces rail2-leaf0, its siblings other rails: their word is not
    # the rail leaf's (blind8 H4: a rail leaf's bundle reseated retrains its ports lower one
    # node after another, labelled the switch).  Still paged, after the window.
    recs = fabric(20, retrain=W1)
    got = pages(feed(Engine(topology=_topology(rails=True)), recs))
    assert [a.scope.key for a in got] == ["nic:hgx007/mlx5_2:1"]
    assert got[0].detected_ts - poll_ts(recs, "hgx007", "mlx5_2", 12) > 30.0


def test_control_a_rail_leaf_retraining_its_ports_lower_is_one_switch_alert() -> None:
    # rail2-leaf0's bundle reseated: mlx5_2 of hgx001-008 bounce within 40 s, back at 200.
    retrain = {(f"hgx{n:03d}", "mlx5_2"): (10, 200.0, 100) for n in range(1, 9)}
    got = pages(feed(Engine(topology=_topology(rails=True)), fabric(20, retrain=retrain)))
    assert [a.scope.key for a in got] == ["switch:rail2-leaf0"]
