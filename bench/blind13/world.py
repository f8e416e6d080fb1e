"""The fleets (HGX H100 nodes), their topology, and the collectors that sample them.

A collector reads a per-GPU / per-port *state* the story fills in (busy intervals, fault
overlays) and writes DESIGN's records: dcgm-exporter thermal every 10 s (integer
temperatures), ECC every 30 s with every counter and `recovery_action`, XIDs from the kernel
log as their own records at their time, InfiniBand counters every 10 s (node_exporter).
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field

NODES = [f"lk-{i:02d}" for i in range(1, 18)]
NICS = [f"mlx5_{k}" for k in range(8)]
GPUS = 8
LEAVES = {"leaf-1": NODES[0:4], "leaf-2": NODES[4:8], "leaf-3": NODES[8:12],
          "leaf-4": NODES[12:17]}
TDP_W = 700.0
MAX_CLOCK_MHZ = 1980.0


GROW_NODES = [f"gr-{i:02d}" for i in range(1, 9)]
GROW_LEAVES = {"leaf-a": GROW_NODES[0:4], "leaf-b": GROW_NODES[4:8]}


def topology_text(name: str = "lake", leaves: dict = LEAVES) -> str:
    every = [n for nodes in leaves.values() for n in nodes]
    pre = every[0][:3]
    lines = [f"Topology={name} Version=1",
             f"NodeSet={pre}[{every[0][3:]}-{every[-1][3:]}] Gpus=8 Nics=mlx5_[0-7]"]
    for i, (leaf, nodes) in enumerate(leaves.items(), 1):
        hosts = f"{pre}[{nodes[0][3:]}-{nodes[-1][3:]}]"
        lines.append(f"Rack=rack-{i} Nodes={hosts}")
        lines.append(f"SwitchName={leaf} Nodes={hosts}")
    lines.append(f"SwitchName=spine-[1-2] Switches={','.join(leaves)}")
    return "\n".join(lines) + "\n"


def partition_of(node: str) -> int:
    """The Kafka partition a node's node-keyed records land in (4 partitions)."""
    return (int(node[3:]) - 1) % 4


@dataclass
class Intervals:
    """Sorted, disjoint [t0, t1) spans (when a GPU is busy with a job)."""

    spans: list = field(default_factory=list)

    def add(self, t0: float, t1: float) -> None:
        self.spans.append((t0, t1))

    def covers(self, t: float) -> bool:
        i = bisect.bisect_right(self.spans, (t, float("inf"))) - 1
        return i >= 0 and self.spans[i][0] <= t < self.spans[i][1]


@dataclass
class GpuState:
    busy: Intervals = field(default_factory=Intervals)
    spin: Intervals = field(default_factory=Intervals)   # blocked in NCCL, a kernel spinning
    load_w: float = 560.0                  # board power when its job computes
    # overlays a story sets: t -> (temp_add_c, clock_mhz or None, throttle bits)
    thermal_overlay: object = None
    sbe_rate: object = None                # t -> corrected errors per second
    events: list = field(default_factory=list)   # (ts, field, value): dbe, remap, recovery


@dataclass
class PortState:
    busy: Intervals = field(default_factory=Intervals)
    gbytes_s: float = 14.0
    flaps: list = field(default_factory=list)    # (t_down, down_s, symbol_errors)
    base_symbol_rate: float = 0.0


def thermal_rows(node: str, gpu: int, st: GpuState, t0: float, t1: float, rng: random.Random,
                 touch) -> list[tuple[str, dict]]:
    out = []
    ts = t0 + rng.uniform(0.0, 10.0)
    amb = rng.uniform(24.0, 29.0)
    while ts < t1:
        busy, spin = st.busy.covers(ts), st.spin.covers(ts)
        power = (st.load_w * rng.uniform(0.93, 1.05) if busy
                 else rng.uniform(150.0, 200.0) if spin else rng.uniform(62.0, 78.0))
        temp = amb + 8.0 + power * 0.052 + rng.gauss(0.0, 0.7)
        clock, throttle = (MAX_CLOCK_MHZ, 0) if busy or spin else (345.0, 1)
        if busy and power >= TDP_W * 0.99:
            throttle, clock = 0x4, MAX_CLOCK_MHZ - rng.uniform(15.0, 60.0)
        if st.thermal_overlay is not None:
            ov = st.thermal_overlay(ts, busy)
            if ov is not None:
                add_c, oclock, bits = ov
                temp += add_c
                if oclock is not None:
                    clock, power = oclock, power * oclock / MAX_CLOCK_MHZ
                throttle |= bits
                touch(ts)
        out.append(("telemetry.thermal", {
            "ts": round(ts, 3), "node": node, "gpu": gpu, "gpu_temp_c": int(round(temp)),
            "mem_temp_c": int(round(temp + 6.0 + rng.gauss(0.0, 0.8))),
            "power_w": round(power, 1), "sm_clock_mhz": round(clock), "throttle": throttle}))
        ts += 10.0 + rng.uniform(-0.05, 0.05)
    return out


def ecc_rows(node: str, gpu: int, st: GpuState, t0: float, t1: float, rng: random.Random,
             touch) -> list[tuple[str, dict]]:
    """ECC every 30 s; the XIDs of st.events as their own records at their time."""
    out = []
    base_pcie = rng.randrange(0, 4)
    sbe, acc, dbe, pending, action = 0, 0.0, 0, False, "none"
    evs = sorted(e for e in st.events)
    xids = [(ts, v) for ts, k, v in evs if k == "xid"]
    for ts, code in xids:
        if t0 <= ts < t1:
            out.append(("telemetry.ecc", {"ts": round(ts, 3), "node": node, "gpu": gpu,
                                          "xid": code}))
    ts, last = t0 + rng.uniform(0.0, 30.0), t0
    while ts < t1:
        if st.sbe_rate is not None:
            # integrate the corrected-error rate over the poll interval (midpoint rule)
            acc += st.sbe_rate((ts + last) / 2.0) * (ts - last)
            new = int(acc)
            acc -= new
            sbe += new
        for ets, k, v in evs:
            if last <= ets < ts:
                if k == "dbe":
                    dbe += v
                elif k == "remap_pending":
                    pending = v
                elif k == "recovery_action":
                    action = v
        if sbe or dbe or pending:
            touch(ts)
        out.append(("telemetry.ecc", {
            "ts": round(ts, 3), "node": node, "gpu": gpu, "sbe_volatile": sbe,
            "dbe_volatile": dbe, "retired_pages_sbe": 0, "retired_pages_dbe": 0,
            "row_remap_pending": pending, "row_remap_failure": False, "xid": None,
            "pcie_replay": base_pcie, "nvlink_crc_errors": 0, "nvlink_replay_errors": 0,
            "nvlink_recovery_errors": 0, "recovery_action": action}))
        last = ts
        ts += 30.0 + rng.uniform(-0.1, 0.1)
    return out


def nic_rows(node: str, nic: str, st: PortState, t0: float, t1: float, rng: random.Random,
             touch) -> list[tuple[str, dict]]:
    out = []
    tx = rx = rng.randrange(10**12, 10**13)
    sym = rng.randrange(0, 5)
    downed, rcv, wait = rng.randrange(0, 2), 0, rng.randrange(10**6, 10**7)
    sym_acc = 0.0
    ts, last = t0 + rng.uniform(0.0, 10.0), t0
    while ts < t1:
        dt = ts - last
        moved = dt * 0.5 * (1 if st.busy.covers(ts) else 0.004) * st.gbytes_s * 1e9
        tx += int(moved * rng.uniform(0.95, 1.05))
        rx += int(moved * rng.uniform(0.95, 1.05))
        wait += int(dt * rng.uniform(2e4, 6e4) * (1 if st.busy.covers(ts) else 0.01))
        sym_acc += st.base_symbol_rate * dt
        sym += int(sym_acc)
        sym_acc -= int(sym_acc)
        state, changed = "up", False
        for t_down, down_s, errs in st.flaps:
            if last <= t_down - 2.0 < ts:          # the burst before the drop
                sym, rcv, changed = sym + errs, rcv + errs // 25, True
            if last <= t_down < ts:
                downed, changed = downed + 1, True
            if t_down <= ts < t_down + down_s:
                state, changed = "down", True
        if changed:
            touch(ts)
        out.append(("telemetry.nic", {
            "ts": round(ts, 3), "node": node, "nic": nic, "port": 1, "link_state": state,
            "rate_gbps": 400.0, "tx_bytes": tx, "rx_bytes": rx, "symbol_errors": sym,
            "link_downed": downed, "rcv_errors": rcv, "xmit_discards": 0, "xmit_wait": wait}))
        last = ts
        ts += 10.0 + rng.uniform(-0.05, 0.05)
    return out
