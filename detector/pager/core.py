"""The pager's core, without Kafka: route each alert, apply storm control, deliver, then let go.

``faultline pager`` (:mod:`detector.pager.kafka_io`) reads alert envelopes from
``alerts.isolation`` and ``alerts.escalation`` and hands each to
:meth:`Pager.submit` with a *ticket* for its offset.  The pager routes the
alert to its sinks (:mod:`detector.pager.routing`), passes it through each
sink's storm control (:mod:`detector.pager.storm`), and queues the resulting
notifications on one delivery thread per sink, so a slow or failing sink
never holds up another.  A ticket is done when every sink has delivered what
it asked for — or dead-lettered it with the reason — and only then can its
offset be committed (:class:`OffsetTracker`): at-least-once, and the
``dedup_key`` with each sink's ledger makes a redelivery harmless.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import orjson

from detector.alerts import FiredAlert
from detector.audit import AuditLog
from detector.metrics import PagerMetrics
from detector.pager.config import PagerConfig
from detector.pager.notification import Notification
from detector.pager.payloads import iso
from detector.pager.routing import Router
from detector.pager.sinks import Outcome, Sink, make_sink
from detector.pager.storm import StormControl
from detector.topology import Topology

log = logging.getLogger("faultline.pager")


# -- offsets -----------------------------------------------------------------------------


class _Partition:
    __slots__ = ("pending", "high", "live")

    def __init__(self) -> None:
        self.pending: dict[int, int] = {}   # offset -> deliveries still owed
        self.high = -1                      # newest offset seen
        self.live = True                    # False once revoked: counts for nothing


class OffsetTicket:
    """One consumed message: done when every delivery it asked for is over."""

    __slots__ = ("_tracker", "_part", "offset")

    def __init__(self, tracker: OffsetTracker, part: _Partition, offset: int) -> None:
        self._tracker = tracker
        self._part = part
        self.offset = offset

    @property
    def live(self) -> bool:
        """False once its partition was revoked (:meth:`OffsetTracker.forget`)."""
        return self._part.live

    def hold(self, n: int = 1) -> None:
        """``n`` more deliveries owed before this message is done."""
        with self._tracker.lock:
            pending = self._part.pending
            if self.offset not in pending and self._part.live:
                self._tracker.pending += 1
            pending[self.offset] = pending.get(self.offset, 0) + n

    def done(self) -> None:
        with self._tracker.lock:
            left = self._part.pending.get(self.offset, 0) - 1
            if left > 0:
                self._part.pending[self.offset] = left
            elif self._part.pending.pop(self.offset, None) is not None and self._part.live:
                self._tracker.pending -= 1


class OffsetTracker:
    """Per partition, the offset to commit: the oldest message not yet done (or past the newest).

    >>> t = OffsetTracker()
    >>> a, b, c = (t.ticket("alerts.isolation", 0, o) for o in (5, 6, 7))
    >>> b.done(); c.done(); t.positions()
    {('alerts.isolation', 0): 5}
    >>> a.done(); t.positions()
    {('alerts.isolation', 0): 8}
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._parts: dict[tuple[str, int], _Partition] = {}
        self.pending = 0   # messages not yet done, over the partitions held
        self.peak = 0      # the most there ever were

    def ticket(self, topic: str, partition: int, offset: int) -> OffsetTicket:
        """A ticket holding one delivery (the caller's own); call ``done()`` once dispatched."""
        with self.lock:
            part = self._parts.get((topic, partition))
            if part is None:
                part = self._parts[(topic, partition)] = _Partition()
            part.high = max(part.high, offset)
            if offset not in part.pending:
                self.pending += 1
                self.peak = max(self.peak, self.pending)
            part.pending[offset] = part.pending.get(offset, 0) + 1
        return OffsetTicket(self, part, offset)

    def positions(self) -> dict[tuple[str, int], int]:
        """Commit positions: the next offset to read after a restart, per partition."""
        with self.lock:
            return {tp: (min(p.pending) if p.pending else p.high + 1)
                    for tp, p in self._parts.items() if p.high >= 0}

    def in_flight(self) -> int:
        """Messages consumed and not yet delivered or dead-lettered (O(1))."""
        return self.pending

    def forget(self, tp: tuple[str, int]) -> None:
        """A partition revoked: its tickets may still finish, but count for nothing here."""
        with self.lock:
            part = self._parts.pop(tp, None)
            if part is not None:
                part.live = False
                self.pending -= len(part.pending)


# -- dead letters ------------------------------------------------------------------------


class DeadLetters(Protocol):
    def write(self, key: str, value: dict[str, Any], reason: str, sink: str) -> None: ...


def dead_letter_value(n: Notification, reason: str, wall_now: float) -> dict[str, Any]:
    """A failed notification as a record: why, where, and the envelopes (replayable)."""
    return {"sink": n.sink, "reason": reason, "event": n.event, "dedup_key": n.dedup_key,
            "failed_at": iso(wall_now), "summary": n.summary or None,
            "alerts": [{"topic": a.topic, "value": a.raw} for a in n.alerts()]}


def audit_record(n: Notification) -> dict[str, Any]:
    """What the audit file keeps of a notification: enough to match it to the alerts."""
    return {"sink": n.sink, "event": n.event, "dedup_key": n.dedup_key,
            "severity": n.severity,
            "alerts": [{"topic": a.topic, "dedup_key": a.dedup_key, "status": a.status,
                        "detected_ts": a.detected_ts} for a in n.alerts()]}


class FileDeadLetters:
    """Dead letters as JSON lines in a local file (when there is no dead-letter topic)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def write(self, key: str, value: dict[str, Any], reason: str, sink: str) -> None:
        line = orjson.dumps({"topic": "alerts.deadletter", "key": key, "value": value},
                            default=str) + b"\n"
        with self._lock, open(self.path, "ab") as f:
            f.write(line)


# -- delivery threads --------------------------------------------------------------------


class SinkWorker:
    """One sink's delivery thread: notifications in order, dead letters when given up."""

    def __init__(self, sink: Sink, metrics: PagerMetrics, deadletters: DeadLetters, *,
                 stop: threading.Event, wall: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic,
                 audit: AuditLog | None = None) -> None:
        self.sink = sink
        self.audit = audit
        self.name = sink.name
        self.metrics = metrics
        self.deadletters = deadletters
        self.stop = stop
        self.wall = wall
        self.monotonic = monotonic
        self.queue: queue.Queue[Notification] = queue.Queue()
        self._closing = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"pager-{self.name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def put(self, n: Notification) -> None:
        self.queue.put(n)
        self.metrics.queued(self.name, self.queue.unfinished_tasks)

    def idle(self) -> bool:
        # put() counts a task before a get() can see it; task_done() after delivery.
        return self.queue.unfinished_tasks == 0

    def close(self, timeout_s: float) -> bool:
        """Deliver what is queued (up to ``timeout_s``), then end; True when all went out."""
        self._closing.set()
        self.thread.join(timeout_s)
        return not self.thread.is_alive() and self.queue.empty()

    def _run(self) -> None:
        last_idle = self.monotonic()
        while not self.stop.is_set():
            try:
                n = self.queue.get(timeout=0.2)
            except queue.Empty:
                if self._closing.is_set():
                    return
                if self.monotonic() - last_idle >= 1.0:
                    last_idle = self.monotonic()
                    self._guarded(self.sink.idle)
                continue
            try:
                self.deliver(n)
            finally:
                self.queue.task_done()
                self.metrics.queued(self.name, self.queue.unfinished_tasks)

    def _guarded(self, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001 - a bug in one sink must not end its thread
            log.exception("%s: periodic work failed", self.name)

    def deliver(self, n: Notification) -> None:
        """Deliver one notification now (on this thread, or the caller's in tests)."""
        t0 = self.monotonic()
        try:
            out = self.sink.deliver(n)
        except Exception as exc:  # noqa: BLE001 - dead-letter and go on
            log.exception("%s: delivery failed", self.name)
            out = Outcome(False, "rejected", f"{self.name}: internal error: "
                          f"{type(exc).__name__}: {exc}")
        if out.delivered:
            try:
                n.delivered()
            except Exception:  # noqa: BLE001 - bookkeeping; the delivery stands
                log.exception("%s: after delivery", self.name)
            if out.skipped:
                self.metrics.held_back(self.name, "duplicate")
            else:
                self.metrics.delivered(self.name, self.monotonic() - t0)
                self._audit("delivered", n, "")
            n.done()
            return
        if out.failure == "stopped":
            return  # not done: the offset stays uncommitted and is read again after a restart
        self.metrics.failed(self.name, out.failure)
        log.error("%s: %s %s dead-lettered: %s", self.name, n.event, n.dedup_key, out.reason)
        try:
            self.deadletters.write(n.dedup_key, dead_letter_value(n, out.reason, self.wall()),
                                   out.reason, self.name)
            self.metrics.dead_letter(self.name)
        except Exception:  # noqa: BLE001 - the log above still has it
            log.exception("%s: writing the dead letter failed", self.name)
        self._guarded(lambda: self.sink.dead_lettered(n))
        self._audit("dead_lettered", n, out.reason)
        n.done()

    def _audit(self, kind: str, n: Notification, reason: str) -> None:
        if self.audit is None:
            return
        record = audit_record(n)
        if reason:
            record["reason"] = reason
        try:
            self.audit.append(kind, record)
        except Exception:  # noqa: BLE001 - a full disk must not stop paging; it is logged
            log.exception("%s: appending to the audit file failed", self.name)


# -- the pager ---------------------------------------------------------------------------


class Pager:
    """Routing, storm control and delivery threads for every configured sink."""

    def __init__(self, config: PagerConfig, metrics: PagerMetrics, deadletters: DeadLetters,
                 *, topology: Topology | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time, rng: random.Random | None = None,
                 sinks: dict[str, Sink] | None = None,
                 sleep: Callable[[float], bool] | None = None,
                 audit: AuditLog | None = None) -> None:
        self.config = config
        self.metrics = metrics
        self.clock = clock
        self.router = Router(config)
        self.stop = threading.Event()
        state_dir = Path(config.state_dir) if config.state_dir else None
        self.sinks = sinks if sinks is not None else {
            name: make_sink(sc, metrics, state_dir=state_dir, stop=self.stop, rng=rng, wall=wall,
                            monotonic=clock, sleep=sleep)
            for name, sc in config.sinks.items()}
        now = clock()
        if state_dir is not None:
            state_dir.mkdir(parents=True, exist_ok=True)
        self.storms = {
            name: StormControl(name, sc.storm, now=now, topology=topology,
                               on_held=lambda reason, k, name=name: metrics.held_back(
                                   name, reason, k),
                               state_path=state_dir / f"pager-{name}-groups.json"
                               if state_dir is not None else None)
            for name, sc in config.sinks.items() if sc.storm.enabled}
        self._backlog: OrderedDict[str, tuple[FiredAlert, list[Any]]] = OrderedDict()
        self.workers = {name: SinkWorker(sink, metrics, deadletters, stop=self.stop, wall=wall,
                                         audit=audit)
                        for name, sink in self.sinks.items()}

    def start(self) -> None:
        for w in self.workers.values():
            w.start()

    def submit(self, alert: FiredAlert, ticket: Any, *, backlog: bool = False) -> None:
        """One alert message; ``ticket`` (or None) is done once all its sinks are through.

        ``backlog``: the message is behind newer ones already on its partition (a pager
        catching up).  A firing alert from the backlog is held until :meth:`release_backlog`;
        if its resolve comes first, the trigger is dropped and only the resolve goes on:
        Alertmanager records the alert once, as resolved, and PagerDuty and the webhook,
        whose ledgers never saw the trigger, send nothing.
        """
        if backlog and alert.status == "firing":
            held = self._backlog.pop(alert.dedup_key, None)
            tickets = [*(held[1] if held else []), ticket]
            self._backlog[alert.dedup_key] = (alert, tickets)  # the newest evidence
            return
        if alert.status == "resolved":
            held = self._backlog.pop(alert.dedup_key, None)
            if held is not None:
                self.metrics.cleared_in_backlog()
                for t in held[1]:
                    if t is not None:
                        t.done()
        self._route(alert, ticket)

    def release_backlog(self) -> int:
        """Send the firing alerts held from a backlog (the consumer caught up)."""
        n = len(self._backlog)
        while self._backlog:
            _, (alert, tickets) = self._backlog.popitem(last=False)
            for t in tickets[:-1]:  # older copies of the same alert: the newest speaks for them
                if t is not None:
                    t.done()
            self._route(alert, tickets[-1])
        return n

    def drop_revoked(self) -> int:
        """After a revoke: drop what storm control and the backlog still hold from the
        revoked partitions (their tickets no longer live; uncommitted, the new owner reads
        them again), so that no trigger goes out here whose resolve the new owner gets
        (revA34 F3).  Returns how many alert messages were dropped."""
        n = sum(storm.drop_revoked() for storm in self.storms.values())
        for key in [k for k, (_, tickets) in self._backlog.items()
                    if not any(getattr(t, "live", True) for t in tickets)]:
            del self._backlog[key]
            n += 1
        return n

    def backlog_size(self) -> int:
        return len(self._backlog)

    def _route(self, alert: FiredAlert, ticket: Any) -> None:
        self.metrics.consumed(alert.topic, alert.status)
        severity = self.router.severity(alert.topic, alert.kind)
        sinks = self.router.route(alert.topic, alert.kind, alert.cause, severity,
                                  alert.tenant, alert.cluster, alert.status)
        if not sinks:
            self.metrics.unrouted()
        if ticket is not None and sinks:
            ticket.hold(len(sinks))
        now = self.clock()
        for name in sinks:
            storm = self.storms.get(name)
            if storm is None:
                notes = [Notification(name, "trigger" if alert.status == "firing" else "resolve",
                                      alert.dedup_key, severity, alert, tickets=[ticket])]
            else:
                notes = storm.offer(alert, severity, ticket, now=now)
            for n in notes:
                self.workers[name].put(n)
        if ticket is not None:
            ticket.done()  # the caller's own hold

    def tick(self) -> None:
        """Send what storm control has let go by now (call often: every poll)."""
        now = self.clock()
        for name, storm in self.storms.items():
            for n in storm.due(now):
                self.workers[name].put(n)

    def next_due(self) -> float:
        now = self.clock()
        return min((s.next_due(now) for s in self.storms.values()), default=float("inf"))

    def idle(self) -> bool:
        """Nothing queued or in delivery on any sink."""
        return all(w.idle() for w in self.workers.values())

    def close(self, timeout_s: float) -> bool:
        """Finish queued deliveries (grouped alerts still waiting are left for the next run)."""
        deadline = time.monotonic() + timeout_s
        ok = True
        for w in self.workers.values():
            ok = w.close(max(0.1, deadline - time.monotonic())) and ok
        self.stop.set()
        for w in self.workers.values():
            w.thread.join(5)
        return ok
