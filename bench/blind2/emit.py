"""Turn a story (shape, jobs, faults, healthy events) into telemetry records.

Each emitter builds the record a healthy cluster would send, lets every fault
that could touch it apply its hook, and notes on the fault's label the time of
each record the hook changed. Records are `(topic, value)`; arrival order and
duplicates are generate.py's business.
"""

from __future__ import annotations

import math
import random

from .faults import checksum
from .model import Fault, Healthy, Job
from .shapes import Shape

WARMUP_S = 45.0


def _apply(faults: list[Fault], hook: str, rec: dict, *args) -> None:
    for f in faults:
        before = dict(rec)
        getattr(f, hook)(rec, *args)
        if rec != before:
            f.label.touch(rec["ts"])


class Activity:
    """What each node's GPUs are doing at a time: training, warming up, spinning, idle."""

    def __init__(self, jobs: list[Job]):
        self._by_node: dict[str, list] = {}
        for job in jobs:
            for att in job.attempts:
                for node in att.nodes:
                    self._by_node.setdefault(node, []).append((job, att))

    def at(self, node: str, t: float) -> tuple[Job | None, str]:
        for job, att in self._by_node.get(node, ()):
            if att.start <= t < att.stop:
                if att.hang_from is not None and t >= att.hang_from:
                    return job, "spin"
                if t < att.start + WARMUP_S:
                    return job, "warmup"
                return job, "train"
        return None, "idle"

    def busy(self, node: str, t: float) -> bool:
        return self.at(node, t)[1] == "train"


def emit_steps(shape: Shape, job: Job, faults: list[Fault], healthy: Healthy,
               rng: random.Random, out: list, log_end: float) -> None:
    g = job.gpus_per_node
    n = job.ranks
    persist = [1.0 + rng.gauss(0.0, 0.006) for _ in range(n)]
    mine = [f for f in faults if job.name in f.jobs
            or any(node in f.nodes for att in job.attempts for node in att.nodes)]
    last_ckpt = -1
    base = job.attempts[0].first_step
    for ai, att in enumerate(job.attempts):
        step = base if ai == 0 else last_ckpt + 1
        t = att.start + WARMUP_S
        end = att.hang_from if att.hang_from is not None else att.stop
        end = min(end, log_end - 0.01)          # no record at or past the log's end
        while True:
            cap = healthy.in_cap(t)
            cap_f = (shape.tdp_w / cap) ** 0.7 if cap else 1.0
            is_eval = job.eval_every and step % job.eval_every == 0 and step > 0
            is_ckpt = job.checkpoint_every and step % job.checkpoint_every == 0 and step > 0
            touched: set[int] = set()
            comp, data = [], []
            for r in range(n):
                node, gpu = att.nodes[r // g], r % g
                f = 1.0
                for k, fl in enumerate(mine):
                    x = fl.gpu_factor(node, gpu, t)
                    if x != 1.0:
                        f *= x
                        touched.add(k)
                pp = job.position(r)[1]
                c = (job.step_s * job.compute_frac * job.stage_skew[pp % len(job.stage_skew)]
                     * persist[r] * (1.0 + rng.gauss(0.0, job.noise_sd)
                                     + (rng.gauss(0.0, job.seqlen_sd) if job.seqlen_sd else 0.0))
                     * f * cap_f)
                if is_eval:
                    c *= 1.0 + job.eval_extra
                d = job.step_s * job.data_frac * (1.0 + rng.gauss(0.0, 0.05))
                if job.loader_stall_p and rng.random() < job.loader_stall_p:
                    d += rng.uniform(0.3, 1.4) * job.step_s
                for s0, s1, jname, lnode, frac in healthy.loader_slow:
                    if jname == job.name and lnode == node and s0 <= t < s1:
                        d += frac * job.step_s
                comp.append(max(c, 0.001))
                data.append(max(d, 0.0))
            comm_f = healthy.comm_factor(job.name, t)
            for k, fl in enumerate(mine):
                x = fl.comm_factor(job.name, t)
                if x != 1.0:
                    comm_f *= x
                    touched.add(k)
            comm_pure = (job.step_s * (1.0 - job.compute_frac - job.data_frac) * comm_f
                         * (1.0 + rng.gauss(0.0, 0.02)))
            work_max = max(c + d for c, d in zip(comp, data, strict=True))
            provisional = work_max + comm_pure
            stall = 0.0
            for k, fl in enumerate(mine):
                x = fl.stall_s(job.name, t, t + provisional)
                if x:
                    stall += x
                    touched.add(k)
            ckpt = job.checkpoint_s if is_ckpt else 0.0
            total = provisional + stall + ckpt
            if t + total > end:
                break
            spike = (job.name, step) in healthy.global_grad_spike
            gn = (0.9 + 2.5 / (1.0 + step / 60.0)) * (3.2 if spike else 1.0)
            loss = 1.9 + 6.0 / (1.0 + step / 150.0)
            recs = []
            for r in range(n):
                node, gpu = att.nodes[r // g], r % g
                ts = t + total + rng.uniform(0.0, 0.006)
                step_ms = total * 1000.0 + abs(rng.gauss(0.0, 0.4))
                compute_ms = math.floor(comp[r] * 1e6) / 1e3
                comm_ms = math.floor((total - comp[r] - data[r] - ckpt) * 1e6) / 1e3
                rec = {"ts": round(ts, 4), "job": job.name, "step": step, "rank": r,
                       "node": node, "gpu": gpu, "step_ms": round(step_ms, 3)}
                if job.send_compute:
                    rec["compute_ms"] = compute_ms
                    rec["comm_ms"] = max(comm_ms, 0.0)
                if job.fields:
                    tp, pp, dp = job.position(r)
                    rec.update(tp_rank=tp, pp_rank=pp, dp_rank=dp)
                rec["loss"] = round(loss * (1.0 + rng.gauss(0.0, 0.03)), 5)
                rec["grad_norm"] = round(gn * (1.0 + rng.gauss(0.0, 0.07)), 5)
                if job.checksum_every and step % job.checksum_every == 0:
                    tp, pp, _ = job.position(r)
                    rec["param_checksum"] = checksum(job, ai, tp, pp, step)
                rec["tenant"] = job.tenant
                rec["cluster"] = shape.cluster
                _apply([f for f in mine if f.jobs and job.name in f.jobs], "step", rec, job, r)
                recs.append(rec)
            for k in touched:
                for rec in recs:
                    mine[k].label.touch(rec["ts"])
            out.extend(("telemetry.step", rec) for rec in recs)
            if is_ckpt:
                last_ckpt = step
            t += total
            step += 1


def _sample_times(node, start: float, end: float, every: float, healthy: Healthy,
                  rng: random.Random) -> list[float]:
    """A collector's sample times: its own phase, jitter, and a restart after a pause."""
    times = []
    t = start + node.phase_s % every
    while t < end:
        if healthy.paused(node.name, t):
            resume = next(e for s, e, nm in healthy.telemetry_pause
                          if nm == node.name and s <= t < e)
            t = resume + rng.uniform(0.5, every)       # a new collector, a new phase
            continue
        sample_t = t + rng.uniform(-0.12, 0.12)
        if sample_t < end:
            times.append(sample_t)
        t += every
    return times


def emit_gpu_telemetry(shape: Shape, act: Activity, faults: list[Fault], healthy: Healthy,
                       start: float, end: float, rng: random.Random, out: list) -> None:
    """Thermal and ECC samples per GPU at the node's DCGM cadence, XIDs as events."""
    xid_events: dict[tuple[str, int], list] = {}
    for f in faults:
        for ts, node, gpu, code, fields in f.xids():
            xid_events.setdefault((node, gpu), []).append((ts, code, fields, f))
    for ts, node, gpu, code in healthy.app_xids:
        xid_events.setdefault((node, gpu), []).append((ts, code, {}, None))
    idle_clock = 345.0 if shape.name == "superpod" else 690.0   # H100 / GB200 at rest
    for node in shape.nodes:
        mine = [f for f in faults if node.name in f.nodes]
        times = _sample_times(node, start, end, node.dcgm_s, healthy, rng)
        for gpu in range(node.gpus):
            gvar = 1.0 + rng.gauss(0.0, 0.035)
            sbe_rate = rng.choice((0.0,) * 49 + (1 / 500.0,))
            pcie_rate = rng.choice((0.0,) * 99 + (1 / 200.0,))
            crc_rate = rng.choice((0.0,) * 149 + (1 / 300.0,)) if shape.domains else 0.0
            state = {"sbe_volatile": rng.choice((0, 0, 0, 1, 2)), "dbe_volatile": 0,
                     "pcie_replay": rng.choice((0, 0, 3, 12)), "nvlink_crc_errors": 0,
                     "nvlink_replay_errors": 0, "nvlink_recovery_errors": 0}
            temp = node.inlet_c + shape.r_th * shape.idle_w
            events = sorted(xid_events.get((node.name, gpu), ()), key=lambda e: e[0])
            pending: list = []
            prev = start
            ei = 0
            for t in times:
                # XID events up to this sample
                while ei < len(events) and events[ei][0] <= t:
                    ets, code, fields, owner = events[ei]
                    ei += 1
                    for key, inc in fields.items():
                        key = {"dbe": "dbe_volatile", "sbe": "sbe_volatile"}[key]
                        state[key] += inc
                    if shape.xid_from_kernel_log:
                        rec = _ecc_record(shape, node.name, gpu, ets, state)
                        rec["xid"] = code
                        _apply(mine, "ecc", rec, node.name, gpu, ets - 1e-3, ets)
                        if owner is not None:
                            owner.label.touch(rec["ts"])
                        out.append(("telemetry.ecc", rec))
                    else:
                        pending.append((code, owner))
                if any(f.gpu_gone(node.name, gpu, t) for f in mine):
                    # DCGM cannot read the GPU any more; a polled XID still goes out once
                    for code, owner in pending:
                        rec = _ecc_record(shape, node.name, gpu, t, state)
                        rec["xid"] = code
                        if owner is not None:
                            owner.label.touch(rec["ts"])
                        out.append(("telemetry.ecc", rec))
                    pending = []
                    prev = t
                    continue
                dt = t - prev
                job, mode = act.at(node.name, t)
                util = {"train": job.util if job else 0.0, "warmup": 0.35, "spin": 0.42,
                        "idle": 0.0}[mode]
                # thermal
                demand = shape.idle_w + util * (shape.peak_w - shape.idle_w) * gvar \
                    * (1.0 + rng.gauss(0.0, 0.015))
                cap = healthy.in_cap(t) or shape.tdp_w
                if demand > cap:
                    power = cap * rng.uniform(0.975, 0.999)
                    throttle = 0x4
                    clock = shape.max_clock_mhz * (cap / demand) ** 0.7
                elif util > 0.0:
                    power, throttle = demand, 0
                    clock = shape.max_clock_mhz - rng.uniform(0.0, 20.0)
                else:
                    power, throttle, clock = demand, 0x1, idle_clock
                ss = node.inlet_c + shape.r_th * power
                temp = ss + (temp - ss) * math.exp(-max(dt, 0.0) / 25.0)
                rec = {"ts": round(t, 4), "node": node.name, "gpu": gpu,
                       "gpu_temp_c": round(temp + rng.gauss(0.0, 0.35)),
                       "mem_temp_c": round(temp + 3.0 + 0.006 * power + rng.gauss(0.0, 0.35)),
                       "power_w": round(power, 3), "sm_clock_mhz": round(clock / 15.0) * 15,
                       "throttle": throttle, "cluster": shape.cluster}
                _apply(mine, "thermal", rec, node.name, gpu, t)
                out.append(("telemetry.thermal", rec))
                # ECC and the rest of the DCGM sample
                for key, rate in (("sbe_volatile", sbe_rate), ("pcie_replay", pcie_rate),
                                  ("nvlink_crc_errors", crc_rate)):
                    if rate and rng.random() < 1.0 - math.exp(-rate * dt):
                        state[key] += 1
                rec = _ecc_record(shape, node.name, gpu, t, state)
                _apply(mine, "ecc", rec, node.name, gpu, prev, t)
                for key in state:
                    if rec.get(key) is not None:
                        state[key] = rec[key]
                if pending:
                    code, owner = pending.pop(0)
                    rec["xid"] = code
                    if owner is not None:
                        owner.label.touch(rec["ts"])
                out.append(("telemetry.ecc", rec))
                for code, owner in pending:
                    extra = dict(rec, xid=code)
                    if owner is not None:
                        owner.label.touch(extra["ts"])
                    out.append(("telemetry.ecc", extra))
                pending = []
                prev = t


def _ecc_record(shape: Shape, node: str, gpu: int, t: float, state: dict) -> dict:
    rec = {"ts": round(t, 4), "node": node, "gpu": gpu,
           "sbe_volatile": state["sbe_volatile"], "dbe_volatile": state["dbe_volatile"],
           # A100 and later retire no pages (row remapping instead): DCGM leaves them blank
           "retired_pages_sbe": None, "retired_pages_dbe": None,
           "row_remap_pending": False, "row_remap_failure": False, "xid": None,
           "pcie_replay": state["pcie_replay"],
           "nvlink_crc_errors": state["nvlink_crc_errors"],
           "nvlink_replay_errors": state["nvlink_replay_errors"],
           "nvlink_recovery_errors": state["nvlink_recovery_errors"],
           "recovery_action": "none", "cluster": shape.cluster}
    return rec


IB_KEYS = ("symbol_errors", "link_downed", "rcv_errors", "xmit_discards", "xmit_wait")
ROCE_KEYS = ("symbol_errors", "link_downed", "rcv_errors", "xmit_discards",
             "out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled")


def emit_nic_telemetry(shape: Shape, act: Activity, faults: list[Fault], healthy: Healthy,
                       start: float, end: float, rng: random.Random, out: list) -> None:
    keys = IB_KEYS if shape.fabric == "ib" else ROCE_KEYS
    line_bps = shape.port_gbps * 1e9 / 8.0
    for node in shape.nodes:
        mine = [f for f in faults if node.name in f.nodes]
        times = _sample_times(node, start + 0.37, end, node.nic_s, healthy, rng)
        ports = [(nic, True) for nic in node.nics] + [(nic, False) for nic in node.storage_nics]
        for nic, compute in ports:
            st = {k: 0 for k in keys}
            st["tx_bytes"] = rng.randrange(10**12, 10**14)
            st["rx_bytes"] = st["tx_bytes"] + rng.randrange(0, 10**11)
            st["symbol_errors"] = rng.choice((0, 0, 0, 0, 2, 7))
            st["link_downed"] = rng.choice((0, 0, 1))
            sym_rate = rng.choice((0.0,) * 59 + (1 / 400.0,))
            prev = start
            for t in times:
                dt = t - prev
                if healthy.counter_clear is not None and prev < healthy.counter_clear <= t:
                    st = {k: 0 for k in st}     # ibclearcounters -x over the fabric
                    dt = t - healthy.counter_clear
                job, mode = act.at(node.name, t)
                if compute and mode == "train":
                    bps = line_bps * rng.uniform(0.35, 0.55)
                elif compute and mode in ("warmup", "spin"):
                    bps = line_bps * 0.01
                else:
                    bps = rng.uniform(2e4, 2e6)
                # another job's traffic on the shared spine: ~10x the waiting / CNPs
                cong = 1.0 + 90.0 * (healthy.congested(node.name, t) - 1.0) if compute else 1.0
                inc = {"tx_bytes": int(bps * dt),
                       "rx_bytes": int(bps * dt * rng.uniform(0.97, 1.03))}
                if compute and mode == "train":
                    if shape.fabric == "ib":
                        inc["xmit_wait"] = int(dt * rng.uniform(1e5, 4e5) * cong)
                    else:
                        inc["np_cnp_sent"] = int(dt * rng.uniform(5, 40) * cong)
                        inc["rp_cnp_handled"] = int(dt * rng.uniform(5, 40) * cong)
                if sym_rate and rng.random() < 1.0 - math.exp(-sym_rate * dt):
                    inc["symbol_errors"] = 1
                for k, v in inc.items():
                    st[k] += v
                rec = {"ts": round(t, 4), "node": node.name, "nic": nic, "port": 1,
                       "link_state": "up", "rate_gbps": shape.port_gbps}
                rec.update(st)
                if shape.fabric == "roce":
                    rec["rx_prio3_pause"] = int(st["rp_cnp_handled"] * 0.3)  # extra: ignored
                rec["cluster"] = shape.cluster
                before_tx = st["tx_bytes"] - inc["tx_bytes"]
                before_rx = st["rx_bytes"] - inc["rx_bytes"]
                _apply(mine, "nic", rec, node.name, nic, prev, t)
                if rec["link_state"] == "down":
                    rec["tx_bytes"], rec["rx_bytes"] = before_tx, before_rx
                for k in st:
                    st[k] = rec[k]
                out.append(("telemetry.nic", rec))
                prev = t
