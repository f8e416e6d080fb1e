"""The hardware side of a blind12 log: GPU boards, DCGM / InfiniBand collectors, XIDs, labels.

A `World` holds the records written so far and what every GPU is doing: which job keeps it busy
when (`occupy`), power-brake bursts (`brakes`), a GPU that draws less power for the same work
(`power_scale`), ECC / NVLink counters since boot. Collectors sample that state at their own
cadence. A `Label` grows to span every record its fault changed (DESIGN: `start_ts` is the first
record the fault changes, `end_ts` the last), so a label never claims a quiet minute.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Board:
    """One GPU model as DCGM sees it (public spec-sheet figures, rounded)."""
    name: str
    tdp_w: float
    idle_w: float
    boost_mhz: float
    idle_mhz: float
    busy_c: float          # GPU temperature above the coolant / inlet at full load


GB200 = Board("GB200", 1200.0, 150.0, 2062.0, 345.0, 34.0)
B200 = Board("B200", 1000.0, 140.0, 1965.0, 345.0, 46.0)


@dataclass
class Label:
    """A fault's ground truth; `touch(ts)` widens it to each record the fault changed."""
    fault_id: str
    kind: str
    cause: str
    scope: dict
    attributable: bool
    start_ts: float | None = None
    end_ts: float | None = None

    def touch(self, ts: float) -> None:
        self.start_ts = ts if self.start_ts is None else min(self.start_ts, ts)
        self.end_ts = ts if self.end_ts is None else max(self.end_ts, ts)

    def value(self) -> dict:
        return {"fault_id": self.fault_id, "kind": self.kind, "cause": self.cause,
                "scope": self.scope, "start_ts": round(self.start_ts, 3),
                "end_ts": round(self.end_ts, 3), "attributable": self.attributable}


COUNTERS = ("sbe_volatile", "dbe_volatile", "retired_pages_sbe", "retired_pages_dbe",
            "pcie_replay", "nvlink_crc_errors", "nvlink_replay_errors",
            "nvlink_recovery_errors")


@dataclass
class Gpu:
    changes: list = field(default_factory=list)  # (t, field, delta or new value, label|None)
    busy: list = field(default_factory=list)     # sorted (t0, t1, load) spans
    power_scale: float = 1.0
    label_ids: tuple = ()                          # labels its loaded thermal rows belong to

    def at(self, t: float) -> tuple[dict, list]:
        """Counters since boot and flags at t, and the labels whose changes show in them."""
        val = dict.fromkeys(COUNTERS, 0)
        val.update(row_remap_pending=False, row_remap_failure=False, recovery_action="none")
        labs = []
        for tc, name, x, lab in self.changes:
            if tc > t:
                continue
            if name in COUNTERS:
                val[name] += x
            else:
                val[name] = x
            if lab is not None and lab not in labs:
                labs.append(lab)
        return val, labs


@dataclass
class Port:
    tx: int
    rx: int
    wait: int = 0
    symbol: int = 0


class World:
    """Records and unit state of one log; every random draw comes from `rng`."""

    def __init__(self, rng: random.Random, board: Board, nodes: list[str], gpus: int,
                 nics: list[str], coolant_c: float) -> None:
        self.rng, self.board, self.nodes, self.nics = rng, board, nodes, nics
        self.coolant_c = coolant_c
        self.gpu = {(n, g): Gpu() for n in nodes for g in range(gpus)}
        self.port = {(n, p): Port(rng.randrange(10**12, 10**14), rng.randrange(10**12, 10**14))
                     for n in nodes for p in nics}
        self.brakes: dict[str, list] = {}          # node -> sorted (t0, t1) spans
        self.brake_label: dict[str, Label] = {}
        self.records: list[tuple[float, int, str, dict]] = []
        self.labels: list[Label] = []
        self.effects: list[dict] = []              # routine shapes: pages nobody
        self.skew_s: dict[str, float] = {}         # node -> its clock's offset (within 5 s)
        self._temp: dict[tuple, tuple] = {}        # (node, gpu) -> (t, temperature)
        self._seq = 0

    # ---- writing -----------------------------------------------------------------------
    def emit(self, topic: str, value: dict, *labels: Label) -> None:
        """One record, written in true-time order; a skewed node's clock moves only its `ts`."""
        self._seq += 1
        true_ts = value["ts"]
        if value["node"] in self.skew_s:
            value["ts"] = round(true_ts + self.skew_s[value["node"]], 3)
        self.records.append((true_ts, self._seq, topic, value))
        for lab in labels:
            lab.touch(value["ts"])

    def label(self, *args, **kw) -> Label:
        lab = Label(*args, **kw)
        self.labels.append(lab)
        return lab

    def effect(self, name: str, scope: dict, t0: float, t1: float, why: str) -> None:
        self.effects.append({"effect": name, "scope": scope, "start_ts": round(t0, 3),
                             "end_ts": round(t1, 3), "why": why})

    # ---- state the jobs set --------------------------------------------------------------
    def occupy(self, node: str, gpu: int, t0: float, t1: float, load: float = 0.92) -> None:
        bisect.insort(self.gpu[(node, gpu)].busy, (t0, t1, load))

    def load(self, node: str, gpu: int, t: float) -> float:
        for t0, t1, load in self.gpu[(node, gpu)].busy:
            if t0 <= t < t1:
                return load
        return 0.0

    def braked(self, node: str, t: float) -> bool:
        return any(a <= t < b for a, b in self.brakes.get(node, ()))

    def brake_share(self, node: str, t0: float, t1: float) -> float:
        """Share of [t0, t1) a node's GPUs spent under the power brake."""
        spans = self.brakes.get(node)
        if not spans or t1 <= t0:
            return 0.0
        inside = sum(max(0.0, min(b, t1) - max(a, t0)) for a, b in spans)
        return inside / (t1 - t0)

    # ---- collectors --------------------------------------------------------------------
    def thermal(self, node: str, gpu: int, t: float, integer_temps: bool) -> None:
        b, st, rng = self.board, self.gpu[(node, gpu)], self.rng
        load = self.load(node, gpu, t)
        braked = self.braked(node, t)
        throttle, clock = 0, b.boost_mhz - rng.uniform(0, 40)
        power = b.idle_w + (b.tdp_w - b.idle_w) * load * st.power_scale * rng.uniform(0.94, 1.0)
        if load == 0.0:
            throttle, clock = 0x1, b.idle_mhz
        elif power > 0.93 * b.tdp_w:
            throttle, power = 0x4, min(power, b.tdp_w)     # at the board limit: routine
            clock -= rng.uniform(30, 120)
        if braked:                                           # EDPp / power brake asserted
            throttle |= 0x80 | 0x8
            clock = min(clock, rng.uniform(1000, 1180))
            power = min(power, b.idle_w + 0.45 * (b.tdp_w - b.idle_w) * rng.uniform(0.93, 1.0))
        target = self.coolant_c + b.busy_c * (power - b.idle_w) / (b.tdp_w - b.idle_w) + 4.0
        t_prev, prev = self._temp.get((node, gpu), (t - 1e6, target))
        temp = target + (prev - target) * math.exp(-(t - t_prev) / 12.0)   # cold plate lag
        self._temp[(node, gpu)] = (t, temp)
        temp += rng.gauss(0, 0.5)
        mem = temp + 5.0 + rng.gauss(0, 0.6)
        val = {"ts": round(t, 3), "node": node, "gpu": gpu,
               "gpu_temp_c": round(temp) if integer_temps else round(temp, 1),
               "mem_temp_c": round(mem) if integer_temps else round(mem, 1),
               "power_w": round(power, 1), "sm_clock_mhz": float(round(clock)),
               "throttle": throttle}
        labs = [self.brake_label[node]] if braked and node in self.brake_label else []
        labs += [lab for lab in st.label_ids if load > 0.0]
        self.emit("telemetry.thermal", val, *labs)

    def change(self, node: str, gpu: int, t: float, name: str, x, label: Label | None = None):
        """From t on, a counter grows by x (or a flag is x) on this GPU."""
        self.gpu[(node, gpu)].changes.append((t, name, x, label))

    def ecc(self, node: str, gpu: int, t: float) -> None:
        if self.rng.random() < 0.01:                 # a stray corrected bit: routine
            self.change(node, gpu, t - 1.0, "sbe_volatile", 1)
        val, labs = self.gpu[(node, gpu)].at(t)
        self.emit("telemetry.ecc", {"ts": round(t, 3), "node": node, "gpu": gpu, **val,
                                    "xid": None}, *labs)

    def xid(self, node: str, gpu: int, t: float, code: int, *labels: Label) -> None:
        """An XID from the kernel log, as its own record at the event's time."""
        self.emit("telemetry.ecc", {"ts": round(t, 3), "node": node, "gpu": gpu, "xid": code},
                  *labels)

    def nic(self, node: str, nic: str, t: float, dt: float, gbps_busy: float) -> None:
        p, rng = self.port[(node, nic)], self.rng
        busy = max(self.load(node, g, t) for (n, g) in self.gpu if n == node)
        rate = gbps_busy * busy * rng.uniform(0.85, 1.0) * 1e9 / 8
        p.tx += int(rate * dt)
        p.rx += int(rate * dt * rng.uniform(0.97, 1.03))
        p.wait += int(busy * rng.uniform(2e4, 9e4) * dt)
        if rng.random() < 0.003:
            p.symbol += 1
        self.emit("telemetry.nic", {
            "ts": round(t, 3), "node": node, "nic": nic, "port": 1, "link_state": "up",
            "rate_gbps": 400.0, "tx_bytes": p.tx, "rx_bytes": p.rx,
            "symbol_errors": p.symbol, "link_downed": 0, "rcv_errors": 0, "xmit_discards": 0,
            "xmit_wait": p.wait, "out_of_sequence": 0, "packet_seq_err": 0,
            "np_cnp_sent": 0, "rp_cnp_handled": 0})

    def collectors(self, t_start: float, t_end: float, thermal_s: float, ecc_s: float,
                   nic_s: float, gbps_busy: float, integer_temps: bool) -> None:
        """Every collector of every node from t_start to t_end, each node at its own phase."""
        for node in self.nodes:
            gpus = [g for (n, g) in self.gpu if n == node]
            ph = self.rng.uniform(0, thermal_s)
            t = t_start + ph
            while t < t_end:
                for g in gpus:
                    self.thermal(node, g, t + 0.002 * g, integer_temps)
                t += thermal_s
            t = t_start + self.rng.uniform(0, ecc_s)
            while t < t_end:
                for g in gpus:
                    self.ecc(node, g, t + 0.003 * g)
                t += ecc_s
            t = t_start + self.rng.uniform(0, nic_s)
            while t < t_end:
                for nic in self.nics:
                    self.nic(node, nic, t, nic_s, gbps_busy)
                t += nic_s
