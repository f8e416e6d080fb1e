"""Confidence calibration: bench/calibrate.py's fit, the shipped table, and the engine using it."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

from detector.calibration import confidence
from detector.engine import Engine
from detector.testing import feed
from detector.topology import Topology
from tests.test_detectors import nic_stream

ROOT = Path(__file__).resolve().parent.parent


def _calibrate() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("calibrate", ROOT / "bench" / "calibrate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["calibrate"] = mod
    spec.loader.exec_module(mod)
    return mod


def row(family: tuple[str, str, str], raw: float, real: bool, topology: str = "full",
        interval: str = "1") -> dict:
    return {"log": "x", "family": list(family), "raw": raw, "confidence": raw, "real": real,
            "conditions": {"topology": topology, "interval": interval}}


def test_a_family_with_false_positives_gets_a_monotone_isotonic_curve() -> None:
    cal = _calibrate()
    slow = ("escalation", "slow_node", "unknown")
    hw = ("isolation", "hardware", "nvlink")
    # Weak slow-rank scores are often false, strong ones rarely; hardware never false.
    rows = ([row(slow, 0.55, i % 2 == 0) for i in range(10)]
            + [row(slow, 0.7, i % 5 != 0) for i in range(10)]
            + [row(slow, 0.9, True) for _ in range(10)]
            + [row(hw, 0.9, True) for _ in range(8)])
    curves = cal.fit(rows, min_false=3, min_caught=3)
    xs, ys, how = curves[(*slow, "")]
    assert how.startswith("isotonic") and list(ys) == sorted(ys) and ys[0] < 0.6 < ys[-1] < 1.0
    assert curves[(*hw, "")] == ((0.0,), (0.9,), "smoothed precision: 8 real, 0 false")
    assert len(curves) == 2  # one condition everywhere: nothing to split by
    # The rendered table is what the correlator evaluates: same values, interpolated.
    table = _table(cal.render(curves, "t"))
    assert confidence("alerts.escalation", *slow[1:], 0.55, {}, table) == ys[0]
    assert confidence("alerts.escalation", *slow[1:], 0.99, {}, table) == ys[-1]
    assert ys[0] <= confidence("alerts.escalation", *slow[1:], 0.6, {}, table) <= ys[-1]
    assert confidence("alerts.isolation", *hw[1:], 0.1, {}, table) == 0.9
    assert confidence("alerts.isolation", "sdc", "unknown", 0.42, {}, table) == 0.42  # unseen


def _table(text: str) -> dict:
    ns: dict = {}
    exec(compile(text, "calibration_table.py", "exec"), ns)
    return ns["CURVES"]


NIC = ("isolation", "network", "nic")


def test_a_family_is_split_by_the_condition_that_explains_its_false_positives() -> None:
    """No topology: a failed leaf looks like many bad cables; with one, NIC alerts are real."""
    cal = _calibrate()
    rows = ([row(NIC, 0.9, i < 3, "none", iv) for i in range(12) for iv in ("1", "30")]
            + [row(NIC, 0.9, True, "full", iv) for _ in range(20) for iv in ("1", "30")]
            + [row(NIC, 0.9, True, "nodes", "10") for _ in range(6)])
    curves = cal.fit(rows, min_false=3, min_caught=3)
    pooled = curves[(*NIC, "")][1][0]
    none = curves[(*NIC, "topology=none")][1][0]
    full = curves[(*NIC, "topology=full")][1][0]
    assert none == round(7 / 26, 3) and full == round(41 / 42, 3) and none < pooled < full
    assert not any(k[3].startswith("interval") for k in curves)  # the interval explains nothing
    table = _table(cal.render(curves, "t"))
    assert confidence("alerts.isolation", *NIC[1:], 0.9, {"topology": "none"}, table) == none
    # with a topology, NIC alerts are not dragged down by the no-topology doubt
    assert confidence("alerts.isolation", *NIC[1:], 0.9,
                      {"topology": "full", "interval": "1"}, table) == full
    # a value the corpus never showed falls back on the family as a whole
    assert confidence("alerts.isolation", *NIC[1:], 0.9, {"topology": "new"}, table) == pooled
    # a difference a corpus this size gives by chance splits nothing
    few = [row(NIC, 0.9, i != 0, "none") for i in range(4)] + [row(NIC, 0.9, True)] * 8
    assert list(cal.fit(few, 3, 3)) == [(*NIC, "")]


def test_the_engine_applies_the_shipped_table_and_says_under_which_conditions() -> None:
    """The shipped table exists, covers the families, and is what alerts carry (not raw)."""
    from detector.calibration_table import CURVES
    assert {k[:3] for k in CURVES} >= {NIC, ("isolation", "hardware", "gpu_memory"),
                                       ("escalation", "slow_node", "unknown")}
    bad = {("node-000", "mlx5_1"): "errors"}
    for topology, expect in ((None, "none"), (TOPO, "full")):
        alerts = feed(Engine(topology=topology), nic_stream(["node-000", "node-001"], 40, bad=bad))
        a = next(a for a in alerts if a.status == "firing")
        conds = a.evidence["conditions"]
        assert conds == {"topology": expect, "interval": "unknown"}  # no thermal telemetry
        raw = a.evidence["raw_confidence"]
        want = round(confidence(a.topic, a.kind, a.cause, raw, conds), 3)
        assert a.confidence == want != raw
        # with a topology a NIC alert is never less sure than the family as a whole
        if expect == "full":
            assert a.confidence >= round(confidence(a.topic, a.kind, a.cause, raw, {}), 3)


TOPO = Topology.from_text("Topology=t\nNodeSet=node-[000-003] Gpus=8 Nics=mlx5_[0-3]\n"
                          "SwitchName=leaf0 Nodes=node-[000-003]\n")
