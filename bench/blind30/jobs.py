"""Synchronous data-parallel training, a step at a time, on a ``Fleet``.

A job is TP8 inside a node x DP over nodes (`tp_rank` = the GPU, `dp_rank` = the node's place,
``tp=True``) or pure data parallelism, one rank a GPU, no rank triple (``tp=False``). Each
step, a rank computes ``base x its GPU's multiplier x (1 + cov x PAI noise)``; a TP group
waits inside `compute_ms` for 85 % of the gap to its node's slowest GPU; the step ends when the
slowest rank has loaded (10-30 ms, more on a loader stall), computed and the all-reduce is done,
and every other rank's wait is in `comm_ms`. A save adds its seconds in neither. A GPU's
multiplier is ``1 + 0.45 x (1 / clock share - 1)`` (a step is partly memory-bound: it does not
slow as fast as the clock falls) times any hidden slowness a story gives it. A job killed mid-
step writes nothing for the step in flight.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random
from collections.abc import Callable

from bench.blind30 import noise
from bench.blind30.world import Fleet, Log

ELASTICITY = 0.45
COLD = (2.3, 1.5, 1.15, 1.04)


@dataclasses.dataclass
class Job:
    name: str
    tenant: str
    tp: bool
    base_ms: float
    comm_ms: float
    cov: float
    busy_w: float
    save_every: int = 0
    save_s: tuple[float, float] = (15.0, 22.0)
    # story hooks: hidden slowness (node, gpu, t) -> (multiplier, fault id or None); a
    # checksum override (node, gpu, step, t) -> (checksum, fault id) or None; the collective's
    # multiplier at t; loader stalls {(step, node): ms}
    hidden: Callable | None = None
    checksum: Callable | None = None
    comm_at: Callable | None = None
    stalls: dict = dataclasses.field(default_factory=dict)


def _sum(*parts) -> str:
    return hashlib.blake2b(repr(parts).encode(), digest_size=8).hexdigest()


def run(fleet: Fleet, log: Log, rng: random.Random, job: Job, nodes: list[str],
        t_start: float, t_stop: float, first_step: int, cold: bool = True,
        gpus: int = 8) -> tuple[float, int]:
    """Steps from ``t_start`` until the next would end after ``t_stop``; (last end, next step)."""
    layout = [(nd, g) for nd in nodes for g in range(gpus)]
    n_max = max(0, int((t_stop - t_start) / (job.base_ms / 1000))) + 8
    streams = [noise.stream(rng, n_max) for _ in layout]
    offsets = [rng.gauss(0, 0.004) for _ in layout]
    t, step, k = t_start, first_step, 0
    while True:
        comp, tags = [], []
        for i, (nd, g) in enumerate(layout):
            m = 1.0 + ELASTICITY * (1.0 / fleet.clock_share(nd, g, t) - 1.0)
            fid = None
            if fleet.clock_share(nd, g, t) < fleet.nodes[nd].busy_clock / 1980.0 - 1e-9:
                fid = _clock_fault(fleet, nd, g, t)
            if job.hidden:
                hm, hf = job.hidden(nd, g, t)
                m *= hm
                fid = fid or hf
            c = job.base_ms * m * (1 + offsets[i] + job.cov * streams[i][k])
            if cold and k < len(COLD):
                c *= COLD[k]
            comp.append(c)
            tags.append({fid} if fid else set())
        if job.tp:
            for nd in nodes:
                idx = [i for i, (n, _) in enumerate(layout) if n == nd]
                top = max(comp[i] for i in idx)
                slow_tags = set().union(*(tags[i] for i in idx if comp[i] == top))
                for i in idx:
                    comp[i] += 0.85 * (top - comp[i])
                    if top > comp[i] * 1.02:
                        tags[i] |= slow_tags
        loader = [rng.uniform(10, 30) + job.stalls.get((step, nd), 0.0)
                  + (rng.uniform(300, 900) if rng.random() < 0.0015 else 0.0)
                  for nd, _ in layout]
        finish = [a + b for a, b in zip(loader, comp, strict=True)]
        cm = job.comm_at(t) if job.comm_at else 1.0  # a port's fault: its rows carry the label
        wall = max(finish) + job.comm_ms * cm * (1 + 0.03 * rng.gauss(0, 1))
        save = 0.0
        if job.save_every and step % job.save_every == 0 and k > 0:
            save = rng.uniform(*job.save_s) * 1000
            log.effect("checkpoint_save", {"job": job.name}, t, t + (wall + save) / 1000)
        end = t + (wall + save) / 1000
        if end > t_stop:
            return t, step
        for i, (nd, g) in enumerate(layout):
            fleet.occupy(nd, g, t, end, comp[i] / (wall + save), job.busy_w)
        for nd in nodes:
            fleet.send(nd, t, t + wall / 1000, 9e9)
        loss = 2.1 + 1.4 * math.exp(-step / 3000)
        for i, (nd, g) in enumerate(layout):
            v = {"ts": round(end + rng.uniform(0, 0.012), 3), "job": job.name, "step": step,
                 "rank": i, "node": nd, "gpu": g, "step_ms": round(wall + save, 2),
                 "compute_ms": round(comp[i], 2), "comm_ms": round(wall - finish[i], 2),
                 "loss": round(loss + rng.gauss(0, 0.02), 4),
                 "grad_norm": round(abs(1.0 + rng.gauss(0, 0.05)), 4),
                 "cluster": log.cluster, "tenant": job.tenant}
            tp_rank = g if job.tp else 0
            if job.tp:
                v.update(tp_rank=g, pp_rank=0, dp_rank=i // gpus)
            v["param_checksum"] = _sum(job.name, step, tp_rank)
            faults = set(tags[i])
            if job.checksum:
                bad = job.checksum(nd, g, step, end)
                if bad:
                    v["param_checksum"], f = bad
                    faults.add(f)
            log.add("step", v, faults)
        t, step, k = end, step + 1, k + 1


def _clock_fault(fleet: Fleet, node: str, gpu: int, t: float) -> str | None:
    hot = fleet.hot.get((node, gpu))
    if hot and hot[1].clock_share(t) < 1.0:
        return hot[0]
    nd = fleet.nodes[node]
    if nd.clock_lock_mhz is not None and t >= nd.lock_from:
        return f"lock-{node}"
    return None
