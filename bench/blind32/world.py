"""The hardware and the recorder for blind32: H100 nodes, DCGM and IB rows, arrival order.

A node's GPUs draw power by what they do, interval by interval: the story lays **segments**
on a node (a training step: its compute share at 560-640 W, its wait at ~260 W, its time in
neither at ~120 W; a burn-in at the board's 700 W; nothing: idle ~75 W). A DCGM thermal row
(every 10 s) reads the mean power of its interval; the die goes to ``inlet + R x power`` with
a 25 s lag; the SM clock runs 1980 MHz under load, 345 MHz idle, and gives up the square root
of any demand above 700 W with ``0x4`` (SW power cap -- routine at the limit). ECC rows every
30 s (static small SBE and PCIe replay counts, as real boards have), XID events as rows of
their own. IB ports (one a GPU, ``mlx5_0..7`` port 1, 400 Gb/s) every 10 s: bytes from the
segments' traffic, ``xmit_wait`` with the fabric's congestion. Faults and routine shapes touch
rows through **hooks** ``hook(kind, node, gpu_or_nic, ts, row) -> row | None`` (``None``
drops the row: a GPU fallen off the bus reports nothing).

``Log`` keeps DESIGN's delivery: arrival 30-400 ms after ``ts``, 0.4 % 0.5-2.5 s late, 0.1 %
twice; the topology first, labels last; ``effects`` (routine shapes, "pages nobody") beside.
"""

from __future__ import annotations

import bisect
import gzip
import json
import math
import random
from collections.abc import Callable
from pathlib import Path

THERMAL_S, ECC_S, NIC_S = 10.0, 30.0, 10.0
IDLE_W, WAIT_W, NEITHER_W, CAP_W = 75.0, 260.0, 120.0, 700.0
BOOST_MHZ, IDLE_MHZ = 1980.0, 345.0
GPUS = 8
NICS = tuple(f"mlx5_{k}" for k in range(GPUS))

Hook = Callable[[str, str, object, float, dict], "dict | None"]


class Log:
    """Records in arrival order (DESIGN's disorder and duplicates), labels last."""

    def __init__(self, rng: random.Random, topology: str):
        self._rng = rng
        self._recs: list[tuple[float, int, str, dict]] = []
        self._n = 0
        self.topology = topology
        self.labels: list[dict] = []
        self.effects: list[dict] = []

    def put(self, topic: str, value: dict) -> None:
        r = self._rng.random()
        delay = self._rng.uniform(0.03, 0.4)
        if r < 0.004:
            delay = self._rng.uniform(0.5, 2.5)
        self._add(value["ts"] + delay, topic, value)
        if 0.004 <= r < 0.005:
            self._add(value["ts"] + delay + self._rng.uniform(0.05, 1.5), topic, value)

    def _add(self, arrival: float, topic: str, value: dict) -> None:
        self._n += 1
        self._recs.append((arrival, self._n, topic, value))

    def label(self, fault_id: str, kind: str, cause: str, scope: dict, start_ts: float,
              end_ts: float, attributable: bool) -> None:
        self.labels.append({"fault_id": fault_id, "kind": kind, "cause": cause, "scope": scope,
                            "start_ts": round(start_ts, 3), "end_ts": round(end_ts, 3),
                            "attributable": attributable})

    def effect(self, effect: str, scope: dict, start_ts: float, end_ts: float,
               note: str = "") -> None:
        self.effects.append({"effect": effect, "scope": scope, "start_ts": round(start_ts, 3),
                             "end_ts": round(end_ts, 3), "expect": "pages nobody",
                             "note": note})

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._recs.sort(key=lambda r: (r[0], r[1]))
        with gzip.GzipFile(path, "wb", mtime=0) as raw:
            def line(topic: str, value: dict) -> None:
                raw.write(json.dumps({"topic": topic, "value": value},
                                     separators=(",", ":")).encode() + b"\n")
            line("topology", {"format": "faultline", "text": self.topology})
            for _, _, topic, value in self._recs:
                line(topic, value)
            for lab in self.labels:
                line("labels", lab)
        fx = path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
        fx.write_text(json.dumps(self.effects, indent=1) + "\n")
        return path


class Node:
    """One H100 node's load: segments (t0, t1, power_w, nic_gbps, congestion), sorted."""

    def __init__(self, name: str, rng: random.Random, inlet_c: float):
        self.name = name
        self.inlet_c = inlet_c
        self.r_cw = [rng.uniform(0.068, 0.078) for _ in range(GPUS)]   # die C/W
        self.offset_w = [rng.uniform(-18.0, 18.0) for _ in range(GPUS)]
        self.sbe = [rng.choice((0, 0, 0, 1, 2, 5)) for _ in range(GPUS)]
        self.replay = [rng.choice((0, 0, 1, 3)) for _ in range(GPUS)]
        self._segs: list[tuple[float, float, float, float, float]] = []
        self._sorted = True

    def load(self, t0: float, t1: float, power_w: float, nic_gbps: float = 0.0,
             congestion: float = 0.0) -> None:
        if t1 > t0:
            self._segs.append((t0, t1, power_w, nic_gbps, congestion))
            self._sorted = False

    def mean(self, t0: float, t1: float) -> tuple[float, float, float]:
        """Mean power (W), NIC traffic (Gb/s) and congestion over [t0, t1]; idle in gaps."""
        if not self._sorted:
            self._segs.sort()
            self._starts = [s[0] for s in self._segs]
            self._sorted = True
        span = t1 - t0
        busy = p = g = c = 0.0
        i = max(0, bisect.bisect_left(self._starts, t0) - 64)
        for s0, s1, pw, gb, co in self._segs[i:]:
            if s0 >= t1:
                break
            ov = min(s1, t1) - max(s0, t0)
            if ov > 0:
                busy += ov
                p += ov * pw
                g += ov * gb
                c += ov * co
        p += (span - busy) * IDLE_W
        return p / span, g / span, c / span


def emit_hardware(log: Log, rng: random.Random, nodes: list[Node], t0: float, t1: float,
                  hooks: list[Hook], cluster: str) -> None:
    """Every node's thermal, ECC and NIC rows over [t0, t1], each through the hooks."""
    for node in nodes:
        temp = [node.inlet_c + node.r_cw[g] * IDLE_W for g in range(GPUS)]
        ph = rng.uniform(0, THERMAL_S)
        t = t0 + ph
        while t < t1:
            p, _, _ = node.mean(t - THERMAL_S, t)
            for g in range(GPUS):
                demand = max(IDLE_W * 0.9, p + node.offset_w[g] * (p > 150) + rng.gauss(0, 6))
                power = min(demand, CAP_W)
                throttle = 0x4 if demand > CAP_W else 0
                busy = demand > 150
                clock = BOOST_MHZ * (math.sqrt(CAP_W / demand) if demand > CAP_W else 1.0)
                clock = clock if busy else IDLE_MHZ
                target = node.inlet_c + node.r_cw[g] * power
                temp[g] += (target - temp[g]) * (1 - math.exp(-THERMAL_S / 25.0))
                row = {"ts": round(t + rng.uniform(0, 0.05), 3), "node": node.name, "gpu": g,
                       "gpu_temp_c": round(temp[g] + rng.gauss(0, 0.3), 1),
                       "mem_temp_c": round(temp[g] + 6.0 + rng.gauss(0, 0.3), 1),
                       "power_w": round(power, 1), "sm_clock_mhz": round(clock, 0),
                       "throttle": throttle, "cluster": cluster}
                for h in hooks:
                    row = h("thermal", node.name, g, t, row) if row else None
                if row:
                    temp[g] = row.pop("_temp", temp[g])
                    log.put("telemetry.thermal", row)
            t += THERMAL_S
        t = t0 + rng.uniform(0, ECC_S)
        while t < t1:
            for g in range(GPUS):
                row = {"ts": round(t + rng.uniform(0, 0.05), 3), "node": node.name, "gpu": g,
                       "sbe_volatile": node.sbe[g], "dbe_volatile": 0,
                       "retired_pages_sbe": 0, "retired_pages_dbe": 0,
                       "row_remap_pending": False, "row_remap_failure": False, "xid": None,
                       "pcie_replay": node.replay[g], "nvlink_crc_errors": 0,
                       "nvlink_replay_errors": 0, "nvlink_recovery_errors": 0,
                       "recovery_action": "none", "cluster": cluster}
                for h in hooks:
                    row = h("ecc", node.name, g, t, row) if row else None
                if row:
                    log.put("telemetry.ecc", row)
            t += ECC_S
        tx = [rng.randrange(10**12, 10**13) for _ in NICS]
        rx = list(tx)
        wait = [rng.randrange(10**6, 10**8) for _ in NICS]
        t = t0 + rng.uniform(0, NIC_S)
        while t < t1:
            _, gbps, cong = node.mean(t - NIC_S, t)
            for k, nic in enumerate(NICS):
                moved = int(gbps * NIC_S / 8 * 1e9 * rng.uniform(0.97, 1.03))
                tx[k] += moved
                rx[k] += int(moved * rng.uniform(0.98, 1.02))
                wait[k] += int(cong * NIC_S * 2e6 * rng.uniform(0.5, 1.5)
                               + rng.randrange(0, 2000))
                row = {"ts": round(t + rng.uniform(0, 0.05), 3), "node": node.name, "nic": nic,
                       "port": 1, "link_state": "up", "rate_gbps": 400.0, "tx_bytes": tx[k],
                       "rx_bytes": rx[k], "symbol_errors": 0, "link_downed": 0,
                       "rcv_errors": 0, "xmit_discards": 0, "xmit_wait": wait[k],
                       "cluster": cluster}
                for h in hooks:
                    row = h("nic", node.name, nic, t, row) if row else None
                if row:
                    log.put("telemetry.nic", row)
            t += NIC_S


def xid(log: Log, node: str, gpu: int, ts: float, code: int, cluster: str) -> None:
    """An XID event: a row of its own (DESIGN: one sample, no counters)."""
    del cluster  # DESIGN's XID event row: ts, node, gpu, xid and nothing else
    log.put("telemetry.ecc", {"ts": round(ts, 3), "node": node, "gpu": gpu, "xid": code})
