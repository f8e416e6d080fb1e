"""What every subcommand shares: environment defaults, exit codes, topology loading, alert lines."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from detector.alerts import ISOLATION, Alert
from detector.topology import Topology

EXIT_UNREADABLE = 1  # an input that held nothing readable
EXIT_USAGE = 2
EXIT_FORCED = 3  # a second SIGTERM/SIGINT: out at once, without a snapshot


def env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def env_float(name: str) -> float | None:
    value = os.environ.get(name)
    try:
        return float(value) if value else None
    except ValueError:
        raise SystemExit(f"faultline: {name} must be a number, got {value!r}") from None


def load_topology(path: str | None) -> Topology | None:
    if not path:
        return None
    return Topology.load(path)


def format_alert(a: Alert, t0: float) -> str:
    """One line a person can read as the alert fires."""
    when = datetime.fromtimestamp(a.detected_ts, UTC).strftime("%H:%M:%S.%f")[:-3]
    where = "ISOLATE " if a.topic == ISOLATION else "ESCALATE"
    status = "FIRING  " if a.status == "firing" else "resolved"
    what = f"{a.kind}/{a.cause}"
    head = f"{when} +{a.detected_ts - t0:7.1f}s {status} {where} {what:<22} {a.scope.key:<28}"
    if a.status != "firing":
        return head.rstrip()
    return (f"{head} latency {a.detection_latency_s:5.1f}s conf {a.confidence:.2f} "
            f"-> {a.action.name}: {a.summary}")[:240]
