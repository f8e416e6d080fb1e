"""Room blind's power-brake case (round 9, F3): a node's brake is one node fault.

A PSU power brake sets 0x80 + 0x8 on every GPU of the node in the same sample; the alert's
own action drains the node, so its scope is the node (DESIGN: a node fault as N GPU alerts
is a miss and N false positives).  The same reason on one GPU of a node stays that GPU's.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind.generate import generate, write_log
from detector.events import ThermalSample
from detector.findings import Finding
from detector.thermal import GpuThermal, NodeTemps
from detector.thresholds import Thresholds
from detector.topology import Topology
from replay.runner import replay_log
from tests.test_blind_network import firing, replay_case

CFG = Thresholds()


def test_a_power_brake_on_every_gpu_is_one_node_isolation() -> None:
    # hgx s0, thermal records of 4 nodes; label: power brake, scope node hgx-r03-3.  On main:
    # 4 isolations slow_node/power gpu:hgx-r03-3/0..3, each with action drain_node.
    res = replay_case("power-brake-node.jsonl.gz")
    assert firing(res) == [("isolation", "slow_node", "power", "node:hgx-r03-3")]
    alert = next(a for a in res.alerts if a.status == "firing")
    assert alert.action.name == "drain_node"
    assert [f.caught for f in res.scorecard().faults] == [True]


def _node(braking: set[int], gpus: int = 4, n: int = 20) -> list[Finding]:
    """``gpus`` GPUs of one node sampled every 10 s; from sample 8 on, ``braking`` of them
    report 0x88 with the clock 35 % down, the others run on at full clock."""
    temps, out = NodeTemps(), []
    mons = [GpuThermal("n1", g, CFG, temps) for g in range(gpus)]
    for i in range(n):
        ts = 1000.0 + 10 * i
        for g, m in enumerate(mons):
            brake = i >= 8 and g in braking
            m.update(ThermalSample(ts=ts + 0.01 * g, node="n1", gpu=g, gpu_temp_c=60.0,
                                   power_w=400.0, sm_clock_mhz=1280.0 if brake else 1980.0,
                                   throttle=0x88 if brake else 0), CFG, out)
    return [f for f in out if f.signal == "throttle" and f.active]


def test_every_gpu_braking_is_one_node_verdict_and_gpu_evidence() -> None:
    got = _node({0, 1, 2, 3})
    verdicts = [f for f in got if f.verdict]
    assert [f.scope.key for f in verdicts] == ["node:n1"]
    assert verdicts[0].evidence["gpus"] == [0, 1, 2, 3]
    assert sorted(f.scope.key for f in got if not f.verdict) == [
        f"gpu:n1/{g}" for g in range(4)]


def test_one_gpu_braking_stays_a_gpu_verdict() -> None:
    got = _node({2})
    assert [(f.scope.key, f.verdict) for f in got] == [("gpu:n1/2", True)]


def test_slow_ranks_on_a_braking_node_join_the_node_isolation(tmp_path: Path) -> None:
    # The whole blind log hgx4-128 seed 0 at a 30 s interval (generated, deterministic): its
    # job's ranks on hgx-r03-3 turn slow as the brake hits.  The first GPU's throttle_seen
    # arrives before its siblings' samples of the same poll, and GPU 0 (SW power cap on every
    # sample, so no clock baseline) never shows a clock drop of its own.  On main: 3 GPU
    # isolations from the slow ranks (throttle impact) and a slow_node/unknown escalation on
    # GPU 0 -- a miss and 4 false positives.
    recs, *_ = generate(128, 0, 30.0, 30.0)
    log = tmp_path / "hgx-s0-i30.jsonl.gz"
    write_log(log, recs)
    head = recs[0]["value"]
    res = replay_log(log, topology=Topology.from_text(head["text"], source="blind",
                                                      fmt=head["format"]))
    on_node = [a for a in firing(res) if "hgx-r03-3" in a[3]]
    assert on_node == [("isolation", "slow_node", "power", "node:hgx-r03-3")]
    brake = [f for f in res.scorecard().faults if f.label.fault_id.endswith("power_brake")]
    assert [f.caught for f in brake] == [True]
