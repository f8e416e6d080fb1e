"""The fleet under a driver rollout: H100 boards, their DCGM and port rows, and the log.

A node runs one of three driver generations, and what its collectors write depends on it:

- ``old`` (the fleet's R535-era stack): `power_w` an instantaneous sample (+-4 % sample to
  sample), idle clock 345 MHz, no `recovery_action` field (NVML had none).
- ``new`` (the R570-era stack being rolled out): `power_w` a 1 s average (+-0.8 %), idle clock
  210 MHz, `recovery_action` on every ECC row.
- ``canary`` (the candidate after ``new``): as ``new``, and its default clock policy holds
  the SM clock at 1,830-1,860 MHz while busy with **no** clock-event reason (the vendor's
  efficiency default): its ranks compute 2.5-3.5 % longer.

Board physics, a second at a time: power is idle (62-72 W, reason `0x1` GPU idle) or, while a
job holds the GPU, idle + (busy - idle) x (0.3 + 0.7 x the second's compute share) x
(clock / 1,980)^1.6; the die follows inlet + R x power through a 25 s lag; memory 4-8 C over the
die. A cold plate failing multiplies R; at 88 C the board holds the die there with `0x20`
(SW thermal), giving up clock -- ``Hot.clock_share`` says how much, the step model reads the same
number. DCGM thermal rows every 10 s, ECC rows every 30 s, port rows every 10 s, each node's
phase its own. A node that is dark writes nothing; after a reboot every counter starts at 0.

``Log`` keeps records with the faults that changed them, delivers them in arrival order
(30-400 ms after `ts`, 0.4 % 0.5-2.5 s late, 0.1 % twice up to 1.5 s apart), labels last.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import random
from pathlib import Path

IDLE, THERMAL = 0x1, 0x20
MAX_MHZ, HOT_C, TAU_S = 1980.0, 88.0, 25.0
DRIVERS = ("old", "new", "canary")


@dataclasses.dataclass
class Hot:
    """A GPU's cold plate failing: R x1 -> x``gain`` over ``ramp_s`` from ``start``."""

    start: float
    ramp_s: float
    gain: float
    inlet_c: float
    r_cw: float
    busy_w: float
    idle_w: float

    def r_at(self, t: float) -> float:
        x = min(max((t - self.start) / self.ramp_s, 0.0), 1.0)
        return self.r_cw * (1.0 + (self.gain - 1.0) * x)

    def clock_share(self, t: float) -> float:
        """The clock share the board keeps at 88 C when busy (1.0: not held)."""
        p_allow = (HOT_C - self.inlet_c) / self.r_at(t)
        p_busy = self.idle_w + (self.busy_w - self.idle_w) * 0.9
        if p_allow >= p_busy:
            return 1.0
        return max(0.55, math.sqrt(max(p_allow - self.idle_w, 1.0) / (p_busy - self.idle_w)))


@dataclasses.dataclass
class Node:
    name: str
    driver: str
    inlet_c: float
    r_cw: list[float]
    idle_w: list[float]
    dark: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    clock_lock_mhz: float | None = None       # a firmware tool's lock left behind
    lock_from: float = math.inf
    degraded: dict[str, tuple[float, str]] = dataclasses.field(default_factory=dict)
    busy_clock: float = MAX_MHZ
    upgrade_at: float = math.inf               # back from the rollout's reboot on ``new``

    def driver_at(self, t: float) -> str:
        return "new" if t >= self.upgrade_at else self.driver

    def is_dark(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.dark)

    def boot_of(self, t: float) -> float:
        """Start of the boot ``t`` is in (counters count from there)."""
        return max([b for a, b in self.dark if b <= t], default=-math.inf)


class Log:
    """Telemetry records (with the faults that changed each), effects, labels; one writer."""

    def __init__(self, rng: random.Random, cluster: str):
        self.rng, self.cluster = rng, cluster
        self.rows: list[tuple[float, str, dict, frozenset]] = []
        self.effects: list[dict] = []
        self.faults: dict[str, dict] = {}

    def add(self, topic: str, value: dict, faults=()) -> None:
        self.rows.append((value["ts"], f"telemetry.{topic}", value, frozenset(faults)))

    def effect(self, name: str, scope: dict, start: float, end: float) -> None:
        self.effects.append({"effect": name, "scope": scope, "start_ts": round(start, 3),
                             "end_ts": round(end, 3), "expect": "pages nobody"})

    def fault(self, fid: str, kind: str, cause: str, scope: dict, attributable: bool) -> None:
        self.faults[fid] = {"fault_id": fid, "kind": kind, "cause": cause, "scope": scope,
                            "attributable": attributable}

    def labels(self) -> list[dict]:
        """Each fault's label spans the records it changed (none: no label)."""
        span: dict[str, list[float]] = {}
        for ts, _, _, fs in self.rows:
            for f in fs:
                s = span.setdefault(f, [ts, ts])
                s[0], s[1] = min(s[0], ts), max(s[1], ts)
        return [{**v, "start_ts": round(span[k][0], 3), "end_ts": round(span[k][1], 3)}
                for k, v in self.faults.items() if k in span]

    def write(self, path: Path, topology: str) -> Path:
        rng = self.rng
        arriving = []
        for i, (ts, topic, value, _) in enumerate(self.rows):
            late = rng.random() < 0.004
            at = ts + (rng.uniform(0.5, 2.5) if late else rng.uniform(0.03, 0.4))
            arriving.append((at, i, topic, value))
            if rng.random() < 0.001:
                arriving.append((at + rng.uniform(0.1, 1.5), i, topic, value))
        arriving.sort(key=lambda r: (r[0], r[1]))
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.GzipFile(path, "wb", mtime=0) as fh:
            def put(topic, value):
                fh.write(json.dumps({"topic": topic, "value": value},
                                    separators=(",", ":")).encode() + b"\n")
            put("topology", {"format": "faultline", "text": topology})
            for _, _, topic, value in arriving:
                put(topic, value)
            for lab in self.labels():
                put("labels", lab)
        fx = path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
        fx.write_text(json.dumps(self.effects, indent=1))
        return path


class Fleet:
    """Nodes, what jobs make their GPUs do each second, and the DCGM / port rows from it."""

    def __init__(self, rng: random.Random, log: Log, t0: float, seconds: int):
        self.rng, self.log, self.t0, self.n = rng, log, t0, seconds
        self.nodes: dict[str, Node] = {}
        self.compute: dict[tuple[str, int], list[float]] = {}   # compute share a second
        self.held: dict[tuple[str, int], list[float]] = {}      # 1 while a job holds it
        self.busy_w: dict[tuple[str, int], float] = {}
        self.traffic: dict[str, list[float]] = {}               # bytes/s a port
        self.hot: dict[tuple[str, int], tuple[str, Hot]] = {}
        self.xids: list[tuple[float, str, int, int, str]] = []
        # (node, gpu) -> (from t, fault id, "dbe" | "gsp"): a DBE's counters and, on a driver
        # that has the field, `recovery_action` gpu_reset; a GSP fault the action alone
        self.ecc_fault: dict[tuple[str, int], tuple[float, str, str]] = {}

    def add_node(self, name: str, driver: str) -> Node:
        r = self.rng
        node = Node(name, driver, r.uniform(24.0, 30.0), [r.uniform(0.072, 0.084)
                                                            for _ in range(8)],
                    [r.uniform(62.0, 72.0) for _ in range(8)])
        if driver == "canary":
            node.busy_clock = r.choice((1830.0, 1845.0, 1860.0))
        self.nodes[name] = node
        for g in range(8):
            self.compute[(name, g)] = [0.0] * self.n
            self.held[(name, g)] = [0.0] * self.n
        self.traffic[name] = [0.0] * self.n
        return node

    def clock_share(self, node: str, gpu: int, t: float) -> float:
        """The busy clock against 1,980 MHz: the cohort's policy, a lock, a hot die."""
        nd = self.nodes[node]
        mhz = nd.busy_clock
        if nd.clock_lock_mhz is not None and t >= nd.lock_from:
            mhz = min(mhz, nd.clock_lock_mhz)
        share = mhz / MAX_MHZ
        if (node, gpu) in self.hot:
            share *= self.hot[(node, gpu)][1].clock_share(t)
        return share

    def occupy(self, node: str, gpu: int, a: float, b: float, compute_share: float,
               busy_w: float) -> None:
        """A job holds (node, gpu) over [a, b) computing ``compute_share`` of the time."""
        self.busy_w[(node, gpu)] = busy_w
        c, h = self.compute[(node, gpu)], self.held[(node, gpu)]
        for s in range(max(0, int(a - self.t0)), min(self.n, int(math.ceil(b - self.t0)))):
            lo, hi = max(a, self.t0 + s), min(b, self.t0 + s + 1)
            if hi > lo:
                c[s] += compute_share * (hi - lo)
                h[s] = 1.0

    def send(self, node: str, a: float, b: float, rate_bps: float) -> None:
        tr = self.traffic[node]
        for s in range(max(0, int(a - self.t0)), min(self.n, int(math.ceil(b - self.t0)))):
            tr[s] = max(tr[s], rate_bps)

    # -- rows --------------------------------------------------------------------------------

    def emit(self) -> None:
        for name, nd in self.nodes.items():
            self._thermal(name, nd)
            self._ecc(name, nd)
            self._ports(name, nd)
        for ts, node, gpu, xid, fid in self.xids:
            self.log.add("ecc", {"ts": round(ts, 3), "node": node, "gpu": gpu, "xid": xid},
                         [fid])

    def _thermal(self, name: str, nd: Node) -> None:
        r = self.rng
        phase = r.uniform(0, 10)
        at = {int(phase) + 10 * k: phase % 1 for k in range(self.n // 10 + 1)}
        for g in range(8):
            hot = self.hot.get((name, g))
            temp = nd.inlet_c + nd.r_cw[g] * nd.idle_w[g]
            for s in range(self.n):
                t = self.t0 + s
                if nd.is_dark(t):
                    temp += (nd.inlet_c - temp) * (1 - math.exp(-1 / TAU_S))
                    continue
                held = self.held[(name, g)][s] > 0
                share_c = min(1.0, self.compute[(name, g)][s])
                idle_w = nd.idle_w[g]
                throttle, fid = 0, None
                if held:
                    clk = self.clock_share(name, g, t)
                    busy = self.busy_w.get((name, g), 600.0)
                    power = idle_w + (busy - idle_w) * (0.3 + 0.7 * share_c) * clk ** 1.6
                    mhz = MAX_MHZ * clk
                    if hot and hot[1].clock_share(t) < 1.0:
                        throttle, fid = THERMAL, hot[0]
                    elif nd.clock_lock_mhz is not None and t >= nd.lock_from:
                        fid = f"lock-{name}"
                else:
                    idle_mhz = 345.0 if nd.driver_at(t) == "old" else 210.0
                    power, mhz, throttle = idle_w, idle_mhz, IDLE
                rr = hot[1].r_at(t) if hot else nd.r_cw[g]
                target = nd.inlet_c + rr * power
                temp += (target - temp) * (1 - math.exp(-1 / TAU_S))
                if throttle == THERMAL:  # the board holds the die at 88 C, its power at what
                    #                          the failing plate can carry away
                    temp = HOT_C + r.uniform(-0.4, 0.4)
                    power = (HOT_C - nd.inlet_c) / rr * r.uniform(0.98, 1.02)
                if hot and t >= hot[1].start and held:
                    fid = hot[0]
                if s not in at:
                    continue
                ts = t + at[s] + r.uniform(0, 0.05)
                pw = power * (1 + r.gauss(0, 0.04 if nd.driver_at(t) == "old" else 0.008))
                self.log.add("thermal", {
                    "ts": round(ts, 3), "node": name, "gpu": g, "gpu_temp_c": round(temp, 1),
                    "mem_temp_c": round(temp + 4 + 4 * (g % 3) / 2, 1),
                    "power_w": round(pw, 1), "sm_clock_mhz": round(mhz / 15) * 15.0,
                    "throttle": throttle, "cluster": self.log.cluster}, [fid] if fid else [])

    def _ecc(self, name: str, nd: Node) -> None:
        r = self.rng
        phase = r.uniform(0, 30)
        for g in range(8):
            c = dict.fromkeys(("sbe", "pcie", "crc", "rep"), 0)
            boot = None
            for k in range(int((self.n - phase) // 30) + 1):
                ts = self.t0 + phase + 30 * k + r.uniform(0, 0.05)
                if ts >= self.t0 + self.n or nd.is_dark(ts):
                    continue
                if nd.boot_of(ts) != boot:
                    boot = nd.boot_of(ts)
                    c = dict.fromkeys(c, 0)
                c["sbe"] += r.random() < 0.003
                c["pcie"] += r.randint(1, 3) if r.random() < 0.01 else 0
                c["crc"] += r.randint(1, 4) if r.random() < 0.005 else 0
                fault = self.ecc_fault.get((name, g))
                bad = fault is not None and ts >= fault[0]
                v = {"ts": round(ts, 3), "node": name, "gpu": g, "sbe_volatile": c["sbe"],
                     "dbe_volatile": 0, "retired_pages_sbe": 0,
                     "retired_pages_dbe": 0, "row_remap_pending": False,
                     "row_remap_failure": False, "pcie_replay": c["pcie"],
                     "nvlink_crc_errors": c["crc"], "nvlink_replay_errors": c["rep"],
                     "nvlink_recovery_errors": 0, "cluster": self.log.cluster}
                if bad and fault[2] == "dbe":
                    v.update(dbe_volatile=1, retired_pages_dbe=1, row_remap_pending=True)
                if nd.driver_at(ts) != "old":
                    v["recovery_action"] = "gpu_reset" if bad else "none"
                self.log.add("ecc", v, [fault[1]] if bad else [])

    def _ports(self, name: str, nd: Node) -> None:
        r = self.rng
        phase = r.uniform(0, 10)
        for k in range(8):
            nic = f"mlx5_{k}"
            deg = nd.degraded.get(nic)
            c = dict.fromkeys(("tx", "rx", "sym", "rcv", "wait"), 0)
            boot = None
            for j in range(int((self.n - phase) // 10) + 1):
                ts = self.t0 + phase + 10 * j + r.uniform(0, 0.05)
                s = int(ts - self.t0)
                if s >= self.n or nd.is_dark(ts):
                    continue
                if nd.boot_of(ts) != boot:
                    boot = nd.boot_of(ts)
                    c = dict.fromkeys(c, 0)
                slow = deg is not None and ts >= deg[0]
                for q in range(max(0, s - 10), s):
                    bps = self.traffic[name][q] * (1 + r.gauss(0, 0.03)) + 2e4
                    c["tx"] += int(bps)
                    c["rx"] += int(bps * r.uniform(0.97, 1.03))
                    c["wait"] += int(bps / 4096 * (0.02 if not slow else 0.35))
                c["sym"] += (r.randint(4, 40) if slow else (r.random() < 0.002))
                c["rcv"] += (r.random() < 0.2) if slow else 0
                self.log.add("nic", {
                    "ts": round(ts, 3), "node": name, "nic": nic, "port": 1, "link_state": "up",
                    "rate_gbps": 200.0 if slow else 400.0, "tx_bytes": c["tx"],
                    "rx_bytes": c["rx"], "symbol_errors": c["sym"], "link_downed": 0,
                    "rcv_errors": c["rcv"], "xmit_discards": 0, "xmit_wait": c["wait"],
                    "cluster": self.log.cluster}, [deg[1]] if slow else [])
