"""The detection engine: telemetry records in, alerts out, no I/O.

Every way of running faultline — the in-process replay, the Faust worker, the
benchmarks — drives this one class.  It keeps one monitor per job (steps), per
GPU (ECC/XID, thermal) and per node (NIC ports), feeds their findings to the
correlator, and advances an event-time clock (the newest ``ts`` seen) that
fires the correlator's timers.  Its whole state pickles to bytes and back, so
a partition can move to another worker.

>>> from detector.events import EccSample
>>> eng = Engine()
>>> sample = EccSample(100.0, "node-007", 3, 0, 1, 0, 1, True, False, 48, 0, 0, 0, 0, "none",
...                    None, None)
>>> [(a.kind, a.cause, a.scope.key, a.detection_latency_s) for a in eng.process(sample)]
[('hardware', 'gpu_memory', 'gpu:node-007/3', 0.0)]
>>> len(Engine.restore(eng.snapshot()).correlator.problems)
1
"""

from __future__ import annotations

import math
import pickle
import zlib
from typing import Any

from detector.alerts import Alert
from detector.correlate import Correlator
from detector.events import (
    EccSample,
    Event,
    NicSample,
    NonFinite,
    StepSample,
    ThermalSample,
)
from detector.findings import Finding
from detector.gpu_health import GpuHealth
from detector.network import NodeNics
from detector.steps import JobMonitor
from detector.thermal import GpuThermal
from detector.thresholds import Thresholds
from detector.topology import Topology

_SWEEP_S = 1.0  # how often (event time) silent jobs are checked for overdue steps


class Engine:
    """One partition's worth of detection state."""

    def __init__(self, thresholds: Thresholds | None = None,
                 topology: Topology | None = None) -> None:
        self.cfg = thresholds or Thresholds()
        self.topology = topology
        self.clock = -math.inf
        self._jobs: dict[str, JobMonitor] = {}
        self._ecc: dict[tuple[str, int], GpuHealth] = {}
        self._thermal: dict[tuple[str, int], GpuThermal] = {}
        self._nics: dict[str, NodeNics] = {}
        self._seen: dict[str, set[str]] = {}   # node -> sources heard from
        self._next_sweep = -math.inf
        self.counts: dict[str, int] = {"step": 0, "ecc": 0, "nic": 0, "thermal": 0,
                                       "nonfinite": 0, "unknown_node": 0, "findings": 0}
        self.correlator = Correlator(self.cfg, topology, self._was_seen)

    # -- input ---------------------------------------------------------------------------

    def process(self, ev: Event) -> list[Alert]:
        """Feed one telemetry record; returns the alerts it (or the time it carries) caused."""
        alerts: list[Alert] = []
        ts = ev.ts
        if ts > self.clock:
            self.clock = ts
            if self.correlator.due() <= ts:
                self.correlator.advance(ts, alerts)
        findings: list[Finding] = []
        t = type(ev)
        cfg = self.cfg
        if t is StepSample:
            self.counts["step"] += 1
            job = self._jobs.get(ev.job)  # type: ignore[union-attr]
            if job is None:
                job = self._jobs[ev.job] = JobMonitor(ev.job, cfg)  # type: ignore[union-attr]
            job.add(ev, findings)  # type: ignore[arg-type]
        elif t is ThermalSample:
            self.counts["thermal"] += 1
            key = (ev.node, ev.gpu)  # type: ignore[union-attr]
            mon = self._thermal.get(key)
            if mon is None:
                mon = self._thermal[key] = GpuThermal(key[0], key[1], cfg)
                self._heard(key[0], "thermal")
            mon.update(ev, cfg, findings)  # type: ignore[arg-type]
        elif t is NicSample:
            self.counts["nic"] += 1
            nics = self._nics.get(ev.node)
            if nics is None:
                nics = self._nics[ev.node] = NodeNics(ev.node)
                self._heard(ev.node, "nic")
            nics.update(ev, cfg, findings)  # type: ignore[arg-type]
        elif t is EccSample:
            self.counts["ecc"] += 1
            key = (ev.node, ev.gpu)  # type: ignore[union-attr]
            mon2 = self._ecc.get(key)
            if mon2 is None:
                mon2 = self._ecc[key] = GpuHealth(key[0], key[1], cfg)
                self._heard(key[0], "ecc")
            mon2.update(ev, cfg, findings)  # type: ignore[arg-type]
        else:
            raise TypeError(f"not a telemetry record: {type(ev).__name__}")
        if ts >= self._next_sweep:
            self._sweep(findings)
        if findings:
            self._correlate(findings, alerts)
        return alerts

    def process_nonfinite(self, n: NonFinite) -> list[Alert]:
        """A step message dead-lettered for a NaN/inf loss or grad_norm (see events.NonFinite)."""
        self.counts["nonfinite"] += 1
        job = self._jobs.get(n.job) or self._jobs.setdefault(n.job, JobMonitor(n.job, self.cfg))
        findings: list[Finding] = []
        job.add_nonfinite(n, findings)
        alerts: list[Alert] = []
        self._correlate(findings, alerts)
        return alerts

    def tick(self, now: float) -> list[Alert]:
        """Advance event time without a record (a quiet partition in the service)."""
        alerts: list[Alert] = []
        if now > self.clock:
            self.clock = now
        findings: list[Finding] = []
        self._sweep(findings)
        self._correlate(findings, alerts)
        self.correlator.advance(self.clock, alerts)
        return alerts

    def finish(self) -> list[Alert]:
        """End of input: decide every waiting step and timer as if time ran on."""
        alerts: list[Alert] = []
        findings: list[Finding] = []
        for job in self._jobs.values():
            job.expire(math.inf, findings)
        self._correlate(findings, alerts)
        horizon = max(self.clock, self.correlator.due())
        while self.correlator.due() < math.inf:
            horizon = max(horizon, self.correlator.due())
            self.correlator.advance(horizon, alerts)
        return alerts

    def _correlate(self, findings: list[Finding], alerts: list[Alert]) -> None:
        self.counts["findings"] += len(findings)
        on_finding = self.correlator.on_finding
        for f in findings:
            on_finding(f, alerts)

    def _sweep(self, findings: list[Finding]) -> None:
        self._next_sweep = self.clock + _SWEEP_S
        for job in self._jobs.values():
            job.expire(self.clock, findings)

    def _heard(self, node: str, source: str) -> None:
        self._seen.setdefault(node, set()).add(source)
        if self.topology is not None and not self.topology.has_node(node):
            self.counts["unknown_node"] += 1

    def _was_seen(self, node: str, source: str) -> bool:
        return source in self._seen.get(node, ())

    # -- state ---------------------------------------------------------------------------

    def snapshot(self) -> bytes:
        """All state as bytes (the topology is not included: it is injected on restore)."""
        state = self.__dict__.copy()
        state["topology"] = None
        return zlib.compress(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL), 1)

    @classmethod
    def restore(cls, blob: bytes, topology: Topology | None = None) -> Engine:
        eng = cls.__new__(cls)
        eng.__dict__.update(pickle.loads(zlib.decompress(blob)))
        eng.topology = topology
        eng.correlator.topology = topology
        eng.correlator.seen = eng._was_seen
        return eng

    def tracked_gpus(self) -> int:
        gpus = set(self._ecc) | set(self._thermal)
        return len(gpus) or sum(len(j._hw) for j in self._jobs.values())

    def stats(self) -> dict[str, Any]:
        return {**self.counts, "jobs": len(self._jobs), "gpus": self.tracked_gpus(),
                "nodes_with_nics": len(self._nics),
                "problems": len(self.correlator.problems),
                "late_steps": sum(j.late for j in self._jobs.values()),
                "duplicate_steps": sum(j.duplicates for j in self._jobs.values())}
