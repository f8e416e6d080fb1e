"""The fleet as its collectors see it: GPU models, nodes that come and go, per-sample physics.

A node is present in telemetry only inside its `up` windows (its collectors run); a
re-imaged node comes back with every counter at zero; a dcgm-exporter restart leaves a
`dcgm_gap` (no thermal or ECC rows, InfiniBand rows go on from node_exporter). A GPU's state
at any time is one of idle / train / hang (NCCL spinning after a peer died) / burn (dcgmi diag
stress) from the schedule the jobs and stories write. Faults are hooks (see `Fault`); every
record a hook changes is marked with the fault's id, and a label spans its first to last mark.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import random
from dataclasses import dataclass, field

T0 = 1_786_000_000.0     # the log's t = 0, seconds since the epoch (2026-08-06)


@dataclass(frozen=True)
class GpuModel:
    """One GPU generation's board: limits, clocks and how it sheds heat (my figures)."""
    name: str
    limit_w: float
    boost_mhz: float
    idle_w: tuple[float, float]
    idle_mhz: float
    c_per_w: float        # steady-state degrees above the inlet per watt
    tau_s: float          # thermal time constant
    inlet_c: tuple[float, float]
    nvlink: bool = True


H100 = GpuModel("H100-SXM5-80GB", 700.0, 1980.0, (68.0, 88.0), 345.0, 0.055, 40.0, (21.0, 26.0))
A100 = GpuModel("A100-SXM4-80GB", 400.0, 1410.0, (52.0, 64.0), 210.0, 0.105, 45.0, (21.0, 26.0))
# GB200 NVL72: B200 at 1200 W, direct liquid cooling (coolant in at 30-34 C, cold plates).
B200 = GpuModel("B200-GB200", 1200.0, 1965.0, (140.0, 180.0), 690.0, 0.021, 18.0, (30.0, 34.0))


@dataclass
class Fault:
    """A labelled fault: its label fields and the hooks it uses (all optional)."""
    fid: str
    kind: str
    cause: str
    scope: dict
    attributable: bool = True
    compute: object = None     # (node, gpu, t) -> factor on that rank's compute, 1.0 if none
    comm: object = None        # (job, t) -> factor on the job's collective time
    ecc: object = None         # (node, gpu, t) -> ({field: add}, {field: value}) or None
    span: tuple | None = None  # fixed (start_ts, end_ts) for faults that leave no record


@dataclass
class Node:
    name: str
    model: GpuModel
    gpus: int
    nics: list[str]
    rate_gbps: float
    rng: random.Random
    up: list[tuple[float, float]] = field(default_factory=list)   # collectors running
    dcgm_gaps: list[tuple[float, float]] = field(default_factory=list)
    clock_steps: list[tuple[float, float]] = field(default_factory=list)  # (from t, offset)
    thermal_s: float = 10.0
    ecc_s: float = 30.0
    nic_s: float = 10.0
    recovery_action: bool = True
    # per GPU sorted schedule: list of (start, end, state)
    sched: dict[int, list[tuple[float, float, str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        r = self.rng
        self.offset0 = r.uniform(-0.25, 0.25)        # chrony-disciplined, a few hundred ms
        self.phase = {k: r.uniform(0, 10) for k in ("thermal", "ecc", "nic")}
        self.inlet = r.uniform(*self.model.inlet_c)
        self.want = [r.uniform(0.93, 1.07) for _ in range(self.gpus)]   # busy demand / limit
        self.hot = [r.uniform(0.0, 4.0) for _ in range(self.gpus)]      # position in airflow
        self.idle_w = [r.uniform(*self.model.idle_w) for _ in range(self.gpus)]
        self.sbe_rate = [r.choice([0.0] * 9 + [r.uniform(2e-4, 2e-3)]) for _ in range(self.gpus)]

    def ts(self, t: float) -> float:
        off = self.offset0
        for start, value in self.clock_steps:
            if t >= start:
                off = value
        return round(T0 + t + off, 3)

    def alive(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.up)

    def dcgm_alive(self, t: float) -> bool:
        return self.alive(t) and not any(a <= t < b for a, b in self.dcgm_gaps)

    def boot_of(self, t: float) -> int:
        return sum(1 for a, _ in self.up if a <= t)

    def busy(self, gpus: range | list, a: float, b: float, state: str) -> None:
        for g in gpus:
            self.sched.setdefault(g, []).append((a, b, state))

    def state(self, gpu: int, t: float) -> str:
        cur = "idle"
        for a, b, s in self.sched.get(gpu, ()):
            if a <= t < b:
                cur = s        # later entries win (a hang after a train)
        return cur


def checksum(*parts: object) -> str:
    return hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).hexdigest()


class World:
    """The nodes, faults, marks and the records written so far (unordered)."""

    def __init__(self, seed: int, minutes: float) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.dur = minutes * 60.0
        self.nodes: dict[str, Node] = {}
        self.faults: list[Fault] = []
        self.xids: list[tuple[float, str, int, int, str | None]] = []
        self.records: list[tuple[float, dict]] = []     # (true time, record)
        self.marks: dict[str, list[float]] = {}

    def node(self, name: str, model: GpuModel, gpus: int, nics: list[str], rate: float,
             **kw) -> Node:
        n = Node(name, model, gpus, nics, rate, random.Random(f"{self.seed}:{name}"), **kw)
        if not n.up:
            n.up = [(0.0, self.dur + 1.0)]
        self.nodes[name] = n
        return n

    def mark(self, fid: str | None, ts: float) -> None:
        if fid:
            m = self.marks.setdefault(fid, [ts, ts])
            m[0], m[1] = min(m[0], ts), max(m[1], ts)

    def emit(self, t: float, topic: str, value: dict, fids=()) -> None:
        self.records.append((t, {"topic": topic, "value": value}))
        for f in fids:
            self.mark(f, value["ts"])

    def compute_factor(self, node: str, gpu: int, t: float) -> tuple[float, list[str]]:
        f, hit = 1.0, []
        for flt in self.faults:
            if flt.compute:
                x = flt.compute(node, gpu, t)
                if x != 1.0:
                    f *= x
                    hit.append(flt.fid)
        return f, hit

    def comm_factor(self, job: str, t: float) -> tuple[float, list[str]]:
        f, hit = 1.0, []
        for flt in self.faults:
            if flt.comm:
                x = flt.comm(job, t)
                if x != 1.0:
                    f *= x
                    hit.append(flt.fid)
        return f, hit

    # ---- telemetry ---------------------------------------------------------------------

    def telemetry(self) -> None:
        for name in sorted(self.nodes):
            n = self.nodes[name]
            self._thermal(n)
            self._ecc(n)
            self._nic(n)
        for t, node, gpu, code, fid in sorted(self.xids, key=lambda x: (x[0], x[1], x[2])):
            n = self.nodes[node]
            if n.alive(t):     # the kernel-log XID reader is its own agent (not dcgm-exporter)
                self.emit(t, "telemetry.ecc", {"ts": n.ts(t), "node": node, "gpu": gpu,
                                               "xid": code}, [fid] if fid else [])

    def _ticks(self, n: Node, period: float, phase: float):
        t = phase
        while t < self.dur:
            yield t
            t += period * (1 + n.rng.uniform(-0.01, 0.01))

    def _power(self, n: Node, g: int, t: float) -> tuple[float, float, int]:
        """(power_w, sm_clock_mhz, clock-event reasons) of GPU g at t."""
        m, r = n.model, n.rng
        st = n.state(g, t)
        if st == "idle":
            return n.idle_w[g] * r.uniform(0.97, 1.03), m.idle_mhz, 0x1
        if st == "hang":     # NCCL kernels spinning on a dead peer: busy, little power
            return m.limit_w * r.uniform(0.30, 0.38), m.boost_mhz, 0
        if st == "burn":     # dcgmi diag -r 3: power, memory bandwidth, PCIe phases
            phase = int((t // 150) % 3)
            want = m.limit_w * (1.18, 0.78, 0.36)[phase] * r.uniform(0.98, 1.02)
        else:
            want = m.limit_w * n.want[g] * r.uniform(0.97, 1.03)
        if want > m.limit_w:
            return (m.limit_w * r.uniform(0.985, 1.0),
                    round(m.boost_mhz * math.sqrt(m.limit_w / want) / 15) * 15, 0x4)
        return want, m.boost_mhz, 0

    def _thermal(self, n: Node) -> None:
        temp = [n.inlet + 0.5 * n.model.c_per_w * n.idle_w[g] for g in range(n.gpus)]
        last = 0.0
        for t in self._ticks(n, n.thermal_s, n.phase["thermal"]):
            dt, last = t - last, t
            for g in range(n.gpus):
                p, clk, thr = self._power(n, g, t)
                target = n.inlet + n.hot[g] + n.model.c_per_w * p
                temp[g] += (target - temp[g]) * (1 - math.exp(-dt / n.model.tau_s))
                if not n.dcgm_alive(t):
                    continue
                self.emit(t, "telemetry.thermal", {
                    "ts": n.ts(t), "node": n.name, "gpu": g,
                    "gpu_temp_c": round(temp[g] + n.rng.gauss(0, 0.3)),
                    "mem_temp_c": round(temp[g] + 5 + 0.3 * n.hot[g] + n.rng.gauss(0, 0.3)),
                    "power_w": round(p, 2), "sm_clock_mhz": round(clk), "throttle": thr})

    def _ecc(self, n: Node) -> None:
        boot = -1
        for t in self._ticks(n, n.ecc_s, n.phase["ecc"]):
            if n.boot_of(t) != boot:      # a (re-)boot: counters start again at 0
                boot = n.boot_of(t)
                cnt = [dict.fromkeys(("sbe_volatile", "dbe_volatile", "retired_pages_sbe",
                                      "retired_pages_dbe", "pcie_replay", "nvlink_crc_errors",
                                      "nvlink_replay_errors", "nvlink_recovery_errors"), 0)
                       for _ in range(n.gpus)]
                flags = [{"row_remap_pending": False, "row_remap_failure": False,
                          "recovery_action": "none"} for _ in range(n.gpus)]
                last = t
            dt, last = t - last, t
            for g in range(n.gpus):
                c = cnt[g]
                if n.sbe_rate[g] and n.state(g, t) != "idle":
                    c["sbe_volatile"] += _poisson(n.rng, n.sbe_rate[g] * dt)
                fids = []
                for flt in self.faults:
                    if flt.ecc:
                        hit = flt.ecc(n.name, g, t)
                        if hit:
                            adds, sets = hit
                            for k, v in adds.items():
                                c[k] += v
                            flags[g].update(sets)
                            fids.append(flt.fid)
                if not n.dcgm_alive(t):
                    continue
                v = {"ts": n.ts(t), "node": n.name, "gpu": g, **c,
                     "row_remap_pending": flags[g]["row_remap_pending"],
                     "row_remap_failure": flags[g]["row_remap_failure"], "xid": None}
                if not n.model.nvlink:
                    for k in ("nvlink_crc_errors", "nvlink_replay_errors",
                              "nvlink_recovery_errors"):
                        v.pop(k)
                if n.recovery_action:
                    v["recovery_action"] = flags[g]["recovery_action"]
                self.emit(t, "telemetry.ecc", v, fids)

    def _nic(self, n: Node) -> None:
        boot = -1
        busy_Bps = n.rate_gbps * 1e9 / 8 * 0.42     # a training job's mean port load
        for t in self._ticks(n, n.nic_s, n.phase["nic"]):
            if n.boot_of(t) != boot:
                boot = n.boot_of(t)
                cnt = {nic: dict.fromkeys(("tx_bytes", "rx_bytes", "symbol_errors",
                                           "link_downed", "rcv_errors", "xmit_discards",
                                           "xmit_wait"), 0) for nic in n.nics}
                last = t
            dt, last = t - last, t
            busy = sum(n.state(g, t) == "train" for g in range(n.gpus)) / n.gpus
            for nic in n.nics:
                c = cnt[nic]
                rate = busy_Bps * busy * n.rng.uniform(0.85, 1.15) + 2e5
                c["tx_bytes"] += int(rate * dt)
                c["rx_bytes"] += int(rate * dt * n.rng.uniform(0.98, 1.02))
                c["xmit_wait"] += int(busy * n.rng.uniform(2e4, 9e4) * dt)
                if n.rng.random() < 2e-4 * dt:
                    c["symbol_errors"] += 1
                if not n.alive(t):
                    continue
                self.emit(t, "telemetry.nic", {"ts": n.ts(t), "node": n.name, "nic": nic,
                                               "port": 1, "link_state": "up",
                                               "rate_gbps": n.rate_gbps, **c})


def _poisson(r: random.Random, lam: float) -> int:
    k, p, lim = 0, 1.0, math.exp(-lam)
    while True:
        p *= r.random()
        if p <= lim:
            return k
        k += 1


def first_at_or_after(times: list[float], t: float) -> int:
    return bisect.bisect_left(times, t)
