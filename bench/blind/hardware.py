"""Per-GPU physics on a one-second grid: activity, power, temperature, clocks, throttle bits.

Two grids are kept, one with the plan's faults and one without, so that every
record can say whether a fault changed it (that is what a label's start and
end are made of). The model, my own numbers:

- power: idle ~60-80 W; busy the job's demand (TDP x intensity x silicon
  spread), capped at TDP, where the SW power cap (0x4) holds the clock down;
  a hung NCCL job spins at ~125 W; model loading ~150 W.
- temperature: rack inlet + 0.055 C/W x power + per-GPU offset, first-order
  lag with a 40 s time constant; a cooling fault adds an excess that scales
  with load. Above 90 C the GPU slows itself (0x20, and 0x40 above 98 C) and
  reports a temperature held near 90 C.
- clocks: boost x (TDP / demand)^0.5 when capped; idle 345 MHz; a power
  brake (0x80 with 0x8) cuts the clock of every GPU on the node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bench.blind.plan import Plan

IDLE, INIT, BUSY, HANG, OFF = 0, 1, 2, 3, 4
TAU_S = 40.0
R_C_PER_W = 0.055
THROTTLE_C = 90.0
IDLE_MHZ = 345.0


@dataclass
class Attempt:
    """One run of a job on a set of nodes, between (re)start and stop."""

    job: str
    index: int
    nodes: list[str]
    begin: float  # processes start (model loading)
    first_step: float  # first training step starts
    stop: float  # last moment steps may end
    hang: bool  # after ``stop`` the GPUs spin in a hung collective


class Grid:
    """Activity and physics of every GPU at one-second resolution, with and without faults."""

    def __init__(self, plan: Plan, attempts: list[Attempt], rng: np.random.Generator):
        sh = plan.shape
        self.plan = plan
        self.gpn = sh.gpus_per_node
        self.node_index = {n: i for i, n in enumerate(sh.nodes)}
        self.t_start = plan.t0 - 900.0
        n_t = int(plan.duration_s + 900.0) + 2
        n_g = sh.gpus
        self.n_t = n_t
        state = np.full((n_g, n_t), IDLE, dtype=np.int8)
        intensity = np.zeros((n_g, n_t))
        jobs = {j.name: j for j in plan.jobs}
        for a in attempts:
            for nd in a.nodes:
                gs = self._gslice(nd)
                i0, i1, i2 = self.idx(a.begin), self.idx(a.first_step), self.idx(a.stop)
                state[gs, i0:i1] = INIT
                state[gs, i1:i2] = BUSY
                intensity[gs, i0:i2] = jobs[a.job].intensity
                if a.hang:
                    state[gs, i2:] = HANG
        for nd, a, b in plan.maintenance:
            state[self._gslice(nd), self.idx(a) : self.idx(b)] = OFF
        for f in plan.faults:
            if f.what == "xid79":
                state[self.gindex(f.node, f.gpu), self.idx(f.t0) :] = OFF
        self.state = state
        silicon = rng.normal(1.0, 0.035, n_g)
        demand = sh.tdp_w * intensity * silicon[:, None]
        racks = sorted(set(sh.racks.values()))
        inlet_of = {r: float(rng.uniform(20.0, 29.0)) for r in racks}
        inlet_of[racks[int(rng.integers(0, len(racks)))]] = 32.0  # one rack by the hot aisle
        inlet = np.array([inlet_of[sh.racks[n]] for n in sh.nodes for _ in range(self.gpn)])
        self.gpu_offset_c = rng.normal(0.0, 1.8, n_g)
        idle_w = rng.uniform(58.0, 80.0, n_g)
        power = np.where(state == BUSY, np.minimum(demand, sh.tdp_w), idle_w[:, None])
        power = np.where(state == INIT, 150.0, power)
        power = np.where(state == HANG, 125.0, power)
        power = np.where(state == OFF, 0.0, power)
        self.capped = (state == BUSY) & (demand > sh.tdp_w - 5.0)
        clock = np.where(
            state == BUSY,
            sh.boost_mhz * np.minimum(1.0, sh.tdp_w / np.maximum(demand, 1.0)) ** 0.5,
            IDLE_MHZ,
        )
        clock = np.where((state == INIT) | (state == HANG), sh.boost_mhz, clock)
        load = np.clip((power - idle_w[:, None]) / (sh.tdp_w - idle_w[:, None]), 0.0, 1.0)
        excess = np.zeros((n_g, n_t))
        brake = np.ones((n_g, n_t))
        for f in plan.faults:
            if f.what in ("thermal", "slow_from_start_hot"):
                g = self.gindex(f.node, f.gpu)
                i0, i1 = self.idx(f.t0), self.idx(f.t1)
                excess[g, i0:i1] = f.params["excess_c"] * load[g, i0:i1]
            elif f.what == "power_brake":
                brake[self._gslice(f.node), self.idx(f.t0) : self.idx(f.t1)] = f.params["clock"]
        target = inlet[:, None] + R_C_PER_W * power + self.gpu_offset_c[:, None]
        self.base = _Physics(target, power, clock, np.ones((n_g, n_t)))
        self.actual = _Physics(target + excess, power, clock, brake)

    def idx(self, ts: float) -> int:
        return min(self.n_t, max(0, int(math.floor(ts - self.t_start))))

    def gindex(self, node: str, gpu: int) -> int:
        return self.node_index[node] * self.gpn + gpu

    def _gslice(self, node: str) -> slice:
        i = self.node_index[node] * self.gpn
        return slice(i, i + self.gpn)

    def compute_factor(self, g: int, ts: float) -> tuple[float, float]:
        """How much longer compute takes on GPU ``g`` at ``ts`` than at boost: (actual, base)."""
        i = min(self.n_t - 1, self.idx(ts))
        boost = self.plan.shape.boost_mhz
        return (
            (boost / max(self.actual.clock[g, i], 1.0)) ** 0.8,
            (boost / max(self.base.clock[g, i], 1.0)) ** 0.8,
        )


class _Physics:
    """Temperature (lagged), reported temperature, clock, power and throttle-bit inputs."""

    def __init__(self, target, power, clock, brake):
        n_g, n_t = target.shape
        temp = np.empty_like(target)
        temp[:, 0] = target[:, 0]
        a = 1.0 - math.exp(-1.0 / TAU_S)
        for i in range(1, n_t):
            temp[:, i] = temp[:, i - 1] + (target[:, i] - temp[:, i - 1]) * a
        over = np.maximum(temp - THROTTLE_C, 0.0)
        thermal = np.clip(1.0 - 0.035 * over, 0.55, 1.0)
        self.temp_u = temp
        self.temp = np.where(over > 0, THROTTLE_C + 0.25 * over, temp)
        self.thermal = thermal
        self.brake = brake
        self.clock = clock * thermal * brake
        self.power = power * (thermal * brake) ** 1.5
