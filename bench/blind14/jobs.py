"""Synchronous training jobs of blind14: one step record per rank per step.

Megatron rank order (TP fastest, then DP, then PP): `rank = tp + TP * (dp + DP * pp)`, eight
ranks a node. A step is: each rank's compute (its TP group blocks in the per-layer all-reduces
with its slowest member, so all of a TP group report that member's compute), then time in
neither (data loader, checkpoint save), then the collectives until the slowest rank arrives
(every wait lands in `comm_ms`). Pipeline stages differ in compute (never peers) and the
slowest stage sets the step. Faults and routine shapes are `Hook`s: each may change a rank's
compute, its time in neither, its loss or its gradient norm, and touches its label when it
does.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field

from bench.blind14.world import Label, World


class Hook:
    """A fault (with a label) or a routine shape (without) acting on a job's steps."""

    label: Label | None = None
    hit: str | None = None           # the node whose record this step's change landed on

    def begin_step(self, job: Job, step: int, t: float) -> None:
        """Called once a step, before any rank's numbers are drawn."""

    def compute(self, job: Job, rank: int, t: float, compute_s: float) -> float:
        return 1.0

    def neither(self, job: Job, rank: int, step: int, t: float, ckpt_s: float) -> float:
        return 0.0

    def loss(self, job: Job, rank: int, step: int) -> float:
        return 1.0

    def grad(self, job: Job, rank: int, step: int) -> float:
        return 1.0


@dataclass
class Job:
    name: str
    tenant: str
    nodes: list[str]
    tp: int
    pp: int
    dp: int
    compute_s: list[float]          # per pipeline stage
    comm_s: float
    step0: int
    checksum_every: int
    ckpt_every: int = 0
    ckpt_s: tuple[float, float] = (8.0, 12.0)
    rank_fields: bool = True
    hooks: list[Hook] = field(default_factory=list)

    def where(self, rank: int) -> tuple[str, int]:
        return self.nodes[rank // 8], rank % 8

    def coords(self, rank: int) -> tuple[int, int, int]:
        """(tp, pp, dp) of a rank."""
        tp = rank % self.tp
        rest = rank // self.tp
        return tp, rest // self.dp, rest % self.dp

    @property
    def ranks(self) -> int:
        return self.tp * self.pp * self.dp


def _checksum(job: str, step: int, tp: int, pp: int) -> str:
    return hashlib.sha1(f"{job}/{step}/{tp}/{pp}".encode()).hexdigest()[:16]


def run(world: World, job: Job, start: float) -> None:
    """Every step of ``job`` from true time ``start`` to the log's end."""
    rng = random.Random(f"{world.seed}-{job.name}-steps")
    node_of = {n.name: n for n in world.nodes.values()}
    for r in range(job.ranks):
        world.load[job.where(r)] = 1.0
    t, step = start, job.step0
    gn_base = rng.uniform(0.6, 1.1)
    while True:
        for h in job.hooks:
            h.hit = None
            h.begin_step(job, step, t)
        raw = []
        for r in range(job.ranks):
            _, pp, _ = job.coords(r)
            c = job.compute_s[pp] * (1.0 + rng.gauss(0.0, 0.008))
            for h in job.hooks:
                c *= h.compute(job, r, t, c)
            raw.append(c)
        comp = list(raw)
        for r in range(job.ranks):            # a TP group computes at its slowest member's pace
            g0 = r - r % job.tp
            comp[r] = max(raw[g0:g0 + job.tp])
        ckpt = {}
        if job.ckpt_every and step % job.ckpt_every == 0 and step > job.step0:
            ckpt = {n: rng.uniform(*job.ckpt_s) for n in job.nodes}
        neither = []
        for r in range(job.ranks):
            node, _ = job.where(r)
            base = rng.uniform(0.004, 0.012) + ckpt.get(node, 0.0) * rng.uniform(0.97, 1.03)
            extra = sum(h.neither(job, r, step, t, ckpt.get(node, 0.0)) for h in job.hooks)
            neither.append(base + extra)
        arrive = max(c + n for c, n in zip(comp, neither, strict=True))
        length = arrive + job.comm_s * (1.0 + abs(rng.gauss(0.0, 0.03)))
        if t + length + 0.01 > world.t1:
            return
        end = t + length
        loss0 = 1.9 + 0.9 * math.exp(-step / 40000.0)
        for r in range(job.ranks):
            node, gpu = job.where(r)
            tp, pp, dp = job.coords(r)
            skew = rng.uniform(0.0, 0.004)
            step_ms = round((length + skew) * 1000.0, 2)
            compute_ms = round(comp[r] * 1000.0, 2)
            comm_ms = round(step_ms - compute_ms - neither[r] * 1000.0, 2)
            if compute_ms + comm_ms > step_ms:
                comm_ms = round(comm_ms - 0.01, 2)
            v = {"job": job.name, "step": step, "rank": r, "node": node, "gpu": gpu,
                 "step_ms": step_ms, "compute_ms": compute_ms, "comm_ms": max(comm_ms, 0.0),
                 "tenant": job.tenant}
            if job.rank_fields:
                v.update(tp_rank=tp, pp_rank=pp, dp_rank=dp)
            lf = math.prod(h.loss(job, r, step) for h in job.hooks)
            if pp == job.pp - 1:
                v["loss"] = round(loss0 * (1.0 + rng.gauss(0.0, 0.012)) * lf, 5)
            gf = math.prod(h.grad(job, r, step) for h in job.hooks)
            v["grad_norm"] = round(gn_base * (1.0 + rng.gauss(0.0, 0.04)) * gf, 5)
            if job.checksum_every and step % job.checksum_every == 0:
                v["param_checksum"] = _checksum(job.name, step, tp, pp)
            world.emit(end + skew, "telemetry.step", v, node_of[node])
        if ckpt:
            world.effect("checkpoint", end + node_of[job.nodes[0]].clock_s - length,
                         end + node_of[job.nodes[0]].clock_s, job=job.name)
        for h in job.hooks:
            if h.label is not None and h.hit is not None:
                h.label.touch(end + node_of[h.hit].clock_s)
        t, step = end + rng.uniform(0.0, 0.003), step + 1
