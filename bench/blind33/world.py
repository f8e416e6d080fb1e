"""Boards that manage their own power and clocks, the DCGM rows they make, and the log writer.

A ``Gpu`` is simulated a segment at a time (a step's slice of its time, or an idle gap): the
job asks what its clock is worth now (``speed``), then books the segment's power, clock and
clock-event reasons (``book``). Its die follows ``coolant + R x power`` with a lag, and its
boost clock (EDPp) gives up headroom as it warms: that is the only thermal behaviour a healthy
board has. What shapes the power: the board's limit (a workload power profile or the rack's
budget lowers it: 0x4 when the GPU wants more), the power-smoothing floor (GB200: an idle board
keeps drawing the floor so the facility sees no cliff, and climbs back at a limited ramp rate),
and the faults (a clock held by application clocks 0x2, a VRM's power brake 0x80|0x8, a slow
ramp, a cold plate losing flow). ``rows`` turns the segments into 10 s thermal rows (the
interval's mean power and clock, reasons OR-ed, the die at the row's time), 30 s ECC rows and
10 s NIC rows. ``Log`` writes DESIGN's incident log: topology first, telemetry in arrival order
(30-400 ms after ``ts``, 0.4 % 0.5-2.5 s late, 0.1 % twice), labels last; effects beside it.
"""

from __future__ import annotations

import gzip
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

SAMPLE_S, ECC_S, NIC_S = 10.0, 30.0, 10.0


@dataclass(frozen=True)
class Board:
    """A GPU model's power figures (W), clocks (MHz) and cooling."""
    name: str
    tdp_w: float
    busy_w: float      # what a compute kernel stream draws unthrottled
    wait_w: float      # blocked in a collective
    idle_w: float
    floor_w: float     # power smoothing's idle floor (0: none)
    boost_mhz: float
    idle_mhz: float
    coolant_c: float
    r_cpw: float       # die over coolant per watt
    tau_s: float       # the die's lag


H100 = Board("H100", 700.0, 655.0, 300.0, 75.0, 0.0, 1980.0, 345.0, 31.0, 0.062, 25.0)
GB200 = Board("GB200", 1200.0, 1120.0, 520.0, 140.0, 720.0, 2062.0, 600.0, 32.0, 0.032, 20.0)


@dataclass
class Gpu:
    node: str
    gpu: int
    board: Board
    silicon: float                 # a board's own speed, x~1.00 +- 0.01
    limit_w: float = 0.0
    temp_c: float = 0.0
    r_cpw: float = 0.0
    held_clock: float = 0.0        # > 0: application clocks hold it (0x2) at this share
    ramp_slow: bool = False        # the power ramp limited to its slowest setting
    brakes: list[tuple[float, float]] = field(default_factory=list)
    frozen_from: float = math.inf  # the power reading stops moving from here
    segs: list[tuple[float, float, float, float, int, float]] = field(default_factory=list)
    _pf: float = 1.0               # the power share the last ``speed`` left

    def __post_init__(self) -> None:
        self.limit_w = self.limit_w or self.board.tdp_w
        self.r_cpw = self.r_cpw or self.board.r_cpw
        self.temp_c = self.temp_c or self.board.coolant_c + self.r_cpw * self.board.idle_w

    def braking(self, t0: float, t1: float) -> bool:
        return any(a < t1 and t0 < b for a, b in self.brakes)

    def speed(self, t0: float, t1: float) -> tuple[float, int]:
        """The clock's share of boost over [t0, t1) for a compute stream, and the reasons."""
        bits, pf = 0, 1.0
        clk = self.silicon * (1.0 - 0.004 * max(0.0, self.temp_c - 60.0))  # EDPp headroom
        if self.temp_c >= 87.0:
            clk *= 0.86
            pf *= 0.74
            bits |= 0x20
        if self.busy_w() > self.limit_w:
            clk *= math.sqrt(self.limit_w / self.busy_w())
            bits |= 0x4
        if self.held_clock:
            pf *= min(1.0, self.held_clock / clk) ** 2
            clk = min(clk, self.held_clock)
            bits |= 0x2
        if self.ramp_slow:
            clk *= 0.92
            pf *= 0.9
            bits |= 0x4
        if self.braking(t0, t1):
            clk *= 0.5
            pf *= 0.45
            bits |= 0x80 | 0x8
        self._pf = pf
        return clk, bits

    def busy_w(self) -> float:
        return self.board.busy_w * self.silicon

    def book(self, t0: float, t1: float, duty: float, clk: float, bits: int,
             coolant_c: float) -> None:
        """Book [t0, t1): ``duty`` of it computing at ``clk``, the rest blocked (``duty`` < 0:
        idle, the smoothing floor held when the board has one)."""
        b = self.board
        if duty < 0:
            power, mhz = max(b.idle_w, b.floor_w), b.idle_mhz
        else:
            busy = min(self.busy_w(), self.limit_w) * self._pf
            power = b.wait_w * (1 - duty) + busy * duty
            mhz = b.boost_mhz * (clk * duty + 0.97 * (1 - duty))
        dt = max(t1 - t0, 1e-6)
        target = coolant_c + self.r_cpw * power
        self.temp_c = target + (self.temp_c - target) * math.exp(-dt / b.tau_s)
        self.segs.append((t0, t1, power, mhz, bits, self.temp_c))


def rows(gpus: list[Gpu], t0: float, t1: float, rng: random.Random) -> list[tuple[str, dict]]:
    """DCGM thermal rows (10 s) and ECC rows (30 s) for every GPU over [t0, t1)."""
    out: list[tuple[str, dict]] = []
    for g in gpus:
        phase = rng.uniform(0, SAMPLE_S)
        segs = sorted(g.segs)
        i, frozen = 0, None
        t = t0 + phase
        while t < t1:
            a = t - SAMPLE_S
            e = p = m = 0.0
            bits, temp = 0, None
            while i < len(segs) and segs[i][1] <= a:
                i += 1
            j = i
            while j < len(segs) and segs[j][0] < t:
                s0, s1, pw, mhz, bb, tc = segs[j]
                w = min(s1, t) - max(s0, a)
                if w > 0:
                    e += w
                    p += pw * w
                    m += mhz * w
                    bits |= bb
                    temp = tc
                j += 1
            if e > 0:
                power = round(p / e * rng.uniform(0.995, 1.005), 1)
                if t >= g.frozen_from:
                    frozen = power if frozen is None else frozen
                    power = frozen
                out.append(("telemetry.thermal", {
                    "ts": round(t, 3), "node": g.node, "gpu": g.gpu,
                    "gpu_temp_c": round(temp, 0), "mem_temp_c": round(temp + 4.0, 0),
                    "power_w": power, "sm_clock_mhz": round(m / e / 15) * 15.0,
                    "throttle": bits}))
            t += SAMPLE_S
        base = rng.randint(0, 3)
        t = t0 + rng.uniform(0, ECC_S)
        while t < t1:
            out.append(("telemetry.ecc", {
                "ts": round(t, 3), "node": g.node, "gpu": g.gpu, "sbe_volatile": base,
                "dbe_volatile": 0, "retired_pages_sbe": 0, "retired_pages_dbe": 0,
                "row_remap_pending": False, "row_remap_failure": False, "pcie_replay": 0,
                "nvlink_crc_errors": 0, "nvlink_replay_errors": 0, "nvlink_recovery_errors": 0,
                "recovery_action": "none"}))
            t += ECC_S
    return out


def nic_rows(node: str, nics: int, t0: float, t1: float, gbps: float, busy: list[tuple[float,
             float]], rng: random.Random) -> list[tuple[str, dict]]:
    """Each port's counters every 10 s: bytes at ``gbps`` x the share of time inside ``busy``
    spans (the job's reductions), a little waiting."""
    out = []
    for k in range(nics):
        tx = rx = rng.randint(10**9, 10**11)
        wait = rng.randint(0, 10**5)
        t = t0 + rng.uniform(0, NIC_S)
        last = t - NIC_S
        while t < t1:
            share = sum(max(0.0, min(b, t) - max(a, last)) for a, b in busy) / NIC_S
            moved = int(gbps / 8 * 1e9 * NIC_S * min(1.0, share) * rng.uniform(0.9, 1.0))
            tx += moved
            rx += moved
            wait += int(moved / 1e6 * rng.uniform(0.5, 2.0))
            out.append(("telemetry.nic", {
                "ts": round(t, 3), "node": node, "nic": f"mlx5_{k}", "port": 1,
                "link_state": "up", "rate_gbps": 400.0, "tx_bytes": tx, "rx_bytes": rx,
                "symbol_errors": 0, "link_downed": 0, "rcv_errors": 0, "xmit_discards": 0,
                "xmit_wait": wait}))
            last, t = t, t + NIC_S
    return out


@dataclass
class Log:
    """A story's records, labels and routine effects; ``write`` makes the incident log."""
    topology: str
    seed: int
    records: list[tuple[str, dict]] = field(default_factory=list)
    labels: list[dict] = field(default_factory=list)
    effects: list[dict] = field(default_factory=list)

    def label(self, fault_id: str, kind: str, cause: str, scope: dict, start_ts: float,
              end_ts: float, attributable: bool = True) -> None:
        self.labels.append({"fault_id": fault_id, "kind": kind, "cause": cause,
                            "scope": scope, "start_ts": round(start_ts, 3),
                            "end_ts": round(end_ts, 3), "attributable": attributable})

    def effect(self, effect: str, scope: dict, start_ts: float, end_ts: float,
               what: str) -> None:
        self.effects.append({"effect": effect, "scope": scope, "start_ts": round(start_ts, 3),
                             "end_ts": round(end_ts, 3), "what": what,
                             "expect": "pages nobody"})

    def write(self, path: Path) -> Path:
        rng = random.Random(self.seed * 7919 + 33)
        timed = []
        for n, (topic, v) in enumerate(self.records):
            late = rng.uniform(0.5, 2.5) if rng.random() < 0.004 else rng.uniform(0.03, 0.4)
            timed.append((v["ts"] + late, n, topic, v))
            if rng.random() < 0.001:
                timed.append((v["ts"] + late + rng.uniform(0.2, 2.0), n, topic, v))
        timed.sort(key=lambda x: (x[0], x[1]))
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.GzipFile(path, "wb", mtime=0) as fh:
            def put(topic: str, value: dict) -> None:
                fh.write(json.dumps({"topic": topic, "value": value},
                                    separators=(",", ":")).encode() + b"\n")
            put("topology", {"format": "faultline", "text": self.topology})
            for _, _, topic, v in timed:
                put(topic, v)
            for lab in self.labels:
                put("labels", lab)
        path.with_name(path.name.replace(".jsonl.gz", ".effects.json")).write_text(
            json.dumps(self.effects, indent=1) + "\n")
        return path
