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
    out = env("FAULTLINE_IMPORT_OUT")
    p.add_argument("--out", required=out is None, default=out,
                   help="incident log to write (.jsonl or .jsonl.gz) [env FAULTLINE_IMPORT_OUT]")
    p.add_argument("--step-s", type=float, default=env_float("FAULTLINE_IMPORT_STEP_S") or 1.0,
                   help="seconds of event time per iteration: the trace has no clock "
                   "(default 1.0) [env FAULTLINE_IMPORT_STEP_S]")
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


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="incident log to write (.jsonl or .jsonl.gz)")
    p.add_argument("--labels", metavar="CSV", default=None,
                   help="incident notes to merge as labels (columns start,end,scope,kind,cause; "
                   "scope as faultline prints it, e.g. gpu:node-7/3), so `replay` scores the log")
    p.add_argument("--topology", default=None,
                   help="topology file for the log's head record (default: the nodes, GPUs and "
                   "NICs found)")


def _labels(args: argparse.Namespace) -> tuple[list, int]:
    if not args.labels:
        return [], 0
    from replay.importers.labels import read_labels
    labels, bad = read_labels(args.labels)
    for reason, count in sorted(bad.items()):
        print(f"labels: skipped {count} row(s): {reason}", file=sys.stderr)
    return labels, sum(bad.values())


def _head(args: argparse.Namespace, found: dict | None) -> list[dict]:
    if args.topology:
        from detector.topology import Topology
        return [Topology.load(args.topology).record()]
    return [found] if found else []


def _add_prometheus(p: argparse.ArgumentParser) -> None:
    """dcgm-exporter and node_exporter history from Prometheus (query_range, in chunks) as
    thermal, ECC/XID and NIC records in time order."""
    url = env("FAULTLINE_IMPORT_PROMETHEUS_URL")
    p.add_argument("--url", required=url is None, default=url,
                   help="Prometheus base URL, e.g. http://prometheus:9090 "
                   "[env FAULTLINE_IMPORT_PROMETHEUS_URL]")
    p.add_argument("--start", required=True, help="Unix seconds, ISO 8601 (UTC if no zone), "
                   "or now-2h")
    p.add_argument("--end", required=True, help="Unix seconds, ISO 8601 (UTC if no zone), "
                   "or now")
    p.add_argument("--step", type=float, default=15.0,
                   help="seconds between evaluations: about the scrape interval (default 15)")
    p.add_argument("--node-label", default=None,
                   help="label naming the node (default: node, then Hostname, then the host "
                   "of instance)")
    p.add_argument("--chunk-points", type=int, default=1000,
                   help="evaluations per query_range request (default 1000; Prometheus "
                   "refuses more than 11,000)")
    _add_common(p)


def _run_prometheus(args: argparse.Namespace) -> int:
    from detector.cli.progress import progress
    from replay.importers.labels import parse_time
    from replay.importers.prometheus import PrometheusError, PrometheusImport
    from replay.log import write_records

    imp = PrometheusImport(args.url, parse_time(args.start), parse_time(args.end),
                           step_s=args.step, node_label=args.node_label,
                           chunk_points=args.chunk_points)
    labels, bad = _labels(args)
    try:
        head = _head(args, imp.topology_record())
        with progress("import prometheus", total=imp.end - imp.start, unit="s") as update:
            n = write_records(args.out, _chain(head, imp.iter_records(update), labels))
    except PrometheusError as exc:
        print(f"faultline import prometheus: {exc}", file=sys.stderr)
        return 1
    topics = ", ".join(f"{t} {c:,}" for t, c in sorted(imp.per_topic.items()))
    print(f"wrote {n:,} records to {args.out}: {topics or 'no telemetry'}; "
          f"{len(labels)} labels; {len(imp.chunks())} query_range request(s)")
    for reason, count in sorted(imp.skipped.items()):
        print(f"skipped {count}: {reason}", file=sys.stderr)
    return EXIT_INVALID_ROWS if bad else 0


def _chain(*parts):
    for part in parts:
        yield from part


def _add_kafka(p: argparse.ArgumentParser) -> None:
    """A capture of the live topics by `kcat -C -J` (one envelope a line) as an incident log
    in event-time order."""
    p.add_argument("dump", nargs="+", help="kcat -J output file(s); - for stdin")
    _add_common(p)


def _run_kafka(args: argparse.Namespace) -> int:
    from detector.collect.sinks import observed_topology
    from replay.importers.kcat import KcatImport
    from replay.log import write_records

    imp = KcatImport()

    def lines():
        for path in args.dump:
            if path == "-":
                yield from sys.stdin.buffer
                continue
            with open(path, "rb") as f:
                yield from f

    records = imp.records(lines())
    labels, bad = _labels(args)
    topo = observed_topology("kafka-capture", ((r["topic"], r["value"]) for r in records))
    n = write_records(args.out, _chain(_head(args, topo.record() if topo else None), records,
                                       labels))
    topics = ", ".join(f"{t} {c:,}" for t, c in sorted(imp.per_topic.items()))
    print(f"wrote {n:,} records to {args.out} from {imp.lines:,} lines: "
          f"{topics or 'nothing usable'}; {len(labels)} labels")
    for reason, count in sorted(imp.skipped.items()):
        print(f"skipped {count}: {reason}", file=sys.stderr)
    return EXIT_INVALID_ROWS if bad or imp.skipped else 0


def _add_labels(p: argparse.ArgumentParser) -> None:
    """An operator's incident notes (CSV: start,end,scope,kind,cause) merged into a log as
    labels, so `replay` scores it."""
    p.add_argument("log", help="an incident log (from any importer, collect or simulate)")
    p.add_argument("--labels", metavar="CSV", required=True, help="the notes")
    p.add_argument("--out", required=True, help="the labelled log to write")


def _run_labels(args: argparse.Namespace) -> int:
    from replay.importers.labels import merge_labels

    labels, bad = _labels(args)
    n = merge_labels(args.log, labels, args.out)
    print(f"wrote {n:,} records ({len(labels)} labels) to {args.out}")
    return EXIT_INVALID_ROWS if bad else 0


_SOURCES: dict[str, tuple[Callable[[argparse.ArgumentParser], None],
                          Callable[[argparse.Namespace], int]]] = {
    "alibaba": (_add_alibaba, _run_alibaba),
    "prometheus": (_add_prometheus, _run_prometheus),
    "kafka": (_add_kafka, _run_kafka),
    "labels": (_add_labels, _run_labels),
}
