"""My reading of DESIGN.md's input contract, as a checker of blind2's own output."""

from __future__ import annotations

import math

REQUIRED = {
    "telemetry.step": {"ts": float, "job": str, "step": int, "rank": int, "node": str,
                       "gpu": int, "step_ms": float},
    "telemetry.ecc": {"ts": float, "node": str, "gpu": int},
    "telemetry.nic": {"ts": float, "node": str, "nic": str, "port": int},
    "telemetry.thermal": {"ts": float, "node": str, "gpu": int},
}
OPTIONAL = {
    "telemetry.step": {"compute_ms": float, "comm_ms": float, "tp_rank": int, "pp_rank": int,
                       "dp_rank": int, "loss": float, "grad_norm": float,
                       "param_checksum": str},
    "telemetry.ecc": {"sbe_volatile": int, "dbe_volatile": int, "retired_pages_sbe": int,
                      "retired_pages_dbe": int, "row_remap_pending": bool,
                      "row_remap_failure": bool, "xid": int, "pcie_replay": int,
                      "nvlink_crc_errors": int, "nvlink_replay_errors": int,
                      "nvlink_recovery_errors": int, "recovery_action": str},
    "telemetry.nic": {"link_state": str, "rate_gbps": float, "tx_bytes": int, "rx_bytes": int,
                      "symbol_errors": int, "link_downed": int, "rcv_errors": int,
                      "xmit_discards": int, "xmit_wait": int, "out_of_sequence": int,
                      "packet_seq_err": int, "np_cnp_sent": int, "rp_cnp_handled": int},
    "telemetry.thermal": {"gpu_temp_c": float, "mem_temp_c": float, "power_w": float,
                          "sm_clock_mhz": float, "throttle": int},
}
RECOVERY = {"none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset"}
KINDS = {"slow_node", "hardware", "network", "sdc", "unattributed"}
CAUSES = {"thermal", "power", "gpu_memory", "gpu_hardware", "nvlink", "nic", "switch",
          "software", "unknown"}
SCOPE_IDS = {"gpu": ("node", "gpu"), "node": ("node",), "nic": ("node", "nic"),
             "switch": ("switch",), "domain": ("domain",), "replica": ("job", "dp_rank"),
             "job": ("job",)}
MAX_DISORDER_S = 5.0


def _type_ok(value, want) -> bool:
    if want is float:
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value))
    if want is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, want)


def record_errors(topic: str, v: dict) -> list[str]:
    """What makes one telemetry record invalid under the contract (empty: valid)."""
    errs = []
    for key, want in REQUIRED[topic].items():
        if key not in v or v[key] is None or not _type_ok(v[key], want):
            errs.append(f"{topic}: required {key!r} missing or not {want.__name__}")
    for key, want in OPTIONAL[topic].items():
        if v.get(key) is not None and not _type_ok(v[key], want):
            errs.append(f"{topic}: {key!r} not {want.__name__}")
    if topic == "telemetry.step":
        present = [k in v for k in ("tp_rank", "pp_rank", "dp_rank")]
        if any(present) and not all(present):
            errs.append("step: tp/pp/dp ranks come all three or none")
        for key in ("step_ms", "compute_ms", "comm_ms"):
            if v.get(key) is not None and v[key] < 0:
                errs.append(f"step: negative {key}")
        if (v.get("step_ms") is not None
                and v["step_ms"] + 1e-6 < (v.get("compute_ms") or 0) + (v.get("comm_ms") or 0)):
            errs.append("step: step_ms < compute_ms + comm_ms")
    if topic == "telemetry.ecc" and v.get("recovery_action") not in (None, *RECOVERY):
        errs.append("ecc: unknown recovery_action")
    if topic == "telemetry.nic" and v.get("link_state") not in (None, "up", "down"):
        errs.append("nic: link_state not up/down")
    return errs


def label_errors(v: dict) -> list[str]:
    errs = []
    for key in ("fault_id", "kind", "cause", "scope", "start_ts", "end_ts", "attributable"):
        if key not in v:
            errs.append(f"label: {key!r} missing")
    if errs:
        return errs
    if v["kind"] not in KINDS:
        errs.append(f"label {v['fault_id']}: kind {v['kind']!r}")
    if v["cause"] not in CAUSES:
        errs.append(f"label {v['fault_id']}: cause {v['cause']!r}")
    level = v["scope"].get("level")
    if level not in SCOPE_IDS or any(k not in v["scope"] for k in SCOPE_IDS[level]):
        errs.append(f"label {v['fault_id']}: scope {v['scope']!r}")
    if not v["start_ts"] <= v["end_ts"]:
        errs.append(f"label {v['fault_id']}: start after end")
    if not isinstance(v["attributable"], bool):
        errs.append(f"label {v['fault_id']}: attributable not bool")
    return errs


def log_errors(records: list[dict]) -> list[str]:
    """Every contract problem in a whole log: records, labels, order, topology first."""
    errs = []
    if not records or records[0]["topic"] != "topology":
        errs.append("the topology record is not first")
    high = -math.inf
    ids = set()
    for rec in records:
        topic, v = rec["topic"], rec["value"]
        if topic in REQUIRED:
            errs += record_errors(topic, v)
            if v["ts"] < high - MAX_DISORDER_S:
                errs.append(f"{topic} at {v['ts']} is {high - v['ts']:.2f} s behind")
            high = max(high, v["ts"])
        elif topic == "labels":
            errs += label_errors(v)
            if v.get("fault_id") in ids:
                errs.append(f"label {v['fault_id']} twice")
            ids.add(v.get("fault_id"))
        elif topic != "topology":
            errs.append(f"unknown topic {topic}")
    return errs
