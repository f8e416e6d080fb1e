"""``faultline report``: an incident log (and its alerts) as one self-contained HTML page."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from detector.cli.common import EXIT_UNREADABLE, env, load_topology


def register(sub: argparse._SubParsersAction) -> dict[str, Callable[[argparse.Namespace], int]]:
    p = sub.add_parser(
        "report", help="write an incident report: one self-contained HTML page with plots",
        description="Replay an incident log (or read its alerts from --alerts) and write one "
        "HTML page that opens offline: a verdict, a timeline of the alerts, each alert's "
        "signal plotted with its evidence, action, detection latency, granularity and "
        "recovery, what the incident cost (GPU-hours, ETTR, MFU), and the scorecard when "
        "the log carries labels. Needs the optional extra 'report' (matplotlib).")
    p.add_argument("log", help="incident log (.jsonl or .jsonl.gz)")
    p.add_argument("--alerts", default=None, help="alert records (from replay --alerts-out or "
                   "the alert topics) instead of replaying the log")
    p.add_argument("--topology", default=env("FAULTLINE_TOPOLOGY"),
                   help="topology file (default: the log's own) [env FAULTLINE_TOPOLOGY]")
    p.add_argument("-o", "--out", required=True, help="the HTML file to write")
    p.add_argument("--flops-per-step", type=float, default=None,
                   help="the job's FLOPs per training step (all ranks), for MFU")
    p.add_argument("--peak-tflops", type=float, default=989.0,
                   help="peak TFLOP/s of one GPU, for MFU (default: 989, H100 SXM dense BF16)")
    return {"report": _run}


def _run(args: argparse.Namespace) -> int:
    from detector.alerts import ALERT_TOPICS, Alert
    from replay.log import Record, log_topology, read_records

    try:
        from replay.report.page import build_report, render
        from replay.report.plots import _mpl
        _mpl()
    except RuntimeError as exc:
        print(f"faultline report: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    topology = load_topology(args.topology) or log_topology(args.log)
    alerts = None
    if args.alerts:
        alerts = []
        for rec in read_records(args.alerts):
            if isinstance(rec, Record) and rec.topic in ALERT_TOPICS:
                alerts.append(Alert.from_record(rec.topic, rec.value))
        if not alerts:
            print(f"faultline report: warning: {args.alerts} holds no alert records",
                  file=sys.stderr)
    report = build_report(args.log, alerts, topology=topology,
                          flops_per_step=args.flops_per_step, peak_tflops=args.peak_tflops)
    page = render(report)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(page)
    print(report.verdict)
    print(f"wrote {args.out} ({len(page) / 1024:,.0f} KiB, {len(report.problems)} alerts)")
    return 0
