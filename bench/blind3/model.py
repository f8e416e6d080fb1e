"""The physical model of one log: nodes, GPUs, ports, jobs, faults (no I/O).

Every record is made by a function of true time ``t`` (seconds from the log's
start); the node's clock offset is added when the record is stamped.  A fault is a
set of hooks that change what those functions return; each hook that changes a
record tells its fault, so a label's start/end are the first and last records the
fault changed (see README, "Labels").
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

# Per GPU model: (TDP W, max SM clock MHz, idle clock MHz, idle power W, degC per W,
# SW-thermal slowdown C, HW-thermal C, mem-temp offset C).  A100 SXM4 80GB: 400 W,
# 1410 MHz; H100 SXM5: 700 W, 1980 MHz (NVIDIA data sheets).  Slowdown thresholds are
# my choice inside what nvidia-smi -q reports for these boards (85-90 C).
GPU_MODELS = {
    "a100": dict(
        tdp_w=400.0,
        max_mhz=1410.0,
        idle_mhz=210.0,
        idle_w=62.0,
        c_per_w=0.085,
        sw_c=85.0,
        hw_c=90.0,
        mem_off=4.0,
    ),
    "h100": dict(
        tdp_w=700.0,
        max_mhz=1980.0,
        idle_mhz=345.0,
        idle_w=78.0,
        c_per_w=0.058,
        sw_c=87.0,
        hw_c=92.0,
        mem_off=7.0,
    ),
}


@dataclass(eq=False)
class Fault:
    """A labelled fault: its label fields and the event times of the records it changed."""

    fault_id: str
    kind: str
    cause: str
    scope: dict
    attributable: bool = True
    first: float = math.inf
    last: float = -math.inf

    def touch(self, ts: float) -> None:
        if ts < self.first:
            self.first = ts
        if ts > self.last:
            self.last = ts

    def label(self) -> dict:
        return {
            "fault_id": self.fault_id,
            "kind": self.kind,
            "cause": self.cause,
            "scope": self.scope,
            "start_ts": round(self.first, 3),
            "end_ts": round(self.last, 3),
            "attributable": self.attributable,
        }


@dataclass
class Port:
    nic: str
    rate_gbps: float
    roce: bool
    fabric: bool  # carries the jobs' collectives (a frontend port does not)


@dataclass
class Node:
    name: str
    model: str
    rack: str
    ports: list[Port]
    offset_s: float = 0.0  # NTP error of this node's clock
    dcgm_every_s: float = 10.0
    nic_every_s: float = 10.0
    ecc_full: bool = True  # every DCGM ECC/NVLink field (False: dcgm-exporter defaults)
    xid_from_kernel_log: bool = True  # else: seen on the next DCGM poll
    gpus: int = 8


@dataclass
class Gpu:
    demand: float  # busy power demand as a share of TDP
    temp_off_c: float  # airflow position, paste, sensor
    sbe_per_h: float  # healthy SBE trickle
    pcie_per_h: float


@dataclass
class Job:
    """A synchronous training job; ``attempts`` are (start_s, end_s, first_step, nodes)."""

    job: str
    tp: int
    pp: int
    rank_fields: bool
    compute_ms: float
    comm_ms: float
    neither_ms: float
    attempts: list = field(default_factory=list)
    stage_factor: tuple = (1.0,)
    accum: int = 1
    eval_every: int = 0
    eval_factor: float = 1.0
    ckpt_every: int = 0
    ckpt_ms: float = 0.0
    checksum_every: int = 1
    warmup_steps: int = 2
    warmup_factor: float = 2.5
    loss0: float = 4.0


class Fleet:
    """Nodes, GPUs and the hooks faults and healthy events install."""

    def __init__(self, rng: random.Random, nodes: list[Node], duration_s: float):
        self.rng = rng
        self.nodes = {n.name: n for n in nodes}
        self.duration_s = duration_s
        self.gpu: dict[tuple[str, int], Gpu] = {}
        for n in nodes:
            lo, hi = (0.93, 1.03) if n.model == "h100" else (0.80, 0.97)
            for g in range(n.gpus):
                self.gpu[(n.name, g)] = Gpu(
                    demand=rng.uniform(lo, hi),
                    temp_off_c=rng.uniform(-3.0, 3.0) + 0.6 * (g % 4),
                    sbe_per_h=(rng.uniform(5, 60) if rng.random() < 0.03 else 0.0),
                    pcie_per_h=(rng.uniform(1, 6) if rng.random() < 0.1 else 0.0),
                )
        self.inlet_c = {r: rng.uniform(21.0, 29.0) for r in sorted({n.rack for n in nodes})}
        self.busy: dict[tuple[str, int], list] = {}  # (node, gpu) -> [(t0, t1, job)]
        self.jobs: list[Job] = []
        # hooks: lists of callables, each (node, gpu, t) -> value, or None when idle
        self.inlet_extra: list = []  # (rack, t) -> (deg C, fault|None)
        self.power_cap: list = []  # (node, gpu, t) -> W or None
        self.temp_extra: list = []  # (node, gpu, t) -> (deg C, fault)
        self.compute_slow: list = []  # (node, gpu, t, step) -> (factor, fault) or None
        self.neither_extra: list = []  # (node, gpu, t, step) -> (ms, fault) or None
        self.comm_slow: list = []  # (job, t) -> (factor, fault) or None
        self.ecc_events: list = []  # (node, gpu, t_event, xid, changes dict, fault)
        self.ecc_rate: list = []  # (node, gpu, t) -> (field, per_s, fault) increments
        self.ecc_state: list = []  # (node, gpu, t) -> (dict of state fields, fault)
        self.dcgm_gone: list = []  # (node, gpu, t0, t1): no DCGM samples (fell off, reload)
        self.dcgm_reset: list = []  # (node, t): volatile counters back to 0 (driver reload)
        self.nic_gap: list = []  # (node, t0, t1)
        self.nic_reset: list = []  # (node, t): the exporter's counters back to 0
        self.delay: list = []  # (node, t0, t1): records held until t1 (a network blip)

    # -- jobs ------------------------------------------------------------------------
    def add_job(self, job: Job) -> None:
        self.jobs.append(job)
        for t0, t1, _s, nodes in job.attempts:
            for nd in nodes:
                for g in range(self.nodes[nd].gpus):
                    self.busy.setdefault((nd, g), []).append((t0, t1, job.job))

    def job_on(self, node: str, gpu: int, t: float):
        for t0, t1, job in self.busy.get((node, gpu), ()):
            if t0 <= t < t1:
                return job
        return None

    def free(self, node: str, t0: float, t1: float) -> bool:
        for (nd, _g), spans in self.busy.items():
            if nd == node and any(a < t1 and t0 < b for a, b, _ in spans):
                return False
        return True

    # -- GPU physics -------------------------------------------------------------------
    def gpu_point(self, node: str, g: int, t: float):
        """(power W, steady temp C, SM clock MHz, throttle bits, clock factor, faults)."""
        n = self.nodes[node]
        m = GPU_MODELS[n.model]
        gp = self.gpu[(node, g)]
        faults = []
        busy = self.job_on(node, g, t) is not None
        inlet = self.inlet_c[n.rack]
        for hook in self.inlet_extra:
            d, f = hook(n.rack, node, t)
            if d:
                inlet += d
                if f is not None:
                    faults.append(f)
        if not busy:
            temp = inlet + m["idle_w"] * m["c_per_w"] + gp.temp_off_c
            return m["idle_w"], temp, m["idle_mhz"], 0x1, 1.0, faults
        limit = m["tdp_w"]
        for hook in self.power_cap:
            cap = hook(node, g, t)
            if cap is not None:
                limit = min(limit, cap)
        demand = m["tdp_w"] * gp.demand
        bits, factor = 0, 1.0
        power = demand
        if demand > limit:
            # V-f curve: board power goes roughly as f^2.5, so f goes as P^0.4
            bits |= 0x4
            factor = (limit / demand) ** 0.4
            power = limit
        temp = inlet + power * m["c_per_w"] + gp.temp_off_c
        for hook in self.temp_extra:
            d, f = hook(node, g, t)
            if d:
                temp += d
                faults.append(f)
        if temp > m["sw_c"]:
            # the firmware pulls the clock down until the board holds its slowdown
            # temperature: ~1 % of clock per degree of excess heat (power goes as f^2.5)
            excess = temp - m["sw_c"]
            bits |= 0x20
            factor *= max(0.55, 1.0 - 0.012 * excess)
            if excess > 12.0:
                bits |= 0x40 | 0x8
                factor *= 0.9
            power *= factor**2.5
            temp = m["sw_c"] + min(excess, 3.0) * 0.5
        return power, temp, m["max_mhz"] * factor, bits, factor, faults
