"""The hardware of a blind6 story: GPU models, nodes, collectors and per-sample GPU physics.

Numbers are my choices from public spec sheets (README "Numbers, and why"), not measurements.
A GPU's state at a sample time comes from how busy the jobs on it keep it (`Node.util`); the
temperature follows power with a first-order lag, so a sampler walks each GPU in time order.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GpuModel:
    name: str
    limit_w: float       # board power limit (the SW power cap, 0x4, holds it there)
    boost_mhz: float
    idle_w: float
    idle_mhz: float
    c_per_w: float       # steady temperature rise per watt over the inlet air
    tau_s: float         # thermal time constant
    nvlink: bool         # NVLink error counters reported (SXM) or absent (PCIe)


# A100 SXM4 80GB: 400 W, 1410 MHz boost, 210 MHz idle; ~64 C at 400 W in a 24 C aisle.
A100_SXM = GpuModel("A100-SXM4-80GB", 400.0, 1410.0, 58.0, 210.0, 0.100, 45.0, True)
# H100 PCIe 80GB: 350 W, 1755 MHz boost; passively cooled by the chassis fans: ~72 C at 350 W.
H100_PCIE = GpuModel("H100-PCIe-80GB", 350.0, 1755.0, 48.0, 345.0, 0.130, 60.0, False)


@dataclass
class Busy:
    """One job's hold on one GPU (or on one MIG slice of it)."""
    t0: float
    t1: float
    util: float   # share of the board's full-load power demand


@dataclass(eq=False)
class Node:
    name: str
    model: GpuModel
    ngpu: int
    nics: list[str]             # compute NICs first, then any storage NIC
    rate_gbps: dict[str, float]
    thermal_s: float            # collector intervals
    ecc_s: float
    nic_s: float
    phase: float                # the collector's offset within its interval
    offset_s: float             # the node clock's offset from true time (chrony)
    inlet_c: float
    demand: list[float]         # per-GPU full-load power demand, x the limit
    sensor_c: list[float]       # per-GPU temperature offset (airflow position, sensor)
    busy: dict[int, list[Busy]] = field(default_factory=dict)
    slew: tuple[float, float, float] | None = None   # (t_start, ppm, floor): chrony slewing
    epoch: float = 0.0          # Unix time of the story's t = 0

    def clock(self, t: float) -> float:
        """The node's own time stamp for true time t."""
        off = self.offset_s
        if self.slew is not None and t > self.slew[0]:
            off = max(self.slew[2], off - (t - self.slew[0]) * self.slew[1] * 1e-6)
        return self.epoch + t + off

    def hold(self, gpu: int, t0: float, t1: float, util: float) -> Busy:
        b = Busy(t0, t1, util)
        self.busy.setdefault(gpu, []).append(b)
        return b

    def util(self, gpu: int, t: float) -> float:
        return min(1.0, sum(b.util for b in self.busy.get(gpu, ()) if b.t0 <= t < b.t1))


def physics(node: Node, gpu: int, util: float, rng: random.Random) -> tuple[float, float, int]:
    """(power_w, sm_clock_mhz, throttle) of a GPU at utilisation `util`."""
    m = node.model
    if util < 0.02:
        return m.idle_w * rng.uniform(0.95, 1.08), m.idle_mhz, 0x1
    want = m.idle_w + util * (node.demand[gpu] * m.limit_w - m.idle_w) * rng.uniform(0.97, 1.03)
    if want >= m.limit_w:
        # at the limit the clock comes down to fit: P ~ f^2 near the top of the V-f curve
        clock = m.boost_mhz * math.sqrt(m.limit_w / want)
        return m.limit_w * rng.uniform(0.985, 1.0), round(clock / 15) * 15, 0x4
    return want, m.boost_mhz, 0x0


def sample_times(node: Node, interval: float, t_end: float, rng: random.Random) -> list[float]:
    """True times of a collector's samples: its phase, then every interval with a little jitter."""
    out, t = [], node.phase % interval
    while t < t_end:
        out.append(t + rng.uniform(-0.04, 0.04) * min(1.0, interval))
        t += interval
    return out


def hostlist(prefix: str, lo: int, hi: int) -> str:
    """Slurm hostlist range, e.g. a100-[01-04]."""
    return f"{prefix}[{lo:02d}-{hi:02d}]"
