"""Scoring fired alerts against ground-truth labels (DESIGN.md, "Scoring alerts against labels").

Pure: labels and alerts in, a :class:`Scorecard` out; the only output is text formatting.

The rule, as implemented:

- Only ``firing`` messages count; ``resolved`` (or any other status) is ignored.
- A firing message *catches* a fault when ``start_ts <= detected_ts <= end_ts + grace_s`` and
  its scope is the fault's own scope, or the ``node`` holding a ``gpu``/``nic`` fault. A finer
  scope does not catch a coarser fault either (a ``gpu`` alert is not "the fault's target at
  the fault's level" for a ``node`` fault).
- An attributable fault is caught from either topic; an unattributable one only from
  ``alerts.escalation``.
- A *problem* is one (topic, ``dedup_key``). It is a false positive when none of its firing
  messages catches any fault; re-sending is the same problem, a new ``dedup_key`` a new one.
- Latency and attribution come from the first catching message by ``detected_ts`` (ties:
  input order).

Per-kind precision needs every problem in exactly one kind row, so the rows' ``problems`` add
up to the total. The rule puts a false positive under the kind the alert claims; it does not
say where a catching problem goes, but recall is by the label's kind and a catching alert's own
claim may differ from the truth (an escalation claims ``unattributed`` for a ``slow_node``
fault), so a catching problem counts under the kind of the first fault it catches (its
earliest catching message; ties broken by the fault's ``start_ts``, then ``fault_id``). Read
that way, a kind's precision is "of the problems about this kind, how many were real".

>>> from detector.alerts import FiredAlert, Label, Scope
>>> fault = Label("f1", "hardware", "gpu_memory", Scope.of_gpu("node-007", 3),
...               1000.0, 1010.0, True)
>>> def fired(key, node, ts):
...     return FiredAlert.from_record("alerts.isolation", {
...         "dedup_key": key, "status": "firing", "kind": "hardware", "cause": "gpu_memory",
...         "scope": {"level": "node", "node": node}, "onset_ts": ts, "detected_ts": ts})
>>> card = score([fault], [fired("a", "node-007", 1000.5), fired("b", "node-001", 1003.0)])
>>> card.total.recall, card.total.precision, card.faults[0].latency_s
(1.0, 0.5, 0.5)
>>> [fp.dedup_key for fp in card.false_positives]
['b']
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from detector.alerts import ALERT_TOPICS, ESCALATION, KINDS, FiredAlert, Label, Scope

TOTAL_KIND = "all"


@dataclass(frozen=True, slots=True)
class FaultResult:
    """How one labelled fault fared: caught or not, by which message, how fast, right cause."""

    label: Label
    caught: bool
    latency_s: float | None
    attributed: bool | None
    by: FiredAlert | None

    def to_dict(self) -> dict[str, Any]:
        return {"fault_id": self.label.fault_id, "kind": self.label.kind,
                "cause": self.label.cause, "scope": self.label.scope.key,
                "attributable": self.label.attributable, "caught": self.caught,
                "latency_s": self.latency_s, "attributed": self.attributed,
                "by": _alert_dict(self.by) if self.by is not None else None}


@dataclass(frozen=True, slots=True)
class KindRow:
    """One line of the scorecard: counts and rates for one fault kind (or ``all``)."""

    kind: str
    faults: int
    caught: int
    missed: int
    problems: int
    false_positives: int
    precision: float | None
    recall: float | None
    latency_median_s: float | None
    latency_p95_s: float | None
    latency_max_s: float | None
    attribution: float | None  # share of caught faults whose first catch named the right cause

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True, slots=True)
class Scorecard:
    """The result of :func:`score`: per-kind rows, a total, and the faults and FPs behind them."""

    rows: tuple[KindRow, ...]
    total: KindRow
    faults: tuple[FaultResult, ...]
    false_positives: tuple[FiredAlert, ...]  # first firing message of each FP problem

    def format(self) -> str:
        """A fixed-width table for a terminal, then the false positives and the missed faults."""
        head = ("kind", "faults", "caught", "missed", "problems", "FP", "precision", "recall",
                "lat_med_s", "lat_p95_s", "lat_max_s", "attrib")
        widths = (13, 6, 6, 6, 8, 4, 9, 6, 9, 9, 9, 6)
        lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w)
                           for i, (h, w) in enumerate(zip(head, widths, strict=True)))]
        for row in (*self.rows, self.total):
            cells = (row.kind, str(row.faults), str(row.caught), str(row.missed),
                     str(row.problems), str(row.false_positives), _num(row.precision),
                     _num(row.recall), _num(row.latency_median_s), _num(row.latency_p95_s),
                     _num(row.latency_max_s), _num(row.attribution))
            lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths, strict=True))))
        lines.append(f"false positives: {len(self.false_positives)}")
        for a in self.false_positives:
            lines.append(f"  {_short_topic(a.topic):<10} {a.kind:<12} {a.cause:<12} "
                         f"{a.scope.key:<28} {_iso(a.detected_ts)}  {a.dedup_key}")
        missed = [f for f in self.faults if not f.caught]
        lines.append(f"missed faults: {len(missed)}")
        for f in missed:
            lab = f.label
            lines.append(f"  {lab.fault_id:<16} {lab.kind:<12} {lab.scope.key:<28} "
                         f"{_iso(lab.start_ts)} .. {_iso(lab.end_ts)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (plain dicts, lists, str, numbers, None) for benchmarks and tests."""
        return {"rows": [r.to_dict() for r in self.rows], "total": self.total.to_dict(),
                "faults": [f.to_dict() for f in self.faults],
                "false_positives": [_alert_dict(a) for a in self.false_positives]}


def score(labels: Iterable[Label], alerts: Iterable[FiredAlert], *,
          grace_s: float = 60.0) -> Scorecard:
    """Score alert messages (both topics, any status, any order) against fault labels."""
    if not (math.isfinite(grace_s) and grace_s >= 0):
        raise ValueError(f"score: grace_s must be a finite number >= 0, got {grace_s!r}")
    labs = list(labels)
    index = _LabelIndex(labs, grace_s)

    firing: list[FiredAlert] = []
    for a in alerts:
        if a.topic not in ALERT_TOPICS:
            raise ValueError(f"score: alert {a.dedup_key!r} is on topic {a.topic!r}, "
                             f"not one of {list(ALERT_TOPICS)}")
        if a.status == "firing":
            firing.append(a)
    # Stable sort: the first catch is the earliest detected_ts, ties in input order.
    firing.sort(key=lambda a: a.detected_ts)

    first_catch: list[FiredAlert | None] = [None] * len(labs)
    problem_first: dict[tuple[str, str], FiredAlert] = {}
    problem_kind: dict[tuple[str, str], str] = {}  # set once the problem catches something
    for a in firing:
        pkey = (a.topic, a.dedup_key)
        problem_first.setdefault(pkey, a)
        caught = index.caught_by(a)
        for i in caught:
            if first_catch[i] is None:
                first_catch[i] = a
        if caught and pkey not in problem_kind:
            first = min(caught, key=lambda i: (labs[i].start_ts, labs[i].fault_id))
            problem_kind[pkey] = labs[first].kind

    results = tuple(_result(lab, by) for lab, by in zip(labs, first_catch, strict=True))
    fps = tuple(a for pkey, a in problem_first.items() if pkey not in problem_kind)

    problems_by_kind: dict[str, int] = {}
    fps_by_kind: dict[str, int] = {}
    for pkey, a in problem_first.items():
        kind = problem_kind.get(pkey, a.kind)
        problems_by_kind[kind] = problems_by_kind.get(kind, 0) + 1
        if pkey not in problem_kind:
            fps_by_kind[kind] = fps_by_kind.get(kind, 0) + 1

    kinds = {lab.kind for lab in labs} | set(problems_by_kind)
    order = [k for k in KINDS if k in kinds] + sorted(kinds - set(KINDS))
    rows = tuple(_row(k, [r for r in results if r.label.kind == k],
                      problems_by_kind.get(k, 0), fps_by_kind.get(k, 0)) for k in order)
    total = _row(TOTAL_KIND, results, len(problem_first), len(fps))
    return Scorecard(rows, total, results,
                     tuple(sorted(fps, key=lambda a: a.detected_ts)))


class _LabelIndex:
    """Labels bucketed by the scope an alert must name to catch them, sorted by start_ts.

    An alert looks up one bucket, bisects to the labels already started, and checks only
    those; a bucket holds the faults of one unit, so this stays near O(alerts).
    """

    def __init__(self, labels: Sequence[Label], grace_s: float) -> None:
        buckets: dict[str, list[tuple[float, int]]] = {}
        for i, lab in enumerate(labels):
            for key in _catching_keys(lab.scope):
                buckets.setdefault(key, []).append((lab.start_ts, i))
        self._labels = labels
        self._grace_s = grace_s
        self._buckets: dict[str, tuple[list[float], list[int]]] = {}
        for key, entries in buckets.items():
            entries.sort()
            self._buckets[key] = ([s for s, _ in entries], [i for _, i in entries])

    def caught_by(self, a: FiredAlert) -> list[int]:
        """Indexes of the labels this firing message catches."""
        bucket = self._buckets.get(_lookup_key(a.scope))
        if bucket is None:
            return []
        starts, idxs = bucket
        t = a.detected_ts
        out = []
        for i in idxs[:bisect_right(starts, t)]:
            lab = self._labels[i]
            if t > lab.end_ts + self._grace_s:
                continue
            if a.topic != ESCALATION and not lab.attributable:
                continue  # a recommendation with no evidence of cause catches nothing
            if a.scope.level == "nic" and not _ports_agree(lab.scope, a.scope):
                continue
            out.append(i)
        return out


def _catching_keys(s: Scope) -> tuple[str, ...]:
    """Bucket keys under which a label with scope ``s`` is found: its own, and its node's."""
    if s.level == "gpu":
        return (s.key, f"node:{s.node}")
    if s.level == "nic":
        return (_nic_key(s), f"node:{s.node}")
    return (s.key,)


def _lookup_key(s: Scope) -> str:
    return _nic_key(s) if s.level == "nic" else s.key


def _nic_key(s: Scope) -> str:
    # `port` is optional in the scope contract, so NIC scopes are bucketed without it and the
    # ports compared afterwards (see _ports_agree).
    return f"nic:{s.node}/{s.nic}"


def _ports_agree(label: Scope, alert: Scope) -> bool:
    # A side that leaves `port` out names the whole NIC: a label without a port is caught by an
    # alert on any port of that NIC, and an alert without a port catches a fault on any port.
    # Two stated ports must be equal.
    return label.port is None or alert.port is None or label.port == alert.port


def _result(lab: Label, by: FiredAlert | None) -> FaultResult:
    if by is None:
        return FaultResult(lab, False, None, None, None)
    return FaultResult(lab, True, by.detected_ts - lab.start_ts, by.cause == lab.cause, by)


def _row(kind: str, results: Sequence[FaultResult], problems: int, fps: int) -> KindRow:
    caught = [r for r in results if r.caught]
    lat = sorted(r.latency_s for r in caught if r.latency_s is not None)
    return KindRow(
        kind=kind, faults=len(results), caught=len(caught), missed=len(results) - len(caught),
        problems=problems, false_positives=fps,
        precision=_ratio(problems - fps, problems), recall=_ratio(len(caught), len(results)),
        latency_median_s=_quantile(lat, 0.5), latency_p95_s=_quantile(lat, 0.95),
        latency_max_s=lat[-1] if lat else None,
        attribution=_ratio(sum(1 for r in caught if r.attributed), len(caught)))


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _quantile(xs: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default), so BENCHMARKS agree."""
    if not xs:
        return None
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _alert_dict(a: FiredAlert) -> dict[str, Any]:
    return {"topic": a.topic, "dedup_key": a.dedup_key, "kind": a.kind, "cause": a.cause,
            "scope": a.scope.key, "detected_ts": a.detected_ts}


def _short_topic(topic: str) -> str:
    return topic.rpartition(".")[2]


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _iso(ts: float) -> str:
    """Event time as UTC ISO 8601 with milliseconds; the raw number if it is out of range."""
    try:
        iso = datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return repr(ts)
    return iso.replace("+00:00", "Z")
