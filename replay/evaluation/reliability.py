"""Reliability of alert confidence: what an alert claimed against how often it was right.

An alert's ``confidence`` is meant as the chance that the problem it reports is
real (detector/calibration.py maps the detectors' raw score to it with a table
fitted by ``bench/calibrate.py``).  This module turns a scored log into one row
per firing problem -- its family (topic, kind, cause), the raw score and the
confidence it carried, its deployment conditions, and whether the scoring rule
of DESIGN.md counted it real (it caught a labelled fault) -- and summarises
rows as predicted confidence against observed precision, per confidence bin and
per family, with the Brier score and the expected calibration error.

``faultline evaluate`` prints it for every corpus; ``bench/calibrate.py`` fits
the table from the same rows.

>>> rows = [{"family": ["isolation", "hardware", "xid"], "confidence": 0.9, "real": True,
...          "conditions": {}},
...         {"family": ["isolation", "hardware", "xid"], "confidence": 0.9, "real": False,
...          "conditions": {}}]
>>> s = summary(rows)
>>> s["problems"], s["predicted"], s["observed"], s["brier"]
(2, 0.9, 0.5, 0.41)
>>> s["families"][0]["family"], s["families"][0]["false"]
('isolation/hardware/xid', 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from detector.alerts import Alert

__all__ = ["BINS", "format_summary", "problem_rows", "scores", "summary"]

# Confidence bins: the calibrated confidences crowd the top, so the top bins are narrow.
BINS = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 1.0001)


def problem_rows(alerts: Iterable[Alert], false_positives: Iterable[Alert],
                 log: str = "") -> list[dict[str, Any]]:
    """One row per firing problem (its first firing message) of one scored log."""
    false = {(a.topic, a.dedup_key) for a in false_positives}
    first: dict[tuple[str, str], Alert] = {}
    for a in alerts:
        if a.status == "firing":
            first.setdefault((a.topic, a.dedup_key), a)
    rows = []
    for key, a in first.items():
        ev = a.evidence if isinstance(a.evidence, dict) else {}
        raw = ev.get("raw_confidence", a.confidence)
        rows.append({"log": log, "dedup_key": a.dedup_key,
                     "family": [a.topic.rsplit(".", 1)[-1], a.kind, a.cause],
                     "raw": float(raw), "confidence": float(a.confidence),
                     "conditions": dict(ev.get("conditions") or {}),
                     "real": key not in false})
    return rows


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def scores(rows: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """(Brier score, expected calibration error over BINS) of the rows' confidences."""
    n = len(rows)
    if not n:
        return float("nan"), float("nan")
    ece = 0.0
    for lo, hi in zip(BINS, BINS[1:], strict=False):
        rs = [r for r in rows if lo <= r["confidence"] < hi]
        if rs:
            ece += len(rs) / n * abs(_mean([r["confidence"] for r in rs])
                                     - _mean([float(r["real"]) for r in rs]))
    return sum((r["confidence"] - r["real"]) ** 2 for r in rows) / n, ece


def summary(rows: Sequence[dict[str, Any]],
            conditions: Sequence[str] = ()) -> dict[str, Any]:
    """Predicted against observed, over all rows, per confidence bin and per family.

    ``conditions`` (e.g. ``("topology", "interval")``) splits each family further by
    the deployment conditions the alerts named.
    """
    n = len(rows)
    if not n:
        return {"problems": 0, "bins": [], "families": []}
    bins = []
    for lo, hi in zip(BINS, BINS[1:], strict=False):
        rs = [r for r in rows if lo <= r["confidence"] < hi]
        if rs:
            bins.append({"low": lo, "high": min(hi, 1.0), "problems": len(rs),
                         "predicted": round(_mean([r["confidence"] for r in rs]), 4),
                         "observed": round(_mean([float(r["real"]) for r in rs]), 4)})
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in rows:
        c = r.get("conditions") or {}
        key = ("/".join(r["family"]), *(str(c.get(k, "?")) for k in conditions))
        groups.setdefault(key, []).append(r)
    families = []
    for key in sorted(groups):
        rs = groups[key]
        fam: dict[str, Any] = {"family": key[0]}
        fam.update(zip(conditions, key[1:], strict=True))
        fam.update({"problems": len(rs), "false": sum(1 for r in rs if not r["real"]),
                    "predicted": round(_mean([r["confidence"] for r in rs]), 4),
                    "observed": round(_mean([float(r["real"]) for r in rs]), 4)})
        families.append(fam)
    brier, ece = scores(rows)
    return {"problems": n, "predicted": round(_mean([r["confidence"] for r in rows]), 4),
            "observed": round(_mean([float(r["real"]) for r in rows]), 4),
            "brier": round(brier, 4), "ece": round(ece, 4), "bins": bins, "families": families}


def format_summary(s: dict[str, Any], conditions: Sequence[str] = ()) -> list[str]:
    """The summary as the lines of a report."""
    if not s["problems"]:
        return ["no firing problems"]
    out = [f"{'confidence bin':<16} {'problems':>8} {'predicted':>9} {'observed':>9}"]
    for b in s["bins"]:
        out.append(f"[{b['low']:.2f}, {b['high']:.2f}){'':<4} {b['problems']:>8} "
                   f"{b['predicted']:>9.3f} {b['observed']:>9.3f}")
    out.append(f"all {s['problems']} problems: predicted {s['predicted']:.3f}, observed "
               f"precision {s['observed']:.3f}; Brier {s['brier']:.4f}, expected calibration "
               f"error {s['ece']:.3f}")
    out.append("")
    out.append(f"{'family':<34} " + "".join(f"{c:<9}" for c in conditions)
               + f"{'problems':>8} {'false':>6} {'predicted':>9} {'observed':>9}")
    for f in s["families"]:
        out.append(f"{f['family']:<34} " + "".join(f"{f[c]:<9}" for c in conditions)
                   + f"{f['problems']:>8} {f['false']:>6} {f['predicted']:>9.3f} "
                   f"{f['observed']:>9.3f}")
    return out
