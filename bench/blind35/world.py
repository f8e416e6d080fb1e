"""blind35's world: the node collectors (thermal, ECC, InfiniBand ports) and the log they go to.

A GPU's die follows its load with a ~30 s lag (the average load of the last 30 s), its rack's
inlet and its own offset; power follows the load under a 700 W limit (0x4 at the limit, the
clock a little lower: routine). ECC rows are DCGM's cumulative counters, XIDs events of their
own (four fields). Every row of the node collectors carries no ``cluster``/``tenant``.

The ``Log`` keeps records by arrival: 30-400 ms after ``ts``, 0.4 % 0.5-2.5 s late, 0.1 % twice;
the topology first, labels last (compact, one a line), the routine shapes in a side file.
"""

from __future__ import annotations

import bisect
import gzip
import io
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

THERMAL_S, ECC_S, NIC_S = 10.0, 30.0, 10.0
POWER_LIMIT_W = 700.0


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
        self._rng = random.Random(self.seed * 7_919 + 35)

    def add(self, topic: str, value: dict) -> None:
        """One record, arriving late by the collector's usual delay (sometimes twice)."""
        rng = self._rng
        late = 0.5 + 2.0 * rng.random() if rng.random() < 0.004 else 0.03 + 0.37 * rng.random()
        at = value["ts"] + late
        self.records.append((at, len(self.records), topic, value))
        if rng.random() < 0.001:
            self.records.append((at + 0.05 + 0.9 * rng.random(), len(self.records), topic,
                                 value))

    def label(self, fault_id: str, kind: str, cause: str, scope: dict, start_ts: float,
              end_ts: float, attributable: bool) -> None:
        self.labels.append({"fault_id": fault_id, "kind": kind, "cause": cause,
                            "scope": scope, "start_ts": round(start_ts, 3),
                            "end_ts": round(end_ts, 3), "attributable": attributable})

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


def topology(name: str, nodes: list[str]) -> str:
    """A rail-optimized faultline topology: 8 GPUs and mlx5_0-7 a node, racks of two, a rail
    switch per NIC index, two spines."""
    lines = [f"Topology={name} Version=1"]
    lines += [f"NodeSet={n} Gpus=8 Nics=mlx5_[0-7]" for n in nodes]
    for i in range(0, len(nodes), 2):
        lines.append(f"Rack=rack-{i // 2 + 1} Nodes={','.join(nodes[i:i + 2])}")
    for k in range(8):
        lines.append(f"SwitchName=rail{k} Nodes={','.join(nodes)} Nics=mlx5_{k}")
    lines.append("SwitchName=spine[0-1] Switches=rail[0-7]")
    return "\n".join(lines) + "\n"


class Load:
    """A node's GPU load over time: piecewise constant levels (training 1.0, evaluation, a
    save), 0.05 outside them."""

    def __init__(self) -> None:
        self._starts: list[float] = []
        self._segs: list[tuple[float, float, float]] = []

    def add(self, t0: float, t1: float, level: float) -> None:
        i = bisect.bisect(self._starts, t0)
        self._starts.insert(i, t0)
        self._segs.insert(i, (t0, t1, level))

    def at(self, t: float) -> float:
        i = bisect.bisect(self._starts, t) - 1
        while i >= 0:
            t0, t1, level = self._segs[i]
            if t < t1:
                return level
            if t0 < t - 600:
                break
            i -= 1
        return 0.05

    def lagged(self, t: float) -> float:
        """The mean load of the last 30 s (the die's thermal lag)."""
        return sum(self.at(t - d) for d in (0.0, 7.5, 15.0, 22.5, 30.0)) / 5.0


@dataclass
class Gpu:
    node: str
    gpu: int
    offset_c: float                  # its own offset (paste, position in the chassis)
    sbe0: int = 0                    # corrected errors from before the log (static)
    inlet: Callable[[float], float] = lambda t: 0.0    # the rack's inlet above nominal


def die_c(g: Gpu, load: Load, t: float) -> float:
    """The die temperature without sensor noise (what a fault's trigger reads)."""
    return 25.0 + g.offset_c + g.inlet(t) + 45.0 * load.lagged(t)


def thermal_rows(log: Log, rng: random.Random, gpus: list[Gpu], loads: dict[str, Load],
                 t0: float, t1: float) -> None:
    """Every GPU every 10 s (each node's collector at its own phase)."""
    phase = {n: rng.uniform(0, THERMAL_S) for n in sorted({g.node for g in gpus})}
    for g in gpus:
        load = loads[g.node]
        t = t0 + phase[g.node]
        while t < t1:
            now = load.at(t)
            die = die_c(g, load, t) + rng.gauss(0, 0.4)
            power = 85.0 + 590.0 * now + rng.gauss(0, 9.0)
            throttle, clock = 0, 1980.0
            if power >= POWER_LIMIT_W - 8:
                power, throttle = POWER_LIMIT_W - rng.uniform(0, 6), 0x4
                clock = rng.choice((1935.0, 1950.0, 1965.0))
            elif now < 0.5:
                clock = rng.choice((1980.0, 1755.0, 1410.0))
            log.add("telemetry.thermal", {
                "ts": round(t + rng.uniform(0, 0.05), 3), "node": g.node, "gpu": g.gpu,
                "gpu_temp_c": round(die), "mem_temp_c": round(die + 7 + rng.gauss(0, 0.5)),
                "power_w": round(power, 1), "sm_clock_mhz": clock, "throttle": throttle})
            t += THERMAL_S


@dataclass
class Ecc:
    """What a GPU's ECC rows hold at a time: cumulative counters and XID events."""

    sbe: Callable[[float], int] = lambda t: 0
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
                "sbe_volatile": g.sbe0 + f.sbe(t), "dbe_volatile": dbe,
                "retired_pages_sbe": 0, "retired_pages_dbe": 0,
                "row_remap_pending": bool(dbe), "row_remap_failure": False,
                "pcie_replay": 0, "nvlink_crc_errors": 0, "nvlink_replay_errors": 0,
                "nvlink_recovery_errors": 0, "recovery_action": "none"})
            t += ECC_S
        for ts, code in f.xids:
            log.add("telemetry.ecc", {"ts": round(ts, 3), "node": g.node, "gpu": g.gpu,
                                      "xid": code})


def nic_rows(log: Log, rng: random.Random, nodes: list[str], loads: dict[str, Load],
             t0: float, t1: float) -> None:
    """Each node's eight 400 Gb/s ports every 10 s: traffic with the load, a little congestion
    (xmit_wait, CNPs) with it, no errors."""
    for node in nodes:
        load = loads[node]
        t = t0 + rng.uniform(0, NIC_S)
        ports = [{"tx": rng.randrange(10**12, 10**13), "rx": 0, "wait": rng.randrange(10**6),
                  "cnp": rng.randrange(1000)} for _ in range(8)]
        for p in ports:
            p["rx"] = p["tx"] + rng.randrange(10**9)
        while t < t1:
            now = load.at(t)
            for k, p in enumerate(ports):
                rate = 11e9 * now * rng.uniform(0.93, 1.07)
                p["tx"] += int(rate * NIC_S)
                p["rx"] += int(rate * NIC_S * rng.uniform(0.98, 1.02))
                p["wait"] += int(2.5e4 * now * rng.uniform(0.5, 1.5))
                p["cnp"] += int(rng.random() < 0.3 * now) * rng.randrange(1, 4)
                log.add("telemetry.nic", {
                    "ts": round(t + rng.uniform(0, 0.05), 3), "node": node, "nic": f"mlx5_{k}",
                    "port": 1, "link_state": "up", "rate_gbps": 400.0, "tx_bytes": p["tx"],
                    "rx_bytes": p["rx"], "symbol_errors": 0, "link_downed": 0, "rcv_errors": 0,
                    "xmit_discards": 0, "xmit_wait": p["wait"], "out_of_sequence": 0,
                    "packet_seq_err": 0, "np_cnp_sent": p["cnp"], "rp_cnp_handled": p["cnp"]})
            t += NIC_S
