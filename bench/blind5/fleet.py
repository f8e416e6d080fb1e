"""The hardware of a blind5 log: GPU models, nodes, and per-second GPU physics.

Every GPU is simulated on a 1 s grid (power under its limit, lagged temperature,
thermal clock loss, clock-event reasons, the compute slowdown its rank sees). Faults
and operator actions act through `Node` windows; each change a fault makes is
remembered per GPU-second (`touch`) so that labels span exactly the records a fault
changed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GpuModel:
    """Board figures of one GPU generation (README, "Numbers, and why")."""

    name: str
    tdp_w: float  # board power limit at the factory default (`nvidia-smi -q -d POWER`)
    idle_w: float
    max_mhz: float  # boost SM clock
    idle_mhz: float
    slow_c: float  # where the firmware starts holding temperature (SW thermal, 0x20)
    c_per_w: float  # steady-state degrees above (inlet + 8 C) per watt of board power


B200 = GpuModel("B200", 1000.0, 140.0, 1965.0, 615.0, 88.0, 0.040)
H100 = GpuModel("H100", 700.0, 72.0, 1980.0, 345.0, 87.0, 0.052)

THR_IDLE, THR_SW_POWER, THR_SW_THERMAL = 0x1, 0x4, 0x20


@dataclass
class Node:
    """One host: its GPUs' physics inputs, collectors, clock and operator windows."""

    name: str
    model: GpuModel
    leaf: str
    nics: tuple[str, ...]
    inlet_c: float
    dcgm_s: float  # thermal sampling interval of its collector
    ecc_s: float
    nic_s: float
    phase: float  # collector phase, s
    collector: str  # "dcgm-exporter" (full ECC counters enabled) or "nvml-1s" (custom)
    clock_off_s: float = 0.0  # the node's clock minus true time
    gpus: int = 8
    demand: list[float] = field(default_factory=list)  # busy power demand / TDP, per GPU
    busy: list[list[tuple[float, float]]] = field(default_factory=list)  # per GPU
    down: list[tuple[float, float]] = field(default_factory=list)  # reboots: no telemetry
    ecc_off_from: float | None = None  # ECC mode disabled at this reboot (fields null)
    power_limits: list[tuple[float, float, float, str | None]] = field(default_factory=list)
    temp_add: dict[int, list] = field(default_factory=dict)  # gpu -> [(t0, t1, dmax, fid)]
    slow: dict[int, list] = field(default_factory=dict)  # gpu -> [(t0, t1, factor, fid)]
    sbe_rate: list[float] = field(default_factory=list)  # corrected errors per s, per GPU

    def is_down(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.down)

    def boot_of(self, t: float) -> float:
        """Start of the boot that holds `t` (counters count from here)."""
        starts = [b for a, b in self.down if b <= t]
        return max(starts) if starts else -1e9

    def is_busy(self, g: int, t: float) -> bool:
        return any(a <= t < b for a, b in self.busy[g])

    def limit_at(self, g: int, t: float) -> tuple[float, str | None]:
        for a, b, w, fid in self.power_limits:
            if a <= t < b:
                return w, fid
        return self.model.tdp_w, None


def make_node(rng: random.Random, name: str, model: GpuModel, leaf: str, nics, inlet_c,
              dcgm_s, ecc_s, nic_s, collector) -> Node:
    n = Node(name, model, leaf, tuple(nics), inlet_c, dcgm_s, ecc_s, nic_s,
             rng.uniform(0, dcgm_s), collector)
    # Silicon and workload spread: a busy board asks 92-108 % of its limit.
    n.demand = [rng.uniform(0.92, 1.08) for _ in range(n.gpus)]
    n.busy = [[] for _ in range(n.gpus)]
    # 3 % of GPUs accrue corrected errors slowly (0.5-3 a minute); the rest none.
    n.sbe_rate = [rng.uniform(0.5, 3) / 60 if rng.random() < 0.03 else 0.0
                  for _ in range(n.gpus)]
    return n


@dataclass
class GpuTrace:
    """Per-second state of one GPU over the log (index = seconds since T0)."""

    power: list[float]
    clock: list[float]
    temp: list[float]
    mem_temp: list[float]
    throttle: list[int]
    factor: list[float]  # compute-time multiplier its rank sees
    touch: list[frozenset]  # fault ids that changed this GPU-second's telemetry
    stouch: list[frozenset]  # fault ids that changed its rank's compute this second


def simulate_gpu(rng: random.Random, node: Node, g: int, t0: float, seconds: int) -> GpuTrace:
    """Power, clock, temperature and throttle of one GPU, second by second."""
    m = node.model
    # Start at the steady temperature of the first second's load (the log opens mid-run).
    first_w = min(m.tdp_w, m.tdp_w * node.demand[g]) if node.is_busy(g, t0) else m.idle_w
    temp = node.inlet_c + 8 + m.c_per_w * first_w
    temp_clean = temp
    out = GpuTrace([], [], [], [], [], [], [], [])
    for i in range(seconds):
        t = t0 + i
        touched: set[str] = set()
        stouched: set[str] = set()
        busy = node.is_busy(g, t) and not node.is_down(t)
        limit, lim_fid = node.limit_at(g, t)
        if busy:
            demand = m.tdp_w * node.demand[g] * rng.uniform(0.985, 1.015)
            thr = 0
            # Under the cap the firmware lowers the clock until power fits; near the top of
            # the V-f curve power goes roughly with f^2, so f ~ sqrt(P).
            if demand > limit:
                power = limit * rng.uniform(0.985, 1.0)
                clock = m.max_mhz * math.sqrt(limit / demand)
                thr |= THR_SW_POWER
            else:
                power, clock = demand, m.max_mhz
            clean_clock = m.max_mhz * math.sqrt(min(1.0, m.tdp_w / demand))
            if lim_fid and abs(clock - clean_clock) > 1:
                touched.add(lim_fid)
                stouched.add(lim_fid)
        else:
            power = m.idle_w * rng.uniform(0.9, 1.1)
            clock, clean_clock, thr = m.idle_mhz, m.idle_mhz, THR_IDLE
        add = 0.0
        for a, b, dmax, fid in node.temp_add.get(g, ()):
            if a <= t:
                add = dmax * min(1.0, (t - a) / (b - a))
                if add >= 0.5:
                    touched.add(fid)
        target = node.inlet_c + 8 + m.c_per_w * power
        temp += (target + add - temp) / 40.0  # ~40 s thermal time constant
        temp_clean += (target - temp_clean) / 40.0
        shown = temp
        if temp > m.slow_c:
            # The firmware holds the GPU near its slowdown point by shedding ~1.2 % clock
            # per degree it would otherwise exceed.
            excess = temp - m.slow_c
            clock *= max(0.6, 1 - 0.012 * excess)
            power *= max(0.6, 1 - 0.018 * excess)
            shown = m.slow_c + 0.3 * excess
            thr |= THR_SW_THERMAL
        factor = 1.0
        if busy:
            # Compute time scales with 1/clock^0.8 (the memory-bound part does not scale).
            factor = (m.max_mhz / clock) ** 0.8
            if temp > m.slow_c and temp_clean <= m.slow_c:
                stouched.update(fid for a, b, _d, fid in node.temp_add.get(g, ()) if a <= t)
            for a, b, f, fid in node.slow.get(g, ()):
                if a <= t < b:
                    factor *= f
                    stouched.add(fid)
        out.power.append(power)
        out.clock.append(clock)
        out.temp.append(shown)
        out.mem_temp.append(shown + 5 + (2 if busy else 0))
        out.throttle.append(thr)
        out.factor.append(factor)
        out.touch.append(frozenset(x for x in touched if x))
        out.stouch.append(frozenset(x for x in stouched if x))
    return out


def faultline_topology(name: str, nodes: list[Node], leaves: list[str], spines: list[str],
                       per_leaf: int) -> str:
    """A faultline `.topo` text: classic leaves (every NIC of a node faces its leaf)."""
    lines = [f"Topology={name} Version=1"]
    by_model: dict[str, list[Node]] = {}
    for n in nodes:
        by_model.setdefault(n.model.name, []).append(n)
    for group in by_model.values():
        nics = ",".join(group[0].nics)
        for n in group:
            lines.append(f"NodeSet={n.name} Gpus={n.gpus} Nics={nics}")
    for k, leaf in enumerate(leaves):
        members = [n.name for n in nodes if n.leaf == leaf]
        lines.append(f"Rack=rack-{k + 1} Nodes={','.join(members)}")
        lines.append(f"SwitchName={leaf} Nodes={','.join(members)}")
    lines.append(f"SwitchName={','.join(spines)} Switches={','.join(leaves)}")
    return "\n".join(lines) + "\n"


def slurm_topology(nodes: list[Node], leaves: list[str], spine: str) -> str:
    """A Slurm `topology.conf` (tree plugin): leaves and one spine, no NICs."""
    lines = ["# topology.conf as the site's Slurm has it"]
    for leaf in leaves:
        members = [n.name for n in nodes if n.leaf == leaf]
        lines.append(f"SwitchName={leaf} Nodes={','.join(members)} LinkSpeed=400")
    lines.append(f"SwitchName={spine} Switches={','.join(leaves)}")
    return "\n".join(lines) + "\n"
