"""blind37's world: a log in arrival order, the node collectors (thermal 10 s, ECC 30 s, IB
ports 10 s) and the topology of a story's eight HGX nodes.

Nothing here knows about sharding: ``fsdp.py`` runs the job and hands each GPU its busy share
of every step (what its power draw follows) and each NIC the bytes it moved.
"""

from __future__ import annotations

import bisect
import gzip
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

GPUS = 8
NICS = [f"mlx5_{k}" for k in range(GPUS)]  # GPU k's nearest NIC is mlx5_k
IDLE_W, BUSY_W, LIMIT_W = 92.0, 655.0, 700.0
BOOST_MHZ = 1980.0


@dataclass
class Log:
    """Records with their arrival times; written in arrival order, labels last."""

    rng: random.Random
    topology: str
    recs: list[tuple[float, int, str, dict]] = field(default_factory=list)
    labels: list[dict] = field(default_factory=list)
    effects: list[dict] = field(default_factory=list)

    def add(self, topic: str, value: dict) -> None:
        """One record: arrival 40-350 ms after ts, 0.3 % 0.6-3 s late, 0.1 % twice."""
        r = self.rng.random()
        late = self.rng.uniform(0.6, 3.0) if r < 0.003 else self.rng.uniform(0.04, 0.35)
        self.recs.append((value["ts"] + late, len(self.recs), topic, value))
        if self.rng.random() < 0.001:
            self.recs.append((value["ts"] + late + self.rng.uniform(0.05, 1.5), len(self.recs),
                              topic, value))

    def effect(self, name: str, scope: dict, start: float, end: float) -> None:
        self.effects.append({"effect": name, "scope": scope, "start_ts": round(start, 3),
                             "end_ts": round(end, 3), "expect": "pages nobody"})

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [{"topic": "topology", "value": {"format": "faultline", "text": self.topology}}]
        lines += [{"topic": tp, "value": v} for _, _, tp, v in sorted(self.recs)]
        lines += [{"topic": "labels", "value": lab} for lab in self.labels]
        with gzip.GzipFile(path, "wb", mtime=0) as fh:
            fh.write(b"".join(json.dumps(x, sort_keys=True, separators=(",", ":")).encode()
                               + b"\n" for x in lines))
        path.with_name(path.name.replace(".jsonl.gz", ".effects.json")).write_text(
            json.dumps(self.effects, indent=1, sort_keys=True))
        return path


def topology(name: str, nodes: list[str]) -> str:
    """Eight 8-GPU nodes, 8 NICs each, racks of two, two classic leaves of four, one spine."""
    first, last = nodes[0], nodes[-1]
    prefix = first.rsplit("-", 1)[0]
    lines = [f"Topology={name} Version=1",
             f"NodeSet={prefix}-[{first.rsplit('-', 1)[1]}-{last.rsplit('-', 1)[1]}] Gpus=8 "
             f"Nics=mlx5_[0-7]"]
    for i in range(0, len(nodes), 2):
        lines.append(f"Rack={name}-rack{i // 2 + 1} Nodes={nodes[i]},{nodes[i + 1]}")
    half = len(nodes) // 2
    lines.append(f"SwitchName={name}-leaf1 Nodes={','.join(nodes[:half])}")
    lines.append(f"SwitchName={name}-leaf2 Nodes={','.join(nodes[half:])}")
    lines.append(f"SwitchName={name}-spine1 Switches={name}-leaf[1-2]")
    return "\n".join(lines) + "\n"


class Busy:
    """A GPU's busy share over time (step by step), what its power and heat follow."""

    def __init__(self) -> None:
        self.t: list[float] = []
        self.t_start: list[float] = []
        self.share: list[float] = []

    def add(self, t_start: float, t_end: float, share: float) -> None:
        self.t.append(t_end)
        self.t_start.append(t_start)
        self.share.append(share)

    def at(self, ts: float) -> float:
        """The share of the step running at ``ts`` (0 between a job's runs)."""
        i = bisect.bisect_left(self.t, ts)
        if i >= len(self.share) or self.t_start[i] > ts + 0.5:
            return 0.0
        return self.share[i]


@dataclass
class Gpu:
    """What a GPU's thermal rows say beyond its busy share: a fault's heat and clock."""

    hot_from: float = float("inf")   # a failing fan / pad: runs hot from here
    hot_clock_mhz: float = BOOST_MHZ  # the clock SW thermal slowdown holds it at
    hot_ramp_s: float = 30.0
    first: float = float("inf")       # its first thermal row that the fault changed


def thermal(log: Log, rng: random.Random, node: str, t0: float, t1: float,
            busy: list[Busy], gpus: list[Gpu]) -> None:
    """Thermal rows every 10 s a GPU (integers for temperatures, as DCGM reports them)."""
    phase = rng.uniform(0, 10)
    amb = [rng.uniform(-3, 3) for _ in range(GPUS)]
    t = t0 + phase
    while t < t1:
        for g in range(GPUS):
            share = busy[g].at(t)
            p = IDLE_W + (BUSY_W - IDLE_W) * share + rng.gauss(0, 9)
            temp = 31 + amb[g] + 0.068 * p + rng.gauss(0, 0.6)
            clock, reasons = BOOST_MHZ if share > 0.05 else 345.0, 0
            f = gpus[g]
            if t >= f.hot_from:
                f.first = min(f.first, round(t, 3))
            if t >= f.hot_from and share > 0.05:
                ramp = min(1.0, (t - f.hot_from) / f.hot_ramp_s)
                temp += ramp * 26.0
                if temp >= 87.0:
                    clock, reasons = f.hot_clock_mhz + rng.uniform(-15, 15), 0x20
                    p *= f.hot_clock_mhz / BOOST_MHZ
            if p >= LIMIT_W - 2:
                p, reasons = LIMIT_W, reasons | 0x4
            log.add("telemetry.thermal", {
                "ts": round(t, 3), "node": node, "gpu": g, "gpu_temp_c": int(round(temp)),
                "mem_temp_c": int(round(temp + 4 + rng.gauss(0, 0.5))),
                "power_w": round(p, 1), "sm_clock_mhz": round(clock), "throttle": reasons})
        t += 10.0


def ecc(log: Log, rng: random.Random, node: str, t0: float, t1: float) -> None:
    """ECC rows every 30 s a GPU: clean counters, an SBE trickle on one GPU now and then."""
    phase = rng.uniform(0, 30)
    sbe = [0] * GPUS
    t = t0 + phase
    while t < t1:
        for g in range(GPUS):
            if rng.random() < 0.004:
                sbe[g] += 1
            log.add("telemetry.ecc", {
                "ts": round(t, 3), "node": node, "gpu": g, "sbe_volatile": sbe[g],
                "dbe_volatile": 0, "retired_pages_sbe": 0, "retired_pages_dbe": 0,
                "row_remap_pending": False, "row_remap_failure": False, "pcie_replay": 0,
                "nvlink_crc_errors": 0, "nvlink_replay_errors": 0,
                "nvlink_recovery_errors": 0, "recovery_action": "none"})
        t += 30.0


@dataclass
class Port:
    """One IB port's life: bytes moved at step ends, and what a fault does to its counters."""

    moved: list[tuple[float, int]] = field(default_factory=list)   # (ts, bytes)
    half_rate_from: float = float("inf")        # link retrained at half its lanes
    errs_from: float = float("inf")             # symbol errors, retransmits (a bad cable)
    err_rate: float = 0.0                       # symbol errors a second
    downs: list[tuple[float, float]] = field(default_factory=list)  # (down at, up at)
    first: float = float("inf")                 # its first row that a fault changed


def ports(log: Log, rng: random.Random, node: str, t0: float, t1: float,
          nics: list[Port]) -> None:
    """IB port rows every 10 s a NIC (port 1): cumulative counters."""
    phase = rng.uniform(0, 10)
    tot = [rng.randrange(10**12, 10**13) for _ in nics]
    sym = [0] * len(nics)
    rcv = [0] * len(nics)
    wait = [rng.randrange(10**6, 10**7) for _ in nics]
    downed = [0] * len(nics)
    idx = [0] * len(nics)
    last = t0
    t = t0 + phase
    while t < t1:
        for k, pt in enumerate(nics):
            moved = 0
            while idx[k] < len(pt.moved) and pt.moved[idx[k]][0] <= t:
                moved += pt.moved[idx[k]][1]
                idx[k] += 1
            tot[k] += moved
            wait[k] += int(moved / 4096 * rng.uniform(0.002, 0.006))
            if t >= pt.errs_from:
                sym[k] += int(pt.err_rate * (t - max(last, pt.errs_from)) * rng.uniform(0.5, 1.5))
                rcv[k] += rng.randrange(0, 4)
                wait[k] += int(moved / 4096 * rng.uniform(0.03, 0.06))
            down = False
            for a, b in pt.downs:
                if last < a <= t:
                    downed[k] += 1
                    sym[k] += rng.randrange(20, 400)
                if a <= t < b:
                    down = True
            if t >= min(pt.half_rate_from, pt.errs_from) or any(last < a <= t or a <= t < b
                                                                 for a, b in pt.downs):
                pt.first = min(pt.first, round(t, 3))
            rate = 200.0 if t >= pt.half_rate_from else 400.0
            row = {"ts": round(t, 3), "node": node, "nic": NICS[k], "port": 1,
                   "link_state": "down" if down else "up", "tx_bytes": tot[k],
                   "rx_bytes": tot[k] + k, "symbol_errors": sym[k], "link_downed": downed[k],
                   "rcv_errors": rcv[k], "xmit_discards": 0, "xmit_wait": wait[k]}
            if not down:
                row["rate_gbps"] = rate
            log.add("telemetry.nic", row)
        last = t
        t += 10.0
