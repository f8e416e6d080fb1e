"""``faultline evaluate --html``: the evaluation as one self-contained page.

The same figures as the text report (per-cell matrix, per-kind scorecard, per simulated
fault, faultline against the baselines, ETTR), as tables, with the detection latency
distribution of each fault kind plotted (:func:`replay.report.plots.latency_distribution`).
"""

from __future__ import annotations

import html
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from replay.report import plots
from replay.report.page import _HEAD, scorecard_html


def table(head: Sequence[str], rows: Sequence[Sequence[Any]], cls: str = "card") -> str:
    """An HTML table; numbers to 3 decimals, None as a dash."""
    def cell(v: Any) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "—"
        if isinstance(v, float):
            return f"{v:.3f}"
        return html.escape(str(v))
    return (f'<table class="{cls}"><tr>' + "".join(f"<th>{html.escape(h)}</th>" for h in head)
            + "</tr>" + "".join("<tr>" + "".join(f"<td>{cell(c)}</td>" for c in r) + "</tr>"
                                for r in rows) + "</table>")


def _groups(groups: list[dict[str, Any]], title: str) -> str:
    return table((title, "faults", "caught", "recall", "latency median s", "p95 s", "max s",
                  "attribution"),
                 [(g["group"], g["faults"], g["caught"], g["recall"], g["latency_median_s"],
                   g["latency_p95_s"], g["latency_max_s"], g["attribution"]) for g in groups])


def _matrix(cells: list[dict[str, Any]]) -> str:
    rows = []
    for r in cells:
        wp, wr = r.get("worst_precision"), r.get("worst_recall")
        rows.append((f"{r['axis']}={r['value']}", r["logs"], r["faults"], r["gpu_days"],
                     r["precision"], r["recall"],
                     f"{wp[0]} {wp[1]:.3f}" if wp and wp[1] is not None else None,
                     f"{wr[0]} {wr[1]:.3f}" if wr and wr[1] is not None else None,
                     r["attribution"], r.get("hardware_latency_max_s"),
                     r.get("slow10_steps_median"),
                     f"{r['false_positives_isolation']}/{r['false_positives_escalation']}",
                     r.get("false_isolations_per_1k_gpu_days"),
                     ", ".join(r.get("misses_targets") or []) or "none"))
    return table(("axis=value", "logs", "faults", "GPU-days", "precision", "recall",
                  "worst kind P", "worst kind R", "attribution", "hardware max s",
                  "10 % slowdown median steps", "FP iso/esc", "false iso / 1k GPU-days",
                  "misses targets"), rows)


def render_evaluation(ev: Any) -> str:
    """The page for an :class:`~replay.evaluation.evaluate.Evaluation`."""
    from replay.evaluation.evaluate import FAULTLINE, fault_tables

    fl = ev.detectors.get(FAULTLINE)
    n_faults = sum(len(lg.labels) for lg in ev.logs)
    healthy = sum(1 for lg in ev.logs if lg.healthy)
    title = f"faultline evaluation: {ev.corpus}"
    parts = [_HEAD.replace("{title}", html.escape(title))]
    if fl is not None:
        t = fl.card.total
        parts.append(f'<p class="verdict" id="verdict">faultline caught {t.caught} of '
                     f"{t.faults} faults, {t.false_positives} false positive problems; "
                     f"precision {_pct(t.precision)}, recall {_pct(t.recall)}, median latency "
                     f"{_s(t.latency_median_s)}</p>")
    parts.append(f'<p class="meta">{len(ev.logs)} logs ({len(ev.logs) - healthy} with faults, '
                 f"{healthy} healthy), {n_faults} faults, "
                 f"{sum(lg.events for lg in ev.logs):,} events; evaluated in "
                 f"{ev.seconds:.0f} s</p>")
    if fl is not None:
        try:
            from replay.evaluation.matrix import matrix_rows
            cells = matrix_rows(ev.logs, ev.fault_info, FAULTLINE)
        except ImportError:
            cells = []
        if cells:
            parts.append("<h2>Per cell of the variation matrix</h2>" + _matrix(cells))
        parts.append("<h2>faultline per fault kind</h2>" + scorecard_html(fl.card))
        by_kind: dict[str, list[float]] = defaultdict(list)
        for f in fl.card.faults:
            if f.caught and f.latency_s is not None:
                kind = ev.fault_info.get(f.label.fault_id, {}).get("kind") or f.label.kind
                by_kind[str(kind)].append(f.latency_s)
        if by_kind:
            parts.append("<h2>Detection latency by simulated fault</h2><figure>"
                         + plots.latency_distribution(dict(sorted(by_kind.items())))
                         + "</figure>")
        tables = fault_tables(ev, FAULTLINE)
        for key, what in (("by_fault_kind", "simulated fault"), ("by_shape", "shape"),
                          ("by_magnitude", "slowdown size"),
                          ("by_onset_benign", "benign event at onset"),
                          ("by_topology", "topology")):
            if tables.get(key):
                parts.append(f"<h3>By {what}</h3>" + _groups(tables[key], what))
    rows = []
    for name, d in ev.detectors.items():
        per_1k = d.false_isolations_per_1k_gpu_days
        for i, r in enumerate([d.card.total, *d.card.rows]):
            rows.append((name if i == 0 else "", r.kind, r.faults, r.caught, r.false_positives,
                         r.precision, r.recall, r.latency_median_s, r.latency_p95_s,
                         per_1k if i == 0 else ""))
    parts.append("<h2>faultline and the baselines, same corpus, same scorer</h2>" + table(
        ("detector", "kind", "faults", "caught", "FP", "precision", "recall",
         "latency median s", "p95 s", "false isolations / 1k GPU-days"), rows))
    ettr = [(name, d.ettr) for name, d in ev.detectors.items() if d.ettr is not None]
    if ettr:
        parts.append(f"<h2>ETTR estimate, a job of {ev.model.job_gpus:,} GPUs</h2>"
                     f"<pre>{html.escape(ev.model.describe())}</pre>" + table(
                         ("detector", "ETTR", "faults only", "E[cost] / fault min",
                          "faults / day", "false isolations / fault"),
                         [(n, e.ettr, e.ettr_faults_only, e.expected_cost_s / 60,
                           e.faults_per_day, e.false_isolations_per_fault) for n, e in ettr]))
    parts.append("</main></body></html>\n")
    return "\n".join(parts)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def _s(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f} s"
