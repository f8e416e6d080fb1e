"""The text table and the JSON form of a corpus evaluation (:mod:`replay.evaluation.evaluate`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from detector.alerts import ISOLATION, FiredAlert
from replay.evaluation.matrix import format_matrix, matrix_rows, slowdown_bins
from replay.evaluation.reliability import format_summary
from replay.scoring import KindRow, _iso

if TYPE_CHECKING:
    from replay.evaluation.evaluate import Evaluation

_MISSED_SHOWN = 40
_FP_SHOWN = 30


def _num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _table(head: tuple[str, ...], widths: tuple[int, ...],
           rows: list[tuple[str, ...]]) -> list[str]:
    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
    return [line(head)] + [line(r) for r in rows]


def _kind_rows(rows: list[KindRow]) -> list[str]:
    head = ("kind", "faults", "caught", "missed", "problems", "FP", "precision", "recall",
            "lat_med_s", "lat_p95_s", "lat_max_s", "attrib")
    widths = (13, 6, 6, 6, 8, 4, 9, 6, 9, 9, 9, 6)
    return _table(head, widths, [
        (r.kind, str(r.faults), str(r.caught), str(r.missed), str(r.problems),
         str(r.false_positives), _num(r.precision), _num(r.recall), _num(r.latency_median_s, 2),
         _num(r.latency_p95_s, 2), _num(r.latency_max_s, 2), _num(r.attribution))
        for r in rows])


def _group_rows(title: str, groups: list[dict[str, Any]]) -> list[str]:
    head = (title, "faults", "caught", "recall", "lat_med_s", "lat_p95_s", "lat_max_s", "attrib")
    widths = (28, 6, 6, 6, 9, 9, 9, 6)
    return _table(head, widths, [
        (g["group"], str(g["faults"]), str(g["caught"]), _num(g["recall"]),
         _num(g["latency_median_s"], 2), _num(g["latency_p95_s"], 2),
         _num(g["latency_max_s"], 2), _num(g["attribution"])) for g in groups])


def _signals(a: FiredAlert) -> str:
    ev = a.raw.get("evidence") or {}
    sig = ev.get("signals")
    if isinstance(sig, list):
        parts = []
        for s in sig[:4]:
            if isinstance(s, dict):
                extra = {k: v for k, v in s.items() if k not in ("signal", "unit", "ts")}
                short = ",".join(f"{k}={v}" for k, v in list(extra.items())[:3])
                parts.append(f"{s.get('signal')}[{short}]")
        return " ".join(parts)
    if "rule" in ev:
        return f"{ev['rule']} value={ev.get('value')}"
    if "relative_score" in ev:
        return f"relative_score={ev['relative_score']}"
    return ""


def format_evaluation(ev: Evaluation) -> str:
    """The report ``faultline evaluate`` prints."""
    from replay.evaluation.evaluate import FAULTLINE, RELIABILITY_CONDITIONS, fault_tables

    m = ev.manifest
    fault_logs = [lg for lg in ev.logs if not lg.healthy]
    healthy = [lg for lg in ev.logs if lg.healthy]
    topologies = sorted({lg.entry.get("topology_name", "?") for lg in ev.logs})
    seeds = sorted(lg.entry["seed"] for lg in ev.logs)
    n_faults = sum(len(lg.labels) for lg in ev.logs)
    events = sum(lg.events for lg in ev.logs)
    out = [f"corpus {ev.corpus}: {len(ev.logs)} logs ({len(fault_logs)} with faults, "
           f"{len(healthy)} healthy), {n_faults} faults, {events:,} events, topologies "
           f"{', '.join(topologies)}; scale {m.get('scale', '?')}, seeds "
           f"{seeds[0] if seeds else '-'}..{seeds[-1] if seeds else '-'}; evaluated in "
           f"{ev.seconds:.0f} s", ""]
    fl = ev.detectors.get(FAULTLINE)
    cells = matrix_rows(ev.logs, ev.fault_info, FAULTLINE) if fl is not None else []
    crashed = [lg for lg in ev.logs if lg.error]
    if crashed:
        out.append(f"REPLAY CRASHED on {len(crashed)} log(s); their faults count as missed:")
        out += [f"  {lg.entry['file']}: {lg.error}" for lg in crashed]
        out.append("")
    if cells:
        out.append("faultline, per cell of the variation matrix (each cell scored on its own; "
                   "targets: P and R >= 0.97 every kind, attribution >= 0.95, hardware <= 1 s, "
                   "gross from start <= 3 steps, 10 % slowdown <= 10 steps median, 0 workload "
                   "pages, <= 1 false isolation / 1,000 GPU-days)")
        out += format_matrix(cells)
        out.append("slowdown faults (thermal, power, silent_slow; not from job start) over all "
                   "cells, by size: steps to detect")
        for b in slowdown_bins(ev.logs, ev.fault_info, FAULTLINE):
            out.append(f"  {b['magnitude']}: {b['caught']} caught, {b['missed']} missed, median "
                       f"{_num(b['steps_median'], 1)} steps, p90 {_num(b['steps_p90'], 1)}")
        out.append("")
    if fl is not None:
        out.append("faultline, per fault kind (DESIGN.md scoring; latency = detected_ts - "
                   "start_ts, event time)")
        out += _kind_rows([*fl.card.rows, fl.card.total])
        tables = fault_tables(ev, FAULTLINE)
        out.append("")
        out.append("faultline, per simulated fault")
        out += _group_rows("fault kind", tables["by_fault_kind"])
        for title, key in (("shape (not step)", "by_shape"), ("slowdown size", "by_magnitude"),
                           ("benign event at onset", "by_onset_benign"),
                           ("topology", "by_topology")):
            if tables[key]:
                out.append("")
                out += _group_rows(title, tables[key])
        out.append("")
        out.append(_healthy_line(ev, FAULTLINE))
        if fl.reliability is not None:
            out.append("")
            out.append("faultline, confidence against observed precision (a problem is real when "
                       "it caught a labelled fault, DESIGN.md's rule)")
            out += format_summary(fl.reliability, RELIABILITY_CONDITIONS)
    out.append("")
    out.append("faultline and the baselines on the same corpus, same scorer")
    head = ("detector", "kind", "faults", "caught", "FP", "precision", "recall", "lat_med_s",
            "lat_p95_s", "false_iso/1k_GPU-d")
    widths = (17, 10, 6, 6, 5, 9, 6, 9, 9, 18)
    rows = []
    for name, d in ev.detectors.items():
        per_1k = d.false_isolations_per_1k_gpu_days
        for i, r in enumerate([d.card.total, *d.card.rows]):
            rows.append((name if i == 0 else "", r.kind, str(r.faults), str(r.caught),
                         str(r.false_positives), _num(r.precision), _num(r.recall),
                         _num(r.latency_median_s, 2), _num(r.latency_p95_s, 2),
                         (_num(per_1k, 1) if per_1k is not None else "-") if i == 0 else ""))
    out += _table(head, widths, rows)
    for name in ev.detectors:
        if name != FAULTLINE:
            out.append(_healthy_line(ev, name))
    out.append("")
    if all(d.ettr is None for d in ev.detectors.values()):
        out.append("ETTR estimate: not made (it needs the job slowdowns measured in the "
                   "baselines' pass; run without --no-baselines)")
        if fl is not None:
            out.append("")
            out += _misses(ev, FAULTLINE)
        return "\n".join(out)
    out.append(f"ETTR estimate, a job of {ev.model.job_gpus:,} GPUs")
    out += ev.model.describe().splitlines()
    head2 = ("detector", "ETTR", "faults_only", "E[cost]/fault_min", "faults/day",
             "false_iso/fault")
    rows2 = []
    for name, d in ev.detectors.items():
        e = d.ettr
        if e is None:
            continue
        rows2.append((name, f"{e.ettr:.4f}", f"{e.ettr_faults_only:.4f}",
                      f"{e.expected_cost_s / 60:.1f}", f"{e.faults_per_day:.2f}",
                      f"{e.false_isolations_per_fault:.3f}"))
    out += _table(head2, (17, 7, 11, 17, 10, 13), rows2)
    if fl is not None:
        out.append("")
        out += _misses(ev, FAULTLINE)
    return "\n".join(out)


def _healthy_line(ev: Evaluation, name: str) -> str:
    d = ev.detectors[name]
    healthy = [lg for lg in ev.logs if lg.healthy]
    if not healthy:
        return f"{name}: no healthy logs in the corpus: no false-alarm rate"
    gpus = sum(lg.gpus for lg in healthy)
    rate = d.false_isolations_per_1k_gpu_days
    return (f"{name} on healthy logs: {len(healthy)} logs, {gpus} GPUs, "
            f"{d.healthy_gpu_days:.2f} GPU-days: {d.healthy_false_isolations} false isolations "
            f"= {_num(rate, 1)} per 1,000 GPU-days (target <= 1), {d.healthy_escalations} "
            f"escalations; over all logs {d.all_false_isolations} false isolations in "
            f"{d.all_gpu_days:.2f} GPU-days")


def _misses(ev: Evaluation, name: str) -> list[str]:
    d = ev.detectors[name]
    info = ev.fault_info
    missed = [f for f in d.card.faults if not f.caught]
    out = [f"{name}: missed faults: {len(missed)}"]
    for f in missed[:_MISSED_SHOWN]:
        i = info.get(f.label.fault_id, {})
        out.append(f"  {f.label.fault_id:<28} {i.get('shape', '?'):<12} "
                   f"m={i.get('magnitude', 0):.3f} {f.label.scope.key:<24} "
                   f"{i.get('topology', '?'):<12} dur={i.get('duration_s', 0):.0f}s"
                   + (f" during {i['during_benign']}" if i.get("during_benign") else ""))
    if len(missed) > _MISSED_SHOWN:
        out.append(f"  ... {len(missed) - _MISSED_SHOWN} more in --json")
    wrong = [f for f in d.card.faults if f.caught and f.attributed is False]
    out.append(f"{name}: caught with the wrong cause: {len(wrong)}")
    for f in wrong[:_MISSED_SHOWN]:
        by = f.by
        assert by is not None
        out.append(f"  {f.label.fault_id:<28} label {f.label.cause:<12} alert {by.cause:<12} "
                   f"{by.scope.key}")
    fps = d.card.false_positives
    by_kind = Counter(f"{'isolation' if a.topic == ISOLATION else 'escalation'} {a.kind}/"
                      f"{a.cause} {a.scope.level}" for a in fps)
    out.append(f"{name}: false positives: {len(fps)}"
               + (" (" + "; ".join(f"{k} x{n}" for k, n in by_kind.most_common()) + ")"
                  if fps else ""))
    for a, log in list(zip(fps, d.false_positive_logs, strict=True))[:_FP_SHOWN]:
        out.append(f"  {'iso' if a.topic == ISOLATION else 'esc'} {a.kind}/{a.cause:<12} "
                   f"{a.scope.key:<26} {_iso(a.detected_ts)} {Path(log).name} "
                   f"{_signals(a)}"[:220])
    if len(fps) > _FP_SHOWN:
        out.append(f"  ... {len(fps) - _FP_SHOWN} more in --json")
    return out


def evaluation_dict(ev: Evaluation) -> dict[str, Any]:
    """The machine-readable form of an evaluation (``faultline evaluate --json``)."""
    from replay.evaluation.evaluate import fault_tables

    dets = {}
    for name, d in ev.detectors.items():
        faults = []
        for f in d.card.faults:
            row = f.to_dict()
            i = ev.fault_info.get(f.label.fault_id, {})
            row.update({"sim_kind": i.get("kind"), "shape": i.get("shape"),
                        "magnitude": i.get("magnitude"), "topology": i.get("topology"),
                        "during_benign": i.get("during_benign"), "log": i.get("log"),
                        "measured_slowdown": i.get("slowdown")})
            faults.append(row)
        dets[name] = {
            "rows": [r.to_dict() for r in d.card.rows], "total": d.card.total.to_dict(),
            **fault_tables(ev, name),
            "healthy": {"gpu_days": d.healthy_gpu_days,
                        "false_isolations": d.healthy_false_isolations,
                        "escalations": d.healthy_escalations,
                        "false_isolations_per_1k_gpu_days": d.false_isolations_per_1k_gpu_days},
            "all_logs": {"gpu_days": d.all_gpu_days,
                         "false_isolations": d.all_false_isolations},
            "ettr": d.ettr.to_dict() if d.ettr else None,
            "reliability": d.reliability,
            "faults": faults,
            "false_positives": [{"topic": a.topic, "dedup_key": a.dedup_key, "kind": a.kind,
                                 "cause": a.cause, "scope": a.scope.key,
                                 "detected_ts": a.detected_ts, "log": log,
                                 "signals": _signals(a)}
                                for a, log in zip(d.card.false_positives,
                                                  d.false_positive_logs, strict=True)],
        }
    return {
        "corpus": ev.corpus, "scale": ev.manifest.get("scale"),
        "purpose": ev.manifest.get("purpose"), "seconds": round(ev.seconds, 1),
        "matrix": {name: matrix_rows(ev.logs, ev.fault_info, name) for name in ev.detectors},
        "slowdown_bins": {name: slowdown_bins(ev.logs, ev.fault_info, name)
                          for name in ev.detectors},
        "logs": [{"file": lg.entry["file"], "seed": lg.entry["seed"], "error": lg.error,
                  "topology": lg.entry.get("topology_name"), "gpus": lg.gpus,
                  "events": lg.events, "gpu_days": round(lg.gpu_days, 4),
                  "faults": len(lg.labels), "seconds": lg.seconds} for lg in ev.logs],
        "ettr_model": {k: getattr(ev.model, k) for k in ev.model.field_names()},
        "ettr_formula": ev.model.describe(),
        "detectors": dets,
    }
