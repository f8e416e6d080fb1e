"""Monitors: every per-job, per-GPU and per-node detector of one input stream, events to findings.

Each telemetry source (:class:`~detector.pipeline.source.SourcePartition`:
one per Kafka partition in the service, one in the in-process
:class:`~detector.engine.Engine`) has its own; its findings reach the
correlator through a topic or in memory.  Either way the same records give
the same findings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from detector.alerts import Scope
from detector.events import (
    ECC,
    JUMP_AGREE,
    MAX_AHEAD_S,
    NIC,
    STEP,
    THERMAL,
    EccSample,
    Event,
    InvalidMessage,
    NicSample,
    NonFinite,
    StepSample,
    ThermalSample,
)
from detector.findings import Finding
from detector.gpu_health import GpuHealth
from detector.network import NodeNics
from detector.steps import JobMonitor
from detector.thermal import GpuThermal, NodeTemps
from detector.thresholds import Thresholds
from detector.topology import Topology

_SWEEP_S = 1.0  # how often (event time) silent jobs are checked for overdue steps


class Monitors:
    """Per-device and per-job monitors for one stream of telemetry; its clock is the newest ts.

    **Event time is defended**: a record more than ``MAX_AHEAD_S`` ahead of the
    clock (a producer with a broken clock, a year-2100 ``ts``) raises
    :class:`InvalidMessage` ``ts_out_of_range`` and changes nothing, unless
    ``JUMP_AGREE`` consecutive records agree on the new time (a log with a gap:
    the jump is real).  The first record is checked against ``wall_clock``
    when one is given (the service), and taken as it is otherwise (a replayed
    log has its own time).
    """

    def __init__(self, thresholds: Thresholds | None = None,
                 topology: Topology | None = None, *,
                 wall_clock: Callable[[], float] | None = None) -> None:
        self.cfg = thresholds or Thresholds()
        self.topology = topology
        self.wall_clock = wall_clock
        self.clock = -math.inf
        self._jump: list[float] = []  # consecutive far-ahead ts that agree with each other
        self._jobs: dict[str, JobMonitor] = {}
        self._ecc: dict[tuple[str, int], GpuHealth] = {}
        self._thermal: dict[tuple[str, int], GpuThermal] = {}
        self._nics: dict[str, NodeNics] = {}
        self._node_temps: dict[str, NodeTemps] = {}
        self._seen: dict[str, set[str]] = {}   # node -> sources heard from
        # What the correlator's view of "seen" must learn (detector.pipeline.source passes
        # it on): (cluster, node, source) newly heard from, and (node, source) no longer
        # heard from (pruned).  Drained by the caller after every record.
        self.heard: list[tuple[str | None, str, str]] = []
        self.forgotten: list[tuple[str, str]] = []
        self._next_sweep = -math.inf
        self._next_prune = -math.inf
        # What went through, for counts: plain ints (an attribute increment costs half a
        # dict item's, and this runs for every record).
        self._n_step = self._n_ecc = self._n_nic = self._n_thermal = 0
        self._n_nonfinite = self._n_unknown_node = self._n_findings = 0

    @property
    def counts(self) -> dict[str, int]:
        """Records of each kind processed, NaN-salvaged steps, units the topology does not
        list, findings made."""
        return {"step": self._n_step, "ecc": self._n_ecc, "nic": self._n_nic,
                "thermal": self._n_thermal, "nonfinite": self._n_nonfinite,
                "unknown_node": self._n_unknown_node, "findings": self._n_findings}

    def process(self, ev: Event, findings: list[Finding]) -> None:
        """Feed one telemetry record; findings it causes are appended to ``findings``."""
        ts = ev.ts
        clock = self.clock
        if ts > clock:
            if ts - clock > MAX_AHEAD_S:
                self.check_ahead(ev)  # raises unless the jump is real
            elif self._jump:
                self._jump.clear()
            self.clock = ts
        elif self._jump:
            self._jump.clear()
        n = len(findings)
        # The four kinds' handling, inline (one call less per record: this runs for every
        # one); a unit's monitor by subscript, a KeyError only for its first record (cheaper
        # than dict.get's call on the others).  The unit's quiet step is asked here, as its
        # update (a job's add) asks it first: the usual record costs one call, not two, and
        # one it declines is asked again there (it changed nothing).
        t = type(ev)
        e: Any = ev  # (narrowed by t, which mypy does not follow)
        if t is StepSample:
            self._n_step += 1
            try:
                job = self._jobs[e.job]
            except KeyError:
                job = self._jobs[e.job] = JobMonitor(e.job, self.cfg)
            if not job.quiet(e):
                job.add(e, findings)
        elif t is NicSample:
            self._n_nic += 1
            try:
                nics = self._nics[e.node]
            except KeyError:
                nics = self._nics[e.node] = NodeNics(e.node)
                self._heard(e.node, "nic", e.cluster)
            if not nics.quiet(e, self.cfg):
                nics.update(e, self.cfg, findings)
        elif t is ThermalSample:
            self._n_thermal += 1
            key = (e.node, e.gpu)
            try:
                mon = self._thermal[key]
            except KeyError:
                temps = self._node_temps.get(e.node)
                if temps is None:
                    temps = self._node_temps[e.node] = NodeTemps()
                mon = self._thermal[key] = GpuThermal(e.node, e.gpu, self.cfg, temps)
                self._heard(e.node, "thermal", e.cluster)
            if not mon.quiet(e, self.cfg):
                mon.update(e, self.cfg, findings)
        elif t is EccSample:
            self._n_ecc += 1
            key = (e.node, e.gpu)
            try:
                ecc = self._ecc[key]
            except KeyError:
                ecc = self._ecc[key] = GpuHealth(e.node, e.gpu, self.cfg)
                self._heard(e.node, "ecc", e.cluster)
            if not ecc.quiet(e, self.cfg):
                ecc.update(e, self.cfg, findings)
        else:
            raise TypeError(f"not a telemetry record: {t.__name__}")
        if ts >= self._next_sweep:
            self.sweep(findings)
        if findings and len(findings) != n:  # (only appended to: empty means none made)
            self._n_findings += len(findings) - n

    def check_ahead(self, ev: Event) -> None:
        """A record far ahead of the clock: move the clock to it, or raise ``ts_out_of_range``."""
        ts = ev.ts
        if self.clock > -math.inf and self.count_jump(ts) < JUMP_AGREE:
            raise out_of_range(ev, self.clock)
        # The first record, or a jump the records agree on: never past the wall clock when
        # there is one (the service) -- three records agreeing on 2100 must not move a
        # live partition there.
        wall = self.wall_clock() if self.wall_clock is not None else math.inf
        if ts - wall > MAX_AHEAD_S:
            raise InvalidMessage(_TOPIC[type(ev)], f"ts_out_of_range: ts {ts!r} is more than "
                                 f"{MAX_AHEAD_S:g} s ahead of the wall clock ({wall:.3f})",
                                 "ts")
        self.clock = ts

    def count_jump(self, ts: float) -> int:
        """Count ``ts``, far ahead of the clock, towards a jump of the log's time.

        Returns how many consecutive such records agree on the new time, this
        one included: 1 when it starts a new count (the ones counted before it
        disagree with it), ``JUMP_AGREE`` when the jump is real (and the count
        starts over).  What becomes of the records counted short of that is
        :meth:`SourcePartition.admit`'s (detector.pipeline.source): refused at
        once (the service), or held until the jump is real or refused.
        """
        jump = self._jump
        if jump and abs(ts - jump[-1]) > MAX_AHEAD_S:
            jump.clear()
        jump.append(ts)
        n = len(jump)
        if n >= JUMP_AGREE:
            jump.clear()
        return n

    def forget_jump(self) -> None:
        """The far-ahead records counted so far were strays (refused by the caller)."""
        self._jump.clear()

    def attach(self, topology: Topology | None,
               wall_clock: Callable[[], float] | None = None) -> None:
        """Give restored monitors what a snapshot never holds (see detector.statecodec)."""
        self.topology = topology
        self.wall_clock = wall_clock

    def process_nonfinite(self, nf: NonFinite, findings: list[Finding]) -> None:
        """A step message dead-lettered for a NaN/inf loss or grad_norm (see events.NonFinite)."""
        self._n_nonfinite += 1
        job = self._jobs.get(nf.job) or self._jobs.setdefault(nf.job, JobMonitor(nf.job, self.cfg))
        job.add_nonfinite(nf, findings)

    def advance(self, now: float, findings: list[Finding]) -> None:
        """Move the clock without a record (a quiet stream) and decide overdue steps."""
        if now > self.clock:
            self.clock = now
        self.sweep(findings, quiet=True)

    def sweep(self, findings: list[Finding], *, quiet: bool = False) -> None:
        """Evaluate steps that have waited past the allowed lateness, in every job.

        ``quiet``: the clock was run on without a record (no evidence that a job stopped)."""
        self._next_sweep = self.clock + _SWEEP_S
        for job in self._jobs.values():
            job.expire(self.clock, findings, quiet=quiet)
        if self.clock >= self._next_prune:
            self._next_prune = self.clock + min(self.cfg.job_idle_s, self.cfg.unit_idle_s) / 4
            idle = [name for name, job in self._jobs.items()
                    if job.clock < self.clock - self.cfg.job_idle_s]
            for name in idle:  # a job that ended: its ranks' history is no use any more
                job = self._jobs.pop(name)
                findings.append(Finding(
                    self.clock, self.clock, "job_layout", "slow_node", "unknown",
                    Scope.of_job(name), False, False, 0.0, {}, name, job.tenant, job.cluster))
            self.prune_units()

    def prune_units(self) -> None:
        """Forget GPUs and nodes silent for ``unit_idle_s`` (``unit_fault_idle_s`` if faulty).

        A fleet churns: nodes are drained, replaced, renamed.  Without this the
        state (and every snapshot) grows with every node ever seen.  A unit that
        comes back starts afresh, as a new one would (its counters' first
        sample is a baseline, not an increase).
        """
        quiet = self.clock - self.cfg.unit_idle_s
        faulty = self.clock - self.cfg.unit_fault_idle_s

        def gone(mon: GpuHealth | GpuThermal | NodeNics) -> bool:
            t = mon.last_ts
            return t < faulty or (t < quiet and not mon.has_open_fault())

        touched: set[str] = set()
        for key in [k for k, m in self._ecc.items() if gone(m)]:
            del self._ecc[key]
            touched.add(key[0])
        for key in [k for k, m in self._thermal.items() if gone(m)]:
            mon = self._thermal.pop(key)
            touched.add(key[0])
            if mon.node_temps.forget(key[1]) and self._node_temps.get(key[0]) is mon.node_temps:
                del self._node_temps[key[0]]
        for node in [n for n, m in self._nics.items() if gone(m)]:
            del self._nics[node]
            touched.add(node)
        if not touched:
            return
        live = {"ecc": {n for n, _ in self._ecc}, "thermal": {n for n, _ in self._thermal},
                "nic": set(self._nics)}
        for node in touched:
            sources = self._seen.get(node)
            if sources is None:
                continue
            for source in [s for s in sources if node not in live.get(s, (node,))]:
                sources.discard(source)
                self.forgotten.append((node, source))
            if not sources:
                del self._seen[node]

    def finish(self, findings: list[Finding]) -> None:
        """End of input: decide every waiting step."""
        for job in self._jobs.values():
            job.expire(math.inf, findings)

    def _heard(self, node: str, source: str, cluster: str | None) -> None:
        sources = self._seen.get(node)
        if sources is None:
            sources = self._seen[node] = set()
        if source not in sources:
            sources.add(source)
            self.heard.append((cluster, node, source))
        if self.topology is not None and not self.topology.has_node(node):
            self._n_unknown_node += 1

    def gpu_keys(self) -> set[tuple[str, int]]:
        """Every (node, gpu) this worker keeps a model for, from any telemetry."""
        gpus = set(self._ecc) | set(self._thermal)
        for j in self._jobs.values():
            gpus.update(hw for hw in j._hw if hw is not None)
        return gpus

    def tracked_gpus(self) -> int:
        return len(self.gpu_keys())

    def stats(self) -> dict[str, Any]:
        return {**self.counts, "jobs": len(self._jobs), "gpus": self.tracked_gpus(),
                "nodes_with_nics": len(self._nics), "nodes_seen": len(self._seen),
                "late_steps": sum(j.late for j in self._jobs.values()),
                "duplicate_steps": sum(j.duplicates for j in self._jobs.values()),
                "job_restarts": sum(j.restarts for j in self._jobs.values())}


def out_of_range(ev: Event, clock: float) -> InvalidMessage:
    """The dead-letter reason of a record too far ahead of its partition's clock."""
    return InvalidMessage(_TOPIC[type(ev)], f"ts_out_of_range: ts {ev.ts!r} is more than "
                          f"{MAX_AHEAD_S:g} s ahead of the partition's clock ({clock!r})", "ts")


_TOPIC = {StepSample: STEP, ThermalSample: THERMAL, NicSample: NIC, EccSample: ECC}


def tracked_gpus(parts: Iterable[Monitors]) -> int:
    """GPUs tracked across partitions: a GPU's ECC, thermal and step telemetry land on three
    partitions (keyed by node, node and job), and it is still one GPU."""
    return len(set().union(*(m.gpu_keys() for m in parts)))
