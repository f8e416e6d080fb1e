"""Records from the model: steps of every job, DCGM samples per GPU, NIC samples per port.

Each record comes out as ``(t_true, node, topic, value)``; ``value["ts"]`` is already
on the node's clock (true time + the node's offset + a few ms of stamping jitter).
"""

from __future__ import annotations

import hashlib
import math
import random

from bench.blind3.model import GPU_MODELS, Fleet, Job


def _r3(x: float) -> float:
    return round(x, 3)


def _checksum(job: str, attempt: int, step: int, tp: int, pp: int) -> str:
    return hashlib.blake2b(f"{job}/{attempt}/{step}/{tp}/{pp}".encode(), digest_size=8).hexdigest()


def steps(fleet: Fleet, job: Job, t_base: float, rng: random.Random):
    """One step record per rank per step, synchronous: the slowest arrival sets the step."""
    for attempt, (t0, t1, first_step, nodes) in enumerate(job.attempts):
        per_node = fleet.nodes[nodes[0]].gpus
        ranks = [(nd, g) for nd in nodes for g in range(per_node)]
        t, step = t0, first_step
        while True:
            k = step - first_step
            scale = job.accum
            if k < job.warmup_steps:
                scale *= job.warmup_factor  # compile / allocator warm-up after a (re)start
            if job.eval_every and step % job.eval_every == 0:
                scale *= job.eval_factor
            neither_base = job.neither_ms
            if job.ckpt_every and step % job.ckpt_every == 0:
                neither_base += job.ckpt_ms
            arrive, parts, touched = [], [], set()
            for r, (nd, g) in enumerate(ranks):
                pp = (r // job.tp) % job.pp
                c = job.compute_ms * scale * job.stage_factor[pp % len(job.stage_factor)]
                c *= rng.gauss(1.0, 0.008)
                _p, _temp, _mhz, _bits, cf, fs = fleet.gpu_point(nd, g, t)
                if cf < 1.0:
                    c *= 0.15 + 0.85 / cf  # ~85 % of a step's compute scales with the clock
                    if _bits & 0x60:
                        touched.update(f for f in fs if f is not None)
                for hook in fleet.compute_slow:
                    got = hook(nd, g, t, step)
                    if got:
                        c *= got[0]
                        touched.add(got[1])
                ne = neither_base * rng.uniform(0.9, 1.1)
                for hook in fleet.neither_extra:
                    got = hook(nd, g, t, step)
                    if got:
                        ne += got[0]
                        touched.add(got[1])
                arrive.append(ne + c)
                parts.append((ne, c))
            comm = job.comm_ms * rng.gauss(1.0, 0.02)
            for hook in fleet.comm_slow:
                got = hook(job.job, t)
                if got:
                    comm *= got[0]
                    touched.add(got[1])
            top = max(arrive)
            step_s = (top + comm) / 1000.0
            t_end = t + step_s
            if t_end >= t1:
                break
            for r, (nd, g) in enumerate(ranks):
                node = fleet.nodes[nd]
                ne, c = parts[r]
                cm = top - arrive[r] + comm
                ts = t_base + t_end + node.offset_s + rng.uniform(0.0, 0.004)
                v = {"ts": _r3(ts), "job": job.job, "step": step, "rank": r, "node": nd, "gpu": g}
                cm3, c3 = _r3(cm), _r3(c)
                v["step_ms"] = _r3(max(ne + c + cm, c3 + cm3) + 0.001)
                v["compute_ms"] = c3
                v["comm_ms"] = cm3
                if job.rank_fields:
                    v["tp_rank"] = r % job.tp
                    v["pp_rank"] = (r // job.tp) % job.pp
                    v["dp_rank"] = r // (job.tp * job.pp)
                decay = math.exp(-step / 4000.0)
                v["loss"] = round(job.loss0 * (0.45 + 0.55 * decay) + rng.gauss(0, 0.03), 5)
                v["grad_norm"] = round(rng.lognormvariate(math.log(0.9 + decay), 0.12), 5)
                if job.checksum_every and step % job.checksum_every == 0:
                    v["param_checksum"] = _checksum(
                        job.job, attempt, step, r % job.tp, (r // job.tp) % job.pp
                    )
                for f in touched:
                    f.touch(v["ts"])
                yield t_end, nd, "telemetry.step", v
            t = t_end
            step += 1


def _grid(rng: random.Random, every: float, duration: float):
    t = rng.uniform(0.0, every)
    while t < duration:
        yield t + rng.uniform(-0.15, 0.15) if t > 0.2 else t
        t += every


def dcgm(fleet: Fleet, t_base: float, rng: random.Random):
    """Thermal and ECC samples per GPU on the node's DCGM poll; XID events."""
    for node in fleet.nodes.values():
        m = GPU_MODELS[node.model]
        polls = list(_grid(rng, node.dcgm_every_s, fleet.duration_s))
        resets = sorted(t for nd, t in fleet.dcgm_reset if nd == node.name)
        for g in range(node.gpus):
            gp = fleet.gpu[(node.name, g)]
            gone = [
                (a, b) for nd, gg, a, b in fleet.dcgm_gone if nd == node.name and gg in (g, None)
            ]
            events = sorted(
                (e for e in fleet.ecc_events if e[0] == node.name and e[1] == g), key=lambda e: e[2]
            )
            cnt = {
                "sbe_volatile": 0.0,
                "dbe_volatile": 0.0,
                "retired_pages_sbe": float(rng.choice([0, 0, 0, 1, 2])),
                "retired_pages_dbe": 0.0,
                "pcie_replay": float(rng.choice([0, 0, 1, 3])),
                "nvlink_crc_errors": float(rng.choice([0, 0, 0, 2])),
                "nvlink_replay_errors": 0.0,
                "nvlink_recovery_errors": 0.0,
            }
            state = {
                "row_remap_pending": False,
                "row_remap_failure": False,
                "recovery_action": "none",
            }
            temp = None
            prev_t = 0.0
            ev_i = 0
            for tp in polls:
                dt = tp - prev_t
                prev_t = tp
                if any(a <= tp < b for a, b in gone):
                    temp = None
                    continue
                while resets and resets[0] <= tp:
                    resets.pop(0)
                    for k in (
                        "sbe_volatile",
                        "dbe_volatile",
                        "pcie_replay",
                        "nvlink_crc_errors",
                        "nvlink_replay_errors",
                        "nvlink_recovery_errors",
                    ):
                        cnt[k] = 0.0
                busy = fleet.job_on(node.name, g, tp) is not None
                cnt["sbe_volatile"] += _poisson(
                    rng, gp.sbe_per_h * dt / 3600.0 * (1 if busy else 0.2)
                )
                cnt["pcie_replay"] += _poisson(
                    rng, gp.pcie_per_h * dt / 3600.0 * (1 if busy else 0.1)
                )
                faults = set()
                for hook in fleet.ecc_rate:
                    got = hook(node.name, g, tp)
                    if got:
                        fld, per_s, f = got
                        inc = _poisson(rng, per_s * dt)
                        if inc:
                            cnt[fld] += inc
                            if node.ecc_full or fld == "pcie_replay":
                                faults.add(f)  # changed a field this exporter reports
                st = dict(state)
                for hook in fleet.ecc_state:
                    got = hook(node.name, g, tp)
                    if got:
                        st.update(got[0])
                        faults.add(got[1])
                power, steady, mhz, bits, _cf, tfaults = fleet.gpu_point(node.name, g, tp)
                if temp is None or bits & 0x20:
                    # a throttling board is held at its slowdown point: the reading is there
                    temp = steady
                else:
                    temp = steady + (temp - steady) * math.exp(-dt / 45.0)
                ts = t_base + tp + node.offset_s + rng.uniform(0.0, 0.02)
                base_ts = _r3(ts)
                # XIDs: from the kernel log at their own time, or on this poll (exporter gauge)
                while ev_i < len(events) and events[ev_i][2] <= tp:
                    _n, _g, te, xid, changes, f = events[ev_i]
                    ev_i += 1
                    for k2, v2 in changes.items():
                        if k2 in cnt:
                            cnt[k2] += v2
                        else:
                            state[k2] = v2
                            st[k2] = v2
                    xts = t_base + te + node.offset_s + 0.001 if node.xid_from_kernel_log else ts
                    xv = _ecc_value(node, g, _r3(xts), cnt, st, xid)
                    f.touch(xv["ts"])
                    yield xts - t_base - node.offset_s, node.name, "telemetry.ecc", xv
                ev = _ecc_value(node, g, base_ts, cnt, st, None)
                for f in faults:
                    f.touch(base_ts)
                yield tp, node.name, "telemetry.ecc", ev
                th = {
                    "ts": base_ts,
                    "node": node.name,
                    "gpu": g,
                    "gpu_temp_c": int(round(temp + rng.gauss(0, 0.3))),
                    "mem_temp_c": int(round(temp + m["mem_off"] + rng.gauss(0, 0.3))),
                    "power_w": round(
                        power * rng.gauss(1.0, 0.012)
                        if bits & 0x4 == 0
                        else power * rng.uniform(0.985, 1.003),
                        2,
                    ),
                    "sm_clock_mhz": float(round(mhz / 15.0) * 15),
                    "throttle": bits,
                }
                for f in tfaults:
                    f.touch(base_ts)
                yield tp, node.name, "telemetry.thermal", th


def _ecc_value(node, g, ts, cnt, st, xid):
    v = {"ts": ts, "node": node.name, "gpu": g}
    if node.ecc_full:
        for k in ("sbe_volatile", "dbe_volatile", "retired_pages_sbe", "retired_pages_dbe"):
            v[k] = int(cnt[k])
    v["row_remap_pending"] = st["row_remap_pending"]
    v["row_remap_failure"] = st["row_remap_failure"]
    v["xid"] = xid
    v["pcie_replay"] = int(cnt["pcie_replay"])
    if node.ecc_full:
        for k in ("nvlink_crc_errors", "nvlink_replay_errors", "nvlink_recovery_errors"):
            v[k] = int(cnt[k])
        v["recovery_action"] = st["recovery_action"]
    return v


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, int(round(rng.gauss(lam, math.sqrt(lam)))))
    k, p, L = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= L:
            return k
        k += 1


def nic(fleet: Fleet, t_base: float, rng: random.Random):
    """One sample per port on the node's NIC collector poll; counters since boot."""
    for node in fleet.nodes.values():
        polls = list(_grid(rng, node.nic_every_s, fleet.duration_s))
        gaps = [(a, b) for nd, a, b in fleet.nic_gap if nd == node.name]
        resets = sorted(t for nd, t in fleet.nic_reset if nd == node.name)
        for port in node.ports:
            c = {
                "tx_bytes": rng.randrange(10**12, 10**14),
                "symbol_errors": rng.choice([0, 0, 0, 3, 11]),
                "link_downed": rng.choice([0, 0, 1]),
                "rcv_errors": rng.choice([0, 0, 2]),
                "xmit_discards": rng.choice([0, 0, 0, 5]),
                "xmit_wait": rng.randrange(10**6, 10**9),
            }
            c["rx_bytes"] = c["tx_bytes"] + rng.randrange(-(10**11), 10**11)
            if port.roce:
                c.update(
                    out_of_sequence=rng.randrange(0, 50),
                    packet_seq_err=0,
                    np_cnp_sent=rng.randrange(0, 10**5),
                    rp_cnp_handled=rng.randrange(0, 10**5),
                )
            prev = 0.0
            rs = list(resets)
            for tp in polls:
                dt, prev = tp - prev, tp
                if any(a <= tp < b for a, b in gaps):
                    continue
                while rs and rs[0] <= tp:
                    rs.pop(0)
                    for k in c:
                        c[k] = 0
                busy = any(fleet.job_on(node.name, g, tp) for g in (0, node.gpus - 1))
                line = port.rate_gbps * 1e9 / 8
                util = rng.uniform(0.25, 0.45) if busy and port.fabric else rng.uniform(0.001, 0.01)
                c["tx_bytes"] += int(line * util * dt)
                c["rx_bytes"] += int(line * util * dt * rng.uniform(0.98, 1.02))
                if busy and port.fabric:
                    c["xmit_wait"] += _poisson(rng, 2e4 * dt)
                    if port.roce:
                        c["np_cnp_sent"] += _poisson(rng, 3.0 * dt)
                        c["rp_cnp_handled"] += _poisson(rng, 3.0 * dt)
                if rng.random() < 0.002:
                    c["symbol_errors"] += 1
                ts = t_base + tp + node.offset_s + rng.uniform(0.0, 0.02)
                v = {
                    "ts": _r3(ts),
                    "node": node.name,
                    "nic": port.nic,
                    "port": 1,
                    "link_state": "up",
                    "rate_gbps": port.rate_gbps,
                }
                v.update(c)
                yield tp, node.name, "telemetry.nic", v
