"""The ``faultline`` command: thin argument handling around the library; the only place that exits.

Every flag can also come from an environment variable (named in ``--help``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from detector.alerts import ISOLATION, Alert
from detector.topology import Topology, TopologyError

EXIT_USAGE = 2


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def format_alert(a: Alert, t0: float) -> str:
    """One line a person can read as the alert fires."""
    when = datetime.fromtimestamp(a.detected_ts, UTC).strftime("%H:%M:%S.%f")[:-3]
    where = "ISOLATE " if a.topic == ISOLATION else "ESCALATE"
    status = "FIRING  " if a.status == "firing" else "resolved"
    head = (f"{when} +{a.detected_ts - t0:7.1f}s {status} {where} {a.kind}/{a.cause:<12} "
            f"{a.scope.key:<28}")
    if a.status != "firing":
        return head
    return (f"{head} latency {a.detection_latency_s:5.1f}s conf {a.confidence:.2f} "
            f"-> {a.action.name}: {a.summary}")[:240]


def _load_topology(path: str | None) -> Topology | None:
    if not path:
        return None
    return Topology.load(path)


# -- replay -----------------------------------------------------------------------------

def _add_replay(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay", help="run the engine in one process over incident logs",
        description="Replay incident logs (files or folders of .jsonl/.jsonl.gz) through the "
        "engine in this process: print alerts as they fire, write them as records, and print "
        "a scorecard when the logs carry labels.")
    p.add_argument("logs", nargs="+", help="incident log files or folders")
    p.add_argument("--topology", default=_env("FAULTLINE_TOPOLOGY"),
                   help="topology file: faultline format or Slurm topology.conf "
                   "[env FAULTLINE_TOPOLOGY]")
    p.add_argument("--alerts-out", default=_env("FAULTLINE_ALERTS_OUT"),
                   help="write alert records here (.jsonl or .jsonl.gz) [env FAULTLINE_ALERTS_OUT]")
    p.add_argument("--quiet", action="store_true", help="print only the scorecard")


def _run_replay(args: argparse.Namespace) -> int:
    from replay.log import write_records
    from replay.runner import replay_log

    topology = _load_topology(args.topology)
    from replay.log import log_files
    files = log_files(args.logs)
    if not files:
        raise ValueError(f"no incident logs found in {' '.join(args.logs)}")
    all_alerts: list[Alert] = []
    for path in files:
        print(f"== {path}" + (f"  (topology {topology.name})" if topology else ""), flush=True)

        def on_alert(a: Alert, t0: float) -> None:
            if not args.quiet:
                print(format_alert(a, t0), flush=True)

        def on_progress(n: int) -> None:
            print(f"   ... {n:,} events", file=sys.stderr, flush=True)

        res = replay_log(path, topology=topology, on_alert=on_alert, on_progress=on_progress)
        all_alerts.extend(res.alerts)
        rate = res.events / res.seconds if res.seconds else 0.0
        span = (res.last_ts or 0.0) - (res.first_ts or 0.0)
        print(f"-- {res.events:,} events over {span:,.0f} s of event time in {res.seconds:.1f} s "
              f"({rate:,.0f} events/s); {len(res.alerts)} alert messages", flush=True)
        if res.invalid:
            bad = ", ".join(f"{k} x{v}" for k, v in res.invalid.most_common(6))
            print(f"-- invalid input (dead-lettered): {sum(res.invalid.values())}: {bad}")
        if res.labels:
            print(res.scorecard().format(), flush=True)
    if args.alerts_out:
        n = write_records(args.alerts_out, (a.record() for a in all_alerts))
        print(f"wrote {n} alert records to {args.alerts_out}")
    return 0


# -- simulate ---------------------------------------------------------------------------

def _add_simulate(sub: argparse._SubParsersAction) -> None:
    from replay import simulate
    p = sub.add_parser("simulate", help="write a labelled incident log",
                       description="Simulate a synchronous training job on a topology with "
                       "injected faults and benign events; write a labelled incident log.")
    simulate.configure_parser(p)


def _run_simulate(args: argparse.Namespace) -> int:
    from replay import simulate
    return simulate.run(args)


# -- main -------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="faultline", description="Streaming detection of slow GPU nodes and silent data "
        "corruption in training clusters.")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_replay(sub)
    _add_simulate(sub)
    return parser


_COMMANDS = {"replay": _run_replay, "simulate": _run_simulate}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except (ValueError, TopologyError, FileNotFoundError) as exc:
        print(f"faultline {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `faultline replay ... | head`: the reader left; not an error.
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())

