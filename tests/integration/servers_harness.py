"""Real Prometheus and Alertmanager processes on loopback, for the server tests.

The binaries come from Debian's ``prometheus`` and ``prometheus-alertmanager``
packages (``make servers``).  A test that needs one and cannot find it fails —
never skips — and says so.  Each server gets its own port and data directory
under the test's tmp_path; every wait polls with a deadline.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from service_harness import wait_for  # noqa: F401 - one poller for both harnesses

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def require(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.fail(f"{binary} is not installed: run `make servers` (Debian's prometheus and "
                    f"prometheus-alertmanager packages), then run the tests again",
                    pytrace=False)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_json(url: str, data: Any = None, timeout_s: float = 5.0) -> Any:
    body = None if data is None else json.dumps(data).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=timeout_s) as resp:
        return json.loads(resp.read() or b"null")


def _ready(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


class Server:
    """One server process with its log; ``close()`` stops it (SIGTERM, then SIGKILL)."""

    def __init__(self, name: str, argv: list[str], port: int, workdir: Path,
                 ready_path: str = "/-/ready") -> None:
        self.name = name
        self.ready_path = ready_path
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = workdir / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     cwd=workdir)
        try:
            wait_for(f"{name} ready on {self.url}", self._up, 30, on_timeout=self.log_tail)
        except BaseException:
            self.close()
            raise

    def _up(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self.proc.returncode}\n"
                                 f"{self.log_tail()}")
        return _ready(self.url + self.ready_path)

    def log_tail(self, lines: int = 30) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()
        return f"--- {self.name} log (tail)\n" + "\n".join(text[-lines:])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def alertmanager(tmp: Path, config_yaml: str, log_level: str = "warn") -> Server:
    """Alertmanager on a free loopback port, gossip off (else it binds 0.0.0.0:9094);
    ``log_level="debug"``: its aggregation groups log each flush (tests wait on it)."""
    binary = require("prometheus-alertmanager")
    d = tmp / "alertmanager"
    d.mkdir(parents=True, exist_ok=True)
    (d / "alertmanager.yml").write_text(config_yaml)
    port = free_port()
    return Server("alertmanager", [
        binary, f"--config.file={d / 'alertmanager.yml'}", f"--storage.path={d / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=",
        f"--log.level={log_level}"], port, d)


def prometheus(tmp: Path, config_yaml: str) -> Server:
    """Prometheus on a free loopback port; alerts re-sent every second (not the default minute)."""
    binary = require("prometheus")
    d = tmp / "prometheus"
    d.mkdir(parents=True, exist_ok=True)
    (d / "prometheus.yml").write_text(config_yaml)
    port = free_port()
    return Server("prometheus", [
        binary, f"--config.file={d / 'prometheus.yml'}", f"--storage.tsdb.path={d / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}", "--rules.alert.resend-delay=1s",
        "--log.level=warn"], port, d)


def promql(server: Server, expr: str) -> dict[str, Any]:
    """An instant query; returns the API's answer (status, data or error)."""
    q = urllib.parse.urlencode({"query": expr})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{server.url}/api/v1/query?{q}", timeout=5) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:  # 400 with an error body for a bad expression
        with exc:
            return json.loads(exc.read())


def node_exporter(tmp: Path, sysfs: Path) -> Server:
    """node_exporter on a free loopback port with only its infiniband collector, reading the
    sysfs tree at ``sysfs`` (``--path.sysfs``), as a node's would read /sys."""
    binary = require("prometheus-node-exporter")
    d = tmp / "node_exporter"
    d.mkdir(parents=True, exist_ok=True)
    port = free_port()
    return Server("node_exporter", [
        binary, f"--path.sysfs={sysfs}", f"--web.listen-address=127.0.0.1:{port}",
        "--collector.disable-defaults", "--collector.infiniband", "--log.level=warn"],
        port, d, ready_path="/metrics")
