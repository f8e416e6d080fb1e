"""blind24's boards, per-second GPU physics and the two topology texts.

A GPU is simulated a second at a time from its load (0..1): the draw it needs (idle + the
load's share of its working draw, wandering a few percent), clipped at the board's limit by a
lower clock (dynamic power ~ clock^2: clock factor sqrt(limit / need), bit 0x4); die and HBM
temperatures follow inlet + R x power with 15 s / 40 s lags; a thermal controller trims the
clock 1 % a second while the die is past its slowdown point or the HBM past 95 C (0x20) and
gives it back once both are 3 C under, and cuts to 60 % at once past the die's HW slowdown
point (0x40). A GPU is idle (bit 0x1, idle clock) under 5 % load. The faults act inside this
loop (a draw that creeps up, an HBM or die that heats faster), so `run` is called twice for a
faulted GPU -- with and without its fault -- and every sample that differs is the fault's.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Board:
    """A board's normal: clocks, power, thermal resistance and thresholds."""
    name: str
    fmax_mhz: float
    idle_mhz: float
    limit_w: float
    idle_w: float
    load_w: tuple[float, float]        # working draw at full load, drawn per GPU
    r_die: float                       # C per W over inlet
    r_mem: float
    sw_c: float                        # die SW thermal slowdown (0x20)
    hw_c: float                        # die HW slowdown (0x40)
    mem_c: float = 95.0                # HBM slowdown (0x20)
    sigma: float = 0.007               # step-time noise (CoV of the PAI residual)


H100 = Board("h100-sxm", 1980.0, 345.0, 700.0, 72.0, (560.0, 640.0), 0.058, 0.066, 87.0, 92.0,
             sigma=0.007)
A100 = Board("a100-sxm-80g", 1410.0, 210.0, 400.0, 58.0, (300.0, 362.0), 0.100, 0.104, 86.0,
             91.0, sigma=0.009)


@dataclass
class Fault:
    """A fault on one GPU's physics (t0 seconds after the log's start).

    leak: the draw needed at full clock grows by `rate` (fraction) a second (a board's VRM /
    leakage ageing: at the cap the clock gives way); memhot: HBM's resistance x `k` (a cracked
    thermal pad); die: the die's resistance x `k` (a degraded thermal interface)."""
    kind: str
    t0: float
    rate: float = 0.0
    k: float = 1.0


@dataclass
class Trace:
    """One GPU's per-second physics: what its collector samples and what its steps feel."""
    power_w: list[float]
    temp_c: list[float]
    mem_c: list[float]
    clock_mhz: list[float]
    throttle: list[int]
    speed: list[float]                 # loaded clock factor (1.0 = full clock)

    def sample(self, t: float) -> tuple:
        i = min(max(int(t), 0), len(self.power_w) - 1)
        return (int(round(self.temp_c[i])), int(round(self.mem_c[i])),
                round(self.power_w[i], 1), self.clock_mhz[i], self.throttle[i])

    def compute_factor(self, t: float) -> float:
        """How much longer a step's compute takes at this second (75 % of it clock-bound)."""
        i = min(max(int(t), 0), len(self.speed) - 1)
        return 0.25 + 0.75 / self.speed[i]


def run(board: Board, load: list[float], *, inlet_c: float, load_w: float, seed: float,
        fault: Fault | None = None) -> Trace:
    rng = random.Random(seed)
    n = len(load)
    tr = Trace([0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n, [0] * n, [1.0] * n)
    temp = inlet_c + board.r_die * board.idle_w
    mem = inlet_c + 6.0 + board.r_mem * board.idle_w
    tf, wander = 1.0, 0.0
    for t in range(n):
        wander = 0.97 * wander + rng.gauss(0.0, 0.006)
        lo = load[t]
        need = board.idle_w + (load_w - board.idle_w) * lo * (1.0 + wander)
        r_die, r_mem = board.r_die, board.r_mem
        if fault is not None and t >= fault.t0:
            if fault.kind == "leak":
                need *= 1.0 + fault.rate * (t - fault.t0)
            elif fault.kind == "memhot":
                r_mem *= fault.k
            elif fault.kind == "die":
                r_die *= fault.k
        capc = math.sqrt(board.limit_w / need) if need > board.limit_w else 1.0
        c = min(tf, capc)
        bits = 0
        if lo < 0.05:
            bits |= 0x1
        if capc < 1.0 and capc <= tf:
            bits |= 0x4
            power = board.limit_w - abs(rng.gauss(0.0, 2.0))
        else:
            power = board.idle_w + (need - board.idle_w) * c * c
        temp += (inlet_c + r_die * power - temp) / 15.0
        mem += (inlet_c + 6.0 + r_mem * power - mem) / 40.0
        if temp >= board.hw_c:
            tf = min(tf, 0.6)
            bits |= 0x40
        elif temp >= board.sw_c or mem >= board.mem_c:
            tf = max(0.5, tf - 0.01)
        elif temp < board.sw_c - 3.0 and mem < board.mem_c - 3.0:
            tf = min(1.0, tf + 0.01)
        if tf < 1.0:
            bits |= 0x20
        c = min(tf, capc)
        tr.power_w[t] = power
        tr.temp_c[t] = temp
        tr.mem_c[t] = mem
        tr.speed[t] = c
        tr.clock_mhz[t] = (board.idle_mhz if lo < 0.05
                           else float(15 * round(board.fmax_mhz * c / 15)))
        tr.throttle[t] = bits
    return tr


def drift_topology() -> str:
    """faultline format: 16 H100 nodes, 8 rails of 2 leaves, 2 spines, racks of 4."""
    lines = ["# blind24 drift: 16 x 8 H100, rail-optimized (8 rails x 2 leaves), 2 spines",
             "Topology=blind24-drift Version=1",
             "NodeSet=hx-[00-15] Gpus=8 Nics=mlx5_[0-7]",
             "Rack=rk[0-3] Nodes=hx-[00-15]"]
    lines += [f"SwitchName=rail{k}-leaf[0-1] Nodes=hx-[00-15] Nics=mlx5_{k}" for k in range(8)]
    lines.append("SwitchName=spine[0-1] Switches=rail[0-7]-leaf[0-1]")
    return "\n".join(lines) + "\n"


def churn_topology() -> str:
    """A site's plain Slurm topology.conf: 4 leaves of 5 nodes, one spine (no NICs, no GPUs)."""
    lines = ["# slurm topology.conf (tree plugin)"]
    lines += [f"SwitchName=leaf{k} Nodes=gn[{5 * k + 1:03d}-{5 * k + 5:03d}] LinkSpeed=200"
              for k in range(4)]
    lines.append("SwitchName=spine Switches=leaf[0-3]")
    return "\n".join(lines) + "\n"
