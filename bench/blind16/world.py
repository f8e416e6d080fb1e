"""blind16's fleet: H100 GPUs sampled by dcgm-exporter, RoCE / IB port counters, a log of records.

Physics a sample, not a second: a GPU's SM busy share comes from the job's last step on it (a
GPU that waits inside its compute for a slower peer is busy less of the step), its clock from a
scripted speed (a fault, a driver's clock policy) and the 700 W cap, its power from both, its
temperature from the inlet and the power through a 30 s lag. Faults and routine shapes are
scripted on the `Gpu` (speed, throttle bits, extra heat, dark windows) so that the step records
the jobs write and the rows the collectors write tell one story.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.blind12.world import Label

T0 = 1_796_515_200.0            # 2026-12-05 00:00 UTC
BOOST_MHZ, TDP_W, IDLE_W = 1980.0, 700.0, 72.0
C_PER_W = 0.072                 # die over inlet at steady state (liquid-assisted air)
COUNTERS = ("sbe_volatile", "dbe_volatile", "retired_pages_sbe", "retired_pages_dbe",
            "pcie_replay", "nvlink_crc_errors", "nvlink_replay_errors",
            "nvlink_recovery_errors")
PORT_COUNTERS = ("tx_bytes", "rx_bytes", "symbol_errors", "link_downed", "rcv_errors",
                 "xmit_discards", "xmit_wait", "out_of_sequence", "packet_seq_err",
                 "np_cnp_sent", "rp_cnp_handled")


def _never(t: float) -> float:
    return 0.0


@dataclass
class Gpu:
    """One GPU: its share of each step it ran (pushed by the job) and its scripted state."""
    node: str
    index: int
    step_end: list = field(default_factory=list)      # ts of each step end
    step_share: list = field(default_factory=list)    # SM busy share of that step
    speed: Callable[[float], float] = lambda t: 1.0   # work rate: 1 healthy
    clock: Callable[[float], float] = lambda t: 1.0   # SM clock over boost
    throttle: Callable[[float], int] = lambda t: 0    # reason bits asserted besides 0x4
    power_limit: Callable[[float], float] = lambda t: TDP_W
    heat_c: Callable[[float], float] = _never         # extra die temperature (bad cold plate)
    hold_c: float | None = None                       # the firmware's hold point when throttling
    labels: list = field(default_factory=list)        # (label, t0, t1): rows in t0..t1 touch it
    sbe: int = 0

    def share(self, t: float) -> float:
        """SM busy share over the last step that ended by ``t`` (0.02 when idle 20 s)."""
        i = bisect.bisect_right(self.step_end, t) - 1
        if i < 0:       # a job already running at the log's start: its first step's share
            return self.step_share[0] if self.step_end and self.step_end[0] - t < 10.0 else 0.02
        if t - self.step_end[i] > 20.0:
            return 0.02
        return self.step_share[i]


@dataclass
class Port:
    node: str
    nic: str
    counts: dict = field(default_factory=lambda: dict.fromkeys(PORT_COUNTERS, 0))
    rate_gbps: float = 400.0
    busy_gbps: Callable[[float], float] = lambda t: 0.0
    errors: list = field(default_factory=list)   # (t0, t1, {counter: per second}, label|None)


class World:
    """The records of one log (arrival, sequence, topic, value), its labels and its effects."""

    def __init__(self, rng: random.Random, nodes: list[str], nics: list[str],
                 inlet: Callable[[str, float], float]) -> None:
        self.rng = rng
        self.nodes = nodes
        self.gpus = {(n, g): Gpu(n, g, sbe=rng.choice([0, 0, 0, 2, 7, 31]))
                     for n in nodes for g in range(8)}
        self.ports = {(n, nic): Port(n, nic) for n in nodes for nic in nics}
        self.inlet = inlet
        self.dark: dict[str, list[tuple[float, float]]] = {}   # node -> windows with no rows
        self.reset_at: dict[str, list[float]] = {}             # node -> counter resets
        self.records: list[tuple[float, int, str, dict]] = []
        self.labels: list[Label] = []
        self.effects: list[dict] = []

    def label(self, fault_id: str, kind: str, cause: str, scope: dict,
              attributable: bool) -> Label:
        lab = Label(fault_id, kind, cause, scope, attributable)
        self.labels.append(lab)
        return lab

    def effect(self, name: str, scope: dict, t0: float, t1: float, why: str) -> None:
        self.effects.append({"effect": name, "scope": scope, "start_ts": round(t0, 3),
                             "end_ts": round(t1, 3), "why": why})

    def emit(self, topic: str, value: dict, *labels: Label) -> None:
        arrival = value["ts"] + self.rng.uniform(0.03, 0.6)
        self.records.append((arrival, len(self.records), topic, value))
        for lab in labels:
            lab.touch(value["ts"])

    def is_dark(self, node: str, t: float) -> bool:
        return any(a <= t < b for a, b in self.dark.get(node, ()))

    def _resets_before(self, node: str, t0: float, t1: float) -> bool:
        return any(t0 < r <= t1 for r in self.reset_at.get(node, ()))

    # -- collectors -----------------------------------------------------------------------

    def thermal_rows(self, t_start: float, t_end: float, every_s: float) -> None:
        """dcgm-exporter: integer temperatures, power, SM clock, reason bits, every ``every_s``."""
        for (node, idx), gpu in sorted(self.gpus.items()):
            phase = self.rng.uniform(0.0, every_s)
            temp = None
            t = t_start + phase
            while t < t_end:
                if self.is_dark(node, t):
                    temp, t = None, t + every_s
                    continue
                u = gpu.share(t)
                f = gpu.clock(t)
                bits = gpu.throttle(t)
                demand = IDLE_W + (TDP_W - IDLE_W) * u * f ** 2.2
                limit = gpu.power_limit(t)
                if demand > limit:               # the SW power cap trades clock for watts
                    f *= ((limit - IDLE_W) / (demand - IDLE_W)) ** (1 / 2.2)
                    demand, bits = limit, bits | 0x4
                power = demand * self.rng.uniform(0.985, 1.015)
                steady = self.inlet(node, t) + C_PER_W * power + gpu.heat_c(t)
                temp = steady if temp is None else temp + (steady - temp) * (
                    1 - math.exp(-every_s / 30.0))
                shown = temp
                if gpu.hold_c is not None and bits & 0x20:
                    shown = gpu.hold_c + self.rng.uniform(-0.6, 0.6)
                clock_mhz = BOOST_MHZ * f if u > 0.05 else 345.0
                value = {"ts": round(t, 3), "node": node, "gpu": idx,
                         "gpu_temp_c": int(round(shown)),
                         "mem_temp_c": int(round(shown + 4 + 0.01 * power)),
                         "power_w": round(power, 2),
                         "sm_clock_mhz": float(round(clock_mhz / 15.0) * 15),
                         "throttle": bits if u > 0.05 else 0x1}
                self.emit("telemetry.thermal", value,
                          *[lab for lab, a, b in gpu.labels if a <= t <= b])
                t += every_s

    def ecc_rows(self, t_start: float, t_end: float, every_s: float) -> None:
        for (node, idx), gpu in sorted(self.gpus.items()):
            t = t_start + self.rng.uniform(0.0, every_s)
            last, sbe = t_start, gpu.sbe
            while t < t_end:
                if not self.is_dark(node, t):
                    if self._resets_before(node, last, t):
                        sbe = 0                  # a driver reload clears volatile counters
                    value = {"ts": round(t, 3), "node": node, "gpu": idx,
                             **dict.fromkeys(COUNTERS, 0), "sbe_volatile": sbe,
                             "row_remap_pending": False, "row_remap_failure": False,
                             "xid": None, "recovery_action": "none"}
                    self.emit("telemetry.ecc", value)
                    last = t
                t += every_s

    def nic_rows(self, t_start: float, t_end: float, every_s: float) -> None:
        for (node, nic), port in sorted(self.ports.items()):
            t = t_start + self.rng.uniform(0.0, every_s)
            last = t_start
            while t < t_end:
                if self.is_dark(node, t):
                    t += every_s
                    continue
                if self._resets_before(node, last, t):
                    port.counts = dict.fromkeys(PORT_COUNTERS, 0)
                dt = t - last
                gbps = port.busy_gbps(t) * self.rng.uniform(0.9, 1.1)
                c = port.counts
                c["tx_bytes"] += int(gbps * 1.25e8 * dt)
                c["rx_bytes"] += int(gbps * 1.25e8 * dt * self.rng.uniform(0.97, 1.03))
                c["xmit_wait"] += int(gbps * 40 * dt * self.rng.uniform(0.5, 1.5))
                touched = []
                for a, b, rates, lab in port.errors:
                    overlap = min(b, t) - max(a, last)
                    if overlap > 0:
                        for k, per_s in rates.items():
                            c[k] += int(per_s * overlap * self.rng.uniform(0.7, 1.3)) + (
                                1 if per_s * overlap >= 0.5 else 0)
                        if lab is not None:
                            touched.append(lab)
                value = {"ts": round(t, 3), "node": node, "nic": nic, "port": 1,
                         "link_state": "up", "rate_gbps": port.rate_gbps, **c}
                self.emit("telemetry.nic", value, *touched)
                last = t
                t += every_s
