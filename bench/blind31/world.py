"""The world of blind31: H100 nodes whose power, clock and die temperature follow the work each
step does, their DCGM / InfiniBand rows, and the log that carries them in arrival order.

Physics (one state point a node at every step's end and every 2 s of an idle gap):
- a GPU draws its work's demand while it computes (a heavy video bucket more than a text batch)
  and its idle draw otherwise; a row's power is the interval's mean. A demand above the board
  limit (700 W) is capped with ``0x4``, the clock giving up the square root of the excess;
- the die's temperature approaches ``inlet + R * power`` with a 25 s time constant; a board
  whose ``R`` went up (a cold plate's paste pumped out) reaches 88 C on heavy work, holds there
  with ``0x20`` and gives up the power (so clock) that would take it higher;
- a node's power brake (``0x80``: a power supply lost, the node's budget cut) trips when a
  GPU's demand passes a threshold and holds every GPU of the node to a reduced draw meanwhile.
Rows: thermal every 10 s, ECC every 30 s (a GPU's counters; XIDs as their own event rows), IB
ports every 10 s, each node on its own phase.

``Log`` keeps every record with its event time; ``write`` puts the topology first, the
telemetry in arrival order (30-400 ms after ``ts``, 0.4 % 0.5-2.5 s late, 0.1 % twice) and the
labels last (each spanning the records its fault changed), and writes the routine shapes beside
the log as ``STORY-sSEED.effects.json``.
"""

from __future__ import annotations

import bisect
import gzip
import io
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

LIMIT_W = 700.0
IDLE_W = 72.0
BOOST_MHZ = 1980.0
IDLE_MHZ = 345.0
TAU_S = 25.0
HOLD_C = 88.0
NICS = [f"mlx5_{i}" for i in range(8)]


@dataclass
class Fault:
    fault_id: str
    kind: str
    cause: str
    scope: dict
    attributable: bool
    first: float = math.inf
    last: float = -math.inf


@dataclass
class Log:
    """Every record of one story, the faults it carries and the routine shapes it draws."""

    seed: int
    records: list[tuple[str, dict]] = field(default_factory=list)
    faults: dict[str, Fault] = field(default_factory=dict)
    effects: list[dict] = field(default_factory=list)

    def fault(self, fault_id: str, kind: str, cause: str, scope: dict,
              attributable: bool = True) -> str:
        self.faults[fault_id] = Fault(fault_id, kind, cause, scope, attributable)
        return fault_id

    def add(self, topic: str, value: dict, fault: str | None = None) -> None:
        """One record; ``fault`` names the fault that changed it (its label spans it)."""
        self.records.append((topic, value))
        if fault is not None:
            f = self.faults[fault]
            f.first, f.last = min(f.first, value["ts"]), max(f.last, value["ts"])

    def effect(self, name: str, scope: dict, start: float, end: float, what: str) -> None:
        self.effects.append({"effect": name, "scope": scope, "start_ts": round(start, 3),
                             "end_ts": round(end, 3), "what": what,
                             "expect": "pages nobody"})

    def write(self, path: Path, topology: str) -> Path:
        rng = random.Random(self.seed * 7919 + 31)
        timed = []
        for i, (_, v) in enumerate(self.records):
            u = rng.random()
            delay = rng.uniform(0.5, 2.5) if u < 0.004 else rng.uniform(0.03, 0.4)
            timed.append((v["ts"] + delay, i))
            if rng.random() < 0.001:
                timed.append((v["ts"] + delay + rng.uniform(0.05, 1.0), i))
        timed.sort()
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as raw, gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=5) as gz, \
                io.TextIOWrapper(gz, encoding="utf-8") as fh:  # mtime 0: the same bytes a seed
            fh.write(_line("topology", {"format": "faultline", "text": topology}))
            for _, i in timed:
                fh.write(_line(*self.records[i]))
            for f in self.faults.values():
                if f.first > f.last:
                    continue  # the fault changed nothing before the log's end
                fh.write(_line("labels", {
                    "fault_id": f.fault_id, "kind": f.kind, "cause": f.cause,
                    "scope": f.scope, "start_ts": round(f.first, 3),
                    "end_ts": round(f.last, 3), "attributable": f.attributable}))
        path.with_name(path.name.replace(".jsonl.gz", ".effects.json")).write_text(
            json.dumps(self.effects, indent=1) + "\n")
        return path


def _line(topic: str, value: dict) -> str:
    return json.dumps({"topic": topic, "value": value}, separators=(",", ":")) + "\n"


@dataclass
class Gpu:
    r_cw: float          # die C/W
    inlet_c: float
    temp_c: float
    hold: bool = False   # reached HOLD_C under 0x20


@dataclass
class Node:
    """Eight GPUs' physics and their state points (t, power, clock, temp, throttle a GPU)."""

    name: str
    rng: random.Random
    gpus: list[Gpu] = field(default_factory=list)
    points: list[tuple] = field(default_factory=list)
    brake: tuple[float, float] | None = None  # (demand that trips it, draw it holds a GPU to)

    @classmethod
    def make(cls, name: str, rng: random.Random, t0: float) -> Node:
        n = cls(name, rng)
        for _ in range(8):
            inlet = rng.uniform(24.0, 29.0)
            r = rng.uniform(0.058, 0.066)
            n.gpus.append(Gpu(r, inlet, inlet + r * IDLE_W))
        n.idle(t0, t0 + 0.001)
        return n

    def run(self, t0: float, t1: float, demand_w: list[float], duty: list[float]
            ) -> list[float]:
        """The GPUs worked ``t0..t1`` at ``demand_w`` for ``duty`` of the time; each GPU's
        slowdown (>= 1: its clock lost to a cap, a hold or a brake) over the interval."""
        slow, pw, clk, thr = [], [], [], []
        dt = max(t1 - t0, 1e-3)
        for g, d, u in zip(self.gpus, demand_w, duty, strict=True):
            flags, draw = 0, d          # draw while computing
            if draw > LIMIT_W:
                flags |= 0x4
                draw = LIMIT_W - self.rng.uniform(0.0, 9.0)
            if self.brake is not None and d > self.brake[0]:
                flags |= 0x80
                draw = min(draw, self.brake[1])
            power = IDLE_W + (draw - IDLE_W) * u       # the interval's mean
            ss = g.inlet_c + g.r_cw * power
            if ss > HOLD_C + 0.3 and (g.temp_c >= HOLD_C - 0.6 or g.hold) and u > 0.05:
                held = (HOLD_C - g.inlet_c) / g.r_cw   # the board sheds clock to hold HOLD_C
                draw = min(draw, IDLE_W + (held - IDLE_W) / u)
                power = IDLE_W + (draw - IDLE_W) * u
                flags, g.hold = flags | 0x20, True
                ss = g.inlet_c + g.r_cw * power
            else:
                g.hold = False
            g.temp_c = ss + (g.temp_c - ss) * math.exp(-dt / TAU_S)
            if g.hold:
                g.temp_c = min(g.temp_c, HOLD_C + self.rng.uniform(-0.3, 0.3))
            s = 1.0 if draw >= d or d <= IDLE_W else ((draw - IDLE_W) / (d - IDLE_W)) ** -0.5
            slow.append(s)
            pw.append(power)
            clk.append(BOOST_MHZ / s if u > 0.05 else IDLE_MHZ)
            thr.append(flags)
        self.points.append((t1, pw, clk, [g.temp_c for g in self.gpus], thr))
        return slow

    def idle(self, t0: float, t1: float, draw_w: float = IDLE_W) -> None:
        """No work from ``t0`` to ``t1`` (a save, a pause): a state point every 2 s."""
        t = t0
        while t < t1:
            nxt = min(t + 2.0, t1)
            for g in self.gpus:
                ss = g.inlet_c + g.r_cw * draw_w
                g.temp_c = ss + (g.temp_c - ss) * math.exp(-(nxt - t) / TAU_S)
                g.hold = False
            self.points.append((nxt, [draw_w + self.rng.uniform(-2, 2) for _ in self.gpus],
                                [IDLE_MHZ] * 8, [g.temp_c for g in self.gpus], [0x1] * 8))
            t = nxt

    def at(self, ts: float) -> tuple:
        i = bisect.bisect_right([p[0] for p in self.points], ts) - 1
        return self.points[max(i, 0)]


def thermal_rows(log: Log, node: Node, t0: float, t1: float, extra: dict,
                 faults: dict[int, tuple[str, float, int]] | None = None) -> None:
    """DCGM thermal rows every 10 s; ``faults`` maps a GPU to (fault, from_ts, flag): its rows
    from ``from_ts`` are the fault's (only those showing ``flag`` when it is not 0)."""
    rng = node.rng
    times = [p[0] for p in node.points]
    t = t0 + rng.uniform(0.0, 10.0)
    while t < t1:
        i = max(bisect.bisect_right(times, t) - 1, 0)
        _, pw, clk, temp, thr = node.points[i]
        for g in range(8):
            v = {"ts": round(t + g * 0.002, 3), "node": node.name, "gpu": g,
                 "gpu_temp_c": round(temp[g] + rng.uniform(-0.4, 0.4), 1),
                 "mem_temp_c": round(temp[g] + 4.0 + rng.uniform(-0.5, 0.5), 1),
                 "power_w": round(pw[g] + rng.uniform(-3.0, 3.0), 1),
                 "sm_clock_mhz": float(round(clk[g] / 15.0) * 15), "throttle": thr[g], **extra}
            f = (faults or {}).get(g)
            mine = f and t >= f[1] and (not f[2] or thr[g] & f[2])
            log.add("telemetry.thermal", v, f[0] if mine else None)
        t += 10.0


def ecc_rows(log: Log, node: str, rng: random.Random, t0: float, t1: float, extra: dict,
             nvlink: dict | None = None) -> None:
    """DCGM ECC rows every 30 s. ``nvlink``: {gpu, fault, from_ts, rate} -- CRC errors at
    ``rate``/s growing, replays a tenth, a recovery now and then, XID 74 at the start and once
    more, each as its own event row."""
    sbe = [0] * 8
    pcie = [rng.randint(0, 3) for _ in range(8)]
    crc = rep = rec = 0
    t = t0 + rng.uniform(0.0, 30.0)
    xids = []
    if nvlink:
        xids = [nvlink["from_ts"], nvlink["from_ts"] + rng.uniform(120.0, 240.0)]
        for x in xids:
            if x < t1:
                log.add("telemetry.ecc", {"ts": round(x, 3), "node": node,
                                          "gpu": nvlink["gpu"], "xid": 74}, nvlink["fault"])
    while t < t1:
        for g in range(8):
            if rng.random() < 0.01:
                sbe[g] += 1
            fault = None
            v = {"ts": round(t + g * 0.003, 3), "node": node, "gpu": g,
                 "sbe_volatile": sbe[g], "dbe_volatile": 0, "retired_pages_sbe": 0,
                 "retired_pages_dbe": 0, "row_remap_pending": False,
                 "row_remap_failure": False, "pcie_replay": pcie[g],
                 "nvlink_crc_errors": 0, "nvlink_replay_errors": 0,
                 "nvlink_recovery_errors": 0, "recovery_action": "none", **extra}
            if nvlink and g == nvlink["gpu"] and t >= nvlink["from_ts"]:
                age = t - nvlink["from_ts"]
                crc += int(30 * nvlink["rate"] * (1.0 + age / 300.0) * rng.uniform(0.6, 1.4))
                rep += int(crc / 10) - rep if crc / 10 > rep else 0
                rec += rng.random() < 0.3
                v.update(nvlink_crc_errors=crc, nvlink_replay_errors=rep,
                         nvlink_recovery_errors=rec)
                fault = nvlink["fault"]
            log.add("telemetry.ecc", v, fault)
        t += 30.0


@dataclass
class Port:
    """One IB port's cumulative counters."""

    tx: int = 0
    rx: int = 0
    symbol: int = 0
    downed: int = 0
    rcv_err: int = 0
    wait: int = 0


def nic_rows(log: Log, node: str, rng: random.Random, t0: float, t1: float, extra: dict,
             bytes_per_s, port_fault: dict | None = None) -> None:
    """IB port rows every 10 s; ``bytes_per_s(ts)`` is the node's traffic a port.
    ``port_fault``: {nic, fault, from_ts, ber0, double_s, flaps}: symbol errors at ``ber0``/s
    doubling every ``double_s`` (an optic's BER creeping), receive errors a fiftieth of them,
    and at each time in ``flaps`` the link goes down and retrains (``link_downed`` +1, the row
    after it ``down`` when the link is still retraining, 6 s)."""
    ports = {n: Port(wait=rng.randint(0, 10_000)) for n in NICS}
    t = t0 + rng.uniform(0.0, 10.0)
    last = t - 10.0
    while t < t1:
        rate_b = bytes_per_s(t)
        for k, nic in enumerate(NICS):
            p = ports[nic]
            dt = t - last
            moved = int(rate_b * dt * rng.uniform(0.97, 1.03))
            p.tx += moved
            p.rx += int(moved * rng.uniform(0.98, 1.02))
            p.wait += int(moved / 4096 * rng.uniform(0.002, 0.006))
            state, fault = "up", None
            pf = port_fault
            if pf and nic == pf["nic"] and t >= pf["from_ts"]:
                fault = pf["fault"]
                per_s = symbol_rate(pf, t)
                p.symbol += int(per_s * dt * rng.uniform(0.7, 1.3)) + 1
                p.rcv_err += int(per_s * dt * 0.02 * rng.uniform(0.5, 1.5))
                p.wait += int(moved / 4096 * per_s / 400.0)
                for f in pf["flaps"]:
                    if last < f <= t:
                        p.downed += 1
                        if t - f < 6.0:
                            state = "down"
            log.add("telemetry.nic", {
                "ts": round(t + k * 0.002, 3), "node": node, "nic": nic, "port": 1,
                "link_state": state, "rate_gbps": 400.0, "tx_bytes": p.tx, "rx_bytes": p.rx,
                "symbol_errors": p.symbol, "link_downed": p.downed, "rcv_errors": p.rcv_err,
                "xmit_discards": 0, "xmit_wait": p.wait, **extra}, fault)
        last = t
        t += 10.0


def symbol_rate(pf: dict, ts: float) -> float:
    """Symbol errors a second on a creeping port at ``ts`` (0 before it starts)."""
    if ts < pf["from_ts"]:
        return 0.0
    return pf["ber0"] * 2.0 ** ((ts - pf["from_ts"]) / pf["double_s"])


def topology(name: str, nodes: list[str]) -> str:
    """A faultline topology: the nodes under two leaves (half each) and a spine."""
    half = len(nodes) // 2
    return "\n".join([
        f"Topology={name}",
        f"NodeSet={','.join(nodes)} Gpus=8 Nics=mlx5_[0-7]",
        f"SwitchName=leaf-1 Nodes={','.join(nodes[:half])}",
        f"SwitchName=leaf-2 Nodes={','.join(nodes[half:])}",
        "SwitchName=spine-1 Switches=leaf-[1-2]", ""])
