"""My reading of DESIGN's input contract and label rules, applied to a blind4 log.

`problems(records)` takes the log's records in file order ({"topic", "value"}) and
returns what breaks the contract (empty when the log is valid).
"""

from __future__ import annotations

import math

KINDS = {"slow_node", "hardware", "network", "sdc", "unattributed"}
CAUSES = {
    "thermal",
    "power",
    "gpu_memory",
    "gpu_hardware",
    "nvlink",
    "nic",
    "switch",
    "software",
    "unknown",
}
SCOPE_KEYS = {
    "gpu": {"node", "gpu"},
    "node": {"node"},
    "nic": {"node", "nic"},
    "switch": {"switch"},
    "domain": {"domain"},
    "replica": {"job", "dp_rank"},
    "job": {"job"},
}
REQUIRED = {
    "telemetry.step": {
        "ts": float,
        "job": str,
        "step": int,
        "rank": int,
        "node": str,
        "gpu": int,
        "step_ms": float,
    },
    "telemetry.ecc": {"ts": float, "node": str, "gpu": int},
    "telemetry.thermal": {"ts": float, "node": str, "gpu": int},
    "telemetry.nic": {"ts": float, "node": str, "nic": str, "port": int},
}
OPTIONAL = {
    "telemetry.step": {
        "compute_ms": float,
        "comm_ms": float,
        "tp_rank": int,
        "pp_rank": int,
        "dp_rank": int,
        "loss": float,
        "grad_norm": float,
        "param_checksum": str,
    },
    "telemetry.ecc": {
        "sbe_volatile": int,
        "dbe_volatile": int,
        "retired_pages_sbe": int,
        "retired_pages_dbe": int,
        "row_remap_pending": bool,
        "row_remap_failure": bool,
        "xid": int,
        "pcie_replay": int,
        "nvlink_crc_errors": int,
        "nvlink_replay_errors": int,
        "nvlink_recovery_errors": int,
        "recovery_action": str,
    },
    "telemetry.thermal": {
        "gpu_temp_c": float,
        "mem_temp_c": float,
        "power_w": float,
        "sm_clock_mhz": float,
        "throttle": int,
    },
    "telemetry.nic": {
        "link_state": str,
        "rate_gbps": float,
        "tx_bytes": int,
        "rx_bytes": int,
        "symbol_errors": int,
        "link_downed": int,
        "rcv_errors": int,
        "xmit_discards": int,
        "xmit_wait": int,
        "out_of_sequence": int,
        "packet_seq_err": int,
        "np_cnp_sent": int,
        "rp_cnp_handled": int,
    },
}
SMALL_INTS = {"rank", "tp_rank", "pp_rank", "dp_rank", "gpu", "port"}
NAMES = {"node", "job", "nic", "cluster", "tenant"}


def _type_ok(value, want) -> bool:
    if want is float:
        return (
            isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        )
    if want is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, want)


def record_problems(topic: str, v: dict) -> list[str]:
    """Contract violations of one telemetry message."""
    out = []
    for key, want in REQUIRED[topic].items():
        if key not in v or v[key] is None or not _type_ok(v[key], want):
            out.append(f"{topic}: required {key} missing or mistyped: {v.get(key)!r}")
    for key, want in OPTIONAL[topic].items():
        if v.get(key) is not None and not _type_ok(v[key], want):
            out.append(f"{topic}: {key} mistyped: {v[key]!r}")
    for key in SMALL_INTS & v.keys():
        if isinstance(v[key], int) and not 0 <= v[key] < 2**24:
            out.append(f"{topic}: {key} out of range")
    for key, value in v.items():
        if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
            out.append(f"{topic}: {key} beyond 64 bits")
        if isinstance(value, float) and not math.isfinite(value):
            out.append(f"{topic}: {key} not finite")
    for key in NAMES & v.keys():
        name = v[key]
        if isinstance(name, str) and (
            len(name) > 256 or any(ord(c) < 32 or 0x202A <= ord(c) <= 0x202E for c in name)
        ):
            out.append(f"{topic}: bad name {key}")
    if topic == "telemetry.step":
        have = [k for k in ("tp_rank", "pp_rank", "dp_rank") if v.get(k) is not None]
        if have and len(have) != 3:
            out.append("step: tp/pp/dp ranks not all three or none")
        for key in ("step_ms", "compute_ms", "comm_ms"):
            if isinstance(v.get(key), (int, float)) and v[key] < 0:
                out.append(f"step: negative {key}")
        timed = v.get("compute_ms") is not None and v.get("comm_ms") is not None
        if timed and v["step_ms"] + 1e-3 < v["compute_ms"] + v["comm_ms"]:
            out.append("step: step_ms < compute_ms + comm_ms")
    if topic == "telemetry.nic" and v.get("link_state") not in (None, "up", "down"):
        out.append("nic: link_state")
    if topic == "telemetry.ecc" and v.get("recovery_action") not in (
        None,
        "none",
        "gpu_reset",
        "node_reboot",
        "drain_p2p",
        "drain_and_reset",
    ):
        out.append("ecc: recovery_action")
    return out


def _unit_key(topic: str, v: dict) -> tuple:
    if topic == "telemetry.step":
        return topic, v["job"], v["rank"], v["step"]
    if topic == "telemetry.nic":
        return topic, v["node"], v["nic"], v["port"], v["ts"]
    return topic, v["node"], v["gpu"], v["ts"], v.get("xid")


def label_problems(lab: dict) -> list[str]:
    out = []
    for key in ("fault_id", "kind", "cause", "scope", "start_ts", "end_ts", "attributable"):
        if key not in lab:
            out.append(f"label {lab.get('fault_id')}: missing {key}")
    if out:
        return out
    if lab["kind"] not in KINDS or lab["cause"] not in CAUSES:
        out.append(f"label {lab['fault_id']}: kind/cause")
    scope = lab["scope"]
    if scope.get("level") not in SCOPE_KEYS or not SCOPE_KEYS[scope["level"]] <= scope.keys():
        out.append(f"label {lab['fault_id']}: scope {scope}")
    if not lab["start_ts"] <= lab["end_ts"] or not isinstance(lab["attributable"], bool):
        out.append(f"label {lab['fault_id']}: window/attributable")
    return out


def problems(
    records: list[dict], max_disorder_s: float = 5.0, exempt_nodes: set = frozenset()
) -> list[str]:
    """Every contract problem of a whole log (records in file order)."""
    out: list[str] = []
    if not records or records[0].get("topic") != "topology":
        out.append("the first record is not the topology")
    elif records[0]["value"].get("format") not in ("faultline", "slurm"):
        out.append("topology format")
    seen_label = False
    seen: set = set()
    newest: dict[str, float] = {}
    for rec in records[1:]:
        topic, v = rec.get("topic"), rec.get("value")
        if topic == "labels":
            seen_label = True
            out += label_problems(v)
            continue
        if seen_label:
            out.append("telemetry after a label (labels go last)")
        if topic not in REQUIRED or not isinstance(v, dict):
            out.append(f"unknown topic {topic}")
            continue
        out += record_problems(topic, v)
        key = _unit_key(topic, v)
        if key in seen:
            continue  # an at-least-once duplicate
        seen.add(key)
        node = v["node"]
        late = newest.get(node, v["ts"]) - v["ts"]
        if late > max_disorder_s and node not in exempt_nodes:
            out.append(f"{node}: a fresh record {late:.1f} s older than the node's newest")
        newest[node] = max(newest.get(node, v["ts"]), v["ts"])
    return out
