"""A rack-scale NVLink world: NVL72-class racks of 18 compute trays (4 GPUs each) that share one
NVLink domain and one coolant loop (CDU), the DCGM / port collectors, and the log writer.

A GPU's temperature is its rack's coolant supply, plus its share of busy time times its own rise,
plus its tray's height in the rack (warm coolant collects at the top of the manifold). Past 86 C
the board's firmware clocks it down (0x20), past 94 C the hardware does (0x40); the clock it is
left with (60 MHz a degree past 86 C, 200 less under 0x40) is what a rank's compute feels,
``(BOOST / clock) ** 0.9``.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

BOOST_MHZ, IDLE_MHZ, TDP_W, IDLE_W = 1965.0, 690.0, 1200.0, 170.0
SW_THERMAL_C, HW_THERMAL_C = 87.0, 94.0
THERMAL_S, NIC_S, ECC_S = 10.0, 10.0, 30.0
NICS = 4


@dataclass
class Fault:
    """One labelled fault: what DESIGN's label says, and the records it changed (its span)."""
    fault_id: str
    kind: str
    cause: str
    scope: dict
    attributable: bool
    first: float = float("inf")
    last: float = float("-inf")

    def touch(self, ts: float) -> None:
        self.first, self.last = min(self.first, ts), max(self.last, ts)

    def label(self) -> dict:
        return {"fault_id": self.fault_id, "kind": self.kind, "cause": self.cause,
                "scope": self.scope, "start_ts": round(self.first, 3),
                "end_ts": round(self.last, 3), "attributable": self.attributable}


@dataclass
class Effect:
    """A routine shape that should page nobody."""
    effect: str
    scope: dict
    start_ts: float
    end_ts: float
    why: str

    def row(self) -> dict:
        return {"effect": self.effect, "scope": self.scope, "start_ts": round(self.start_ts, 3),
                "end_ts": round(self.end_ts, 3), "expect": "pages nobody", "why": self.why}


@dataclass
class Heat:
    """Extra heat on some GPUs: ``extra_c(node, gpu, t)`` in C, and the fault it belongs to."""
    extra_c: Callable[[str, int, float], float]
    fault: Fault | None = None


@dataclass
class Rack:
    name: str            # the NVLink domain's name (the rack is the domain)
    trays: list[str]
    supply_c: float      # coolant supply in normal operation


@dataclass
class World:
    """The racks, what runs on each GPU when, the extra heat, and the log being written."""
    rng: random.Random
    t0: float
    t1: float
    racks: list[Rack]
    cluster: str
    busy: dict = field(default_factory=dict)          # node -> [(t_from, t_to, share)]
    heats: list[Heat] = field(default_factory=list)
    supply_rise: dict = field(default_factory=dict)   # rack -> (fault, t_on, ramp_s, rise_c)
    power_floor: dict = field(default_factory=dict)   # rack -> floor share of TDP
    powered_off: dict = field(default_factory=dict)   # node -> t it was powered off
    nvlink: dict = field(default_factory=dict)  # (node, gpu) -> [(t_on, crc/s, rep/s, fault)]
    records: list = field(default_factory=list)
    effects: list = field(default_factory=list)
    faults: list = field(default_factory=list)
    _gpu_off: dict = field(default_factory=dict)

    # -- the physical state -------------------------------------------------------------------
    def rack_of(self, node: str) -> Rack:
        return next(r for r in self.racks if node in r.trays)

    def height(self, node: str) -> float:
        """0 at the bottom tray, 1 at the top one."""
        r = self.rack_of(node)
        return r.trays.index(node) / (len(r.trays) - 1)

    def offset_c(self, node: str, gpu: int) -> float:
        key = (node, gpu)
        if key not in self._gpu_off:
            self._gpu_off[key] = random.Random(f"{self.cluster}/{node}/{gpu}").uniform(-2.5, 2.5)
        return self._gpu_off[key]

    def busy_share(self, node: str, t: float) -> float:
        for a, b, share in self.busy.get(node, ()):
            if a <= t < b:
                return share
        return 0.0

    def supply(self, node: str, t: float) -> tuple[float, Fault | None]:
        rack = self.rack_of(node)
        base = rack.supply_c
        if rack.name in self.supply_rise:
            fault, t_on, ramp_s, rise = self.supply_rise[rack.name]
            if t >= t_on:
                # flow lost: the supply climbs, and the top of the manifold gets the worst of it
                share = min(1.0, (t - t_on) / ramp_s)
                return base + rise * share * (0.75 + 0.5 * self.height(node)), fault
        return base, None

    def thermal_state(self, node: str, gpu: int, t: float) -> tuple[float, float, int, list]:
        """(gpu_temp_c, sm_clock_mhz, throttle, faults that moved it) at ``t``."""
        supply, fault = self.supply(node, t)
        moved = [fault] if fault else []
        busy = self.busy_share(node, t)
        raw = supply + busy * 33.0 + 3.0 * self.height(node) + self.offset_c(node, gpu)
        for h in self.heats:
            x = h.extra_c(node, gpu, t)
            if x > 0:
                raw += x
                if h.fault:
                    moved.append(h.fault)
        temp = raw if raw <= 86.0 else 86.0 + (raw - 86.0) * 0.45
        if busy <= 0:
            return temp, IDLE_MHZ, 0, moved
        clock, reason = BOOST_MHZ, 0
        if temp >= SW_THERMAL_C:
            clock, reason = BOOST_MHZ - 60.0 * (temp - 86.0), 0x20
        if temp >= HW_THERMAL_C:
            clock, reason = clock - 200.0, 0x20 | 0x40
        return temp, max(clock, 1100.0), reason, moved

    def slow_factor(self, node: str, gpu: int, t: float) -> tuple[float, list]:
        """What the GPU's clock does to its compute at ``t``."""
        _, clock, reason, moved = self.thermal_state(node, gpu, t)
        if not reason:
            return 1.0, []
        return (BOOST_MHZ / clock) ** 0.9, moved

    # -- records ------------------------------------------------------------------------------
    def emit(self, topic: str, value: dict) -> None:
        """One record, with the delivery it gets: 40-350 ms after ``ts``, 0.3 % of them
        0.6-3 s late, 0.1 % sent twice."""
        r = self.rng.random()
        lag = self.rng.uniform(0.6, 3.0) if r < 0.003 else self.rng.uniform(0.04, 0.35)
        self.records.append((value["ts"] + lag, len(self.records), topic, value))
        if self.rng.random() < 0.001:
            self.records.append((value["ts"] + lag + self.rng.uniform(0.05, 1.5),
                                 len(self.records), topic, value))

    def collect(self) -> None:
        """The thermal, port and ECC collectors of every tray until it is powered off."""
        for rack in self.racks:
            for node in rack.trays:
                self._thermal(node)
                self._ports(node)
                self._ecc(node)

    def _times(self, node: str, every: float, salt: str) -> list[float]:
        phase = random.Random(f"{node}/{salt}").uniform(0, every)
        end = min(self.t1, self.powered_off.get(node, self.t1))
        out, t = [], self.t0 + phase
        while t < end:
            out.append(t)
            t += every
        return out

    def _thermal(self, node: str) -> None:
        floor = self.power_floor.get(self.rack_of(node).name, 0.0)
        for t in self._times(node, THERMAL_S, "thermal"):
            for gpu in range(4):
                temp, clock, reason, moved = self.thermal_state(node, gpu, t)
                busy = self.busy_share(node, t)
                power = IDLE_W + (TDP_W - IDLE_W) * busy * (clock / BOOST_MHZ) ** 1.5
                power = max(power, floor * TDP_W) + self.rng.gauss(0, 12.0)
                clk = clock + (self.rng.choice((-15, 0, 0, 15)) if busy else 0)
                self.emit("telemetry.thermal", {
                    "ts": round(t, 3), "node": node, "gpu": gpu,
                    "gpu_temp_c": round(temp + self.rng.gauss(0, 0.4)),
                    "mem_temp_c": round(temp + 4.0 + self.rng.gauss(0, 0.4)),
                    "power_w": round(power, 1), "sm_clock_mhz": float(round(clk)),
                    "throttle": reason})
                for f in moved:
                    f.touch(t)

    def _ports(self, node: str) -> None:
        tx = [self.rng.randrange(10**12, 10**13) for _ in range(NICS)]
        for t in self._times(node, NIC_S, "nic"):
            busy = self.busy_share(node, t)
            for k in range(NICS):
                tx[k] += int(busy * self.rng.uniform(8e9, 11e9) * NIC_S) + self.rng.randrange(
                    10**5, 10**6)
                self.emit("telemetry.nic", {
                    "ts": round(t, 3), "node": node, "nic": f"mlx5_{k}", "port": 1,
                    "link_state": "up", "rate_gbps": 400.0, "tx_bytes": tx[k],
                    "rx_bytes": tx[k] - self.rng.randrange(0, 10**6), "symbol_errors": 0,
                    "link_downed": 0, "rcv_errors": 0, "xmit_discards": 0, "xmit_wait": 0,
                    "out_of_sequence": 0, "packet_seq_err": 0, "np_cnp_sent": 0,
                    "rp_cnp_handled": 0})

    def _ecc(self, node: str) -> None:
        crc, rep = [0] * 4, [0] * 4
        last = None
        for t in self._times(node, ECC_S, "ecc"):
            for gpu in range(4):
                for t_on, crc_s, rep_s, fault in self.nvlink.get((node, gpu), ()):
                    if t >= t_on:
                        dt = t - max(t_on, last if last is not None else t_on)
                        crc[gpu] += int(crc_s * dt * self.rng.uniform(0.6, 1.4))
                        rep[gpu] += int(rep_s * dt * self.rng.uniform(0.5, 1.5))
                        fault.touch(t)
                self.emit("telemetry.ecc", {
                    "ts": round(t, 3), "node": node, "gpu": gpu, "sbe_volatile": 0,
                    "dbe_volatile": 0, "retired_pages_sbe": 0, "retired_pages_dbe": 0,
                    "row_remap_pending": False, "row_remap_failure": False, "pcie_replay": 0,
                    "nvlink_crc_errors": crc[gpu], "nvlink_replay_errors": rep[gpu],
                    "nvlink_recovery_errors": 0, "recovery_action": "none"})
            last = t

    def xid(self, ts: float, node: str, gpu: int, code: int, fault: Fault) -> None:
        """An XID event: its own record, nothing else on it (DESIGN)."""
        self.emit("telemetry.ecc", {"ts": round(ts, 3), "node": node, "gpu": gpu, "xid": code})
        fault.touch(ts)

    # -- the file -----------------------------------------------------------------------------
    def topology(self, name: str) -> str:
        trays = ",".join(f"{r.trays[0][:-2]}[01-{len(r.trays):02d}]" for r in self.racks)
        lines = [f"Topology={name} Version=1",
                 f"NodeSet={trays} Gpus=4 Nics=mlx5_[0-{NICS - 1}]"]
        for r in self.racks:
            hosts = f"{r.trays[0][:-2]}[01-{len(r.trays):02d}]"
            lines += [f"Rack=rack-{r.name} Nodes={hosts}", f"Domain={r.name} Nodes={hosts}",
                      f"SwitchName=leaf-{r.name} Nodes={hosts}"]
        lines.append(f"SwitchName=spine-{name} Switches=" + ",".join(
            f"leaf-{r.name}" for r in self.racks))
        return "\n".join(lines) + "\n"

    def write(self, path: Path, topo_name: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.records.sort(key=lambda r: (r[0], r[1]))
        with gzip.GzipFile(path, "wb", mtime=0) as fh:
            def put(topic: str, value: dict) -> None:
                fh.write(json.dumps({"topic": topic, "value": value},
                                    separators=(",", ":")).encode() + b"\n")
            put("topology", {"format": "faultline", "text": self.topology(topo_name)})
            for _, _, topic, value in self.records:
                put(topic, value)
            for f in self.faults:
                put("labels", f.label())
        fx = path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
        fx.write_text(json.dumps([e.row() for e in self.effects], indent=1))
        return path
