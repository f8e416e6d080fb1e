"""Synchronous training whose work follows its data: one step of every rank at a time.

A step: every rank loads its batch (``loader``, in neither compute nor comm), computes
(``compute_ms``: its own kernels; a tensor-parallel group -- the ranks of one node at one
(pp, dp) -- waits inside compute for its slowest member, since TP collectives sit between its
GEMMs), then the data-parallel gradient reduction waits for the slowest rank of the job and
takes ``allreduce_ms`` (both in ``comm_ms``). The step ends on every rank together (each rank
stamps it 0-6 ms apart). A GPU's clock lost to its board (a cap, a hold, a brake: world.Node)
stretches its compute; PAI noise at the job's CoV rides on every rank's compute.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from bench.blind31 import noise
from bench.blind31.world import Log, Node


@dataclass(frozen=True)
class Pos:
    rank: int
    node: str
    gpu: int
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None


def layout(nodes: list[str], tp: int | None, pp: int = 1) -> list[Pos]:
    """Ranks on ``nodes`` (8 GPUs each): TP8 within a node, stage ``i % pp`` and replica
    ``i // pp`` for the i-th node; pure DP (no rank triple) when ``tp`` is None."""
    out = []
    for i, node in enumerate(nodes):
        for g in range(8):
            if tp is None:
                out.append(Pos(i * 8 + g, node, g))
            else:
                dp, stage = divmod(i, pp)
                out.append(Pos(dp * pp * 8 + stage * 8 + g, node, g, g, stage, dp))
    return sorted(out, key=lambda p: p.rank)


@dataclass
class Work:
    """What one step asks of every rank (index = rank)."""

    compute_ms: list[float]
    demand_w: list[float]
    allreduce_ms: float
    loader_ms: list[float]
    tags: dict[int, str] = field(default_factory=dict)       # rank -> fault that changed it
    checksum: list[str] | None = None


@dataclass
class SyncJob:
    log: Log
    job: str
    tenant: str
    cluster: str
    ranks: list[Pos]
    nodes: dict[str, Node]
    rng: random.Random
    cov: float
    steps_max: int = 20_000
    _noise: list[list[float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._noise = [noise.stream(self.rng, self.steps_max) for _ in self.ranks]

    def step(self, step: int, t: float, work: Work,
             slow_tags: dict[tuple[str, int], tuple[str, int]] | None = None) -> float:
        """Write step ``step`` begun at ``t``; its end. ``slow_tags`` maps a GPU to (fault,
        throttle bit): a step its board slowed showing that bit (a hold, a brake) is the
        fault's."""
        n = len(self.ranks)
        comp = [work.compute_ms[r] * (1.0 + self.cov * self._noise[r][step % self.steps_max])
                for r in range(n)]
        load = work.loader_ms
        est = (max(load[r] + comp[r] for r in range(n)) + work.allreduce_ms) / 1000.0
        by_node: dict[str, list[Pos]] = {}
        for p in self.ranks:
            by_node.setdefault(p.node, []).append(p)
        tags = dict(work.tags)
        for node, ps in by_node.items():
            nd = self.nodes[node]
            demand = [72.0] * 8
            duty = [0.0] * 8
            for p in ps:
                demand[p.gpu] = work.demand_w[p.rank]
                duty[p.gpu] = min(1.0, comp[p.rank] / 1000.0 / est)
            slow = nd.run(t, t + est, demand, duty)
            flags = nd.points[-1][4]
            for p in ps:
                if slow[p.gpu] > 1.0005:
                    comp[p.rank] *= slow[p.gpu]
                    tag = (slow_tags or {}).get((node, p.gpu))
                    if tag and flags[p.gpu] & tag[1]:
                        tags[p.rank] = tag[0]
        # a TP group waits for its slowest member inside compute
        groups: dict[tuple, list[Pos]] = {}
        for p in self.ranks:
            if p.tp is not None:
                groups.setdefault((p.node, p.pp, p.dp), []).append(p)
        for ps in groups.values():
            top = max(comp[p.rank] for p in ps)
            tag = next((tags[p.rank] for p in ps if p.rank in tags), None)
            for p in ps:
                comp[p.rank] = top - self.rng.uniform(0.0, 6.0)
                if tag and p.rank not in tags:
                    tags[p.rank] = tag
        busy = max(load[r] + comp[r] for r in range(n))
        end_ms = busy + work.allreduce_ms
        t_end = t + end_ms / 1000.0
        for nd in (self.nodes[n] for n in by_node):
            last = nd.points[-1]
            nd.points[-1] = (t_end,) + last[1:]
        for p in self.ranks:
            r = p.rank
            jitter = self.rng.uniform(0.0, 6.0)
            v = {"ts": round(t_end + jitter / 1000.0, 3), "job": self.job, "step": step,
                 "rank": r, "node": p.node, "gpu": p.gpu,
                 "step_ms": round(end_ms + jitter, 2), "compute_ms": round(comp[r], 2),
                 "comm_ms": round(end_ms - load[r] - comp[r], 2)}
            if p.tp is not None:
                v.update(tp_rank=p.tp, pp_rank=p.pp, dp_rank=p.dp)
            if work.checksum is not None:
                v["param_checksum"] = work.checksum[r]
            v.update(cluster=self.cluster, tenant=self.tenant)
            self.log.add("telemetry.step", v, tags.get(r))
        return t_end + 0.006
