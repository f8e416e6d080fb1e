"""My reading of DESIGN's input contract and incident-log format, applied to a blind5 log.

    python -m bench.blind5.check LOG...

`problems(path)` returns every way a log breaks the contract as I read it (empty: none);
`tests/test_blind5_generate.py` runs it on one small seed.
"""

from __future__ import annotations

import gzip
import json
import math
import sys
from collections import defaultdict

REQUIRED = {
    "telemetry.step": {"ts": float, "job": str, "step": int, "rank": int, "node": str,
                       "gpu": int, "step_ms": float},
    "telemetry.ecc": {"ts": float, "node": str, "gpu": int},
    "telemetry.nic": {"ts": float, "node": str, "nic": str, "port": int},
    "telemetry.thermal": {"ts": float, "node": str, "gpu": int},
}
OPTIONAL = {
    "telemetry.step": {"compute_ms": float, "comm_ms": float, "tp_rank": int, "pp_rank": int,
                       "dp_rank": int, "loss": float, "grad_norm": float, "param_checksum": str},
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
KINDS = {"slow_node", "hardware", "network", "sdc", "unattributed"}
CAUSES = {"thermal", "power", "gpu_memory", "gpu_hardware", "nvlink", "nic", "switch",
          "software", "unknown"}
SCOPE_IDS = {"gpu": ("node", "gpu"), "node": ("node",), "nic": ("node", "nic"),
             "switch": ("switch",), "domain": ("domain",), "replica": ("job", "dp_rank"),
             "job": ("job",)}
RECOVERY = {"none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset"}


def _type_ok(value, want) -> bool:
    if want is float:  # JSON integers are accepted for floats; bool is not a number
        return isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value)
    if want is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, want)


def record_problems(topic: str, v: dict) -> list[str]:
    out = []
    for name, want in REQUIRED[topic].items():
        if name not in v or v[name] is None:
            out.append(f"{topic}: missing {name}")
        elif not _type_ok(v[name], want):
            out.append(f"{topic}: {name}={v[name]!r} not {want.__name__}")
    for name, want in OPTIONAL[topic].items():
        if v.get(name) is not None and not _type_ok(v[name], want):
            out.append(f"{topic}: {name}={v[name]!r} not {want.__name__}")
    for name in ("rank", "tp_rank", "pp_rank", "dp_rank", "gpu", "port"):
        if isinstance(v.get(name), int) and not 0 <= v[name] < 2**24:
            out.append(f"{topic}: {name} out of range")
    if topic == "telemetry.step":
        parts = [v.get(k) is not None for k in ("tp_rank", "pp_rank", "dp_rank")]
        if any(parts) and not all(parts):
            out.append("step: tp/pp/dp ranks not all three or none")
        for k in ("step_ms", "compute_ms", "comm_ms"):
            if isinstance(v.get(k), (int, float)) and v[k] < 0:
                out.append(f"step: negative {k}")
        if v.get("step_ms") is not None and v["step_ms"] < (v.get("compute_ms") or 0) + (
                v.get("comm_ms") or 0):
            out.append("step: step_ms < compute_ms + comm_ms")
    if topic == "telemetry.ecc" and v.get("recovery_action") not in (None, *RECOVERY):
        out.append(f"ecc: recovery_action {v['recovery_action']!r}")
    if topic == "telemetry.nic" and v.get("link_state") not in (None, "up", "down"):
        out.append(f"nic: link_state {v['link_state']!r}")
    for k in ("node", "job", "nic"):
        if isinstance(v.get(k), str) and (len(v[k]) > 256 or any(ord(c) < 32 for c in v[k])):
            out.append(f"{topic}: bad name {k}")
    return out


def problems(path: str, allowed_late: float = 5.0) -> list[str]:
    """Every contract problem in one log (labels checked against the records too)."""
    out: list[str] = []
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        lines = [json.loads(x) for x in fh if x.strip()]
    if not lines or lines[0].get("topic") != "topology":
        out.append("first record is not the topology")
    topics = [r["topic"] for r in lines]
    first_label = topics.index("labels") if "labels" in topics else len(topics)
    if any(t != "labels" for t in topics[first_label:]):
        out.append("labels are not all at the end")
    seen_max: dict[str, float] = {}
    late = 0
    by_node_ts: dict[str, list[float]] = defaultdict(list)
    for r in lines[1:first_label]:
        topic, v = r["topic"], r["value"]
        if topic not in REQUIRED:
            out.append(f"unknown topic {topic}")
            continue
        out += record_problems(topic, v)
        by_node_ts[v["node"]].append(v["ts"])
        # Disorder is judged per node clock (a node with a skewed clock is not disorder).
        key = v["node"]
        if v["ts"] < seen_max.get(key, -1e18) - allowed_late:
            late += 1
        seen_max[key] = max(seen_max.get(key, -1e18), v["ts"])
    labels = [r["value"] for r in lines[first_label:]]
    for lab in labels:
        for k in ("fault_id", "kind", "cause", "scope", "start_ts", "end_ts", "attributable"):
            if k not in lab:
                out.append(f"label missing {k}")
        if lab.get("kind") not in KINDS or lab.get("cause") not in CAUSES:
            out.append(f"label {lab.get('fault_id')}: kind/cause "
                       f"{lab.get('kind')}/{lab.get('cause')}")
        sc = lab.get("scope", {})
        if any(k not in sc for k in SCOPE_IDS.get(sc.get("level"), ("?",))):
            out.append(f"label {lab.get('fault_id')}: scope {sc}")
        if not lab.get("start_ts", 1) <= lab.get("end_ts", 0):
            out.append(f"label {lab.get('fault_id')}: start after end")
        node = sc.get("node")
        if node and node not in by_node_ts:
            out.append(f"label {lab.get('fault_id')}: node {node} has no records")
    if len({lab.get("fault_id") for lab in labels}) != len(labels):
        out.append("duplicate fault_id")
    return out, late


def main(argv: list[str] | None = None) -> int:
    bad = 0
    for path in argv or sys.argv[1:]:
        errs, late = problems(path)
        print(f"{path}: {len(errs)} problems, {late} records > 5 s behind their node's clock")
        for e in sorted(set(errs))[:20]:
            print("   ", e)
        bad += bool(errs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
