"""blind36's world: what each GPU is doing over time, the collectors that watch it, the log.

RL post-training makes a GPU's life a sequence of phases -- prefill, decode, train, weight sync,
idle -- each with its own power and its own memory traffic. A job appends those phases to each
GPU's ``Gpu`` as it simulates; the collectors then sample them:

- thermal every 10 s: die and HBM temperatures relax toward each phase's steady value (die
  tau 15 s, HBM 30 s: HBM has more mass), power at the phase's draw (0x4 at the 700 W board limit
  now and then, routine), the clock the phase leaves, and whatever reason a phase carries;
- ECC every 30 s (cumulative DCGM counters), XIDs as four-field events of their own;
- each node's eight NDR ports every 10 s: bytes from the traffic bursts jobs register (weight
  syncs, gradient all-reduces), congestion with them, errors a fault adds per burst.

The ``Log`` keeps records by arrival: 40-350 ms after ``ts``, 0.3 % 0.6-3 s late, 0.1 % twice;
the topology first, labels last (compact, one a line), the routine shapes in a side file.
"""

from __future__ import annotations

import bisect
import gzip
import io
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

THERMAL_S, ECC_S, NIC_S = 10.0, 30.0, 10.0
LIMIT_W = 700.0
DIE_TAU_S, HBM_TAU_S = 15.0, 20.0
IDLE = ("idle", 92.0, 0.08, 1410.0, 0)


def _dump(rec: dict) -> str:
    return json.dumps(rec, separators=(",", ":"))


@dataclass
class Log:
    """A log being built: telemetry by arrival, labels, and the routine shapes."""

    seed: int
    topology: str
    records: list[tuple[float, int, str, dict]] = field(default_factory=list)
    labels: list[dict] = field(default_factory=list)
    effects: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed * 104_729 + 36)

    def add(self, topic: str, value: dict) -> None:
        """One record, arriving late by the collector's usual delay (sometimes twice)."""
        rng = self._rng
        late = 0.6 + 2.4 * rng.random() if rng.random() < 0.003 else 0.04 + 0.31 * rng.random()
        at = value["ts"] + late
        self.records.append((at, len(self.records), topic, value))
        if rng.random() < 0.001:
            self.records.append((at + 0.1 + 0.8 * rng.random(), len(self.records), topic, value))

    def label(self, fault_id: str, kind: str, cause: str, scope: dict, start_ts: float,
              end_ts: float, attributable: bool) -> None:
        """A fault's label -- unless it changed no record of its unit (a log cut short before
        the fault showed): then there is nothing to catch, and no label."""
        if not math.isfinite(start_ts) or end_ts < start_ts:
            return
        self.labels.append({"fault_id": fault_id, "kind": kind, "cause": cause, "scope": scope,
                            "start_ts": round(start_ts, 3), "end_ts": round(end_ts, 3),
                            "attributable": attributable})

    def effect(self, name: str, scope: dict, start_ts: float, end_ts: float) -> None:
        """A routine shape: it pages nobody."""
        self.effects.append({"effect": name, "scope": scope, "start_ts": round(start_ts, 3),
                             "end_ts": round(end_ts, 3), "expect": "pages nobody"})

    def write(self, path: Path) -> Path:
        """The log (gzip, byte-identical per seed) and ``NAME.effects.json`` beside it."""
        path.parent.mkdir(parents=True, exist_ok=True)
        buf = io.StringIO()
        buf.write(_dump({"topic": "topology",
                         "value": {"format": "faultline", "text": self.topology}}) + "\n")
        for _, _, topic, value in sorted(self.records, key=lambda r: (r[0], r[1])):
            buf.write(_dump({"topic": topic, "value": value}) + "\n")
        for lab in self.labels:
            buf.write(_dump({"topic": "labels", "value": lab}) + "\n")
        raw = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
            gz.write(buf.getvalue().encode("utf-8"))
        path.write_bytes(raw.getvalue())
        path.with_name(path.name.replace(".jsonl.gz", ".effects.json")).write_text(
            json.dumps(self.effects, indent=1) + "\n")
        return path


def topology(name: str, prefix: str) -> str:
    """Eight HGX H100 nodes ``PREFIX-01..08``, mlx5_0-7 each; racks of two; two classic leaves
    of four nodes (every NIC of a node faces its leaf) under one spine."""
    return "\n".join([
        f"Topology={name} Version=1",
        f"NodeSet={prefix}-[01-08] Gpus=8 Nics=mlx5_[0-7]",
        f"Rack=rack-[1-4] Nodes={prefix}-[01-08]",
        f"SwitchName={prefix}-leaf[1-2] Nodes={prefix}-[01-08]",
        f"SwitchName={prefix}-spine Switches={prefix}-leaf[1-2]"]) + "\n"


@dataclass
class Phase:
    """What a GPU does from ``t0`` to ``t1``: its draw, its HBM load (0..1), its clock and the
    reason bits it reports; the die and HBM temperatures at ``t0`` (filled in on append)."""

    t0: float
    t1: float
    name: str
    power_w: float
    hbm: float
    clock_mhz: float = 1980.0
    throttle: int = 0
    hbm_cap_c: float | None = None       # a regulated HBM (a thermal slowdown holds it there)
    die0: float = 0.0
    mem0: float = 0.0


@dataclass
class Gpu:
    """One GPU: its own offsets, the phases jobs append, what faults add."""

    node: str
    gpu: int
    offset_c: float
    hbm_extra_c: Callable[[float], float] = lambda t: 0.0   # a cooling fault on the HBM stack
    sbe0: int = 0
    phases: list[Phase] = field(default_factory=list)
    _starts: list[float] = field(default_factory=list)

    def die_inf(self, power_w: float) -> float:
        return 27.0 + self.offset_c + 0.075 * power_w

    def mem_inf(self, hbm: float, t: float) -> float:
        # a bad thermal pad's extra heat grows with the stack's power: felt at decode's
        # sustained HBM bandwidth (hbm 1.0), hardly in training's bursts (0.75)
        return 33.0 + self.offset_c + 52.0 * hbm + self.hbm_extra_c(t) * hbm ** 3

    def _state(self, t: float) -> tuple[float, float]:
        """Die and HBM temperatures at ``t``, from the phases so far (idle in the gaps)."""
        i = bisect.bisect_right(self._starts, t) - 1
        if i < 0:
            return self.die_inf(IDLE[1]) + 8.0, self.mem_inf(IDLE[2], t) + 10.0
        p = self.phases[i]
        die_to, mem_to = self.die_inf(p.power_w), self.mem_inf(p.hbm, p.t0)
        if p.hbm_cap_c is not None:
            mem_to = p.hbm_cap_c
        span = min(t, p.t1) - p.t0
        die = die_to + (p.die0 - die_to) * math.exp(-span / DIE_TAU_S)
        mem = mem_to + (p.mem0 - mem_to) * math.exp(-span / HBM_TAU_S)
        if t > p.t1:            # idle since the phase ended
            gap = t - p.t1
            die_i, mem_i = self.die_inf(IDLE[1]), self.mem_inf(IDLE[2], t)
            die = die_i + (die - die_i) * math.exp(-gap / DIE_TAU_S)
            mem = mem_i + (mem - mem_i) * math.exp(-gap / HBM_TAU_S)
        return die, mem

    def run(self, t0: float, t1: float, name: str, power_w: float, hbm: float,
            clock_mhz: float = 1980.0, throttle: int = 0, hbm_cap_c: float | None = None) -> None:
        """Append a phase (in time order; a phase overlapping the last one is cut to start at
        its end)."""
        if self.phases and t0 < self.phases[-1].t1:
            t0 = self.phases[-1].t1
        if t1 <= t0:
            return
        die0, mem0 = self._state(t0)
        self.phases.append(Phase(t0, t1, name, min(power_w, LIMIT_W), hbm, clock_mhz,
                                 throttle, hbm_cap_c, die0, mem0))
        self._starts.append(t0)

    def mem_at(self, t: float) -> float:
        return self._state(t)[1]

    def at(self, t: float) -> tuple[Phase | None, float, float]:
        i = bisect.bisect_right(self._starts, t) - 1
        p = self.phases[i] if i >= 0 and t < self.phases[i].t1 else None
        die, mem = self._state(t)
        return p, die, mem


def thermal_rows(log: Log, rng: random.Random, gpus: list[Gpu], t0: float, t1: float) -> None:
    """Every GPU every 10 s (each node's collector at its own phase)."""
    phase = {n: rng.uniform(0, THERMAL_S) for n in sorted({g.node for g in gpus})}
    for g in gpus:
        t = t0 + phase[g.node]
        while t < t1:
            p, die, mem = g.at(t)
            name, power, _, clock, throttle = (IDLE if p is None else
                                               (p.name, p.power_w, p.hbm, p.clock_mhz,
                                                p.throttle))
            if throttle & 0x4:          # held at a limit below the board's
                power -= rng.uniform(0, 5.0)
            else:
                power += rng.gauss(0, 7.0)
            if power >= LIMIT_W - 10.0:
                power = LIMIT_W - rng.uniform(0, 5.0)
                if rng.random() < 0.6:
                    throttle |= 0x4
                    clock = min(clock, rng.choice((1935.0, 1950.0, 1965.0)))
            if p is None and rng.random() < 0.5:
                clock = rng.choice((345.0, 1410.0, 1755.0))
            log.add("telemetry.thermal", {
                "ts": round(t + rng.uniform(0, 0.04), 3), "node": g.node, "gpu": g.gpu,
                "gpu_temp_c": round(die + rng.gauss(0, 0.4)),
                "mem_temp_c": round(mem + rng.gauss(0, 0.4)),
                "power_w": round(power, 1), "sm_clock_mhz": clock, "throttle": throttle})
            t += THERMAL_S


@dataclass
class Ecc:
    """A GPU's ECC story: an uncorrectable (contained) error at ``dbe_at`` and its XIDs."""

    dbe_at: float | None = None
    xids: list[tuple[float, int]] = field(default_factory=list)


def ecc_rows(log: Log, rng: random.Random, gpus: list[Gpu], faults: dict[tuple, Ecc],
             t0: float, t1: float) -> None:
    """Every GPU every 30 s; XIDs as events of their own."""
    phase = {n: rng.uniform(0, ECC_S) for n in sorted({g.node for g in gpus})}
    for g in gpus:
        f = faults.get((g.node, g.gpu), Ecc())
        t = t0 + phase[g.node]
        while t < t1:
            dbe = int(f.dbe_at is not None and t >= f.dbe_at)
            log.add("telemetry.ecc", {
                "ts": round(t, 3), "node": g.node, "gpu": g.gpu,
                "sbe_volatile": g.sbe0, "dbe_volatile": dbe,
                "retired_pages_sbe": 0, "retired_pages_dbe": 0,
                "row_remap_pending": bool(dbe), "row_remap_failure": False,
                "pcie_replay": 0, "nvlink_crc_errors": 0, "nvlink_replay_errors": 0,
                "nvlink_recovery_errors": 0,
                "recovery_action": "gpu_reset" if dbe else "none"})
            t += ECC_S
        for ts, code in f.xids:
            log.add("telemetry.ecc", {"ts": round(ts, 3), "node": g.node, "gpu": g.gpu,
                                      "xid": code})


@dataclass
class Burst:
    """Traffic on one port: ``bytes_per_s`` from ``t0`` to ``t1``; errors a bad link adds."""

    t0: float
    t1: float
    bytes_per_s: float
    symbol_errors: int = 0
    rcv_errors: int = 0


def nic_rows(log: Log, rng: random.Random, nodes: list[str],
             bursts: dict[tuple[str, int], list[Burst]], t0: float, t1: float) -> None:
    """Each node's eight 400 Gb/s ports every 10 s: bytes from the bursts (and a trickle of
    control traffic), congestion with them, a bad link's errors when its bursts end."""
    for node in nodes:
        t = t0 + rng.uniform(0, NIC_S)
        ports = [{"tx": rng.randrange(10**12, 10**13), "rx": rng.randrange(10**12, 10**13),
                  "wait": rng.randrange(10**6), "cnp": rng.randrange(1000), "sym": 0,
                  "rcv": 0} for _ in range(8)]
        prev = t - NIC_S
        while t < t1:
            for k, p in enumerate(ports):
                moved = 2e6 * NIC_S * rng.uniform(0.5, 1.5)
                for b in bursts.get((node, k), ()):
                    over = min(t, b.t1) - max(prev, b.t0)
                    if over > 0:
                        moved += b.bytes_per_s * over
                    if prev < b.t1 <= t:
                        p["sym"] += b.symbol_errors
                        p["rcv"] += b.rcv_errors
                p["tx"] += int(moved * rng.uniform(0.97, 1.03))
                p["rx"] += int(moved * rng.uniform(0.97, 1.03))
                p["wait"] += int(moved / 2e5 * rng.uniform(0.5, 1.5))
                p["cnp"] += int(moved > 1e10) * rng.randrange(0, 4)
                log.add("telemetry.nic", {
                    "ts": round(t + rng.uniform(0, 0.04), 3), "node": node, "nic": f"mlx5_{k}",
                    "port": 1, "link_state": "up", "rate_gbps": 400.0, "tx_bytes": p["tx"],
                    "rx_bytes": p["rx"], "symbol_errors": p["sym"], "link_downed": 0,
                    "rcv_errors": p["rcv"], "xmit_discards": 0, "xmit_wait": p["wait"],
                    "out_of_sequence": 0, "packet_seq_err": 0, "np_cnp_sent": p["cnp"],
                    "rp_cnp_handled": p["cnp"]})
            prev = t
            t += NIC_S
