"""``faultline dev``: a local broker for trying the service, and the one line to use it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.kafka
ROOT = Path(__file__).resolve().parents[2]


def _dev(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "detector.cli", "dev", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=180, check=True)


def test_faultline_dev_starts_a_broker_once_and_prints_the_line_to_use_it(
        tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient

    data = tmp_path / "broker"
    try:
        first = _dev("--data-dir", str(data))
        (line,) = first.stdout.splitlines()
        m = re.fullmatch(r"export FAULTLINE_BOOTSTRAP_SERVERS=(127\.0\.0\.1:\d+)", line)
        assert m, line
        assert "stop it with `faultline dev --stop`" in first.stderr
        meta = AdminClient({"bootstrap.servers": m[1]}).list_topics(timeout=20)
        assert meta.brokers  # it answers
        again = _dev("--data-dir", str(data))
        assert again.stdout == first.stdout and "already running" in again.stderr
    finally:
        stopped = _dev("--data-dir", str(data), "--stop")
    assert "stopped the broker" in stopped.stderr
    assert "no broker runs" in _dev("--data-dir", str(data), "--stop").stderr
