"""``faultline dev``: a local single-node Kafka broker for trying the service.

The broker is the project's development broker (``deploy/kafka/broker.py``: KRaft,
loopback only, jars from Maven Central cached once).  It runs in the background until
``faultline dev --stop``; a second ``faultline dev`` finds it and prints the same line.
The one line on stdout is meant for ``eval "$(faultline dev)"``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from detector.cli.common import EXIT_UNREADABLE

BROKER_PY = Path(__file__).resolve().parents[2] / "deploy" / "kafka" / "broker.py"
_DEFAULT_DATA_DIR = str(Path(tempfile.gettempdir()) / f"faultline-dev-{os.getuid()}")


def register(sub: argparse._SubParsersAction) -> dict[str, Callable[[argparse.Namespace], int]]:
    p = sub.add_parser(
        "dev", help="start a local Kafka broker for trying the service; print the line to use it",
        description="Start a single-node Kafka broker on loopback in the background (needs "
        "Java 17+ and Maven the first time, to fetch its jars) and print one line: "
        "export FAULTLINE_BOOTSTRAP_SERVERS=127.0.0.1:PORT. Use it as "
        "eval \"$(faultline dev)\"; then faultline serve, replay --to-kafka and pager find it. "
        "Stop it with faultline dev --stop.")
    p.add_argument("--data-dir", default=os.environ.get("FAULTLINE_KAFKA_DATA_DIR") or
                   _DEFAULT_DATA_DIR,
        help="the broker's state and logs [env FAULTLINE_KAFKA_DATA_DIR; default %(default)s]")
    p.add_argument("--stop", action="store_true", help="stop the broker and remove its data")
    return {"dev": _run}


def _broker() -> ModuleType:
    if not BROKER_PY.is_file():
        raise FileNotFoundError(f"{BROKER_PY} is missing: faultline dev runs from a checkout "
                                "of the repository")
    spec = importlib.util.spec_from_file_location("faultline_dev_broker", BROKER_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _run(args: argparse.Namespace) -> int:
    broker = _broker()
    data_dir = Path(args.data_dir).resolve()
    try:
        if args.stop:
            if broker.stop_from_state(data_dir):
                print(f"faultline dev: stopped the broker of {data_dir}", file=sys.stderr)
            else:
                print(f"faultline dev: no broker runs from {data_dir}", file=sys.stderr)
            return 0
        running = broker._running_from_state(data_dir)
        if running:
            bootstrap = running["bootstrap"]
            how = f"already running (pid {running['pid']})"
        else:
            b = broker.KafkaBroker(data_dir, detach=True)
            bootstrap = b.start()
            how = f"started (pid {b.pid})"
    except broker.BrokerError as exc:
        print(f"faultline dev: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    # The way to stop this broker, not one of another data folder (the default's).
    same = "" if data_dir == Path(_DEFAULT_DATA_DIR).resolve() else f" and --data-dir {data_dir}"
    print(f"faultline dev: Kafka {broker.kafka_version()} at {bootstrap} {how}, data in "
          f"{data_dir}; stop it with `faultline dev --stop`{same}", file=sys.stderr)
    print(f"export FAULTLINE_BOOTSTRAP_SERVERS={bootstrap}", flush=True)
    return 0
