"""Synchronous training whose communication overlaps its compute (FSDP prefetch, TP comm
overlap, DP gradient buckets reduced inside backward).

Each step every group of ranks that must move together (a TP group; a single rank under pure
FSDP) does its own work in ``own`` ms. The step cannot end before the slowest group's work.
A faster group waits for it -- and with overlap the wait sits where the framework blocks: a
share ``hidden`` of it inside the compute stream (the next layer's all-gather, the bucket's
reduce), so it is timed in ``compute_ms``; only the rest shows in ``comm_ms`` with the exposed
tail of the collective. The slowest group never waits: its ``comm_ms`` is the smallest, its
``compute_ms`` the largest by ``(1 - hidden) x`` the gap. With ``hidden = 0`` this is classic
synchronous training (every wait in ``comm_ms``). Megatron order: ``rank = tp + TP * dp``,
eight ranks a node.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.blind16.world import World


@dataclass
class Job:
    name: str
    tenant: str
    nodes: list[str]
    tp: int
    dp: int
    compute_ms: float          # one group's work a step, healthy
    exposed_ms: float          # the collective's tail no compute hides
    hidden: float              # share of any wait timed inside compute
    rank_fields: bool = True
    checksum_every: int = 10   # 0: no comparable checksum (FSDP shards the parameters)
    noise: float = 0.006       # a group's own step-to-step spread (CUDA graphs: small)
    # job-wide scripted effects, each a function of the step's start time:
    slow: Callable[[float], float] = lambda t: 1.0        # every group's work x (driver, ...)
    comm_extra_ms: Callable[[float], float] = lambda t: 0.0   # a longer reduce (a bad port)
    stall_ms: Callable[[float], float] = lambda t: 0.0    # a collective held (fabric sweep)
    loader_ms: Callable[[float], float] = lambda t: 25.0  # time in neither (loader, saves)
    labels: list = field(default_factory=list)   # (label, t0, t1): step records in it touch it

    def place(self, rank: int) -> tuple[str, int]:
        return self.nodes[rank // 8], rank % 8


def run(world: World, job: Job, t_start: float, t_end: float, first_step: int = 0,
        cold: bool = False) -> int:
    """Steps of ``job`` from ``t_start`` until ``t_end``; returns the next step number."""
    rng = world.rng
    ranks = job.tp * job.dp
    gpus = [world.gpus[job.place(r)] for r in range(ranks)]
    t, step = t_start, first_step
    level = 1.0
    while True:
        level = 0.7 * level + 0.3 * rng.gauss(1.0, 0.01)        # the batch's own length
        base = job.compute_ms * level * job.slow(t)
        if cold and step == first_step:
            base *= rng.uniform(4.0, 6.0)                         # compile, autotune, NCCL init
        own = []
        for g in range(job.dp):
            members = gpus[g * job.tp:(g + 1) * job.tp]
            speed = min(m.speed(t) for m in members)              # TP: the slowest member
            own.append(base * rng.gauss(1.0, job.noise) / speed)
        slowest = max(own)
        extra = job.comm_extra_ms(t)
        stall = job.stall_ms(t)
        loader = job.loader_ms(t) * rng.uniform(0.9, 1.1)
        step_ms = slowest + job.exposed_ms + extra + stall + loader
        if t + step_ms / 1000.0 > t_end:
            return step
        t += step_ms / 1000.0
        touched = [lab for lab, a, b in job.labels if a <= t <= b]
        loss = 2.1 + 1.4 * math.exp(-step / 900.0)
        for r in range(ranks):
            g = r // job.tp
            gap = slowest - own[g]
            compute = slowest - (1.0 - job.hidden) * gap + job.hidden * extra
            comm = (job.exposed_ms * rng.uniform(0.92, 1.08) + (1.0 - job.hidden) * gap
                    + (1.0 - job.hidden) * extra + stall)
            node, idx = job.place(r)
            ts = t + rng.uniform(0.0, 0.004)
            value = {"ts": round(ts, 4), "job": job.name, "step": step, "rank": r,
                     "node": node, "gpu": idx, "tenant": job.tenant,
                     "step_ms": round(compute + comm + loader, 3),
                     "compute_ms": round(compute, 3), "comm_ms": round(comm, 3),
                     "loss": round(loss * rng.gauss(1.0, 0.01), 5),
                     "grad_norm": round(abs(rng.gauss(1.1, 0.08)), 5)}
            if job.rank_fields:
                value.update(tp_rank=r % job.tp, pp_rank=0, dp_rank=g)
            if job.checksum_every and step % job.checksum_every == 0:
                value["param_checksum"] = hashlib.sha1(
                    f"{job.name}/{r % job.tp}/{step}".encode()).hexdigest()[:16]
            world.emit("telemetry.step", value, *touched)
            gpus[r].step_end.append(ts)
            gpus[r].step_share.append(min(1.0, own[g] / step_ms))
        step += 1
