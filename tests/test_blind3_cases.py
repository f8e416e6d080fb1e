"""faultline errors found by blind3's generator (issue 10, round 11), one reproducer each.

Each case is cut from a blind3 log (`bench/blind3/cases/`, `python -m bench.blind3.cut`,
labels inside) and replayed through the command line as an operator would (`faultline
replay CASE --alerts-out FILE`, topology from the log). Each test states what an operator
needs; they are strict xfails until faultline does it (/work/helpers/blind3-findings.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.blind3 import measure
from bench.blind3 import score as sc

CASES = Path(__file__).resolve().parents[1] / "bench" / "blind3" / "cases"


def run(name: str, tmp_path: Path) -> tuple[list[dict], list[dict]]:
    """(firing alert records, labels) of one case."""
    log = CASES / f"{name}.jsonl.gz"
    out = tmp_path / f"{name}.alerts.jsonl"
    measure.replay(log, out)
    alerts = [a for a in sc.read_records(out) if a["value"].get("status") == "firing"]
    labels = [r["value"] for r in sc.read_records(log) if r["topic"] == "labels"]
    return alerts, labels


def test_every_case_replays(tmp_path):
    """The harness itself (not an xfail): each case replays; fault cases carry their labels."""
    want = {
        "frontend-port-name-shared-no-topology": 0,
        "frontend-port-name-shared-topology": 0,
        "rack-power-cap-uniform": 0,
        "rack-cooling-nodes": 3,
        "pcie-downtrained-gpu": 1,
        "intermittent-straggler-1s": 1,
        "intermittent-straggler-0.3s": 1,
    }
    assert sorted(p.name.removesuffix(".jsonl.gz") for p in CASES.glob("*.jsonl.gz")) == sorted(
        want
    )
    _alerts, labels = run("pcie-downtrained-gpu", tmp_path)
    assert len(labels) == want["pcie-downtrained-gpu"]


@pytest.mark.parametrize(
    "case", ["frontend-port-name-shared-no-topology", "frontend-port-name-shared-topology"]
)
def test_port_name_shared_across_node_models_is_no_degraded_link(case, tmp_path):
    # (Was a strict xfail: "B1: a frontend port sharing a compute port's name on other node
    # models is isolated as a degraded link" -- a name's rate on other nodes says "degraded"
    # only when at most one in four of them report it at its rate or below; the lead.)
    # A100 nodes: mlx5_0..3 HDR 200 + mlx5_4 a 25 GbE frontend, from the first sample; H100
    # nodes: mlx5_0..7 NDR 400.  Nothing changes in 150 s: nothing is wrong.
    alerts, _labels = run(case, tmp_path)
    assert [a["value"]["scope"] for a in alerts] == [], (
        "no check_link on a port that always ran at its rate"
    )


def test_uniform_rack_power_cap_pages_nobody(tmp_path):
    # (Was a strict xfail: "B2: a power cap applied alike to every GPU of a job isolates each
    # GPU for its clock loss" -- judged against the node's other busy GPUs under the same cap,
    # detector.thermal.NodeTemps.cap_shared.)  rack 0 capped 700 -> 500 W for 3 min: every
    # GPU of the job at 0x4, clocks -10..13 %, every rank slower alike (no rank slower than
    # its peers); the idle node unaffected.
    alerts, _labels = run("rack-power-cap-uniform", tmp_path)
    assert [a["value"]["scope"] for a in alerts] == []


def test_rack_cooling_is_one_thermal_alert_per_node(tmp_path):
    # inlet air +14..28 C on rack 2; 3-8 GPUs of each labelled node throttle (0x20) together.
    alerts, labels = run("rack-cooling-nodes", tmp_path)
    res = sc.score(labels, alerts)
    for lab, first, _src in res.faults:
        assert first is not None, f"{lab['fault_id']}: one alert for the node"
        assert first[1]["cause"] == "thermal", lab["fault_id"]
    nodes = {lab["scope"]["node"] for lab in labels}
    stray = [
        k
        for k, caught in res.caught_by.items()
        if not caught and res.problems[k][0]["scope"].get("node") in nodes
    ]
    assert stray == [], "no per-GPU isolations beside the node's"


def test_pcie_downtrained_gpu_is_reported(tmp_path):
    # (Was a strict xfail: "B4: a PCIe-downtrained GPU (replays climbing, its rank late to
    # every collective) is never reported".)  ~38 replays/min on every sample while busy:
    # DCGM's PCIe rate limit (8/min) held for minutes, gpu_health.GpuHealth._pcie_rate.
    alerts, labels = run("pcie-downtrained-gpu", tmp_path)
    res = sc.score(labels, alerts)
    assert res.faults[0][1] is not None, "an alert on the GPU (or its node) while it runs a job"


@pytest.mark.parametrize("case", ["intermittent-straggler-1s", "intermittent-straggler-0.3s"])
def test_intermittent_straggler_is_escalated(case, tmp_path):
    # (Was a strict xfail: "B5: a GPU slow on one step in five is never escalated".)  The
    # rank is its peers' clear outlier on a recurring share of steps:
    # steps.JobMonitor._check_recurring.
    alerts, labels = run(case, tmp_path)
    res = sc.score(labels, alerts)
    assert res.faults[0][1] is not None, "an escalation naming the GPU (nothing names a cause)"
