"""blind37's job: hybrid-sharded data parallelism (HSDP) with overlapped communication.

A shard group (one node's 8 GPUs, or two nodes' 16) holds one copy of the model, each rank 1/S
of it; the groups are replicas of each other. In a step every rank all-gathers each layer's
parameters from its shard group just before computing it (prefetched while the previous layer
computes) and reduce-scatters its gradients in the backward pass, then all-reduces its shard's
gradients with the ranks holding the same shard in the other groups (over its nearest NIC). So:

- a rank's wait for a slower rank of its own group happens *inside* its forward/backward (a
  prefetched all-gather that is not there yet): a share ``hidden`` of it is timed in
  ``compute_ms``, the rest in ``comm_ms`` at the step's tail;
- the exposed part of the all-gathers (a layer whose gather outlasts the previous layer's
  compute) is in every rank's ``compute_ms``; it grows for short batches and shrinks with a
  deeper prefetch;
- the cross-group all-reduce of shard position p waits for the slowest group and runs over the
  p-th ranks' NICs: a slow link there lengthens the p-th ranks' ``comm_ms``, and the others
  wait for them in the next step's first all-gather (``compute_ms`` again);
- activation offload to host memory over each GPU's PCIe link is hidden behind the backward
  pass unless the copy outlasts its window.

Step records carry no rank fields (DESIGN: pure data parallelism -- every rank does the same
work on its own micro-batch) and no ``param_checksum`` (a rank's parameters are its shard;
DESIGN has no field for a shard's position, so no pair of ranks is known to agree).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from bench.blind33 import noise
from bench.blind37.world import Busy, Port


@dataclass
class Fault:
    """What a fault does to the job, from ``t`` on (1.0: nothing)."""

    fid: str
    node: str
    gpu: int                       # the GPU, or the NIC mlx5_<gpu>
    t: float
    work: float = 1.0              # the GPU's compute time x
    work_from: float = 0.0         # ... from t + this
    offload_bw: float = 1.0        # the share of PCIe bandwidth its offload copies get
    offload_jitter: float = 0.0    # +- share, step to step
    ar: float = 1.0                # its NIC's all-reduce time x
    whole_node: bool = False       # every GPU of the node
    downs: list[tuple[float, float]] = field(default_factory=list)  # its NIC down (a, b)
    first: float = math.inf        # the first step record it changed

    def on(self, node: str, gpu: int, t: float) -> bool:
        return node == self.node and (self.whole_node or gpu == self.gpu) and t >= self.t


@dataclass
class Shape:
    """A job's sizes (seconds)."""

    compute_s: float       # a rank's forward + backward at the median batch
    exposed: float         # exposed all-gather share of compute_s (deeper prefetch: less)
    hidden: float          # share of a wait on a slower group mate timed in compute_ms
    hidden_next: float     # share of the all-reduce imbalance waited in the next all-gather
    allreduce_s: float     # the cross-group all-reduce's exposed tail
    other_s: float         # loader + optimizer step (in neither)
    offload_s: float       # activation offload copy at full PCIe bandwidth
    offload_window_s: float
    nic_bytes: int         # bytes a NIC moves a step
    cross_node: bool       # a shard group spans nodes (its all-gathers use the NICs)


@dataclass
class Job:
    name: str
    cluster: str
    tenant: str
    shape: Shape
    rng: random.Random
    faults: list[Fault] = field(default_factory=list)
    busy: dict[tuple[str, int], Busy] = field(default_factory=dict)
    ports: dict[tuple[str, int], Port] = field(default_factory=dict)
    step: int = 0
    loss: float = 2.35

    def _stall(self, node: str, k: int, a: float, b: float) -> tuple[float, str | None]:
        """Seconds NIC k of ``node`` is down inside [a, b] (+ recovery), and whose."""
        for f in self.faults:
            if f.node == node and f.gpu == k:
                for d0, d1 in f.downs:
                    if d0 < b and d1 > a:
                        return (d1 - max(a, d0)) + 0.6, f.fid
        return 0.0, None

    def run(self, log, groups: list[list[tuple[str, int]]], t0: float, t1: float, *,
            exposed=lambda t: None, saves=(), stalls=None, warmup: int = 0) -> float:
        """Steps from ``t0`` while they end before ``t1``; ``groups`` lists each shard group's
        (node, gpu) in shard order (rank = group x S + position). Returns the last step's end."""
        sh, rng = self.shape, self.rng
        S = len(groups[0])
        ranks = [(g, p, nd, gp) for g, grp in enumerate(groups) for p, (nd, gp) in enumerate(grp)]
        n = 900
        shared = noise.stream(rng, n)
        own = {(nd, gp): noise.stream(rng, n) for _, _, nd, gp in ranks}
        stalls = stalls or {}
        t, i = t0, 0
        while True:
            e = exposed(t)
            e = sh.exposed if e is None else e
            f = 1.0 + 0.028 * shared[i % n]                     # the batch's packed length
            base = sh.compute_s * f
            ag = e * sh.compute_s * max(0.3, 1.0 + 2.5 * (1.0 - f))  # short batch: exposed
            work, ready = {}, {}
            hits: dict[str, set] = {}
            for _, _, nd, gp in ranks:
                w = base * (1.0 + 0.007 * own[(nd, gp)][i % n])
                if i < warmup:
                    w *= 1.6
                bw = 1.0
                for fl in self.faults:
                    if fl.on(nd, gp, t):
                        if fl.work != 1.0 and t >= fl.t + fl.work_from:
                            w *= fl.work
                            hits.setdefault(fl.fid, set()).add((nd, gp))
                        if fl.offload_bw != 1.0:
                            bw *= fl.offload_bw * (1 + rng.uniform(-1, 1) * fl.offload_jitter)
                            hits.setdefault(fl.fid, set()).add((nd, gp))
                w += max(0.0, sh.offload_s * rng.uniform(0.95, 1.05) / bw - sh.offload_window_s)
                work[(nd, gp)] = w
                ready[(nd, gp)] = w + stalls.get((i + self.step, nd, gp), 0.0)
            agx = [ag] * len(groups)
            ar = []
            span = (t, t + base * 1.3)
            for p in range(S):
                a = sh.allreduce_s * rng.uniform(0.95, 1.05)
                extra = 0.0
                mult = 1.0
                for g, grp in enumerate(groups):
                    nd, gp = grp[p]
                    for fl in self.faults:
                        if fl.ar != 1.0 and nd == fl.node and gp == fl.gpu and t >= fl.t:
                            mult = max(mult, fl.ar)
                            for _, pp, n2, g2 in ranks:
                                if pp == p:
                                    hits.setdefault(fl.fid, set()).add((n2, g2))
                    down, fid = self._stall(nd, gp, *span)
                    if down:
                        extra = max(extra, down)
                        hits.setdefault(fid, set()).update((n2, g2) for _, _, n2, g2 in ranks)
                        if sh.cross_node:
                            agx[g] += down
                ar.append(a * mult + extra)
            wmax = [max(ready[x] for x in grp) for grp in groups]
            amax = max(ar)
            save = next((s for at, s in saves if t <= at < t + base * 1.3), 0.0)
            other = {x: sh.other_s * rng.uniform(0.85, 1.15) + save
                     + stalls.get((i + self.step, *x), 0.0) for x in work}
            step_s = max(wm + a for wm, a in zip(wmax, agx, strict=True)) + amax + max(
                other.values())
            end = t + step_s
            if end > t1:
                break
            step = self.step + i
            for (s_at, nd, gp), _ in stalls.items():
                if s_at == step and (nd, gp) in work:   # where it landed (the effects file)
                    log.effect("loader-stall", {"node": nd, "gpu": gp}, t, end + 2 * step_s)
            self.loss = self.loss * 0.9994 + 0.0004 * 1.9 + 0.004 * shared[(i + 7) % n]
            for g, p, nd, gp in ranks:
                x = (nd, gp)
                comp = (work[x] + sh.hidden * (wmax[g] - ready[x]) + agx[g]
                        + sh.hidden_next * (amax - ar[p]))
                jit = rng.uniform(0.0, 0.012)
                total = step_s + jit
                comm = total - other[x] - comp
                ts = round(end + jit, 4)
                log.add("telemetry.step", {
                    "ts": ts, "job": self.name, "step": step, "rank": g * S + p,
                    "node": nd, "gpu": gp, "step_ms": round(total * 1000, 2),
                    "compute_ms": round(comp * 1000, 2), "comm_ms": round(comm * 1000, 2),
                    "loss": round(self.loss + 0.03 * rng.gauss(0, 1), 5),
                    "grad_norm": round(0.42 * (1 + 0.06 * rng.gauss(0, 1)), 5),
                    "cluster": self.cluster, "tenant": self.tenant})
                self.busy.setdefault(x, Busy()).add(t, end, min(1.0, (work[x] + 0.25 * ar[p])
                                                                / step_s))
                self.ports.setdefault(x, Port()).moved.append(
                    (end, int(sh.nic_bytes * rng.uniform(0.98, 1.02))))
                for fl in self.faults:
                    if x in hits.get(fl.fid, ()):
                        fl.first = min(fl.first, ts)
            t = end + rng.uniform(0.005, 0.02)
            i += 1
        self.step += i
        return t
