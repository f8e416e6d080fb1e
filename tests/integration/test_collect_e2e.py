"""End to end beside a (stand-in) GPU node, three ways to the same alerts:

1. real node_exporter + a dcgm-exporter double -> `faultline collect` -> the real broker
   -> `faultline serve`;
2. real Prometheus scraping the same two -> `faultline import prometheus` -> replay;
3. a `kcat -C -J` capture of the telemetry topics -> `faultline import kafka` (+ the
   operator's notes as labels) -> replay, scored.

node_exporter (Debian's, on loopback) reads an InfiniBand sysfs tree this test writes and
changes between scrapes; dcgm-exporter cannot run without a GPU, so a local HTTP server
serves its exposition text (its metric names and labels).  Faults, all at once after a
few healthy scrapes: XID 79 on GPU 2, a sustained HW-thermal throttle on GPU 5, port
mlx5_1 going down.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from servers_harness import ROOT, Server, free_port, node_exporter, prometheus, promql, require
from service_harness import Deployment, wait_for

from detector.alerts import Scope
from detector.cli.main import main
from detector.collect.testing import DcgmDouble, DcgmState, write_ib_port
from detector.events import TELEMETRY_TOPICS
from replay.log import Record, log_topology, read_records
from replay.runner import replay_log

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


def problems_of(alerts) -> set[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return {(v["kind"], v["cause"], Scope.from_dict(v["scope"]).key)
            for _, v in alerts if v["status"] == "firing"}


@dataclass
class Scenario:
    tmp: Path
    dep: Deployment
    prom: Server
    start: float = 0.0
    fault_ts: float = 0.0
    serve_problems: set[tuple[str, str, str]] = field(default_factory=set)
    collect_rc: int | None = None
    collect_log: str = ""
    dropped: float = -1.0
    xids: float = -1.0


class StandIn:
    """The node's two exporters' state: sysfs tree (node_exporter reads it) and the double."""

    def __init__(self, sysfs: Path, dcgm: DcgmState) -> None:
        self.sysfs, self.dcgm = sysfs, dcgm
        self.step = 0
        self.nic_up = True

    def traffic(self) -> None:
        self.step += 1
        for k in range(4):
            if k != 1 or self.nic_up:
                (self.sysfs / f"class/infiniband/mlx5_{k}/ports/1/counters/port_xmit_data"
                 ).write_text(f"{25 * 10**7 * self.step}\n")

    def break_things(self) -> None:
        self.dcgm.set(2, "DCGM_FI_DEV_XID_ERRORS", 79)
        self.dcgm.set(5, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 0x40)
        self.dcgm.set(5, "DCGM_FI_DEV_GPU_TEMP", 92)
        self.dcgm.set(5, "DCGM_FI_DEV_SM_CLOCK", 1400)
        self.nic_up = False
        write_ib_port(self.sysfs, "mlx5_1", up=False, counters={"link_downed": 1},
                      hw_counters={})


PROMETHEUS_YML = """global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: dcgm
    static_configs: [{{targets: ["{dcgm}"], labels: {{node: {node}}}}}]
  - job_name: node
    params: {{"collect[]": [infiniband]}}
    static_configs: [{{targets: ["{ne}"], labels: {{node: {node}}}}}]
"""


@pytest.fixture(scope="module")
def scenario(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Scenario]:
    tmp = tmp_path_factory.mktemp("collect-e2e")
    sysfs = tmp / "sys"
    for k in range(4):
        write_ib_port(sysfs, f"mlx5_{k}", hw_counters={})
    node = StandIn(sysfs, DcgmState(gpus=8, hostname=NODE))
    dep = Deployment(kafka_bootstrap, tmp)
    collect = None
    with DcgmDouble(node.dcgm) as dcgm, node_exporter(tmp, sysfs) as ne:
        dcgm_hostport = dcgm.url.split("/")[2]
        start = time.time()
        with prometheus(tmp, PROMETHEUS_YML.format(dcgm=dcgm_hostport, node=NODE,
                                                   ne=f"127.0.0.1:{ne.port}")) as prom:
            sc = Scenario(tmp, dep, prom, start=start)
            try:
                worker = dep.start_worker("w0")
                wait_for("the worker's topics and assignment", worker.status, 90,
                         on_timeout=worker.log_tail)
                mport = free_port()
                log = open(tmp / "collect.log", "wb")  # noqa: SIM115 - closed below
                collect = subprocess.Popen(
                    [sys.executable, "-m", "detector.cli", "collect", "--dcgm", dcgm.url,
                     "--node-exporter", ne.url + "/metrics", "--node", NODE, "--interval", "0.5",
                     "--bootstrap", kafka_bootstrap, "--metrics-port", str(mport)],
                    cwd=ROOT, env=dep.env, stdout=log, stderr=subprocess.STDOUT)
                metrics_url = f"http://127.0.0.1:{mport}/metrics"
                tail = lambda: (tmp / "collect.log").read_text()[-3000:]  # noqa: E731

                def healthy_scrapes() -> bool:
                    node.traffic()
                    try:
                        ours = metric(metrics_url, 'faultline_collect_scrapes_total{outcome="ok",'
                                      'source="node_exporter"}')
                    except OSError:
                        return False
                    res = promql(prom, 'min(count_over_time(up[1m]))')["data"]["result"]
                    return ours >= 3 and bool(res) and float(res[0]["value"][1]) >= 3

                wait_for("three healthy scrapes by collect and by Prometheus", healthy_scrapes,
                         60, interval_s=0.5, on_timeout=tail)
                sc.fault_ts = time.time()
                node.break_things()

                def serve_problems() -> set[tuple[str, str, str]]:
                    node.traffic()
                    return problems_of(dep.alerts())

                wait_for("the three alerts from serve", lambda: serve_problems() >= EXPECTED,
                         120, interval_s=1.0,
                         on_timeout=lambda: f"{serve_problems()}\n{worker.log_tail()}")
                sc.serve_problems = serve_problems()
                sc.dropped = metric(metrics_url, "faultline_collect_dropped_total")
                sc.xids = metric(metrics_url, "faultline_collect_xids_total")
                collect.send_signal(signal.SIGTERM)
                sc.collect_rc = collect.wait(30)
                log.close()
                sc.collect_log = tail()
                # Prometheus has scraped the faults for as long as serve took; a few more
                # (3 s of its 1 s scrapes, both targets up: a count of scrapes, not 3 s of
                # a clock a loaded box may spend elsewhere)
                until = time.time() + 3

                def scraped_past_until() -> bool:
                    node.traffic()
                    res = promql(prom, "timestamp(up == 1)")["data"]["result"]
                    return len(res) == 2 and min(float(r["value"][1]) for r in res) >= until

                wait_for("three more seconds of scrapes by Prometheus", scraped_past_until,
                         60, interval_s=0.5)
                yield sc
            finally:
                if collect is not None and collect.poll() is None:
                    collect.kill()
                    collect.wait(10)
                dep.stop_all()


def test_collect_into_kafka_raises_the_right_alerts_in_serve(scenario: Scenario) -> None:
    assert scenario.serve_problems == EXPECTED  # and nothing else: healthy GPUs, ports quiet
    assert scenario.collect_rc == 0, scenario.collect_log
    assert scenario.dropped == 0
    assert scenario.xids == 1


def test_prometheus_history_imported_replays_to_the_same_alerts(scenario: Scenario) -> None:
    out = scenario.tmp / "from-prometheus.jsonl.gz"
    rc = main(["import", "prometheus", "--url", scenario.prom.url, "--start",
               f"{scenario.start - 5:.3f}", "--end", f"{time.time():.3f}", "--step", "1",
               "--chunk-points", "20", "--out", str(out)])
    assert rc == 0
    topo = log_topology(out)  # the head record lists what the series showed
    assert topo is not None and topo.gpus_of(NODE) == 8
    res = replay_log(out, topology=topo)
    assert not res.invalid
    assert problems_of((a.topic, a.to_dict()) for a in res.alerts) == EXPECTED


def test_a_kcat_capture_with_notes_replays_and_scores(scenario: Scenario) -> None:
    kcat = require("kcat")
    dump = scenario.tmp / "capture.json"
    with dump.open("wb") as f:  # as an operator would capture them: topic by topic
        for topic in TELEMETRY_TOPICS:
            subprocess.run([kcat, "-C", "-J", "-b", scenario.dep.bootstrap, "-t",
                            scenario.dep.topic(topic), "-o", "beginning", "-e", "-q"],
                           stdout=f, check=True, timeout=60)
    notes = scenario.tmp / "notes.csv"
    t0, t1 = scenario.fault_ts - 1, scenario.fault_ts + 30
    notes.write_text("start,end,scope,kind,cause\n"
                     f"{t0},{t1},gpu:{NODE}/2,hardware,gpu_hardware\n"
                     f"{t0},{t1},gpu:{NODE}/5,slow_node,thermal\n"
                     f"{t0},{t1},nic:{NODE}/mlx5_1:1,network,nic\n")
    out = scenario.tmp / "from-kafka.jsonl"
    assert main(["import", "kafka", str(dump), "--labels", str(notes), "--out", str(out)]) == 0
    recs = [r for r in read_records(out) if isinstance(r, Record)]
    assert recs[0].topic == "topology" and recs[-1].topic == "labels"
    res = replay_log(out, topology=log_topology(out))
    assert problems_of((a.topic, a.to_dict()) for a in res.alerts) == EXPECTED
    card = res.scorecard()
    assert (card.total.faults, card.total.caught, card.total.false_positives) == (3, 3, 0)
    assert card.total.attribution == 1.0
