"""Nodes and their collectors: H100 physics per sample, DCGM rows, InfiniBand port rows.

A node knows what its GPUs are doing (`busy` spans written by the jobs), when it is dark
(reboots), when its DCGM exporter is away, when counters restart at 0 (driver reload, host
reboot, an operator clearing the IB counters), which GPU fell off the bus, whether its clocks
are locked, and which fault hooks add to its counters. It writes its own records with its own
clock; `Label` collects the event times of the records a fault changed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

TDP_W = 700.0           # H100 SXM5 board power limit
BOOST_MHZ = 1980.0
IDLE_MHZ = 345.0
REF_MHZ = 1932.0        # the clock a GPU wanting 5 % over the limit settles at (compute 1.00)
PORT_GBPS = 400.0
WRAP = 2 ** 32
SATURATE = {"symbol_errors": 65535, "rcv_errors": 65535, "xmit_discards": 65535,
            "link_downed": 255}


@dataclass
class Label:
    fault_id: str
    kind: str
    cause: str
    scope: dict
    attributable: bool = True
    first: float = math.inf
    last: float = -math.inf

    def touch(self, ts: float) -> None:
        self.first = min(self.first, ts)
        self.last = max(self.last, ts)

    def record(self, end_ts: float | None = None) -> dict:
        end = self.last if end_ts is None else max(end_ts, self.first)
        return {"topic": "labels", "value": {
            "fault_id": self.fault_id, "kind": self.kind, "cause": self.cause,
            "scope": self.scope, "start_ts": round(self.first, 3), "end_ts": round(end, 3),
            "attributable": self.attributable}}


@dataclass
class Node:
    name: str
    rng: random.Random
    gpus: int = 8
    nics: int = 8
    offset_s: float = 0.0               # node clock minus true time
    inlet_c: float = 25.0
    demand: list = field(default_factory=list)      # busy power wanted / TDP, per GPU
    busy: list = field(default_factory=list)        # (t0, t1, "train" | "hang")
    dark: list = field(default_factory=list)        # (t0, t1): powered off / rebooting
    dcgm_gap: list = field(default_factory=list)    # (t0, t1): exporter away
    gpu_reset: list = field(default_factory=list)   # times the driver's counters restart at 0
    ib_reset: list = field(default_factory=list)    # times the HCA counters restart at 0
    gpu_gone: dict = field(default_factory=dict)    # gpu -> [(t0, t1)] fallen off the bus
    lock: tuple | None = None                       # (from_t, mhz): application clocks
    wrap32: bool = False                # a collector keeping port_xmit_wait in a uint32
    sym_start: dict = field(default_factory=dict)   # port -> symbol errors already counted
    late_burst_s: float | None = None   # an agent that ships its buffer every N s
    sym_base: list = field(default_factory=list)    # healthy symbol errors per s, per port
    ecc_hooks: list = field(default_factory=list)   # f(node, gpu, t, dt) -> dict of adds
    nic_hooks: list = field(default_factory=list)   # f(node, nic, t, dt) -> dict of adds/sets
    xids: list = field(default_factory=list)        # (t, gpu, code, Label | None)

    def __post_init__(self):
        r = self.rng
        self.demand = [r.uniform(0.93, 1.07) for _ in range(self.gpus)]
        self.sym_base = [0.0] * self.nics
        self.inlet_c = r.uniform(22.0, 28.0)
        self.offset_s = r.uniform(-0.25, 0.25)

    # -- state -------------------------------------------------------------------------
    def is_dark(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.dark)

    def is_gone(self, g: int, t: float) -> bool:
        return any(a <= t < b for a, b in self.gpu_gone.get(g, ()))

    def load(self, t: float) -> str:
        for a, b, kind in self.busy:
            if a <= t < b:
                return kind
        return "idle"

    def locked_mhz(self, t: float) -> float | None:
        return self.lock[1] if self.lock and t >= self.lock[0] else None

    def clock_mhz(self, g: int, t: float, busy: bool | None = None) -> float:
        """SM clock without sensor noise: the power cap's clock, or the locked one."""
        lk = self.locked_mhz(t)
        if not (self.load(t) != "idle" if busy is None else busy):
            return lk or IDLE_MHZ
        want = TDP_W * self.demand[g]
        capped = BOOST_MHZ * math.sqrt(TDP_W / want) if want > TDP_W else BOOST_MHZ
        return min(capped, lk) if lk else capped

    def compute_factor(self, g: int, t: float) -> float:
        """Kernel time scales with clock^-0.8 (memory-bound parts do not follow the clock)."""
        return (REF_MHZ / self.clock_mhz(g, t, busy=True)) ** 0.8

    # -- rows --------------------------------------------------------------------------
    def rows(self, t0: float, t1: float) -> list:
        """(true_ts, topic, value) for every sample of this node in [t0, t1)."""
        out: list = []
        self._thermal(t0, t1, out)
        self._ecc(t0, t1, out)
        self._nic(t0, t1, out)
        for t, g, code, lab in self.xids:
            if t0 <= t < t1 and not self.is_dark(t):
                out.append((t, "telemetry.ecc", {"ts": t, "node": self.name, "gpu": g,
                                                 "xid": code}))
                if lab:
                    lab.touch(t + self.offset_s)
        return out

    def _ts(self, t: float) -> float:
        return round(t + self.offset_s, 3)

    def _sample_times(self, t0: float, t1: float, every: float, gaps: list) -> list:
        phase = self.rng.uniform(0, every)
        n = int((t1 - t0 - phase) // every) + 1
        ts = [t0 + phase + k * every + self.rng.uniform(-0.05, 0.05) for k in range(n)]
        return [t for t in ts if t0 <= t < t1 and not self.is_dark(t)
                and not any(a <= t < b for a, b in gaps)]

    def _thermal(self, t0, t1, out) -> None:
        r = self.rng
        temp = [self.inlet_c + 9 + 0.052 * 80] * self.gpus
        last = t0
        for t in self._sample_times(t0, t1, 10.0, self.dcgm_gap):
            alpha = 1 - math.exp(-(t - last) / 40.0)
            last = t
            kind = self.load(t)
            lk = self.locked_mhz(t)
            for g in range(self.gpus):
                if self.is_gone(g, t):
                    continue
                if kind == "idle":
                    pw, clk, thr = r.uniform(68, 90), (lk or IDLE_MHZ), 0x1
                else:
                    want = TDP_W * self.demand[g] * (1.0 if kind == "train" else 0.36)
                    want *= r.uniform(0.97, 1.03)
                    clk = self.clock_mhz(g, t)
                    if lk:
                        pw, thr = want * (lk / BOOST_MHZ) ** 2.2, 0
                    elif want > TDP_W:
                        pw, thr = TDP_W - r.uniform(0, 8), 0x4
                    else:
                        pw, thr, clk = want, 0, BOOST_MHZ
                    clk += r.uniform(-8, 8) if not lk else 0.0
                temp[g] += alpha * (self.inlet_c + 9 + 0.052 * pw - temp[g])
                out.append((t, "telemetry.thermal", {
                    "ts": self._ts(t), "node": self.name, "gpu": g,
                    "gpu_temp_c": int(round(temp[g] + r.uniform(-0.6, 0.6))),
                    "mem_temp_c": int(round(temp[g] + 6 + r.uniform(-0.6, 0.6))),
                    "power_w": round(pw, 1), "sm_clock_mhz": round(clk),
                    "throttle": thr}))

    def _ecc(self, t0, t1, out) -> None:
        r = self.rng
        sbe_rate = [r.choice([0.0] * 6 + [r.uniform(0.0005, 0.003)]) for _ in range(self.gpus)]
        rep_rate = [r.uniform(0.0, 0.0015) for _ in range(self.gpus)]
        acc = [{"sbe_volatile": 0.0, "pcie_replay": 0.0} for _ in range(self.gpus)]
        resets = sorted(self.gpu_reset + [b for _, b in self.dark])
        last = t0
        for t in self._sample_times(t0, t1, 30.0, self.dcgm_gap):
            dt, last_prev = t - last, last
            last = t
            if any(last_prev < x <= t for x in resets):
                for a in acc:
                    a["sbe_volatile"] = a["pcie_replay"] = 0.0
                dt = min(dt, t - max(x for x in resets if x <= t))
            for g in range(self.gpus):
                a = acc[g]
                a["sbe_volatile"] += r.expovariate(1) * sbe_rate[g] * dt
                a["pcie_replay"] += r.expovariate(1) * rep_rate[g] * dt
                changed = None
                for hook in self.ecc_hooks:
                    adds = hook(self, g, t, dt)
                    if adds:
                        changed = adds.pop("_label", None) or changed
                        for k, v in adds.items():
                            a[k] = a.get(k, 0.0) + v
                if self.is_gone(g, t):
                    continue
                if changed:
                    changed.touch(self._ts(t))
                out.append((t, "telemetry.ecc", {
                    "ts": self._ts(t), "node": self.name, "gpu": g,
                    "sbe_volatile": int(a["sbe_volatile"]), "dbe_volatile": 0,
                    "retired_pages_sbe": 0, "retired_pages_dbe": 0,
                    "row_remap_pending": False, "row_remap_failure": False, "xid": None,
                    "pcie_replay": int(a["pcie_replay"]), "nvlink_crc_errors": 0,
                    "nvlink_replay_errors": 0, "nvlink_recovery_errors": 0,
                    "recovery_action": "none"}))

    def _nic(self, t0, t1, out) -> None:
        r = self.rng
        keys = ("tx_bytes", "rx_bytes", "symbol_errors", "link_downed", "rcv_errors",
                "xmit_discards", "xmit_wait")
        acc = [dict.fromkeys(keys, 0.0) for _ in range(self.nics)]
        for k, a in enumerate(acc):   # counters since the HCA's last reset, days ago
            a["tx_bytes"] = a["rx_bytes"] = r.uniform(1e14, 9e14)
            a["xmit_wait"] = (WRAP - r.uniform(1e8, 4e8) if self.wrap32
                              else r.uniform(1e9, 5e10))
            a["symbol_errors"] = self.sym_start.get(k, 0.0)
        resets = sorted(self.ib_reset + [b for _, b in self.dark])
        last = t0
        for t in self._sample_times(t0, t1, 10.0, []):
            dt, prev = t - last, last
            last = t
            if any(prev < x <= t for x in resets):
                for a in acc:
                    for k in keys:
                        a[k] = 0.0
                dt = min(dt, t - max(x for x in resets if x <= t))
            busy = self.load(t) == "train"
            for k in range(self.nics):
                a = acc[k]
                bps = r.uniform(9e9, 13e9) if busy else r.uniform(2e5, 8e5)
                a["tx_bytes"] += bps * dt
                a["rx_bytes"] += bps * dt * r.uniform(0.98, 1.02)
                a["xmit_wait"] += (r.uniform(2e5, 6e5) if busy else 0.0) * dt
                a["symbol_errors"] += r.expovariate(1) * self.sym_base[k] * dt
                state, rate = "up", PORT_GBPS
                for hook in self.nic_hooks:
                    res = hook(self, k, t, dt)
                    if not res:
                        continue
                    lab = res.pop("_label", None)
                    if res.pop("_down", False):
                        state, rate = "down", 0.0
                    for key, v in res.items():
                        a[key] += v
                    if lab:
                        lab.touch(self._ts(t))
                row = {"ts": self._ts(t), "node": self.name, "nic": f"mlx5_{k}", "port": 1,
                       "link_state": state, "rate_gbps": rate}
                for key in keys:
                    v = int(a[key])
                    if key in SATURATE:     # PortCounters: 16 / 8 bits, stop at their max
                        v = min(v, SATURATE[key])
                    elif key == "xmit_wait" and self.wrap32:
                        v %= WRAP
                    row[key] = v
                out.append((t, "telemetry.nic", row))
