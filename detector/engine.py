"""The detection engine: telemetry records in, alerts out, no I/O.

Every way of running faultline drives these same two parts: the
:class:`~detector.monitors.Monitors` (one monitor per job, per GPU and per
node, events to findings) and the :class:`~detector.correlate.Correlator`
(findings to alerts).  The engine joins them in one process with an
event-time clock — the newest ``ts`` seen — that fires the correlator's
timers; the Kafka service runs them on different partitions with a topic in
between.  Its whole state goes to bytes and back as data (detector.statecodec).

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
from typing import Any

from detector.alerts import Alert
from detector.correlate import Correlator
from detector.events import JUMP_AGREE, MAX_AHEAD_S, Event, InvalidMessage, NonFinite
from detector.findings import Finding
from detector.monitors import Monitors, out_of_range
from detector.statecodec import UNSIGNED, StateCodec
from detector.thresholds import Thresholds
from detector.topology import Topology


class Engine:
    """Monitors and correlator in one process: telemetry records in, alerts out."""

    def __init__(self, thresholds: Thresholds | None = None,
                 topology: Topology | None = None) -> None:
        self.cfg = thresholds or Thresholds()
        self.topology = topology
        self.monitors = Monitors(self.cfg, topology)
        self.correlator = Correlator(self.cfg, topology, self.monitors.was_seen)
        self._held: list[Event] = []   # far ahead of the clock, waiting for others to agree
        self.rejected: list[InvalidMessage] = []  # records refused; the caller drains this

    @property
    def clock(self) -> float:
        return self.monitors.clock

    def process(self, ev: Event) -> list[Alert]:
        """Feed one telemetry record; returns the alerts it (or the time it carries) caused.

        Event time is defended against the log's own clock as the service
        defends a partition's (:meth:`Monitors.count_jump`, one count for
        both): a record more than ``MAX_AHEAD_S`` ahead of it waits, and goes
        in only when ``JUMP_AGREE`` consecutive records agree on the new time
        (a gap in the log); where the service refuses the records short of
        that, the engine holds them and lets them in too.  A record back on
        the old clock first means the held ones were strays, and they are
        refused (appended to :attr:`rejected`, ``ts_out_of_range``) having
        changed nothing.
        """
        mon = self.monitors
        if ev.ts - mon.clock > MAX_AHEAD_S and mon.clock > -math.inf:
            return self._hold(ev)
        if self._held:
            self._refuse_held()
        return self._process(ev)

    def _hold(self, ev: Event) -> list[Alert]:
        n = self.monitors.count_jump(ev.ts)
        if n == 1 and self._held:
            self._refuse_held()  # it disagrees with them: a new count started
        if n < JUMP_AGREE:
            self._held.append(ev)
            return []
        held = [*self._held, ev]
        self._held = []
        alerts: list[Alert] = []
        self.monitors.clock = held[0].ts  # the jump is real
        for e in held:
            try:
                alerts.extend(self._process(e))
            except InvalidMessage as exc:
                self.rejected.append(exc)
        return alerts

    def _refuse_held(self) -> None:
        self.rejected.extend(out_of_range(e, self.monitors.clock) for e in self._held)
        self._held = []
        self.monitors.forget_jump()

    def _process(self, ev: Event) -> list[Alert]:
        alerts: list[Alert] = []
        self.correlator.fire_due(ev.ts, alerts)
        findings: list[Finding] = []
        self.monitors.process(ev, findings)
        if self.monitors.forgotten:
            # Pruned nodes: the correlator asks the monitors directly, nothing to pass on.
            self.monitors.forgotten.clear()
        if findings:
            on_finding = self.correlator.on_finding
            for f in findings:
                on_finding(f, alerts)
        return alerts

    def process_nonfinite(self, nf: NonFinite) -> list[Alert]:
        findings: list[Finding] = []
        self.monitors.process_nonfinite(nf, findings)
        return self._correlate(findings)

    def finish(self) -> list[Alert]:
        """End of input: decide every waiting step and timer as if time ran on."""
        if self._held:
            self._refuse_held()
        findings: list[Finding] = []
        self.monitors.finish(findings)
        alerts = self._correlate(findings)
        horizon = self.monitors.clock
        while self.correlator.due() < math.inf:
            horizon = max(horizon, self.correlator.due())
            self.correlator.advance(horizon, alerts)
        return alerts

    def _correlate(self, findings: list[Finding]) -> list[Alert]:
        alerts: list[Alert] = []
        for f in findings:
            self.correlator.on_finding(f, alerts)
        return alerts

    # -- state ---------------------------------------------------------------------------

    def snapshot(self, codec: StateCodec = UNSIGNED) -> bytes:
        """All state as bytes (the topology is not included: it is injected on restore)."""
        state = {"cfg": self.cfg, "monitors": self.monitors, "correlator": self.correlator}
        return codec.encode(state, "engine")

    @classmethod
    def restore(cls, blob: bytes, topology: Topology | None = None,
                codec: StateCodec = UNSIGNED) -> Engine:
        """The engine a :meth:`snapshot` saved; :class:`SnapshotRefused` if it is not one."""
        state = codec.decode(blob, "engine")
        eng = cls.__new__(cls)
        eng.cfg, eng.monitors, eng.correlator = state["cfg"], state["monitors"], state[
            "correlator"]
        eng.topology = topology
        eng._held, eng.rejected = [], []
        eng.monitors.attach(topology)
        eng.monitors.forget_jump()  # what it counted was held here, and is not in the state
        eng.correlator.attach(topology, eng.monitors.was_seen)
        return eng

    def stats(self) -> dict[str, Any]:
        return {**self.monitors.stats(), "problems": len(self.correlator.problems)}
