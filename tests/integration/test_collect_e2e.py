"""End to end beside a (stand-in) GPU node: real node_exporter + a dcgm-exporter double
-> `faultline collect` -> the real broker -> `faultline serve` -> the right alerts.

node_exporter (Debian's, started here on loopback) reads an InfiniBand sysfs tree this test
writes and changes between scrapes; dcgm-exporter cannot run without a GPU, so a local HTTP
server serves its exposition text (its metric names and labels).  Faults: XID 79 on GPU 2,
a sustained HW-thermal throttle on GPU 5, and port mlx5_1 going down.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from servers_harness import ROOT, free_port, node_exporter
from service_harness import Deployment, wait_for

from detector.alerts import Scope
from detector.collect.testing import DcgmDouble, DcgmState, write_ib_port

pytestmark = [pytest.mark.kafka, pytest.mark.servers]

NODE = "node-a"
EXPECTED = {("hardware", "gpu_hardware", f"gpu:{NODE}/2"),
            ("slow_node", "thermal", f"gpu:{NODE}/5"),
            ("network", "nic", f"nic:{NODE}/mlx5_1:1")}


def metric(url: str, name: str) -> float:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as resp:
        text = resp.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name))


@dataclass
class Node:
    sysfs: Path
    dcgm: DcgmState

    def traffic(self, step: int) -> None:
        for k in range(4):
            if k != 1 or self.healthy_nic:
                (self.sysfs / f"class/infiniband/mlx5_{k}/ports/1/counters/port_xmit_data"
                 ).write_text(f"{25 * 10**7 * step}\n")

    healthy_nic = True

    def break_things(self) -> None:
        self.dcgm.set(2, "DCGM_FI_DEV_XID_ERRORS", 79)
        self.dcgm.set(5, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 0x40)
        self.dcgm.set(5, "DCGM_FI_DEV_GPU_TEMP", 92)
        self.dcgm.set(5, "DCGM_FI_DEV_SM_CLOCK", 1400)
        self.healthy_nic = False
        write_ib_port(self.sysfs, "mlx5_1", up=False, counters={"link_downed": 1},
                      hw_counters={})


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[Node, str, str]]:
    sysfs = tmp_path / "sys"
    for k in range(4):
        write_ib_port(sysfs, f"mlx5_{k}", hw_counters={})
    state = DcgmState(gpus=8, hostname=NODE)
    with DcgmDouble(state) as dcgm, node_exporter(tmp_path, sysfs) as ne:
        yield Node(sysfs, state), dcgm.url, ne.url + "/metrics"


def test_collect_into_kafka_raises_the_right_alerts_in_serve(
        kafka_bootstrap: str, tmp_path: Path, node: tuple[Node, str, str]) -> None:
    stand_in, dcgm_url, ne_url = node
    dep = Deployment(kafka_bootstrap, tmp_path)
    worker = dep.start_worker("w0")
    collect = None
    try:
        wait_for("the worker's topics and assignment", worker.status, 90,
                 on_timeout=worker.log_tail)
        mport = free_port()
        log = open(tmp_path / "collect.log", "wb")  # noqa: SIM115 - closed below
        collect = subprocess.Popen(
            [sys.executable, "-m", "detector.cli", "collect", "--dcgm", dcgm_url,
             "--node-exporter", ne_url, "--node", NODE, "--interval", "0.5",
             "--bootstrap", kafka_bootstrap, "--metrics-port", str(mport)],
            cwd=ROOT, env=dep.env, stdout=log, stderr=subprocess.STDOUT)
        metrics_url = f"http://127.0.0.1:{mport}/metrics"
        tail = lambda: (tmp_path / "collect.log").read_text()[-3000:]  # noqa: E731
        step = 0

        def scrapes() -> float:
            nonlocal step
            step += 1
            stand_in.traffic(step)
            try:
                return metric(metrics_url, 'faultline_collect_scrapes_total{outcome="ok",'
                              'source="node_exporter"}')
            except OSError:
                return 0.0

        wait_for("three healthy scrapes", lambda: scrapes() >= 3, 60, interval_s=0.5,
                 on_timeout=tail)
        stand_in.break_things()

        def problems() -> set[tuple[str, str, str]]:
            stand_in.traffic(step)
            return {(v["kind"], v["cause"], Scope.from_dict(v["scope"]).key)
                    for _, v in dep.alerts() if v["status"] == "firing"}

        found = wait_for("the three alerts", lambda: problems() >= EXPECTED, 120,
                         interval_s=1.0, on_timeout=lambda: f"{problems()}\n{worker.log_tail()}")
        assert found
        assert problems() == EXPECTED  # and nothing else: the healthy GPUs and ports are quiet
        assert metric(metrics_url, "faultline_collect_dropped_total") == 0
        assert metric(metrics_url, "faultline_collect_xids_total") == 1
        collect.send_signal(signal.SIGTERM)
        assert collect.wait(30) == 0, tail()
        log.close()
    finally:
        if collect is not None and collect.poll() is None:
            collect.kill()
            collect.wait(10)
        dep.stop_all()
