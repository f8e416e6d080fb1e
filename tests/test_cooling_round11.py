"""Room cooling (round 11, blind3 B3): a node's cooling fault is one node alert, not one per GPU.

A rack's inlet air rising makes several GPUs of each of its nodes throttle thermally (0x20,
some 0x40|0x8) within a minute of each other; the operator drains the node and calls
facilities.  One GPU throttling with cool siblings (a failed thermal interface) stays a GPU
alert.  An escalation after the throttling ended never says "no thermal throttling".
"""

from __future__ import annotations

from pathlib import Path

from bench.blind3 import measure
from bench.blind3 import score as sc
from detector.alerts import Alert, Scope
from detector.correlate import Correlator
from detector.events import ThermalSample
from detector.findings import Finding
from detector.thermal import GpuThermal, NodeTemps
from detector.thresholds import Thresholds

CFG = Thresholds()
CASES = Path(__file__).resolve().parents[1] / "bench" / "blind3" / "cases"


def _node(onsets: dict[int, int], *, interval_s: float = 10.0, warm: bool = True,
          polls: int = 30, end: int | None = None, bits: int = 0x20, gpus: int = 8
          ) -> list[tuple[int, Finding]]:
    """``gpus`` GPUs of one node polled every ``interval_s`` in GPU order; GPU g throttles
    (``bits``, clock 5 % down, 88 C) from poll ``onsets[g]`` until poll ``end``.  The others
    run at full clock, warm (83 C: the node heating as a whole) or cool (65 C).
    [(poll, finding)] of every throttle and throttle_seen finding."""
    temps, out, got = NodeTemps(), [], []
    mons = [GpuThermal("n1", g, CFG, temps) for g in range(gpus)]
    for i in range(polls):
        for g, m in enumerate(mons):
            hot = g in onsets and onsets[g] <= i < (end if end is not None else polls)
            warming = warm and i >= 10
            n = len(out)
            m.update(ThermalSample(
                ts=1000.0 + interval_s * i + 0.01 * g, node="n1", gpu=g,
                gpu_temp_c=88.0 if hot else 83.0 if warming else 65.0, power_w=600.0,
                sm_clock_mhz=1881.0 if hot else 1980.0, throttle=bits if hot else 0), CFG, out)
            got += [(i, f) for f in out[n:] if f.signal in ("throttle", "throttle_seen")]
    return got


def _verdicts(got: list[tuple[int, Finding]]) -> list[tuple[int, str]]:
    return [(i, f.scope.key) for i, f in got if f.signal == "throttle" and f.active and f.verdict]


def test_gpus_of_a_heating_node_throttling_together_are_one_node_verdict() -> None:
    # GPU 0 first; its third throttled sample is its siblings' first (the same poll, after
    # it in the poll's order): the node's fault, not GPU 0's.
    got = _node({0: 12, 1: 14, 2: 14, 3: 15, 5: 15})
    assert _verdicts(got) == [(15, "node:n1")]  # at GPU 0's next sample
    node = next(f for _, f in got if f.scope.key == "node:n1" and f.signal == "throttle")
    assert node.cause == "thermal" and node.onset_ts == 1000.0 + 120.0
    assert node.evidence["gpus"] == [0, 1, 2]  # throttling at the decision (3 and 5: next)
    assert "cooling" in node.evidence["recommended_because"]
    # Each GPU's own run is evidence of it, not a verdict.
    assert sorted(f.scope.key for _, f in got if f.signal == "throttle" and f.active
                  and not f.verdict) == [f"gpu:n1/{g}" for g in (0, 1, 2, 3, 5)]


def test_the_same_at_dcgm_exporters_30_s_interval() -> None:
    # GPU 4's third sample, its siblings a sample behind: 90 s after its first.
    got = _node({4: 12, 6: 13, 7: 13}, interval_s=30.0)
    assert _verdicts(got) == [(14, "node:n1")]


def test_the_node_verdict_needs_no_clock_baseline() -> None:
    # A GPU capped (0x4) on every sample has no clock baseline to measure a drop against:
    # 0x24 on two such GPUs together still says it (blind3 B3: gn010's GPUs at 0x24).
    got = _node({1: 12, 2: 12}, bits=0x24)
    assert _verdicts(got) == [(14, "node:n1")]


def test_one_gpu_hot_against_cool_siblings_stays_a_gpu_verdict_without_waiting() -> None:
    # A failed thermal interface (blind3 E2, blind2's bad-GPU-thermal): 88 C beside 65 C.
    got = _node({3: 12}, warm=False)
    assert _verdicts(got) == [(14, "gpu:n1/3")]


def test_one_gpu_throttling_on_a_warm_node_waits_one_sample_then_is_a_gpu_verdict() -> None:
    got = _node({3: 12})
    assert _verdicts(got) == [(15, "gpu:n1/3")]


def test_the_node_fault_clears_when_its_last_gpu_stops_throttling() -> None:
    got = _node({0: 12, 1: 12}, end=18, polls=30)
    node = [(i, f.active) for i, f in got if f.scope.key == "node:n1" and f.signal == "throttle"]
    assert node == [(14, True), (18 + CFG.throttle_clear_samples - 1, False)]
    seen = [(i, f.active, f.cause) for i, f in got
            if f.scope.key == "node:n1" and f.signal == "throttle_seen"]
    assert seen == [(12, True, "thermal"), (18, False, "power")]


def test_rack_cooling_case_names_the_gpus_and_the_other_nodes(tmp_path: Path) -> None:
    # The blind3 reproducer (3 nodes of rack 2, no racks in its Slurm topology): on main one
    # isolation per throttling GPU and none per node.
    log = CASES / "rack-cooling-nodes.jsonl.gz"
    out = tmp_path / "alerts.jsonl"
    measure.replay(log, out)
    alerts = [a["value"] for a in sc.read_records(out) if a["value"]["status"] == "firing"]
    nodes = [a for a in alerts if a["scope"]["level"] == "node"]
    assert sorted(a["scope"]["node"] for a in nodes) == ["gn010", "gn011", "gn012"]
    assert {(a["kind"], a["cause"], a["action"]["name"]) for a in nodes} == {
        ("slow_node", "thermal", "drain_node")}
    assert not [a for a in alerts if a["scope"].get("node") in ("gn010", "gn011", "gn012")
                and a["scope"]["level"] == "gpu"]
    last = max(nodes, key=lambda a: a["detected_ts"])
    assert sorted(last["evidence"]["other_nodes_throttling"]) == sorted(
        {"gn010", "gn011", "gn012"} - {last["scope"]["node"]})
    assert all(n in last["evidence"]["call_facilities"] for n in ("gn010", "gn011", "gn012"))
    first_signal = last["evidence"]["signals"][0]
    assert len(first_signal["gpus"]) >= 2


def _finding(ts: float, signal: str, scope: Scope, active: bool, *, cause: str = "thermal",
             onset: float | None = None, verdict: bool = False, **evidence) -> Finding:
    return Finding(ts, ts if onset is None else onset, signal, "slow_node", cause, scope,
                   active, verdict, 0.6 if active else 0.0, evidence, None, None, None)


def test_an_escalation_after_the_throttle_ended_does_not_rule_it_out() -> None:
    # A rank slow from 100 s on; its GPU throttled (0x20) from 90 s to 160 s, and the slow
    # rank is found at 220 s: "no thermal or power throttling on the GPU" was wrong.
    corr, out = Correlator(CFG), []  # type: ignore[var-annotated]
    gpu = Scope.of_gpu("n1", 2)
    corr.on_finding(_finding(90.0, "throttle_seen", gpu, True, throttle_reasons="0x20"), out)
    corr.on_finding(_finding(160.0, "throttle_seen", gpu, False), out)
    slow = Finding(220.0, 100.0, "slow_rank", "slow_node", "unknown", gpu, True, True, 0.8,
                   {"compute_ratio_to_peers": 1.08}, "job-1", None, None, rank=2)
    corr.on_finding(slow, out)
    corr.advance(400.0, out)
    esc: list[Alert] = [a for a in out if a.topic == "alerts.escalation"]
    assert len(esc) == 1
    ruled = esc[0].evidence["ruled_out"]
    assert not any("thermal or power throttling" in r for r in ruled), ruled
    assert any(r.startswith("not ruled out: thermal throttling on the GPU") and "0x20" in r
               for r in ruled), ruled
    # Long before the slowdown (past flap_window_s), it is ruled out as before.
    corr2, out2 = Correlator(CFG), []  # type: ignore[var-annotated]
    far = 100.0 + CFG.flap_window_s + 200.0
    corr2.on_finding(_finding(90.0, "throttle_seen", gpu, True, throttle_reasons="0x20"), out2)
    corr2.on_finding(_finding(160.0, "throttle_seen", gpu, False), out2)
    corr2.on_finding(slow._replace(ts=far + 120.0, onset_ts=far), out2)
    corr2.advance(far + 400.0, out2)
    ruled2 = [a for a in out2 if a.topic == "alerts.escalation"][0].evidence["ruled_out"]
    assert "no thermal or power throttling on the GPU" in ruled2


def test_a_slow_rank_found_after_its_nodes_throttling_ended_joins_the_nodes_isolation() -> None:
    # The node's GPUs throttled thermally 100-300 s (one node isolation); a rank of a 78 s-step
    # job found slow at 360 s, its run from 200 s: the cooling's, not a page 'unknown'.  A
    # rank whose run began after the throttling ended is paged as before.
    corr, out = Correlator(CFG), []  # type: ignore[var-annotated]
    node, gpu = Scope.of_node("n1"), Scope.of_gpu("n1", 2)
    corr.on_finding(_finding(100.0, "throttle_seen", node, True, throttle_reasons="0x20",
                             gpus=[1, 2]), out)
    corr.on_finding(_finding(120.0, "throttle", node, True, onset=100.0, verdict=True,
                             throttle_reasons="0x20", gpus=[1, 2]), out)
    corr.on_finding(_finding(290.0, "throttle_seen", node, False, cause="power"), out)
    corr.on_finding(_finding(330.0, "throttle", node, False, verdict=True), out)
    assert [(a.topic, a.scope.key, a.cause) for a in out] == [
        ("alerts.isolation", "node:n1", "thermal")]
    slow = Finding(360.0, 200.0, "slow_rank", "slow_node", "unknown", gpu, True, True, 0.8,
                   {"compute_ratio_to_peers": 1.04}, "job-1", None, None, rank=2)
    corr.on_finding(slow, out)
    corr.advance(400.0, out)
    assert [a.topic for a in out] == ["alerts.isolation"]
    p = corr.problems[out[0].dedup_key]
    assert slow.key in p.active and any(e["signal"] == "slow_rank" for e in p.evidence)
    later = slow._replace(ts=460.0, onset_ts=340.0, scope=Scope.of_gpu("n1", 3), rank=3)
    corr.on_finding(later, out)
    corr.advance(500.0, out)
    assert [(a.topic, a.scope.key) for a in out[1:]] == [("alerts.escalation", "gpu:n1/3")]
