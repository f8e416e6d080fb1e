"""``faultline pager``: alerts from Kafka to Alertmanager, PagerDuty and webhooks."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from detector.cli.common import EXIT_FORCED


def register(sub: argparse._SubParsersAction) -> dict[str, Callable[[argparse.Namespace], int]]:
    _add_pager(sub)
    return {"pager": _run_pager}


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
    ("--metrics-addr", "metrics_addr", str, "address /metrics listens on (default 127.0.0.1)",
     "FAULTLINE_PAGER_METRICS_ADDR"),
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
    import signal
    import threading

    from detector import logs
    from detector.kafka.admin import KafkaSetupError
    from detector.pager import config as pager_config
    from detector.pager import kafka_io as pager_kafka

    env = dict(os.environ)
    if args.alertmanager:
        env["FAULTLINE_PAGER_SINKS_ALERTMANAGER_URL"] = args.alertmanager
    if args.webhook:
        env["FAULTLINE_PAGER_SINKS_WEBHOOK_URL"] = args.webhook
    settings, config = pager_config.load(
        args.config, env=env,
        settings_overrides={name: getattr(args, name) for _, name, _, _ in _PAGER_SETTINGS_FLAGS},
        pager_overrides={name: getattr(args, f"pager_{name}") for _, name, *_ in _PAGER_FLAGS})
    for flag, sink in ((args.alertmanager, "alertmanager"), (args.webhook, "webhook")):
        if flag:  # passed on as a variable above; say where it really came from
            config._sources[f"sinks.{sink}.url"] = f"command line --{sink}"  # type: ignore
    if args.print_config:
        print(config.to_toml(), end="")
        return 0
    logs.configure(settings.log_level, debug_loggers=settings.log_debug,
                   secrets=[*settings.secrets(), *config.secrets()])
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
    try:
        return pager_kafka.run(settings, config, stop=stop)
    except KafkaSetupError as exc:
        print(f"faultline pager: {exc}", file=sys.stderr)
        return 1
