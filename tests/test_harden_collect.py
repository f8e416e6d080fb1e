"""Adversarial review (room harden, round 8): pathological exporter pages and kernel-log lines.

The collector scrapes text it does not control (dcgm-exporter, node_exporter, the
kernel log).  The rule (README, "faultline collect"): nothing a source returns
can stop the loop, and what it sends is the contract's -- a record the
detector's decoder would dead-letter loses the good readings it carries.

Each case runs the real :class:`~detector.collect.agent.Collector` (its scrape,
parse, XID tracking and record mapping) on a page with one pathological line
beside healthy GPUs, twice (the XID tracker's first sight is a baseline), and
decodes every record it emitted with the detector's own decoder.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from detector.collect.agent import CollectMetrics, Collector
from detector.collect.kernel_log import KernelXids
from detector.collect.sinks import LogSink
from detector.decoding import decode_value
from detector.events import InvalidMessage
from replay.log import Record, read_records

T0 = 1767225600.0


def _dcgm_page(bad: str) -> str:
    lines = []
    for g in range(2):
        lbl = f'gpu="{g}",UUID="GPU-{g}",pci_bus_id="00000000:{0x3B + g:02X}:00.0",Hostname="n7"'
        lines += [f"DCGM_FI_DEV_GPU_TEMP{{{lbl}}} 65",
                  f"DCGM_FI_DEV_POWER_USAGE{{{lbl}}} 500",
                  f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{lbl}}} 0",
                  f"DCGM_FI_DEV_XID_ERRORS{{{lbl}}} 0"]
    lines.append(bad)
    return "\n".join(lines) + "\n"


def _scrape(page: str, tmp: Path, *, node_exporter: bool = False
            ) -> list[tuple[str, dict[str, Any]]]:
    """Two scrapes of ``page`` by the agent, written by its ``--out LOG`` sink and read back."""
    path = tmp / "collect.jsonl"
    sink = LogSink(path, head_wait=1)
    urls: dict[str, str] = ({"node_exporter_url": "http://ne/metrics"} if node_exporter
                            else {"dcgm_url": "http://dcgm/metrics"})
    c = Collector("n7", sink, CollectMetrics(CollectorRegistry()), fetch=lambda u, t: page,
                  clock=lambda: T0, **urls)
    try:
        c.tick()
        c.tick()
    finally:
        sink.close()
    return [(r.topic, r.value) for r in read_records(path)
            if isinstance(r, Record) and r.topic.startswith("telemetry.")]


def _undecodable(got: list[tuple[str, dict[str, Any]]]) -> list[str]:
    bad = []
    for topic, value in got:
        try:
            decode_value(topic, value)
        except InvalidMessage as exc:
            bad.append(exc.reason)
    return bad


# -- pins: shapes no collector test tried, that hold ------------------------------------

@pytest.mark.parametrize("bad", [
    'DCGM_FI_DEV_XID_ERRORS{gpu="1"} +Inf',       # the last-XID gauge at infinity
    'DCGM_FI_DEV_XID_ERRORS{gpu="1"} NaN',
    'DCGM_FI_DEV_GPU_TEMP{gpu="1"} 1e400',         # parses as inf: the field is left out
    'DCGM_FI_DEV_GPU_TEMP{gpu="-1"} 70',           # a negative index: skipped
    'DCGM_FI_DEV_GPU_TEMP{gpu="16777216"} 70',     # the contract's bound on gpu: skipped
    'DCGM_FI_DEV_GPU_TEMP{gpu="1_0"} 70',          # int() takes underscores: gpu 10, valid
    'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{gpu="1"} 1e300',  # clipped to 2^63 - 1
    'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{gpu="1"} -3',   # no reading
    'DCGM_FI_DEV_GPU_TEMP{gpu="1",Hostname="evil\\u202e"} 70',  # label escapes kept literal
    "DCGM_FI_DEV_GPU_TEMP{" + ",".join(f'l{i}="v"' for i in range(2000)) + ',gpu="1"} 70',
])
def test_a_pathological_dcgm_line_is_skipped_and_the_rest_still_goes_out(
        bad: str, tmp_path: Path) -> None:
    got = _scrape(_dcgm_page(bad), tmp_path)
    assert {v["gpu"] for t, v in got if t == "telemetry.thermal"} >= {0, 1}
    assert _undecodable(got) == []


def test_an_unparseable_page_is_a_failed_scrape_not_a_dead_agent(tmp_path: Path) -> None:
    page = _dcgm_page('DCGM_FI_DEV_GPU_TEMP{gpu="1" 70')  # unterminated label set
    assert _scrape(page, tmp_path) == []


# -- findings ----------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{gpu="1"} +Inf',
    'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="1"} +Inf',
    'DCGM_EXP_XID_ERRORS_COUNT{gpu="1",xid="79"} +Inf',
    'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="1"} 1e30',
])
def test_an_infinite_counter_does_not_stop_the_collector(bad: str, tmp_path: Path) -> None:
    got = _scrape(_dcgm_page(bad), tmp_path)
    assert {v["gpu"] for t, v in got if t == "telemetry.thermal"} >= {0, 1}


def test_an_infinite_link_state_does_not_stop_the_collector(tmp_path: Path) -> None:
    page = "\n".join([
        'node_infiniband_state_id{device="mlx5_0",port="1"} 4',
        'node_infiniband_link_downed_total{device="mlx5_0",port="1"} 0',
        'node_infiniband_state_id{device="mlx5_1",port="1"} +Inf',
        'node_infiniband_link_downed_total{device="mlx5_1",port="1"} 0', ""])
    got = _scrape(page, tmp_path, node_exporter=True)
    assert [v["nic"] for _, v in got] >= ["mlx5_0"]


@pytest.mark.parametrize("bad", [
    'DCGM_FI_DEV_SM_CLOCK{gpu="1"} -5',
    'DCGM_EXP_XID_ERRORS_COUNT{gpu="1",xid="99999999999"} 1',
])
def test_every_record_the_collector_sends_is_one_the_contract_accepts(
        bad: str, tmp_path: Path) -> None:
    got = _scrape(_dcgm_page(bad), tmp_path)
    assert _undecodable(got) == []


def _follow_file(tmp_path: Path, lines: list[bytes]) -> KernelXids:
    path = tmp_path / "kern.log"
    path.write_bytes(b"")
    kx = KernelXids(str(path), clock=lambda: T0)
    with path.open("ab") as f:
        for line in lines:
            f.write(line + b"\n")
    return kx


def _drain(kx: KernelXids, want: int) -> list[tuple[float, tuple[int, int, int], int]]:
    got: list[tuple[float, tuple[int, int, int], int]] = []
    deadline = time.monotonic() + 10.0
    while len(got) < want and time.monotonic() < deadline:
        got += kx.drain()
        time.sleep(0.05)
    return got


def test_kernel_log_garbage_between_two_xids_loses_neither(tmp_path: Path) -> None:
    """Pin: non-UTF-8 bytes, a 1 MiB line, an XID past the bound, a bad PCI address."""
    kx = _follow_file(tmp_path, [
        b"NVRM: Xid (PCI:0000:3b:00): 48, pid=1",
        b"\xff\xfe garbage " + b"x" * (1 << 20),
        b"NVRM: Xid (PCI:0000:3b:00): 16777216, pid=1",      # >= 2^24: not an XID
        b"NVRM: Xid (PCI:zzzz): 79",
        b"NVRM: Xid (PCI:0000:3c:00): 79, pid=2"])
    try:
        got = _drain(kx, 2)
    finally:
        kx.close()
    assert [(bus, xid) for _, bus, xid in got] == [((0, 0x3B, 0), 48), ((0, 0x3C, 0), 79)]
    assert kx.error is None


def test_a_kernel_line_with_a_huge_xid_does_not_stop_the_reader(tmp_path: Path) -> None:
    kx = _follow_file(tmp_path, [
        b"NVRM: Xid (PCI:0000:3b:00): " + b"9" * 5000,
        b"NVRM: Xid (PCI:0000:3c:00): 79, pid=2"])
    try:
        got = _drain(kx, 1)
    finally:
        kx.close()
    assert [(bus, xid) for _, bus, xid in got] == [((0, 0x3C, 0), 79)]
    assert kx.error is None
