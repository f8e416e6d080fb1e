"""Synchronous TP8 x DP training attempts for blind18 (one TP group a node, Megatron order).

Each step every TP group (a node: its 8 GPUs hold the TP all-reduces of the forward and
backward pass, so its ranks report the group's slowest member in ``compute_ms``) computes;
the gradient all-reduce waits for the slowest group, so every other rank's wait is in
``comm_ms``; the loader, and a synchronous save every ``ckpt_every`` steps, are time in
neither.  An attempt is one launch: its first step is cold (x5-7: NCCL init, autotune), the
next ~25 warm up; it ends at ``t_end`` or dies at ``dies_at`` (the step in flight never ends).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field

from bench.blind18.world import World


@dataclass
class Attempt:
    job: str
    tenant: str
    nodes: list[str]
    t_start: float
    t_end: float
    step0: int
    compute_ms: float                   # a healthy step's compute
    reduce_ms: float                    # the gradient all-reduce
    loader_ms: float = 25.0
    ckpt_every: int = 0
    ckpt_s: float = 0.0
    checksum_every: int = 10
    attempt: int = 0
    cold: bool = True                   # a launch (False: already running at the log's start)
    cluster: str | None = None
    dies_at: float = math.inf
    slow_labels: dict = field(default_factory=dict)   # (node, gpu) -> Label while it is slow
    comm: object = None                 # t -> (factor, Label | None): a slower reduce


def occupy(world: World, a: Attempt, load: float = 0.95) -> None:
    """Mark the attempt's GPUs busy (before any temperature is read)."""
    for node in a.nodes:
        for g in range(8):
            world.gpus[(node, g)].busy.append((a.t_start, min(a.t_end, a.dies_at), load))


def run(world: World, a: Attempt, rng: random.Random) -> tuple[float, int]:
    """Emit the attempt's step records; returns the end of its last completed step and the
    last step it saved at (where a relaunch resumes)."""
    tp, dp = 8, len(a.nodes)
    offset = [rng.gauss(1.0, 0.004) for _ in range(dp)]
    loss0 = rng.uniform(2.1, 2.6)
    t = a.t_start + (rng.uniform(20.0, 35.0) if a.cold else 0.0)
    k, last, saved = 0, a.t_start, a.step0
    base = {"cluster": a.cluster} if a.cluster else {}
    while True:
        step = a.step0 + k
        cold = 1.0 if not a.cold else (
            rng.uniform(5.0, 7.0) if k == 0 else 1.0 + 1.5 * math.exp(-k / 5.0))
        shared = rng.gauss(1.0, 0.008)
        groups, touched = [], set()
        for d, node in enumerate(a.nodes):
            speeds = [world.gpus[(node, g)].speed(t) for g in range(tp)]
            worst = max(speeds)
            for g, s in enumerate(speeds):
                lab = a.slow_labels.get((node, g))
                if s > 1.0005 and lab is not None:
                    touched.add(id(lab))
            groups.append(a.compute_ms * cold * shared * offset[d] * worst
                          * rng.gauss(1.0, 0.004))
        slowest = max(groups)
        factor, clab = a.comm(t) if a.comm else (1.0, None)
        reduce = a.reduce_ms * rng.gauss(1.0, 0.03) * factor
        neither = a.loader_ms * rng.uniform(0.8, 1.25)
        ckpt = a.ckpt_every and k > 0 and step % a.ckpt_every == 0
        if ckpt:
            neither += a.ckpt_s * 1000.0 * rng.uniform(0.9, 1.1)
        wall = slowest + reduce + neither
        end = t + wall / 1000.0
        if end >= a.dies_at or end >= a.t_end:
            return last, saved
        if ckpt:
            saved = step
        labels = [lab for lab in a.slow_labels.values() if id(lab) in touched]
        if factor > 1.0 and clab is not None:
            labels.append(clab)
        loss = loss0 * (1.0 - 0.25 * (1 - math.exp(-step / 4000.0)))
        for d, node in enumerate(a.nodes):
            rep_loss = loss * rng.gauss(1.0, 0.01)
            for g in range(tp):
                rank = g + tp * d
                comp = groups[d] * rng.gauss(1.0, 0.0015)
                comm = max(0.5, reduce + (slowest - groups[d]) + rng.gauss(0.0, 0.6))
                rec = {"ts": round(end + rng.uniform(0.0, 0.004), 3), "job": a.job,
                       "step": step, "rank": rank, "node": node, "gpu": g,
                       "step_ms": round(comp + comm + neither, 2), "compute_ms": round(comp, 2),
                       "comm_ms": round(comm, 2), "tp_rank": g, "pp_rank": 0, "dp_rank": d,
                       "loss": round(rep_loss, 5),
                       "grad_norm": round(abs(rng.gauss(0.85, 0.05)), 5), "tenant": a.tenant,
                       **base}
                if a.checksum_every and step % a.checksum_every == 0:
                    rec["param_checksum"] = hashlib.blake2b(
                        f"{a.cluster}/{a.job}/{a.attempt}/{step}/{g}".encode(),
                        digest_size=8).hexdigest()
                world.emit("telemetry.step", rec, *labels)
        last, t, k = end, end + rng.uniform(0.001, 0.004), k + 1
