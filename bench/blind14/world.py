"""The blind14 world: HGX H100 nodes, their collectors, labels and routine-shape notes.

Two kinds of collector sit side by side in one fleet:

- `dcgm-exporter` (10 s thermal rows with DCGM's integer temperatures, 30 s ECC rows with every
  counter and `recovery_action`, InfiniBand every 10 s), on nodes whose clocks follow the
  site's main NTP source;
- a site's own **pydcgm collector at 30 s** (thermal, ECC and InfiniBand) that copies DCGM's
  **blank sentinels** straight into the record when a field has no value yet (DCGM returns
  `DCGM_FP64_BLANK` 140737488355328.0, `DCGM_INT32_BLANK` 0x7ffffff0 and `DCGM_INT64_BLANK`
  0x7ffffffffffffff0 for "no value" -- [U] from memory of `dcgm_fields.h`), on nodes that take
  time from a second NTP source running 0.6-1.1 s ahead.

Every record is kept as (arrival, seq, topic, value); `Label` spans exactly the records its fault
changed; `effects` lists the routine shapes (no page is right) for `measure` to name beside a
false positive. `Label` is blind12's (one copy): it spans exactly the records its fault changed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from bench.blind12.world import Label

FP64_BLANK = 140737488355328.0
INT32_BLANK = 0x7FFFFFF0
INT64_BLANK = 0x7FFFFFFFFFFFFFF0
TDP_W = 700.0
MAX_CLOCK_MHZ = 1980.0


@dataclass
class Node:
    name: str
    leaf: str
    collector: str               # "dcgm-exporter" (10 s) | "exporter-30s" | "site-30s" (pydcgm)
    rack: int                    # racks differ by 0.8 C of inlet air and their cycle's phase
    clock_s: float               # this node's clock minus true time
    phase_s: float               # its collectors' phase
    gpu_offset_c: list[float] = field(default_factory=list)
    gpu_demand_w: list[float] = field(default_factory=list)

    @property
    def interval_s(self) -> float:
        return 10.0 if self.collector == "dcgm-exporter" else 30.0


class World:
    """Records, labels and routine effects of one log, and the per-GPU physics they share."""

    def __init__(self, seed: int, t0: float, minutes: float):
        self.seed, self.t0, self.t1 = seed, t0, t0 + minutes * 60.0
        self.rng = random.Random(seed * 7919 + 14)
        self.records: list[tuple] = []
        self.labels: list[Label] = []
        self.effects: list[dict] = []
        self.nodes: dict[str, Node] = {}
        self._seq = 0
        # (node, gpu) -> hooks: power factor, clock factor, throttle bits at true time t
        self.brake: dict[str, list[tuple[float, float]]] = {}
        self.brake_label: Label | None = None
        self.inlet_period_s = self.rng.uniform(200.0, 320.0)
        self.inlet_amp_c = self.rng.uniform(2.5, 3.5)
        self.load: dict[tuple[str, int], float] = {}       # busy share 0..1 of each GPU

    # -- records -------------------------------------------------------------------------
    def emit(self, true_t: float, topic: str, value: dict, node: Node,
             late_s: float | None = None) -> None:
        """A record stamped by ``node``'s clock, arriving 30-600 ms after it happened."""
        value["ts"] = round(true_t + node.clock_s, 3)
        delay = self.rng.uniform(0.03, 0.6) if late_s is None else late_s
        self._seq += 1
        self.records.append((true_t + delay, self._seq, topic, value))

    def effect(self, name: str, start: float, end: float, **scope) -> None:
        self.effects.append({"effect": name, "start_ts": round(start, 3),
                             "end_ts": round(end, 3), "scope": scope})

    # -- physics -------------------------------------------------------------------------
    def inlet_c(self, node: Node, t: float) -> float:
        rack = node.rack
        return 24.0 + 0.8 * rack + self.inlet_amp_c * math.sin(
            2 * math.pi * (t - self.t0) / self.inlet_period_s + rack)

    def braked(self, node: str, t: float) -> bool:
        return any(a <= t < b for a, b in self.brake.get(node, ()))

    def gpu_state(self, node: Node, gpu: int, t: float) -> tuple[float, float, int]:
        """(power W, SM clock MHz, clock-event reasons) of a GPU at true time t."""
        busy = self.load.get((node.name, gpu), 0.0)
        demand = 75.0 + busy * (node.gpu_demand_w[gpu] - 75.0)
        if busy <= 0.0:
            return demand, 345.0, 0x1
        if self.braked(node.name, t):
            # the PSU's brake: clocks to 55-62 %, the board to about half its power
            return demand * 0.5, MAX_CLOCK_MHZ * 0.58, 0x80 | 0x8
        if demand > TDP_W:
            return TDP_W, MAX_CLOCK_MHZ * (TDP_W / demand) ** 0.45, 0x4
        return demand, MAX_CLOCK_MHZ, 0x0

    def temp_c(self, node: Node, gpu: int, t: float) -> float:
        """GPU temperature: inlet + 0.065 C/W, lagged 30 s (a 5-point average over 60 s)."""
        acc = 0.0
        for k in range(5):
            tk = t - 15.0 * k
            acc += self.inlet_c(node, tk) + 0.065 * self.gpu_state(node, gpu, tk)[0]
        return acc / 5.0 + node.gpu_offset_c[gpu]


def collect(world: World, node: Node) -> None:
    """Thermal, ECC and InfiniBand rows of one node over the whole log, from its collector."""
    rng = random.Random(f"{world.seed}-{node.name}-collect")
    site = node.collector == "site-30s"
    every = node.interval_s
    sbe = [0] * 8
    sbe_rate = [rng.choice([0.0] * 9 + [rng.uniform(0.005, 0.02)]) for _ in range(8)]
    pcie = [rng.randrange(0, 40) for _ in range(8)]
    t = world.t0 + node.phase_s
    while t < world.t1:
        for g in range(8):
            power, clock, bits = world.gpu_state(node, g, t)
            temp = world.temp_c(node, g, t)
            row = {"node": node.name, "gpu": g, "gpu_temp_c": int(round(temp)),
                   "mem_temp_c": int(round(temp + 6.0 + 0.3 * g)),
                   "power_w": round(power * rng.uniform(0.985, 1.015), 2),
                   "sm_clock_mhz": float(round(clock / 15.0) * 15), "throttle": bits}
            if bits & 0x80 and world.brake_label is not None:
                world.brake_label.touch(t + node.clock_s)
            if site and rng.random() < 0.006:
                row["power_w"] = FP64_BLANK
                world.effect("dcgm-blank-power", t + node.clock_s, t + node.clock_s,
                             node=node.name, gpu=g)
            elif site and rng.random() < 0.004:
                row["gpu_temp_c"] = INT32_BLANK
                world.effect("dcgm-blank-temp", t + node.clock_s, t + node.clock_s,
                             node=node.name, gpu=g)
            world.emit(t + rng.uniform(0.0, 0.2), "telemetry.thermal", row, node)
        t += every
    t = world.t0 + node.phase_s + 3.0
    ecc_every = 30.0
    while t < world.t1:
        for g in range(8):
            if sbe_rate[g] and rng.random() < 1.0 - math.exp(-sbe_rate[g] * ecc_every):
                sbe[g] += 1
            if world.load.get((node.name, g), 0.0) > 0 and rng.random() < 0.05:
                pcie[g] += rng.randrange(1, 3)
            row = {"node": node.name, "gpu": g, "sbe_volatile": sbe[g], "dbe_volatile": 0,
                   "retired_pages_sbe": 0, "retired_pages_dbe": 0,
                   "row_remap_pending": False, "row_remap_failure": False,
                   "pcie_replay": pcie[g], "nvlink_crc_errors": 0,
                   "nvlink_replay_errors": 0, "nvlink_recovery_errors": 0}
            if not site:
                row["recovery_action"] = "none"
            elif rng.random() < 0.006:
                key = rng.choice(["sbe_volatile", "pcie_replay", "nvlink_crc_errors"])
                row[key] = INT64_BLANK
                world.effect(f"dcgm-blank-{key}", t + node.clock_s, t + node.clock_s,
                             node=node.name, gpu=g)
            world.emit(t + rng.uniform(0.0, 0.3), "telemetry.ecc", row, node)
        t += ecc_every
    t = world.t0 + node.phase_s + 5.0
    tx = [rng.randrange(10**12, 10**13) for _ in range(8)]
    rx = [x + rng.randrange(0, 10**9) for x in tx]
    wait = [rng.randrange(10**6, 10**8) for _ in range(8)]
    last = t - every
    while t < world.t1:
        for p in range(8):
            busy = world.load.get((node.name, p), 0.0)
            dt = t - last
            tx[p] += int(busy * 11e9 * dt * rng.uniform(0.9, 1.1))
            rx[p] += int(busy * 11e9 * dt * rng.uniform(0.9, 1.1))
            wait[p] += int(busy * 4e4 * dt * rng.uniform(0.5, 1.5))
            row = {"node": node.name, "nic": f"mlx5_{p}", "port": 1, "link_state": "up",
                   "rate_gbps": 400.0, "tx_bytes": tx[p], "rx_bytes": rx[p],
                   "symbol_errors": 0, "link_downed": 0, "rcv_errors": 0,
                   "xmit_discards": 0, "xmit_wait": wait[p]}
            world.emit(t + rng.uniform(0.0, 0.2), "telemetry.nic", row, node)
        last = t
        t += every
