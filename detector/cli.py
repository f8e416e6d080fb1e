"""The ``faultline`` command: thin argument handling around the library; the only place that exits.

Every flag can also come from an environment variable (named in ``--help``).
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
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
    k = p.add_argument_group(
        "into Kafka", "With --to-kafka the engine does not run here: the logs' telemetry is "
        "produced into the telemetry topics (key: job for steps, node for the rest) for "
        "`faultline serve` to consume; labels and alert records are skipped.")
    k.add_argument("--to-kafka", metavar="BOOTSTRAP", default=_env("FAULTLINE_TO_KAFKA"),
                   help="produce into the Kafka at these bootstrap servers [env "
                   "FAULTLINE_TO_KAFKA]")
    k.add_argument("--speed", type=float, default=_env_float("FAULTLINE_SPEED"),
                   help="pace by event time, X times real time (default: as fast as possible) "
                   "[env FAULTLINE_SPEED]")
    k.add_argument("--topic-prefix", default=None,
                   help="prepended to the topic names [env FAULTLINE_TOPIC_PREFIX]")
    k.add_argument("--config", default=None, help="settings file (TOML), for topic names, "
                   "partitions and Kafka security [env FAULTLINE_CONFIG]")


def _env_float(name: str) -> float | None:
    value = os.environ.get(name)
    try:
        return float(value) if value else None
    except ValueError:
        raise SystemExit(f"faultline: {name} must be a number, got {value!r}") from None


def _run_replay(args: argparse.Namespace) -> int:
    if args.to_kafka:
        return _run_replay_to_kafka(args)
    if args.speed is not None:
        raise ValueError("--speed paces production into Kafka: use it with --to-kafka")
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


def _run_replay_to_kafka(args: argparse.Namespace) -> int:
    from detector.produce import produce_logs
    from detector.settings import Settings
    from replay.log import log_files

    settings = Settings.load(args.config, overrides={
        "bootstrap_servers": args.to_kafka, "topic_prefix": args.topic_prefix})
    files = log_files(args.logs)
    if not files:
        raise ValueError(f"no incident logs found in {' '.join(args.logs)}")
    pace = f"at {args.speed:g}x real time" if args.speed else "as fast as possible"
    print(f"producing {len(files)} log(s) into {settings.bootstrap_servers} {pace}", flush=True)
    from detector.service_kafka import ServiceKafkaError

    try:
        res = produce_logs(files, settings, speed=args.speed)
    except ServiceKafkaError as exc:
        print(f"faultline replay: {exc}", file=sys.stderr)
        return 1
    topics = ", ".join(f"{settings.topic(t)} {n:,}" for t, n in sorted(res.per_topic.items()))
    print(f"-- {res.sent:,} records in {res.seconds:.1f} s ({res.rate:,.0f} records/s): {topics}")
    skipped = [f"{n} {what}" for n, what in ((res.labels, "labels"), (res.alerts, "alert records"),
                                             (res.invalid, "invalid lines")) if n]
    if skipped:
        print(f"-- not produced: {', '.join(skipped)}")
    if res.unkeyed:
        print(f"-- {res.unkeyed} records had no key field (produced unkeyed; the service will "
              f"dead-letter them)")
    return 0


# -- serve / config ---------------------------------------------------------------------

_SERVE_FLAGS = (
    ("--bootstrap", "bootstrap_servers", str, "Kafka bootstrap servers"),
    ("--group-id", "group_id", str, "consumer group shared by the workers"),
    ("--topic-prefix", "topic_prefix", str, "prepended to every topic name"),
    ("--topology", "topology", str, "topology file"),
    ("--workdir", "state_dir", str, "working directory (status file, Faust data)"),
    ("--metrics-port", "metrics_port", int, "Prometheus /metrics port; 0: none"),
    ("--log-level", "log_level", str, "debug, info, warning or error"),
)


def _add_settings_flags(p: argparse.ArgumentParser) -> None:
    from detector.settings import CONFIG_ENV, env_var

    p.add_argument("--config", default=None,
                   help=f"settings file (TOML) [env {CONFIG_ENV}]")
    for flag, name, kind, text in _SERVE_FLAGS:
        p.add_argument(flag, dest=name, type=kind, default=None,
                       help=f"{text} [env {env_var(name)}]")


def _settings_from(args: argparse.Namespace) -> object:
    from detector.settings import Settings

    return Settings.load(args.config, overrides={
        name: getattr(args, name) for _, name, _, _ in _SERVE_FLAGS})


def _add_serve(sub: argparse._SubParsersAction) -> None:
    from detector.settings import settings_help

    p = sub.add_parser(
        "serve", help="run the streaming detector (a Faust worker) against Kafka",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Consume the telemetry topics, detect, and produce alerts to alerts.isolation / "
            "alerts.escalation; invalid input goes to telemetry.deadletter. Start as many "
            "workers with the same group id as you like: they share the partitions. Missing "
            "topics are created. SIGTERM or SIGINT: stop consuming, snapshot the state, commit, "
            "exit 0; a second signal exits at once (code 3).", 79),
        epilog="Settings come from defaults, then the --config file, then environment "
        "variables, then these flags.\n\n" + settings_help())
    _add_settings_flags(p)


EXIT_FORCED = 3


def _run_serve(args: argparse.Namespace) -> int:
    import logging

    from detector import service

    settings = _settings_from(args)
    logging.basicConfig(level=settings.log_level.upper(),  # type: ignore[attr-defined]
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    def force(signum: int) -> None:
        print(f"faultline serve: second signal ({signum}): exiting now, without a snapshot",
              file=sys.stderr, flush=True)
        os._exit(EXIT_FORCED)

    from detector.service_kafka import ServiceKafkaError

    try:
        return service.run(settings, on_force=force)  # type: ignore[arg-type]
    except ServiceKafkaError as exc:
        print(f"faultline serve: {exc}", file=sys.stderr)
        return 1


def _add_config(sub: argparse._SubParsersAction) -> None:
    from detector.settings import settings_help

    p = sub.add_parser(
        "config", help="print the effective service configuration (secrets redacted)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Print the configuration `faultline serve` would run with, as TOML, each value "
            "with where it came from. Secrets are shown as **********.", 79),
        epilog=settings_help())
    _add_settings_flags(p)


def _run_config(args: argparse.Namespace) -> int:
    print(_settings_from(args).to_toml(), end="")  # type: ignore[attr-defined]
    return 0


# -- pager ------------------------------------------------------------------------------

_PAGER_SETTINGS_FLAGS = (
    ("--bootstrap", "bootstrap_servers", "Kafka bootstrap servers", "FAULTLINE_BOOTSTRAP_SERVERS"),
    ("--topic-prefix", "topic_prefix", "prepended to every topic name", "FAULTLINE_TOPIC_PREFIX"),
    ("--log-level", "log_level", "debug, info, warning or error", "FAULTLINE_LOG_LEVEL"),
)
_PAGER_FLAGS = (
    ("--group-id", "group_id", str, "the pager's consumer group", "FAULTLINE_PAGER_GROUP_ID"),
    ("--workdir", "state_dir", str, "where the sinks keep what they delivered",
     "FAULTLINE_PAGER_STATE_DIR"),
    ("--metrics-port", "metrics_port", int, "Prometheus /metrics port; 0: none",
     "FAULTLINE_PAGER_METRICS_PORT"),
)


def _add_pager(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "pager", help="deliver alerts from Kafka to Alertmanager, PagerDuty and webhooks",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Consume alerts.isolation and alerts.escalation and deliver each alert to "
        "the sinks its route names (Alertmanager API v2, PagerDuty Events API v2, JSON "
        "webhooks), with storm control; an offset is committed only after its alert is "
        "delivered or dead-lettered. SIGTERM or SIGINT: finish deliveries, commit, exit 0; a "
        "second signal exits at once.",
        epilog="Settings: the [kafka] and [topics] sections of the settings file and their "
        "FAULTLINE_* variables; the pager's own in [pager] (FAULTLINE_PAGER_KEY) and "
        "[pager.sinks.NAME] (FAULTLINE_PAGER_SINKS_NAME_KEY); routes, severities and storm "
        "control in TOML only. A sink named alertmanager, pagerduty or webhook needs no type, "
        "e.g.\n  FAULTLINE_PAGER_SINKS_PAGERDUTY_ROUTING_KEY=... faultline pager\n"
        "See README.md, 'Paging and observability'.")
    p.add_argument("--config", default=None, help="settings file (TOML) [env FAULTLINE_CONFIG]")
    for flag, name, text, env in _PAGER_SETTINGS_FLAGS:
        p.add_argument(flag, dest=name, default=None, help=f"{text} [env {env}]")
    for flag, name, kind, text, env in _PAGER_FLAGS:
        p.add_argument(flag, dest=f"pager_{name}", type=kind, default=None,
                       help=f"{text} [env {env}]")
    p.add_argument("--alertmanager", metavar="URL", default=None,
                   help="add a sink 'alertmanager' at this URL "
                   "[env FAULTLINE_PAGER_SINKS_ALERTMANAGER_URL]")
    p.add_argument("--webhook", metavar="URL", default=None,
                   help="add a sink 'webhook' posting JSON to this URL "
                   "[env FAULTLINE_PAGER_SINKS_WEBHOOK_URL]")
    p.add_argument("--print-config", action="store_true",
                   help="print the effective pager configuration (secrets redacted) and exit")


def _run_pager(args: argparse.Namespace) -> int:
    import logging
    import signal
    import threading

    from detector import pager_config, pager_kafka

    env = dict(os.environ)
    if args.alertmanager:
        env["FAULTLINE_PAGER_SINKS_ALERTMANAGER_URL"] = args.alertmanager
    if args.webhook:
        env["FAULTLINE_PAGER_SINKS_WEBHOOK_URL"] = args.webhook
    settings, config = pager_config.load(
        args.config, env=env,
        settings_overrides={name: getattr(args, name) for _, name, _, _ in _PAGER_SETTINGS_FLAGS},
        pager_overrides={name: getattr(args, f"pager_{name}") for _, name, *_ in _PAGER_FLAGS})
    if args.print_config:
        print(config.to_toml(), end="")
        return 0
    logging.basicConfig(level=settings.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        if stop.is_set():
            print(f"faultline pager: second signal ({signum}): exiting now", file=sys.stderr,
                  flush=True)
            os._exit(EXIT_FORCED)
        print(f"faultline pager: {signal.Signals(signum).name}: finishing deliveries; send it "
              "again to force", file=sys.stderr, flush=True)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return pager_kafka.run(settings, config, stop=stop)


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


# -- evaluate ---------------------------------------------------------------------------

def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    from replay import eval_cli
    p = sub.add_parser(
        "evaluate", help="build a labelled corpus, or score faultline and baselines on one",
        description="With --build DIR --seeds A..B: simulate a corpus of labelled incident "
        "logs (several topologies, every fault kind, healthy logs) and its corpus.json. "
        "With a corpus folder: replay every log through faultline and the baselines "
        "(Prometheus rules on DCGM metrics, NVIDIA-straggler-style scores), score them, and "
        "print one table with false alarms per 1,000 GPU-days and an ETTR estimate.")
    eval_cli.configure_parser(p)


def _run_evaluate(args: argparse.Namespace) -> int:
    from replay import eval_cli
    return eval_cli.run(args)


# -- main -------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="faultline", description="Streaming detection of slow GPU nodes and silent data "
        "corruption in training clusters.")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_replay(sub)
    _add_simulate(sub)
    _add_serve(sub)
    _add_config(sub)
    _add_evaluate(sub)
    _add_pager(sub)
    return parser


_COMMANDS = {"replay": _run_replay, "simulate": _run_simulate, "serve": _run_serve,
             "config": _run_config, "evaluate": _run_evaluate, "pager": _run_pager}


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

