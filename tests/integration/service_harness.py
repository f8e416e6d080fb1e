"""Running ``faultline serve`` workers as processes against the real broker, for the service tests.

Each test gets its own topic prefix and consumer group (uuid-named), so tests
share the session's broker without seeing each other.  Nothing here sleeps
blindly: every wait polls a condition with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import Producer

from detector.alerts import ESCALATION, ISOLATION, Scope
from detector.service.kafka_io import read_to_end
from detector.thresholds import Thresholds
from detector.topology import Topology
from replay.log import Record, read_records
from replay.runner import replay_log

ROOT = Path(__file__).resolve().parents[2]

# Small, fast settings for one broker on a small machine; parity must not depend on them.
TEST_SETTINGS = {
    "FAULTLINE_PARTITIONS_TELEMETRY": "4",
    "FAULTLINE_PARTITIONS_STATE": "2",
    "FAULTLINE_PARTITIONS_ALERTS": "2",
    "FAULTLINE_SESSION_TIMEOUT_S": "6",      # the broker's minimum: a killed worker's
    "FAULTLINE_SOURCE_TIMEOUT_S": "10",      # partitions move on quickly
    "FAULTLINE_SNAPSHOT_INTERVAL_S": "1",
    "FAULTLINE_HEARTBEAT_INTERVAL_S": "0.5",
    "FAULTLINE_IDLE_ADVANCE_S": "2",
    "FAULTLINE_LOG_LEVEL": "info",
}

Problem = tuple[str, str, str, str]  # dedup_key, kind, scope key, cause


def wait_for(what: str, condition: Callable[[], Any], timeout_s: float,
             interval_s: float = 0.2, on_timeout: Callable[[], str] | None = None) -> Any:
    """Poll ``condition`` until it returns something truthy; fail with ``what`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            detail = on_timeout() if on_timeout else ""
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}\n{detail}")
        time.sleep(interval_s)


class Deployment:
    """One test's topics, group and workers."""

    def __init__(self, bootstrap: str, tmp: Path, topology: Path | None = None) -> None:
        self.bootstrap = bootstrap
        self.prefix = f"it-{uuid.uuid4().hex[:10]}."
        self.tmp = tmp
        self.env = {**os.environ, **TEST_SETTINGS, "FAULTLINE_BOOTSTRAP_SERVERS": bootstrap,
                    "FAULTLINE_TOPIC_PREFIX": self.prefix,
                    "FAULTLINE_GROUP_ID": f"{self.prefix}group", "PYTHONUNBUFFERED": "1"}
        self.env.pop("FAULTLINE_CONFIG", None)
        self.env.pop("FAULTLINE_TOPOLOGY", None)
        if topology is not None:
            self.env["FAULTLINE_TOPOLOGY"] = str(topology)
        self.workers: list[WorkerProcess] = []

    def topic(self, name: str) -> str:
        return self.prefix + name

    def cli(self, *args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "detector.cli", *args], cwd=ROOT,
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def produce_log(self, log: Path, *, speed: float | None = None) -> subprocess.Popen[bytes]:
        """``faultline replay LOG --to-kafka`` in the background."""
        extra = ["--speed", str(speed)] if speed else []
        return self.cli("replay", str(log), "--to-kafka", self.bootstrap, *extra)

    def produce_all(self, log: Path) -> str:
        """Produce a whole log as fast as possible; returns what the command printed."""
        proc = self.produce_log(log)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out.decode(errors="replace")
        return out.decode(errors="replace")

    def start_worker(self, name: str) -> WorkerProcess:
        w = WorkerProcess(self, name)
        self.workers.append(w)
        return w

    def stop_all(self) -> None:
        for w in self.workers:
            w.kill()

    def producer(self) -> Producer:
        return Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True})

    def read_topic(self, name: str, timeout_s: float = 30.0) -> list[Any]:
        """Every message of a topic, from the beginning to its current end."""
        return read_to_end({"bootstrap.servers": self.bootstrap}, self.topic(name), timeout_s)

    def alerts(self) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for name in (ISOLATION, ESCALATION):
            out += [(name, orjson.loads(m.value())) for m in self.read_topic(name)]
        return out

    def firing_problems(self) -> set[Problem]:
        return firing(self.alerts())


def expected_problems(log: Path, topology: Path | None) -> set[Problem]:
    """The firing problems of the in-process replay of ``log``."""
    topo = Topology.load(topology) if topology is not None else None
    return firing((a.topic, a.to_dict()) for a in replay_log(log, topology=topo).alerts)


def firing(alerts: Iterable[tuple[str, dict[str, Any]]]) -> set[Problem]:
    return {(v["dedup_key"], v["kind"], Scope.from_dict(v["scope"]).key, v["cause"])
            for _, v in alerts if v["status"] == "firing"}


class WorkerProcess:
    """One ``faultline serve`` process with its own working directory."""

    def __init__(self, dep: Deployment, name: str) -> None:
        self.name = name
        self.workdir = dep.tmp / name
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = dep.tmp / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in wait/kill
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "detector.cli", "serve", "--workdir", str(self.workdir)],
            cwd=ROOT, env=dep.env, stdout=self._log, stderr=subprocess.STDOUT)

    def status(self) -> dict[str, Any] | None:
        try:
            return json.loads((self.workdir / "status.json").read_text())
        except (OSError, ValueError):
            return None

    def released(self) -> float:
        """The newest correlator clock of this worker (-inf when it holds no correlator)."""
        st = self.status() or {}
        return max((c["released"] or -1e300 for c in st.get("correlators", {}).values()),
                   default=-1e300)

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()
        return f"--- {self.name} log (tail)\n" + "\n".join(text[-lines:])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def terminate(self, timeout_s: float = 60.0) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        finally:
            self._log.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._log.close()


def log_span(log: Path) -> tuple[float, float]:
    """Event times of the first and the last telemetry record of a log."""
    start, end = 1e300, -1e300
    for rec in read_records(log):
        if isinstance(rec, Record) and rec.topic.startswith("telemetry.") \
                and isinstance(rec.value, dict) and isinstance(rec.value.get("ts"), (int, float)):
            start, end = min(start, float(rec.value["ts"])), max(end, float(rec.value["ts"]))
    return start, end


def log_end_ts(log: Path) -> float:
    return log_span(log)[1]


def settled_clock(log: Path) -> float:
    """Event time by which a worker has decided everything a log can raise (timers included)."""
    cfg = Thresholds()
    return log_end_ts(log) + cfg.lateness_s + max(cfg.escalate_after_s, cfg.switch_window_s) + 1.0


def wait_settled(workers: list[WorkerProcess], log: Path, timeout_s: float | None = None
                 ) -> None:
    """Until a correlator of these workers has released past everything in the log."""
    target = settled_clock(log)
    if timeout_s is None:  # generous: Faust agents manage ~5,000 records/s on a small machine
        timeout_s = 60.0 + sum(1 for _ in read_records(log)) / 4000.0
    wait_for(f"a correlator clock past {target:.1f}",
             lambda: max(w.released() for w in workers) >= target, timeout_s,
             on_timeout=lambda: "\n".join(w.log_tail() for w in workers))
