"""Synchronous training jobs of a blind6 story: rank layout, attempts, one step record per rank.

A step: every rank computes its share (microbatches x its stage's per-microbatch time x its
own offset and noise x what faults do to it); a tensor-parallel group runs at its slowest
member's pace (the TP all-reduces sit inside forward-backward); a data-parallel replica's
pipeline takes its slowest stage's time plus the interleaved schedule's bubble; the step ends
when the slowest replica is done and the gradient all-reduce is over, plus the time in
neither (loader, optimizer, checkpoint writes). `comm_ms` is the rest.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.blind6.fleet import Node


@dataclass
class Attempt:
    start_t: float
    place: list[tuple[Node, int]]      # rank -> (node, local gpu)
    first_step: int
    stop_t: float = math.inf           # crash / kill: the GPUs are released then
    stall_t: float = math.inf          # a hang: no step ends after it (stop_t comes later)
    sigterm_t: float = math.inf        # preemption: checkpoint at the next step, then exit
    util: float = 1.0                  # share of the board (MIG slices < 1)
    # filled by run():
    last_step: int = -1
    last_ckpt: int = -1
    end_t: float = 0.0


@dataclass
class Job:
    name: str
    tp: int = 1
    pp: int = 1
    dp: int = 1
    vchunks: int = 1                   # interleaved pipeline chunks per stage
    rank_fields: bool = True
    stage_ms: tuple[float, ...] = (100.0,)   # compute per microbatch, per pipeline stage
    micro: Callable[[int], int] = lambda step: 8
    allreduce_ms: float = 120.0
    ckpt: Callable[[int, float], float] = lambda step, t: 0.0   # seconds written at this step
    checksum_every: int = 1
    loss0: float = 2.4
    jitter: float = 0.010              # per-step compute noise (log-sd)
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def world(self) -> int:
        return self.tp * self.pp * self.dp

    def coords(self, rank: int) -> tuple[int, int, int]:
        """(tp, pp, dp) of a rank, Megatron order: TP fastest, then DP, then PP."""
        return rank % self.tp, rank // (self.tp * self.dp), (rank // self.tp) % self.dp


def checksum(job: str, tp: int, pp: int, step: int) -> str:
    return hashlib.blake2b(f"{job}/{tp}/{pp}/{step}".encode(), digest_size=8).hexdigest()


def run(job: Job, att: Attempt, faults: list, rng: random.Random, out: list) -> None:
    """Append the attempt's step records (true_t, topic, value) to `out`; fill att's results."""
    n = job.world
    offset = [rng.gauss(0.0, 0.006) for _ in range(n)]
    holds = [node.hold(gpu, att.start_t, att.stop_t, att.util) for node, gpu in set(att.place)]
    t = att.start_t + rng.uniform(20.0, 35.0)     # container start, NCCL init, checkpoint load
    step = att.first_step
    last = -1
    while True:
        k = step - att.first_step
        warm = 1.0 + 5.0 * math.exp(-k / 2.5)
        m = job.micro(step)
        comp = []
        for r in range(n):
            tp, pp, dp = job.coords(r)
            node, gpu = att.place[r]
            f = warm * math.exp(offset[r] + rng.gauss(0.0, job.jitter))
            for fl in faults:
                f *= fl.compute(job.name, r, node.name, gpu, t)
            comp.append(m * job.stage_ms[pp] * f)
        if job.tp > 1:   # a TP group runs at its slowest member's pace
            for g in range(0, n, job.tp):
                top = max(comp[g:g + job.tp])
                for r in range(g, g + job.tp):
                    comp[r] = top * rng.uniform(0.995, 1.0)
        pipe = []
        for dp in range(job.dp):
            stages = [max(comp[job.tp * (dp + job.dp * pp) + tp] for tp in range(job.tp))
                      for pp in range(job.pp)]
            bubble = (job.pp - 1) / job.vchunks * sum(job.stage_ms) / job.pp * warm
            pipe.append(max(stages) + bubble)
        final = t >= att.sigterm_t
        write_s = job.ckpt(step, t) if not final else rng.uniform(14.0, 22.0)
        neither = rng.uniform(15.0, 30.0) + 30.0 + write_s * 1000.0
        ar = job.allreduce_ms * math.exp(rng.gauss(0.0, 0.03)) if job.dp > 1 else 0.0
        step_ms = max(pipe) + ar + neither
        end = t + step_ms / 1000.0
        if end > min(att.stop_t, att.stall_t):
            break
        if write_s > 0:
            att.last_ckpt = step
        loss = job.loss0 + 5.0 * math.exp(-step / 350.0) + rng.gauss(0.0, 0.03)
        for r in range(n):
            tp, pp, dp = job.coords(r)
            node, gpu = att.place[r]
            ts = end + rng.uniform(0.0, 0.015)
            v = {"ts": round(node.clock(ts), 3), "job": job.name, "step": step, "rank": r,
                 "node": node.name, "gpu": gpu, "step_ms": round(step_ms, 2),
                 "compute_ms": round(comp[r], 2), "comm_ms": round(step_ms - comp[r] - neither, 2),
                 "grad_norm": round(abs(1.1 + 0.6 * math.exp(-step / 200.0)
                                        + rng.gauss(0.0, 0.04)), 4)}
            if job.rank_fields:
                v.update(tp_rank=tp, pp_rank=pp, dp_rank=dp)
            if pp == job.pp - 1:
                v["loss"] = round(loss + rng.gauss(0.0, 0.01), 4)
            if step % job.checksum_every == 0:
                v["param_checksum"] = checksum(job.name, tp, pp, step)
            for fl in faults:
                fl.step_record(job.name, r, v)
            out.append((ts, "telemetry.step", v))
        last = step
        t = end
        step += 1
        if final:
            break
    att.last_step = last
    att.end_t = t if final or att.stop_t == math.inf else att.stop_t
    for b in holds:                        # the hold ends when the attempt does
        b.t1 = att.end_t
