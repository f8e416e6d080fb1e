"""Synchronous training attempts: one step record per rank per step.

Megatron rank order ``rank = tp + TP * dp`` (no pipeline), a node's 8 GPUs one TP group or
8 data-parallel ranks; a TP group runs at its slowest member's pace (the forward-backward
timer holds the TP all-reduces, so every member's ``compute_ms`` shows it); the step ends when
the slowest group's data-parallel reduce ends, each rank's wait for it in ``comm_ms``; loader
and a synchronous checkpoint save in neither. An *attempt* is one launch: torchrun's elastic
agent re-forms the job on a new node list in rendezvous order (ranks renumbered, the same job
id) and resumes from the last saved step, so step numbers repeat; a resumed run's reductions
run in a new order, so its checksums differ bit-wise from the first run's at the same step.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from bench.blind17.world import World

H200_COMPUTE_X = 0.93   # 4.8 against 3.35 TB/s HBM, ~20 % of a step memory-bound (my choice)


@dataclass
class Attempt:
    nodes: list[str]
    t_start: float
    t_stop: float        # true time the last step may end (a crash, the log's end)
    first_step: int
    hang_s: float = 0.0  # after t_stop the GPUs spin in NCCL this long, then the watchdog
    launch: int = 0      # which launch of the job (its reductions' order, so its checksums)


@dataclass
class Job:
    name: str
    tenant: str
    tp: int              # 8: a node is one TP group; 1: pure data parallelism
    work_s: float        # compute of a step on a healthy H100
    reduce_s: float      # the exposed data-parallel reduce
    rank_fields: bool = True
    checksum_every: int = 10
    save_every: int = 200
    save_s: float = 6.0
    reduce_x: tuple = ()  # (t0, x): from t0 the reduce takes x as long (a port erring)


def run(world: World, job: Job, attempts: list[Attempt]) -> list[int]:
    """Steps every attempt into ``world``; returns each attempt's last saved step."""
    rng = world.rng
    saved: list[int] = []
    for att in attempts:
        ranks = [(node, g) for node in att.nodes for g in range(8)]
        for key in ranks:
            world.gpus[key].busy.append((att.t_start, att.t_stop + att.hang_s))
        jitter = [rng.uniform(0.996, 1.004) for _ in ranks]
        t, step, k, last_save = att.t_start + rng.uniform(20, 40), att.first_step, 0, None
        while True:
            warm = 4.0 if k == 0 else (1.6 if k < 4 else 1.0)
            own, labs = [], []
            for i, (node, g) in enumerate(ranks):
                gpu = world.gpus[(node, g)]
                rate, lab = gpu.speed(t)
                sku = H200_COMPUTE_X if gpu.sku == "H200" else 1.0
                own.append(job.work_s * warm * sku * rate * jitter[i] * rng.uniform(0.997, 1.003))
                labs.append(lab)
            comp = list(own)
            if job.tp > 1:
                for a in range(0, len(ranks), job.tp):
                    pace = max(own[a:a + job.tp])
                    for i in range(a, a + job.tp):
                        comp[i] = pace * rng.uniform(0.999, 1.0)
            slowest = max(comp)
            loader = rng.uniform(0.006, 0.02)
            save = job.save_s * rng.uniform(0.8, 1.2) if step % job.save_every == 0 else 0.0
            rx = math.prod(x for t0, x in job.reduce_x if t >= t0)
            t_end = t + slowest + job.reduce_s * rx * rng.uniform(0.95, 1.08) + loader + save
            if t_end > att.t_stop:
                break
            if save:
                last_save = step
            loss = 2.2 * math.exp(-step / 2e5) + rng.gauss(0, 0.02)
            for i, (node, g) in enumerate(ranks):
                end = t_end + rng.uniform(0, 0.003)
                comm = end - t - comp[i] - loader - save
                v = {"job": job.name, "step": step, "rank": i, "gpu": g,
                     "step_ms": round((end - t) * 1e3, 3), "compute_ms": round(comp[i] * 1e3, 3),
                     "comm_ms": round(comm * 1e3, 3), "loss": round(loss, 4),
                     "grad_norm": round(rng.uniform(0.8, 1.1), 4), "tenant": job.tenant}
                if job.rank_fields:
                    v.update(tp_rank=i % job.tp, pp_rank=0, dp_rank=i // job.tp)
                if job.checksum_every and step % job.checksum_every == 0:
                    tp = i % job.tp
                    v["param_checksum"] = hashlib.sha1(
                        f"{job.name}/{att.launch}/{step}/{tp}".encode()).hexdigest()[:16]
                # ts must not lie: the record leaves when the step ended on this host
                world.emit("telemetry.step", node, end, v, [labs[i]])
            t, step, k = t_end, step + 1, k + 1
        saved.append(last_save if last_save is not None else att.first_step - 1)
    return saved
