"""``faultline serve`` and ``faultline config``: the streaming worker and its settings."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Callable

from detector.cli.common import EXIT_FORCED


def register(sub: argparse._SubParsersAction) -> dict[str, Callable[[argparse.Namespace], int]]:
    _add_serve(sub)
    _add_config(sub)
    return {"serve": _run_serve, "config": _run_config}


_SERVE_FLAGS = (
    ("--bootstrap", "bootstrap_servers", str, "Kafka bootstrap servers"),
    ("--group-id", "group_id", str, "consumer group shared by the workers"),
    ("--topic-prefix", "topic_prefix", str, "prepended to every topic name"),
    ("--topology", "topology", str, "topology file"),
    ("--home-cluster", "home_cluster", str, "the `cluster` value the topology describes"),
    ("--workdir", "state_dir", str, "working directory (status file, Faust data)"),
    ("--metrics-port", "metrics_port", int, "Prometheus /metrics port; 0: none"),
    ("--metrics-addr", "metrics_addr", str, "address /metrics listens on (default 127.0.0.1)"),
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


def _run_serve(args: argparse.Namespace) -> int:
    from detector import logs
    from detector.service import app as service

    settings = _settings_from(args)
    logs.configure(settings.log_level, debug_loggers=settings.log_debug,  # type: ignore[attr-defined]
                   secrets=settings.secrets())  # type: ignore[attr-defined]

    def force(signum: int) -> None:
        print(f"faultline serve: second signal ({signum}): exiting now, without a snapshot",
              file=sys.stderr, flush=True)
        os._exit(EXIT_FORCED)

    from detector.service.kafka_io import ServiceKafkaError

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
            "Print the configuration `faultline serve` and `faultline pager` would run with, "
            "as TOML, every section, each value with where it came from. Secrets are shown "
            "as **********.", 79),
        epilog=settings_help())
    _add_settings_flags(p)


def _run_config(args: argparse.Namespace) -> int:
    from detector.pager import config as pager_config

    settings, pager = pager_config.load(args.config, settings_overrides={
        name: getattr(args, name) for _, name, _, _ in _SERVE_FLAGS}, validate=False)
    print(settings.to_toml(), end="")
    print(f"\n# the pager's (`faultline pager`; [kafka] and [topics] above are shared)\n"
          f"{pager.to_toml()}", end="")
    return 0
