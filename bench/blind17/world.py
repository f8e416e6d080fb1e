"""blind17's world: hosts whose clocks and names are not what they seem, GPUs, ports, records.

Every record is made at its *true* time ``t`` and written with the ``ts`` its host's clock
gives (``t + offset``, the offset piecewise constant: chrony without a source, then a
``makestep``), under the name its collector uses for the host (dcgm-exporter under Kubernetes
may call a host by its FQDN while the training process and node_exporter use the short name).
Arrival is true time plus the collector's path (30-600 ms); the writer orders by arrival, so a
host whose clock steps back writes rows whose ``ts`` goes back.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field

from bench.blind12.world import Label

T0 = 1_796_450_400.0          # 2026-12-05 05:20 UTC, an arbitrary start
TDP_W = 700.0                 # H100 SXM5 and H200 SXM: same board limit
BOOST_MHZ = 1980.0
IDLE_MHZ, IDLE_W = 345.0, 72.0
SW_POWER_CAP, HW_SLOWDOWN, SW_THERMAL, HW_THERMAL, IDLE_BIT = 0x4, 0x8, 0x20, 0x40, 0x1
ECC_FIELDS = ("sbe_volatile", "dbe_volatile", "retired_pages_sbe", "retired_pages_dbe",
              "pcie_replay", "nvlink_crc_errors", "nvlink_replay_errors",
              "nvlink_recovery_errors")


@dataclass
class GpuFault:
    """A slowing fault on one GPU: from ``t0`` (its telemetry changes) and, after ``lag_s``,
    the clock at ``clock_x`` of its healthy value (``bits`` set), ``power_w`` a limit or None."""
    label: Label
    t0: float
    clock_x: float
    bits: int
    lag_s: float = 0.0
    temp_c: float | None = None    # the temperature it holds at (thermal), None: unchanged
    power_w: float | None = None   # a board limit left low (power), None: TDP


@dataclass
class Gpu:
    node: str
    index: int
    sku: str
    temp_offset_c: float
    busy: list = field(default_factory=list)      # (t0, t1) spans a job runs on it
    faults: list = field(default_factory=list)    # GpuFault
    changes: list = field(default_factory=list)   # (t, ecc field, delta, Label | None)
    gone_at: float | None = None                  # fell off the bus: no row after it

    def is_busy(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.busy)

    def fault_at(self, t: float) -> GpuFault | None:
        live = [f for f in self.faults if f.t0 <= t]
        return live[-1] if live else None

    def speed(self, t: float) -> tuple[float, Label | None]:
        """The compute rate (1.0 healthy) and the label whose fault slows it at t."""
        f = self.fault_at(t)
        if f is None or t < f.t0 + f.lag_s:
            return 1.0, None
        # ~85 % of a training step's kernels are clock-bound (my choice)
        return 1.0 / (0.15 + 0.85 * f.clock_x), f.label


@dataclass
class Port:
    node: str
    nic: str
    errors: list = field(default_factory=list)    # (t0, symbol/s, rcv/s, seq/s, Label)


class World:
    """Records with arrival times, labels, routine effects; hosts' clocks and names."""

    def __init__(self, seed: int, minutes: float, tag: str):
        self.rng = random.Random(f"blind17-{tag}-{seed}")
        self.t_end = T0 + 60.0 * minutes
        self.records: list = []
        self.labels: list[Label] = []
        self.effects: list[dict] = []
        self.gpus: dict[tuple[str, int], Gpu] = {}
        self.ports: dict[tuple[str, str], Port] = {}
        self._clock: dict[str, list] = {}      # node -> sorted [(t_from, offset_s)]
        self._names: dict[tuple[str, str], str] = {}
        self._seq = 0

    # -- hosts -----------------------------------------------------------------------------
    def add_node(self, node: str, sku: str = "H100", nics: int = 8) -> None:
        for g in range(8):
            self.gpus[(node, g)] = Gpu(node, g, sku, self.rng.uniform(-2.5, 2.5))
        for k in range(nics):
            self.ports[(node, f"mlx5_{k}")] = Port(node, f"mlx5_{k}")

    def set_clock(self, node: str, t_from: float, offset_s: float) -> None:
        """From true time ``t_from`` the host's clock reads ``offset_s`` off."""
        seg = self._clock.setdefault(node, [])
        seg.append((t_from, offset_s))
        seg.sort()

    def offset(self, node: str, t: float) -> float:
        seg = self._clock.get(node)
        if not seg:
            return 0.0
        i = bisect.bisect_right([a for a, _ in seg], t) - 1
        return seg[i][1] if i >= 0 else 0.0

    def rename(self, node: str, topic: str, name: str) -> None:
        self._names[(node, topic)] = name

    def label(self, fault_id: str, kind: str, cause: str, scope: dict,
              attributable: bool = True) -> Label:
        lab = Label(fault_id, kind, cause, scope, attributable)
        self.labels.append(lab)
        return lab

    def effect(self, name: str, scope: dict, t0: float, t1: float) -> None:
        self.effects.append({"effect": name, "scope": scope, "start_ts": round(t0, 3),
                             "end_ts": round(t1, 3)})

    # -- records -----------------------------------------------------------------------------
    def emit(self, topic: str, node: str, t: float, value: dict, labels=()) -> float:
        """One record made at true time t on ``node``; returns the ts it carries."""
        ts = round(t + self.offset(node, t), 3)
        v = {"ts": ts, "node": self._names.get((node, topic), node), **value}
        self.records.append((t + self.rng.uniform(0.03, 0.6), self._seq, topic, v))
        self._seq += 1
        for lab in labels:
            if lab is not None:
                lab.touch(ts)
        return ts

    def xid(self, node: str, gpu: int, t: float, code: int, label: Label) -> float:
        return self.emit("telemetry.ecc", node, t, {"gpu": gpu, "xid": code}, [label])

    # -- periodic collectors -----------------------------------------------------------------------
    def sample_gpus(self, thermal_s: float = 10.0, ecc_s: float = 30.0) -> None:
        nodes = sorted({n for n, _ in self.gpus})
        for node in nodes:
            phase = self.rng.uniform(0.0, thermal_s)
            t = T0 + phase
            k = 0
            while t < self.t_end:
                for g in range(8):
                    gpu = self.gpus[(node, g)]
                    if gpu.gone_at is not None and t >= gpu.gone_at:
                        continue
                    self._thermal(gpu, t)
                    if k % round(ecc_s / thermal_s) == 0:
                        self._ecc(gpu, t)
                t += thermal_s
                k += 1

    def _thermal(self, gpu: Gpu, t: float) -> None:
        rng = self.rng
        f = gpu.fault_at(t)
        lab = f.label if f is not None else None
        if not gpu.is_busy(t):
            v = {"gpu": gpu.index, "gpu_temp_c": round(33 + gpu.temp_offset_c + rng.uniform(-1, 1)),
                 "mem_temp_c": round(38 + gpu.temp_offset_c + rng.uniform(-1, 1)),
                 "power_w": round(IDLE_W + rng.uniform(-4, 4), 1),
                 "sm_clock_mhz": IDLE_MHZ, "throttle": IDLE_BIT}
            self.emit("telemetry.thermal", gpu.node, t, v)
            return
        power = min(TDP_W - 2.0, 640.0 + rng.gauss(0, 18))
        clock = BOOST_MHZ - rng.uniform(90, 170)
        temp = 64 + gpu.temp_offset_c + rng.uniform(-1.5, 1.5)
        bits = SW_POWER_CAP if power > TDP_W - 12 else 0
        if f is not None:
            ramp = min(1.0, (t - f.t0) / f.lag_s) if f.lag_s > 0 else 1.0
            if f.temp_c is not None:
                temp += (f.temp_c - temp) * ramp
            if ramp >= 1.0:
                clock *= f.clock_x
                power *= 0.55 + 0.45 * f.clock_x
                bits = f.bits
            if f.power_w is not None:
                power = f.power_w - rng.uniform(0.5, 4.0)
                bits = f.bits
                clock = (BOOST_MHZ - 130) * f.clock_x + rng.uniform(-15, 15)
        v = {"gpu": gpu.index, "gpu_temp_c": round(temp), "mem_temp_c": round(temp + 8),
             "power_w": round(power, 1), "sm_clock_mhz": round(clock / 15) * 15.0,
             "throttle": bits}
        self.emit("telemetry.thermal", gpu.node, t, v, [lab])

    def _ecc(self, gpu: Gpu, t: float) -> None:
        v = {"gpu": gpu.index, **dict.fromkeys(ECC_FIELDS, 0), "row_remap_pending": False,
             "row_remap_failure": False, "recovery_action": "none"}
        labs = []
        for tc, name, delta, lab in gpu.changes:
            if tc <= t:
                v[name] += delta
                labs.append(lab)
        self.emit("telemetry.ecc", gpu.node, t, v, labs)

    def sample_ports(self, every_s: float = 10.0) -> None:
        for key in sorted(self.ports):
            port = self.ports[key]
            rng = self.rng
            t = T0 + rng.uniform(0.0, every_s)
            tx = rx = rng.randrange(10**12, 10**14)
            sym = rng.randrange(0, 40)
            rcv = seq = wait = cnp_np = cnp_rp = 0
            gpus = [g for (n, _), g in self.gpus.items() if n == port.node]
            while t < self.t_end:
                load = sum(g.is_busy(t) for g in gpus) / 8.0
                tx += int(load * every_s * rng.uniform(9e9, 14e9))
                rx += int(load * every_s * rng.uniform(9e9, 14e9))
                wait += int(load * every_s * rng.uniform(2e4, 9e4))
                cnp_np += int(load * every_s * rng.uniform(0, 6))
                cnp_rp += int(load * every_s * rng.uniform(0, 6))
                labs = []
                for t0, s_sym, s_rcv, s_seq, lab in port.errors:
                    if t >= t0:
                        span = min(every_s, t - t0)
                        sym += int(span * s_sym * rng.uniform(0.6, 1.4))
                        rcv += int(span * s_rcv * rng.uniform(0.6, 1.4))
                        seq += int(span * s_seq * rng.uniform(0.6, 1.4))
                        labs.append(lab)
                v = {"nic": port.nic, "port": 1, "link_state": "up", "rate_gbps": 400.0,
                     "tx_bytes": tx, "rx_bytes": rx, "symbol_errors": sym, "link_downed": 0,
                     "rcv_errors": rcv, "xmit_discards": 0, "xmit_wait": wait,
                     "out_of_sequence": seq, "packet_seq_err": seq // 3,
                     "np_cnp_sent": cnp_np, "rp_cnp_handled": cnp_rp}
                self.emit("telemetry.nic", port.node, t, v, labs)
                t += every_s
