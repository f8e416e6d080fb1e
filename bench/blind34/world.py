"""blind34's world: GPUs, NICs and the log they are written to.

A GPU here is a small state held as functions of event time (the story sets them): its die and
memory temperatures, its power, its clock and its throttle reasons; a NIC port its rate and
error counters. ``Log`` turns the stories' step records and these periodic samples into one
incident log in arrival order (DESIGN's disorder and duplicates), the topology first and the
labels last, beside an effects file naming every routine shape ("pages nobody").
"""

from __future__ import annotations

import gzip
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

T0 = 1_797_000_000.0


@dataclass
class Gpu:
    """One GPU's sampled state: each field a function of ``ts`` the story may replace."""

    node: str
    gpu: int
    idle: Callable[[float], bool] = lambda ts: False
    busy_w: float = 640.0
    idle_w: float = 90.0
    clock_mhz: float = 1980.0
    die_c: float = 62.0
    mem_c: float = 70.0
    # extra effects, each ts -> value; the story appends faults here
    mem_extra_c: list[Callable[[float], float]] = field(default_factory=list)
    die_extra_c: list[Callable[[float], float]] = field(default_factory=list)
    clock_x: list[Callable[[float], float]] = field(default_factory=list)
    reasons: list[Callable[[float], int]] = field(default_factory=list)
    nvlink_errs: Callable[[float], tuple[int, int, int]] = lambda ts: (0, 0, 0)

    def sample(self, rng: random.Random, ts: float) -> dict:
        """A thermal row at ``ts`` (10 s DCGM sample: mean power and clock, reasons OR-ed)."""
        idle = self.idle(ts)
        thr = 0
        for f in self.reasons:
            thr |= f(ts)
        if idle:  # an idle part cools below its slowdown point at once
            thr &= ~0x60
        clk = self.clock_mhz
        for f in self.clock_x:
            clk *= f(ts)
        power = (self.idle_w if idle else self.busy_w) * (0.92 + 0.08 * clk / self.clock_mhz)
        die = self.die_c - (14.0 if idle else 0.0) + sum(f(ts) for f in self.die_extra_c)
        mem = self.mem_c - (8.0 if idle else 0.0) + sum(f(ts) for f in self.mem_extra_c)
        return {"ts": round(ts, 3), "node": self.node, "gpu": self.gpu,
                "gpu_temp_c": int(round(die + rng.gauss(0, 0.6))),
                "mem_temp_c": int(round(mem + rng.gauss(0, 0.5))),
                "power_w": round(power * (1 + rng.gauss(0, 0.012)), 1),
                "sm_clock_mhz": float(round(clk if not idle else 345.0)),
                "throttle": thr}


@dataclass
class Port:
    """One NIC port: traffic a second, its rate, its errors a second (each ts -> value)."""

    node: str
    nic: str
    bytes_s: float = 9.0e9
    rate_gbps: Callable[[float], float] = lambda ts: 400.0
    symbol_s: Callable[[float], float] = lambda ts: 0.0
    rcv_s: Callable[[float], float] = lambda ts: 0.0
    wait_s: Callable[[float], float] = lambda ts: 2.0e5
    _acc: dict = field(default_factory=lambda: {"tx": 0.0, "rx": 0.0, "sym": 0.0, "rcv": 0.0,
                                                "wait": 0.0})
    _last: float | None = None

    def sample(self, rng: random.Random, ts: float) -> dict:
        """A counter row at ``ts`` (cumulative, as the HCA reports them)."""
        dt = 0.0 if self._last is None else ts - self._last
        self._last = ts
        a = self._acc
        a["tx"] += self.bytes_s * dt * rng.uniform(0.9, 1.1)
        a["rx"] += self.bytes_s * dt * rng.uniform(0.9, 1.1)
        a["sym"] += self.symbol_s(ts) * dt * rng.uniform(0.5, 1.5)
        a["rcv"] += self.rcv_s(ts) * dt * rng.uniform(0.5, 1.5)
        a["wait"] += self.wait_s(ts) * dt * rng.uniform(0.8, 1.2)
        return {"ts": round(ts, 3), "node": self.node, "nic": self.nic, "port": 1,
                "link_state": "up", "rate_gbps": float(self.rate_gbps(ts)),
                "tx_bytes": int(a["tx"]), "rx_bytes": int(a["rx"]),
                "symbol_errors": int(a["sym"]), "link_downed": 0, "rcv_errors": int(a["rcv"]),
                "xmit_discards": 0, "xmit_wait": int(a["wait"])}


def ecc_row(g: Gpu, ts: float) -> dict:
    """A 30 s ECC/NVLink row: clean memory; NVLink counters from ``g.nvlink_errs``."""
    crc, replay, recovery = g.nvlink_errs(ts)
    return {"ts": round(ts, 3), "node": g.node, "gpu": g.gpu, "sbe_volatile": 0,
            "dbe_volatile": 0, "retired_pages_sbe": 0, "retired_pages_dbe": 0,
            "row_remap_pending": False, "row_remap_failure": False, "pcie_replay": 0,
            "nvlink_crc_errors": crc, "nvlink_replay_errors": replay,
            "nvlink_recovery_errors": recovery, "recovery_action": "none"}


class Log:
    """An incident log under construction: records keyed by arrival, labels, effects."""

    def __init__(self, rng: random.Random, topology: str, cluster: str, tenant: str) -> None:
        self.rng = rng
        self.topology = topology
        self.cluster = cluster
        self.tenant = tenant
        self._recs: list[tuple[float, int, str, dict]] = []
        self.labels: list[dict] = []
        self.effects: list[dict] = []

    def add(self, topic: str, value: dict, *, tagged: bool = True) -> None:
        """One record; it arrives 30-400 ms after ``ts`` (0.4 % 0.5-2.5 s late, 0.1 % twice).
        Step records carry the cluster and tenant; the node collectors' rows do not."""
        if tagged:
            value["cluster"] = self.cluster
            value["tenant"] = self.tenant
        r = self.rng
        lag = r.uniform(0.03, 0.4) + (r.uniform(0.5, 2.5) if r.random() < 0.004 else 0.0)
        self._recs.append((value["ts"] + lag, len(self._recs), topic, value))
        if r.random() < 0.001:
            self._recs.append((value["ts"] + lag + r.uniform(0.05, 1.5), len(self._recs),
                               topic, value))

    def sample(self, gpus: list[Gpu], ports: list[Port], t_start: float, t_end: float,
               thermal_s: float = 10.0, ecc_s: float = 30.0, nic_s: float = 10.0) -> None:
        """Every GPU's thermal and ECC rows and every port's counters over the span, each
        collector on its own phase."""
        r = self.rng
        for g in gpus:
            ph = r.uniform(0, thermal_s)
            t = t_start + ph
            while t < t_end:
                self.add("telemetry.thermal", g.sample(r, t), tagged=False)
                t += thermal_s
            t = t_start + r.uniform(0, ecc_s)
            while t < t_end:
                self.add("telemetry.ecc", ecc_row(g, t), tagged=False)
                t += ecc_s
        for p in ports:
            t = t_start + r.uniform(0, nic_s)
            while t < t_end:
                self.add("telemetry.nic", p.sample(r, t), tagged=False)
                t += nic_s

    def label(self, fault_id: str, kind: str, cause: str, scope: dict, start_ts: float,
              end_ts: float, attributable: bool = True) -> None:
        self.labels.append({"fault_id": fault_id, "kind": kind, "cause": cause,
                            "scope": scope, "start_ts": math.floor(start_ts * 1000) / 1000,
                            "end_ts": math.ceil(end_ts * 1000) / 1000,
                            "attributable": attributable})

    def effect(self, effect: str, scope: dict, start_ts: float, end_ts: float,
               what: str) -> None:
        """A routine shape: it pages nobody."""
        self.effects.append({"effect": effect, "scope": scope, "start_ts": round(start_ts, 3),
                             "end_ts": round(end_ts, 3), "what": what,
                             "expect": "pages nobody"})

    def write(self, path: Path) -> Path:
        """The log (gzip, mtime 0: the same bytes for the same seed) and its effects file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        def line(topic: str, value: dict) -> str:
            # compact, as every blind log is: blind11's scorer finds labels by their prefix
            return json.dumps({"topic": topic, "value": value}, separators=(",", ":"))
        lines = [line("topology", {"format": "faultline", "text": self.topology})]
        for _, _, topic, v in sorted(self._recs, key=lambda x: (x[0], x[1])):
            lines.append(line(topic, v))
        lines.extend(line("labels", lab) for lab in self.labels)
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                    filename="") as fh:
            fh.write(("\n".join(lines) + "\n").encode())
        path.with_name(path.name.replace(".jsonl.gz", ".effects.json")).write_text(
            json.dumps(self.effects, indent=1) + "\n")
        return path


def ramp(t0: float, t1: float, top: float) -> Callable[[float], float]:
    """0 before ``t0``, ``top`` after ``t1``, linear between (a smooth start, never a step)."""
    def f(ts: float) -> float:
        if ts <= t0:
            return 0.0
        if ts >= t1:
            return top
        return top * (ts - t0) / (t1 - t0)
    return f

