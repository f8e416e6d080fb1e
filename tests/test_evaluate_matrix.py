"""``faultline evaluate`` on a variation matrix: cells scored separately, targets checked."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from detector.alerts import ESCALATION, ISOLATION, FiredAlert, Label, Scope
from detector.cli import main
from detector.topology import Topology
from replay.evaluation.corpus import build_pairs, read_manifest
from replay.evaluation.evaluate import evaluate_corpus
from replay.evaluation.matrix import (
    cell_row,
    format_matrix,
    matrix_pairs,
    matrix_recipes,
    steps_to_detect,
)
from replay.sim.axes import AXES

T0 = 1767225600.0
ROOT = Path(__file__).resolve().parent.parent


def _cells(*names: str) -> list:
    return [r for r in matrix_recipes("matrix-tiny") if r.name in names]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("matrix")
    pairs = [(r, 7) for r in _cells("baseline", "topology-none", "workload-loader_stall")]
    build_pairs(out, pairs, scale="matrix-tiny", workers=1)
    return out


def test_the_matrix_has_a_cell_for_every_axis_value():
    cells = matrix_recipes("matrix")
    named = {(r.axis, r.value) for r in cells}
    for axis, values in AXES.items():
        for v in values[1:]:
            if axis == "fields" and v == "no_rank_fields":
                v = "pure_dp"
            assert (axis, v) in named, (axis, v)
    assert {("peers", "dp2"), ("peers", "dp4"), ("gpus_per_node", "4"),
            ("nic_names", "bond"), ("nic_names", "ibp")} <= named
    # NIC names (issue 10: mlx5_N, ibpNsM, RoCE ethN / ensNfM, bonded ports) and GPUs per
    # node: each cell's topology really names its NICs that way
    shapes = {"-": r"mlx5_\d+", "ibp": r"ibp\d+s\d+", "eth": r"eth\d+", "ens": r"ens\d+f\d+",
              "bond": r"mlx5_bond_\d+"}
    topo_of = {r.value: r.topology for r in cells if r.axis in ("baseline", "nic_names")}
    assert set(topo_of) == set(shapes)
    for value, shape in shapes.items():
        topo = Topology.load(ROOT / topo_of[value])
        nics = topo.nics_of(topo.nodes()[0])
        assert nics and all(re.fullmatch(shape, n) for n in nics), (value, nics)
    per_node = {r.value: r.topology for r in cells if r.axis == "gpus_per_node"}
    for gpus, path in (("4", per_node["4"]), ("8", topo_of["-"])):
        topo = Topology.load(ROOT / path)
        assert {topo.gpus_of(n) for n in topo.nodes()} == {int(gpus)}
    base = cells[0]
    for r in cells[1:]:  # every cell differs from the baseline in something
        assert dataclasses.replace(r, name=base.name, axis=base.axis, value=base.value) != base
    pairs = matrix_pairs("matrix", [1, 2])
    assert len(pairs) == 2 * len(cells) and {s for _, s in pairs} == {1, 2}


def test_a_matrix_corpus_is_scored_per_cell(built: Path):
    man = read_manifest(built)
    by_name = {e["name"]: e for e in man["logs"]}
    assert by_name["topology-none"]["topology"] is None
    assert by_name["baseline"]["topology"] == "topologies/h100-256.topo"
    ids = [f["fault_id"] for e in man["logs"] for f in e["faults"]]
    assert len(set(ids)) == len(ids)  # same seed in every cell, yet no fault id repeats
    mags = {e["name"]: [f["magnitude"] for f in e["faults"]] for e in man["logs"]}
    assert mags["baseline"] != mags["topology-none"]  # each cell draws its own sizes
    slow = next(f for f in by_name["baseline"]["faults"] if f["kind"] == "silent_slow")
    assert len(slow["step_ends"]) == 60 and slow["step_ends"] == sorted(slow["step_ends"])
    ev = evaluate_corpus(built, workers=1, baselines=False)
    rows = ev.to_dict()["matrix"]["faultline"]
    assert [(r["axis"], r["value"]) for r in rows] == [
        ("baseline", "-"), ("workload", "loader_stall"), ("topology", "none")]
    for r in rows:
        assert r["logs"] == 1 and r["faults"] == 2 and r["gpu_days"] > 0
    text = ev.format()
    assert "topology=none" in text and "misses targets" in text
    bins = ev.to_dict()["slowdown_bins"]["faultline"]
    assert sum(b["caught"] + b["missed"] for b in bins) == 3  # one silent_slow a log


def _label(fid: str, kind: str, gpu: int, start: float, attributable: bool = True) -> Label:
    return Label(fid, kind, "unknown" if not attributable else "gpu_memory",
                 Scope.of_gpu("n0", gpu), start, start + 60.0, attributable)


def _alert(topic: str, key: str, kind: str, cause: str, gpu: int, ts: float) -> FiredAlert:
    return FiredAlert.from_record(topic, {
        "dedup_key": key, "status": "firing", "kind": kind, "cause": cause,
        "scope": {"level": "gpu", "node": "n0", "gpu": gpu}, "onset_ts": ts, "detected_ts": ts})


def test_cell_figures_against_the_targets():
    hw = _label("c-hw", "hardware", 1, T0 + 100)
    slow = _label("c-slow", "slow_node", 2, T0 + 200, attributable=False)
    first = _label("c-first", "slow_node", 3, T0, attributable=False)
    step_ends = [T0 + 200 + i for i in range(60)]
    info = {"c-hw": {"kind": "hbm_dbe"},
            "c-slow": {"kind": "silent_slow", "magnitude": 0.12, "step_ends": step_ends},
            "c-first": {"kind": "silent_slow", "magnitude": 0.5, "from_job_start": True,
                        "step_ends": [T0 + i for i in range(60)]}}
    alerts = [_alert(ISOLATION, "a", "hardware", "gpu_memory", 1, T0 + 101.5),  # 1.5 s: late
              _alert(ESCALATION, "b", "slow_node", "unknown", 2, T0 + 207.2),  # 8 steps
              _alert(ESCALATION, "c", "slow_node", "unknown", 3, T0 + 1.5),  # 2 steps
              _alert(ISOLATION, "d", "slow_node", "power", 5, T0 + 300)]  # a false isolation
    log = SimpleNamespace(labels=[hw, slow, first], alerts={"faultline": alerts},
                          gpu_days=2.0, error="")
    row = cell_row("workload", "seqlen", [log], info, "faultline")
    assert row["hardware_latency_max_s"] == pytest.approx(1.5)
    assert row["slow10_steps_median"] == 8 and row["gross_from_start_steps"] == [2]
    assert row["false_positives_isolation"] == 1
    assert row["false_isolations_per_1k_gpu_days"] == pytest.approx(500.0)
    assert row["misses_targets"] == ["precision slow_node", "hardware latency",
                                     "workload pages", "false isolations"]
    # the same log in a cell that is not a workload effect: no "workload pages"
    assert "workload pages" not in cell_row("interval", "10", [log], info,
                                            "faultline")["misses_targets"]
    assert "workload=seqlen" in format_matrix([row])[1]
    assert steps_to_detect({"step_ends": step_ends}, T0 + 400) is None  # later than kept


def test_a_reporting_corpus_is_evaluated_once(tmp_path: Path, capsys: pytest.CaptureFixture):
    r = dataclasses.replace(_cells("baseline")[0], duration_s=290.0,
                            faults=("sdc_checksum",))
    build_pairs(tmp_path, [(r, 3)], scale="matrix-tiny", workers=1, purpose="reporting")
    out = tmp_path / "ev.json"
    assert main(["evaluate", str(tmp_path), "--no-baselines", "--workers", "1",
                      "--json", str(out)]) == 0
    assert json.loads(out.read_text())["purpose"] == "reporting"
    assert main(["evaluate", str(tmp_path), "--no-baselines", "--workers", "1"]) != 0
    assert "evaluated already" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path), "--no-baselines", "--workers", "1",
                      "--again"]) == 0
