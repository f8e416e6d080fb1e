"""The fleet blind11 draws: GPU models, per-second GPU physics, collectors and their rows.

A `Gpu` holds what the story decided it does each second (its demand, or nothing while its
node is dark); `Node.rows` turns that into DCGM thermal / ECC rows, XID events and InfiniBand
port rows with the node's own cadence, phase and clock. A `Label` grows over the records a
fault's hooks changed (DESIGN: first and last record the fault changed).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Model:
    """One GPU SKU as its spec sheet gives it (my choices where a sheet gives a range)."""
    name: str
    tdp_w: float
    boost_mhz: float
    idle_w: float
    idle_mhz: float
    c_per_w: float       # temperature rise over inlet per watt (cooling of the chassis)
    tau_s: float         # thermal time constant
    mem_speed: float     # HBM bandwidth relative to H100 SXM (3.35 TB/s)


H100 = Model("H100 SXM5", 700.0, 1980.0, 72.0, 345.0, 0.052, 40.0, 1.0)
H200 = Model("H200 SXM", 700.0, 1980.0, 76.0, 345.0, 0.050, 40.0, 4.8 / 3.35)
H100NVL = Model("H100 NVL", 400.0, 1785.0, 48.0, 345.0, 0.115, 55.0, 3.9 / 3.35)

MEMORY_BOUND = 0.25      # share of a training step's kernel time that waits on HBM


def compute_factor(model: Model, clock_mhz: float) -> float:
    """Kernel time relative to an H100 SXM at full boost: clock^-0.8, HBM share by bandwidth."""
    clock = (model.boost_mhz / max(clock_mhz, 1.0)) ** 0.8
    return clock * ((1 - MEMORY_BOUND) + MEMORY_BOUND / model.mem_speed) / (
        (1 - MEMORY_BOUND) + MEMORY_BOUND / H100.mem_speed)


@dataclass
class Label:
    """A fault's ground truth; `touch` widens it to every record its hooks changed."""
    fault_id: str
    kind: str
    cause: str
    scope: dict
    attributable: bool = True
    start_ts: float | None = None
    end_ts: float | None = None

    def touch(self, ts: float) -> None:
        self.start_ts = ts if self.start_ts is None else min(self.start_ts, ts)
        self.end_ts = ts if self.end_ts is None else max(self.end_ts, ts)

    def record(self) -> dict:
        return {"topic": "labels", "value": {
            "fault_id": self.fault_id, "kind": self.kind, "cause": self.cause,
            "scope": self.scope, "start_ts": round(self.start_ts, 3),
            "end_ts": round(self.end_ts, 3), "attributable": self.attributable}}


@dataclass
class Gpu:
    node: Node
    idx: int
    model: Model
    demand: float            # what a busy board would draw, share of its TDP (0.93-1.07)
    sensor_c: float          # sensor and position offset
    # per second of the log: "train", "wait", "idle", "prefill", "decode", "load", or None (dark)
    mode: list = field(default_factory=list)
    decode_share: list = field(default_factory=list)
    # hooks: ecc(ts, delta dict) -> None (adds to counters), xids [(ts, code)]
    xids: list = field(default_factory=list)
    extra_sbe: list = field(default_factory=list)        # [(t0, t1, rate_per_s)]
    extra_nvlink: list = field(default_factory=list)     # [(t0, t1, crc/s, replay/s, recovery)]
    remap_pending_from: float | None = None
    missing_from: float | None = None                    # no rows from then on (not enumerated)
    labels: list = field(default_factory=list)           # labels whose ECC rows this GPU changes


@dataclass
class Port:
    nic: str
    flaps: list = field(default_factory=list)            # [(t_down, down_s, symbol_errors)]
    label: Label | None = None


@dataclass
class Node:
    name: str
    model: Model
    ngpu: int
    nics: list
    rng: random.Random
    inlet_c: float
    thermal_s: float = 10.0
    ecc_s: float = 30.0
    nic_s: float = 10.0
    int_temps: bool = True
    skew_s: float = 0.0                                  # node clock minus true time
    dark: list = field(default_factory=list)             # [(t0, t1)]: rebooting, nothing sent
    gpus: list = field(default_factory=list)
    ports: list = field(default_factory=list)
    busy_nic: list = field(default_factory=list)          # per second: bytes/s a port moves

    def __post_init__(self):
        self.gpus = [Gpu(self, g, self.model, self.rng.uniform(0.93, 1.07),
                         self.rng.uniform(-1.5, 2.5)) for g in range(self.ngpu)]
        self.ports = [Port(n) for n in self.nics]

    def is_dark(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.dark)

    def boots_before(self, t: float) -> float:
        """End of the last dark span before t (counters count from there), or -inf."""
        ends = [b for a, b in self.dark if b <= t]
        return max(ends) if ends else -math.inf


def limit_at(fleet_caps: list, model: Model, t: float) -> float:
    """The board power limit at t: the TDP, or a facility cap (share of TDP) while one holds."""
    for a, b, share in fleet_caps:
        if a <= t < b:
            return model.tdp_w * share
    return model.tdp_w


def train_clock(gpu: Gpu, fleet_caps: list, t: float) -> float:
    """SM clock of a busy GPU: boost, or lowered to fit the limit (f ~ sqrt(P) at the top)."""
    want = gpu.demand * gpu.model.tdp_w
    lim = limit_at(fleet_caps, gpu.model, t)
    return gpu.model.boost_mhz * min(1.0, math.sqrt(lim / want))


def physics(gpu: Gpu, fleet_caps: list, dur_s: int) -> list:
    """Per second: (power_w, clock_mhz, throttle, gpu_temp_c); None while dark or missing."""
    m, rng = gpu.model, random.Random(f"{gpu.node.name}/{gpu.idx}/phys")
    temp = gpu.node.inlet_c + 9 + m.c_per_w * m.idle_w + gpu.sensor_c
    out = []
    for s in range(dur_s + 1):
        mode = gpu.mode[s] if s < len(gpu.mode) else "idle"
        if mode is None:
            out.append(None)
            temp = gpu.node.inlet_c + 3
            continue
        lim = limit_at(fleet_caps, m, s)
        thr = 0
        if mode == "train":
            want = gpu.demand * m.tdp_w * rng.uniform(0.98, 1.02)
        elif mode == "prefill":
            want = m.tdp_w * rng.uniform(1.02, 1.10)
        elif mode == "decode":
            share = gpu.decode_share[s] if s < len(gpu.decode_share) else 0.5
            want = m.tdp_w * share * rng.uniform(0.95, 1.05)
        elif mode == "load":
            want = m.tdp_w * rng.uniform(0.22, 0.30)
        elif mode == "wait":
            want = m.tdp_w * rng.uniform(0.16, 0.22)
        else:
            want = m.idle_w * rng.uniform(0.95, 1.08)
        if mode == "idle":
            power, clock, thr = want, m.idle_mhz, 0x1
        elif want > lim:
            power = lim * rng.uniform(0.985, 1.0)
            clock, thr = m.boost_mhz * math.sqrt(lim / want), 0x4
        else:
            power, clock = want, m.boost_mhz * rng.uniform(0.995, 1.0)
        target = gpu.node.inlet_c + 9 + m.c_per_w * power + gpu.sensor_c
        temp += (target - temp) * (1 - math.exp(-1.0 / m.tau_s))
        out.append((power, clock, thr, temp))
    return out


def thermal_rows(node: Node, phys: dict, dur_s: int, t0: float) -> list:
    rows = []
    phase = node.rng.uniform(0, node.thermal_s)
    t = phase
    while t < dur_s:
        if not node.is_dark(t):
            for gpu in node.gpus:
                if gpu.missing_from is not None and t >= gpu.missing_from:
                    for lab in gpu.labels:
                        lab.touch(t0 + t + node.skew_s)
                    continue
                p = phys[gpu.idx][int(t)]
                if p is None:
                    continue
                power, clock, thr, temp = p
                gt = round(temp) if node.int_temps else round(temp, 1)
                mt = round(temp + 5.5) if node.int_temps else round(temp + 5.5, 1)
                rows.append((t0 + t + node.skew_s, "telemetry.thermal", {
                    "node": node.name, "gpu": gpu.idx, "gpu_temp_c": gt, "mem_temp_c": mt,
                    "power_w": round(power, 1), "sm_clock_mhz": round(clock),
                    "throttle": thr}))
        t += node.thermal_s * node.rng.uniform(0.995, 1.005)
    return rows


def ecc_rows(node: Node, dur_s: int, t0: float) -> list:
    """DCGM ECC rows every ecc_s (counters since the last boot) and XID events at their time."""
    rows, rng = [], random.Random(f"{node.name}/ecc")
    phase = rng.uniform(0, node.ecc_s)
    for gpu in node.gpus:
        sbe_rate = rng.choice([0.0, 0.0, 0.0, 0.0, 0.0005, 0.002])
        pcie_rate = rng.choice([0.0, 0.0, 0.0, 0.001, 0.004])
        cnt = {"sbe": 0, "pcie": 0, "crc": 0, "replay": 0, "recovery": 0}
        boot = -math.inf
        t, last = phase, 0.0
        while t < dur_s:
            b = node.boots_before(t)
            if b != boot:                                  # a reboot / driver reload: from 0
                boot, last = b, b
                cnt = dict.fromkeys(cnt, 0)
            if node.is_dark(t) or (gpu.missing_from is not None and t >= gpu.missing_from):
                t += node.ecc_s
                continue
            dt = t - last
            cnt["sbe"] += _poisson(rng, sbe_rate * dt)
            cnt["pcie"] += _poisson(rng, pcie_rate * dt)
            changed = False
            for a, b2, rate in gpu.extra_sbe:
                lo, hi = max(a, last), min(b2, t)
                if hi > lo:
                    cnt["sbe"] += _poisson(rng, rate * (hi - lo))
                    changed = True
            for a, b2, crc, rep, rec in gpu.extra_nvlink:
                lo, hi = max(a, last), min(b2, t)
                if hi > lo:
                    cnt["crc"] += _poisson(rng, crc * (hi - lo))
                    cnt["replay"] += _poisson(rng, rep * (hi - lo))
                    if b2 <= t:
                        cnt["recovery"] += rec
                    changed = True
            pending = gpu.remap_pending_from is not None and t >= gpu.remap_pending_from
            if changed or pending:
                for lab in gpu.labels:
                    lab.touch(t0 + t + node.skew_s)
            rows.append((t0 + t + node.skew_s, "telemetry.ecc", {
                "node": node.name, "gpu": gpu.idx, "sbe_volatile": cnt["sbe"],
                "dbe_volatile": 0, "retired_pages_sbe": 0, "retired_pages_dbe": 0,
                "row_remap_pending": pending, "row_remap_failure": False, "xid": None,
                "pcie_replay": cnt["pcie"], "nvlink_crc_errors": cnt["crc"],
                "nvlink_replay_errors": cnt["replay"], "nvlink_recovery_errors": cnt["recovery"],
                "recovery_action": "none"}))
            last = t
            t += node.ecc_s
        for ts, code in gpu.xids:
            rows.append((t0 + ts + node.skew_s, "telemetry.ecc",
                         {"node": node.name, "gpu": gpu.idx, "xid": code}))
            for lab in gpu.labels:
                lab.touch(t0 + ts + node.skew_s)
    return rows


def nic_rows(node: Node, dur_s: int, t0: float) -> list:
    """InfiniBand port rows every nic_s; counters since boot; flaps as their port's hooks say."""
    rows, rng = [], random.Random(f"{node.name}/nic")
    phase = rng.uniform(0, node.nic_s)
    for port in node.ports:
        c = dict.fromkeys(("tx", "rx", "sym", "downed", "rcv", "disc", "wait"), 0)
        boot, last = -math.inf, 0.0
        t, first_after_boot = phase, False
        while t < dur_s:
            b = node.boots_before(t)
            if b != boot:
                boot, last, first_after_boot = b, b, b > -math.inf
                c = dict.fromkeys(c, 0)
            if node.is_dark(t):
                t += node.nic_s
                continue
            dt = t - last
            busy = sum(node.busy_nic[int(s)] for s in range(int(last), int(t))
                       if s < len(node.busy_nic)) if node.busy_nic else 0.0
            c["tx"] += int(busy * rng.uniform(0.97, 1.03))
            c["rx"] += int(busy * rng.uniform(0.97, 1.03))
            c["wait"] += int(busy / 2.5e4 * rng.uniform(0.6, 1.4))
            c["sym"] += _poisson(rng, 0.0004 * dt)
            state, changed = "up", False
            for td, down_s, sym in port.flaps:
                if last < td <= t:
                    c["sym"] += sym
                    c["rcv"] += rng.randint(1, 6)
                    c["downed"] += 1
                    changed = True
                if td <= t < td + down_s:
                    state, changed = "down", True
            if first_after_boot and port.nic in ("mlx5_0", "mlx5_3"):
                state = "down"                     # still training on the first sample after boot
            first_after_boot = False
            if changed and port.label is not None:
                port.label.touch(t0 + t + node.skew_s)
            rows.append((t0 + t + node.skew_s, "telemetry.nic", {
                "node": node.name, "nic": port.nic, "port": 1, "link_state": state,
                "rate_gbps": 400.0, "tx_bytes": c["tx"], "rx_bytes": c["rx"],
                "symbol_errors": c["sym"], "link_downed": c["downed"], "rcv_errors": c["rcv"],
                "xmit_discards": c["disc"], "xmit_wait": c["wait"]}))
            last = t
            t += node.nic_s * rng.uniform(0.998, 1.002)
    return rows


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    k, p, limit = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def node_rows(node: Node, fleet_caps: list, dur_s: int, t0: float) -> list:
    phys = {g.idx: physics(g, fleet_caps, dur_s) for g in node.gpus}
    return (thermal_rows(node, phys, dur_s, t0) + ecc_rows(node, dur_s, t0)
            + nic_rows(node, dur_s, t0))
