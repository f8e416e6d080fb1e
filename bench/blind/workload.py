"""Synchronous training jobs: attempts (start, crash, restart) and one step record per rank.

The step model is the physics of synchronous data/tensor/pipeline parallelism
as the contract describes it: every rank of a job ends a step at about the
same time. A rank's ``compute_ms`` is its own work; a rank that is ready
early waits in collectives (``comm_ms``), so a slow GPU shows as more
``compute_ms`` on its own rank and more ``comm_ms`` on everyone else. The
TP peers of a slow GPU wait inside the tensor-parallel all-reduces (comm).
The rest of a step (data loading, checkpoint writes) is in neither.

Rank order is Megatron's: tensor fastest, then data, then pipeline.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from bench.blind.hardware import Attempt, Grid
from bench.blind.plan import Fault, Job, Plan

INIT_S = 75.0  # model load after a (re)start, before the first step


def attempts_of(job: Job, plan: Plan) -> list[Attempt]:
    """The job's runs: from its start or restart to its crash, its end or the log's end."""
    end = plan.t0 + plan.duration_s
    out: list[Attempt] = []
    nodes = list(job.nodes)
    begin = job.start
    for c in sorted(job.crashes, key=lambda c: c.ts):
        out.append(Attempt(job.name, len(out), list(nodes), begin, begin + INIT_S, c.ts, c.hang))
        if c.restart_ts is None or c.restart_ts >= end:
            return [a for a in out if a.begin < end]
        nodes = [c.replace.get(n, n) for n in nodes]
        begin = c.restart_ts
    out.append(Attempt(job.name, len(out), nodes, begin, begin + INIT_S, min(job.end, end), False))
    return [a for a in out if a.begin < end]


class StepOutput:
    """Step records of one job, and the step end times the NIC counters are built from."""

    def __init__(self) -> None:
        self.records: list[tuple[float, str, dict]] = []
        self.step_ends: list[tuple[list[str], np.ndarray, np.ndarray]] = []  # nodes, ends, ckpt


def _checksum(*parts) -> str:
    return hashlib.blake2b(repr(parts).encode(), digest_size=8).hexdigest()


def simulate_job(
    job: Job, attempts: list[Attempt], plan: Plan, grid: Grid, faults: list[Fault],
    rng: np.random.Generator, out: StepOutput,
) -> None:
    gpn = plan.shape.gpus_per_node
    n = job.ranks
    tp_idx = np.arange(n) % job.tp
    dp_idx = (np.arange(n) // job.tp) % job.dp
    pp_idx = np.arange(n) // (job.tp * job.dp)
    stage = np.array([job.stage_extra[p] for p in pp_idx])
    shard = rng.uniform(0.7, 1.3, (job.tp, job.pp))
    compute0 = job.step_s * (1.0 - job.comm_frac) * 0.97
    other0 = job.step_s * (1.0 - job.comm_frac) * 0.03
    comm0 = job.step_s * job.comm_frac
    mine = [f for f in faults if f.job == job.name or _touches_job(f, job, attempts)]
    every = max(job.ckpt_every, 1)
    last_ckpt = (job.first_step - 1) // every * every
    step = job.first_step
    for a in attempts:
        gidx = np.array([grid.gindex(a.nodes[r // gpn], r % gpn) for r in range(n)])
        if a.index > 0:
            step = last_ckpt + 1
        t = a.first_step
        k_in = 0
        if t < plan.t0 - 60.0:  # running long before the log starts: join it in steady state
            t = plan.t0 - 60.0 + float(rng.uniform(0, job.step_s))
            k_in = 2
        ends: list[float] = []
        ckpts: list[float] = []
        while True:
            mid = t + job.step_s / 2
            noise = rng.lognormal(0.0, 0.012, n)
            seqlen = 1.0 + job.seqlen_sigma * rng.standard_normal(job.dp)[dp_idx]
            warm = 6.0 if k_in == 0 else (1.4 if k_in == 1 else 1.0)
            fac = np.empty(n)
            base_fac = np.empty(n)
            for r in range(n):
                fac[r], base_fac[r] = grid.compute_factor(int(gidx[r]), mid)
            compute = compute0 * (1 + stage) * np.maximum(seqlen, 0.6) * noise * warm
            other = other0 * rng.lognormal(0.0, 0.2, n)
            tp_wait = np.zeros(n)
            comm = comm0 * rng.lognormal(0.0, 0.03)
            stall = 0.0
            changed: list[Fault] = []
            slow = fac / base_fac
            for f in mine:
                if f.what in ("silent_slow", "slow_from_start") and f.active(mid):
                    slow[f.rank] *= 1.0 + f.params["slow"]
                    changed.append(f)
                elif f.what == "nvlink" and f.active(mid):
                    node_ranks = [r for r in range(n) if a.nodes[r // gpn] == f.node]
                    tp_wait[node_ranks] += f.params["tp_delay"] * compute0
                    changed.append(f)
                elif f.what == "nic_ber" and f.active(mid) and f.node in a.nodes:
                    comm *= 1.0 + f.params["slow"]
                    changed.append(f)
                elif f.what == "nic_flap" and f.node in a.nodes:
                    for (d0, _d1) in f.params["downs"]:
                        if t <= d0 < t + job.step_s:
                            stall += float(rng.uniform(6.0, 15.0))
                            changed.append(f)
                elif f.what in ("thermal", "power_brake", "slow_from_start_hot"):
                    ratio = fac / base_fac
                    if any(ratio[r] > 1.002 and _on(f, a.nodes[r // gpn], r % gpn)
                           for r in range(n)):
                        changed.append(f)
            compute = compute * base_fac * slow
            for ts_stall in job.loader_stalls:
                if t <= ts_stall < t + job.step_s:
                    other[int(rng.integers(0, n))] += float(rng.uniform(2.0, 4.0)) * job.step_s
            is_ckpt = job.ckpt_every > 0 and step % job.ckpt_every == 0 and k_in > 0
            if is_ckpt:
                other += job.ckpt_s
            ready = other + compute
            tp_groups = (np.arange(n) // job.tp)
            group_ready = np.zeros(n // job.tp)
            np.maximum.at(group_ready, tp_groups, ready + tp_wait)
            finish = float(group_ready.max()) + comm + stall
            if t + finish > a.stop:
                break
            step_ms = finish * 1000.0
            ends.append(t + finish)
            if is_ckpt:
                ckpts.append(t + finish)
                last_ckpt = step
            eps = rng.uniform(0.0, 0.03, n)
            grad_base = 1.2 * math.exp(-step / 80_000.0) + 0.25
            loss_rep = 2.0 + 1.8 * math.exp(-step / 30_000.0) + 0.04 * rng.standard_normal(job.dp)
            grads = grad_base * shard[tp_idx, pp_idx] * rng.lognormal(0.0, 0.04, n)
            for ts_spike in job.data_spikes:
                if t <= ts_spike < t + finish:
                    grads[int(rng.integers(0, n))] *= float(rng.uniform(2.5, 4.0))
            ck_ok = job.checksum_every > 0 and step % job.checksum_every == 0
            for r in range(n):
                ts = t + finish + float(eps[r])
                rec = {
                    "ts": round(ts, 6), "job": job.name, "step": step, "rank": r,
                    "node": a.nodes[r // gpn], "gpu": r % gpn, "step_ms": round(step_ms, 3),
                    "cluster": plan.shape.name, "tenant": job.tenant,
                }
                if job.split_fields:
                    c_ms = float(compute[r]) * 1000.0
                    rec["compute_ms"] = round(c_ms, 3)
                    rec["comm_ms"] = round(max(0.0, step_ms - c_ms - float(other[r]) * 1000.0), 3)
                if job.parallel_fields:
                    rec["tp_rank"] = int(tp_idx[r])
                    rec["pp_rank"] = int(pp_idx[r])
                    rec["dp_rank"] = int(dp_idx[r])
                if job.grad:
                    g_val = float(grads[r])
                    for f in mine:
                        if (f.what == "sdc_gradnorm" and f.rank == r and f.active(t)
                                and rng.random() < 0.35):
                            g_val *= float(rng.lognormal(3.5, 1.2))
                            f.touch(ts)
                    rec["grad_norm"] = round(g_val, 6)
                    if int(pp_idx[r]) == job.pp - 1:
                        rec["loss"] = round(float(loss_rep[dp_idx[r]]), 5)
                if ck_ok:
                    ck = _checksum(job.name, a.index, int(tp_idx[r]), int(pp_idx[r]), step)
                    for f in mine:
                        if f.what == "sdc_checksum" and f.rank == r and f.active(t):
                            ck = _checksum("corrupt", f.fid, step)
                            f.touch(ts)
                    rec["param_checksum"] = ck
                out.records.append((ts, "telemetry.step", rec))
            for f in set(changed):
                f.touch(round(t + finish + float(eps.min()), 6))
                f.touch(round(t + finish + float(eps.max()), 6))
            t += finish
            step += 1
            k_in += 1
        out.step_ends.append((a.nodes, np.array(ends), np.array(ckpts)))


def _on(f: Fault, node: str, gpu: int) -> bool:
    if f.what == "power_brake":
        return node == f.node
    return node == f.node and gpu == f.gpu


def _touches_job(f: Fault, job: Job, attempts: list[Attempt]) -> bool:
    return any(f.node in a.nodes for a in attempts) and f.what in (
        "power_brake", "thermal", "slow_from_start_hot", "nic_ber", "nic_flap")
