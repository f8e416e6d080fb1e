"""Test doubles of what a GPU node exports, for the collector's tests and benchmarks.

:class:`DcgmDouble` serves dcgm-exporter's exposition text — its metric names,
HELP/TYPE lines and labels (``gpu``, ``UUID``, ``pci_bus_id``, ``device``,
``modelName``, ``Hostname``) as its template writes them — from a local HTTP
server, because dcgm-exporter itself cannot run without a GPU.
:func:`write_ib_port` writes a ``/sys/class/infiniband`` tree in the layout the
kernel (and node_exporter's procfs reader) uses.

>>> d = DcgmState(gpus=2, hostname="n0")
>>> d.set(1, "DCGM_FI_DEV_XID_ERRORS", 79)
>>> line = [ln for ln in d.text().splitlines() if ln.startswith("DCGM_FI_DEV_XID_ERRORS{")][1]
>>> print(line.replace(",", ",\\n"))
DCGM_FI_DEV_XID_ERRORS{gpu="1",
UUID="GPU-00000000-0000-0000-0000-000000000001",
pci_bus_id="00000000:2A:00.0",
device="nvidia1",
modelName="NVIDIA H100 80GB HBM3",
Hostname="n0"} 79
"""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

# dcgm-exporter's default-counters.csv (type, help), plus the ECC, retired-page, NVLink
# and clock-event fields a faultline deployment turns on.
DCGM_FIELDS = {
    "DCGM_FI_DEV_SM_CLOCK": ("gauge", "SM clock frequency (in MHz).", 1980),
    "DCGM_FI_DEV_MEMORY_TEMP": ("gauge", "Memory temperature (in C).", 60),
    "DCGM_FI_DEV_GPU_TEMP": ("gauge", "GPU temperature (in C).", 65),
    "DCGM_FI_DEV_POWER_USAGE": ("gauge", "Power draw (in W).", 520.5),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": ("counter", "Total number of PCIe retries.", 0),
    "DCGM_FI_DEV_GPU_UTIL": ("gauge", "GPU utilization (in %).", 97),
    "DCGM_FI_DEV_XID_ERRORS": ("gauge", "Value of the last XID error encountered.", 0),
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": ("gauge", "Current clock event reasons (bitmask).", 0),
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": ("counter", "Total number of single-bit volatile ECC "
                                      "errors.", 0),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": ("counter", "Total number of double-bit volatile ECC "
                                      "errors.", 0),
    "DCGM_FI_DEV_RETIRED_SBE": ("counter", "Total number of retired pages due to single-bit "
                                "errors.", 0),
    "DCGM_FI_DEV_RETIRED_DBE": ("counter", "Total number of retired pages due to double-bit "
                                "errors.", 0),
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": ("counter", "Total number of NVLink "
                                                      "flow-control CRC errors.", 0),
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": ("counter", "Total number of NVLink data "
                                                      "CRC errors.", 0),
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": ("counter", "Total number of NVLink "
                                                    "retries.", 0),
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": ("counter", "Total number of NVLink "
                                                      "recovery errors.", 0),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": ("counter", "Number of remapped rows for "
                                                "uncorrectable errors", 0),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": ("gauge", "Whether remapping of rows has failed", 0),
    "DCGM_FI_DEV_FB_FREE": ("gauge", "Framebuffer memory free (in MiB).", 1024),
}
H100_BUSES = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")  # a DGX H100's GPUs


class DcgmState:
    """The values a dcgm-exporter would show for ``gpus`` GPUs of one host; thread-safe."""

    def __init__(self, gpus: int = 8, hostname: str = "node-a",
                 model: str = "NVIDIA H100 80GB HBM3", throttle_name: str =
                 "DCGM_FI_DEV_CLOCKS_EVENT_REASONS") -> None:
        self.hostname = hostname
        self.model = model
        self.throttle_name = throttle_name
        self.values = [{k: v[2] for k, v in DCGM_FIELDS.items()} for _ in range(gpus)]
        self.xid_counts: dict[tuple[int, int], int] = {}  # (gpu, xid) -> DCGM_EXP count
        self.fail = False  # serve a 500, as an exporter that lost DCGM does
        self._lock = threading.Lock()

    def set(self, gpu: int, name: str, value: float) -> None:
        with self._lock:
            self.values[gpu][name] = value

    def add_xid_count(self, gpu: int, xid: int, n: int = 1) -> None:
        with self._lock:
            self.xid_counts[(gpu, xid)] = self.xid_counts.get((gpu, xid), 0) + n

    def _labels(self, gpu: int) -> str:
        bus = H100_BUSES[gpu % len(H100_BUSES)] if gpu < len(H100_BUSES) else f"{gpu:02X}"
        return (f'gpu="{gpu}",UUID="GPU-00000000-0000-0000-0000-{gpu:012d}",'
                f'pci_bus_id="00000000:{bus}:00.0",device="nvidia{gpu}",'
                f'modelName="{self.model}",Hostname="{self.hostname}"')

    def text(self) -> str:
        with self._lock:
            out = []
            for name, (kind, help_text, _) in DCGM_FIELDS.items():
                shown = self.throttle_name if name == "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" else name
                out.append(f"# HELP {shown} {help_text}")
                out.append(f"# TYPE {shown} {kind}")
                for gpu, vals in enumerate(self.values):
                    out.append(f"{shown}{{{self._labels(gpu)}}} {vals[name]}")
            if self.xid_counts:
                name = "DCGM_EXP_XID_ERRORS_COUNT"
                out.append(f"# HELP {name} Count of XID Errors within user-specified time "
                           f"window (see xid-count-window-size param).")
                out.append(f"# TYPE {name} gauge")
                for gpu in range(len(self.values)):
                    xids = sorted(x for g, x in self.xid_counts if g == gpu)
                    if not xids:
                        out.append(f'{name}{{{self._labels(gpu)},window_size_in_ms="300000"}} 0')
                    for x in xids:
                        out.append(f'{name}{{{self._labels(gpu)},window_size_in_ms="300000",'
                                   f'xid="{x}"}} {self.xid_counts[(gpu, x)]}')
            return "\n".join(out) + "\n"


class DcgmDouble:
    """A local HTTP server serving a :class:`DcgmState` at ``/metrics``; ``close()`` stops it."""

    def __init__(self, state: DcgmState, host: str = "127.0.0.1", port: int = 0) -> None:
        self.state = state
        self.requests = 0
        double = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                double.requests += 1
                if self.path.split("?")[0] != "/metrics" or double.state.fail:
                    self.send_error(404 if not double.state.fail else 500)
                    return
                body = double.state.text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer((host, port), Handler)
        self.url = f"http://{host}:{self._server.server_port}/metrics"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> DcgmDouble:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


IB_COUNTERS = ("symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
               "port_xmit_discards", "port_xmit_wait", "port_rcv_data", "port_xmit_data",
               "port_rcv_packets", "port_xmit_packets", "local_link_integrity_errors",
               "excessive_buffer_overrun_errors", "port_rcv_remote_physical_errors")
ROCE_HW_COUNTERS = ("out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled",
                    "local_ack_timeout_err", "np_ecn_marked_roce_packets", "out_of_buffer")


def write_ib_port(sysfs: Path, device: str, port: int = 1, *, up: bool = True,
                  rate_gbps: int = 400, counters: dict[str, int] | None = None,
                  hw_counters: dict[str, int] | None = None) -> Path:
    """Write (or rewrite) one port under ``<sysfs>/class/infiniband`` as the kernel lays it out.

    Counters not given are 0; ``hw_counters`` (RoCE, mlx5) are written only when given.
    """
    dev = sysfs / "class" / "infiniband" / device
    base = dev / "ports" / str(port)
    (base / "counters").mkdir(parents=True, exist_ok=True)
    for name, text in (("board_id", "MT_0000000838"), ("fw_ver", "28.39.1002"),
                       ("hca_type", "MT4129")):
        (dev / name).write_text(text + "\n")
    (base / "state").write_text("4: ACTIVE\n" if up else "1: DOWN\n")
    (base / "phys_state").write_text("5: LinkUp\n" if up else "3: Disabled\n")
    (base / "rate").write_text(f"{rate_gbps} Gb/sec (4X NDR)\n")
    counters = counters or {}
    for name in IB_COUNTERS:
        (base / "counters" / name).write_text(f"{counters.get(name, 0)}\n")
    if hw_counters is not None:
        (base / "hw_counters").mkdir(exist_ok=True)
        for name in ROCE_HW_COUNTERS:
            (base / "hw_counters" / name).write_text(f"{hw_counters.get(name, 0)}\n")
    return base
