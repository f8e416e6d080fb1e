"""Synchronous data-parallel training as telemetry.step records, with workload and fault hooks.

Every rank computes (`compute_ms`), waits in its data loader or a checkpoint (time in neither),
then blocks in the collectives until the slowest rank of the job arrives: its wait is in
`comm_ms`, so a slow rank shows in `compute_ms` and its peers' `comm_ms` grows. Mixed
precision with a **dynamic loss scaler** (Megatron `--fp16`, apex / torch.amp GradScaler):
when any rank's gradients hold an inf, the all-reduced `found_inf` makes every rank skip the
optimizer step (no parameter change, the step is a little shorter, the scale halves); a rank
whose local gradient norm is not finite reports it as `null` (DESIGN allows no inf).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field

from bench.blind12.world import Label, World


@dataclass(frozen=True)
class Rank:
    rank: int
    node: str
    gpu: int
    tp: int
    dp: int


@dataclass
class Job:
    name: str
    tenant: str
    ranks: list[Rank]
    compute_ms: float
    comm_ms: float
    other_ms: float
    first_step: int = 0
    cold: bool = True                 # started inside the log: compile, NCCL init, warm-up
    fp16: bool = True
    overflow_per_step: float = 1 / 150
    ckpt_every: int = 0
    ckpt_s: tuple = (8.0, 12.0)
    rank_fields: bool = True
    hooks: list = field(default_factory=list)


class Hook:
    """What a fault or a workload shape does to a job; every method may touch a label."""
    label: Label | None = None

    def compute(self, r: Rank, t0: float, t1: float) -> float:      # factor on compute
        return 1.0

    def other_ms(self, r: Rank, t0: float, t1: float) -> float:     # extra time in neither
        return 0.0

    def comm(self, job: Job, r: Rank, t0: float, t1: float) -> float:  # factor on collectives
        return 1.0

    def non_finite(self, r: Rank, step: int, t0: float) -> bool:    # local grads hold an inf
        return False

    def kill(self, r: Rank, t0: float, t1: float):                   # (ts, xid) or None
        return None


def _checksum(job: str, tp: int, version: int) -> str:
    return hashlib.blake2b(f"{job}/{tp}/{version}".encode(), digest_size=8).hexdigest()


def run(world: World, job: Job, t_start: float, t_stop: float, rng: random.Random) -> float:
    """Steps of `job` from t_start until t_stop or a kill; returns the time its GPUs free up."""
    t, step, version = t_start, job.first_step, job.first_step
    scale_warm = rng.randint(3, 7) if job.cold else 0   # loss scale still too high: skipped
    tps = sorted({r.tp for r in job.ranks})
    n = 0
    while True:
        warm = (1.0 + rng.uniform(4.5, 8.0)) if (job.cold and n == 0) else (
            1.0 + (0.45 * math.exp(-n / 6.0) if job.cold else 0.0))
        base = job.compute_ms * warm * math.exp(rng.gauss(0, 0.025))
        load_ms = job.other_ms * (1.0 + (rng.uniform(20, 40) if job.cold and n == 0 else 0))
        ckpt = job.ckpt_every and step > job.first_step and step % job.ckpt_every == 0
        ckpt_ms = rng.uniform(*job.ckpt_s) * 1000 if ckpt else 0.0
        healthy_inf = set()
        if job.fp16 and (n < scale_warm or rng.random() < job.overflow_per_step):
            healthy_inf = set(rng.sample(tps, rng.randint(1, len(tps))))
        est = (base + load_ms + job.comm_ms + ckpt_ms) / 1000.0
        rows, pre = [], {}
        for r in job.ranks:
            labs: list[Label] = []
            f = 1.0
            extra = 0.0
            for h in job.hooks:
                x = h.compute(r, t, t + est)
                y = h.other_ms(r, t, t + est)
                if x != 1.0 or y:
                    f *= x
                    extra += y
                    labs.append(h.label)
            c = base * f * rng.gauss(1.0, 0.012)
            o = load_ms * rng.uniform(0.8, 1.2) + extra + ckpt_ms
            pre[r.rank] = c + o
            rows.append((r, c, o, labs))
        kills = [(k, r) for r in job.ranks for h in job.hooks
                 if (k := h.kill(r, t, t + est)) is not None]
        if kills:
            (kt, code, klab), kr = min(kills, key=lambda x: x[0][0])
            world.xid(kr.node, kr.gpu, kt, code, *([klab] if klab else []))
            for r in job.ranks:
                world.occupy(r.node, r.gpu, t_start, kt)
            return kt
        inf_rank = {r.rank for r in job.ranks for h in job.hooks
                    if h.non_finite(r, step, t) and h.label is not None}
        inf_labels = [h.label for r in job.ranks for h in job.hooks
                      if h.non_finite(r, step, t)]
        skip = job.fp16 and bool(healthy_inf or inf_rank)
        slowest = max(pre.values())
        cf, cl = 1.0, []
        for h in job.hooks:
            x = h.comm(job, job.ranks[0], t, t + est)
            if x != 1.0:
                cf *= x
                cl.append(h.label)
        comm = job.comm_ms * cf * math.exp(rng.gauss(0, 0.02))
        opt = 0.0 if skip else 0.04 * base
        step_ms = slowest + comm + opt
        t_end = t + step_ms / 1000.0
        if t_end > t_stop:
            break
        if not skip:
            version += 1
        scope = {"level": "job", "job": job.name}
        if job.cold and n == 0:
            world.effect("cold-start", scope, t, t_end + 20 * est,
                         "first step: compile, NCCL init; warm-up over ~20 steps")
        if ckpt:
            world.effect("checkpoint", scope, t, t_end, "every rank saves: time in neither")
        if healthy_inf and not inf_rank:
            world.effect("loss-scale-skip", scope, t, t_end,
                         f"fp16 overflow on tp ranks {sorted(healthy_inf)}: step skipped")
        loss = 1.9 + 2.5 / (1.0 + step / 3000.0)
        gn = 0.8 * math.exp(rng.gauss(0, 0.1))
        for r, c, o, labs in rows:
            v = {"ts": round(t_end + rng.uniform(0.0, 0.02), 3), "job": job.name,
                 "step": step, "rank": r.rank, "node": r.node, "gpu": r.gpu,
                 "step_ms": round(step_ms, 2), "compute_ms": round(c + opt, 2),
                 "comm_ms": round(step_ms - c - opt - o - 0.01, 2),
                 "tenant": job.tenant}
            if job.rank_fields:
                v.update(tp_rank=r.tp, pp_rank=0, dp_rank=r.dp)
            v["loss"] = round(loss * math.exp(rng.gauss(0, 0.01)), 4)
            bad = r.rank in inf_rank or (r.tp in healthy_inf)
            v["grad_norm"] = None if bad else round(gn * rng.gauss(1.0, 0.03), 4)
            v["param_checksum"] = _checksum(job.name, r.tp, version)
            mine = list(labs) + cl + (inf_labels if r.rank in inf_rank else [])
            world.emit("telemetry.step", v, *[x for x in mine if x is not None])
        t, step, n = t_end, step + 1, n + 1
    for r in job.ranks:
        world.occupy(r.node, r.gpu, t_start, t)
    return t


def tp_dp(name: str, nodes: list[str], tp: int, gpus_per_node: int) -> list[Rank]:
    """Megatron order: rank = dp * tp + tp_rank, TP inside a node, replicas across nodes."""
    ranks, rank = [], 0
    for node in nodes:
        for g0 in range(0, gpus_per_node, tp):
            for k in range(tp):
                ranks.append(Rank(rank, node, g0 + k, k, rank // tp))
                rank += 1
    return ranks
