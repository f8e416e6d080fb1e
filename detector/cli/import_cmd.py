"""``faultline import SOURCE ...``: real history from outside faultline as an incident log.

One sub-command per source; each adds its parser in ``_SOURCES`` (name ->
(add parser, run)), so a new source is one function pair, not a new command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from detector.cli.common import env, env_float

EXIT_INVALID_ROWS = 3  # the log was written, but some input rows were not usable


def register(sub: argparse._SubParsersAction) -> dict[str, Callable[[argparse.Namespace], int]]:
    p = sub.add_parser("import", help="turn real history from another system into an "
                       "incident log", description="Import real history as an incident log "
                       "that `faultline replay` reads.")
    sources = p.add_subparsers(dest="source", required=True, metavar="SOURCE")
    runs = {}
    for name, (add, run) in _SOURCES.items():
        add(sources.add_parser(name, help=add.__doc__, description=add.__doc__))
        runs[name] = run
    p.set_defaults(import_runs=runs)
    return {"import": lambda args: args.import_runs[args.source](args)}


def _add_alibaba(p: argparse.ArgumentParser) -> None:
    """Alibaba PAI per-worker mini-batch times (clusterdata cluster-trace-gpu-v2020
    mini-batch-time, job_N_norm.csv) as telemetry.step records."""
    p.add_argument("csv", nargs="+", help="job_N_norm.csv files (one job each)")
    p.add_argument("--out", required=True, default=env("FAULTLINE_IMPORT_OUT"),
                   help="incident log to write (.jsonl or .jsonl.gz) [FAULTLINE_IMPORT_OUT]")
    p.add_argument("--step-s", type=float, default=env_float("FAULTLINE_IMPORT_STEP_S") or 1.0,
                   help="seconds of event time per iteration: the trace has no clock "
                   "(default 1.0) [FAULTLINE_IMPORT_STEP_S]")
    p.add_argument("--ms-per-unit", type=float, default=1.0,
                   help="milliseconds per unit of batch_time_norm (default 1.0; only ratios "
                   "between workers matter to detection)")


def _run_alibaba(args: argparse.Namespace) -> int:
    from replay.importers.alibaba import import_files
    from replay.log import write_records
    records, invalid, rows = import_files(args.csv, step_s=args.step_s,
                                          ms_per_unit=args.ms_per_unit)
    n = write_records(args.out, records)
    print(f"wrote {n:,} step records from {rows:,} rows of {len(args.csv)} file(s) to {args.out}")
    for reason, count in sorted(invalid.items()):
        print(f"skipped {count} row(s): {reason}", file=sys.stderr)
    return EXIT_INVALID_ROWS if invalid else 0


_SOURCES: dict[str, tuple[Callable[[argparse.ArgumentParser], None],
                          Callable[[argparse.Namespace], int]]] = {
    "alibaba": (_add_alibaba, _run_alibaba),
}
