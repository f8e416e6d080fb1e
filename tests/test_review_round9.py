"""Room review, round 9: cases the round's network changes (detector/network.py, room
detect, blind F1 and F2) now miss that main before them (1a85bfa) caught.

Each test is a strict xfail: it states what an operator needs, fails on main today, and
turns into an unexpected pass (a failure) the moment the detector is fixed -- then drop
the mark.  Nothing here was tuned on the blind or simulated corpora.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from detector.alerts import ISOLATION
from detector.correlate import Correlator
from detector.engine import Engine
from detector.events import NicSample
from detector.findings import Finding, decode_message, finding_of
from detector.network import NodeNics
from detector.testing import T0, feed, nic
from detector.thresholds import Thresholds
from detector.topology import Topology

CFG = Thresholds()


def node_ports(gbps: dict[str, list[float]], interval: float = 10.0) -> list[Finding]:
    """One node's ports through NodeNics: each port's Gb/s per sample (tx and rx halves),
    all ports sampled at the same times."""
    nics, out = NodeNics("n1"), []
    total = dict.fromkeys(gbps, 0)
    for i in range(max(len(r) for r in gbps.values())):
        for name, rates in gbps.items():
            total[name] += int(rates[i] * interval / 16 * 1e9)  # bytes each way
            nics.update(nic(T0 + i * interval, "n1", name, tx=total[name], rx=total[name]),
                        CFG, out)
    return out


def low_ports(found: list[Finding]) -> list[str]:
    return [f.scope.key for f in found if f.signal == "nic_throughput" and f.active]


def one_slow_port(port: str, at_pace: int, n: int) -> list[str]:
    """The ports found low on a node of 8 fabric ports at 75 Gb/s for ``n`` samples, where
    ``port`` runs at their pace for its first ``at_pace`` samples, then at 4 Gb/s."""
    rates = {f"mlx5_{k}": [75.0] * n for k in range(8)}
    rates[port] = [75.0] * at_pace + [4.0] * (n - at_pace)
    return low_ports(node_ports(rates))


# -- F1's peer history: a port must first be seen at its node's pace to be judged low --------

# (Was a strict xfail: a port was judged low only after ~7 busy samples at its node's pace
# (nic_peer_share 0.5, fading 0.1); a link that trained degraded (HDR at 1x width, a bad optic
# after a reboot) or was already slow when the detector started -- every worker starts afresh
# on this round's new state schema -- never ran at pace and was never judged. 1a85bfa:
# nic_throughput after 5 samples.  Now judged by what else is known: on this one node, the
# same name family and negotiated rate as its ports at pace; room nicport, round 10.)
def test_a_port_slow_from_its_first_sample_is_still_a_bad_port() -> None:
    # A DGX-like node: 8 compute-fabric ports, mlx5_5 at 4 Gb/s beside the others' 75 from
    # the first sample on.  Nothing about mlx5_5 says "frontend": it is one of eight rails.
    assert one_slow_port("mlx5_5", 0, 30) == ["nic:n1/mlx5_5:1"]


# (Was a strict xfail: a fabric port that ran at its node's pace for 5 busy samples (50 s at
# 10 s, 150 s at 30 s) and then degraded had peer share 1 - 0.9**5 = 0.41 < 0.5: never
# judged, and its share only decayed while it stayed slow. 1a85bfa: nic_throughput.  Now
# judged as above; room nicport, round 10.)
def test_a_port_that_degrades_in_the_job_s_first_minute_is_caught() -> None:
    # (the first sample has no rate yet: 6 samples at pace are 5 busy ones)
    assert one_slow_port("mlx5_2", 6, 40) == ["nic:n1/mlx5_2:1"]


def test_a_port_that_ran_at_pace_for_a_while_is_still_caught() -> None:
    # The other side (passes today): seven busy samples at pace make it a peer.
    assert one_slow_port("mlx5_2", 9, 40) == ["nic:n1/mlx5_2:1"]


# -- F2's floor: errors_seen needs >= 5 errors lately, even on a port that never had one -----

SLURM = Topology.from_text("""
SwitchName=leaf0 Nodes=node-[000-007]
SwitchName=leaf1 Nodes=node-[008-015]
SwitchName=spine0 Switches=leaf[0-1]
""")


def fleet(nodes: int, nics: int, t_end: float, *, period: Callable[[int], float],
          first: Callable[[int], float], down: Callable[[str, str, int, float], bool],
          errors: Callable[[str, str, int], int] = lambda node, name, i: 0,
          traffic: bool = True) -> list:
    """``nics`` NICs on each of ``nodes`` nodes, node n sampled every ``period(n)`` s from
    ``first(n)`` until ``t_end``; a port is down where ``down(node, nic, i, ts)`` (its
    link_downed counts 1 from its first down), counts ``errors(node, nic, i)`` more symbol and
    as many receive errors at sample i, and carries 40 Gb/s with ``traffic``."""
    out = []
    for n in range(nodes):
        node, step = f"node-{n:03d}", period(n)
        for k in range(nics):
            name, err, downs = f"mlx5_{k}", 0, 0
            for i in range(int((t_end - first(n)) / step)):
                ts = first(n) + i * step
                is_down = down(node, name, i, ts)
                downs |= is_down
                err += errors(node, name, i)
                tx = int((ts - T0) * 2_500_000_000) if traffic else 0
                out.append(nic(ts + 0.01 * k, node, name, tx=tx, rx=tx, errors=err,
                               link_downed=int(downs), up=not is_down))
    return sorted(out, key=lambda e: e.ts)


def leaf_event(interval: float, samples: int, at: int, *, down: set[tuple[str, str]],
               trickle: set[tuple[str, str]], per_sample: int) -> list:
    """2 NICs on each of 16 nodes every ``interval`` s at their own phase, clean (no error
    ever) until sample ``at``; from there the ports in ``down`` are down for 4 samples and
    those in ``trickle`` count ``per_sample`` more symbol and as many receive errors on
    two samples."""
    return fleet(16, 2, T0 + samples * interval - 1e-6, period=lambda n: interval,
                 first=lambda n: T0 + 0.7 * n,
                 down=lambda node, name, i, ts: (node, name) in down and at <= i < at + 4,
                 errors=lambda node, name, i: per_sample * int(
                     (node, name) in trickle and at <= i < at + 2))


def isolations(alerts: list) -> list[tuple[str, str]]:
    return [(a.cause, a.scope.key) for a in alerts
            if a.status == "firing" and a.topic == ISOLATION]


# leaf0 loses a line card: three of its eight nodes lose a link, the five others see a
# couple of symbol/receive errors on both their ports as the leaf re-routes -- on an
# InfiniBand fabric whose ports had counted none all job long.
_DOWN = {("node-000", "mlx5_0"), ("node-001", "mlx5_1"), ("node-002", "mlx5_0")}
_TRICKLE = {(f"node-{n:03d}", f"mlx5_{k}") for n in range(3, 8) for k in range(2)}


# (Was a strict xfail against room detect's first nic_errors_seen of 5: now 2, with the
# port's own routine rate still the test -- a port that counted none all job long is
# abnormal at 2 errors, a RoCE port trickling out-of-sequence errors is not.)
def test_a_leaf_failing_with_error_trickles_on_most_nodes_is_the_switch() -> None:
    alerts = feed(Engine(topology=SLURM),
                  leaf_event(10.0, 60, 30, down=_DOWN, trickle=_TRICKLE, per_sample=1))
    assert isolations(alerts) == [("switch", "switch:leaf0")]


def test_the_same_leaf_failure_with_error_bursts_is_the_switch() -> None:
    # The other side (passes today): the same event with 6 errors a port and sample.
    alerts = feed(Engine(topology=SLURM),
                  leaf_event(10.0, 60, 30, down=_DOWN, trickle=_TRICKLE, per_sample=3))
    assert isolations(alerts) == [("switch", "switch:leaf0")]


# -- F4's hold: bounded by the port's next sample ------------------------------------------

def test_a_node_back_broken_from_a_gap_has_every_port_down_one_sample_later() -> None:
    # The other side of the reboot hold (passes today): a node silent 300 s comes back with
    # all 8 links down and they stay down.  Each port is called down on its second sample
    # back (10 s later), its onset the first; the hold is one sample, not open-ended.
    nics, out = NodeNics("n1"), []
    ports = [f"mlx5_{k}" for k in range(8)]
    for i in range(10):
        for name in ports:
            nics.update(nic(T0 + 10 * i, "n1", name, tx=i * 10**9, rx=i * 10**9), CFG, out)
    back = T0 + 90 + 300
    for i in range(3):
        for name in ports:
            nics.update(nic(back + 10 * i, "n1", name, up=False), CFG, out)
    downs = [f for f in out if f.signal == "link_down" and f.active]
    assert sorted(f.scope.key for f in downs) == sorted(f"nic:n1/{p}:1" for p in ports)
    assert {(f.ts, f.onset_ts) for f in downs} == {(back + 10, back)}


# -- bounds' member window (277f9e0): a fast port decided alone before the leaf shows -------

def leaf_down_mixed_cadence(t_fail: float) -> list:
    """leaf0's 8 nodes, 2 NICs each, every link down from ``t_fail`` for 120 s: node-000..006
    sampled every 30 s at phases 4 s apart (node-000 sees it first, at ``t_fail``),
    node-007 every 5 s (another collector; it sees it 0.3 s later)."""
    return fleet(8, 2, t_fail + 150.0, traffic=False,
                 period=lambda n: 5.0 if n == 7 else 30.0,
                 first=lambda n: t_fail - 300.0 + (0.3 if n == 7 else 4.0 * n),
                 down=lambda node, name, i, ts: t_fail <= ts < t_fail + 120.0)


# (Was a strict xfail: a unit sampled at least twice as often as the first finding of its
# part waited only its own window (Correlator._member_due) and was decided alone unless the
# part was failing by then -- counted over every node heard from, though the 30 s nodes not
# sampled since the leaf failed could not show it yet: node-007 was paged alone at 7.5 s
# (node:node-007, drain_node) beside switch:leaf0 at 38.5 s.  Now the member counts only the
# nodes known sampled since the part's first onset: Correlator._may_be_failing.)
def test_a_leaf_down_with_one_faster_collector_behind_it_is_one_switch_alert() -> None:
    alerts = feed(Engine(topology=SLURM), leaf_down_mixed_cadence(T0 + 600.0))
    assert isolations(alerts) == [("switch", "switch:leaf0")]


# -- 46f1fd8's node event: every port of a node down is one node alert -- under one leaf only --

RAIL = Topology.load(Path(__file__).resolve().parent.parent / "topologies" / "h100-128.topo")


def node_ports_down(t_fail: float, node_down: str = "node-003", interval: float = 10.0) -> list:
    """16 nodes x 8 NICs every ``interval`` s; from ``t_fail`` every port of ``node_down``
    is down (its NICs' driver or firmware, PCIe, NIC power), the rest of the fabric fine."""
    return fleet(16, 8, t_fail + 200.0, period=lambda n: interval,
                 first=lambda n: T0 + 0.7 * n,
                 down=lambda node, name, i, ts: node == node_down and ts >= t_fail)


# (Was a strict xfail: Correlator._whole_node_down looks for a node's every port among the
# link downs waiting for ONE shared part; in a rail-optimised fabric (the project's own
# topologies/h100-*.topo, DGX SuperPOD) each of a node's 8 ports faces its own rail leaf, so
# the node event stayed 8 NIC isolations.  Now a link down decided alone looks at its node's
# other link downs across parts: Correlator._node_down_across_parts.)
def test_every_port_of_a_node_down_is_one_node_alert_in_a_rail_fabric() -> None:
    alerts = feed(Engine(topology=RAIL), node_ports_down(T0 + 300.0))
    assert sorted(set(isolations(alerts))) == [
        ("nic", "node:node-003")]


def test_every_port_of_a_node_down_is_one_node_alert_under_one_leaf() -> None:
    # The other side (passes since 46f1fd8): a Slurm topology.conf, every NIC under its leaf.
    alerts = feed(Engine(topology=SLURM), node_ports_down(T0 + 300.0))
    assert sorted(set(isolations(alerts))) == [
        ("nic", "node:node-003")]


# -- untrusted input: 46f1fd8 parses a findings-topic string as hex -----------------------

# (Was a strict xfail: 46f1fd8's correlate._node_wide_reason parses throttle_reasons as hex,
# and decode_message took any str there, so "0xzz" made the correlator raise on every later
# slow rank of that GPU.  decode_message now refuses a throttle_reasons not in hex() form.)
def test_a_non_hex_throttle_reason_on_the_findings_topic_is_refused_and_blinds_no_gpu() -> None:
    t = T0 + 100.0
    gpu = {"level": "gpu", "node": "n1", "gpu": 0}

    def message(ts: float, signal: str, cause: str, verdict: bool, evidence: dict,
                rank: int | None = None) -> Finding:
        raw = json.dumps({"type": "finding", "source": "s0", "id": [0, int(ts)], "tag": ts,
                          "finding": {"ts": ts, "onset_ts": ts, "signal": signal,
                                      "kind": "slow_node", "cause": cause, "scope": gpu,
                                      "active": True, "verdict": verdict, "severity": 0.6,
                                      "evidence": evidence, "job": "job-1", "rank": rank}})
        msg = decode_message(raw.encode(), wall_s=ts)  # accepted: it is well-typed
        return finding_of(msg.finding)  # type: ignore[union-attr]

    with pytest.raises(ValueError, match="throttle_reasons"):
        message(t, "throttle_seen", "power", False, {"throttle_reasons": "0xzz", "clock_drop": 0.3})
    c, out = Correlator(CFG), []
    c.on_finding(message(t, "throttle_seen", "power", False,
                         {"throttle_reasons": "0x88", "clock_drop": 0.3}), out)
    c.on_finding(message(t + 1, "slow_rank", "unknown", True,
                         {"compute_ratio_to_peers": 1.3, "run_steps": 10}, rank=3), out)


# -- f69bbd2: a port's routine rate learnt afresh whenever its traffic starts ---------------

def roce_sample(ts: float, gbytes: float, out_of_sequence: int) -> NicSample:
    b = int(gbytes * 1e9)
    return NicSample(ts=ts, node="n1", nic="mlx5_0", port=1, link_state="up", tx_bytes=b,
                     rx_bytes=b, symbol_errors=0, link_downed=0, rcv_errors=0, xmit_discards=0,
                     xmit_wait=0, out_of_sequence=out_of_sequence, packet_seq_err=0,
                     np_cnp_sent=0, rp_cnp_handled=0)


# (Was a strict xfail: f69bbd2 relearnt a port's routine error rate from zero at every
# traffic start, so each resume after a checkpoint pause made the trickle's first sample
# 'abnormal' -- errors_seen 10 times in 100 min.  Now only a start after an idle longer than
# the rate's half-life relearns.)
def test_a_roce_trickle_through_checkpoint_pauses_is_no_switch_evidence() -> None:
    # blind F2's trickle (~1 out-of-sequence error per 20 s, now and then 2 in a sample) on a
    # port carrying 96 Gb/s, with a 60 s checkpoint pause (traffic ~0) every 10 minutes.
    pattern = [1, 0, 0, 1, 0, 0, 0, 1, 0, 2, 0, 0, 1, 0, 0, 0, 2, 0, 1, 0]
    nics, out, total, gb, k = NodeNics("n1"), [], 0, 0.0, 0
    for i in range(600):
        if i % 60 < 6:
            gb += 0.1
        else:
            total += pattern[k % len(pattern)]
            k += 1
            gb += 60.0
        nics.update(roce_sample(T0 + 10 * i, gb, total), CFG, out)
    assert [f.ts - T0 for f in out if f.signal == "errors_seen" and f.active] == []
