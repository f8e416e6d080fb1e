"""Scoring a whole corpus: per-log scorecards combined, and breakdowns of the faults behind them.

Event times of different logs overlap (every simulated log starts at the same
instant), so each log is scored on its own and the scorecards are combined:
fault results and false positives are concatenated, problem counts summed
per kind, and latencies pooled before the quantiles are taken.

>>> from detector.alerts import FiredAlert, Label, Scope
>>> lab = Label("f1", "hardware", "gpu_memory", Scope.of_gpu("n1", 0), 100.0, 110.0, True)
>>> def fired(key, t):
...     return FiredAlert.from_record("alerts.isolation", {
...         "dedup_key": key, "status": "firing", "kind": "hardware", "cause": "gpu_memory",
...         "scope": {"level": "gpu", "node": "n1", "gpu": 0}, "onset_ts": t,
...         "detected_ts": t})
>>> a, b = score([lab], [fired("x", 101.0)]), score([lab], [fired("y", 104.0)])
>>> c = combine([a, b])
>>> c.total.faults, c.total.caught, c.total.latency_median_s, c.total.precision
(2, 2, 2.5, 1.0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from detector.alerts import ISOLATION, KINDS
from replay.scoring import TOTAL_KIND, FaultResult, Scorecard, _quantile, _row, score

__all__ = ["breakdown", "combine", "score"]


def combine(cards: Sequence[Scorecard]) -> Scorecard:
    """One scorecard for several logs, each scored on its own."""
    faults = tuple(f for c in cards for f in c.faults)
    fps = tuple(a for c in cards for a in c.false_positives)
    problems: dict[str, int] = {}
    fp_count: dict[str, int] = {}
    for c in cards:
        for r in c.rows:
            problems[r.kind] = problems.get(r.kind, 0) + r.problems
            fp_count[r.kind] = fp_count.get(r.kind, 0) + r.false_positives
    kinds = {f.label.kind for f in faults} | set(problems)
    order = [k for k in KINDS if k in kinds] + sorted(kinds - set(KINDS))
    rows = tuple(_row(k, [f for f in faults if f.label.kind == k], problems.get(k, 0),
                      fp_count.get(k, 0)) for k in order)
    total = _row(TOTAL_KIND, faults, sum(c.total.problems for c in cards),
                 sum(c.total.false_positives for c in cards))
    return Scorecard(rows, total, faults, fps)


def false_isolations(card: Scorecard) -> int:
    """False-positive problems that recommended isolating something (not escalations)."""
    return sum(1 for a in card.false_positives if a.topic == ISOLATION)


def breakdown(results: Iterable[FaultResult], info: dict[str, dict[str, Any]],
              key: Callable[[dict[str, Any]], str | None]) -> list[dict[str, Any]]:
    """Recall, latency and attribution of the faults grouped by ``key(fault info)``.

    ``info`` maps a fault id to what the manifest says of it (kind, shape, magnitude ...);
    faults whose key is None are left out.
    """
    groups: dict[str, list[FaultResult]] = {}
    for r in results:
        k = key(info.get(r.label.fault_id, {}))
        if k is not None:
            groups.setdefault(k, []).append(r)
    out = []
    for k in sorted(groups):
        rs = groups[k]
        caught = [r for r in rs if r.caught]
        lat = sorted(r.latency_s for r in caught if r.latency_s is not None)
        out.append({"group": k, "faults": len(rs), "caught": len(caught),
                    "recall": len(caught) / len(rs),
                    "latency_median_s": _quantile(lat, 0.5),
                    "latency_p95_s": _quantile(lat, 0.95),
                    "latency_max_s": lat[-1] if lat else None,
                    "attribution": (sum(1 for r in caught if r.attributed) / len(caught)
                                    if caught else None)})
    return out


MAGNITUDE_BINS = ((0.0, 0.05, "03-05%"), (0.05, 0.10, "05-10%"), (0.10, 0.20, "10-20%"),
                  (0.20, 1.0, "20-30%"))
SLOWDOWN_KINDS = ("silent_slow", "thermal", "power")


def magnitude_bin(info: dict[str, Any]) -> str | None:
    """The magnitude bin of a slowdown fault (None for other kinds)."""
    if info.get("kind") not in SLOWDOWN_KINDS:
        return None
    m = float(info.get("magnitude", 0.0))
    for lo, hi, name in MAGNITUDE_BINS:
        if lo <= m < hi:
            return f"{info['kind']} {name}"
    return None
