"""The clusters of bench/blind4: nodes, their clocks, the 3-tier fabric, GPU physics.

Numbers are H100 SXM5 (700 W board limit, 1980 MHz max SM clock, idle ~70-95 W at
345 MHz) and ConnectX-7 NDR (400 Gb/s); see README.md for where each comes from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

TDP_W = 700.0
MAX_SM_MHZ = 1980.0
IDLE_SM_MHZ = 345.0
RATE_GBPS = 400.0


@dataclass
class Node:
    """One 8-GPU host: its name, NICs, leaf, clock offset and per-GPU constants."""

    name: str
    leaf: str
    rack: int
    pos_in_rack: int
    nics: tuple[str, ...]
    gpus: int = 8
    skew_s: float = 0.0  # node clock minus true time (NTP)
    phase_s: float = 0.0  # DCGM / NIC collector phase inside the interval
    interval_s: float = 10.0
    demand_w: list[float] = field(default_factory=list)  # per GPU, busy
    temp_off_c: list[float] = field(default_factory=list)  # per GPU, sensor/paste spread
    drop_fields: bool = False  # dcgm-exporter default set: optional ECC fields absent


@dataclass
class Fleet:
    """Nodes plus the topology record a recorder would put first in the log."""

    name: str
    nodes: list[Node]
    topo_format: str
    topo_text: str
    inlet_base_c: float
    diurnal_c: float
    diurnal_period_s: float
    diurnal_phase: float

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def inlet_c(self, node: Node, t: float) -> float:
        """Cold-aisle air at this node: a compressed day plus height in the rack."""
        day = self.diurnal_c * math.sin(
            2 * math.pi * t / self.diurnal_period_s + self.diurnal_phase
        )
        return self.inlet_base_c + day + 0.8 * node.pos_in_rack


def build_nodes(
    rng,
    names: list[str],
    per_leaf: int,
    leaf_names: list[str],
    per_rack: int,
    nics: tuple[str, ...],
    interval_s: float,
) -> list[Node]:
    nodes = []
    for i, name in enumerate(names):
        n = Node(
            name=name,
            leaf=leaf_names[i // per_leaf],
            rack=i // per_rack,
            pos_in_rack=i % per_rack,
            nics=nics,
            interval_s=interval_s,
            phase_s=round(rng.uniform(0, interval_s), 3),
        )
        # Demand at full load straddles the 700 W limit: some boards sit on the SW
        # power cap (0x4) all the time, others never reach it (silicon lottery).
        n.demand_w = [rng.uniform(640, 770) for _ in range(n.gpus)]
        n.temp_off_c = [rng.gauss(0, 2.0) for _ in range(n.gpus)]
        nodes.append(n)
    return nodes


def slurm_three_tier(
    leaves: dict[str, list[str]], spines: dict[str, list[str]], cores: list[str], hostlist
) -> str:
    """Slurm topology.conf of a 3-tier tree: cores over pod spines over leaves."""
    lines = ["# Slurm topology.conf (topology/tree), 3 tiers: core -> pod spine -> leaf -> nodes"]
    for leaf, nodes in leaves.items():
        lines.append(f"SwitchName={leaf} Nodes={hostlist(nodes)} LinkSpeed=400")
    for spine, under in spines.items():
        lines.append(f"SwitchName={spine} Switches={','.join(under)}")
    for core in cores:
        lines.append(f"SwitchName={core} Switches={','.join(spines)}")
    return "\n".join(lines) + "\n"


def hostlist(names: list[str]) -> str:
    """Compress `pfx-001,pfx-002,...` into `pfx-[001-002]` runs (Slurm hostlist)."""
    groups: dict[str, list[str]] = {}
    order = []
    for n in names:
        head = n.rstrip("0123456789")
        if head not in groups:
            groups[head] = []
            order.append(head)
        groups[head].append(n[len(head) :])
    parts = []
    for head in order:
        nums = groups[head]
        if not all(nums):
            parts.extend(head + x for x in nums)
            continue
        width = len(nums[0])
        vals = sorted(int(x) for x in nums)
        runs, start, prev = [], vals[0], vals[0]
        for v in vals[1:]:
            if v == prev + 1:
                prev = v
                continue
            runs.append((start, prev))
            start = prev = v
        runs.append((start, prev))
        txt = ",".join(
            f"{a:0{width}d}" if a == b else f"{a:0{width}d}-{b:0{width}d}" for a, b in runs
        )
        parts.append(f"{head}[{txt}]")
    return ",".join(parts)


def gpu_power(demand_w: float, load: float) -> tuple[float, int, float]:
    """Board power, clock-event bits and SM clock of a busy GPU at `load` of its demand.

    Above the 700 W limit the firmware lowers the clock until power fits (SW power
    cap 0x4); dynamic power goes roughly with f*V^2 ~ f^2 near the top of the curve.
    """
    want = 90.0 + (demand_w - 90.0) * load
    if want <= TDP_W:
        return want, 0, MAX_SM_MHZ
    clock = MAX_SM_MHZ * math.sqrt((TDP_W - 90.0) / (want - 90.0))
    return TDP_W - 0.5, 0x4, clock
