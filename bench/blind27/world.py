"""blind27's world: H100 nodes, their boards' physics, their collectors' rows, and the `Log`.

A GPU's row is a pure function of time: what the node runs (``Node.activity``: idle, busy at a
load, a save, a hang spinning in NCCL), the board's demand under that load against its 700 W
limit (``0x4`` and the clock the cap leaves), its die temperature (inlet + thermal resistance x
power, seen through a 25 s lag, held at 87-89 C by SW thermal slowdown ``0x20`` when it would
pass 88 C), and what a fault hook changes. The same function gives a training rank its clock
factor, so a step and a thermal row never disagree. Collectors: dcgm-exporter thermal every
10 s, ECC every 30 s, node_exporter ports every 10 s, each node at its own phase and only while
the node is up (a VM that is reclaimed stops every topic at once; a new VM starts its port
counters near zero).
"""

from __future__ import annotations

import gzip
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

LIMIT_W = 700.0
BOOST_MHZ = 1980.0
IDLE_MHZ = 345.0
HOLD_C = 88.0
THERMAL_S, ECC_S, NIC_S = 10.0, 30.0, 10.0


@dataclass
class Hook:
    """A fault's or a routine shape's change to one GPU (``gpu``) or port (``nic``) from
    ``start``: ``r_mult`` (thermal resistance factor), ``slow`` (the rank's compute factor
    beside the clock's), ``row`` (edits a row in place, returns True when it changed it)."""
    fid: str
    start: float
    end: float = math.inf
    r_mult: Callable[[float], float] | None = None
    slow: Callable[[float], float] | None = None
    row: Callable[[str, float, dict], bool] | None = None


@dataclass
class Node:
    """One 8-GPU H100 host: its boards' demand, thermal resistance and HBM offset, its inlet,
    its collectors' phase, its up window, and its activity timeline."""
    name: str
    rng: random.Random
    up: float = -math.inf
    down: float = math.inf
    nics: tuple[str, ...] = tuple(f"mlx5_{i}" for i in range(8))
    inlet_c: float = 0.0
    phase: float = 0.0
    draw_w: list[float] = field(default_factory=list)
    r_cw: list[float] = field(default_factory=list)
    hbm_c: list[float] = field(default_factory=list)
    spans: list[tuple[float, float, str, float]] = field(default_factory=list)
    gpu_hooks: dict[int, list[Hook]] = field(default_factory=dict)
    nic_hooks: dict[str, list[Hook]] = field(default_factory=dict)
    gone: dict[int, float] = field(default_factory=dict)   # gpu -> off the bus from
    load_of: Callable[[int, float], float] | None = None    # serving: the GPU's load at t

    def __post_init__(self) -> None:
        r = self.rng
        self.inlet_c = self.inlet_c or r.uniform(22.0, 27.0)
        self.phase = r.uniform(0.0, THERMAL_S)
        self.draw_w = [r.uniform(590.0, 735.0) for _ in range(8)]
        self.r_cw = [r.uniform(0.058, 0.066) for _ in range(8)]
        self.hbm_c = [r.uniform(4.0, 9.0) for _ in range(8)]

    def busy(self, a: float, b: float, state: str = "busy", load: float = 1.0) -> None:
        """The node runs ``state`` over [a, b) (later spans win)."""
        self.spans.append((a, b, state, load))

    def activity(self, t: float) -> tuple[str, float]:
        for a, b, st, load in reversed(self.spans):
            if a <= t < b:
                return st, load
        return "idle", 0.0

    def hooks(self, gpu: int) -> list[Hook]:
        return self.gpu_hooks.setdefault(gpu, [])

    def board(self, gpu: int, t: float, training: bool = False, die_c: float | None = None
              ) -> tuple[float, float, int, float, set[str]]:
        """(power_w, clock factor, throttle, temperature target, faults that changed it)
        of GPU ``gpu`` at ``t`` -- the one physics a thermal row and a step both read
        (``training``: as a rank in a step sees it, busy at full load; ``die_c``: the die's
        lagged temperature, below 86.5 C no hold yet)."""
        st, load = ("busy", 1.0) if training else self.activity(t)
        if self.load_of is not None and st == "busy":
            load = self.load_of(gpu, t)
        marks: set[str] = set()
        if st == "idle":
            return 62.0 + 6.0 * (gpu % 3), IDLE_MHZ / BOOST_MHZ, 0x1, self.inlet_c + 7.0, marks
        if st == "hang":
            demand = 250.0
        elif st == "save":
            demand = 150.0
        elif self.load_of is not None:
            demand = 85.0 + (self.draw_w[gpu] - 85.0) * load
        else:
            demand = self.draw_w[gpu] * load
        power, clock, thr = demand, 1.0, 0
        if demand > LIMIT_W:
            power, clock, thr = LIMIT_W, (LIMIT_W / demand) ** 0.45, 0x4
        r = self.r_cw[gpu]
        for h in self.hooks(gpu):
            if h.r_mult is not None and h.start <= t < h.end:
                m = h.r_mult(t)
                if m != 1.0:
                    r *= m
                    marks.add(h.fid)
        target = self.inlet_c + r * power
        if target > HOLD_C and (die_c is None or die_c >= 86.5):
            # firmware SW thermal slowdown: power (and clock) cut to hold 88 C
            held = (HOLD_C - self.inlet_c) / r
            clock *= (held / power) ** 0.45
            power, thr, target = held, thr | 0x20, HOLD_C
        return power, clock, thr, target, marks

    def slow(self, gpu: int, t: float) -> tuple[float, set[str]]:
        """A busy rank's compute factor on this GPU at ``t``: 1 / clock beyond the cap's
        share every board of its SKU pays, times its hooks' own factors."""
        power, clock, thr, _, marks = self.board(gpu, t, training=True)
        f = 1.0 / clock if thr & 0x20 else 1.0
        if not thr & 0x20:
            marks = set()
        for h in self.hooks(gpu):
            if h.slow is not None and h.start <= t < h.end:
                s = h.slow(t)
                if s != 1.0:
                    f *= s
                    marks.add(h.fid)
        return f, marks


class Log:
    """Records with the faults that changed them, routine effects, labels; written in arrival
    order with the topology first and the labels last."""

    def __init__(self, rng: random.Random, topology: dict) -> None:
        self.rng = rng
        self.topology = topology
        self.recs: list[tuple[float, str, dict]] = []
        self.faults: dict[str, dict] = {}
        self.spans: dict[str, list[float]] = {}
        self.effects: list[dict] = []

    def add(self, topic: str, value: dict, marks: set[str] | frozenset = frozenset()) -> None:
        self.recs.append((value["ts"], topic, value))
        for fid in marks:
            sp = self.spans.setdefault(fid, [value["ts"], value["ts"]])
            sp[0], sp[1] = min(sp[0], value["ts"]), max(sp[1], value["ts"])

    def fault(self, fid: str, kind: str, cause: str, scope: dict,
              attributable: bool = True) -> str:
        self.faults[fid] = {"fault_id": fid, "kind": kind, "cause": cause, "scope": scope,
                            "attributable": attributable}
        return fid

    def effect(self, name: str, scope: dict, a: float, b: float) -> None:
        self.effects.append({"effect": name, "scope": scope, "start_ts": round(a, 3),
                             "end_ts": round(b, 3), "expect": "pages nobody"})

    def labels(self) -> list[dict]:
        """A label per fault that changed a record: from its first changed record to its
        last."""
        return [{**f, "start_ts": round(self.spans[fid][0], 3),
                 "end_ts": round(self.spans[fid][1], 3)}
                for fid, f in self.faults.items() if fid in self.spans]

    def write(self, path: Path) -> Path:
        """Arrival order: 30-400 ms after ``ts``, 0.4 % 0.4-2.5 s late, 0.1 % sent twice up to
        1.5 s apart (within DESIGN's 5 s)."""
        r = self.rng
        arr = []
        for i, (ts, topic, v) in enumerate(self.recs):
            late = r.uniform(0.4, 2.5) if r.random() < 0.004 else r.uniform(0.03, 0.4)
            arr.append((ts + late, i, topic, v))
            if r.random() < 0.001:
                arr.append((ts + late + r.uniform(0.05, 1.5), i, topic, v))
        arr.sort(key=lambda x: (x[0], x[1]))
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.GzipFile(path, "wb", mtime=0) as gz:
            gz.write(_line("topology", self.topology))
            for _, _, topic, v in arr:
                gz.write(_line(topic, v))
            for lab in self.labels():
                gz.write(_line("labels", lab))
        fx = path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
        fx.write_text(json.dumps(self.effects, indent=1) + "\n")
        return path


def _line(topic: str, value: dict) -> bytes:
    return (json.dumps({"topic": topic, "value": value}, separators=(",", ":")) + "\n").encode()


def collect(log: Log, node: Node, t0: float, t1: float) -> None:
    """The node's dcgm-exporter and node_exporter rows over [t0, t1) while it is up."""
    r = node.rng
    lo, hi = max(t0, node.up), min(t1, node.down)
    if lo >= hi:
        return
    temp = [None] * 8
    t = lo + node.phase
    while t < hi:
        for g in range(8):
            if t >= node.gone.get(g, math.inf):
                continue
            power, clock, thr, target, marks = node.board(g, t, die_c=temp[g])
            a = 1.0 - math.exp(-THERMAL_S / 25.0)
            temp[g] = target if temp[g] is None else temp[g] + a * (target - temp[g])
            shown = min(temp[g], 89.0) if thr & 0x20 else temp[g]
            row = {"ts": round(t, 3), "node": node.name, "gpu": g,
                   "gpu_temp_c": round(shown + r.gauss(0, 0.3)),
                   "mem_temp_c": round(shown + node.hbm_c[g] + r.gauss(0, 0.3)),
                   "power_w": round(max(power + r.gauss(0, 4.0), 30.0), 1),
                   "sm_clock_mhz": float(round(BOOST_MHZ * clock / 15) * 15),
                   "throttle": thr}
            for h in node.hooks(g):
                if h.row is not None and h.start <= t < h.end and h.row("thermal", t, row):
                    marks.add(h.fid)
            log.add("telemetry.thermal", row, marks)
        t += THERMAL_S
    _ecc(log, node, lo, hi)
    _ports(log, node, lo, hi)


def _ecc(log: Log, node: Node, lo: float, hi: float) -> None:
    r = node.rng
    sbe = [0] * 8
    t = lo + (node.phase * 3.0) % ECC_S
    while t < hi:
        for g in range(8):
            if t >= node.gone.get(g, math.inf):
                continue
            if r.random() < 0.0015:   # a lone corrected error now and then (routine)
                sbe[g] += 1
            row = {"ts": round(t, 3), "node": node.name, "gpu": g, "sbe_volatile": sbe[g],
                   "dbe_volatile": 0, "retired_pages_sbe": 0, "retired_pages_dbe": 0,
                   "row_remap_pending": False, "row_remap_failure": False, "pcie_replay": 0,
                   "nvlink_crc_errors": 0, "nvlink_replay_errors": 0,
                   "nvlink_recovery_errors": 0, "recovery_action": "none"}
            marks = set()
            for h in node.hooks(g):
                if h.row is not None and h.start <= t < h.end and h.row("ecc", t, row):
                    marks.add(h.fid)
            log.add("telemetry.ecc", row, marks)
        t += ECC_S


def _ports(log: Log, node: Node, lo: float, hi: float) -> None:
    r = node.rng
    for nic in node.nics:
        tx = rx = r.randrange(10**6, 10**8) if node.up > -math.inf else r.randrange(10**12,
                                                                                    10**14)
        sym = r.randrange(0, 3)
        wait = r.randrange(0, 10**6)
        t = lo + (node.phase * 1.7) % NIC_S
        while t < hi:
            st, load = node.activity(t)
            gbps = {"busy": 95.0, "save": 30.0, "hang": 0.5}.get(st, 0.02) * (
                load if node.load_of is None else 0.6)
            nbytes = int(gbps * 1e9 / 8 * NIC_S * r.uniform(0.9, 1.1))
            tx += nbytes
            rx += int(nbytes * r.uniform(0.97, 1.03))
            wait += int(nbytes / 4000 * r.uniform(0.5, 1.5))
            if r.random() < 0.002:
                sym += r.randint(1, 3)
            row = {"ts": round(t, 3), "node": node.name, "nic": nic, "port": 1,
                   "link_state": "up", "rate_gbps": 400.0, "tx_bytes": tx, "rx_bytes": rx,
                   "symbol_errors": sym, "link_downed": 0, "rcv_errors": 0,
                   "xmit_discards": 0, "xmit_wait": wait, "out_of_sequence": 0,
                   "packet_seq_err": 0, "np_cnp_sent": 0, "rp_cnp_handled": 0}
            marks = set()
            for h in node.nic_hooks.get(nic, []):
                if h.row is not None and h.start <= t < h.end and h.row("nic", t, row):
                    marks.add(h.fid)
            log.add("telemetry.nic", row, marks)
            t += NIC_S
