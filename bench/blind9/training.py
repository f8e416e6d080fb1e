"""Synchronous training attempts: Megatron rank order, one step record per rank per step.

Rank r sits at tp = r % TP, dp = (r // TP) % DP, pp = r // (TP * DP) (TP fastest, then DP,
then PP) on node r // gpus_per_node of the attempt's node list, GPU r % gpus_per_node. A rank's
`compute_ms` is its own kernels' time (a CUDA-event timer around them); everything it waits
for -- its TP partners inside the layer, the DP all-reduce, a slower stage -- is `comm_ms`.
The step ends when the slowest rank's compute plus the collectives end; data loading and
checkpoint saves are in neither. An attempt ends at its planned end (the in-flight step never
finishes), on a preemption (SIGTERM: the job saves a checkpoint, then exits) or when a node
under it dies: the other ranks spin in the collective until the NCCL watchdog kills them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bench.blind9.world import World, checksum


@dataclass
class Attempt:
    job: str
    tenant: str
    nodes: list[str]
    gpn: int
    tp: int
    pp: int
    dp: int
    start: float
    end: float
    first_step: int
    compute_ms: float
    comm_ms: float
    stage_w: list[float] = field(default_factory=lambda: [1.0])
    ckpt_every: int = 100
    ckpt_s: tuple[float, float] = (12.0, 20.0)
    checksum_every: int = 10
    sigterm_save: bool = False          # preempted: save on SIGTERM, then exit
    dead_nodes: tuple[str, ...] = ()    # nodes under it died at `end`
    cold: bool = True                   # a fresh start: a long first step, a short warm-up
    nccl_timeout_s: float = 150.0
    # results
    last_step: int = 0
    last_ckpt: int = 0
    stop: float = 0.0


def run(w: World, a: Attempt) -> Attempt:
    """Writes the attempt's step records and GPU schedule; returns it with its results."""
    r = w.rng
    world = a.tp * a.pp * a.dp
    assert world == len(a.nodes) * a.gpn, (a.job, world, len(a.nodes))
    where = [(a.nodes[k // a.gpn], k % a.gpn) for k in range(world)]
    rank_bias = [r.gauss(0, 0.004) for _ in range(world)]
    t, step = a.start, a.first_step
    a.last_ckpt = a.first_step - 1
    n_done = 0
    while True:
        warm = 1.0
        if a.cold:
            warm += r.uniform(4.0, 6.0) if n_done == 0 else 0.6 * math.exp(-n_done / 3)
        jit = 1 + r.gauss(0, 0.01)
        comp, fids = [], set()
        for k in range(world):
            node, gpu = where[k]
            f, hit = w.compute_factor(node, gpu, t)
            fids.update(hit)
            pp = k // (a.tp * a.dp)
            comp.append(a.compute_ms * a.stage_w[pp] * warm * jit * f
                        * (1 + rank_bias[k] + r.gauss(0, 0.006)))
        cf, hit = w.comm_factor(a.job, t)
        fids.update(hit)
        comm = a.comm_ms * cf * (1 + r.gauss(0, 0.02)) * (1.5 if a.cold and not n_done else 1.0)
        other = r.uniform(15, 40)
        saving = step % a.ckpt_every == 0
        if saving:
            other += r.uniform(*a.ckpt_s) * 1000
        pace = max(comp)
        step_ms = pace + comm + other
        t_end = t + step_ms / 1000
        if t_end > a.end:
            break
        loss = 1.9 + 2.2 * math.exp(-step / 9000) + r.gauss(0, 0.015)
        gn = 0.35 + 1.5 * math.exp(-step / 4000)
        for k in range(world):
            node, gpu = where[k]
            tp, dp, pp = k % a.tp, (k // a.tp) % a.dp, k // (a.tp * a.dp)
            v = {"ts": w.nodes[node].ts(t_end + r.uniform(0, 0.004)), "job": a.job,
                 "step": step, "rank": k, "node": node, "gpu": gpu,
                 "step_ms": round(step_ms, 2), "compute_ms": round(comp[k], 2),
                 "comm_ms": round(pace - comp[k] + comm, 2),
                 "tp_rank": tp, "pp_rank": pp, "dp_rank": dp,
                 "grad_norm": round(gn * (1 + r.gauss(0, 0.04)), 4), "tenant": a.tenant}
            if pp == a.pp - 1:
                v["loss"] = round(loss + r.gauss(0, 0.01), 4)
            if step % a.checksum_every == 0:
                v["param_checksum"] = checksum(a.job, tp, pp, step)
            w.emit(t_end, "telemetry.step", v, sorted(fids))
        if saving:
            a.last_ckpt = step
        a.last_step, n_done = step, n_done + 1
        t, step = t_end, step + 1
    stop = a.end                             # the in-flight step runs until the end
    if a.sigterm_save and a.last_step:
        a.last_ckpt = a.last_step            # the SIGTERM handler saves where it stands
        stop = t + r.uniform(20, 30)
    a.stop = stop
    by_node: dict[str, list[int]] = {}
    for node, gpu in where:
        by_node.setdefault(node, []).append(gpu)
    for node, gpus in by_node.items():
        w.nodes[node].busy(gpus, a.start, stop, "train")
        if a.dead_nodes and node not in a.dead_nodes:
            w.nodes[node].busy(gpus, stop, a.end + a.nccl_timeout_s, "hang")
    return a
