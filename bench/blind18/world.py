"""blind18's world: H100 boards a sample, dcgm-exporter / node_exporter rows, and the road each
record takes to the consumer (a Kafka partition that can stall, a producer that retries).

Every record is made at true time ``t`` (no host clock is wrong in blind18: ``ts`` is ``t``)
and given an arrival time; the writer puts records in arrival order.  A record's arrival is
``t`` plus the collector's path (30-600 ms), plus what its partition or producer does to it:

- ``hold(group, partition, t0, t1)``: the partition has no leader from ``t0`` to ``t1`` (a
  broker restart, an ISR shrink); producers buffer, and at ``t1`` the backlog lands in its own
  order within a few seconds (a catch-up at ~25x real time);
- ``resend(group, partition, t0, t1, timeout)``: the partition is unreachable from ``t0`` to
  ``t1``; the backlog lands at ``t1`` and -- the broker wrote it but the acknowledgement was
  lost -- the producer (``enable.idempotence=false``) sends the same records again when its
  request times out, ``timeout`` seconds later: every record of the window twice.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from bench.blind12.world import Label

LIMIT_W, BOOST_MHZ, IDLE_MHZ = 700.0, 1980.0, 345.0
ECC_FIELDS = ("sbe_volatile", "dbe_volatile", "retired_pages_sbe", "retired_pages_dbe",
              "pcie_replay", "nvlink_crc_errors", "nvlink_replay_errors",
              "nvlink_recovery_errors")


@dataclass
class Heat:
    """A fault that heats one GPU: from ``t0`` it gains ``rise_c`` over ``ramp_s``; at the
    slowdown point the firmware holds it at ``hold_c`` with ``bits`` set and the clock x
    ``clock``."""
    t0: float
    rise_c: float
    ramp_s: float
    hold_c: float
    bits: int
    clock: float
    label: Label | None = None


@dataclass
class Gpu:
    node: str
    index: int
    demand: float                       # a busy board's power demand / limit (silicon spread)
    inlet_c: float
    busy: list = field(default_factory=list)      # [(t0, t1, load)]
    burn: list = field(default_factory=list)      # [(t0, t1)]: dcgmi diag targeted power
    heat: Heat | None = None
    gone_at: float = math.inf           # fell off the bus: no row of it from then
    slow: list = field(default_factory=list)      # [(t0, factor)]: compute x factor from t0
    s0: int = 0                         # the first second of the temperature line
    _temps: dict = field(default_factory=dict)

    def load(self, t: float) -> float:
        if any(a <= t < b for a, b in self.burn):
            return 1.06
        return max((w for a, b, w in self.busy if a <= t < b), default=0.0)

    def power(self, t: float) -> tuple[float, float, int]:
        """(power_w, sm_clock_mhz, throttle) with no fault."""
        u = self.load(t)
        if u <= 0.0:
            return 62.0 + 8.0 * (self.demand - 0.9), IDLE_MHZ, 0x1
        want = LIMIT_W * self.demand * u
        if want > LIMIT_W:
            return LIMIT_W * 0.995, BOOST_MHZ * math.sqrt(LIMIT_W / want), 0x4
        return want, BOOST_MHZ, 0x0

    def temp(self, t: float, faulty: bool) -> float:
        """GPU temperature at second ``int(t)``: inlet + 9 C + 0.052 C/W through a 40 s lag
        (integrated a second at a time from ``s0``); with ``faulty`` the fault's extra heat and
        the firmware's hold."""
        line = self._temps.setdefault(faulty, [])
        s = int(t) - self.s0
        h = self.heat
        while len(line) <= s:
            k = self.s0 + len(line)
            target = self.inlet_c + 9.0 + 0.052 * self.power(k)[0]
            if faulty and h is not None and k >= h.t0:
                target += h.rise_c * min(1.0, (k - h.t0) / h.ramp_s) * (
                    1.0 if self.load(k) else 0.4)
            val = target if not line else line[-1] + (target - line[-1]) / 40.0
            if faulty and h is not None and k >= h.t0 and val > h.hold_c:
                val = h.hold_c + 0.4 * math.sin(k / 17.0)
            line.append(val)
        return line[max(s, 0)]

    def held(self, t: float) -> bool:
        h = self.heat
        return h is not None and t >= h.t0 and self.temp(t, True) >= h.hold_c - 0.7

    def speed(self, t: float) -> float:
        """Compute time multiplier of this GPU at ``t`` (1.0 healthy)."""
        f = 1.0
        if self.held(t):
            f *= self.heat.clock ** -0.8
        for t0, x in self.slow:
            if t >= t0:
                f *= x
        return f


@dataclass
class Port:
    node: str
    nic: str
    base: dict                          # counters since boot at the log's start
    trickle: float = 0.0                # symbol errors a second, healthy (in spec)
    errs: list = field(default_factory=list)   # [(t0, t1, sym/s, rcv/s, label)]
    _acc: dict = field(default_factory=dict)
    _last: float | None = None


class World:
    """Records (arrival, sequence, topic, value), labels, routine effects."""

    def __init__(self, rng: random.Random, t0: float, minutes: float, cluster: str | None = None):
        self.rng = rng
        self.cluster = cluster
        self.t0, self.t1 = t0, t0 + minutes * 60.0
        self.records: list[tuple] = []
        self.labels: list[Label] = []
        self.effects: list[dict] = []
        self.gpus: dict[tuple, Gpu] = {}
        self.ports: dict[tuple, Port] = {}
        self.holds: list[tuple] = []     # (group, partition, t0, t1)
        self.resends: list[tuple] = []   # (group, partition, t0, t1, timeout)
        self.partition_of = lambda group, key: 0
        self.extra_delay: dict = {}      # cluster -> (lo, hi) s more on every record (mirroring)
        self._seq = 0

    # -- the road ------------------------------------------------------------------------
    def emit(self, topic: str, value: dict, *labels: Label) -> None:
        t = value["ts"]
        for lab in labels:
            if lab is not None:
                lab.touch(t)
        a = t + self.rng.uniform(0.03, 0.6)
        lo_hi = self.extra_delay.get(value.get("cluster"))
        if lo_hi:
            a += self.rng.uniform(*lo_hi)
        group = "step" if topic == "telemetry.step" else "node"
        part = self.partition_of(group, value["job"] if group == "step" else value["node"])
        copies = [a]
        for g, p, h0, h1 in self.holds:
            if g == group and p == part and a >= h0:
                # the backlog lands in its own order; what comes after queues behind it
                copies = [max(a, h1 + 0.5 + (a - h0) / 25.0)]
        for g, p, h0, h1, timeout in self.resends:
            if g == group and p == part and a >= h0:
                first = max(a, h1 + 0.8 + (a - h0) / 25.0)
                copies = [first, first + timeout] if a < h1 else [first]
        for arr in copies:
            self._seq += 1
            self.records.append((arr, self._seq, topic, value))

    def label(self, *args, **kw) -> Label:
        lab = Label(*args, **kw)
        self.labels.append(lab)
        return lab

    def effect(self, name: str, scope: dict, t0: float, t1: float, why: str) -> None:
        self.effects.append({"effect": name, "scope": scope, "start_ts": round(t0, 3),
                             "end_ts": round(t1, 3), "why": why})

    # -- hardware ------------------------------------------------------------------------
    def add_node(self, node: str, gpus: int = 8, nics: int = 8, inlet_c: float = 24.0,
                 old_errors: float = 0.0) -> None:
        r = self.rng
        for g in range(gpus):
            self.gpus[(node, g)] = Gpu(node, g, r.uniform(0.93, 1.07),
                                       inlet_c + r.uniform(-1.0, 2.5), s0=int(self.t0) - 240)
        for k in range(nics):
            sym = int(r.uniform(2e3, 4e4)) if r.random() < old_errors else int(r.random() < 0.3)
            base = {"tx_bytes": int(r.uniform(1e14, 9e14)), "rx_bytes": int(r.uniform(1e14, 9e14)),
                    "symbol_errors": sym, "link_downed": int(r.random() < 0.2) + (3 if sym > 1
                                                                                  else 0),
                    "rcv_errors": sym // 40, "xmit_discards": int(r.uniform(0, 30)),
                    "xmit_wait": int(r.uniform(1e9, 5e10))}
            self.ports[(node, f"mlx5_{k}")] = Port(node, f"mlx5_{k}", base)

    def base_fields(self, node: str, cluster: str | None) -> dict:
        c = cluster or self.cluster
        return {} if c is None else {"cluster": c}

    def thermal(self, node: str, g: int, t: float, cluster: str | None = None) -> None:
        gpu = self.gpus[(node, g)]
        if t >= gpu.gone_at:
            return
        p, clk, thr = gpu.power(t)
        temp_ok = gpu.temp(t, False)
        temp = gpu.temp(t, True)
        lab = None
        if gpu.heat is not None and gpu.held(t):
            clk *= gpu.heat.clock
            p *= gpu.heat.clock ** 1.6
            thr = (thr & ~0x4) | gpu.heat.bits
        r = self.rng
        row = {"ts": round(t, 3), "node": node, "gpu": g, **self.base_fields(node, cluster),
               "gpu_temp_c": int(round(temp)), "mem_temp_c": int(round(temp + 5.5)),
               "power_w": round(p * r.uniform(0.985, 1.015), 1),
               "sm_clock_mhz": float(int(clk * r.uniform(0.995, 1.0))), "throttle": thr}
        if gpu.heat is not None and (int(round(temp)) != int(round(temp_ok)) or gpu.held(t)):
            lab = gpu.heat.label
        self.emit("telemetry.thermal", row, lab)

    def ecc(self, node: str, g: int, t: float, state: dict, cluster: str | None = None,
            label: Label | None = None) -> None:
        gpu = self.gpus[(node, g)]
        if t >= gpu.gone_at:
            return
        row = {"ts": round(t, 3), "node": node, "gpu": g, **self.base_fields(node, cluster),
               **state}
        self.emit("telemetry.ecc", row, label)

    def xid(self, node: str, g: int, t: float, code: int, label: Label,
            cluster: str | None = None) -> None:
        row = {"ts": round(t, 3), "node": node, "gpu": g, **self.base_fields(node, cluster),
               "xid": code}
        self.emit("telemetry.ecc", row, label)

    def nic(self, port: Port, t: float, busy_gbps: float, cluster: str | None = None) -> None:
        r = self.rng
        dt = 0.0 if port._last is None else t - port._last
        port._last = t
        acc = port._acc
        if not acc:
            acc.update(port.base)
        lab = None
        gb = busy_gbps * r.uniform(0.9, 1.1)
        acc["tx_bytes"] += int(gb * 1.25e8 * dt)
        acc["rx_bytes"] += int(gb * 1.25e8 * dt * r.uniform(0.97, 1.03))
        acc["xmit_wait"] += int((4e4 if busy_gbps > 5 else 2e2) * dt * r.uniform(0.5, 1.5))
        if port.trickle and r.random() < port.trickle * dt:
            acc["symbol_errors"] += 1
        for e0, e1, sym, rcv, elab in port.errs:
            span = min(t, e1) - max(t - dt, e0)
            if span > 0:
                acc["symbol_errors"] += int(sym * span * r.uniform(0.6, 1.4))
                acc["rcv_errors"] += int(rcv * span * r.uniform(0.5, 1.5))
                acc["xmit_discards"] += int(rcv * 0.3 * span * r.uniform(0.5, 1.5))
                lab = elab
        row = {"ts": round(t, 3), "node": port.node, "nic": port.nic, "port": 1,
               **self.base_fields(port.node, cluster), "link_state": "up", "rate_gbps": 400.0,
               **{k: int(v) for k, v in acc.items()}}
        self.emit("telemetry.nic", row, lab)

    def collectors(self, nodes: list[str], t0: float, t1: float, thermal_s: float, ecc_s: float,
                   nic_s: float, busy_gbps, ecc_state, cluster: str | None = None) -> None:
        """Every node's dcgm-exporter (thermal, ECC) and node_exporter (ports) rows in
        [t0, t1), each node on its own phase; ``busy_gbps(node, t)`` is the port traffic,
        ``ecc_state(node, gpu, t)`` the ECC row's fields and its label (or None)."""
        r = self.rng
        for node in nodes:
            ph = r.uniform(0, thermal_s), r.uniform(0, ecc_s), r.uniform(0, nic_s)
            gpus = sorted(g for n, g in self.gpus if n == node)
            t = t0 + ph[0]
            while t < t1:
                for g in gpus:
                    self.thermal(node, g, t + r.uniform(0, 0.05), cluster)
                t += thermal_s
            t = t0 + ph[1]
            while t < t1:
                for g in gpus:
                    state, lab = ecc_state(node, g, t)
                    self.ecc(node, g, t + r.uniform(0, 0.05), state, cluster, lab)
                t += ecc_s
            ports = [p for (n, _), p in sorted(self.ports.items()) if n == node]
            t = t0 + ph[2]
            while t < t1:
                for p in ports:
                    self.nic(p, t + r.uniform(0, 0.02), busy_gbps(node, t), cluster)
                t += nic_s


def ecc_counters(rng: random.Random) -> dict:
    """A GPU's volatile counters since its last reset (small SBE / PCIe trickles)."""
    return {"sbe_volatile": int(rng.random() < 0.1) * rng.randint(1, 6), "dbe_volatile": 0,
            "retired_pages_sbe": 0, "retired_pages_dbe": 0,
            "pcie_replay": int(rng.random() < 0.15) * rng.randint(1, 40),
            "nvlink_crc_errors": 0, "nvlink_replay_errors": 0, "nvlink_recovery_errors": 0,
            "row_remap_pending": False, "row_remap_failure": False, "recovery_action": "none"}
