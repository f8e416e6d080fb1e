"""Periodic collector samples (thermal, ECC, NIC) and XID events, as a site's agents send them.

Each node's collector scrapes at the log's interval with its own phase and a
little jitter; everything from one scrape carries that scrape's time stamp.
Counters are cumulative since boot and restart at zero after a reboot. A fault
``touch``-es a record only when it changed it (same noise drawn with and
without the fault), so labels start and end on real records. Residual
counter offsets after a fault has stopped (an old ``link_downed`` count) are
not the fault any more; a state flag that stays set (``row_remap_pending``)
is.
"""

from __future__ import annotations

import numpy as np

from bench.blind.hardware import BUSY, OFF, Grid
from bench.blind.plan import Fault, Plan
from bench.blind.workload import StepOutput

GPU_FLAG_FAULTS = ("dbe", "xid95", "row_remap")
CLOCK_FAULTS = ("thermal", "slow_from_start_hot", "power_brake")


def sample_times(plan: Plan, rng: np.random.Generator) -> dict[str, list[float]]:
    out = {}
    end = plan.t0 + plan.duration_s
    for nd in plan.shape.nodes:
        phase = float(rng.uniform(0, plan.interval_s))
        k = np.arange(int(plan.duration_s / plan.interval_s) + 1)
        ts = plan.t0 + phase + plan.interval_s * k
        ts = ts + np.clip(rng.normal(0, 0.2, ts.size), -0.8, 0.8)
        out[nd] = [float(t) for t in ts if plan.t0 <= t < end]
    return out


XidEvent = tuple[float, str, int, int, str | None, Fault | None]


def xid_events(plan: Plan, rng: np.random.Generator) -> list[XidEvent]:
    """(ts, node, gpu, xid, recovery_action, fault) of every XID the kernel logs."""
    full = plan.shape.full_ecc
    ev: list[XidEvent] = []
    gpn = plan.shape.gpus_per_node
    crash_of = {}
    for j in plan.jobs:
        for c in j.crashes:
            crash_of[(j.name, round(c.ts))] = c
    for f in plan.faults:
        t = f.t0
        seq: list[tuple[float, int, str | None]] = []
        if f.what == "dbe":
            seq = [(t, 48, None), (t + 0.05, 63, None), (t + 0.12, 94, None)]
            if full:
                seq.append((t + 0.3, 154, "gpu_reset"))
        elif f.what == "xid95":
            seq = [(t, 95, None)] + ([(t + 0.2, 154, "gpu_reset")] if full else [])
        elif f.what == "xid79":
            seq = [(t, 79, None)]
        elif f.what == "row_remap":
            seq = [(t, 48, None), (t + 0.05, 64, None)]
            if full:
                seq.append((t + 0.25, 154, "drain_and_reset"))
        elif f.what == "nvlink":
            seq = [(t, 74, None), (t + float(rng.uniform(60, 150)), 74, None)]
        for ts, x, act in seq:
            if ts < f.t1:
                ev.append((ts, f.node, f.gpu, x, act, f))
        if f.what in ("dbe", "xid95", "row_remap"):
            job = next(j for j in plan.jobs if j.name == f.job)
            c = next((c for c in job.crashes if c.ts >= f.t0), None)
            if c is not None:
                for g in range(gpn):
                    if g != f.gpu:
                        ev.append((c.ts + float(rng.uniform(0.05, 1.0)), f.node, g, 45, None, None))
    for j in plan.jobs:
        if j.end_xid is not None and j.end < plan.t0 + plan.duration_s:
            bad = j.nodes[int(rng.integers(0, len(j.nodes)))], int(rng.integers(0, gpn))
            ev.append((j.end, bad[0], bad[1], j.end_xid, None, None))
            for nd in j.nodes:
                for g in range(gpn):
                    if (nd, g) != bad:
                        ev.append((j.end + float(rng.uniform(0.5, 2.0)), nd, g, 45, None, None))
    return sorted(ev, key=lambda e: e[0])


def gpu_records(plan: Plan, grid: Grid, times: dict[str, list[float]], rng: np.random.Generator,
                out: list) -> None:
    sh = plan.shape
    cl = sh.name
    gpn = sh.gpus_per_node
    by_gpu: dict[tuple[str, int], list[Fault]] = {}
    for f in plan.faults:
        if f.what == "power_brake":
            for g in range(gpn):
                by_gpu.setdefault((f.node, g), []).append(f)
        elif f.gpu is not None:
            by_gpu.setdefault((f.node, f.gpu), []).append(f)
    xids = xid_events(plan, rng)
    pending_xid: dict[tuple[str, int], list] = {}
    for e in xids:
        if sh.xid_from_kernel_log:
            ts = e[0] + float(rng.uniform(0.02, 0.3))
            rec = {"ts": round(ts, 6), "node": e[1], "gpu": e[2], "xid": e[3], "cluster": cl}
            if e[4] is not None:
                rec["recovery_action"] = e[4]
            out.append((ts, "telemetry.ecc", rec))
            if e[5] is not None:
                e[5].touch(rec["ts"])
        else:
            pending_xid.setdefault((e[1], e[2]), []).append(e)
    reboot = {nd: (a, b) for nd, a, b in plan.maintenance}
    for nd in sh.nodes:
        ni = grid.node_index[nd]
        sbe_rate = rng.choice([0.0, 1 / 3600, 1 / 120], size=gpn, p=[0.88, 0.10, 0.02])
        pcie_rate = rng.choice([0.0, 1 / 300], size=gpn, p=[0.95, 0.05])
        nvl_rate = rng.choice([0.0, 1 / 600], size=gpn, p=[0.97, 0.03])
        uptime = float(rng.uniform(5, 40)) * 86400
        sbe = rng.poisson(sbe_rate * uptime)
        pcie = rng.integers(0, 4, gpn) + rng.poisson(pcie_rate * uptime / 20)
        nvl = rng.poisson(nvl_rate * uptime)
        extra = {g: {"crc": 0, "replay": 0, "recov": 0} for g in range(gpn)}
        prev = None
        for ts in times[nd]:
            i = grid.idx(ts)
            if grid.state[ni * gpn, i] == OFF and all(grid.state[ni * gpn + g, i] == OFF
                                                      for g in range(gpn)):
                continue
            if nd in reboot and prev is not None and prev < reboot[nd][0] <= ts:
                sbe[:] = 0
                pcie[:] = 0
                nvl[:] = 0
            dt = 0.0 if prev is None else ts - prev
            prev = ts
            sbe += rng.poisson(sbe_rate * dt)
            pcie += rng.poisson(pcie_rate * dt)
            nvl += rng.poisson(nvl_rate * dt)
            for g in range(gpn):
                gi = ni * gpn + g
                if grid.state[gi, i] == OFF:
                    _late_xids(pending_xid, (nd, g), ts, cl, out)
                    continue
                faults = by_gpu.get((nd, g), ())
                th_a, th_b = _thermal(grid, sh, gi, i, rng, cl, nd, g, ts)
                if th_a != th_b:
                    _blame(faults, ts, CLOCK_FAULTS)
                out.append((ts, "telemetry.thermal", th_a))
                ecc = {"ts": round(ts, 6), "node": nd, "gpu": g, "cluster": cl,
                       "sbe_volatile": int(sbe[g]), "dbe_volatile": 0,
                       "row_remap_pending": False, "row_remap_failure": False,
                       "pcie_replay": int(pcie[g]), "xid": None}
                if sh.full_ecc:
                    ecc |= {"retired_pages_sbe": 0, "retired_pages_dbe": 0,
                            "nvlink_crc_errors": int(nvl[g]), "nvlink_replay_errors": 0,
                            "nvlink_recovery_errors": 0, "recovery_action": "none"}
                for f in faults:
                    if f.what in GPU_FLAG_FAULTS and f.t0 <= ts:
                        ecc["dbe_volatile"] = 1
                        if f.what == "row_remap":
                            ecc["row_remap_failure"] = True
                        else:
                            ecc["row_remap_pending"] = True
                        if sh.full_ecc:
                            ecc["recovery_action"] = ("drain_and_reset" if f.what == "row_remap"
                                                      else "gpu_reset")
                        f.touch(ecc["ts"])
                    elif f.what == "nvlink" and sh.full_ecc:
                        x = extra[g]
                        if f.active(ts) and dt > 0:
                            x["crc"] += int(rng.poisson(f.params.get("crc_rate", 120.0) * dt))
                            x["replay"] += int(rng.poisson(2.0 * dt))
                            x["recov"] += int(rng.poisson(dt / 45.0))
                            f.touch(ecc["ts"])
                        ecc["nvlink_crc_errors"] += x["crc"]
                        ecc["nvlink_replay_errors"] += x["replay"]
                        ecc["nvlink_recovery_errors"] += x["recov"]
                # the first XID of the interval rides this sample, any others go out as copies
                for k, e in enumerate(_due(pending_xid, (nd, g), ts)):
                    if k == 0:
                        ecc["xid"] = e[3]
                    else:
                        out.append((ts, "telemetry.ecc", dict(ecc, xid=e[3])))
                    if e[5] is not None:
                        e[5].touch(ecc["ts"])
                out.append((ts, "telemetry.ecc", ecc))


def _due(pending: dict, key, ts: float) -> list:
    evs = pending.get(key, [])
    due = [e for e in evs if e[0] <= ts]
    if due:
        pending[key] = [e for e in evs if e[0] > ts]
    return due


def _late_xids(pending: dict, key, ts: float, cl: str, out: list) -> None:
    """A GPU that fell off the bus has no samples: its XID rides a bare record at the next poll."""
    for e in _due(pending, key, ts):
        rec = {"ts": round(ts, 6), "node": key[0], "gpu": key[1], "xid": e[3], "cluster": cl}
        out.append((ts, "telemetry.ecc", rec))
        if e[5] is not None:
            e[5].touch(rec["ts"])


def _blame(faults, ts: float, kinds: tuple[str, ...]) -> None:
    cands = [f for f in faults if f.what in kinds and f.t0 <= ts]
    if cands:
        max(cands, key=lambda f: f.t0).touch(round(ts, 6))


def _thermal(grid: Grid, sh, gi: int, i: int, rng, cl: str, nd: str, g: int, ts: float):
    n_t = rng.normal(0.0, 0.4)
    n_p = rng.normal(0.0, 0.012)
    n_c = rng.normal(0.0, 0.004)
    cap_on = rng.random() < 0.85
    busy = grid.state[gi, i] == BUSY
    recs = []
    for ph in (grid.actual, grid.base):
        temp = float(ph.temp[gi, i]) + n_t
        bits = 0
        if busy and grid.capped[gi, i] and cap_on:
            bits |= 0x4
        if grid.state[gi, i] == 0:
            bits |= 0x1
        if ph.thermal[gi, i] < 1.0:
            bits |= 0x20
        if ph.temp_u[gi, i] > 98.0:
            bits |= 0x40
        if ph.brake[gi, i] < 1.0:
            bits |= 0x88
        clock = min(float(ph.clock[gi, i]) * (1 + n_c), sh.boost_mhz)
        recs.append({
            "ts": round(ts, 6), "node": nd, "gpu": g, "cluster": cl,
            "gpu_temp_c": int(round(temp)), "mem_temp_c": int(round(temp + 7.0 + 0.5 * n_t)),
            "power_w": round(float(ph.power[gi, i]) * (1 + n_p), 1),
            "sm_clock_mhz": int(15 * round(clock / 15)), "throttle": bits,
        })
    return recs[0], recs[1]


def nic_records(plan: Plan, grid: Grid, times: dict[str, list[float]], steps: list[StepOutput],
                rng: np.random.Generator, out: list) -> None:
    sh = plan.shape
    cl = sh.name
    jobs_bytes = {j.name: j.bytes_per_step for j in plan.jobs}
    # step end times per node: (ends array, bytes per step, ckpt times, ckpt bytes per node)
    per_node: dict[str, list] = {n: [] for n in sh.nodes}
    for job, so in zip(plan.jobs, steps, strict=True):
        for nodes, ends, ckpts in so.step_ends:
            for nd in nodes:
                per_node[nd].append((ends, jobs_bytes[job.name], ckpts, 40e9 / len(nodes)))
    reboot = {nd: (a, b) for nd, a, b in plan.maintenance}
    nic_faults: dict[tuple[str, str], list[Fault]] = {}
    for f in plan.faults:
        if f.what in ("nic_ber", "nic_flap"):
            nic_faults.setdefault((f.node, f.nic), []).append(f)
        elif f.what == "leaf_down":
            for nd in f.params["nodes"]:
                for nic in sh.fabric_nics:
                    nic_faults.setdefault((nd, nic), []).append(f)
    nics = [(n, True) for n in sh.fabric_nics] + [(n, False) for n in sh.other_nics]
    for nd in sh.nodes:
        ni = grid.node_index[nd]
        # node_exporter is scraped a moment after dcgm-exporter
        nt = sorted(t + float(rng.normal(0.7, 0.1)) for t in times[nd])
        for nic, fabric in nics:
            up = float(rng.uniform(5, 40)) * 86400
            c = {"tx_bytes": int(rng.uniform(0.2, 2.0) * up * 5e9 if fabric else up * 3e7),
                 "rx_bytes": 0, "symbol_errors": int(rng.integers(0, 5)), "link_downed": 0,
                 "rcv_errors": int(rng.integers(0, 3)), "xmit_discards": 0,
                 "xmit_wait": int(rng.uniform(1e9, 1e11)) if fabric else 0,
                 "out_of_sequence": int(rng.integers(0, 200)), "packet_seq_err": 0,
                 "np_cnp_sent": int(rng.uniform(1e5, 1e7)), "rp_cnp_handled": 0}
            c["rx_bytes"] = int(c["tx_bytes"] * rng.uniform(0.97, 1.03))
            c["rp_cnp_handled"] = int(c["np_cnp_sent"] * rng.uniform(0.9, 1.1))
            sym_rate = float(rng.choice([0.0, 1 / 1800], p=[0.9, 0.1]))
            rcv_rate = float(rng.choice([0.0, 1 / 7200], p=[0.95, 0.05]))
            faults = nic_faults.get((nd, nic), [])
            prev = None
            post_boot = False
            for ts in nt:
                i = grid.idx(ts)
                if grid.state[ni * sh.gpus_per_node, i] == OFF and nd in reboot:
                    continue
                if nd in reboot and prev is not None and prev < reboot[nd][0] <= ts:
                    c = dict.fromkeys(c, 0)
                    post_boot = True
                    prev = reboot[nd][1]
                dt = 0.0 if prev is None else ts - prev
                busy = grid.state[ni * sh.gpus_per_node, i] == BUSY
                down = False
                touched = None
                inc = {}
                if fabric and prev is not None:
                    nbytes = 2e6 * dt
                    for ends, bps, _ck, _cb in per_node[nd]:
                        nbytes += bps * np.count_nonzero((ends > prev) & (ends <= ts))
                    inc["tx_bytes"] = nbytes * rng.uniform(0.99, 1.01)
                    inc["rx_bytes"] = nbytes * rng.uniform(0.99, 1.01)
                    inc["xmit_wait"] = (3e5 * rng.lognormal(0, 0.8) if busy else 50.0) * dt
                    if sh.roce:
                        inc["np_cnp_sent"] = (200 * rng.lognormal(0, 1) if busy else 0) * dt
                        inc["rp_cnp_handled"] = (200 * rng.lognormal(0, 1) if busy else 0) * dt
                        inc["out_of_sequence"] = rng.poisson((0.02 if busy else 0) * dt)
                        inc["packet_seq_err"] = rng.poisson((0.002 if busy else 0) * dt)
                elif prev is not None:
                    nbytes = 3e7 * dt
                    for _e, _b, ck, cb in per_node[nd]:
                        nbytes += cb * np.count_nonzero((ck > prev) & (ck <= ts))
                    inc["tx_bytes"] = nbytes
                    inc["rx_bytes"] = 2e7 * dt
                if prev is not None:
                    inc["symbol_errors"] = rng.poisson(sym_rate * dt)
                    inc["rcv_errors"] = rng.poisson(rcv_rate * dt)
                for f in faults:
                    if prev is None:
                        break
                    if f.what == "nic_ber" and (f.active(ts) or prev < f.t0 <= ts):
                        lam = f.params.get("ber_rate", 20.0)
                        inc["symbol_errors"] += rng.poisson(lam * dt)
                        inc["rcv_errors"] += rng.poisson(lam / 5 * dt)
                        if sh.roce:
                            inc["out_of_sequence"] += rng.poisson(lam / 2 * dt)
                            inc["packet_seq_err"] += rng.poisson(lam / 20 * dt)
                        touched = f
                    elif f.what == "nic_flap":
                        for d0, d1 in f.params["downs"]:
                            if prev < d0 <= ts:
                                inc["link_downed"] = inc.get("link_downed", 0) + 1
                                inc["symbol_errors"] += int(rng.integers(20, 400))
                                touched = f
                            if d0 <= ts < d1:
                                down = True
                                touched = f
                    elif f.what == "leaf_down":
                        if prev < f.t0 <= ts:
                            inc["link_downed"] = inc.get("link_downed", 0) + 1
                            touched = f
                        if f.t0 <= ts < f.t1:
                            down = True
                            touched = f
                if down:
                    inc["tx_bytes"] = inc["rx_bytes"] = 0
                for key, v in inc.items():
                    c[key] += int(v)
                prev = ts
                rec = {"ts": round(ts, 6), "node": nd, "nic": nic, "port": 1, "cluster": cl,
                       "link_state": "down" if (down or post_boot) else "up",
                       "rate_gbps": sh.nic_rate_gbps if fabric else sh.other_rate_gbps,
                       "tx_bytes": c["tx_bytes"], "rx_bytes": c["rx_bytes"],
                       "symbol_errors": c["symbol_errors"], "link_downed": c["link_downed"],
                       "rcv_errors": c["rcv_errors"], "xmit_discards": c["xmit_discards"],
                       "xmit_wait": c["xmit_wait"]}
                if sh.roce:
                    for key in ("out_of_sequence", "packet_seq_err", "np_cnp_sent",
                                "rp_cnp_handled"):
                        rec[key] = c[key]
                post_boot = False
                if touched is not None:
                    touched.touch(rec["ts"])
                out.append((ts, "telemetry.nic", rec))
