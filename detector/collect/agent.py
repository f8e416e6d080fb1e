"""The collect loop: scrape each source every interval, map to the contract, hand to a sink.

A source that fails (down, timing out, bad text) is retried with exponential
backoff — ``interval * 2**failures``, at most ``max_backoff_s`` — while the
others go on.  Nothing a source returns can stop the loop: it is counted.
Sample times are the scrape's wall-clock time (the exporters' pages carry
none); kernel-log XIDs keep their own.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge

from detector.collect.dcgm import DcgmReadings, XidTracker, read_dcgm
from detector.collect.exposition import parse_samples
from detector.collect.fields import (
    CHECKED_FIELDS,
    DCGM_METRICS,
    NIC_METRICS,
    ecc_record,
    nic_record,
    thermal_record,
)
from detector.collect.infiniband import (
    Ports,
    merge_ports,
    ports_from_node_exporter,
    ports_from_sysfs,
)
from detector.collect.kernel_log import KernelXids
from detector.events import ECC, NIC, THERMAL

log = logging.getLogger(__name__)

SOURCES = ("dcgm", "node_exporter", "sysfs", "kernel_log")
PENDING_XID_S = 60.0  # a kernel XID whose bus dcgm-exporter has not named yet waits this long


class Sink(Protocol):
    def send_batch(self, batch: list[tuple[str, dict[str, Any]]]) -> None: ...
    def poll(self) -> None: ...
    def buffered(self) -> int: ...
    def close(self, timeout_s: float = 10.0) -> int: ...


class CollectMetrics:
    """The agent's own /metrics: scrapes, failures, messages out, drops, buffer, XIDs."""

    def __init__(self, registry: CollectorRegistry) -> None:
        scrapes = Counter("faultline_collect_scrapes_total", "Scrapes by source and outcome",
                          ["source", "outcome"], registry=registry)
        self.ok = {s: scrapes.labels(s, "ok") for s in SOURCES}
        self.failed = {s: scrapes.labels(s, "failed") for s in SOURCES}
        msgs = Counter("faultline_collect_messages_total", "Contract messages handed to the "
                       "output", ["topic"], registry=registry)
        self.messages = {t: msgs.labels(t) for t in (ECC, NIC, THERMAL)}
        self.dropped = Counter("faultline_collect_dropped_total", "Messages dropped: the "
                               "output's buffer was full or delivery failed", registry=registry)
        self.xids = Counter("faultline_collect_xids_total", "XID events sent", registry=registry)
        bad = Counter("faultline_collect_invalid_values_total", "Readings left out of a "
                      "message: NaN, infinite, or outside the contract field's range",
                      ["field"], registry=registry)
        self.invalid = {f: bad.labels(f) for f in CHECKED_FIELDS}
        self.unmapped = Counter("faultline_collect_unmapped_xids_total", "Kernel-log XIDs on a "
                                "PCI bus dcgm-exporter never named", registry=registry)
        self.buffered = Gauge("faultline_collect_buffered_messages", "Messages waiting in the "
                              "output buffer", registry=registry)
        self.backoff = Gauge("faultline_collect_backoff_seconds", "Current retry delay of a "
                             "failing source", ["source"], registry=registry)
        self.backoff_of = {s: self.backoff.labels(s) for s in SOURCES}


# A dcgm-exporter page of 8 GPUs is ~100 KiB; node_exporter's infiniband page less.
MAX_PAGE_BYTES = 32 << 20


def read_bounded(resp: Any, limit: int) -> bytes:
    """At most ``limit`` bytes of an HTTP response; ``ValueError`` if it has more."""
    body = resp.read(limit + 1)
    if len(body) > limit:
        raise ValueError(f"response larger than {limit:,} bytes")
    return body


def http_get(url: str, timeout_s: float, limit: int = MAX_PAGE_BYTES) -> str:
    """GET a page as text; proxies from the environment are not used (exporters are local).
    A page over ``limit`` bytes is a failed scrape (``ValueError``), not unbounded memory."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout_s) as resp:
        return read_bounded(resp, limit).decode("utf-8", errors="replace")


def infiniband_only(url: str) -> str:
    """node_exporter's URL asking for the infiniband collector alone (``collect[]``)."""
    parts = urllib.parse.urlsplit(url)
    if parts.query:
        return url
    path = parts.path or "/metrics"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path,
                                    "collect%5B%5D=infiniband", ""))


@dataclass
class _Backoff:
    failures: int = 0
    next_try: float = 0.0


class Collector:
    """One node's sources; :meth:`tick` is one scrape cycle, :meth:`run` the loop."""

    def __init__(self, node: str, sink: Sink, metrics: CollectMetrics, *,
                 dcgm_url: str | None = None, node_exporter_url: str | None = None,
                 sysfs: str | None = None, kernel: KernelXids | None = None,
                 interval_s: float = 10.0, timeout_s: float = 5.0, max_backoff_s: float = 300.0,
                 clock: Callable[[], float] = time.time,
                 fetch: Callable[[str, float], str] = http_get) -> None:
        if not (dcgm_url or node_exporter_url or sysfs):
            raise ValueError("nothing to collect: give --dcgm, --node-exporter or --sysfs")
        self.node = node
        self.sink = sink
        self.metrics = metrics
        self.dcgm_url = dcgm_url
        self.node_exporter_url = infiniband_only(node_exporter_url) if node_exporter_url \
            else None
        self.sysfs = sysfs
        self.kernel = kernel
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.max_backoff_s = max_backoff_s
        self._clock = clock
        self._fetch = fetch
        self._xids = XidTracker()
        self._pci: dict[tuple[int, int, int], int] = {}
        self._pending: list[tuple[float, tuple[int, int, int], int]] = []
        self._backoff = {s: _Backoff() for s in SOURCES}
        self.ticks = 0

    # -- one cycle ---------------------------------------------------------------------------

    def _due(self, source: str, now: float) -> bool:
        return now >= self._backoff[source].next_try

    def _failed(self, source: str, now: float, exc: BaseException) -> None:
        b = self._backoff[source]
        b.failures += 1
        delay = min(self.interval_s * 2 ** b.failures, self.max_backoff_s)
        b.next_try = now + delay
        self.metrics.failed[source].inc()
        self.metrics.backoff_of[source].set(delay)
        log.warning("%s scrape failed (%d in a row; next try in %.1f s): %s", source,
                    b.failures, delay, exc)

    def _ok(self, source: str) -> None:
        b = self._backoff[source]
        if b.failures:
            log.info("%s is back after %d failed scrapes", source, b.failures)
        b.failures, b.next_try = 0, 0.0
        self.metrics.ok[source].inc()
        self.metrics.backoff_of[source].set(0)

    def _scrape_dcgm(self, now: float) -> DcgmReadings | None:
        if not self.dcgm_url or not self._due("dcgm", now):
            return None
        try:
            r = read_dcgm(parse_samples(self._fetch(self.dcgm_url, self.timeout_s),
                                        DCGM_METRICS))
        except (OSError, ValueError, urllib.error.URLError) as exc:
            self._failed("dcgm", now, exc)
            return None
        self._ok("dcgm")
        return r

    def _scrape_ports(self, now: float) -> Ports:
        ports: Ports = {}
        if self.node_exporter_url and self._due("node_exporter", now):
            try:
                ports = ports_from_node_exporter(parse_samples(
                    self._fetch(self.node_exporter_url, self.timeout_s), NIC_METRICS))
                self._ok("node_exporter")
            except (OSError, ValueError, urllib.error.URLError) as exc:
                self._failed("node_exporter", now, exc)
        if self.sysfs and self._due("sysfs", now):
            try:
                ports = merge_ports(ports, ports_from_sysfs(self.sysfs))
                self._ok("sysfs")
            except OSError as exc:
                self._failed("sysfs", now, exc)
        return ports

    def tick(self) -> list[tuple[str, dict[str, Any]]]:
        """Scrape every due source once; the contract messages, handed to the sink too."""
        now = self._clock()
        batch: list[tuple[str, dict[str, Any]]] = []
        dcgm = self._scrape_dcgm(now)
        ports = self._scrape_ports(now)
        ts = self._clock()  # after the scrapes: the readings are at most this old
        xid_by_gpu: dict[int, list[int]] = {}
        bad: collections.Counter[str] = collections.Counter()
        if dcgm is not None:
            bad["xid"] += dcgm.bad_xids
            self._pci.update(dcgm.pci)
            events = self._xids.update(dcgm)
            if self.kernel is None:  # with the kernel log, it alone reports XIDs (every one)
                for gpu, xid in events:
                    xid_by_gpu.setdefault(gpu, []).append(xid)
            for gpu in sorted(dcgm.gpus):
                values = dcgm.gpus[gpu]
                rec = thermal_record(self.node, gpu, ts, values, bad)
                if rec is not None:
                    batch.append((THERMAL, rec))
                xids = xid_by_gpu.pop(gpu, [])
                rec = ecc_record(self.node, gpu, ts, values, xids[0] if xids else None, bad)
                if rec is not None:
                    batch.append((ECC, rec))
                elif xids:
                    batch.append((ECC, {"ts": ts, "node": self.node, "gpu": gpu,
                                        "xid": xids[0]}))
                # several XIDs in one interval: one message each, apart in time so none
                # is taken for a duplicate delivery of another
                for i, xid in enumerate(xids[1:], 1):
                    batch.append((ECC, {"ts": ts + i * 1e-3, "node": self.node, "gpu": gpu,
                                        "xid": xid}))
        for (dev, port), values in sorted(ports.items()):
            rec = nic_record(self.node, dev, port, ts, values, bad)
            if rec is not None:
                batch.append((NIC, rec))
        batch.extend(self._kernel_xids(now))
        for fld, n in bad.items():
            self.metrics.invalid[fld].inc(n)
        batch.sort(key=lambda tv: tv[1]["ts"])
        for topic, value in batch:
            self.metrics.messages[topic].inc()
            if topic == ECC and value.get("xid") is not None:
                self.metrics.xids.inc()
        self.sink.send_batch(batch)
        self.metrics.buffered.set(self.sink.buffered())
        self.ticks += 1
        return batch

    def _kernel_xids(self, now: float) -> list[tuple[str, dict[str, Any]]]:
        if self.kernel is None:
            return []
        if self.kernel.error is not None and self._backoff["kernel_log"].failures == 0:
            self._failed("kernel_log", now, RuntimeError(self.kernel.error))
        self._pending.extend(self.kernel.drain())
        out, keep = [], []
        for ts, bus, xid in self._pending:
            gpu = self._pci.get(bus)
            if gpu is not None:
                out.append((ECC, {"ts": ts, "node": self.node, "gpu": gpu, "xid": xid}))
            elif now - ts < PENDING_XID_S:
                keep.append((ts, bus, xid))
            else:
                self.metrics.unmapped.inc()
                log.warning("kernel-log XID %d on PCI %04x:%02x:%02x: no GPU of dcgm-exporter "
                            "has that bus; dropped", xid, *bus)
        self._pending = keep
        return out

    # -- the loop ----------------------------------------------------------------------------

    def run(self, *, duration_s: float | None = None, stop: threading.Event | None = None,
            monotonic: Callable[[], float] = time.monotonic) -> int:
        """Tick every ``interval_s`` until ``stop`` is set or ``duration_s`` has passed."""
        stop = stop or threading.Event()
        start = monotonic()
        next_at = start
        while not stop.is_set():
            self.tick()
            next_at += self.interval_s
            if duration_s is not None and next_at - start > duration_s:
                break
            while not stop.is_set():
                left = next_at - monotonic()
                if left <= 0:
                    break
                self.sink.poll()
                stop.wait(min(left, 0.5))
            if monotonic() - next_at > self.interval_s:
                next_at = monotonic()  # fell behind (a slow scrape): do not burst to catch up
        return self.ticks
