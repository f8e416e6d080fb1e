"""Run the engine in one process over incident logs: the embedded default of faultline.

Telemetry records go into a fresh :class:`~detector.engine.Engine` per log
(:meth:`~detector.engine.Engine.ingest`: decoded, dead-lettered and salvaged
by the same stage as a Kafka worker's), and every alert is handed to
``on_alert`` as it fires.  Labels are collected (never shown to the
engine) so the result can be scored.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from detector.alerts import ALERT_TOPICS, Alert, FiredAlert, Label
from detector.engine import Engine
from detector.events import TELEMETRY_TOPICS, InvalidMessage
from detector.thresholds import Thresholds
from detector.topology import Topology
from replay.log import TOPOLOGY_TOPIC, InvalidRecord, read_records
from replay.scoring import Scorecard, score


@dataclass
class LogResult:
    """What one log gave: its alerts, its labels, and what was wrong with its input."""

    path: str
    alerts: list[Alert] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    events: int = 0
    invalid: Counter[str] = field(default_factory=Counter)
    first_ts: float | None = None
    last_ts: float | None = None
    seconds: float = 0.0
    engine_stats: dict[str, object] = field(default_factory=dict)
    records: int = 0    # lines that were {topic, value} records, of any topic
    damaged: str = ""   # why the file could not be read to its end, when it could not

    def unreadable(self) -> str:
        """Why nothing could be read from this log ("" when something could)."""
        if self.records:
            return ""
        if self.damaged:
            return self.damaged
        if self.invalid:
            return (f"no line is a {{topic, value}} record ({sum(self.invalid.values())} "
                    "unreadable): is it an incident log?")
        return "the file is empty"

    def fired(self) -> list[FiredAlert]:
        return [FiredAlert.from_record(a.topic, a.to_dict()) for a in self.alerts]

    def scorecard(self) -> Scorecard:
        return score(self.labels, self.fired())


def replay_log(path: str | os.PathLike[str], *, topology: Topology | None = None,
               thresholds: Thresholds | None = None,
               on_alert: Callable[[Alert, float], None] | None = None,
               on_progress: Callable[[int], None] | None = None,
               home_cluster: str | None = None,
               topologies: Mapping[str, Topology] | None = None) -> LogResult:
    """Replay one log through a fresh engine (``home_cluster``, ``topologies``: see Engine)."""
    res = LogResult(str(path))
    eng = Engine(thresholds, topology, home_cluster, topologies)
    t0 = time.perf_counter()
    telemetry = frozenset(TELEMETRY_TOPICS)

    def emit(alerts: list[Alert]) -> None:
        for a in alerts:
            res.alerts.append(a)
            if on_alert is not None:
                on_alert(a, res.first_ts or a.detected_ts)

    for rec in read_records(path):
        if isinstance(rec, InvalidRecord):
            if rec.damaged:
                res.damaged = rec.reason
            else:
                res.invalid["not a record"] += 1
            continue
        res.records += 1
        topic = rec.topic
        if topic in telemetry:
            alerts: list[Alert] = []
            try:
                ev = eng.ingest(topic, rec.value, alerts)
            except InvalidMessage as exc:  # dead-lettered by the service, with this reason
                res.invalid[f"{topic} {exc.field or 'message'}"] += 1
                emit(alerts)  # what it salvaged (a NaN loss)
                continue
            except Exception as exc:  # noqa: BLE001 - one bad record must not end a replay
                res.invalid[f"{topic} engine error {type(exc).__name__}"] += 1
                emit(alerts)
                continue
            if eng.rejected:  # out of range for the log's own clock
                for refused in eng.rejected:
                    res.invalid[f"{refused.topic} {refused.reason.partition(':')[0]}"] += 1
                res.events -= len(eng.rejected)
                eng.rejected.clear()
            res.events += 1
            if res.first_ts is None:
                res.first_ts = ev.ts
            emit(alerts)
            if on_progress is not None and res.events % 50_000 == 0:
                on_progress(res.events)
        elif topic == "labels":
            try:
                res.labels.append(Label.from_dict(rec.value))
            except ValueError as exc:
                res.invalid[f"labels: {exc}"[:80]] += 1
        elif topic in ALERT_TOPICS or topic == TOPOLOGY_TOPIC:
            continue  # alerts of an earlier run are output; the topology is read up front
        else:
            res.invalid[f"unknown topic {topic[:40]!r}"] += 1
    emit(eng.finish())
    for refused in eng.rejected:
        res.invalid[f"{refused.topic} {refused.reason.partition(':')[0]}"] += 1
    res.last_ts = eng.clock if res.events else None
    res.seconds = time.perf_counter() - t0
    res.engine_stats = eng.stats()
    return res
