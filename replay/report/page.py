"""One self-contained HTML page for an incident: verdict, timeline, each alert's signal, cost.

The page holds everything inline (CSS, SVG plots): it opens offline and can be mailed
or attached to a ticket.  Every alert problem is a ``<section id="alert-KEY">``.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from detector.alerts import ESCALATION, Alert, Label, Scope
from detector.topology import Topology
from replay.report import plots
from replay.report.cost import H100_PEAK_TFLOPS, JobCost, job_cost
from replay.report.series import Series, read_series
from replay.report.signals import (
    against_siblings,
    checksum_vote,
    peer_band,
    rank_on,
    rates,
)
from replay.scoring import Scorecard, score

_THERMAL = ("throttle", "hot", "power_cap", "clock_loss", "throttle_minor")
_NIC = ("nic_errors", "link_down", "nic_throughput", "link_flaps", "nic_flaps")
_COLORS = {"isolation": "#e67e22", "escalation": "#c0392b"}


@dataclass
class Problem:
    """All messages of one (topic, dedup_key): first firing, last state."""

    first: Alert
    last: Alert
    messages: list[Alert] = field(default_factory=list)
    verdict: str = ""       # caught / false (when the log has labels)

    log_end: float = float("inf")

    @property
    def resolved_ts(self) -> float | None:
        """When it resolved; None when still firing at the log's end (a replay resolves
        what is left when its input ends: that is not a resolution anyone saw)."""
        if self.last.status != "resolved" or self.last.detected_ts > self.log_end:
            return None
        return self.last.detected_ts

    @property
    def anchor(self) -> str:
        return "alert-" + "".join(c if c.isalnum() or c in "-_" else "-"
                                  for c in self.first.dedup_key)


def problems_of(alerts: Sequence[Alert]) -> list[Problem]:
    """Alert messages folded into problems, in order of first firing."""
    out: dict[tuple[str, str], Problem] = {}
    for a in alerts:
        key = (a.topic, a.dedup_key)
        p = out.get(key)
        if p is None:
            if a.status != "firing":
                continue
            p = out[key] = Problem(a, a)
        p.messages.append(a)
        p.last = a
    return sorted(out.values(), key=lambda p: p.first.detected_ts)


@dataclass
class Report:
    """What the page shows, computed (no HTML yet): for tests and other renderers."""

    log: str
    problems: list[Problem]
    labels: list[Label]
    card: Scorecard | None
    costs: list[JobCost]
    verdict: str
    series: Series
    topology: Topology | None


def build_report(log: str | os.PathLike[str], alerts: Sequence[Alert] | None = None, *,
                 topology: Topology | None = None, flops_per_step: float | None = None,
                 peak_tflops: float = H100_PEAK_TFLOPS) -> Report:
    """Replay the log (unless its alerts are given), read the telemetry the plots need."""
    if alerts is None:
        from replay.runner import replay_log
        res = replay_log(log, topology=topology)
        if res.unreadable():
            raise ValueError(f"{log}: nothing could be read: {res.unreadable()}")
        alerts = res.alerts
    alerts = list(alerts)
    series = read_series(log, alerts, topology)
    if series.events == 0:
        raise ValueError(f"{log}: no telemetry records in the log")
    probs = problems_of(alerts)
    for p in probs:
        p.log_end = series.last_ts if series.last_ts is not None else float("inf")
    card = score(series.labels, alerts) if series.labels else None
    if card is not None:
        catching = {(f.by.topic, f.by.dedup_key) for f in card.faults if f.by is not None}
        false = {(a.topic, a.dedup_key) for a in card.false_positives}
        for p in probs:
            k = (p.first.topic, p.first.dedup_key)
            p.verdict = "caught" if k in catching else "false" if k in false else ""
    costs = [job_cost(job, t, flops_per_step=flops_per_step, peak_tflops=peak_tflops)
             for job, t in sorted(series.totals.items())]
    return Report(str(log), probs, series.labels, card, costs, verdict(probs, card), series,
                  topology)


def verdict(probs: Sequence[Problem], card: Scorecard | None) -> str:
    """The first line: what happened and what a person must do."""
    iso = [p for p in probs if p.first.topic != ESCALATION]
    esc = [p for p in probs if p.first.topic == ESCALATION]
    if not probs:
        text = "No faults found: nothing to do"
    else:
        text = f"{len(iso)} fault{'s' if len(iso) != 1 else ''} isolated"
        if esc:
            units = ", ".join(_short(p.first.scope) for p in esc[:6])
            more = f" (+{len(esc) - 6} more)" if len(esc) > 6 else ""
            text += f", {len(esc)} need{'s' if len(esc) == 1 else ''} a human: {units}{more}"
        else:
            text += ", none needs a human"
    if card is not None:
        t = card.total
        text += (f" — against the log's labels: {t.caught}/{t.faults} faults caught, "
                 f"{len(card.false_positives)} false alarm"
                 f"{'s' if len(card.false_positives) != 1 else ''}")
    return text


def _short(s: Scope) -> str:
    if s.level == "gpu":
        return f"{s.node} GPU {s.gpu}"
    if s.level == "nic":
        return f"{s.node} {s.nic}"
    return s.node or s.switch or s.domain or (
        f"{s.job} replica {s.dp_rank}" if s.level == "replica" else f"job {s.job}")


def _group(s: Scope, topo: Topology | None) -> str:
    """The row group of a unit: its leaf switch (or rack), its switch, domain or job."""
    if s.level in ("switch",):
        return f"switch {s.switch}"
    if s.level == "domain":
        return f"domain {s.domain}"
    if s.level in ("replica", "job"):
        return f"job {s.job}"
    if topo is not None and s.node is not None:
        nic = s.nic or (topo.nic_for_gpu(s.node, s.gpu) if s.gpu is not None else None)
        sw = topo.switch_of(s.node, nic)
        if sw:
            return f"switch {sw}"
        rack = topo.rack_of(s.node) or topo.domain_of(s.node)
        if rack:
            return f"rack {rack}"
    return ""


# -- rendering ---------------------------------------------------------------------------


def render(r: Report) -> str:
    """The page, as one string."""
    s = r.series
    t0 = s.first_ts or 0.0
    t1 = s.last_ts or t0
    parts = [_HEAD.replace("{title}", html.escape(f"faultline incident report: "
                                                  f"{os.path.basename(r.log)}")),
             f'<p class="verdict" id="verdict">{html.escape(r.verdict)}</p>',
             f'<p class="meta">{html.escape(r.log)} · {plots.when(t0)} to {plots.when(t1)} '
             f"({t1 - t0:,.0f} s) · {s.events:,} telemetry records · "
             f"{len(r.problems)} problems, {sum(len(p.messages) for p in r.problems)} alert "
             "messages</p>"]
    parts.append(_toc(r))
    parts.append("<h2>Timeline</h2>")
    parts.append(_timeline(r, t0, t1))
    parts.append("<h2>What it cost</h2>")
    parts.append(_costs(r))
    parts.append("<h2>Alerts</h2>")
    for p in r.problems:
        parts.append(_card(r, p, t0, t1))
    if r.card is not None:
        parts.append("<h2>Scorecard against the log's labels</h2>")
        parts.append(scorecard_html(r.card))
    parts.append("</main></body></html>\n")
    return "\n".join(parts)


def _toc(r: Report) -> str:
    if not r.problems:
        return ""
    items = []
    for p in r.problems:
        a = p.first
        tag = f' <span class="tag {p.verdict}">{p.verdict}</span>' if p.verdict else ""
        items.append(f'<li><a href="#{p.anchor}">{html.escape(a.kind)}/{html.escape(a.cause)} '
                     f"on {html.escape(a.scope.key)}</a> — {_topic(a)}{tag}</li>")
    return "<ol class=\"toc\">" + "".join(items) + "</ol>"


def _topic(a: Alert) -> str:
    return "needs a human" if a.topic == ESCALATION else "isolate"


def _timeline(r: Report, t0: float, t1: float) -> str:
    rows: dict[str, str] = {}
    bars: list[tuple[str, float, float, str, str]] = []
    for p in r.problems:
        s = p.first.scope
        rows.setdefault(s.key, _group(s, r.topology))
        end = p.resolved_ts if p.resolved_ts is not None else t1
        color = _COLORS["escalation" if p.first.topic == ESCALATION else "isolation"]
        text = f"{p.first.kind}/{p.first.cause}" + (f"  [{p.verdict}]" if p.verdict else "")
        bars.append((s.key, p.first.onset_ts, end, color, text))
    caught = set()
    if r.card is not None:
        caught = {f.label.fault_id for f in r.card.faults if f.caught}
    for lab in r.labels:
        rows.setdefault(lab.scope.key, _group(lab.scope, r.topology))
        bars.append((lab.scope.key, lab.start_ts, lab.end_ts, "label",
                     "" if lab.fault_id in caught else f"fault {lab.kind}/{lab.cause} [missed]"))
    if not rows:
        return "<p>No alerts and no labelled faults in this log.</p>"
    ordered = sorted(rows.items(), key=lambda kv: (kv[1], kv[0]))
    svg = plots.timeline([(g, u) for u, g in ordered], bars, t0, t1)
    legend = ('<p class="legend"><span style="background:#e67e22"></span> isolation '
              '<span style="background:#c0392b"></span> escalation (needs a human) '
              '<span style="background:#b0b0b0"></span> labelled fault window; bars from '
              "onset to resolution (or the log's end)</p>")
    return f'<figure class="timeline">{svg}</figure>{legend}'


def _costs(r: Report) -> str:
    if not r.costs:
        return "<p>No step telemetry: the cost in training time is not known.</p>"
    rows = []
    for c in r.costs:
        mfu = f"{100 * c.mfu:.1f} %" if c.mfu is not None else "— (give --flops-per-step)"
        ettr = f"{100 * c.ettr:.1f} %" if c.ettr is not None else "—"
        rows.append(f"<tr><td>{html.escape(c.job)}</td><td>{c.ranks}</td><td>{c.steps:,}</td>"
                    f"<td>{c.typical_step_s:.3f} s</td><td>{c.lost_gpu_s / 3600:.2f}</td>"
                    f"<td>{c.lost_wall_s:,.0f} s</td><td>{ettr}</td><td>{mfu}</td></tr>")
    return ("<table><tr><th>job</th><th>ranks</th><th>steps</th><th>typical step</th>"
            "<th>GPU-hours lost</th><th>wall time lost</th><th>ETTR</th><th>MFU</th></tr>"
            + "".join(rows) + "</table><p class=\"note\">GPU-hours lost: each step's excess "
            "over the job's median step time x the ranks that waited for it. ETTR: steps x "
            "median step time over the wall time from the first step to the last.</p>")


def _card(r: Report, p: Problem, t0: float, t1: float) -> str:
    a = p.first
    ev = a.evidence
    tag = f' <span class="tag {p.verdict}">{p.verdict}</span>' if p.verdict else ""
    resolved = (f"resolved {p.resolved_ts - a.onset_ts:,.0f} s after onset"
                if p.resolved_ts is not None else "still firing at the log's end")
    facts = [("when", f"onset {plots.when(a.onset_ts)}, detected +{a.detection_latency_s:.1f} s "
                      f"later; {resolved}"),
             ("detection latency", f"{a.detection_latency_s:.3f} s"),
             ("granularity", a.granularity.line() if a.granularity else "—"),
             ("recovery", _recovery(p))]
    if a.action is not None:
        facts.append(("action", f"{a.action.name}: {a.action.detail}"
                      + (" (requires approval)" if a.action.requires_approval else "")))
        facts.append(("rollback", a.action.rollback))
    if ev.get("next_diagnostic"):
        facts.append(("next diagnostic", str(ev["next_diagnostic"])))
    facts.append(("confidence", f"{a.confidence:.2f}"))
    ruled = ev.get("ruled_out")
    cost = _window_cost(r, p, t1)
    if cost:
        facts.append(("cost while open", cost))
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                   for k, v in facts)
    ruled_html = ("<h4>Ruled out</h4><ul>" + "".join(f"<li>{html.escape(str(x))}</li>"
                                                     for x in ruled) + "</ul>"
                  if isinstance(ruled, list) and ruled else "")
    try:
        plot = _plot(r, a, p, t0, t1)
    except Exception as exc:  # noqa: BLE001 - one bad plot must not lose the report
        plot = f'<p class="note">no plot: {html.escape(str(exc))}</p>'
    return (f'<section class="alert {"esc" if a.topic == ESCALATION else "iso"}" '
            f'id="{p.anchor}" data-dedup-key="{html.escape(a.dedup_key)}" '
            f'data-alert-ids="{" ".join(m.id for m in p.messages)}">'
            f"<h3>{html.escape(a.kind)}/{html.escape(a.cause)} on "
            f"{html.escape(a.scope.key)} — {_topic(a)}{tag}</h3>"
            f'<p class="summary">{html.escape(a.summary)}</p>'
            f'<div class="row"><div class="plot">{plot}</div><div class="facts">'
            f"<table>{rows}</table>{ruled_html}{_evidence(ev)}</div></div></section>")


def _recovery(p: Problem) -> str:
    rec = p.last.recovery if p.resolved_ts is not None else p.first.recovery
    return rec.line() if rec is not None else "—"


def _evidence(ev: dict[str, Any]) -> str:
    sigs = ev.get("signals")
    if not isinstance(sigs, list) or not sigs:
        return ""
    items = []
    for sig in sigs[:8]:
        if not isinstance(sig, dict):
            continue
        detail = ", ".join(f"{k}={v}" for k, v in sig.items()
                           if k not in ("signal", "unit") and not isinstance(v, dict | list))
        items.append(f"<li><b>{html.escape(str(sig.get('signal')))}</b> on "
                     f"{html.escape(str(sig.get('unit', '')))}: {html.escape(detail)}</li>")
    return "<h4>Evidence</h4><ul class=\"evidence\">" + "".join(items) + "</ul>"


def _window_cost(r: Report, p: Problem, t1: float) -> str:
    a = p.first
    jobs = [a.job] if a.job else list(r.series.totals)
    end = p.resolved_ts if p.resolved_ts is not None else t1
    out = []
    for job in jobs:
        t = r.series.totals.get(job)  # type: ignore[arg-type]
        if t is None:
            continue
        c = job_cost(str(job), t, since=a.onset_ts, until=end)
        if c.steps:
            out.append(f"{job}: {c.lost_gpu_s / 3600:.2f} GPU-hours over {c.steps:,} steps")
    return "; ".join(out)


# -- the signal that fired ---------------------------------------------------------------


def _plot(r: Report, a: Alert, p: Problem, t0: float, t1: float) -> str:
    s = r.series
    sigs = [x for x in a.evidence.get("signals", []) if isinstance(x, dict)]
    first = sigs[0] if sigs else {}
    name = str(first.get("signal", ""))
    end = p.resolved_ts if p.resolved_ts is not None else t1
    # Around the decision: from before the onset to the resolution, or a few minutes on.
    since, until = max(t0, a.onset_ts - 120.0), min(t1, end + 60.0, a.detected_ts + 300.0)
    marks = [(a.onset_ts, "onset", "#7f8c8d"), (a.detected_ts, "detected", "#c0392b")]
    if p.resolved_ts is not None and p.resolved_ts <= until:
        marks.append((p.resolved_ts, "resolved", "#27ae60"))
    node, gpu = a.scope.node, a.scope.gpu
    if name in ("slow_rank", "grad_outlier", "checksum_mismatch"):
        js, rank = _job_rank(s, a, first)
        if js is None or rank is None:
            return '<p class="note">no step telemetry of this rank in the log</p>'
        if name == "checksum_mismatch":
            return plots.vote_plot(checksum_vote(js, rank, since, until), marks, t0)
        field_, what, unit = (("compute_ms", "compute time", "ms") if name == "slow_rank"
                              else ("grad_norm", "gradient norm", ""))
        if name == "slow_rank" and isinstance(first.get("ts"), int | float):
            marks.insert(1, (float(first["ts"]), f"CUSUM ≥ h (score {first.get('cusum')})",
                             "#8e44ad"))
        return plots.band_plot(peer_band(js, rank, field_, since, until), what, unit, marks, t0)
    if name in _THERMAL or (a.kind == "slow_node" and a.cause in ("thermal", "power")):
        if gpu is None:
            # A GPU's heat or power raised at its node (the step records could not confirm
            # the collector's GPU number, detector.correlate._gpu_unconfirmed): plot the GPU
            # the telemetry named.
            told = a.evidence.get("gpu_in_telemetry")
            gpu = told if isinstance(told, int) and not isinstance(told, bool) else None
        if node is None or gpu is None:
            return '<p class="note">not a GPU</p>'
        own = s.thermal.get((node, gpu), [])
        others = [rows for (n, g), rows in s.thermal.items() if n == node and g != gpu]
        panels = []
        for col, label in ((1, "GPU °C"), (3, "SM MHz"), (2, "power W")):
            ts, ys, med, mts = against_siblings(own, others, col, since, until)
            panels.append((label, [(mts, med, "node's other GPUs (median)", "#2f6fae"),
                                   (ts, ys, f"GPU {gpu}", "#c0392b")]))
        return plots.lines_plot(panels, marks, t0)
    if name in _NIC or a.kind == "network":
        return _nic_plot(r, a, since, until, marks, t0)
    if node is not None:
        keys = [(node, gpu)] if gpu is not None else [k for k in s.ecc if k[0] == node]
        events, counters = [], []
        for key in keys:
            rows = [x for x in s.ecc.get(key, []) if since <= x[0] <= until]
            events += [(x[0], f"XID {x[3]} (GPU {key[1]})") for x in rows if x[3] is not None]
            if rows and gpu is not None:
                import numpy as np
                ts = np.array([x[0] for x in rows])
                for col, label, color in ((2, "DBE volatile", "#c0392b"),
                                          (1, "SBE volatile", "#e67e22"),
                                          (4, "NVLink errors", "#2f6fae")):
                    ys = np.array([x[col] for x in rows], dtype=float)
                    if ys.any():
                        counters.append((ts, ys, label, color))
        return plots.events_plot(events, counters, marks, t0, since, until)
    return '<p class="note">no plot for this kind of alert</p>'


def _job_rank(s: Series, a: Alert, sig: dict[str, Any]) -> tuple[Any, int | None]:
    jobs = [a.job] if a.job in s.steps else list(s.steps)
    for job in jobs:
        js = s.steps[job]  # type: ignore[index]
        rank = sig.get("rank")
        if isinstance(rank, int) and rank in js.rank:
            return js, rank
        if a.scope.node is not None:
            found = rank_on(js, a.scope.node, a.scope.gpu)
            if found is not None:
                return js, found
    return None, None


def _nic_plot(r: Report, a: Alert, since: float, until: float,
              marks: list[tuple[float, str, str]], t0: float) -> str:
    s, sc = r.series, a.scope
    if sc.level == "nic":
        mine = [k for k in s.nic if k[0] == sc.node and k[1] == sc.nic
                and (sc.port is None or k[2] == sc.port)]
    elif sc.level == "switch" and r.topology is not None and sc.switch:
        facing = set(r.topology.nics_under(sc.switch))
        mine = [k for k in s.nic if (k[0], k[1]) in facing]
    else:
        mine = [k for k in s.nic if k[0] == sc.node]
    if not mine:
        return '<p class="note">no NIC telemetry of this unit in the log</p>'
    nodes = {k[0] for k in mine}
    siblings = [k for k in s.nic if k[0] in nodes and k not in mine]
    err_lines, gbps_lines = [], []
    ranked = sorted(mine, key=lambda k: -sum(rates(s.nic[k], since, until)[1]))
    palette = ("#c0392b", "#e67e22", "#8e44ad", "#16a085", "#d35400", "#2c3e50")
    for k, color in zip(ranked[:6], palette, strict=False):
        ts, err, gbps = rates(s.nic[k], since, until)
        err_lines.append((ts, err, f"{k[0]} {k[1]}", color))
        if len(gbps_lines) < 1:
            gbps_lines.append((ts, gbps, f"{k[0]} {k[1]}", color))
    if siblings:
        import numpy as np
        sib = [rates(s.nic[k], since, until) for k in siblings]
        sib = [x for x in sib if len(x[0])]
        if sib:
            n = min(len(x[0]) for x in sib)
            ts = sib[0][0][:n]
            err_lines.append((ts, np.median([x[1][:n] for x in sib], axis=0),
                              "sibling ports (median)", "#2f6fae"))
            gbps_lines.append((ts, np.median([x[2][:n] for x in sib], axis=0),
                               "sibling ports (median)", "#2f6fae"))
    return plots.lines_plot([("errors/s", err_lines), ("Gbit/s sent", gbps_lines)], marks, t0)


def scorecard_html(card: Scorecard) -> str:
    """The scorecard as a table, then the false positives and missed faults by name."""
    head = ("kind", "faults", "caught", "missed", "problems", "FP", "precision", "recall",
            "latency median s", "p95 s", "max s", "attribution")
    out = ["<table class=\"card\"><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for row in (*card.rows, card.total):
        cells = (row.kind, row.faults, row.caught, row.missed, row.problems,
                 row.false_positives, row.precision, row.recall, row.latency_median_s,
                 row.latency_p95_s, row.latency_max_s, row.attribution)
        out.append("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    out.append(f"<p>false positives: {len(card.false_positives)}" + "".join(
        f"<br>{html.escape(a.kind)}/{html.escape(a.cause)} on {html.escape(a.scope.key)}"
        for a in card.false_positives) + "</p>")
    missed = [f for f in card.faults if not f.caught]
    out.append(f"<p>missed faults: {len(missed)}" + "".join(
        f"<br>{html.escape(f.label.fault_id)}: {html.escape(f.label.kind)} on "
        f"{html.escape(f.label.scope.key)}" for f in missed) + "</p>")
    return "".join(out)


def _cell(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return "—" if math.isnan(v) else f"{v:.3f}"
    return html.escape(str(v))


_HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       margin: 0; background: #fafafa; }
main { max-width: 1280px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 18px; margin: 8px 0; } h2 { font-size: 16px; margin: 28px 0 8px;
     border-bottom: 1px solid #ddd; } h3 { font-size: 15px; margin: 0 0 4px; }
h4 { font-size: 13px; margin: 10px 0 2px; }
.verdict { font-size: 20px; font-weight: 600; margin: 4px 0 6px; padding: 10px 14px;
           background: #fff4e5; border-left: 5px solid #e67e22; }
.meta, .note, .legend { color: #666; font-size: 12px; }
.legend span { display: inline-block; width: 14px; height: 10px; margin: 0 3px 0 10px; }
section.alert { background: #fff; border: 1px solid #e3e3e3; border-left: 5px solid #e67e22;
                border-radius: 4px; padding: 12px 14px; margin: 14px 0; }
section.alert.esc { border-left-color: #c0392b; }
.row { display: flex; gap: 16px; flex-wrap: wrap; } .plot { flex: 1 1 640px; }
.plot svg, figure svg { max-width: 100%; height: auto; }
.facts { flex: 1 1 360px; font-size: 13px; }
.facts th { text-align: left; vertical-align: top; padding-right: 8px; white-space: nowrap;
            color: #555; font-weight: 600; }
table { border-collapse: collapse; } td, th { padding: 2px 6px; }
table.card td, table.card th, main > table td, main > table th { border: 1px solid #ddd; }
.tag { font-size: 11px; padding: 1px 6px; border-radius: 8px; background: #ddd; }
.tag.caught { background: #cdebd3; } .tag.false { background: #f6c9c2; }
.summary { color: #444; font-family: ui-monospace, monospace; font-size: 12px; }
ol.toc { columns: 2; font-size: 13px; } figure { margin: 0; }
</style></head><body><main>
<h1>{title}</h1>"""
