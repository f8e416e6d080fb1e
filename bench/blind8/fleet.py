"""blind8's fleet: H100 nodes, their collectors, and the labels faults keep.

A GPU's DCGM sample is computed at the collector's sample time from what the GPU is doing
then (idle, or busy in a job at a utilisation): power under the 700 W board limit, the clock
the power cap leaves, a temperature that follows power with a 40 s lag, the clock-event
reasons. Counters are cumulative since boot. Faults change samples through hooks; a hook
that changed a record touches its label, so a label spans exactly the records it changed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

LIMIT_W = 700.0
BOOST_MHZ = 1980.0
IDLE_MHZ = 345.0
TAU_S = 40.0
T0 = 1_785_000_000.0          # the log's t = 0, seconds since the epoch


@dataclass(eq=False)
class Label:
    """One fault's ground truth; `start_ts`/`end_ts` grow as its hooks change records."""

    fault_id: str
    kind: str
    cause: str
    scope: dict
    attributable: bool = True
    start_ts: float | None = None
    end_ts: float | None = None
    note: str = ""

    def touch(self, ts: float, ts_hi: float | None = None) -> None:
        lo, hi = ts, ts if ts_hi is None else ts_hi
        self.start_ts = lo if self.start_ts is None else min(self.start_ts, lo)
        self.end_ts = hi if self.end_ts is None else max(self.end_ts, hi)

    def value(self) -> dict | None:
        if self.start_ts is None:
            return None  # a fault that changed no record is not labelled
        return {"fault_id": self.fault_id, "kind": self.kind, "cause": self.cause,
                "scope": self.scope, "start_ts": round(self.start_ts, 3),
                "end_ts": round(self.end_ts, 3), "attributable": self.attributable}


@dataclass
class Gpu:
    node: str
    idx: int
    demand_w: float          # what this board would draw flat out (silicon + workload)
    idle_w: float
    temp_c: float = 35.0
    last_t: float | None = None
    sbe: int = 0
    sbe_rate: float = 0.0    # corrected errors a second (a healthy trickle on a few GPUs)
    dbe: int = 0
    pcie: int = 0
    pcie_rate: float = 0.0
    crc: float = 0.0
    replay: float = 0.0
    recovery: float = 0.0
    remap_pending: bool = False
    action: str = "none"
    busy: list = field(default_factory=list)   # (start, end, util)


@dataclass
class Port:
    node: str
    nic: str
    tx: float = 0.0
    rx: float = 0.0
    symbol: int = 0
    downed: int = 0
    rcv: int = 0
    discards: int = 0
    wait: float = 0.0
    last_t: float | None = None
    sym_rate: float = 0.0


@dataclass
class Node:
    name: str
    gpus: list
    ports: list
    inlet_c: float
    thermal_s: float
    ecc_s: float
    nic_s: float
    phase: float
    clock: object = None      # t -> offset of the node's clock, s
    dup: bool = False         # every record sent twice (two scrapers remote-writing)
    no_late: bool = False     # no 1-4 s retries (its clock step already uses that room)

    def ts(self, t: float) -> float:
        """Event time as this node's clock stamps true time t (seconds into the log)."""
        return round(T0 + t + (self.clock(t) if self.clock else 0.0), 3)


def make_node(rng: random.Random, name: str, nics: int, inlet_c: float, thermal_s: float,
              ecc_s: float, nic_s: float) -> Node:
    gpus = []
    for g in range(8):
        gp = Gpu(name, g, demand_w=rng.uniform(630, 760), idle_w=rng.uniform(68, 92))
        if rng.random() < 0.03:
            gp.sbe_rate = rng.uniform(0.005, 0.03)
        if rng.random() < 0.10:
            gp.pcie_rate = rng.uniform(0.002, 0.02)
        gp.sbe = rng.randrange(0, 40)
        gp.pcie = rng.randrange(0, 200)
        gp.temp_c = inlet_c + 12
        gpus.append(gp)
    ports = []
    for k in range(nics):
        p = Port(name, f"mlx5_{k}", tx=rng.uniform(1e13, 9e13), rx=rng.uniform(1e13, 9e13),
                 symbol=rng.randrange(0, 3), wait=rng.uniform(1e8, 9e8))
        if rng.random() < 0.02:
            p.sym_rate = rng.uniform(0.002, 0.01)
        ports.append(p)
    return Node(name, gpus, ports, inlet_c, thermal_s, ecc_s, nic_s,
                phase=rng.uniform(0, max(thermal_s, nic_s)))


def util_at(gpu: Gpu, t: float) -> float:
    for a, b, u in gpu.busy:
        if a <= t < b:
            return u
    return 0.0


def thermal_row(rng: random.Random, node: Node, gpu: Gpu, t: float, hooks: list) -> dict:
    """One DCGM thermal sample at true time t (DCGM integers for temperatures)."""
    u = util_at(gpu, t)
    if u > 0:
        want = gpu.idle_w + (gpu.demand_w - gpu.idle_w) * u * rng.uniform(0.97, 1.03)
        if want > LIMIT_W:
            power = LIMIT_W * rng.uniform(0.985, 1.0)
            clock = BOOST_MHZ * math.sqrt(LIMIT_W / want)
            thr = 0x4
        else:
            power, clock, thr = want, BOOST_MHZ - rng.uniform(0, 15), 0
    else:
        power, clock, thr = gpu.idle_w * rng.uniform(0.97, 1.03), IDLE_MHZ, 0x1
    row = {"ts": node.ts(t), "node": node.name, "gpu": gpu.idx, "gpu_temp_c": 0,
           "mem_temp_c": 0, "power_w": power, "sm_clock_mhz": clock, "throttle": thr}
    for h in hooks:
        h(node, gpu, t, row)
    target = node.inlet_c + 9.0 + 0.052 * row["power_w"]
    dt = 10.0 if gpu.last_t is None else t - gpu.last_t
    gpu.temp_c += (target - gpu.temp_c) * (1 - math.exp(-dt / TAU_S))
    gpu.last_t = t
    row["gpu_temp_c"] = int(round(gpu.temp_c))
    row["mem_temp_c"] = max(row["mem_temp_c"], int(round(gpu.temp_c + 6)))
    row["power_w"] = round(row["power_w"], 2)
    row["sm_clock_mhz"] = float(int(row["sm_clock_mhz"] // 15 * 15))
    return row


def ecc_row(node: Node, gpu: Gpu, t: float, xid: int | None = None) -> dict:
    return {"ts": node.ts(t), "node": node.name, "gpu": gpu.idx, "sbe_volatile": gpu.sbe,
            "dbe_volatile": gpu.dbe, "retired_pages_sbe": 0, "retired_pages_dbe": gpu.dbe,
            "row_remap_pending": gpu.remap_pending, "row_remap_failure": False, "xid": xid,
            "pcie_replay": gpu.pcie, "nvlink_crc_errors": int(gpu.crc),
            "nvlink_replay_errors": int(gpu.replay),
            "nvlink_recovery_errors": int(gpu.recovery), "recovery_action": gpu.action}


def advance_counters(rng: random.Random, gpu: Gpu, dt: float) -> None:
    if gpu.sbe_rate:
        gpu.sbe += _poisson(rng, gpu.sbe_rate * dt)
    if gpu.pcie_rate:
        gpu.pcie += _poisson(rng, gpu.pcie_rate * dt)


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, int(round(rng.gauss(lam, math.sqrt(lam)))))
    k, p, L = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p < L:
            return k
        k += 1


def nic_row(rng: random.Random, node: Node, port: Port, t: float, busy_gbs: float,
            hooks: list) -> dict:
    """One InfiniBand port sample: counters since boot; `busy_gbs` GB/s each way."""
    dt = 10.0 if port.last_t is None else t - port.last_t
    port.last_t = t
    gbs = busy_gbs * rng.uniform(0.9, 1.1) if busy_gbs else rng.uniform(0.0005, 0.002)
    row = {"ts": node.ts(t), "node": node.name, "nic": port.nic, "port": 1,
           "link_state": "up", "rate_gbps": 400.0, "dt": dt, "gbs": gbs,
           "wait_rate": (2.0e5 if busy_gbs else 1.0e3) * rng.uniform(0.6, 1.4)}
    port.symbol += _poisson(rng, port.sym_rate * dt)
    for h in hooks:
        h(node, port, t, row)
    port.tx += row["gbs"] * 1e9 * dt
    port.rx += row["gbs"] * 1e9 * dt * rng.uniform(0.98, 1.02)
    port.wait += row.pop("wait_rate") * dt
    row.pop("dt")
    row.pop("gbs")
    row.update(tx_bytes=int(port.tx), rx_bytes=int(port.rx), symbol_errors=port.symbol,
               link_downed=port.downed, rcv_errors=port.rcv, xmit_discards=port.discards,
               xmit_wait=int(port.wait))
    return row


def sample_times(node: Node, every_s: float, t_end: float, rng: random.Random):
    t = node.phase % every_s
    while t < t_end:
        yield t + rng.uniform(-0.05, 0.05) if t > 0.1 else t
        t += every_s
