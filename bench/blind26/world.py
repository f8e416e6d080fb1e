"""The hardware a blind26 story runs on: H100 SXM boards sampled every 30 s, DCGM ECC rows every
60 s, InfiniBand / RoCE port rows every 30 s, and the log they go into.

Physics, per GPU (numbers are this generator's choices, argued in README.md):
- **Power**: a busy GPU draws its own demand (560-740 W: silicon and workload spread); the board's
  700 W limit takes clock from those above it (`0x4`, clock x (700/demand)^0.4, so compute
  x 1/clock^0.85 -- memory-bound kernels do not scale with the clock). Saving a checkpoint
  leaves a GPU at 120-180 W; idle is 62-75 W at 345 MHz with `0x1`.
- **Temperature**: die = inlet + 0.058-0.066 C/W x power through a 25 s lag, HBM 4-9 C above
  the die. A GPU whose thermal resistance grows (the fault) is held at 87-89 C by the firmware's
  SW thermal slowdown (`0x20`): the power it may draw then sets its clock.
- **Counters** are cumulative since the node's boot and only climb.

`Log` holds every record with the faults that changed it, the routine shapes (effects) and the
labels; `generate.py` turns it into arrival order.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

LIMIT_W = 700.0
MAX_MHZ = 1980.0
IDLE_MHZ = 345.0
HOLD_C = 88.0
THERMAL_S, ECC_S, NIC_S = 30.0, 60.0, 30.0


@dataclass
class Log:
    """Records (ts, topic, value, fault ids that changed it), effects and labels."""
    recs: list = field(default_factory=list)
    effects: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    touched: dict = field(default_factory=dict)

    def add(self, topic: str, v: dict, faults=()) -> None:
        self.recs.append((v["ts"], topic, v))
        for f in faults:
            if f is None:
                continue
            self.touched.setdefault(f, []).append(v["ts"])

    def effect(self, name: str, scope: dict, t0: float, t1: float) -> None:
        self.effects.append({"effect": name, "scope": scope, "start_ts": round(t0, 3),
                             "end_ts": round(t1, 3), "expect": "pages nobody"})

    def label(self, fid: str, kind: str, cause: str, scope: dict, attributable=True) -> None:
        ts = self.touched.get(fid)
        if not ts:
            return                  # a short log ends before the fault changes anything
        self.labels.append({"fault_id": fid, "kind": kind, "cause": cause, "scope": scope,
                            "start_ts": round(min(ts), 3), "end_ts": round(max(ts), 3),
                            "attributable": attributable})


@dataclass
class Gpu:
    node: str
    gpu: int
    demand_w: float
    r_th: float                 # C per W, die over inlet
    mem_dt: float
    temp: float = 30.0
    sbe: int = 0
    pcie_replay: int = 0
    crc: int = 0

    def cap_ratio(self) -> float:
        """The clock the 700 W limit leaves it under load (1.0 under the limit)."""
        return 1.0 if self.demand_w <= LIMIT_W else (LIMIT_W / self.demand_w) ** 0.4


def compute_factor(clock_ratio: float) -> float:
    """A step's compute time for a clock at ``clock_ratio`` of the top clock."""
    return 1.0 / clock_ratio ** 0.85


@dataclass
class Node:
    name: str
    inlet_c: float
    dcgm_phase: float
    nic_phase: float
    nics: list
    gpus: list
    # per-port cumulative counters: name -> dict
    ports: dict = field(default_factory=dict)


def make_nodes(rng: random.Random, names: list[str], nics: list[str], roce: bool,
               per_rack: int = 4) -> dict[str, Node]:
    nodes = {}
    for i, name in enumerate(names):
        slot = i % per_rack                   # higher in the rack, warmer air
        gpus = [Gpu(name, g, max(560.0, min(740.0, rng.gauss(640.0, 35.0))),
                    rng.uniform(0.058, 0.066), rng.uniform(4.0, 9.0),
                    sbe=rng.choice([0] * 30 + [1, 2, 5]),
                    pcie_replay=rng.choice([0] * 20 + [1, 3]))
                for g in range(8)]
        n = Node(name, rng.uniform(21.5, 24.5) + 0.7 * slot, rng.uniform(0, THERMAL_S),
                 rng.uniform(0, NIC_S), list(nics), gpus)
        for nic in nics:
            c = {"tx_bytes": rng.randrange(10**12, 10**14), "rx_bytes": 0,
                 "symbol_errors": rng.choice([0] * 10 + [3, 12]), "link_downed": 0,
                 "rcv_errors": 0, "xmit_discards": 0, "xmit_wait": rng.randrange(10**9, 10**11)}
            c["rx_bytes"] = c["tx_bytes"] + rng.randrange(-10**11, 10**11)
            if roce:
                c.update(out_of_sequence=rng.randrange(0, 5000), packet_seq_err=0,
                         np_cnp_sent=rng.randrange(10**5, 10**7),
                         rp_cnp_handled=rng.randrange(10**5, 10**7))
            n.ports[nic] = c
        nodes[name] = n
    return nodes


def thermal_row(rng: random.Random, g: Gpu, ts: float, state: str, inlet: float,
                slow: dict | None = None) -> dict:
    """One DCGM thermal sample. ``state`` busy / save / hung / idle; ``slow``, a fault's hold on
    the GPU under load: ``ratio`` (clock), ``bits`` (throttle), ``cap`` (W), ``r_th_x``
    (thermal resistance multiplier), ``hold`` (the firmware holds the die at 87-89 C)."""
    r_th = g.r_th
    if state == "busy":
        power = min(g.demand_w, LIMIT_W) * rng.uniform(0.95, 1.02)
        ratio, bits = g.cap_ratio(), (0x4 if g.demand_w > LIMIT_W else 0)
        if bits:
            power = LIMIT_W * rng.uniform(0.985, 1.0)
        if slow:
            r_th *= slow.get("r_th_x", 1.0)
            if "ratio" in slow:
                ratio, bits = min(ratio, slow["ratio"]), slow["bits"]
                power = slow["cap"] * rng.uniform(0.97, 1.0) if slow.get("cap") else (
                    power * slow["ratio"] ** 2.5)
    elif state == "save":
        power, ratio, bits = rng.uniform(120, 180), 1.0, 0
    elif state == "hung":
        power, ratio, bits = rng.uniform(220, 290), 1.0, 0     # spinning in NCCL
    else:
        power, ratio, bits = rng.uniform(62, 75), IDLE_MHZ / MAX_MHZ, 0x1
    target = inlet + r_th * power
    g.temp += (target - g.temp) * (1.0 - math.exp(-THERMAL_S / 25.0))
    if slow and slow.get("hold") and state == "busy":
        g.temp = HOLD_C + rng.uniform(-0.8, 0.9)
    return {"ts": round(ts, 3), "node": g.node, "gpu": g.gpu,
            "gpu_temp_c": int(round(g.temp)), "mem_temp_c": int(round(g.temp + g.mem_dt)),
            "power_w": round(power, 1), "sm_clock_mhz": float(round(MAX_MHZ * ratio / 15) * 15),
            "throttle": bits}


def ecc_row(g: Gpu, ts: float, dbe: int = 0, remap_pending: bool = False,
            action: str = "none") -> dict:
    return {"ts": round(ts, 3), "node": g.node, "gpu": g.gpu, "sbe_volatile": g.sbe,
            "dbe_volatile": dbe, "retired_pages_sbe": 0, "retired_pages_dbe": 0,
            "row_remap_pending": remap_pending, "row_remap_failure": False,
            "pcie_replay": g.pcie_replay, "nvlink_crc_errors": g.crc,
            "nvlink_replay_errors": 0, "nvlink_recovery_errors": 0, "recovery_action": action}


def xid_row(node: str, gpu: int, ts: float, xid: int) -> dict:
    return {"ts": round(ts, 3), "node": node, "gpu": gpu, "xid": xid}


def nic_row(n: Node, nic: str, ts: float) -> dict:
    c = n.ports[nic]
    return {"ts": round(ts, 3), "node": n.name, "nic": nic, "port": 1, "link_state": "up",
            "rate_gbps": 400.0, **{k: int(v) for k, v in c.items()}}


def advance_port(rng: random.Random, c: dict, busy_share: float, dt: float,
                 gbytes_s: float, roce: bool) -> None:
    """Counters of one port over ``dt`` seconds with the node busy ``busy_share`` of it."""
    rate = busy_share * gbytes_s * 1e9 * rng.uniform(0.9, 1.1) + 2e6
    c["tx_bytes"] += int(rate * dt)
    c["rx_bytes"] += int(rate * dt * rng.uniform(0.98, 1.02))
    c["xmit_wait"] += int(busy_share * dt * rng.uniform(4e3, 2.5e4))
    if roce:
        c["np_cnp_sent"] += int(busy_share * dt * rng.uniform(0, 6))
        c["rp_cnp_handled"] += int(busy_share * dt * rng.uniform(0, 6))
