"""My reading of DESIGN.md's input contract and incident-log format, as a checker.

Not faultline's decoder: written from the contract's text.  ``check(lines)`` returns a
list of problems (empty when the log follows the contract).
"""

from __future__ import annotations

import math

import orjson

TOPICS = {"telemetry.step", "telemetry.ecc", "telemetry.nic", "telemetry.thermal"}
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
RECOVERY = {"none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset"}
# field -> type: "f" float (int accepted), "i" int, "s" str, "b" bool; upper case = required
FIELDS = {
    "telemetry.step": {
        "ts": "F",
        "job": "S",
        "step": "I",
        "rank": "I",
        "node": "S",
        "gpu": "I",
        "step_ms": "F",
        "compute_ms": "f",
        "comm_ms": "f",
        "tp_rank": "i",
        "pp_rank": "i",
        "dp_rank": "i",
        "loss": "f",
        "grad_norm": "f",
        "param_checksum": "s",
    },
    "telemetry.ecc": {
        "ts": "F",
        "node": "S",
        "gpu": "I",
        "sbe_volatile": "i",
        "dbe_volatile": "i",
        "retired_pages_sbe": "i",
        "retired_pages_dbe": "i",
        "row_remap_pending": "b",
        "row_remap_failure": "b",
        "xid": "i",
        "pcie_replay": "i",
        "nvlink_crc_errors": "i",
        "nvlink_replay_errors": "i",
        "nvlink_recovery_errors": "i",
        "recovery_action": "s",
    },
    "telemetry.nic": {
        "ts": "F",
        "node": "S",
        "nic": "S",
        "port": "I",
        "link_state": "s",
        "rate_gbps": "f",
        "tx_bytes": "i",
        "rx_bytes": "i",
        "symbol_errors": "i",
        "link_downed": "i",
        "rcv_errors": "i",
        "xmit_discards": "i",
        "xmit_wait": "i",
        "out_of_sequence": "i",
        "packet_seq_err": "i",
        "np_cnp_sent": "i",
        "rp_cnp_handled": "i",
    },
    "telemetry.thermal": {
        "ts": "F",
        "node": "S",
        "gpu": "I",
        "gpu_temp_c": "f",
        "mem_temp_c": "f",
        "power_w": "f",
        "sm_clock_mhz": "f",
        "throttle": "i",
    },
}
SMALL_INTS = {"rank", "tp_rank", "pp_rank", "dp_rank", "gpu", "port"}
NAMES = {"node", "job", "nic", "cluster", "tenant"}


def _bad_name(s: str) -> bool:
    return len(s) > 256 or any(
        ord(c) < 32 or ord(c) == 127 or 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069
        for c in s
    )


def _field(topic: str, v: dict, name: str, t: str) -> str | None:
    x = v.get(name)
    if x is None:
        return f"{topic}: missing {name}" if t.isupper() else None
    t = t.lower()
    if t == "f":
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            return f"{topic}: {name}={x!r} not a finite number"
    elif t == "i":
        if isinstance(x, bool) or not isinstance(x, int):
            return f"{topic}: {name}={x!r} not an int"
        top = 2**24 if name in SMALL_INTS else 2**63
        if not 0 <= x < top:
            return f"{topic}: {name}={x} out of range"
    elif t == "s":
        if not isinstance(x, str) or (name in NAMES and _bad_name(x)):
            return f"{topic}: {name}={x!r} not a valid string"
    elif t == "b" and not isinstance(x, bool):
        return f"{topic}: {name}={x!r} not a bool"
    return None


def check_value(topic: str, v: dict) -> list[str]:
    errs = [e for name, t in FIELDS[topic].items() if (e := _field(topic, v, name, t))]
    if errs:
        return errs
    if topic == "telemetry.step":
        present = [k in v for k in ("tp_rank", "pp_rank", "dp_rank")]
        if any(present) and not all(present):
            errs.append("step: tp/pp/dp ranks must come all three or none")
        for k in ("step_ms", "compute_ms", "comm_ms"):
            if k in v and v[k] < 0:
                errs.append(f"step: negative {k}")
        if v["step_ms"] + 1e-9 < v.get("compute_ms", 0.0) + v.get("comm_ms", 0.0):
            errs.append(f"step: step_ms {v['step_ms']} < compute_ms + comm_ms")
    if topic == "telemetry.ecc" and v.get("recovery_action") not in (None, *RECOVERY):
        errs.append(f"ecc: recovery_action {v['recovery_action']!r}")
    if topic == "telemetry.nic" and v.get("link_state") not in (None, "up", "down"):
        errs.append(f"nic: link_state {v['link_state']!r}")
    return errs


def check_label(lab: dict) -> list[str]:
    errs = []
    for k in ("fault_id", "kind", "cause", "scope", "start_ts", "end_ts", "attributable"):
        if k not in lab:
            errs.append(f"label: missing {k}")
    if errs:
        return errs
    if lab["kind"] not in KINDS:
        errs.append(f"label {lab['fault_id']}: kind {lab['kind']}")
    if lab["cause"] not in CAUSES:
        errs.append(f"label {lab['fault_id']}: cause {lab['cause']}")
    sc = lab["scope"]
    need = SCOPE_KEYS.get(sc.get("level"))
    if need is None or not need <= set(sc):
        errs.append(f"label {lab['fault_id']}: scope {sc}")
    if not lab["start_ts"] <= lab["end_ts"]:
        errs.append(f"label {lab['fault_id']}: start after end")
    if not isinstance(lab["attributable"], bool):
        errs.append(f"label {lab['fault_id']}: attributable not a bool")
    return errs


def check(lines) -> list[str]:
    """Problems of one incident log (an iterable of JSON lines)."""
    errs: list[str] = []
    high = -math.inf
    seen_labels = False
    n = 0
    labels, units = [], {}
    for i, line in enumerate(lines):
        rec = orjson.loads(line)
        topic, v = rec.get("topic"), rec.get("value")
        if topic == "topology":
            if i != 0:
                errs.append(f"line {i + 1}: topology record not first")
            if v.get("format") not in ("faultline", "slurm") or not isinstance(v.get("text"), str):
                errs.append("topology: bad format or text")
            continue
        if topic == "labels":
            seen_labels = True
            labels.append(v)
            errs.extend(check_label(v))
            continue
        if seen_labels:
            errs.append(f"line {i + 1}: telemetry after the labels")
        if topic not in TOPICS:
            errs.append(f"line {i + 1}: unknown topic {topic}")
            continue
        e = check_value(topic, v)
        if e:
            errs.extend(f"line {i + 1}: {x}" for x in e)
            continue
        n += 1
        if v["ts"] < high - 5.0:
            errs.append(f"line {i + 1}: {topic} {high - v['ts']:.2f} s out of event-time order")
        high = max(high, v["ts"])
        key = (v["node"], v.get("gpu"))
        lo, hi = units.get(key, (math.inf, -math.inf))
        units[key] = (min(lo, v["ts"]), max(hi, v["ts"]))
    for lab in labels:
        sc = lab.get("scope", {})
        if "node" in sc:
            key = (sc["node"], sc.get("gpu"))
            span = units.get(key) or units.get((sc["node"], 0))
            if span is None:
                errs.append(f"label {lab['fault_id']}: no telemetry from its unit")
    if n == 0:
        errs.append("no telemetry")
    return errs
