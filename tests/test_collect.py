"""faultline collect: exporter text and sysfs into the contract, XIDs as events, backoff."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry

from detector.cli.main import main
from detector.collect.agent import CollectMetrics, Collector
from detector.collect.dcgm import XidTracker, read_dcgm
from detector.collect.exposition import parse_samples
from detector.collect.fields import DCGM_METRICS
from detector.collect.infiniband import ports_from_sysfs
from detector.collect.kernel_log import KernelXids
from detector.collect.sinks import KafkaSink, LogSink
from detector.collect.testing import DcgmDouble, DcgmState, write_ib_port
from detector.events import ECC, NIC, THERMAL, decode
from replay.log import Record, log_topology, read_records
from replay.runner import replay_log

T0 = 1767225600.0


class FakeClock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def collector(state: DcgmState, sink, *, sysfs: Path | None = None, clock=None, fetch=None,
              kernel=None) -> Collector:
    return Collector("node-a", sink, CollectMetrics(CollectorRegistry()), dcgm_url="dcgm",
                     sysfs=str(sysfs) if sysfs else None, interval_s=1.0,
                     clock=clock or FakeClock(), fetch=fetch or (lambda u, t: state.text()),
                     kernel=kernel)


class ListSink:
    def __init__(self) -> None:
        self.batches: list[list] = []

    def send_batch(self, batch) -> None:
        self.batches.append(batch)

    def poll(self) -> None:
        pass

    def buffered(self) -> int:
        return 0

    def close(self, timeout_s: float = 10.0) -> int:
        return 0


def test_dcgm_text_becomes_valid_contract_messages_under_either_throttle_name():
    for name in ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"):
        state = DcgmState(gpus=2, throttle_name=name)
        state.set(1, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 0x40)
        state.set(1, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 17)
        state.set(1, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", 2)
        state.set(1, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", 3)
        sink = ListSink()
        batch = collector(state, sink).tick()
        by = {(t, v["gpu"]): v for t, v in batch}
        assert by[(THERMAL, 1)]["throttle"] == 0x40 and by[(THERMAL, 0)]["throttle"] == 0
        assert by[(ECC, 1)]["sbe_volatile"] == 17 and by[(ECC, 1)]["nvlink_crc_errors"] == 5
        for topic, value in batch:  # every message passes the service's own decoder
            decode(topic, orjson.dumps(value))


def test_xid_gauge_changes_and_windowed_counts_become_one_event_each():
    state = DcgmState(gpus=2)
    state.set(0, "DCGM_FI_DEV_XID_ERRORS", 13)  # from before the agent started: a baseline
    tracker = XidTracker()
    read = lambda: read_dcgm(parse_samples(state.text(), DCGM_METRICS))  # noqa: E731
    assert tracker.update(read()) == []
    state.set(0, "DCGM_FI_DEV_XID_ERRORS", 79)
    assert tracker.update(read()) == [(0, 79)]
    assert tracker.update(read()) == []  # the gauge still holds 79: no new event
    # GPU 1 has dcgm-exporter's windowed count: two 48s and a 94 in one interval
    state.add_xid_count(1, 48, 2)
    state.add_xid_count(1, 94)
    state.set(1, "DCGM_FI_DEV_XID_ERRORS", 94)  # ignored where the count exists
    assert tracker.update(read()) == [(1, 48), (1, 48), (1, 94)]
    state.xid_counts[(1, 48)] = 1  # one slid out of the window: not an event
    assert tracker.update(read()) == []


def test_several_xids_in_one_interval_go_out_as_several_messages_the_engine_counts():
    state = DcgmState(gpus=1)
    sink = ListSink()
    c = collector(state, sink)
    c.tick()
    state.add_xid_count(0, 48, 2)
    batch = c.tick()
    xids = [v for t, v in batch if t == ECC and v.get("xid") is not None]
    assert [v["xid"] for v in xids] == [48, 48]
    assert len({v["ts"] for v in xids}) == 2  # not mistaken for one message delivered twice


def test_sysfs_ports_pass_counters_as_counters_with_roce_hw_counters(tmp_path):
    write_ib_port(tmp_path, "mlx5_0", counters={"port_xmit_data": 250, "symbol_error": 3},
                  hw_counters={"out_of_sequence": 7, "np_cnp_sent": 9})
    write_ib_port(tmp_path, "mlx5_1", up=False, counters={"link_downed": 2})
    state = DcgmState(gpus=0)
    batch = collector(state, ListSink(), sysfs=tmp_path).tick()
    nics = {v["nic"]: v for t, v in batch if t == NIC}
    assert nics["mlx5_0"]["tx_bytes"] == 1000  # port_xmit_data counts 4-byte words
    assert nics["mlx5_0"]["out_of_sequence"] == 7 and nics["mlx5_0"]["np_cnp_sent"] == 9
    assert nics["mlx5_0"]["link_state"] == "up" and nics["mlx5_0"]["rate_gbps"] == 400.0
    assert nics["mlx5_1"]["link_state"] == "down" and nics["mlx5_1"]["link_downed"] == 2
    assert "out_of_sequence" not in nics["mlx5_1"]  # no hw_counters on that port
    assert set(ports_from_sysfs(tmp_path / "nowhere")) == set()


def test_kernel_log_xids_keep_their_time_and_map_to_the_gpu_by_pci_bus(tmp_path):
    klog = tmp_path / "kern.log"
    klog.write_text("NVRM: Xid (PCI:0000:3a:00): 31, pid=1, old line before the agent\n")
    kernel = KernelXids(str(klog), clock=lambda: T0 + 0.25)
    try:
        state = DcgmState(gpus=8)
        state.set(2, "DCGM_FI_DEV_XID_ERRORS", 0)
        clock = FakeClock()
        c = collector(state, ListSink(), clock=clock, kernel=kernel)
        c.tick()
        with klog.open("a") as f:
            f.write("Dec  1 10:00:00 node-a kernel: [1234.5] NVRM: Xid (PCI:0000:3a:00): 79, "
                    "pid=1234, name=python, GPU has fallen off the bus.\n")
            f.write("NVRM: Xid (PCI:0000:77:00): 48, pid=1, a bus no GPU has\n")
        state.set(2, "DCGM_FI_DEV_XID_ERRORS", 79)  # dcgm-exporter saw it too: not sent twice
        deadline = time.monotonic() + 10
        xids: list = []
        while not xids and time.monotonic() < deadline:
            time.sleep(0.05)
            clock.t += 1
            xids = [v for t, v in c.tick() if t == ECC and v.get("xid") is not None]
        assert xids == [{"ts": T0 + 0.25, "node": "node-a", "gpu": 2, "xid": 79}]
        clock.t += 120  # the unknown bus is given up on, and counted
        c.tick()
        assert c.metrics.unmapped._value.get() == 1
    finally:
        kernel.close()


def test_a_failing_source_backs_off_exponentially_and_recovers():
    state = DcgmState(gpus=1)
    calls: list[float] = []
    clock = FakeClock()

    def fetch(url: str, timeout_s: float) -> str:
        calls.append(clock.t)
        if state.fail:
            raise OSError("connection refused")
        return state.text()

    c = collector(state, ListSink(), clock=clock, fetch=fetch)
    state.fail = True
    for _ in range(40):
        c.tick()
        clock.t += 1
    gaps = [b - a for a, b in zip(calls, calls[1:], strict=False)]
    assert gaps[:4] == [2, 4, 8, 16]
    state.fail = False
    clock.t = calls[-1] + 32
    assert any(t == THERMAL for t, _ in c.tick())
    assert c.metrics.failed["dcgm"]._value.get() == len(calls) - 1


def test_kafka_sink_drops_and_counts_past_its_buffer_when_the_broker_is_away():
    dropped: list[int] = []
    sink = KafkaSink({"bootstrap.servers": "127.0.0.1:9"}, {ECC: "telemetry.ecc"},
                     buffer_messages=10, on_drop=dropped.append)
    sink.send_batch([(ECC, {"ts": T0, "node": "n", "gpu": i}) for i in range(25)])
    assert (sink.sent, sink.dropped, sum(dropped)) == (10, 15, 15)
    # librdkafka queues a log line at each failed reconnect beside the messages; its
    # out-queue length then counts it too.  Wait for one (a condition, not a time) so
    # the count is checked with one there -- the race that failed this test once.
    _wait_until_queued(sink._producer, more_than=10)
    assert sink.buffered() == 10
    assert sink.close(0.1) == 10
    assert (sink.dropped, sum(dropped), sink.buffered()) == (25, 25, 0)  # the rest counts too
    del sink  # let librdkafka go now, not at exit
    assert sum(dropped) == 25  # ... once: no purge report counted again


def _wait_until_queued(producer, more_than: int, limit_s: float = 30.0) -> None:
    """Until librdkafka's out-queue holds more than ``more_than`` items; the limit only
    keeps a broken test from hanging."""
    deadline = time.monotonic() + limit_s
    while len(producer) <= more_than:
        assert time.monotonic() < deadline, "librdkafka queued nothing beside the messages"
        time.sleep(0.01)


def test_collected_log_replays_to_the_right_alerts_with_its_own_topology(tmp_path):
    """XID 79, a sustained HW-thermal throttle and a NIC going down, collected then replayed."""
    sysfs = tmp_path / "sys"
    state = DcgmState(gpus=8)
    clock = FakeClock()
    sink = LogSink(tmp_path / "c.jsonl.gz", name="collect-node-a")
    c = collector(state, sink, sysfs=sysfs, clock=clock)
    for i in range(40):
        if i == 10:
            state.set(2, "DCGM_FI_DEV_XID_ERRORS", 79)
        if i == 20:
            state.set(5, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 0x40)
            state.set(5, "DCGM_FI_DEV_GPU_TEMP", 92)
            state.set(5, "DCGM_FI_DEV_SM_CLOCK", 1400)
        for k in range(4):
            if i == 0 or (k == 1 and i == 30):
                write_ib_port(sysfs, f"mlx5_{k}", up=i < 30, hw_counters={},
                              counters={"link_downed": int(i == 30)})
            if k != 1 or i < 30:
                (sysfs / f"class/infiniband/mlx5_{k}/ports/1/counters/port_xmit_data"
                 ).write_text(f"{10**8 * i}\n")
        c.tick()
        clock.t += 1
    sink.close()
    first = next(iter(read_records(tmp_path / "c.jsonl.gz")))
    assert isinstance(first, Record) and first.topic == "topology"
    topo = log_topology(tmp_path / "c.jsonl.gz")
    assert topo is not None and topo.gpus_of("node-a") == 8
    res = replay_log(tmp_path / "c.jsonl.gz", topology=topo)
    assert not res.invalid
    firing = {(a.kind, a.cause, a.scope.key, round(a.detected_ts - T0))
              for a in res.alerts if a.status == "firing"}
    assert firing == {("hardware", "gpu_hardware", "gpu:node-a/2", 10),
                      ("slow_node", "thermal", "gpu:node-a/5", 22),
                      ("network", "nic", "nic:node-a/mlx5_1:1", 30)}


def test_cli_collect_out_writes_a_self_describing_log(tmp_path, capsys):
    sysfs = tmp_path / "sys"
    write_ib_port(sysfs, "mlx5_0")
    with DcgmDouble(DcgmState(gpus=2)) as dcgm:
        rc = main(["collect", "--dcgm", dcgm.url, "--sysfs", str(sysfs), "--node", "node-b",
                   "--interval", "0.2", "--duration", "0.5", "--out", str(tmp_path / "o.jsonl"),
                   "--metrics-port", "-1"])
        assert rc == 0
        assert dcgm.requests >= 2
    recs = [r for r in read_records(tmp_path / "o.jsonl") if isinstance(r, Record)]
    assert recs[0].topic == "topology"
    topics = {r.topic for r in recs[1:]}
    assert topics == {THERMAL, ECC, NIC}
    assert {r.value["node"] for r in recs[1:]} == {"node-b"}
    assert "scrapes" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["collect", "--dcgm", dcgm.url, "--interval", "x"])
    assert main(["collect", "--dcgm", dcgm.url, "--out", "x", "--bootstrap", "y"]) == 2


def test_cli_collect_goes_on_when_an_exporter_is_down_and_counts_it(tmp_path, caplog):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/metrics"
    sysfs = tmp_path / "sys"
    write_ib_port(sysfs, "mlx5_0")
    rc = main(["collect", "--dcgm", dead, "--sysfs", str(sysfs), "--node", "node-c",
               "--interval", "0.1", "--duration", "0.35", "--out", str(tmp_path / "o.jsonl"),
               "--metrics-port", "-1"])
    assert rc == 0
    recs = [r for r in read_records(tmp_path / "o.jsonl") if isinstance(r, Record)]
    assert {r.topic for r in recs} == {NIC} and len(recs) >= 3  # the NIC, every scrape
    assert "dcgm scrape failed (1 in a row; next try in 0.2 s)" in caplog.text
    assert "dcgm scrape failed (2 in a row; next try in 0.4 s)" in caplog.text
    assert recs[0].topic != "topology"  # no GPU seen: the format cannot describe the node


def test_the_log_head_waits_for_dcgm_exporter_to_answer(tmp_path):
    state = DcgmState(gpus=4)
    state.fail = True
    sysfs = tmp_path / "sys"
    write_ib_port(sysfs, "mlx5_0")
    clock = FakeClock()

    def fetch(url: str, timeout_s: float) -> str:
        if state.fail:
            raise OSError("connection refused")
        return state.text()

    sink = LogSink(tmp_path / "c.jsonl", name="collect-node-a")
    c = collector(state, sink, sysfs=sysfs, clock=clock, fetch=fetch)
    c.tick()
    clock.t += 2
    state.fail = False
    c.tick()
    sink.close()
    recs = [r for r in read_records(tmp_path / "c.jsonl") if isinstance(r, Record)]
    assert recs[0].topic == "topology" and recs[1].topic == NIC  # nothing held back is lost
    topo = log_topology(tmp_path / "c.jsonl")
    assert topo is not None and topo.gpus_of("node-a") == 4


def test_an_exporter_page_over_the_limit_is_a_failed_scrape_not_unbounded_memory():
    import http.server
    import threading

    from detector.collect.agent import http_get

    class Big(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"# HELP x\n" * 2000)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Big)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        assert http_get(url, 5.0).count("# HELP") == 2000
        with pytest.raises(ValueError, match="larger than 1,000 bytes"):
            http_get(url, 5.0, limit=1000)
    finally:
        server.shutdown()
        server.server_close()


def test_a_reading_the_contract_cannot_carry_is_left_out_counted_by_field():
    """One bad value costs only itself: the GPU's and port's other readings go out, and the
    agent's /metrics says which field lost how many (room fixes, round 8)."""
    state = DcgmState(gpus=2)
    state.set(1, "DCGM_FI_DEV_SM_CLOCK", -5)
    state.set(1, "DCGM_FI_DEV_POWER_USAGE", float("nan"))
    state.set(1, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 1e30)
    state.set(1, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", float("inf"))
    state.set(1, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 2)
    ib = ('node_infiniband_state_id{device="mlx5_0",port="1"} +Inf\n'
          'node_infiniband_link_downed_total{device="mlx5_0",port="1"} 3\n')
    registry = CollectorRegistry()
    c = Collector("node-a", ListSink(), CollectMetrics(registry), dcgm_url="dcgm",
                  node_exporter_url="ne", clock=FakeClock(),
                  fetch=lambda u, t: state.text() if u == "dcgm" else ib)
    batch = c.tick()
    by = {(t, v.get("gpu", v.get("nic"))): v for t, v in batch}
    for topic, value in batch:
        decode(topic, orjson.dumps(value))
    gpu1 = by[(THERMAL, 1)]
    assert "sm_clock_mhz" not in gpu1 and "power_w" not in gpu1 and "throttle" not in gpu1
    assert "gpu_temp_c" in gpu1 and by[(THERMAL, 0)]["power_w"] > 0
    assert "sbe_volatile" not in by[(ECC, 1)] and by[(ECC, 1)]["dbe_volatile"] == 2
    assert "link_state" not in by[(NIC, "mlx5_0")] and by[(NIC, "mlx5_0")]["link_downed"] == 3

    def bad(field: str) -> float:
        return registry.get_sample_value("faultline_collect_invalid_values_total",
                                         {"field": field}) or 0.0

    assert {f: bad(f) for f in ("sm_clock_mhz", "power_w", "throttle", "sbe_volatile",
                                "link_state", "gpu_temp_c")} == {
        "sm_clock_mhz": 1, "power_w": 1, "throttle": 1, "sbe_volatile": 1, "link_state": 1,
        "gpu_temp_c": 0}


def test_a_followed_file_without_newlines_is_not_held_and_the_next_xid_is_read(tmp_path):
    """A followed kernel log that grows 300 KiB without a newline: what it holds is dropped
    past 64 KiB (counted as one overlong line), and the XID after its newline is read
    (room fixes, round 8)."""
    klog = tmp_path / "kern.log"
    klog.write_bytes(b"")
    kernel = KernelXids(str(klog), clock=lambda: T0)
    try:
        with klog.open("ab") as f:
            for _ in range(10):
                f.write(b"y" * (30 << 10))
                f.flush()
                time.sleep(0.02)
            f.write(b" NVRM: Xid (PCI:0000:3a:00): 13, inside the long line\n")
            f.write(b"NVRM: Xid (PCI:0000:3a:00): 79, pid=1\n")
        deadline = time.monotonic() + 10
        got: list = []
        while not got and time.monotonic() < deadline:
            time.sleep(0.05)
            got = kernel.drain()
        assert [xid for _, _, xid in got] == [79]
        assert kernel.overlong == 1 and kernel.error is None
    finally:
        kernel.close()
