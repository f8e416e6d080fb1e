"""Synchronous 3D-parallel training for blind32: one step at a time, every rank's record.

TP8 inside a node (a TP group waits for its slowest GPU inside ``compute_ms``: every rank of
the node reports the group's compute), a pipeline stage per node (node position ``i``: stage
``i % pp``, replica ``i // pp``), DP over nodes. A step ends when the slowest node has done its
compute and its time in neither (loader, saves, compiles); every other rank waits for it in
``comm_ms`` (the pipeline's p2p waits and the DP reduction), then the reduction. The schedule is
zero-bubble-like: what is left of the pipeline bubble (``bubble_ms``) is paid by every rank in
``comm_ms``. Real PAI noise (``noise.stream``) a node, at the job's CoV; a rank's own jitter
0.3 %. A node's GPUs draw ``busy_w`` while computing (``world.Node.load``).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from bench.blind32 import noise
from bench.blind32.world import GPUS, NEITHER_W, WAIT_W, Log, Node


@dataclass
class Fx:
    """What acts on one step: per node position compute factors and extra neither (ms), the
    job's compute factor, extra ms in comm for every rank, the reduction's factor."""

    compute: dict[int, float] = field(default_factory=dict)
    neither_ms: dict[int, float] = field(default_factory=dict)
    job_compute: float = 1.0
    comm_extra_ms: float = 0.0
    reduce_x: float = 1.0
    nic_extra_gbps: float = 0.0
    congestion: float = 0.08      # a training job's own all-reduce backs ports up a little
    grad_x: float = 1.0
    loss_add: float = 0.0
    bad_sum: set[tuple[int, int]] = field(default_factory=set)   # (node position, gpu)


class Job:
    """A TP8 x PP x DP job on ``nodes`` (positions; a position's node can be swapped)."""

    def __init__(self, log: Log, rng: random.Random, name: str, tenant: str, cluster: str,
                 nodes: list[Node], pp: int, stage_ms: list[float], reduce_ms: float,
                 bubble_ms: float, cov: float, busy_w: list[float], checksums: bool,
                 steps_max: int = 4000):
        self.log, self.rng, self.name, self.tenant, self.cluster = log, rng, name, tenant, cluster
        self.nodes, self.pp, self.stage_ms = nodes, pp, stage_ms
        self.reduce_ms, self.bubble_ms, self.cov, self.busy_w = reduce_ms, bubble_ms, cov, busy_w
        self.checksums = checksums
        self.dp = len(nodes) // pp
        self._noise = [noise.stream(rng, steps_max) for _ in nodes]
        self._n = 0
        self.loss = rng.uniform(2.3, 2.6)

    def stage(self, pos: int) -> int:
        return pos % self.pp

    def step(self, step_no: int, t: float, fx: Fx) -> float:
        """Run one step starting at ``t``; emit every rank's record; return the step's end."""
        rng = self.rng
        k = self._n % len(self._noise[0])
        self._n += 1
        comp, neith = {}, {}
        for pos in range(len(self.nodes)):
            base = self.stage_ms[self.stage(pos)] * fx.job_compute
            f = (1.0 + self.cov * self._noise[pos][k]) * fx.compute.get(pos, 1.0)
            comp[pos] = [base * f * (1.0 + rng.gauss(0, 0.003)) for _ in range(GPUS)]
            neith[pos] = [rng.uniform(15.0, 35.0) + fx.neither_ms.get(pos, 0.0)
                          for _ in range(GPUS)]
        crit = max(c + n for pos in comp for c, n in zip(comp[pos], neith[pos], strict=True))
        reduce = self.reduce_ms * fx.reduce_x * rng.uniform(0.97, 1.03)
        step_ms = crit + self.bubble_ms + reduce + fx.comm_extra_ms
        end = t + step_ms / 1000.0
        self.loss = max(1.2, self.loss - rng.uniform(0.0, 0.0012))
        for pos, node in enumerate(self.nodes):
            st = self.stage(pos)
            cf = sum(comp[pos]) / GPUS / step_ms
            nf = sum(neith[pos]) / GPUS / step_ms
            power = self.busy_w[st] * cf + NEITHER_W * nf + WAIT_W * (1 - cf - nf)
            gbps = 7.5 * 8 / (step_ms / 1000.0) + fx.nic_extra_gbps
            node.load(t, end, power, gbps, fx.congestion)
            for g in range(GPUS):
                rank = pos * GPUS + g
                c, n = comp[pos][g], neith[pos][g]
                jit = rng.uniform(0.0, 6.0)
                sm = step_ms + jit
                v = {"ts": round(end + jit / 1000.0, 3), "job": self.name, "step": step_no,
                     "rank": rank, "node": node.name, "gpu": g, "step_ms": round(sm, 1),
                     "compute_ms": round(c, 1), "comm_ms": round(sm - c - n, 1),
                     "tp_rank": g, "pp_rank": st, "dp_rank": pos // self.pp,
                     "loss": round(self.loss + fx.loss_add + rng.gauss(0, 0.01), 4),
                     "grad_norm": round(fx.grad_x * rng.uniform(0.7, 1.1), 4),
                     "cluster": self.cluster, "tenant": self.tenant}
                if self.checksums:
                    key = f"{self.name}:{g}:{st}:{step_no}"
                    if (pos, g) in fx.bad_sum:
                        key += f":bad:{pos}"
                    v["param_checksum"] = hashlib.blake2s(key.encode(), digest_size=8).hexdigest()
                self.log.put("telemetry.step", v)
        return end
