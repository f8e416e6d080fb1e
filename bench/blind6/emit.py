"""Collector samples of a blind6 node: DCGM thermal and ECC per GPU, InfiniBand port counters.

Faults see every sample before it is kept (`Fault.thermal/ecc/nic`): they may change it
(their label then spans it) or drop it (a GPU the driver cannot reach has no sample).
Counters are cumulative since boot; volatile ECC counters since the last driver load.
"""

from __future__ import annotations

import math
import random

from bench.blind6.fleet import Node, physics, sample_times


def _keep(faults: list, hook: str, args: tuple, v: dict) -> bool:
    for f in faults:
        r = getattr(f, hook)(*args, v)
        if r == "drop":
            return False
        if r:
            f.touch(v["ts"])
    return True


def thermal(node: Node, t_end: float, faults: list, rng: random.Random, out: list,
            ints: bool) -> None:
    for gpu in range(node.ngpu):
        temp = None
        for t in sample_times(node, node.thermal_s, t_end, rng):
            util = node.util(gpu, t)
            power, clock, thr = physics(node, gpu, util, rng)
            target = node.inlet_c + node.sensor_c[gpu] + node.model.c_per_w * power
            if temp is None:
                temp = target
            temp += (target - temp) * (1.0 - math.exp(-node.thermal_s / node.model.tau_s))
            v = {"ts": round(node.clock(t), 3), "node": node.name, "gpu": gpu,
                 "gpu_temp_c": temp + rng.gauss(0, 0.3),
                 "mem_temp_c": temp + 5.5 + rng.gauss(0, 0.3),
                 "power_w": round(power, 2), "sm_clock_mhz": clock, "throttle": thr}
            if ints:    # DCGM reports temperatures as integers
                v["gpu_temp_c"] = int(round(v["gpu_temp_c"]))
                v["mem_temp_c"] = int(round(v["mem_temp_c"]))
            else:
                v["gpu_temp_c"] = round(v["gpu_temp_c"], 1)
                v["mem_temp_c"] = round(v["mem_temp_c"], 1)
            if _keep(faults, "thermal", (node, gpu, t), v):
                out.append((t, "telemetry.thermal", v))


def ecc(node: Node, t_end: float, faults: list, rng: random.Random, out: list,
        recovery: bool) -> None:
    for gpu in range(node.ngpu):
        sbe = rng.choice([0, 0, 0, 1, 2, 5])
        replay = rng.randint(0, 40)
        for t in sample_times(node, node.ecc_s, t_end, rng):
            if rng.random() < 0.002:
                sbe += 1
            if rng.random() < 0.004:
                replay += 1
            v = {"ts": round(node.clock(t), 3), "node": node.name, "gpu": gpu,
                 "sbe_volatile": sbe, "dbe_volatile": 0, "row_remap_pending": False,
                 "row_remap_failure": False, "xid": None, "pcie_replay": replay}
            if node.model.nvlink:
                v.update(nvlink_crc_errors=0, nvlink_replay_errors=0, nvlink_recovery_errors=0)
            if recovery:
                v["recovery_action"] = "none"
            if _keep(faults, "ecc", (node, gpu, t), v):
                out.append((t, "telemetry.ecc", v))


def nic(node: Node, t_end: float, faults: list, rng: random.Random, out: list,
        rate_fn) -> None:
    """`rate_fn(node, nic, t) -> (tx bytes/s, xmit_wait ticks/s)` from the story's jobs."""
    for nic_name in node.nics:
        tx = rng.randint(10**12, 9 * 10**13)
        rx = tx + rng.randint(-10**11, 10**11)
        wait = rng.randint(10**6, 10**9)
        sym = rng.choice([0, 0, 0, 1, 3])
        prev = None
        for t in sample_times(node, node.nic_s, t_end, rng):
            if prev is not None:
                rate, wrate = rate_fn(node, nic_name, (t + prev) / 2)
                dt = t - prev
                tx += int(rate * dt * rng.uniform(0.97, 1.03))
                rx += int(rate * dt * rng.uniform(0.97, 1.03))
                wait += int(wrate * dt)
            prev = t
            v = {"ts": round(node.clock(t), 3), "node": node.name, "nic": nic_name, "port": 1,
                 "link_state": "up", "rate_gbps": node.rate_gbps[nic_name],
                 "tx_bytes": tx, "rx_bytes": rx, "symbol_errors": sym, "link_downed": 0,
                 "rcv_errors": 0, "xmit_discards": 0, "xmit_wait": wait}
            if _keep(faults, "nic", (node, nic_name, t), v):
                out.append((t, "telemetry.nic", v))
