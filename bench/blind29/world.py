"""What both stories are made of: H100 boards (power, clock, heat), their DCGM rows, InfiniBand
ports and their counters, and the log (records, labels, routine effects, the writer).

Physics (my numbers): an H100 SXM board at its power limit (700 W, or a site's lower cap) shows
SW power cap (`0x4`) and loses clock as (limit/demand)^0.6; idle it draws 62-72 W at 345 MHz
with `0x1` (GPU idle). The die sits at inlet + R x power, R 0.052-0.064 C/W, through a 25 s lag
(first order); past 88 C SW thermal slowdown (`0x20`) cuts power to hold 88 C. A clock lost
slows compute by 0.9 x the lost share (the rest is memory-bound). Memory runs 3-8 C over the
die. Rows: thermal every 10 s, ECC every 30 s, ports every 10 s, each node's collector a few
hundred ms off the grid.
"""

from __future__ import annotations

import gzip
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

TDP_W = 700.0
MAX_MHZ = 1980.0
IDLE_MHZ = 345.0
T_SLOW_C = 88.0
TAU_S = 25.0
LINE_GBPS = 400.0


def clock_share(limit_w: float, demand_w: float) -> float:
    """The share of the full clock a board keeps under a power limit."""
    return 1.0 if demand_w <= limit_w else (limit_w / demand_w) ** 0.6


def slowdown(share: float) -> float:
    """Compute time factor for a clock share (0.9 of the loss shows: some work is memory-bound)."""
    return 1.0 + 0.9 * (1.0 / share - 1.0)


@dataclass
class Board:
    """One GPU's heat and power over the log, at 1 s resolution."""

    node: str
    gpu: int
    inlet_c: float
    r_cw: float
    demand_w: float
    cap_w: float = TDP_W
    idle_w: float = 66.0
    # fault hooks: R multiplier over time, a stuck clock share, a power brake
    r_gain: list = field(default_factory=list)        # [(t0, t1, gain)] ramp from 1 to gain
    stuck: tuple | None = None                         # (t0, share)

    def r_at(self, t: float) -> float:
        g = 1.0
        for t0, t1, gain in self.r_gain:
            if t >= t0:
                g *= 1.0 + (gain - 1.0) * min(1.0, (t - t0) / max(1.0, t1 - t0))
        return self.r_cw * g

    def busy_share(self, t: float) -> float:
        """The clock share this board keeps while busy at ``t`` (cap, heat, a stuck clock) --
        what the step model reads; the thermal walk below draws the same rule."""
        share = clock_share(self.cap_w, self.demand_w)
        hold = (T_SLOW_C - self.inlet_c) / self.r_at(t)
        if hold < min(self.demand_w, self.cap_w):
            share = min(share, clock_share(hold, self.demand_w))
        if self.stuck and t >= self.stuck[0]:
            share = min(share, self.stuck[1])
        return share

    def walk(self, t0: float, t1: float, busy, rng: random.Random) -> list[tuple]:
        """(t, temp, mem_temp, power, clock, throttle) every second from t0 to t1; ``busy(t)``
        says whether the GPU computes (False: idle or waiting) or None (gone: no rows)."""
        out = []
        temp = self.inlet_c + self.r_cw * self.idle_w
        mem_off = rng.uniform(3.0, 8.0)
        for i in range(int(t1 - t0) + 1):
            t = t0 + i
            state = busy(t)
            if state is None:
                out.append((t, None, None, None, None, None))
                continue
            r = self.r_at(t)
            thr = 0
            if state:
                want = self.demand_w * rng.uniform(0.97, 1.03)
                p = min(want, self.cap_w)
                share = clock_share(self.cap_w, want)
                if want > self.cap_w:
                    thr |= 0x4
            else:
                want = p = self.idle_w * rng.uniform(0.95, 1.08)
                share = IDLE_MHZ / MAX_MHZ
                thr |= 0x1
            if self.stuck and t >= self.stuck[0] and state:
                p *= self.stuck[1] ** 1.4
                share = min(share, self.stuck[1])
            target = self.inlet_c + r * p
            temp += (target - temp) * (1.0 - math.exp(-1.0 / TAU_S))
            if temp > T_SLOW_C and state:
                temp = T_SLOW_C + rng.uniform(-0.4, 0.4)
                hold = (T_SLOW_C - self.inlet_c) / r
                if hold < p:
                    share = min(share, clock_share(hold, want))
                    p = hold
                thr |= 0x20
            out.append((t, temp, temp + mem_off, p, MAX_MHZ * share, thr))
        return out


class Log:
    """Records with their arrival times, labels and routine effects; ``save`` writes them."""

    def __init__(self, rng: random.Random, topology: dict):
        self.rng = rng
        self.topology = topology
        self.recs: list[tuple[float, float, str, dict]] = []   # (arrival, ts, topic, value)
        self.labels: list[dict] = []
        self.effects: list[dict] = []
        self.lag: dict[str, float] = {}

    def emit(self, topic: str, value: dict, *, key: str = "") -> None:
        rng = self.rng
        delay = rng.uniform(0.03, 0.4)
        if rng.random() < 0.004:
            delay = rng.uniform(0.4, 2.5)
        ts = value["ts"]
        self.recs.append((ts + delay, ts, topic, value))
        if rng.random() < 0.001:
            self.recs.append((ts + delay + rng.uniform(0.05, 1.5), ts, topic, value))

    def label(self, fault_id: str, kind: str, cause: str, scope: dict, start_ts: float,
              end_ts: float, attributable: bool = True) -> None:
        self.labels.append({"fault_id": fault_id, "kind": kind, "cause": cause, "scope": scope,
                            "start_ts": round(start_ts, 3), "end_ts": round(end_ts, 3),
                            "attributable": attributable})

    def effect(self, effect: str, scope: dict, start_ts: float, end_ts: float) -> None:
        self.effects.append({"effect": effect, "scope": scope, "start_ts": round(start_ts, 3),
                             "end_ts": round(end_ts, 3), "expect": "pages nobody"})

    def save(self, out: Path, name: str) -> Path:
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{name}.jsonl.gz"
        recs = sorted(self.recs, key=lambda r: (r[0], r[1]))
        with gzip.GzipFile(path, "wb", mtime=0) as fh:
            def put(rec: dict) -> None:
                fh.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
            put({"topic": "topology", "value": self.topology})
            for _arr, _ts, topic, value in recs:
                put({"topic": topic, "value": value})
            for lab in sorted(self.labels, key=lambda v: v["fault_id"]):
                put({"topic": "labels", "value": lab})
        (out / f"{name}.effects.json").write_text(json.dumps(
            sorted(self.effects, key=lambda e: (e["start_ts"], e["effect"])), indent=1))
        return path


def thermal_rows(log: Log, board: Board, walk: list[tuple], t0: float, t1: float,
                 extra: dict) -> None:
    """DCGM thermal rows of one board every 10 s, its node's collector ``log.lag`` off grid."""
    off = log.lag.setdefault(board.node, log.rng.uniform(0.1, 0.9))
    base = walk[0][0]
    t = t0 + off
    while t < t1:
        i = int(t - base)
        if 0 <= i < len(walk) and walk[i][1] is not None:
            _, temp, mem, p, mhz, thr = walk[i]
            log.emit("telemetry.thermal", {
                "ts": round(t, 3), "node": board.node, "gpu": board.gpu,
                "gpu_temp_c": round(temp), "mem_temp_c": round(mem), "power_w": round(p, 1),
                "sm_clock_mhz": round(mhz / 15) * 15.0, "throttle": thr, **extra})
        t += 10.0


@dataclass
class Port:
    """One InfiniBand port's counters; ``poll`` writes a row every 10 s."""

    node: str
    nic: str
    rng: random.Random
    port: int = 1
    tx: int = 0
    rx: int = 0
    sym: int = 0
    downed: int = 0
    rcv: int = 0
    wait: int = 0
    discards: int = 0

    def __post_init__(self):
        r = self.rng
        self.tx, self.rx = r.randrange(10**13, 10**15), r.randrange(10**13, 10**15)
        self.sym, self.downed = r.randrange(0, 40), r.randrange(0, 3)
        self.wait = r.randrange(10**6, 10**9)

    def poll(self, log: Log, t: float, gbytes_s: float, *, up: bool = True,
             rate: float = LINE_GBPS, sym: int = 0, rcv: int = 0, downed: int = 0,
             extra: dict | None = None) -> None:
        r = self.rng
        if up:
            moved = int(gbytes_s * 1e9 * 10.0 * r.uniform(0.92, 1.08))
            moved = min(moved, int(rate / 8 * 1e9 * 10.0))
            self.tx += moved
            self.rx += int(moved * r.uniform(0.97, 1.03))
            load = gbytes_s * 8 / rate
            self.wait += int(r.uniform(2e3, 2e4) * (1 + 40 * max(0.0, load - 0.6)))
        if r.random() < 0.002:
            sym += 1
        self.sym += sym
        self.rcv += rcv
        self.downed += downed
        log.emit("telemetry.nic", {
            "ts": round(t, 3), "node": self.node, "nic": self.nic, "port": self.port,
            "link_state": "up" if up else "down", "rate_gbps": rate,
            "tx_bytes": self.tx, "rx_bytes": self.rx, "symbol_errors": self.sym,
            "link_downed": self.downed, "rcv_errors": self.rcv,
            "xmit_discards": self.discards, "xmit_wait": self.wait, **(extra or {})})


@dataclass
class Ecc:
    """One GPU's DCGM ECC counters; ``poll`` writes a row, ``xid`` an event row."""

    node: str
    gpu: int
    sbe: int = 0
    dbe: int = 0
    pages_sbe: int = 0
    pages_dbe: int = 0
    pending: bool = False
    action: str = "none"
    pcie: int = 0

    def poll(self, log: Log, t: float, extra: dict | None = None) -> None:
        if log.rng.random() < 0.003:
            self.sbe += 1
        log.emit("telemetry.ecc", {
            "ts": round(t, 3), "node": self.node, "gpu": self.gpu, "sbe_volatile": self.sbe,
            "dbe_volatile": self.dbe, "retired_pages_sbe": self.pages_sbe,
            "retired_pages_dbe": self.pages_dbe, "row_remap_pending": self.pending,
            "row_remap_failure": False, "xid": None, "pcie_replay": self.pcie,
            "nvlink_crc_errors": 0, "nvlink_replay_errors": 0, "nvlink_recovery_errors": 0,
            "recovery_action": self.action, **(extra or {})})

    def xid(self, log: Log, t: float, code: int) -> None:
        log.emit("telemetry.ecc", {"ts": round(t, 3), "node": self.node, "gpu": self.gpu,
                                   "xid": code})
