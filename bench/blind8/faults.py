"""blind8's faults as hooks: each changes steps, DCGM samples or port samples and touches its
label for every record it changed. Healthy workload effects (MoE routing) live here too."""

from __future__ import annotations

import math
import random

from bench.blind8.fleet import Label


class MoeRouting:
    """Expert-parallel routing: each EP rank (dp % 8) hosts one expert group per stage; its
    share of tokens drifts step to step (AR(1) in log space, ~20-step memory) and its expert
    compute (40 % of the step) moves with it. Dropless, capped at 1.6x the mean load."""

    def __init__(self, rng: random.Random, stages: int, experts: int = 8, groups: int = 4):
        self._rng, self._stages, self._experts, self._groups = rng, stages, experts, groups
        self._x = [[rng.gauss(0, 0.29) for _ in range(experts)] for _ in range(stages)]
        self._memo: dict[int, list] = {}

    def _at(self, step: int) -> list:
        if step not in self._memo:
            rng = self._rng
            for s in range(self._stages):
                self._x[s] = [0.95 * x + rng.gauss(0, 0.09) for x in self._x[s]]
            f = []
            for s in range(self._stages):
                row = []
                for _ in range(self._groups):
                    ex = [math.exp(x + rng.gauss(0, 0.03)) for x in self._x[s]]
                    m = sum(ex) / len(ex)
                    row.append([1.0 + 0.4 * (min(1.6, max(0.6, e / m)) - 1.0) for e in ex])
                f.append(row)
            self._memo[step] = f
        return self._memo[step]

    def __call__(self, pp: int, dp: int, step: int) -> float:
        g = (dp // self._experts) % self._groups
        return self._at(step)[pp][g][dp % self._experts]


class SlowGpu:
    """A GPU that computes slower from `t0` on with nothing in telemetry saying why."""

    def __init__(self, label: Label, node: str, gpu: int, t0: float, factor: float):
        self.label, self.node, self.gpu, self.t0, self.factor = label, node, gpu, t0, factor

    def compute(self, job, node, gpu, t) -> float:
        return self.factor if (node == self.node and gpu == self.gpu and t >= self.t0) else 1.0


class RailLeafHalf:
    """A rail leaf's cable bundle reseated: its ports drop one after another for 4-9 s, come
    back after a burst of symbol errors, trained at 200 Gb/s (two of four lanes); the
    all-to-all over that rail then sets the pace of every exchange."""

    def __init__(self, label: Label, rng: random.Random, ports: list, t0: float, comm: float):
        self.label, self.comm_factor = label, comm
        self.down = {}
        for p in ports:
            a = t0 + rng.uniform(0.0, 40.0)
            self.down[p] = (a, a + rng.uniform(4.0, 9.0), rng.randrange(20, 300))
        self._counted: set = set()
        self._burst: set = set()
        self.first_up = min(b for _, b, _ in self.down.values())
        spans = sorted((a, b) for a, b, _ in self.down.values())
        self.union = []
        for a, b in spans:
            if self.union and a <= self.union[-1][1]:
                self.union[-1][1] = max(self.union[-1][1], b)
            else:
                self.union.append([a, b])

    def nic(self, node, port, t, row) -> None:
        key = (node.name, port.nic)
        if key not in self.down:
            return
        a, b, burst = self.down[key]
        if t < a:
            return
        if key not in self._counted:
            port.downed += 1
            self._counted.add(key)
        if t < b:
            row.update(link_state="down", rate_gbps=None, gbs=0.0, wait_rate=0.0)
        else:
            if key not in self._burst:
                port.symbol += burst
                port.rcv += burst // 10
                self._burst.add(key)
            row["rate_gbps"] = 200.0
            row["wait_rate"] *= 5.0
        self.label.touch(row["ts"])

    def comm(self, job, t0, t1):
        stall = sum(b - a + 1.5 for a, b in self.union if t0 <= a < t1)
        return (self.comm_factor if t0 >= self.first_up else 1.0), stall


class NvSwitchFault:
    """An HGX baseboard NVSwitch failing: every GPU of the node counts NVLink CRC, replay and
    recovery errors, XID 74 on all eight within 2 s and again on one GPU every 40-90 s; the
    node's TP all-reduces and in-node all-to-all retry, its ranks computing slower."""

    def __init__(self, label: Label, rng: random.Random, node: str, t0: float, t_end: float,
                 slow: float):
        self.label, self.node, self.t0, self.slow = label, node, t0, slow
        self.rates = {g: (rng.uniform(20, 60), rng.uniform(2, 5), rng.uniform(0.02, 0.05))
                      for g in range(8)}
        self.xids = [(t0 + rng.uniform(0.0, 2.0), g, 74) for g in range(8)]
        t = t0 + rng.uniform(40, 90)
        while t < t_end:
            self.xids.append((t, rng.randrange(8), 74))
            t += rng.uniform(40, 90)

    def compute(self, job, node, gpu, t) -> float:
        return self.slow if (node == self.node and t >= self.t0) else 1.0

    def ecc(self, node, gpu, t_prev, t, row) -> None:
        if node.name != self.node or t < self.t0:
            return
        a = max(t_prev, self.t0)
        crc, rep, rec = self.rates[gpu.idx]
        gpu.crc += crc * (t - a)
        gpu.replay += rep * (t - a)
        gpu.recovery += rec * (t - a)
        self.label.touch(row["ts"])


class XidState:
    """An XID that leaves a state behind (e.g. XID 95 + 154: DBE +1, recovery `gpu_reset`):
    the XID records and every later sample of the GPU while the state stays."""

    def __init__(self, label: Label, node: str, gpu: int, xids: list, action: str,
                 dbe: int = 1):
        self.label, self.node, self.gpu, self.action, self.dbe = label, node, gpu, action, dbe
        self.xids = xids                 # (t, gpu, code)
        self.t0 = xids[0][0]

    def ecc(self, node, gpu, t_prev, t, row) -> None:
        if node.name != self.node or gpu.idx != self.gpu or t < self.t0:
            return
        if gpu.action != self.action:
            gpu.action = self.action
            gpu.dbe += self.dbe
        self.label.touch(row["ts"])


class FlakySensor:
    """An HBM temperature sensor that reads 98-112 C for 15-25 s every 3-5 min: the firmware
    believes it and asserts HW thermal slowdown (0x40 | 0x8), the SM clock drops to 55-65 %
    and the rank computes 1.5-1.8x slower while it lasts; the GPU itself is not hot."""

    def __init__(self, label: Label, rng: random.Random, node: str, gpu: int, t0: float,
                 t_end: float):
        self.label, self.node, self.gpu = label, node, gpu
        self.episodes = []
        t = t0
        while t < t_end - 30:
            d = rng.uniform(15, 25)
            self.episodes.append((t, t + d, rng.uniform(98, 112), rng.uniform(0.55, 0.65)))
            t += rng.uniform(180, 300)

    def _ep(self, t):
        for e in self.episodes:
            if e[0] <= t < e[1]:
                return e
        return None

    def thermal(self, node, gpu, t, row) -> None:
        if node.name != self.node or gpu.idx != self.gpu:
            return
        e = self._ep(t)
        if e is None:
            return
        row["mem_temp_c"] = int(e[2])
        row["throttle"] = (row["throttle"] & ~0x1) | 0x48
        row["sm_clock_mhz"] = row["sm_clock_mhz"] * e[3]
        row["power_w"] = row["power_w"] * (0.7 if row["throttle"] & 0x4 or
                                           row["power_w"] > 200 else 1.0)
        row["throttle"] &= ~0x4
        self.label.touch(row["ts"])

    def compute(self, job, node, gpu, t) -> float:
        if node != self.node or gpu != self.gpu:
            return 1.0
        e = self._ep(t)
        return 1.0 / (e[3] ** 0.8) if e else 1.0
