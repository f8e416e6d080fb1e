"""DCGM (thermal, ECC, XID events) and NIC samples of one node, with counters since boot.

A node's collectors sample on its own phase; every value the collector sends is
what the node's clock and counters say (skewed clock, counters restarted by a
collector that keeps its own totals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bench.blind4.fleet import IDLE_SM_MHZ, RATE_GBPS, gpu_power

ECC_COUNTERS = (
    "sbe_volatile",
    "dbe_volatile",
    "retired_pages_sbe",
    "retired_pages_dbe",
    "pcie_replay",
    "nvlink_crc_errors",
    "nvlink_replay_errors",
    "nvlink_recovery_errors",
)
NIC_COUNTERS = (
    "tx_bytes",
    "rx_bytes",
    "symbol_errors",
    "link_downed",
    "rcv_errors",
    "xmit_discards",
    "xmit_wait",
    "out_of_sequence",
    "packet_seq_err",
    "np_cnp_sent",
    "rp_cnp_handled",
)
PAUSE_COUNTERS = ("rx_prio3_pause", "tx_prio3_pause")


@dataclass
class NodeOptions:
    """What is odd about one node's collectors (healthy shapes, no label)."""

    down: list[tuple[float, float]] = field(default_factory=list)  # collectors silent
    nic_reset_t: list[float] = field(default_factory=list)  # NIC totals restart at 0
    sbe_per_s: dict[int, float] = field(default_factory=dict)  # benign corrected-ECC accrual
    mem_temp_null: bool = False
    pause_counters: bool = False


def _poisson(rng, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, int(rng.gauss(lam, math.sqrt(lam)) + 0.5))
    k, p, limit = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def sample_node(fleet, node, busy, faults, opts: NodeOptions, rng, t_end: float, emit) -> None:
    """Emit every thermal, ECC and NIC record of `node` over [0, t_end)."""
    dt = node.interval_s
    ecc = [dict.fromkeys(ECC_COUNTERS, 0) for _ in range(node.gpus)]
    for g in range(node.gpus):
        ecc[g]["pcie_replay"] = rng.randrange(0, 40)
        ecc[g]["sbe_volatile"] = rng.randrange(0, 3) if g in opts.sbe_per_s else 0
    nic_tot = {n: dict.fromkeys(NIC_COUNTERS + PAUSE_COUNTERS, 0) for n in node.nics}
    for n in node.nics:
        nic_tot[n]["tx_bytes"] = rng.randrange(10**12, 10**14)
        nic_tot[n]["rx_bytes"] = nic_tot[n]["tx_bytes"] + rng.randrange(0, 10**11)
        nic_tot[n]["xmit_wait"] = rng.randrange(10**8, 10**10)
    nic_base = {n: dict.fromkeys(nic_tot[n], 0) for n in node.nics}
    temp = [None] * node.gpus
    temp_t = [0.0] * node.gpus  # when each GPU's temperature was last computed
    reset_done = set()
    for f in faults:
        for x_node, x_gpu, x_t, code, extra in f.xids():
            if x_node != node.name:
                continue
            v = {"ts": round(x_t + node.skew_s, 4), "node": node.name, "gpu": x_gpu, "xid": code}
            if not node.drop_fields:
                v.update({k: ecc[x_gpu][k] for k in ("sbe_volatile", "dbe_volatile")})
                v.update(extra)
            f.touch(v["ts"])
            emit(x_t, "telemetry.ecc", v, node.name)
    t = node.phase_s
    while t < t_end:
        if any(a <= t < b for a, b in opts.down):
            t += dt
            continue
        ts = round(t + node.skew_s + rng.uniform(0, 0.05), 4)
        busy_frac = 0.0
        for g in range(node.gpus):
            if any(f.gpu_gone(node.name, g, t) for f in faults):
                continue
            for f in faults:
                if hasattr(f, "resets") and f.resets(node.name, g, t) and (f, g) not in reset_done:
                    reset_done.add((f, g))
                    for k in (
                        "sbe_volatile",
                        "dbe_volatile",
                        "nvlink_crc_errors",
                        "nvlink_replay_errors",
                        "nvlink_recovery_errors",
                    ):
                        ecc[g][k] = 0
            att = busy(node.name, g, t)
            touched = set()
            if att is not None:
                busy_frac += 1.0 / node.gpus
                load = 1.0
                for f in faults:
                    m = f.gpu_load(node.name, g, t)
                    if m != 1.0:
                        load *= m
                        touched.add(f)
                power, bits, clock = gpu_power(node.demand_w[g], load)
                power *= rng.uniform(0.985, 1.0)
                clock -= rng.choice((0.0, 0.0, 15.0, 30.0)) if bits else 0.0
            else:
                power, bits, clock = rng.uniform(68, 92), 0x1, IDLE_SM_MHZ
            target = fleet.inlet_c(node, t) + 9.0 + 0.052 * power + node.temp_off_c[g]
            if temp[g] is None:
                temp[g] = target
            # The board keeps cooling while nobody reads it (a reset, a collector gap):
            # relax over the time since the last reading, not one interval.
            temp[g] += (target - temp[g]) * (1.0 - math.exp(-(t - temp_t[g]) / 45.0))
            temp_t[g] = t
            th = {
                "ts": ts,
                "node": node.name,
                "gpu": g,
                "gpu_temp_c": int(round(temp[g] + rng.gauss(0, 0.3))),
                "mem_temp_c": None
                if opts.mem_temp_null
                else int(round(temp[g] + 6 + rng.gauss(0, 0.4))),
                "power_w": round(power, 1),
                "sm_clock_mhz": float(int(clock)),
                "throttle": bits,
            }
            for f in touched:
                f.touch(ts)
            emit(t, "telemetry.thermal", th, node.name)
            inc = dict.fromkeys(ECC_COUNTERS, 0)
            inc["sbe_volatile"] = _poisson(rng, opts.sbe_per_s.get(g, 0.0) * dt)
            inc["pcie_replay"] = _poisson(rng, 0.002 * dt)
            inc["nvlink_crc_errors"] = _poisson(rng, 0.0005 * dt)
            rec = {"ts": ts, "node": node.name, "gpu": g}
            state = {
                "row_remap_pending": False,
                "row_remap_failure": False,
                "xid": None,
                "recovery_action": "none",
            }
            changed = [f for f in faults if f.ecc(node.name, g, t, dt, inc, state)]
            for k in ECC_COUNTERS:
                ecc[g][k] += inc[k]
            if node.drop_fields:
                rec.update(
                    {
                        "xid": None,
                        "pcie_replay": ecc[g]["pcie_replay"],
                        "row_remap_pending": state["row_remap_pending"],
                        "row_remap_failure": state["row_remap_failure"],
                    }
                )
            else:
                rec.update(ecc[g])
                rec.update(state)
            for f in changed:
                f.touch(ts)
            emit(t, "telemetry.ecc", rec, node.name)
        for r_t in opts.nic_reset_t:
            if t - dt < r_t <= t:
                for n in node.nics:
                    nic_base[n] = dict(nic_tot[n])
        for n in node.nics:
            inc = dict.fromkeys(NIC_COUNTERS + PAUSE_COUNTERS, 0)
            traffic = busy_frac * 1.1e10 * dt * rng.uniform(0.8, 1.2)
            inc["tx_bytes"] = int(traffic + rng.uniform(2e5, 2e6) * dt)
            inc["rx_bytes"] = int(traffic * rng.uniform(0.98, 1.02) + rng.uniform(2e5, 2e6) * dt)
            inc["xmit_wait"] = int(busy_frac * rng.uniform(1e4, 2e5) * dt)
            inc["np_cnp_sent"] = _poisson(rng, busy_frac * 30 * dt)
            inc["rp_cnp_handled"] = _poisson(rng, busy_frac * 30 * dt)
            inc["out_of_sequence"] = _poisson(rng, 0.002 * dt)
            inc["symbol_errors"] = _poisson(rng, 0.0001 * dt)
            inc["rx_prio3_pause"] = _poisson(rng, busy_frac * 20 * dt)
            inc["tx_prio3_pause"] = _poisson(rng, busy_frac * 20 * dt)
            rec = {"link_state": "up"}
            changed = [f for f in faults if f.nic(node.name, n, t, dt, inc, rec)]
            for k in inc:
                nic_tot[n][k] += inc[k]
            v = {
                "ts": ts,
                "node": node.name,
                "nic": n,
                "port": 1,
                "link_state": rec["link_state"],
                "rate_gbps": RATE_GBPS,
            }
            for k in NIC_COUNTERS + (PAUSE_COUNTERS if opts.pause_counters else ()):
                v[k] = nic_tot[n][k] - nic_base[n][k]
            for f in changed:
                f.touch(ts)
            emit(t, "telemetry.nic", v, node.name)
        t += dt
