"""The Kafka bench's diagnostics: the broker's request log, its flight recording's durations,
the machine sampler and the feed producer's statistics (bench/kafka_bench.py).

These are what the latency rounds tell the box from the code and the broker from the
worker by, so each must read what the broker, librdkafka and the kernel write.
"""

from __future__ import annotations

import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import kafka_bench as kb  # noqa: E402
from conftest import _load_broker_module  # noqa: E402

broker_py = _load_broker_module()


def test_the_request_log_goes_to_its_own_file_at_debug(tmp_path: Path) -> None:
    xml = broker_py._log4j2(tmp_path / "broker.log", tmp_path / "requests.log")
    root = ET.fromstring(xml)
    files = {a.get("name"): a.get("fileName") for a in root.iter("File")}
    assert files == {"file": str(tmp_path / "broker.log"),
                     "requests": str(tmp_path / "requests.log")}
    logger = next(x for x in root.iter("Logger") if x.get("name") == "kafka.request.logger")
    assert logger.get("level") == "debug" and logger.get("additivity") == "false"
    assert [r.get("ref") for r in logger.iter("AppenderRef")] == ["requests"]
    # Without a request log the configuration is the tests' own, unchanged.
    assert broker_py._log4j2(tmp_path / "b.log") == broker_py._LOG4J2.format(
        log=str(tmp_path / "b.log"))


def test_request_times_reads_each_completed_request_since_a_time(tmp_path: Path) -> None:
    log = tmp_path / "requests.log"
    log.write_text(
        '1700000000100 Completed request:{"requestHeader":{"requestApiKey":0,'
        '"clientId":"feed"},"totalTimeMs":2100.5,"localTimeMs":2099.0}\n'
        "1700000000200 a line that is not a request\n"
        '1700000000300 Completed request:{"requestHeader":{"requestApiKey":1},'
        '"totalTimeMs":10.1}\n')
    got = broker_py.request_times(log, since_ms=1700000000050)
    assert [(r["done_ms"], r["totalTimeMs"]) for r in got] == [(1700000000100, 2100.5),
                                                               (1700000000300, 10.1)]
    assert [r["done_ms"] for r in broker_py.request_times(log, 1700000000200)] == [
        1700000000300]


@pytest.mark.parametrize(("text", "secs"), [("PT0.012S", 0.012), ("PT1M2.5S", 62.5),
                                            ("PT2H", 7200.0), ("PT0S", 0.0), ("bad", 0.0)])
def test_jfr_durations(text: str, secs: float) -> None:
    assert kb._iso_seconds(text) == pytest.approx(secs)


def test_the_box_sampler_splits_cpu_time_and_stalls_between_two_times() -> None:
    box = kb.BoxSampler(every_s=0.1)
    # /proc/stat's cpu fields: user nice system idle iowait irq softirq steal
    box.samples = [
        (100.0, [0, 0, 0, 0, 0, 0, 0, 0], {"io_full": 0, "cpu_some": 0}, 100, 0),
        (101.0, [50, 0, 10, 100, 20, 0, 0, 20], {"io_full": 300_000, "cpu_some": 50_000},
         4096, 1024),
        (200.0, [999, 0, 0, 0, 0, 0, 0, 0], {"io_full": 10**9, "cpu_some": 0}, 0, 0),
    ]
    got = box.between(100.0, 101.0)
    assert got["steal"] == pytest.approx(0.1) and got["iowait"] == pytest.approx(0.1)
    assert got["idle"] == pytest.approx(0.5)
    assert got["psi_io_full_ms_per_s"] == pytest.approx(300.0)
    assert got["psi_cpu_some_ms_per_s"] == pytest.approx(50.0)
    assert got["dirty_mib"] == pytest.approx(4.0) and got["writeback_mib"] == pytest.approx(1.0)
    assert box.between(150.0, 151.0) == {}  # no two samples there


def test_a_real_sample_has_every_field() -> None:
    now, cpu, psi, dirty, writeback = kb.box_sample()
    assert len(cpu) >= 8 and dirty >= 0 and writeback >= 0
    assert not Path("/proc/pressure/io").exists() or {"io_some", "io_full", "cpu_some"} <= set(psi)


def test_feed_stats_reads_the_brokers_windows_not_the_bootstrap_entry() -> None:
    text = ('{"msg_cnt": 4200, "brokers": {'
            '"127.0.0.1:9092/bootstrap": {"nodeid": -1, "int_latency": {"p99": 9e9}},'
            '"127.0.0.1:9092/1": {"nodeid": 1, "int_latency": {"p50": 1000, "p99": 250000, '
            '"max": 300000}, "outbuf_latency": {"p50": 5, "p99": 50, "max": 70}, '
            '"rtt": {"p50": 800, "p99": 9000, "max": 12000}}}}')
    got = kb.feed_stats(text)
    assert got["msg_cnt"] == 4200
    assert got["int_latency"] == (1000, 250000, 300000)  # µs, as librdkafka reports them
    assert got["rtt"] == (800, 9000, 12000) and got["outbuf_latency"] == (5, 50, 70)


def test_the_sampler_reads_each_process_cpu_and_wait() -> None:
    import os

    with kb.BoxSampler(every_s=0.05, pids={"me": os.getpid(), "gone": 0}) as box:
        end = time.time() + 0.3
        while time.time() < end:  # on a CPU for a while
            pass
    got = box.between(box.samples[0][0], box.samples[-1][0])
    # The busy thread is on a CPU or waiting for one all the time, however loaded the box
    # (how the two split is the box's: not asserted).
    assert got["me_cpu"] > 0.0 and got["me_wait"] >= 0.0
    assert 0.5 < got["me_cpu"] + got["me_wait"] <= 2.1
    assert "gone_cpu" not in got  # a pid of 0 (no broker of our own) is left out
