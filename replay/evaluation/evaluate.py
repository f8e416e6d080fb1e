"""``faultline evaluate``: replay a corpus through faultline and the baselines, score, report.

Every log of a corpus (see :mod:`replay.evaluation.corpus`) is replayed through a
fresh engine exactly as ``faultline replay`` does it, and — in a second pass
over the same decoded events — through each baseline of
:mod:`replay.evaluation.baselines`. Each log is scored on its own with the project's
scorer and the scorecards are combined (:func:`replay.evaluation.score.combine`).
Logs without faults measure false alarms: false isolations per 1,000
GPU-days, where GPU-days = GPUs x event-time seconds / 86,400. Logs run in
parallel processes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from detector.alerts import ESCALATION, ISOLATION, FiredAlert, Label
from detector.decoding import decode_value
from detector.events import TELEMETRY_TOPICS, InvalidMessage, StepSample
from detector.thresholds import Thresholds
from detector.topology import Topology
from replay.evaluation.baselines import BASELINES
from replay.evaluation.corpus import read_manifest, resolve_topology
from replay.evaluation.ettr import EttrModel, EttrResult, FaultOutcome, estimate
from replay.evaluation.reliability import problem_rows, summary
from replay.evaluation.score import (
    SLOWDOWN_KINDS,
    breakdown,
    combine,
    false_isolations,
    magnitude_bin,
    score,
)
from replay.log import InvalidRecord, read_records
from replay.runner import replay_log
from replay.scoring import Scorecard

FAULTLINE = "faultline"
RELIABILITY_CONDITIONS = ("topology", "interval")  # what evidence.conditions names


@dataclass
class LogEval:
    """What one log gave every detector: alerts, labels, event-time span, measured slowdowns."""

    entry: dict[str, Any]
    labels: list[Label]
    alerts: dict[str, list[FiredAlert]]
    events: int
    first_ts: float
    last_ts: float
    seconds: dict[str, float]
    slowdown: dict[str, float] = field(default_factory=dict)
    error: str = ""  # the engine raised on this log: its faults count as missed

    @property
    def gpus(self) -> int:
        return int(self.entry["job"]["gpus"])

    @property
    def gpu_days(self) -> float:
        return self.gpus * max(0.0, self.last_ts - self.first_ts) / 86400.0

    @property
    def healthy(self) -> bool:
        return not self.labels


def evaluate_log(path: str | os.PathLike[str], entry: dict[str, Any], topology: Topology | None,
                 *, baselines: bool = True, thresholds: Thresholds | None = None) -> LogEval:
    """Replay one log through faultline and (optionally) every baseline."""
    res = replay_log(path, topology=topology, thresholds=thresholds)
    alerts = {FAULTLINE: res.fired()}
    seconds = {FAULTLINE: round(res.seconds, 2)}
    ev = LogEval(entry, res.labels, alerts, res.events, res.first_ts or 0.0,
                 res.last_ts or 0.0, seconds)
    if baselines:
        t0 = time.perf_counter()
        dets = {name: make() for name, make in BASELINES.items()}
        out: dict[str, list[Any]] = {name: [] for name in dets}
        steps: list[tuple[float, float]] = []
        telemetry = frozenset(TELEMETRY_TOPICS)
        for rec in read_records(path):
            if isinstance(rec, InvalidRecord) or rec.topic not in telemetry:
                continue
            try:
                e = decode_value(rec.topic, rec.value)
            except InvalidMessage:
                continue
            if type(e) is StepSample and e.rank == 0:
                steps.append((e.ts, e.step_ms))
            for name, det in dets.items():
                out[name].extend(det.feed(e))
        for name, det in dets.items():
            out[name].extend(det.finish())
            alerts[name] = [FiredAlert.from_record(a.topic, a.to_dict()) for a in out[name]]
        seconds["baselines"] = round(time.perf_counter() - t0, 2)
        ev.slowdown = measured_slowdowns(res.labels, steps)
    return ev


def measured_slowdowns(labels: Sequence[Label], steps: Sequence[tuple[float, float]]
                       ) -> dict[str, float]:
    """How much slower the job ran during each fault than in the minute before it.

    ``mean(min(step_ms, 2 * base)) / base - 1`` over the fault's window, ``base`` the
    median step time of the 60 s before; steps are clipped at twice the base so a
    checkpoint stall inside the window does not count as the fault's.
    """
    if not steps:
        return {}
    arr = np.array(sorted(steps))
    ts, ms = arr[:, 0], arr[:, 1]
    out = {}
    for lab in labels:
        before = ms[(ts >= lab.start_ts - 60.0) & (ts < lab.start_ts)]
        during = ms[(ts >= lab.start_ts) & (ts <= lab.end_ts)]
        if len(before) < 5 or len(during) == 0:
            continue
        base = float(np.median(before))
        out[lab.fault_id] = round(max(0.0, float(np.minimum(during, 2 * base).mean()) / base
                                      - 1.0), 4)
    return out


def evaluate_task(task: tuple[str, dict[str, Any], str | None, bool]) -> LogEval:
    """evaluate_log for a process pool: (log path, manifest entry, topology path, baselines)."""
    path, entry, topo_path, baselines = task
    topology = Topology.load(topo_path) if topo_path else None
    try:
        return evaluate_log(path, entry, topology, baselines=baselines)
    except Exception as exc:  # noqa: BLE001 - one log's crash must not hide the others' figures
        labels = []
        for rec in read_records(path):
            if not isinstance(rec, InvalidRecord) and rec.topic == "labels":
                labels.append(Label.from_dict(rec.value))
        return LogEval(entry, labels, {FAULTLINE: []}, 0, 0.0,
                       float(entry.get("duration_s", 0.0)), {FAULTLINE: 0.0},
                       error=f"{type(exc).__name__}: {exc}"[:300])


# -- the corpus ----------------------------------------------------------------------------


@dataclass
class DetectorResult:
    """One detector over the whole corpus."""

    name: str
    card: Scorecard  # fault logs and healthy logs together
    healthy_gpu_days: float
    healthy_false_isolations: int
    healthy_escalations: int
    all_gpu_days: float
    all_false_isolations: int
    ettr: EttrResult | None = None
    false_positive_logs: list[str] = field(default_factory=list)  # per card.false_positives
    # confidence against observed precision (replay.evaluation.reliability.summary)
    reliability: dict[str, Any] | None = None

    @property
    def false_isolations_per_1k_gpu_days(self) -> float | None:
        if self.healthy_gpu_days <= 0:
            return None
        return 1000.0 * self.healthy_false_isolations / self.healthy_gpu_days


@dataclass
class Evaluation:
    """Everything ``faultline evaluate`` prints, and its JSON form."""

    corpus: str
    manifest: dict[str, Any]
    logs: list[LogEval]
    detectors: dict[str, DetectorResult]
    fault_info: dict[str, dict[str, Any]]
    model: EttrModel
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        from replay.evaluation.report import evaluation_dict
        return evaluation_dict(self)

    def format(self) -> str:
        from replay.evaluation.report import format_evaluation
        return format_evaluation(self)


def evaluate_corpus(corpus_dir: str | os.PathLike[str], *,
                    topology_map: dict[str, str] | None = None, workers: int = 2,
                    baselines: bool = True, model: EttrModel | None = None,
                    progress: Callable[[str], None] | None = None) -> Evaluation:
    """Replay and score every log of a corpus; logs run in ``workers`` processes."""
    t0 = time.perf_counter()
    cdir = Path(corpus_dir)
    manifest = read_manifest(cdir)
    tasks = []
    for e in manifest["logs"]:
        # a log of the topology=none axis is replayed with no topology at all
        topo = (None if e["topology"] is None else
                resolve_topology(e["topology"], cdir, topology_map, e.get("topology_name")))
        path = cdir / e["file"]
        if not path.is_file():
            raise FileNotFoundError(f"{cdir}: the manifest names {e['file']}, which is missing")
        tasks.append((str(path), e, None if topo is None else str(topo), baselines))
    order = sorted(range(len(tasks)), key=lambda i: -int(tasks[i][1].get("records", 0)))
    logs: dict[int, LogEval] = {}

    def note(i: int) -> None:
        if progress:
            lg = logs[i]
            took = ", ".join(f"{k} {v:.0f} s" for k, v in lg.seconds.items())
            crashed = f"; CRASHED: {lg.error}" if lg.error else ""
            progress(f"  replayed {lg.entry['file']}: {lg.events:,} events ({took}){crashed}")

    if workers > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {i: pool.submit(evaluate_task, tasks[i]) for i in order}
            for i in order:
                logs[i] = futures[i].result()
                note(i)
    else:
        for i in order:
            logs[i] = evaluate_task(tasks[i])
            note(i)
    log_list = [logs[i] for i in range(len(tasks))]
    return assemble(str(cdir), manifest, log_list, model or EttrModel(),
                    time.perf_counter() - t0)


def assemble(corpus: str, manifest: dict[str, Any], logs: list[LogEval], model: EttrModel,
             seconds: float) -> Evaluation:
    """Score every detector on every log, combine, and estimate ETTR."""
    info: dict[str, dict[str, Any]] = {}
    for lg in logs:
        for f in lg.entry.get("faults", []):
            info[f["fault_id"]] = {**f, "topology": lg.entry.get("topology_name"),
                                   "log": lg.entry["file"],
                                   "slowdown": lg.slowdown.get(f["fault_id"])}
    names = list(dict.fromkeys(n for lg in logs for n in lg.alerts))
    detectors = {}
    all_days = sum(lg.gpu_days for lg in logs)
    healthy_days = sum(lg.gpu_days for lg in logs if lg.healthy)
    for name in names:
        cards = [score(lg.labels, lg.alerts.get(name, [])) for lg in logs]
        healthy = [c for c, lg in zip(cards, logs, strict=True) if lg.healthy]
        card = combine(cards)
        d = DetectorResult(
            name, card, healthy_days, sum(false_isolations(c) for c in healthy),
            sum(1 for c in healthy for a in c.false_positives if a.topic == ESCALATION),
            all_days, false_isolations(card),
            false_positive_logs=[lg.entry["file"] for c, lg in zip(cards, logs, strict=True)
                                 for _ in c.false_positives])
        outcomes = [FaultOutcome(info.get(r.label.fault_id, {}).get("kind", r.label.kind),
                                 r.caught, r.latency_s,
                                 info.get(r.label.fault_id, {}).get("slowdown") or 0.0)
                    for r in card.faults]
        # fail-slow costs need the slowdowns the baselines' pass measures
        if name == FAULTLINE:  # the baselines' alerts carry no calibrated confidence
            d.reliability = summary([r for c, lg in zip(cards, logs, strict=True)
                                     for r in problem_rows(lg.alerts.get(name, []),
                                                           c.false_positives,
                                                           lg.entry["file"])],
                                    RELIABILITY_CONDITIONS)
        measured = any(lg.slowdown for lg in logs) or not outcomes
        d.ettr = estimate(outcomes, model, d.all_false_isolations) if measured else None
        detectors[name] = d
    return Evaluation(corpus, manifest, logs, detectors, info, model, seconds)


def fault_tables(ev: Evaluation, name: str) -> dict[str, list[dict[str, Any]]]:
    """The breakdowns of one detector's faults: by simulated kind, shape, magnitude, ..."""
    faults = ev.detectors[name].card.faults
    info = ev.fault_info
    return {
        "by_fault_kind": breakdown(faults, info, lambda f: f.get("kind")),
        "by_shape": breakdown(faults, info, lambda f: f"{f['kind']} {f['shape']}"
                              if f.get("kind") and f.get("shape") != "step" else None),
        "by_magnitude": breakdown(faults, info, magnitude_bin),
        "by_onset_benign": breakdown(faults, info, lambda f: (
            f"during {f['during_benign']}" if f.get("during_benign") else "no benign at onset")
            if f else None),
        "by_topology": breakdown(faults, info, lambda f: f.get("topology")),
    }


__all__ = ["FAULTLINE", "ISOLATION", "SLOWDOWN_KINDS", "DetectorResult", "Evaluation", "LogEval",
           "assemble", "evaluate_corpus", "evaluate_log", "evaluate_task", "fault_tables",
           "measured_slowdowns"]
