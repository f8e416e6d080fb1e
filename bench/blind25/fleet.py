"""blind25's fleet: boards, each GPU's load / power / clock / temperatures, its DCGM counters, its
node's NIC ports, and the collectors that sample them (dcgm-exporter, node_exporter) with their
own life: a restart's gap and partial first sample, a driver reload's counters back at 0 and its
ports renamed, a batch of rows held back and delivered late.

Everything a record says comes from here; stories.py only decides what happens when.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Board:
    """A GPU generation as DCGM sees it under a training load."""
    name: str
    cap_w: float          # the board's power limit (TDP)
    idle_w: float
    peak_w: float         # draw at full load if nothing capped it
    boost_mhz: float
    idle_mhz: float
    w_per_c: float        # steady-state die temperature rise per watt (heat sink + coolant)
    hbm_over_die_c: float


H100 = Board("H100-SXM5-80GB", 700.0, 72.0, 665.0, 1980.0, 345.0, 0.056, -4.0)
B200 = Board("B200-SXM-180GB", 1000.0, 145.0, 1045.0, 1965.0, 420.0, 0.047, 3.0)

AMBIENT_C = 26.0
DIE_TAU_S, HBM_TAU_S = 18.0, 45.0


@dataclass
class Gpu:
    node: str
    gpu: int
    board: Board
    eff: float                          # this GPU's draw relative to its board's typical
    offset_c: float                     # its seat in the chassis (airflow)
    die_c: float = 30.0
    hbm_c: float = 30.0
    last_ts: float | None = None
    loads: list[tuple[float, float, float]] = field(default_factory=list)  # (from, to, load)
    counters: dict[str, int] = field(default_factory=dict)
    gone_from: float = math.inf         # fell off the bus: DCGM reads nothing after this

    def load_at(self, t: float) -> float:
        for a, b, x in reversed(self.loads):
            if a <= t < b:
                return x
        return 0.0


def new_counters(rng: random.Random) -> dict[str, int]:
    """A GPU's DCGM counters since its driver loaded: mostly zero, a few small histories."""
    return {"sbe_volatile": rng.choice([0, 0, 0, 0, 1, 2, 5]),
            "dbe_volatile": 0, "retired_pages_sbe": rng.choice([0, 0, 0, 1]),
            "retired_pages_dbe": 0, "pcie_replay": rng.choice([0, 0, 0, 1, 3, 12]),
            "nvlink_crc_errors": rng.choice([0, 0, 0, 2, 6]), "nvlink_replay_errors": 0,
            "nvlink_recovery_errors": 0}


def thermal_sample(g: Gpu, ts: float, rng: random.Random, partial: bool = False) -> dict:
    """One dcgm-exporter thermal row at true time ``ts`` (the GPU's state advanced to it)."""
    load = g.load_at(ts)
    b = g.board
    jitter = 1.0 + rng.gauss(0.0, 0.015) if load > 0.05 else 1.0 + rng.gauss(0.0, 0.03)
    want_w = (b.idle_w + (b.peak_w - b.idle_w) * load * g.eff) * jitter
    throttle = 0
    if load < 0.05:
        clock, throttle = b.idle_mhz, 0x1
    else:
        clock = b.boost_mhz - 15.0 * rng.choice([0, 0, 0, 1])
    power = want_w
    if want_w >= b.cap_w * 0.995:
        power = b.cap_w * (1.0 - rng.uniform(0.0, 0.006))
        clock = min(clock, b.boost_mhz * (b.cap_w / want_w) ** 1.3)
        throttle |= 0x4
    clock = 15.0 * round(clock / 15.0)
    die_target = AMBIENT_C + g.offset_c + b.w_per_c * power
    hbm_target = die_target + b.hbm_over_die_c
    dt = 30.0 if g.last_ts is None else max(0.0, ts - g.last_ts)
    if g.last_ts is None:
        g.die_c, g.hbm_c = die_target, hbm_target
    g.die_c += (die_target - g.die_c) * (1.0 - math.exp(-dt / DIE_TAU_S))
    g.hbm_c += (hbm_target - g.hbm_c) * (1.0 - math.exp(-dt / HBM_TAU_S))
    g.last_ts = ts
    row = {"ts": round(ts, 3), "node": g.node, "gpu": g.gpu,
           "gpu_temp_c": int(round(g.die_c + rng.gauss(0, 0.4))),
           "mem_temp_c": int(round(g.hbm_c + rng.gauss(0, 0.4)))}
    if partial:     # the first scrape after a restart: the slow fields not yet watched
        row.update(power_w=None, sm_clock_mhz=None, throttle=None)
    else:
        row.update(power_w=round(power, 3), sm_clock_mhz=clock, throttle=throttle)
    return row


def ecc_sample(g: Gpu, ts: float, partial: bool = False) -> dict:
    """One DCGM counter row: cumulative since the driver loaded (null on a partial scrape)."""
    row: dict = {"ts": round(ts, 3), "node": g.node, "gpu": g.gpu}
    for k, v in g.counters.items():
        row[k] = None if partial else v
    row["row_remap_pending"] = None if partial else False
    row["row_remap_failure"] = None if partial else False
    row["recovery_action"] = None if partial else "none"
    return row


def xid_event(node: str, gpu: int, ts: float, xid: int) -> dict:
    """An XID event: its own message, no counters (DESIGN)."""
    return {"ts": round(ts, 3), "node": node, "gpu": gpu, "xid": xid}


@dataclass
class Port:
    """One HCA port as node_exporter's infiniband collector reads it from sysfs."""
    node: str
    nic: str
    rate_gbps: float = 400.0
    tx_bytes: int = 0
    rx_bytes: int = 0
    symbol_errors: int = 0
    link_downed: int = 0
    rcv_errors: int = 0
    xmit_discards: int = 0
    xmit_wait: int = 0
    last_ts: float | None = None

    def advance(self, ts: float, util: float, rng: random.Random) -> None:
        dt = 0.0 if self.last_ts is None else max(0.0, ts - self.last_ts)
        self.last_ts = ts
        if util <= 0:
            util = 0.0005           # management traffic
        moved = self.rate_gbps * 1e9 / 8.0 * util * dt
        self.tx_bytes += int(moved * rng.uniform(0.97, 1.03))
        self.rx_bytes += int(moved * rng.uniform(0.97, 1.03))
        self.xmit_wait += int(dt * util * rng.uniform(2e4, 6e4))

    def reset(self) -> None:
        """A driver reload: the port's counters start again from 0."""
        for k in ("tx_bytes", "rx_bytes", "symbol_errors", "link_downed", "rcv_errors",
                  "xmit_discards", "xmit_wait"):
            setattr(self, k, 0)

    def sample(self, ts: float, name: str | None = None) -> dict:
        return {"ts": round(ts, 3), "node": self.node, "nic": name or self.nic, "port": 1,
                "link_state": "up", "rate_gbps": self.rate_gbps, "tx_bytes": self.tx_bytes,
                "rx_bytes": self.rx_bytes, "symbol_errors": self.symbol_errors,
                "link_downed": self.link_downed, "rcv_errors": self.rcv_errors,
                "xmit_discards": self.xmit_discards, "xmit_wait": self.xmit_wait}


@dataclass
class Node:
    name: str
    gpus: list[Gpu]
    ports: list[Port]
    phase_s: float                      # the collectors' poll phase on this host
    # the collectors' life: [(from, to)] without scrapes, partial scrape right after
    dcgm_gaps: list[tuple[float, float]] = field(default_factory=list)
    gpu_reload: list[tuple[float, float]] = field(default_factory=list)   # counters to 0
    nic_reload: list[tuple[float, float, dict[str, str]]] = field(default_factory=list)
    late: list[tuple[float, float, float]] = field(default_factory=list)  # (from, to, release)
    nic_util: list[tuple[float, float, float]] = field(default_factory=list)

    def util_at(self, t: float) -> float:
        for a, b, x in reversed(self.nic_util):
            if a <= t < b:
                return x
        return 0.0


def make_node(name: str, board: Board, nics: list[str], rng: random.Random,
              interval_s: float) -> Node:
    gpus = [Gpu(name, i, board, rng.uniform(0.95, 1.04), rng.uniform(-2.0, 3.0),
                counters=new_counters(rng)) for i in range(8)]
    ports = [Port(name, n) for n in nics]
    return Node(name, gpus, ports, rng.uniform(0.0, interval_s))
