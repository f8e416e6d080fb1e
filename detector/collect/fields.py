"""Exporter metric names -> contract fields, shared by the live collector and the importers.

One table per source, read from the exporters' own names (dcgm-exporter's
``etc/default-counters.csv``, node_exporter's ``collector/infiniband_linux.go``)
so a reader can check them against DESIGN.md line by line.

>>> thermal_record("n0", 3, 10.0, {"DCGM_FI_DEV_GPU_TEMP": 71.0,
...                                "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": 64.0})
{'ts': 10.0, 'node': 'n0', 'gpu': 3, 'gpu_temp_c': 71.0, 'throttle': 64}
>>> nic_record("n0", "mlx5_0", 1, 10.0, {"node_infiniband_state_id": 1.0,
...                                      "node_infiniband_link_downed_total": 2.0})
{'ts': 10.0, 'node': 'n0', 'nic': 'mlx5_0', 'port': 1, 'link_state': 'down', 'link_downed': 2}
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

# -- dcgm-exporter -------------------------------------------------------------------------

DCGM_THERMAL = {  # contract field of telemetry.thermal -> dcgm-exporter metric
    "gpu_temp_c": "DCGM_FI_DEV_GPU_TEMP",
    "mem_temp_c": "DCGM_FI_DEV_MEMORY_TEMP",
    "power_w": "DCGM_FI_DEV_POWER_USAGE",
    "sm_clock_mhz": "DCGM_FI_DEV_SM_CLOCK",
}
NON_NEGATIVE = frozenset(["power_w", "sm_clock_mhz"])  # the contract's minimum 0 (temps: none)
# The clock-event reason bitmask, under its newer name first (DCGM renamed it; both exist).
THROTTLE_METRICS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")

DCGM_ECC_COUNTERS = {  # contract int field of telemetry.ecc -> the metrics summed into it
    "sbe_volatile": ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",),
    "dbe_volatile": ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",),
    "retired_pages_sbe": ("DCGM_FI_DEV_RETIRED_SBE",),
    "retired_pages_dbe": ("DCGM_FI_DEV_RETIRED_DBE",),
    "pcie_replay": ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER",),
    "nvlink_crc_errors": ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
                          "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"),
    "nvlink_replay_errors": ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",),
    "nvlink_recovery_errors": ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",),
}
DCGM_ECC_FLAGS = {
    "row_remap_pending": "DCGM_FI_DEV_ROW_REMAP_PENDING",
    "row_remap_failure": "DCGM_FI_DEV_ROW_REMAP_FAILURE",
}
XID_LAST = "DCGM_FI_DEV_XID_ERRORS"        # a gauge holding the last XID code
XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"    # XIDs within a window, one series per `xid` label

DCGM_METRICS = frozenset(
    [*DCGM_THERMAL.values(), *THROTTLE_METRICS, *DCGM_ECC_FLAGS.values(), XID_LAST, XID_COUNT,
     *(m for ms in DCGM_ECC_COUNTERS.values() for m in ms)])
ECC_METRICS = frozenset([*DCGM_ECC_FLAGS.values(),
                         *(m for ms in DCGM_ECC_COUNTERS.values() for m in ms)])
THERMAL_METRICS = frozenset([*DCGM_THERMAL.values(), *THROTTLE_METRICS])

# -- node_exporter infiniband collector ----------------------------------------------------

IB = "node_infiniband_"
NODE_EXPORTER_NIC = {  # contract int field of telemetry.nic -> node_exporter metric
    "tx_bytes": IB + "port_data_transmitted_bytes_total",
    "rx_bytes": IB + "port_data_received_bytes_total",
    "symbol_errors": IB + "symbol_error_total",
    "link_downed": IB + "link_downed_total",
    "rcv_errors": IB + "port_errors_received_total",
    "xmit_discards": IB + "port_discards_transmitted_total",
    "xmit_wait": IB + "port_transmit_wait_total",
    # RoCE hw_counters (node_exporter >= 1.8; older ones: read --sysfs)
    "out_of_sequence": IB + "out_of_sequence_packets_received_total",
    "packet_seq_err": IB + "packet_sequence_errors_total",
    "np_cnp_sent": IB + "np_cnp_packets_sent_total",
    "rp_cnp_handled": IB + "rp_cnp_packets_handled_total",
}
IB_STATE = IB + "state_id"                 # 4 ACTIVE, 5 ACT_DEFER: up; anything else: down
IB_RATE = IB + "rate_bytes_per_second"
NIC_METRICS = frozenset([*NODE_EXPORTER_NIC.values(), IB_STATE, IB_RATE])
_NIC_BY_METRIC = {m: f for f, m in NODE_EXPORTER_NIC.items()}
UP_STATES = (4, 5)

# sysfs: /sys/class/infiniband/<dev>/ports/<n>/{counters,hw_counters}/<file>; data in 4-byte words
SYSFS_COUNTERS = {
    "tx_bytes": ("counters", "port_xmit_data", 4),
    "rx_bytes": ("counters", "port_rcv_data", 4),
    "symbol_errors": ("counters", "symbol_error", 1),
    "link_downed": ("counters", "link_downed", 1),
    "rcv_errors": ("counters", "port_rcv_errors", 1),
    "xmit_discards": ("counters", "port_xmit_discards", 1),
    "xmit_wait": ("counters", "port_xmit_wait", 1),
    "out_of_sequence": ("hw_counters", "out_of_sequence", 1),
    "packet_seq_err": ("hw_counters", "packet_seq_err", 1),
    "np_cnp_sent": ("hw_counters", "np_cnp_sent", 1),
    "rp_cnp_handled": ("hw_counters", "rp_cnp_handled", 1),
}

COUNTER_MAX = (1 << 63) - 1  # the contract's bound; a wider value is clipped, not sent
_INF = float("inf")
CHECKED_FIELDS = (*DCGM_THERMAL, "throttle", *DCGM_ECC_COUNTERS, "xid", "link_state",
                  "rate_gbps", *NODE_EXPORTER_NIC)  # the fields a reading can be left out of

# An exporter's reading outside what its contract field can hold (NaN, +-Inf, a negative
# counter, a bitmask past 2^63) is left out of the message and counted under the field's
# name in ``bad``; the record keeps the GPU's or port's other readings.  Sent as is, the
# decoder would dead-letter the whole record with them (DESIGN.md, "Bounds").


def _count(v: float, fld: str, bad: Counter[str] | None) -> int | None:
    if 0 <= v < _INF:  # False for NaN
        return min(int(v), COUNTER_MAX)
    if bad is not None:
        bad[fld] += 1
    return None


def _real(v: float, fld: str, bad: Counter[str] | None, minimum: float = -_INF
          ) -> float | None:
    if math.isfinite(v) and v >= minimum:
        return float(v)
    if bad is not None:
        bad[fld] += 1
    return None


def thermal_record(node: str, gpu: int, ts: float, values: Mapping[str, float],
                   bad: Counter[str] | None = None) -> dict[str, Any] | None:
    """A ``telemetry.thermal`` value from one GPU's dcgm-exporter readings, or None."""
    rec: dict[str, Any] = {"ts": ts, "node": node, "gpu": gpu}
    for fld, metric in DCGM_THERMAL.items():
        v = values.get(metric)
        if v is not None:
            x = _real(v, fld, bad, 0.0 if fld in NON_NEGATIVE else -_INF)
            if x is not None:
                rec[fld] = x
    for metric in THROTTLE_METRICS:
        v = values.get(metric)
        if v is not None:
            if 0 <= v <= COUNTER_MAX:  # a bitmask clipped would be bits nobody set
                rec["throttle"] = int(v)
            elif bad is not None:
                bad["throttle"] += 1
            break
    return rec if len(rec) > 3 else None


def ecc_record(node: str, gpu: int, ts: float, values: Mapping[str, float],
               xid: int | None = None, bad: Counter[str] | None = None
               ) -> dict[str, Any] | None:
    """A ``telemetry.ecc`` value (counters as reported; ``xid`` an event) or None when empty."""
    rec: dict[str, Any] = {"ts": ts, "node": node, "gpu": gpu}
    for fld, metrics in DCGM_ECC_COUNTERS.items():
        parts = [c for c in (_count(values[m], fld, bad) for m in metrics if m in values)
                 if c is not None]
        if parts:
            rec[fld] = min(sum(parts), COUNTER_MAX)
    for fld, metric in DCGM_ECC_FLAGS.items():
        v = values.get(metric)
        if v is not None and v == v:
            rec[fld] = bool(v)
    if xid is not None:
        rec["xid"] = xid
    return rec if len(rec) > 3 else None


def nic_record(node: str, nic: str, port: int, ts: float, values: Mapping[str, float],
               bad: Counter[str] | None = None) -> dict[str, Any] | None:
    """A ``telemetry.nic`` value from node_exporter ``node_infiniband_*`` readings of one port."""
    rec: dict[str, Any] = {"ts": ts, "node": node, "nic": nic, "port": port}
    state = values.get(IB_STATE)
    if state is not None and _real(state, "link_state", bad) is not None:
        rec["link_state"] = "up" if int(state) in UP_STATES else "down"
    rate = values.get(IB_RATE)
    if rate is not None:
        x = _real(rate, "rate_gbps", bad, 0.0)
        if x is not None:
            rec["rate_gbps"] = x * 8e-9
    for metric, v in values.items():
        fld = _NIC_BY_METRIC.get(metric)
        if fld is not None:
            c = _count(v, fld, bad)
            if c is not None:
                rec[fld] = c
    return rec if len(rec) > 4 else None


def node_of(labels: Mapping[str, str], node_label: str | None = None) -> str | None:
    """The node a series belongs to: ``node_label``, else ``node``, dcgm-exporter's
    ``Hostname``/``hostname``, else the host part of Prometheus's ``instance``."""
    for key in ((node_label,) if node_label else ()) + ("node", "Hostname", "hostname"):
        v = labels.get(key)
        if v:
            return v
    inst = labels.get("instance")
    if inst:
        host = inst.rsplit(":", 1)[0] if inst.count(":") == 1 or inst.startswith("[") else inst
        return host.strip("[]") or None
    return None
