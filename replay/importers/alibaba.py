"""Alibaba PAI mini-batch times (``cluster-trace-gpu-v2020/mini-batch-time``) as step records.

The trace's CSV shape is ``,worker,gpu,time,batch_time_norm``: one row per
worker per sampled iteration (``time``, about every 10th), the worker's
mini-batch time normalised to 0-1000 within the job, and the share of a GPU
the worker requested.  What maps to the contract, and how:

- ``worker`` is the ``rank``; workers are pure data parallelism (no tp/pp
  fields), each on its own host ``{job}-w{worker}`` (the trace names none),
  GPU 0;
- ``time`` is the ``step``; ``ts`` is ``t0 + step * step_s`` (the trace has
  no wall clock: ``step_s`` is chosen by the caller), plus a millisecond per
  rank so records keep a stable order;
- ``batch_time_norm`` is each worker's own time for the batch, so it is
  ``compute_ms`` (times ``ms_per_unit``) and ``step_ms`` alike; there is no
  ``comm_ms``.  Normalisation is per job, so ratios between workers — all
  the slow-rank detector uses — are the real ones.

Rows that do not parse are counted with their reason, never fatal.  The log
carries no labels: the trace has none beyond Alibaba's notes.

>>> rows = [",worker,gpu,time,batch_time_norm", "0,0,25,1,476", "1,1,25,1,509",
...         "2,x,25,1,1", "3,2,25,11,470"]
>>> imp = AlibabaImport("job-1")
>>> [(r["value"]["rank"], r["value"]["step"], r["value"]["compute_ms"])
...  for r in imp.records(rows)]
[(0, 1, 476.0), (1, 1, 509.0), (2, 11, 470.0)]
>>> dict(imp.invalid)
{'line 4: worker: not an integer': 1}
"""

from __future__ import annotations

import csv
import gzip
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from detector.events import COUNTER_LIMIT, INDEX_LIMIT
from replay.importers import csv_rows

T0 = 1767225600.0  # 2026-01-01T00:00:00Z: the trace has no wall clock
_INF = float("inf")


class AlibabaImport:
    """Turns the rows of one job's CSV into ``telemetry.step`` records, counting bad rows."""

    def __init__(self, job: str, *, t0: float = T0, step_s: float = 1.0,
                 ms_per_unit: float = 1.0, cluster: str | None = None) -> None:
        if not (step_s > 0 and ms_per_unit > 0):
            raise ValueError("step_s and ms_per_unit must be positive")
        self.job, self.t0, self.step_s, self.ms_per_unit = job, t0, step_s, ms_per_unit
        self.cluster = cluster
        self.invalid: Counter[str] = Counter()
        self.rows = 0

    def records(self, lines: Iterable[str]) -> Iterator[dict[str, Any]]:
        """Step records in event-time order (the trace is ordered by iteration, then worker)."""
        out: list[tuple[float, dict[str, Any]]] = []
        reader = csv.reader(lines)
        header = next(reader, None)
        first = 2
        if header is not None and header[1:5] != ["worker", "gpu", "time", "batch_time_norm"]:
            reader, first = _chain(header, reader), 1  # no header line: the first row is data
        for n, row in csv_rows(reader, self.invalid, first):
            if not row:
                continue  # a blank line
            self.rows += 1
            rec = self._record(row, n)
            if rec is not None:
                out.append((rec["value"]["ts"], rec))
        out.sort(key=lambda tr: tr[0])
        for _, rec in out:
            yield rec

    def _record(self, row: list[str], n: int) -> dict[str, Any] | None:
        if len(row) < 5:
            self.invalid[f"line {n}: expected 5 columns"] += 1
            return None
        values: dict[str, float] = {}
        for name, text in zip(("worker", "gpu", "time", "batch_time_norm"), row[1:5],
                              strict=True):
            try:
                values[name] = float(text) if name == "batch_time_norm" else int(text)
            except ValueError:
                kind = "a number" if name == "batch_time_norm" else "an integer"
                self.invalid[f"line {n}: {name}: not {kind}"] += 1
                return None
        batch = values["batch_time_norm"]
        worker, step = int(values["worker"]), int(values["time"])
        ms = round(batch * self.ms_per_unit, 3)
        # the contract's bounds (a rank below 2^24, a step below 2^63, a finite time):
        # a row outside them would be a record the replay dead-letters
        if not (batch > 0 and ms < _INF and 0 <= worker < INDEX_LIMIT
                and 0 <= step < COUNTER_LIMIT):
            self.invalid[f"line {n}: out of range"] += 1
            return None
        value: dict[str, Any] = {
            "ts": round(self.t0 + step * self.step_s + 0.001 * worker, 6),
            "job": self.job, "step": step, "rank": worker, "node": f"{self.job}-w{worker}",
            "gpu": 0, "step_ms": ms, "compute_ms": ms}
        if self.cluster:
            value["cluster"] = self.cluster
        return {"topic": "telemetry.step", "value": value}


def _chain(first: list[str], rest: Iterator[list[str]]) -> Iterator[list[str]]:
    yield first
    yield from rest


def job_name(path: str | os.PathLike[str]) -> str:
    """``job_1_norm.csv`` -> ``pai-job-1``."""
    stem = os.path.basename(os.fspath(path)).removesuffix(".gz").removesuffix(".csv")
    stem = stem.removesuffix("_norm")
    return "pai-" + stem.replace("_", "-")


def import_files(paths: Iterable[str | os.PathLike[str]], *, step_s: float = 1.0,
                 ms_per_unit: float = 1.0) -> tuple[list[dict[str, Any]], Counter[str], int]:
    """All records of several job CSVs, merged in event-time order; (records, invalid, rows).

    Jobs share the clock (each starts at ``T0``), as jobs on one cluster would.
    """
    records: list[dict[str, Any]] = []
    invalid: Counter[str] = Counter()
    rows = 0
    for path in paths:
        imp = AlibabaImport(job_name(path), step_s=step_s, ms_per_unit=ms_per_unit)
        opener = gzip.open if os.fspath(path).endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as f:
            records.extend(imp.records(f))
        invalid.update({f"{os.fspath(path)}: {k}": v for k, v in imp.invalid.items()})
        rows += imp.rows
    records.sort(key=lambda r: r["value"]["ts"])
    return records, invalid, rows
