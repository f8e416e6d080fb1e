"""Confidence calibration: bench/calibrate.py's fit, and the curves the correlator reads."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _calibrate() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("calibrate", ROOT / "bench" / "calibrate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["calibrate"] = mod
    spec.loader.exec_module(mod)
    return mod


def row(family: tuple[str, str, str], raw: float, real: bool) -> dict:
    return {"log": "x", "family": list(family), "raw": raw, "confidence": raw, "real": real}


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
    xs, ys, how = curves[slow]
    assert how.startswith("isotonic") and list(ys) == sorted(ys) and ys[0] < 0.6 < ys[-1] < 1.0
    assert curves[hw] == ((0.0,), (0.9,), "smoothed precision: 8 real, 0 false")
    # The rendered module is what the correlator evaluates: same values, interpolated.
    ns: dict = {}
    exec(compile(cal.render(curves, "t"), "calibration.py", "exec"), ns)
    conf = ns["confidence"]
    assert conf("alerts.escalation", *slow[1:], 0.55) == ys[0]
    assert conf("alerts.escalation", *slow[1:], 0.99) == ys[-1]
    assert ys[0] <= conf("alerts.escalation", *slow[1:], 0.6) <= ys[-1]
    assert conf("alerts.isolation", *hw[1:], 0.1) == 0.9
    assert conf("alerts.isolation", "sdc", "unknown", 0.42) == 0.42  # unseen: raw score
