"""Sort every false positive and miss of a scored blind log into the four errors found in round 9.

The rules read the alert's own evidence and the label (see BENCHMARKS "blind, round 9"):
F1 a switch isolated on ``nic_throughput`` (a quiet frontend NIC), F2 any other switch
isolation (a NIC fault plus healthy neighbours' counter trickles), F3 a slow_node alert on
a node whose PSU power brake is the label, F4 a NIC isolated on ``link_down`` after a
telemetry gap (a reboot). Anything else prints as ``??`` -- a new error to look at.
"""

from __future__ import annotations

import re
from collections import defaultdict


def diagnose(log_name: str, result: dict) -> str:
    """One table row: the log and its false positives and misses, grouped by diagnosis."""
    brakes = {
        f["label"]["scope"]["node"]
        for f in result["faults"]
        if f["label"]["fault_id"].endswith("power_brake")
    }
    parts: dict[str, list[str]] = defaultdict(list)
    for p in result["problems"]:
        if p["caught"]:
            continue
        a = p["first"]
        sig = (a["evidence"].get("signals") or [{}])[0]
        sc = a["scope"]
        if sc["level"] == "switch":
            k = "F1" if sig.get("signal") == "nic_throughput" else "F2"
        elif (sc["level"] == "nic" and sig.get("signal") == "link_down"
              and sig.get("sample_interval_s", 0) > 200):
            k = "F4"
        elif a["kind"] == "slow_node" and sc.get("node") in brakes:
            k = "F3"
        else:
            k = "??"
        parts[k].append(sc.get("switch") or sc.get("node", "?"))
    for f in result["faults"]:
        if not f["caught"]:
            what = re.search(r"-f\d+-(.*)$", f["label"]["fault_id"]).group(1)
            parts["miss " + {"power_brake": "F3", "leaf_down": "F1"}.get(what, "F1+F2")].append(
                what
            )
    cells = [f"{k} x{len(v)} ({', '.join(sorted(set(v)))})" for k, v in sorted(parts.items())]
    return f"| `{log_name.removesuffix('.jsonl.gz')}` | {'; '.join(cells) or '-'} |"
