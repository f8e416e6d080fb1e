"""A tensor-parallel training job whose TP groups span a rack's NVLink domain.

Each rank computes its share; a TP group's all-reduces run over NVLink inside every layer. With
TP communication overlapped (userbuffers-style), a share ``hidden`` of the group's TP traffic
runs inside the GEMMs and is timed in every member's ``compute_ms``, and a rank that reaches a
layer's all-reduce before a slower mate waits a share ``wait_in_compute`` of that wait inside its
compute timer too (the overlapped kernel spins). The rest of the TP time, and the wait for the
slowest group at the data-parallel all-reduce (over the IB NICs), is ``comm_ms``. Every rank ends
the step together, so ``step_ms`` is the job's; loader time is in neither.

Step noise: the batch moves every rank together (2.5 % sd), each rank its own 0.7 %, both
chained real PAI job-2 residuals (blind33's ``noise.stream``).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.blind33.noise import stream
from bench.blind38.rack import Fault, World

GpuAt = tuple[str, int]


@dataclass
class Segment:
    """A run of the job on one placement: ``place[dp][tp]`` is the (node, gpu) of that rank."""
    t_start: float
    t_stop: float
    place: list[list[GpuAt]]
    warm_steps: int = 0
    save_at_stop: bool = False


@dataclass
class Slow:
    """A GPU computing ``factor`` x slower from ``t_on`` (nothing in telemetry)."""
    at: GpuAt
    t_on: float
    factor: float
    fault: Fault


@dataclass
class CommDrag:
    """NVLink slower for every TP group holding a GPU for which ``gpus`` is true, from
    ``t_on``: the group's TP time x ``factor``."""
    gpus: Callable[[GpuAt], bool]
    t_on: float
    factor: float
    fault: Fault


@dataclass
class Job:
    name: str
    tenant: str
    tp: int
    dp: int
    compute_ms: float
    tp_ms: float
    dp_tail_ms: float
    hidden: float
    wait_in_compute: float
    segments: list[Segment]
    saves: list[float] = field(default_factory=list)
    save_ms: tuple[float, float] = (6000.0, 9000.0)
    slows: list[Slow] = field(default_factory=list)
    drags: list[CommDrag] = field(default_factory=list)


def _checksum(job: str, tp: int, step: int) -> str:
    return hashlib.blake2b(f"{job}/{tp}/{step}".encode(), digest_size=8).hexdigest()


def run(world: World, job: Job, rng: random.Random) -> None:
    """Every step of every segment of ``job`` as telemetry.step records; marks the trays busy."""
    n = job.tp * job.dp
    est = int(sum(s.t_stop - s.t_start for s in job.segments) / (job.compute_ms / 1000.0)) + 10
    batch = stream(rng, est)
    own = [stream(rng, est) for _ in range(n)]
    step, i = 1, 0
    busy_share = job.compute_ms / (job.compute_ms + job.tp_ms + job.dp_tail_ms)
    for seg in job.segments:
        for nodes in {at[0] for grp in seg.place for at in grp}:
            world.busy.setdefault(nodes, []).append((seg.t_start, seg.t_stop, busy_share))
        t, k = seg.t_start, 0
        while True:
            common = 1.0 + 0.025 * batch[i % est]
            saving = any(t <= s < t + 3.0 for s in job.saves)
            last = False
            recs: list[dict] = []
            touched: list[Fault] = []
            job_end = 0.0
            groups = []
            for d, grp in enumerate(seg.place):
                ready, comp, other = [], [], []
                for tp, at in enumerate(grp):
                    rank = d * job.tp + tp
                    fac, moved = world.slow_factor(at[0], at[1], t)
                    touched += moved
                    for s in job.slows:
                        if s.at == at and t >= s.t_on:
                            fac *= s.factor
                            touched.append(s.fault)
                    warm = 1.6 if k < seg.warm_steps else 1.0
                    c = job.compute_ms * common * (1.0 + 0.007 * own[rank][i % est]) * fac * warm
                    o = rng.uniform(18.0, 45.0)
                    comp.append(c)
                    other.append(o)
                    ready.append(c + o)
                tp_ms = job.tp_ms * (1.0 + 0.03 * rng.gauss(0.0, 1.0))
                for dr in job.drags:
                    if t >= dr.t_on and any(dr.gpus(at) for at in grp):
                        tp_ms *= dr.factor
                        touched.append(dr.fault)
                gmax = max(ready)
                groups.append((d, grp, ready, comp, other, tp_ms, gmax))
                job_end = max(job_end, gmax + tp_ms)
            job_end += job.dp_tail_ms * (1.0 + 0.05 * rng.gauss(0.0, 1.0))
            extra = rng.uniform(*job.save_ms) if saving else 0.0
            if seg.save_at_stop and t + (job_end + 9000.0) / 1000.0 >= seg.t_stop:
                extra, last = rng.uniform(*job.save_ms), True
            if t + (job_end + extra) / 1000.0 > seg.t_stop and not last:
                break
            for d, grp, ready, comp, other, tp_ms, gmax in groups:
                x = tp_ms * job.hidden
                for tp, at in enumerate(grp):
                    rank = d * job.tp + tp
                    compute = comp[tp] + x + job.wait_in_compute * (gmax - ready[tp])
                    o = other[tp] + extra
                    step_ms = job_end + extra + rng.uniform(0.0, 3.0)
                    recs.append({
                        "ts": round(t + step_ms / 1000.0, 3), "job": job.name, "step": step,
                        "rank": rank, "node": at[0], "gpu": at[1],
                        "step_ms": round(step_ms, 2), "compute_ms": round(compute, 2),
                        "comm_ms": round(step_ms - o - compute, 2), "tp_rank": tp,
                        "pp_rank": 0, "dp_rank": d,
                        "loss": round(2.4 - 0.4 * min(1.0, step / 2000.0)
                                      + 0.03 * rng.gauss(0.0, 1.0), 4),
                        "grad_norm": round(abs(0.9 + 0.08 * rng.gauss(0.0, 1.0)), 4),
                        "param_checksum": _checksum(job.name, tp, step),
                        "cluster": world.cluster, "tenant": job.tenant})
            for v in recs:
                world.emit("telemetry.step", v)
            first = min(v["ts"] for v in recs)
            for f in set(map(id, touched)):
                fault = next(x for x in touched if id(x) == f)
                fault.touch(first)
            t = max(v["ts"] for v in recs) + 0.004
            step, i, k = step + 1, i + 1, k + 1
            if last:
                break
