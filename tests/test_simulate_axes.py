"""Each axis of variation (replay/sim/axes.py) changes the simulated telemetry the way it says.

A tiny cluster (4 nodes x 4 GPUs, two leaves) and short logs keep this fast;
every test compares with what the axis promises, so an axis that silently
does nothing fails here.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from functools import cache
from itertools import pairwise

import pytest

from detector.topology import Topology
from replay.sim.axes import AXES, Axes, parse_axes, slurm_view
from replay.sim.simulate import JobLayout, plan_scenario, simulate

TOPO = Topology.from_text(
    "Topology=tiny\nNodeSet=n[0-3] Gpus=4 Nics=mlx5_[0-1]\n"
    "SwitchName=leaf[0-1] Nodes=n[0-3]\nSwitchName=spine0 Switches=leaf[0-1]")
JOB = JobLayout(tp=2, pp=2, dp=4)
FAULTS = ("sdc_checksum", "nvlink")
DEFAULT = Axes()


@cache
def run(axes: Axes = DEFAULT, job: JobLayout = JOB, faults: tuple[str, ...] = FAULTS,
        duration_s: float = 300.0) -> tuple[object, list[dict]]:
    sc = plan_scenario(TOPO, job=job, duration_s=duration_s, seed=4, faults=faults,
                       benign=["spike", "app_xid"], axes=axes)
    return sc, list(simulate(sc))


def values(records: list[dict], topic: str) -> list[dict]:
    """The topic's values in event-time order, transport duplicates dropped."""
    seen: set[tuple] = set()
    out = []
    for r in records:
        if r["topic"] != topic:
            continue
        v = r["value"]
        key = (v.get("ts"), v.get("node"), v.get("gpu"), v.get("nic"), v.get("rank"), v.get("xid"),
               v.get("fault_id"))
        if key not in seen:
            seen.add(key)
            out.append(v)
    return sorted(out, key=lambda v: v.get("ts", 0.0))


def per(vals: list[dict], *keys: str) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = defaultdict(list)
    for v in vals:
        out[tuple(v[k] for k in keys)].append(v)
    return out


def test_every_axis_value_is_covered_here():
    tested = {"interval": {"1", "10", "30"}, "numbers": {"int", "float"},
              "powercap": {"fleet"}, "clocks": {"varied"}, "speed": {"offsets"},
              "fields": {"no_compute", "no_rank_fields"},
              "workload": {"seqlen", "slow_stage", "loader_stall"},
              "topology": {"slurm", "none"},
              "scenario": {"slow_from_start", "overlap", "checkpoint", "reboot"}}
    assert {n: set(v[1:]) for n, v in AXES.items()} == tested


def test_parse_axes_rejects_unknown_names_and_values():
    assert parse_axes(["interval=30,numbers=int"]) == Axes(interval="30", numbers="int")
    with pytest.raises(ValueError, match="NAME one of"):
        parse_axes(["colour=red"])
    with pytest.raises(ValueError, match="fleet"):
        parse_axes(["powercap=half"])


@pytest.mark.parametrize("interval", ["1", "10", "30"])
def test_interval_samples_each_node_at_its_own_phase_with_jitter(interval):
    k = int(interval)
    _, recs = run(Axes(interval=interval))
    for topic in ("telemetry.thermal", "telemetry.nic"):
        vals = values(recs, topic)
        unit = "gpu" if topic == "telemetry.thermal" else "nic"
        series = per(vals, "node", unit)
        gaps = [b["ts"] - a["ts"] for s in series.values() for a, b in pairwise(s)]
        assert k - 0.6 < statistics.median(gaps) < k + 0.6
        assert len({round(g, 3) for g in gaps}) > 3  # jitter: not a fixed grid
        assert max(len(s) for s in series.values()) <= 300 / k + 2
        # one scrape a node: the GPUs (or ports) of a node share each timestamp
        by_node = per(vals, "node")
        assert all(len({v["ts"] for v in s}) == len(s) // len({v[unit] for v in s})
                   for s in by_node.values())
        # per-node phase: each node keeps its own offset within the interval (its samples
        # stray from it by the jitter only), and the nodes' offsets spread over the interval
        # (jitter alone, around one shared phase, does not)
        phase = {n: statistics.median(v["ts"] % k for v in s) for n, s in by_node.items()}
        assert all(abs(v["ts"] % k - phase[n]) < 0.55 for n, s in by_node.items() for v in s)
        assert max(phase.values()) - min(phase.values()) > 0.25 * k
    ecc = per([v for v in values(recs, "telemetry.ecc") if v["xid"] is None], "node", "gpu")
    ecc_gaps = [b["ts"] - a["ts"] for s in ecc.values() for a, b in pairwise(s)]
    assert abs(statistics.median(ecc_gaps) - max(5, k)) < 0.6


def test_the_default_interval_keeps_one_phase_per_gpu():
    _, recs = run()
    by_node = per(values(recs, "telemetry.thermal"), "node")
    s = by_node[("n0",)]
    assert len({v["ts"] for v in s}) == len(s)  # every GPU at its own phase


@pytest.mark.parametrize("numbers", ["int", "float"])
def test_numbers_are_all_integers_or_all_floats(numbers):
    _, recs = run(Axes(numbers=numbers))
    want = int if numbers == "int" else float
    th = values(recs, "telemetry.thermal")
    for field in ("gpu_temp_c", "sm_clock_mhz"):
        assert {type(v[field]) for v in th} == {want}
    _, default = run()
    assert {type(v["gpu_temp_c"]) for v in values(default, "telemetry.thermal")} == {int, float}


def test_a_power_capped_fleet_holds_many_gpus_at_the_cap_without_slowing_their_ranks():
    _, recs = run(Axes(powercap="fleet"))
    by_gpu = per(values(recs, "telemetry.thermal"), "node", "gpu")
    capped = {k for k, s in by_gpu.items()
              if sum(v["throttle"] & 0x4 for v in s) / 4 > 0.7 * len(s)}
    assert 0.2 * len(by_gpu) <= len(capped) <= 0.8 * len(by_gpu)
    for k in capped:
        s = [v for v in by_gpu[k] if v["throttle"] == 0x4]
        assert 690 <= statistics.median(v["power_w"] for v in s) <= 700
        assert 0.92 < statistics.median(v["sm_clock_mhz"] for v in s) / 1980 < 0.985
    _, default = run()
    assert sum(v["throttle"] & 0x4 for v in values(default, "telemetry.thermal")) < 4 * 50
    # the capped ranks are not slower than their peers
    steps = values(recs, "telemetry.step")
    med = {k: statistics.median(v["compute_ms"] for v in s)
           for k, s in per(steps, "node", "gpu").items()}
    stage = {(v["node"], v["gpu"]): (v["tp_rank"], v["pp_rank"]) for v in steps}
    for k in capped:
        peers = [m for j, m in med.items() if stage[j] == stage[k]]
        assert med[k] < 1.02 * statistics.median(peers)


def test_clock_baselines_differ_by_a_few_percent():
    def spread(axes: Axes) -> float:
        _, recs = run(axes)
        med = [statistics.median(v["sm_clock_mhz"] for v in s)
               for s in per(values(recs, "telemetry.thermal"), "node", "gpu").values()]
        return (max(med) - min(med)) / max(med)
    assert spread(Axes()) < 0.005 < 0.02 < spread(Axes(clocks="varied")) < 0.06


def _peer_spread(recs: list[dict]) -> float:
    steps = values(recs, "telemetry.step")
    med = {k[0]: statistics.median(v["compute_ms"] for v in s)
           for k, s in per(steps, "rank").items()}
    stage = {v["rank"]: (v["tp_rank"], v["pp_rank"]) for v in steps}
    worst = 0.0
    for r, m in med.items():
        peers = [med[j] for j in med if stage[j] == stage[r]]
        worst = max(worst, abs(m / statistics.median(peers) - 1))
    return worst


def test_speed_offsets_spread_peers_up_to_three_percent():
    assert _peer_spread(run()[1]) < 0.015
    assert 0.015 < _peer_spread(run(Axes(speed="offsets"))[1]) < 0.045


def test_step_fields_can_lack_compute_ms_or_the_rank_fields():
    _, recs = run(Axes(fields="no_compute"))
    steps = values(recs, "telemetry.step")
    assert all("compute_ms" not in v and "comm_ms" in v for v in steps)
    pure = JobLayout(tp=1, pp=1, dp=16)
    _, recs = run(Axes(fields="no_rank_fields"), job=pure)
    steps = values(recs, "telemetry.step")
    assert steps and all(not {"tp_rank", "pp_rank", "dp_rank"} & set(v) for v in steps)
    with pytest.raises(ValueError, match="tp = pp = 1"):
        run(Axes(fields="no_rank_fields"))


def test_sequence_length_imbalance_moves_between_replicas_every_step():
    _, recs = run(Axes(workload="seqlen"))
    by_step = per([v for v in values(recs, "telemetry.step") if v["pp_rank"] == 0
                   and v["tp_rank"] == 0], "step")
    slowest = []
    spreads = []
    for s in list(by_step.values())[:100]:
        c = [v["compute_ms"] for v in s]
        spreads.append(max(c) / min(c))
        slowest.append(max(s, key=lambda v: v["compute_ms"])["dp_rank"])
    assert statistics.median(spreads) > 1.2  # +-20 % between replicas
    assert len(set(slowest)) == 4  # and no replica stays the slow one
    assert _peer_spread(run()[1]) < _peer_spread(recs) < 0.1


def test_one_pipeline_stage_is_persistently_slower():
    def stage_ms(recs: list[dict]) -> dict[int, float]:
        return {k[0]: statistics.median(v["compute_ms"] for v in s)
                for k, s in per(values(recs, "telemetry.step"), "pp_rank").items()}
    base, slow = stage_ms(run()[1]), stage_ms(run(Axes(workload="slow_stage"))[1])
    ratio = sorted(slow[p] / base[p] for p in base)
    assert ratio[0] < 1.01 and 1.14 < ratio[-1] < 1.31
    with pytest.raises(ValueError, match="pp >= 2"):
        run(Axes(workload="slow_stage"), job=JobLayout(tp=2, pp=1, dp=8))


def test_a_loader_stall_holds_one_rank_for_one_step():
    _, recs = run(Axes(workload="loader_stall"))
    steps = values(recs, "telemetry.step")
    stalled = [v for v in steps if v["step_ms"] - v["compute_ms"] - v["comm_ms"] > 900]
    assert 2 <= len(stalled) <= 12
    assert len({v["step"] for v in stalled}) == len(stalled)  # one rank each time
    _, default = run()
    assert not [v for v in values(default, "telemetry.step")
                if v["step_ms"] - v["compute_ms"] - v["comm_ms"] > 900]


def test_topology_record_as_slurm_sees_it_or_none():
    _, recs = run(Axes(topology="slurm"))
    head = recs[0]
    assert head["topic"] == "topology" and head["value"]["format"] == "slurm"
    slurm = Topology.from_text(head["value"]["text"], fmt="slurm")
    assert slurm.nics_of("n2") == () and slurm.switch_of("n2", "mlx5_1") == "leaf1"
    assert slurm.nodes_under("leaf1") == TOPO.nodes_under("leaf1")
    _, recs = run(Axes(topology="none"))
    assert not [r for r in recs if r["topic"] == "topology"]
    assert run()[1][0]["value"]["format"] == "faultline"


def test_the_256_gpu_slurm_fixture_describes_the_project_topology():
    faultline = Topology.load("topologies/h100-256.topo")
    slurm = Topology.load("topologies/h100-256.topology.conf")
    derived = Topology.from_text(slurm_view(faultline))
    for s in ("leaf0", "leaf3"):
        assert slurm.nodes_under(s) == faultline.nodes_under(s) == derived.nodes_under(s)
    assert slurm.nics_of("node-009") == ()


def test_a_rank_slow_from_the_first_step():
    sc, recs = run(Axes(scenario="slow_from_start"))
    first = sc.faults[0]
    label = next(v for v in values(recs, "labels") if v["fault_id"].endswith("f00-silent_slow"))
    steps = values(recs, "telemetry.step")
    assert label["start_ts"] == steps[0]["ts"]  # the slow rank sets the pace from step one
    step0 = [v for v in steps if v["step"] == steps[0]["step"]]
    slow = next(v for v in step0 if (v["node"], v["gpu"]) == (first.target["node"],
                                                            first.target["gpu"]))
    peers = [v["compute_ms"] for v in step0 if (v["tp_rank"], v["pp_rank"]) ==
             (slow["tp_rank"], slow["pp_rank"]) and v is not slow]
    assert slow["compute_ms"] > 1.25 * statistics.median(peers)


def test_overlapping_faults_on_different_units():
    _, recs = run(Axes(scenario="overlap"))
    a, b = sorted(values(recs, "labels"), key=lambda v: v["start_ts"])
    assert a["start_ts"] < b["start_ts"] < a["end_ts"]
    assert a["scope"]["node"] != b["scope"]["node"]
    _, default = run()
    a, b = sorted(values(default, "labels"), key=lambda v: v["start_ts"])
    assert a["end_ts"] < b["start_ts"]


def test_every_fault_starts_during_a_checkpoint():
    sc, recs = run(Axes(scenario="checkpoint"))
    ckpts = [b for b in sc.benign if b.kind == "checkpoint"]
    for f in sc.faults:
        assert any(c.start_s < f.start_s < c.start_s + c.duration_s for c in ckpts)
    steps = values(recs, "telemetry.step")
    rank0 = [v for v in steps if v["rank"] == 0]
    start = sc.start_ts + sc.faults[0].start_s
    near = [v["step_ms"] for v in rank0 if start - 5 < v["ts"] < start + 25]
    assert max(near) > 1.15 * statistics.median(v["step_ms"] for v in rank0)


def test_a_node_reboots_the_job_stops_and_restarts_from_a_checkpoint():
    sc, recs = run(Axes(scenario="reboot"))
    boot = next(b for b in sc.benign if b.kind == "reboot")
    node, a = boot.target["node"], sc.start_ts + boot.start_s
    b = a + boot.duration_s
    th = values(recs, "telemetry.thermal")
    mine = [v["ts"] for v in th if v["node"] == node]
    assert not [t for t in mine if a <= t < b] and [t for t in mine if t >= b]
    # every GPU idles while the job is down
    idle = [v for v in th if a + 5 < v["ts"] < b and v["node"] != node]
    assert idle and all(v["throttle"] & 0x1 and v["sm_clock_mhz"] < 400 for v in idle)
    rank0 = [v for v in values(recs, "telemetry.step") if v["rank"] == 0]
    gap = max(y["ts"] - x["ts"] for x, y in pairwise(rank0))
    assert gap >= boot.duration_s + boot.target["restart_s"]
    assert any(y["step"] < x["step"] for x, y in pairwise(rank0))  # back to a checkpoint
    nic = [v for v in values(recs, "telemetry.nic") if v["node"] == node]
    before = max((v for v in nic if v["ts"] < a), key=lambda v: v["ts"])
    after = min((v for v in nic if v["ts"] >= b), key=lambda v: v["ts"])
    assert after["tx_bytes"] < before["tx_bytes"]  # counters start from zero after a boot
