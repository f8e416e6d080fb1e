"""An operator's incident notes (CSV: start, end, scope, kind, cause) as ``labels`` records.

``scope`` is written as faultline prints it (``gpu:node-7/3``, ``node:node-7``,
``nic:node-7/mlx5_3:1``, ``switch:leaf-2``, ``domain:rack-4``,
``replica:job-1/5``, ``job:job-1``); ``start``/``end`` are Unix seconds or
ISO 8601 times (UTC when no zone is given).  Optional columns: ``fault_id``
and ``attributable`` (default: true unless ``cause`` is ``unknown``).  A row
that does not parse is counted with its reason and left out.

>>> rows = ["start,end,scope,kind,cause",
...         "2026-01-01T00:00:10Z,2026-01-01T00:01:00Z,gpu:node-7/3,hardware,gpu_hardware",
...         "5,4,node:n1,slow_node,thermal"]
>>> recs, bad = labels_from_rows(rows)
>>> recs[0]["value"]["scope"], recs[0]["value"]["start_ts"]
({'level': 'gpu', 'node': 'node-7', 'gpu': 3}, 1767225610.0)
>>> dict(bad)
{'line 3: end is before start': 1}
"""

from __future__ import annotations

import csv
import math
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from detector.alerts import CAUSES, KINDS, Scope
from replay.importers import csv_rows
from replay.log import Record, read_records, write_records

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_time(text: str, now: float | None = None) -> float:
    """Unix seconds, an ISO 8601 time (naive = UTC), ``now`` or ``now-2h`` (s, m, h, d).

    >>> parse_time("now-90m", now=10_000.0), parse_time("1767225600")
    (4600.0, 1767225600.0)
    """
    text = text.strip()
    t = _parse_time(text, now)
    if not math.isfinite(t):  # "nan", "inf", now-1e999h: no time a label or range can use
        raise ValueError(f"time {text[:40]!r} is not a finite time")
    return t


def _parse_time(text: str, now: float | None) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    if text.startswith("now"):
        import time

        base = time.time() if now is None else now
        rest = text[3:].replace(" ", "")
        if not rest:
            return base
        if rest[0] == "-" and rest[-1] in _UNITS:
            return base - float(rest[1:-1]) * _UNITS[rest[-1]]
        raise ValueError(f"time {text[:40]!r}: use now, now-30m, now-2h or now-1d")
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"time {text[:40]!r}: not Unix seconds, ISO 8601 or now-N") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def parse_scope(text: str) -> Scope:
    """A scope from its printed key (``Scope.key``)."""
    level, _, rest = text.strip().partition(":")
    if not rest:
        raise ValueError(f"scope {text!r}: expected LEVEL:ID, e.g. gpu:node-7/3")
    if level == "gpu":
        node, _, gpu = rest.rpartition("/")
        return Scope.of_gpu(node, int(gpu))
    if level == "node":
        return Scope.of_node(rest)
    if level == "nic":
        node, _, nic = rest.partition("/")
        name, _, port = nic.partition(":")
        if not node or not name:
            raise ValueError(f"scope {text!r}: expected nic:NODE/NIC[:PORT]")
        return Scope.of_nic(node, name, int(port) if port else None)
    if level == "switch":
        return Scope.of_switch(rest)
    if level == "domain":
        return Scope.of_domain(rest)
    if level == "replica":
        job, _, dp = rest.rpartition("/")
        return Scope.of_replica(job, int(dp))
    if level == "job":
        return Scope.of_job(rest)
    raise ValueError(f"scope {text!r}: unknown level {level!r}")


def labels_from_rows(lines: Iterable[str]) -> tuple[list[dict[str, Any]], Counter[str]]:
    """``labels`` records from CSV lines (with a header row), and the rows left out by reason."""
    reader = csv.DictReader(lines)
    out: list[dict[str, Any]] = []
    bad: Counter[str] = Counter()
    try:
        header = reader.fieldnames or ()
    except csv.Error as exc:
        bad[f"header: {exc}"] += 1
        return out, bad
    missing = {"start", "end", "scope", "kind", "cause"} - set(header)
    if missing:
        bad[f"header: missing column(s) {', '.join(sorted(missing))}"] += 1
        return out, bad
    for n, row in csv_rows(reader, bad, 2):
        try:
            start, end = parse_time(row["start"]), parse_time(row["end"])
            if end < start:
                raise ValueError("end is before start")
            # the names an alert's scope may hold (printable, <= 256): replay checks them too
            scope = Scope.from_dict(parse_scope(row["scope"]).to_dict())
            kind, cause = row["kind"].strip(), row["cause"].strip()
            if kind not in KINDS:
                raise ValueError(f"kind must be one of {', '.join(KINDS)}")
            if cause not in CAUSES:
                raise ValueError(f"cause must be one of {', '.join(CAUSES)}")
            attr = (row.get("attributable") or "").strip().lower()
            attributable = attr in ("1", "true", "yes") if attr else cause != "unknown"
        except (ValueError, TypeError, AttributeError) as exc:
            bad[f"line {n}: {exc}"[:200]] += 1
            continue
        out.append({"topic": "labels", "value": {
            "fault_id": (row.get("fault_id") or "").strip() or f"notes-{n}", "kind": kind,
            "cause": cause, "scope": scope.to_dict(), "start_ts": start, "end_ts": end,
            "attributable": attributable}})
    return out, bad


def read_labels(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], Counter[str]]:
    # undecodable bytes become U+FFFD: that row is refused for its names, not the file
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        return labels_from_rows(f)


def merge_labels(log: str | os.PathLike[str], labels: list[dict[str, Any]],
                 out: str | os.PathLike[str]) -> int:
    """Copy ``log`` to ``out`` (topology first, as it was) with ``labels`` at the end."""
    def records() -> Iterator[dict[str, Any]]:
        for rec in read_records(log):
            if isinstance(rec, Record):
                yield {"topic": rec.topic, "value": rec.value}
        yield from labels

    return write_records(out, records())
