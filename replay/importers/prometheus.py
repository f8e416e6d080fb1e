"""History from Prometheus: dcgm-exporter and node_exporter series as an incident log.

The range is read through the HTTP API's ``query_range`` in chunks (at most
``chunk_points`` steps each, below Prometheus's 11,000-point limit), with one
selector over every metric name the collector maps.  Each evaluation time
becomes one scrape of each node: the same field mapping and XID-event logic as
``faultline collect`` (:mod:`detector.collect`), so a replay of the history
sees what the live agent would have sent.  A node is the series' ``node``
label (or ``--node-label``), else dcgm-exporter's ``Hostname``, else the host
of ``instance``.  A ``/api/v1/series`` pass first lists every node, GPU and
NIC of the range for the log's topology record.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from detector.collect.agent import read_bounded
from detector.collect.dcgm import XidTracker, read_dcgm
from detector.collect.exposition import Sample
from detector.collect.fields import (
    DCGM_METRICS,
    NIC_METRICS,
    ecc_record,
    nic_record,
    node_of,
    thermal_record,
)
from detector.collect.infiniband import ports_from_node_exporter
from detector.collect.sinks import observed_topology
from detector.events import ECC, NIC, THERMAL

METRICS = tuple(sorted(DCGM_METRICS | NIC_METRICS))
SELECTOR = '{__name__=~"' + "|".join(METRICS) + '"}'


# query_range answers are chunked below 11,000 points a series; a whole cluster's series
# in one chunk stays far below this.
MAX_RESPONSE_BYTES = 512 << 20


class PrometheusError(RuntimeError):
    """Prometheus answered with an error, or could not be reached."""


def _get(url: str, params: dict[str, Any], timeout_s: float) -> Any:
    q = urllib.parse.urlencode(params, doseq=True)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{url}?{q}", timeout=timeout_s) as resp:
            body = json.loads(read_bounded(resp, MAX_RESPONSE_BYTES))
    except urllib.error.HTTPError as exc:
        with exc:
            try:
                body = json.loads(read_bounded(exc, MAX_RESPONSE_BYTES))
            except ValueError:
                raise PrometheusError(f"{url}: HTTP {exc.code}") from None
    except (OSError, ValueError) as exc:
        raise PrometheusError(f"{url}: {exc}") from None
    if body.get("status") != "success":
        raise PrometheusError(f"{url}: {body.get('errorType')}: {body.get('error')}")
    return body["data"]


@dataclass
class PrometheusImport:
    """One import: where from, which range, and what it found."""

    url: str
    start: float
    end: float
    step_s: float = 15.0
    node_label: str | None = None
    chunk_points: int = 1000
    chunk_samples: int = 1_000_000  # at most this many samples in memory (and per request)
    timeout_s: float = 60.0
    series: int = 0  # how many series the range holds (from the series pass)
    get: Callable[[str, dict[str, Any], float], Any] = _get
    records: int = 0
    per_topic: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    _xids: dict[str, XidTracker] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.step_s > 0:
            raise ValueError(f"--step must be > 0, got {self.step_s}")
        if not self.end > self.start:
            raise ValueError("--end must be after --start")
        self.url = self.url.rstrip("/")

    def chunks(self) -> list[tuple[float, float]]:
        """Time ranges of the requests: ``chunk_points`` steps, fewer when there are so many
        series that a chunk would hold more than ``chunk_samples`` samples (a large cluster:
        Prometheus refuses a query past its ``query.max-samples``, 50 million by default)."""
        points = self.chunk_points
        if self.series:
            points = max(1, min(points, self.chunk_samples // self.series))
        span = self.step_s * points
        out, t = [], self.start
        while t <= self.end:
            out.append((t, min(t + span - self.step_s, self.end)))
            t += span
        return out

    def topology_record(self, name: str = "prometheus") -> dict[str, Any] | None:
        """The nodes, GPUs and NICs of every series in the range, as a topology record."""
        data = self.get(f"{self.url}/api/v1/series", {
            "match[]": SELECTOR, "start": self.start, "end": self.end}, self.timeout_s)
        seen: list[tuple[str, dict[str, Any]]] = []
        self.series = len(data)
        for labels in data:
            node = node_of(labels, self.node_label)
            if node is None:
                continue
            if "gpu" in labels and labels["__name__"].startswith("DCGM_"):
                try:
                    seen.append((THERMAL, {"node": node, "gpu": int(labels["gpu"])}))
                except ValueError:
                    continue
            elif "device" in labels and labels["__name__"].startswith("node_infiniband_"):
                seen.append((NIC, {"node": node, "nic": labels["device"]}))
        topo = observed_topology(name, seen)
        return topo.record() if topo is not None else None

    def iter_records(self, on_progress: Callable[[float], None] | None = None
                     ) -> Iterator[dict[str, Any]]:
        """Contract records of the whole range, in time order, chunk by chunk."""
        for start, end in self.chunks():
            data = self.get(f"{self.url}/api/v1/query_range", {
                "query": SELECTOR, "start": start, "end": end, "step": self.step_s},
                self.timeout_s)
            yield from self._chunk(data.get("result", []))
            if on_progress is not None:
                on_progress(end - self.start)

    def _chunk(self, result: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        # evaluation time -> node -> samples
        at: dict[float, dict[str, list[Sample]]] = {}
        for series in result:
            labels = dict(series.get("metric", {}))
            name = labels.pop("__name__", None)
            node = node_of(labels, self.node_label)
            if name is None or node is None:
                self.skipped["series without a metric name or node"] += 1
                continue
            for when, text in series.get("values", ()):
                try:
                    value = float(text)
                except (TypeError, ValueError):
                    self.skipped["value not a number"] += 1
                    continue
                at.setdefault(float(when), {}).setdefault(node, []).append(
                    Sample(name, labels, value))
        for ts in sorted(at):
            for node in sorted(at[ts]):
                for topic, rec in self._scrape(node, ts, at[ts][node]):
                    self.records += 1
                    self.per_topic[topic] += 1
                    yield {"topic": topic, "value": rec}

    def _scrape(self, node: str, ts: float, samples: list[Sample]
                ) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        bad: Counter[str] = Counter()  # readings left out of a record, by field
        dcgm = read_dcgm(s for s in samples if s.name in DCGM_METRICS)
        bad["xid"] += dcgm.bad_xids
        if dcgm.gpus or dcgm.xid_counts:
            tracker = self._xids.setdefault(node, XidTracker())
            xids: dict[int, list[int]] = {}
            for gpu, xid in tracker.update(dcgm):
                xids.setdefault(gpu, []).append(xid)
            for gpu in sorted(dcgm.gpus):
                values = dcgm.gpus[gpu]
                rec = thermal_record(node, gpu, ts, values, bad)
                if rec is not None:
                    out.append((THERMAL, rec))
                codes = xids.pop(gpu, [])
                rec = ecc_record(node, gpu, ts, values, codes[0] if codes else None, bad)
                if rec is None and codes:
                    rec = {"ts": ts, "node": node, "gpu": gpu, "xid": codes[0]}
                if rec is not None:
                    out.append((ECC, rec))
                for i, xid in enumerate(codes[1:], 1):
                    out.append((ECC, {"ts": ts + i * 1e-3, "node": node, "gpu": gpu,
                                      "xid": xid}))
        ports = ports_from_node_exporter(s for s in samples if s.name in NIC_METRICS)
        for (dev, port), values in sorted(ports.items()):
            rec = nic_record(node, dev, port, ts, values, bad)
            if rec is not None:
                out.append((NIC, rec))
        for fld, n in bad.items():
            if n:
                self.skipped[f"{fld}: NaN, infinite or outside the contract's range"] += n
        out.sort(key=lambda tv: tv[1]["ts"])
        return out
