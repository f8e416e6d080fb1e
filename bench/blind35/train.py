"""blind35's training jobs: synchronous steps, and the numbers a framework logs with them.

Timing: each rank computes its own share x real PAI jitter (blind33's ``noise.stream``, 1.2 %
CoV, a worker's own level +-0.4 %), the gradient all-reduce waits for the slowest rank, the
loader's few ms are in neither part; an evaluation pass is a gap between two steps (no step
records, the GPUs at a third of the load); a save is time in neither part of one step.

Numerics (what DESIGN's ``loss``, ``grad_norm`` and ``param_checksum`` hold here):
- ``loss`` is the replica's loss (the last stage computes it, every rank of the replica logs it):
  a decaying curve, 1.2 % batch noise a replica.
- ``grad_norm`` is the rank's local norm before the all-reduce: its shard's scale (TP and PP
  shards differ), the learning-rate warm-up's large early norms, 5 % batch noise a rank. A
  non-finite norm (an fp16/fp8 overflow) is logged ``null``: DESIGN makes NaN/inf invalid, and a
  collector that forwarded it would lose the whole step record.
- ``param_checksum`` is taken over the rank's working (bf16) copy after the distributed
  optimizer's all-gather: every DP peer receives the same bits, so kernel non-determinism makes
  checksums differ between runs, never between peers at a step. A skipped step (an overflow
  anywhere: the all-reduced norm is inf) leaves every checksum as it was.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field

from bench.blind33.noise import stream


@dataclass(frozen=True)
class Rank:
    rank: int
    node: str
    gpu: int
    tp: int
    pp: int
    dp: int


@dataclass
class Step:
    step: int
    begin: float
    end: float                      # the step's end (every rank's record a few ms after)
    step_ms: float
    compute_ms: list[float]         # per rank, in Job.ranks order
    comm_ms: list[float]


@dataclass
class Job:
    name: str
    cluster: str
    tenant: str
    ranks: list[Rank]
    compute_ms: float
    comm_ms: float
    loader_ms: float
    t_first: float
    stage_x: tuple[float, ...] = (1.0,)
    # numerics
    loss0: float = 7.5
    loss_end: float = 2.4
    loss_tau: float = 300.0
    gn: float = 0.9
    warm: float = 6.0
    warm_tau: float = 60.0
    group_scale: dict[tuple[int, int], float] = field(default_factory=dict)
    # routine shapes and faults, set by the stories
    evals: dict[int, float] = field(default_factory=dict)    # after step s: a pause of x s
    saves: dict[int, float] = field(default_factory=dict)    # step s holds x s of save
    skips: dict[int, set[tuple[int, int]]] = field(default_factory=dict)  # (tp, pp) overflowed
    spikes: dict[int, tuple[float, float]] = field(default_factory=dict)  # job loss x, norm x
    shards: dict[int, tuple[int, float, float]] = field(default_factory=dict)  # dp, loss, norm
    hard: dict[tuple[int, int], float] = field(default_factory=dict)  # (step, rank): norm x
    drift: dict[int, tuple[int, float]] = field(default_factory=dict)  # rank: (from, norm x)
    nonfinite: set[tuple[int, int]] = field(default_factory=set)  # (step, rank): norm inf
    flips: set[tuple[int, int]] = field(default_factory=set)      # (step, rank): wrong copy
    prop: tuple[int, float, float] | None = None   # from step: loss x, norm x (every rank)

    def base_loss(self, s: int) -> float:
        return self.loss_end + (self.loss0 - self.loss_end) * math.exp(-s / self.loss_tau)

    def base_norm(self, s: int) -> float:
        return self.gn * (1.0 + self.warm * math.exp(-s / self.warm_tau))


def schedule(job: Job, rng: random.Random, t_end: float) -> list[Step]:
    """The job's steps from ``t_first`` until ``t_end``: timing only."""
    n_max = int((t_end - job.t_first) * 1000.0 / job.compute_ms) + 4
    jitter = [stream(rng, n_max) for _ in job.ranks]
    level = [1.0 + rng.uniform(-0.004, 0.004) for _ in job.ranks]
    steps: list[Step] = []
    t, s = job.t_first, 0
    while True:
        comp = [job.compute_ms * job.stage_x[r.pp] * level[i] * (1.0 + 0.012 * jitter[i][s])
                for i, r in enumerate(job.ranks)]
        slowest = max(comp)
        wait = job.comm_ms * (1.0 + 0.02 * rng.gauss(0, 1))
        loader = [job.loader_ms * rng.uniform(0.8, 1.2) for _ in job.ranks]
        dur = slowest + wait + job.loader_ms * 1.25
        save_ms = job.saves.get(s, 0.0) * 1000.0
        step_ms = dur + save_ms
        end = t + step_ms / 1000.0
        if end + 0.01 > t_end or s >= n_max:
            break
        comm = [dur - c - ld for c, ld in zip(comp, loader, strict=True)]
        steps.append(Step(s, t, end, step_ms, comp, comm))
        t = end + job.evals.get(s, 0.0)
        s += 1
    return steps


def _checksum(job: str, tp: int, pp: int, version: int, salt: str = "") -> str:
    return hashlib.blake2b(f"{job}|{tp}|{pp}|{version}|{salt}".encode(),
                           digest_size=8).hexdigest()


def emit(job: Job, steps: list[Step], log, rng: random.Random) -> dict[tuple[int, int], float]:
    """The job's step records into ``log``, one per rank per step; each (step, rank)'s ``ts``."""
    stamps: dict[tuple[int, int], float] = {}
    scale = {(r.tp, r.pp): job.group_scale.get((r.tp, r.pp), 1.0) for r in job.ranks}
    version = 0
    for st in steps:
        s = st.step
        skipped = bool(job.skips.get(s)) or any((s, r.rank) in job.nonfinite
                                                for r in job.ranks)
        if not skipped:
            version += 1
        base_l, base_g = job.base_loss(s), job.base_norm(s)
        l_x, g_x = job.spikes.get(s, (1.0, 1.0))
        if job.prop and s >= job.prop[0]:
            k = s - job.prop[0]
            l_x *= job.prop[1] * (1.0 + 0.0015 * k)
            g_x *= job.prop[2] * (1.0 + 0.35 * math.sin(k / 3.0) ** 2)
        replica_loss = {}
        for r in job.ranks:
            if r.dp not in replica_loss:
                x = l_x * (1.0 + 0.012 * rng.gauss(0, 1))
                shard = job.shards.get(s)
                if shard and shard[0] == r.dp:
                    x *= shard[1]
                replica_loss[r.dp] = base_l * x
        for i, r in enumerate(job.ranks):
            g = base_g * g_x * scale[(r.tp, r.pp)] * math.exp(rng.gauss(0, 0.05))
            shard = job.shards.get(s)
            if shard and shard[0] == r.dp:
                g *= shard[2]
            g *= job.hard.get((s, r.rank), 1.0)
            drift = job.drift.get(r.rank)
            if drift and s >= drift[0]:
                g *= drift[1]
            norm: float | None = round(g, 4)
            if (s, r.rank) in job.nonfinite or (r.tp, r.pp) in job.skips.get(s, ()):
                norm = None
            if (s, r.rank) in job.flips:
                norm = round(g * rng.uniform(1.0, 1.4), 4)
                ck = _checksum(job.name, r.tp, r.pp, version, f"flip{s}")
            else:
                ck = _checksum(job.name, r.tp, r.pp, version)
            ts = stamps[(s, r.rank)] = round(st.end + rng.uniform(0.0005, 0.004), 3)
            log.add("telemetry.step", {
                "ts": ts, "job": job.name,
                "step": s, "rank": r.rank, "node": r.node, "gpu": r.gpu,
                "step_ms": round(st.step_ms, 2), "compute_ms": round(st.compute_ms[i], 2),
                "comm_ms": round(st.comm_ms[i], 2), "tp_rank": r.tp, "pp_rank": r.pp,
                "dp_rank": r.dp, "loss": round(replica_loss[r.dp], 4), "grad_norm": norm,
                "param_checksum": ck, "cluster": job.cluster, "tenant": job.tenant})
    return stamps

