"""blind19's world: HGX H100 nodes sampled by dcgm-exporter and node_exporter, and what operators
do to them (drain, reboot onto a new driver, `nvidia-smi -r`, `dcgmi diag`).

A GPU's board a sample: idle (0x1 at 345 MHz, ~70 W), training (demand 640-740 W against the
700 W limit: SW power cap 0x4 and the clock at `1980 * sqrt(limit / demand)` above it), or under
`dcgmi diag`'s targeted power (demand 800 W: 0x4 at the limit); a lowered limit (a BMC capping
the node) or HW slowdown (0x8) change the clock and power; temperature follows power through a
40 s lag (integer degrees, as DCGM reports them). ECC rows every 30 s (counters since the last
boot or GPU reset; retired pages persist), XIDs as their own 4-key rows; InfiniBand port rows
every 10 s (counters since boot, some ports with old errors). Every record is made at its `ts`
and arrives 30-600 ms later.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from bench.blind12.world import Label

T0 = 1_796_464_800.0  # 2026-12-05 10:00 UTC
LIMIT_W = 700.0
BOOST_MHZ = 1980.0
VOLATILE = ("sbe_volatile", "dbe_volatile", "pcie_replay", "nvlink_crc_errors",
            "nvlink_replay_errors", "nvlink_recovery_errors")
PERSISTENT = ("retired_pages_sbe", "retired_pages_dbe")
PORT_COUNTERS = ("symbol_errors", "link_downed", "rcv_errors", "xmit_discards", "xmit_wait")


@dataclass
class Span:
    t0: float
    t1: float
    what: str                      # train | diag | dark (GPU) ; cap | hw (modifiers)
    x: dict = field(default_factory=dict)
    label: Label | None = None


@dataclass
class Gpu:
    node: str
    index: int
    demand_w: float
    inlet_c: float
    modes: list = field(default_factory=list)     # train / diag / dark spans
    mods: list = field(default_factory=list)      # cap / hw spans
    base: dict = field(default_factory=dict)      # counters at the log's start
    events: list = field(default_factory=list)    # (t, counter, delta, label)
    resets: list = field(default_factory=list)    # t: volatile counters back to 0
    states: list = field(default_factory=list)    # (t, field, value, label)

    def mode(self, t: float) -> Span | None:
        for s in self.modes:
            if s.t0 <= t < s.t1:
                return s
        return None

    def mods_at(self, t: float) -> list[Span]:
        return [m for m in self.mods if m.t0 <= t < m.t1]

    def compute_x(self, t: float) -> float:
        """How much longer this GPU's share of a training step takes at `t`."""
        x = 1.0
        for m in self.mods_at(t):
            x *= m.x.get("compute_x", 1.0)
        return x


@dataclass
class Port:
    node: str
    nic: str
    base: dict
    trickle: float                 # old ports: symbol errors a second, in spec
    rate: list = field(default_factory=list)   # (t, gbps, label): negotiated rate from t


class World:
    """Records with their arrival, labels, routine effects, and the fleet they come from."""

    def __init__(self, seed: int, story: str, minutes: float):
        self.rng = random.Random(f"blind19/{story}/{seed}")
        self.seed, self.story = seed, story
        self.duration = minutes * 60.0
        self.records: list[tuple] = []
        self.labels: list[Label] = []
        self.effects: list[dict] = []
        self.gpus: dict[tuple[str, int], Gpu] = {}
        self.ports: dict[tuple[str, str], Port] = {}
        self.nodes: list[str] = []
        self.dark: dict[str, list[tuple[float, float]]] = {}   # node -> reboots
        self.phase: dict[str, float] = {}
        self._seq = 0
        self.nics = [f"mlx5_{k}" for k in range(8)]

    # -- the fleet ----------------------------------------------------------------------------

    def add_node(self, node: str) -> None:
        r = self.rng
        self.nodes.append(node)
        self.phase[node] = r.uniform(0.0, 10.0)
        self.dark[node] = []
        inlet = r.uniform(22.0, 26.0)
        for g in range(8):
            self.gpus[(node, g)] = Gpu(
                node, g, demand_w=r.uniform(640.0, 740.0), inlet_c=inlet + r.uniform(-1, 1),
                base={"sbe_volatile": r.choice((0, 0, 0, 1, 2)), "dbe_volatile": 0,
                      "pcie_replay": r.randrange(0, 12), "nvlink_crc_errors": r.choice((0, 0, 3)),
                      "nvlink_replay_errors": 0, "nvlink_recovery_errors": 0,
                      "retired_pages_sbe": r.choice((0, 0, 0, 1)), "retired_pages_dbe": 0})
        for nic in self.nics:
            old = r.random() < 0.15
            self.ports[(node, nic)] = Port(
                node, nic, trickle=r.uniform(0.01, 0.04) if old else 0.0,
                base={"symbol_errors": r.randrange(2_000, 20_000) if old else r.randrange(0, 4),
                      "link_downed": r.choice((0, 0, 1, 2)), "rcv_errors": r.randrange(0, 3),
                      "xmit_discards": 0, "xmit_wait": r.randrange(10**6, 10**8)},
                rate=[(-math.inf, 400.0, None)])

    def effect(self, effect: str, t0: float, t1: float, **scope) -> None:
        self.effects.append({"effect": effect, "scope": scope, "start_ts": round(T0 + t0, 3),
                             "end_ts": round(T0 + t1, 3)})

    def label(self, fault_id: str, kind: str, cause: str, scope: dict,
              attributable: bool = True) -> Label:
        lab = Label(fault_id, kind, cause, scope, attributable)
        self.labels.append(lab)
        return lab

    def reboot(self, node: str, t0: float, t1: float) -> None:
        """Dark from t0 to t1 (drain, driver install, reboot, POST): every counter back at 0."""
        self.dark[node].append((t0, t1))
        for g in range(8):
            self.gpus[(node, g)].resets.append(t1)
            self.gpus[(node, g)].modes.append(Span(t0, t1, "dark"))

    def is_dark(self, node: str, t: float) -> bool:
        return any(a <= t < b for a, b in self.dark[node])

    # -- records ------------------------------------------------------------------------------

    def emit(self, t: float, topic: str, value: dict) -> None:
        """A record made at `t` (seconds into the log), arriving 30-600 ms later."""
        self._seq += 1
        self.records.append((round(T0 + t + self.rng.uniform(0.03, 0.6), 4), self._seq, topic,
                             value))

    def sample_times(self, node: str, every: float):
        t = self.phase[node] % every
        while t < self.duration:
            if not self.is_dark(node, t):
                yield t
            t += every

    def _counter(self, gpu: Gpu, name: str, t: float) -> int:
        last = max((r for r in gpu.resets if r <= t), default=None)
        if name in PERSISTENT or last is None:
            v = gpu.base[name]
            after = -math.inf
        else:
            v, after = 0, last
        return v + sum(d for te, f, d, _ in gpu.events if f == name and after < te <= t)

    def _state(self, gpu: Gpu, name: str, default, t: float):
        v = default
        for te, f, x, _ in sorted(gpu.states, key=lambda s: s[0]):
            if f == name and te <= t:
                v = x
        return v

    def write_thermal(self) -> None:
        a = 1.0 - math.exp(-10.0 / 40.0)
        for node in self.nodes:
            for g in range(8):
                gpu = self.gpus[(node, g)]
                temp = None
                for t in self.sample_times(node, 10.0):
                    m = gpu.mode(t)
                    if m is not None and m.what == "dark":
                        temp = None
                        continue
                    power, clock, thr, touched = self._board(gpu, m, t)
                    target = gpu.inlet_c + 9.0 + 0.058 * power
                    temp = target if temp is None else temp + (target - temp) * a
                    row = {"ts": round(T0 + t, 3), "node": node, "gpu": g,
                           "gpu_temp_c": int(round(temp + self.rng.uniform(-0.4, 0.4))),
                           "mem_temp_c": int(round(temp + 5 + self.rng.uniform(-0.4, 0.4))),
                           "power_w": round(power, 1), "sm_clock_mhz": int(round(clock)),
                           "throttle": thr}
                    for lab in touched:
                        lab.touch(T0 + t)
                    self.emit(t, "telemetry.thermal", row)

    def _board(self, gpu: Gpu, m: Span | None, t: float):
        r = self.rng
        mods = gpu.mods_at(t)
        limit = LIMIT_W
        touched = []
        for mo in mods:
            if mo.what == "cap":
                limit = mo.x["limit_w"]
        if m is None:
            power, clock, thr = r.uniform(62.0, 78.0), 345.0, 0x1
        else:
            demand = (gpu.demand_w if m.what == "train" else 800.0) * r.uniform(0.97, 1.03)
            if m.what == "train" and m.x.get("load") is not None:
                demand *= m.x["load"]
            if demand > limit:
                power, clock, thr = limit * r.uniform(0.985, 1.0), BOOST_MHZ * math.sqrt(
                    limit / demand), 0x4
            else:
                power, clock, thr = demand, BOOST_MHZ - r.uniform(0, 15), 0x0
            for mo in mods:
                if mo.what == "cap" and thr == 0x4 and mo.label is not None:
                    touched.append(mo.label)
                if mo.what == "hw":
                    clock *= mo.x["clock_x"]
                    power *= mo.x["power_x"]
                    thr = (thr & ~0x4) | 0x8   # far under the limit: no power cap
                    if mo.label is not None:
                        touched.append(mo.label)
        return power, clock, thr, touched

    def write_ecc(self) -> None:
        for node in self.nodes:
            for g in range(8):
                gpu = self.gpus[(node, g)]
                for t in self.sample_times(node, 30.0):
                    m = gpu.mode(t)
                    if m is not None and m.what == "dark":
                        continue
                    row = {"ts": round(T0 + t, 3), "node": node, "gpu": g}
                    for name in VOLATILE + PERSISTENT:
                        row[name] = self._counter(gpu, name, t)
                    row["row_remap_pending"] = self._state(gpu, "row_remap_pending", False, t)
                    row["row_remap_failure"] = False
                    row["recovery_action"] = self._state(gpu, "recovery_action", "none", t)
                    last = max((x for x in gpu.resets if x <= t), default=-1)
                    labs = {id(lab): lab for te, f, d, lab in gpu.events
                            if lab is not None and last < te <= t}
                    labs.update({id(lab): lab for te, f, x, lab in gpu.states
                                 if lab is not None and last < te <= t
                                 and x not in (False, "none")})
                    for lab in labs.values():
                        lab.touch(T0 + t)
                    self.emit(t, "telemetry.ecc", row)

    def xid(self, node: str, g: int, t: float, code: int, label: Label | None) -> None:
        if label is not None:
            label.touch(T0 + t)
        self.emit(t, "telemetry.ecc", {"ts": round(T0 + t, 3), "node": node, "gpu": g,
                                       "xid": code})

    def write_ports(self, busy) -> None:
        """`busy(node, t)` is the share of line rate a node's training traffic uses."""
        for (node, nic), port in self.ports.items():
            cum = dict(port.base)
            tx = rx = self.rng.randrange(10**12, 10**13)
            last_t = None
            for t in self.sample_times(node, 10.0):
                if last_t is not None and any(last_t < b <= t for a, b in self.dark[node]):
                    cum = {k: 0 for k in PORT_COUNTERS}
                    tx = rx = 0
                    last_t = None
                dt = 10.0 if last_t is None else t - last_t
                rate_gbps, lab = 400.0, None
                for te, gbps, lb in port.rate:
                    if te <= t:
                        rate_gbps, lab = gbps, lb
                share = busy(node, t)
                nbytes = int(rate_gbps / 8 * 1e9 * share * dt * self.rng.uniform(0.9, 1.1))
                tx += nbytes + self.rng.randrange(10**5, 10**6)
                rx += nbytes + self.rng.randrange(10**5, 10**6)
                if port.trickle and self.rng.random() < port.trickle * dt:
                    cum["symbol_errors"] += 1
                cum["xmit_wait"] += int(share * dt * self.rng.uniform(2e5, 6e5))
                row = {"ts": round(T0 + t, 3), "node": node, "nic": nic, "port": 1,
                       "link_state": "up", "rate_gbps": rate_gbps, "tx_bytes": tx,
                       "rx_bytes": rx, **cum}
                if lab is not None:
                    lab.touch(T0 + t)
                self.emit(t, "telemetry.nic", row)
                last_t = t
