"""Synchronous training jobs: attempts, Megatron rank layout, one step record per rank.

A rank's compute is its stage's base x a persistent per-rank offset x per-step noise x the
workload (MoE expert routing) x warm-up x fault hooks; a TP group runs at its slowest
member's pace (the forward-backward timer holds the TP all-reduces). The step ends when the
slowest rank has computed, and every rank waits for it in `comm_ms`; checkpoints and loaders
are time in neither.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field


@dataclass
class Attempt:
    start: float
    end: float                    # no step ends after this (a crash loses the step in flight)
    place: list                   # rank -> (node, gpu)
    first_step: int
    warm: bool = True


@dataclass
class Job:
    name: str
    tp: int
    pp: int
    dp: int
    stage_ms: list                # base compute a step per pipeline stage
    comm_ms: float                # the collectives' own time (the fastest rank's wait)
    neither_ms: float
    ckpt_every: int = 0
    ckpt_s: tuple = (18.0, 26.0)
    checksum_every: int = 0
    tenant: str | None = None
    rank_fields: bool = True
    moe: object = None            # (pp, dp, step) -> compute factor
    bad_step: int | None = None   # a bad data batch: every replica's loss spikes (healthy)
    spike_loss: float = 1.0
    spike_grad: float = 1.0
    attempts: list = field(default_factory=list)
    util: float = 0.9


def placement(nodes: list[str], gpus: int, base: int = 0) -> list:
    return [(n, base + g) for n in nodes for g in range(gpus)]


def _checksum(*parts) -> str:
    return hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).hexdigest()


def simulate(job: Job, rng: random.Random, gpus: dict, rank_hooks: list, job_hooks: list,
             t_end: float, node_ts) -> list[dict]:
    """Step records of every attempt; marks each GPU busy while its attempt runs.

    `rank_hooks`: objects with `.label` and `compute(job, node, gpu, t) -> factor`;
    `job_hooks`: `.label` and `comm(job, t0, t1) -> (factor, stall_s)`.
    """
    out: list[dict] = []
    world = job.tp * job.pp * job.dp
    for ai, att in enumerate(job.attempts):
        assert len(att.place) == world, (job.name, len(att.place), world)
        off = [rng.gauss(1.0, 0.006) for _ in range(world)]
        t, step, j = att.start, att.first_step, 0
        warm0 = rng.uniform(6.0, 9.0)
        while True:
            touched: set = set()
            comp = [0.0] * world
            for r in range(world):
                tp, rest = r % job.tp, r // job.tp
                dp, pp = rest % job.dp, rest // job.dp
                c = job.stage_ms[pp] * off[r] * rng.gauss(1.0, 0.01)
                if job.moe is not None:
                    c *= job.moe(pp, dp, step)
                if att.warm:
                    c *= warm0 if j == 0 else 1.0 + 1.5 * math.exp(-j / 4.0) if j < 16 else 1.0
                node, g = att.place[r]
                for h in rank_hooks:
                    f = h.compute(job, node, g, t)
                    if f != 1.0:
                        c *= f
                        touched.add(h.label)
                comp[r] = c
            for r0 in range(0, world, job.tp):     # a TP group at its slowest member's pace
                m = max(comp[r0:r0 + job.tp])
                for r in range(r0, r0 + job.tp):
                    comp[r] = m * rng.gauss(1.0, 0.002)
            ckpt = job.ckpt_every and step > att.first_step and step % job.ckpt_every == 0
            ck = rng.uniform(*job.ckpt_s) * 1000 if ckpt else 0.0
            neither = [job.neither_ms * rng.uniform(0.9, 1.1) + (ck * rng.uniform(0.95, 1.0)
                                                                 if ckpt else 0.0)
                       for _ in range(world)]
            comm = job.comm_ms * rng.gauss(1.0, 0.02)
            t_guess = (max(c + n for c, n in zip(comp, neither, strict=True)) + comm) / 1000.0
            stall = 0.0
            for h in job_hooks:
                f, s = h.comm(job, t, t + t_guess)
                if f != 1.0 or s:
                    comm = comm * f
                    stall += s
                    touched.add(h.label)
            T = max(c + n for c, n in zip(comp, neither, strict=True)) + comm + stall * 1000.0
            t_next = t + T / 1000.0
            if t_next > att.end or t_next > t_end:
                break
            if t_next < 0:                          # running before the log starts
                t, step, j = t_next, step + 1, j + 1
                continue
            lo = hi = None
            loss0 = 2.4 * (1 - 0.15 * min(1.0, step / 5000.0))
            for r in range(world):
                tp, rest = r % job.tp, r // job.tp
                dp, pp = rest % job.dp, rest // job.dp
                node, g = att.place[r]
                ts = node_ts(node, t_next + rng.uniform(0.0, 0.02))
                c, n = round(comp[r], 3), round(neither[r], 3)
                cm = round(T - comp[r] - neither[r], 3)
                rec = {"_t": t_next, "ts": round(ts, 4), "job": job.name, "step": step, "rank": r,
                       "node": node, "gpu": g, "step_ms": round(c + cm + n + 0.001, 3),
                       "compute_ms": c, "comm_ms": max(cm, 0.0)}
                if job.rank_fields:
                    rec.update(tp_rank=tp, pp_rank=pp, dp_rank=dp)
                spike = job.bad_step is not None and step == job.bad_step
                if pp == job.pp - 1:
                    rec["loss"] = round(loss0 * rng.gauss(1.0, 0.01)
                                        * (job.spike_loss if spike else 1.0), 5)
                rec["grad_norm"] = round(1.1 * rng.gauss(1.0, 0.03)
                                         * (job.spike_grad if spike else 1.0), 5)
                if job.checksum_every and step % job.checksum_every == 0:
                    rec["param_checksum"] = _checksum(job.name, ai, step, tp, pp)
                if job.tenant:
                    rec["tenant"] = job.tenant
                out.append(rec)
                lo = ts if lo is None else min(lo, ts)
                hi = ts if hi is None else max(hi, ts)
            for lab in touched:
                lab.touch(lo, hi)
            t, step, j = t_next, step + 1, j + 1
        last = t
        for node, g in att.place:
            gpus[(node, g)].busy.append((max(att.start, 0.0), last, job.util))
        att.last_end = last
        att.last_step = step - 1
    return out
