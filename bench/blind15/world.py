"""blind15's world: H100 samples, the collectors' rows, the log being recorded, labels.

A `Log` holds every record with its arrival time (the order a consumer would read them), the
faults' labels (each spanning the first and last record it changed) and the routine shapes
(`effects`: what pages nobody). Physics a sample: board power from the GPU's busy share of its
step and its clock, SW power cap 0x4 at the 700 W limit, temperature from the inlet and power.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

TDP_W = 700.0
MAX_CLOCK_MHZ = 1980.0


@dataclass(eq=False)
class Fault:
    """A fault's label; `start_ts` / `end_ts` follow the records it changed."""
    fault_id: str
    kind: str
    cause: str
    scope: dict
    attributable: bool
    start_ts: float = math.inf
    end_ts: float = -math.inf

    def touch(self, ts: float) -> None:
        self.start_ts = min(self.start_ts, ts)
        self.end_ts = max(self.end_ts, ts)

    def label(self) -> dict:
        return {"fault_id": self.fault_id, "kind": self.kind, "cause": self.cause,
                "scope": self.scope, "start_ts": round(self.start_ts, 3),
                "end_ts": round(self.end_ts, 3), "attributable": self.attributable}


@dataclass
class Log:
    """Records in arrival order, labels, routine shapes."""
    rng: random.Random
    t0: float
    t1: float
    topology: dict
    records: list = field(default_factory=list)
    faults: list = field(default_factory=list)
    effects: list = field(default_factory=list)

    def emit(self, topic: str, value: dict, arrival: float | None = None) -> None:
        """One record; it arrives 30-600 ms after its `ts` unless told otherwise."""
        if arrival is None:
            arrival = value["ts"] + self.rng.uniform(0.03, 0.6)
        self.records.append((arrival, len(self.records), topic, value))

    def effect(self, name: str, scope: dict, start_ts: float, end_ts: float, **why) -> None:
        self.effects.append({"effect": name, "start_ts": round(start_ts, 3),
                             "end_ts": round(end_ts, 3), "scope": scope, **why})

    def fault(self, *args, **kw) -> Fault:
        f = Fault(*args, **kw)
        self.faults.append(f)
        return f


def power_w(busy: float, clock_ratio: float, rng: random.Random) -> tuple[float, int]:
    """Board power for a busy share (0..1) at a clock ratio, and the SW power cap bit."""
    raw = 88.0 + 660.0 * busy * clock_ratio ** 1.4 + rng.gauss(0.0, 9.0)
    return (TDP_W - rng.uniform(0.0, 6.0), 0x4) if raw > TDP_W else (max(raw, 62.0), 0)


def thermal_row(ts: float, node: str, gpu: int, busy: float, clock_ratio: float,
                inlet_c: float, rng: random.Random, throttle: int = 0,
                temp_add_c: float = 0.0) -> dict:
    """A dcgm-exporter thermal row (integer temperatures, as DCGM reports them)."""
    p, cap = power_w(busy, clock_ratio, rng)
    temp = inlet_c + 8.0 + 0.062 * p + temp_add_c + rng.gauss(0.0, 0.6)
    clock = MAX_CLOCK_MHZ * clock_ratio if busy > 0.05 else 345.0
    return {"ts": round(ts, 3), "node": node, "gpu": gpu, "gpu_temp_c": int(round(temp)),
            "mem_temp_c": int(round(temp + 4.0 + rng.gauss(0.0, 0.5))),
            "power_w": round(p, 2), "sm_clock_mhz": float(round(clock / 15.0) * 15),
            "throttle": (throttle | cap) if busy > 0.05 else 0x1}


def ecc_row(ts: float, node: str, gpu: int) -> dict:
    """An ECC row of a healthy GPU: every counter dcgm-exporter can export, all quiet."""
    return {"ts": round(ts, 3), "node": node, "gpu": gpu, "sbe_volatile": 0, "dbe_volatile": 0,
            "retired_pages_sbe": 0, "retired_pages_dbe": 0, "row_remap_pending": False,
            "row_remap_failure": False, "xid": None, "pcie_replay": 0, "nvlink_crc_errors": 0,
            "nvlink_replay_errors": 0, "nvlink_recovery_errors": 0, "recovery_action": "none"}


@dataclass
class Port:
    """One NIC port's cumulative counters (RoCE on 400 GbE)."""
    node: str
    nic: str
    tx_bytes: int = 0
    rx_bytes: int = 0
    xmit_wait: int = 0
    rcv_errors: int = 0
    out_of_sequence: int = 0
    packet_seq_err: int = 0
    np_cnp_sent: int = 0
    rp_cnp_handled: int = 0

    def advance(self, dt_s: float, gbps: float, rng: random.Random, wait_per_s: float = 40.0,
                seq_err_per_s: float = 0.0, rcv_err_per_s: float = 0.0,
                cnp_per_s: float = 2.0) -> None:
        b = int(gbps * 1e9 / 8 * dt_s * rng.uniform(0.96, 1.04))
        self.tx_bytes += b
        self.rx_bytes += int(b * rng.uniform(0.97, 1.03))
        self.xmit_wait += int(wait_per_s * dt_s * rng.uniform(0.5, 1.5))
        self.rcv_errors += _poisson(rcv_err_per_s * dt_s, rng)
        n_seq = _poisson(seq_err_per_s * dt_s, rng)
        self.packet_seq_err += n_seq
        self.out_of_sequence += n_seq + _poisson(seq_err_per_s * 0.3 * dt_s, rng)
        self.np_cnp_sent += _poisson(cnp_per_s * dt_s, rng)
        self.rp_cnp_handled += _poisson(cnp_per_s * dt_s, rng)

    def row(self, ts: float) -> dict:
        return {"ts": round(ts, 3), "node": self.node, "nic": self.nic, "port": 1,
                "link_state": "up", "rate_gbps": 400.0, "tx_bytes": self.tx_bytes,
                "rx_bytes": self.rx_bytes, "symbol_errors": 0, "link_downed": 0,
                "rcv_errors": self.rcv_errors, "xmit_discards": 0, "xmit_wait": self.xmit_wait,
                "out_of_sequence": self.out_of_sequence, "packet_seq_err": self.packet_seq_err,
                "np_cnp_sent": self.np_cnp_sent, "rp_cnp_handled": self.rp_cnp_handled}


def _poisson(lam: float, rng: random.Random) -> int:
    if lam <= 0.0:
        return 0
    if lam > 30.0:
        return max(0, int(round(rng.gauss(lam, math.sqrt(lam)))))
    k, p, limit = 0, rng.random(), math.exp(-lam)
    while p > limit:
        k += 1
        p *= rng.random()
    return k
