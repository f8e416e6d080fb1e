"""blind15's synchronous training jobs: one `telemetry.step` record a rank a step.

Megatron's rank order `tp + TP * (dp + DP * pp)`, eight ranks a node. A TP group computes at
its slowest member's pace. With pipeline parallelism (PP > 1) a replica's step is its slowest
stage's work times the 1F1B bubble `1 + (PP - 1) / (v * m)` (v virtual stages, m microbatches),
and -- as Megatron's `forward-backward` timer has it -- the pipeline's p2p send / recv waits sit
*inside* that timer, so every stage of a replica reports the replica's pipeline time as
`compute_ms`; only the data-parallel gradient reduce (and the wait for the slowest replica) is
`comm_ms`. Time in neither is the data loader. A GPU's clock ratio r makes its work
`1 + 0.9 * (1 / r - 1)` longer (compute-bound, 10 % memory-bound).
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.blind15.world import Log

# gpu_state(node, gpu, ts) -> (clock_ratio, throttle_bits, temp_add_c, fault or None)
GpuState = Callable[[str, int, float], tuple]
# host(node, ts) -> (compute_mult, loader_add_ms, fault or None)
Host = Callable[[str, float], tuple]
# net(job, ts) -> (reduce_mult, p2p_mult, faults)
Net = Callable[[str, float], tuple]


def work_factor(clock_ratio: float) -> float:
    return 1.0 + 0.9 * (1.0 / clock_ratio - 1.0)


@dataclass
class Job:
    name: str
    tenant: str
    nodes: list
    tp: int
    pp: int
    dp: int
    stage_ms: list           # one stage's work a step (all microbatches), per stage
    reduce_ms: float         # the DP gradient reduce
    loader_ms: float
    start_ts: float
    end_ts: float
    microbatches: int = 16
    virtual: int = 1
    checksum_every: int = 10
    first_step: int = 1
    clock_offset_s: dict = field(default_factory=dict)
    gpu_of_rank: dict = field(default_factory=dict)
    _busy: dict = field(default_factory=dict)   # (node, gpu) -> ([end_ts], [busy share])

    def place(self, rank: int) -> tuple[str, int]:
        return self.nodes[rank // 8], rank % 8

    def busy_at(self, node: str, gpu: int, ts: float) -> float | None:
        """The GPU's busy share in the step running at `ts`, None when the job is not on it."""
        ends, busy = self._busy.get((node, gpu), ((), ()))
        if not ends or ts < self.start_ts or ts > ends[-1] + 5.0:
            return None
        return busy[min(bisect.bisect_left(ends, ts), len(ends) - 1)]

    def run(self, log: Log, gpu_state: GpuState, host: Host, net: Net) -> None:
        rng, n_ranks = log.rng, self.tp * self.pp * self.dp
        groups = [(pp, dp) for pp in range(self.pp) for dp in range(self.dp)]
        ranks_of = {g: [self.tp * (g[1] + self.dp * g[0]) + tp for tp in range(self.tp)]
                    for g in groups}
        bubble = 1.0 + (self.pp - 1) / (self.virtual * self.microbatches)
        t, step = self.start_ts, self.first_step
        while True:
            faults, batch = set(), rng.gauss(1.0, 0.008)
            work = {}
            for g in groups:
                slow = 1.0
                for r in ranks_of[g]:
                    node, gpu = self.place(r)
                    ratio, _, _, f = gpu_state(node, gpu, t)
                    cm, _, hf = host(node, t)
                    slow = max(slow, work_factor(ratio) * cm)
                    faults.update(x for x in (f, hf) if x is not None)
                work[g] = self.stage_ms[g[0]] * slow * batch * rng.gauss(1.0, 0.005)
            red_mult, p2p_mult, net_faults = net(self.name, t)
            faults.update(net_faults)
            if self.pp > 1:
                pipe = {dp: max(work[(pp, dp)] for pp in range(self.pp)) * bubble * p2p_mult
                        for dp in range(self.dp)}
                timed = {g: pipe[g[1]] for g in groups}
            else:
                timed = dict(work)
            rows = []
            for g in groups:
                for r in ranks_of[g]:
                    node, gpu = self.place(r)
                    _, add_ms, _ = host(node, t)
                    compute = timed[g] * rng.gauss(1.0, 0.002)
                    loader = self.loader_ms * rng.uniform(0.7, 1.3) + add_ms * rng.uniform(0.7, 1.3)
                    rows.append((r, g, node, gpu, compute, loader))
            reduce = self.reduce_ms * red_mult * rng.gauss(1.0, 0.03)
            step_ms = max(c + lo for *_, c, lo in rows) + reduce
            end = t + step_ms / 1000.0
            if end > self.end_ts or end > log.t1:
                return
            for r, g, node, gpu, compute, loader in rows:
                ts = end + self.clock_offset_s.get(node, 0.0) + rng.gauss(0.0, 0.002)
                own = max(step_ms + rng.gauss(0.0, 1.2), compute + loader + 0.5 * reduce)
                rec = {"ts": round(ts, 3), "job": self.name, "step": step, "rank": r,
                       "node": node, "gpu": gpu, "step_ms": round(own, 2),
                       "compute_ms": round(compute, 2),
                       "comm_ms": round(own - compute - loader, 2), "tenant": self.tenant,
                       "tp_rank": r % self.tp, "pp_rank": g[0], "dp_rank": g[1],
                       "grad_norm": round(0.7 * rng.gauss(1.0, 0.03), 5)}
                if g[0] == self.pp - 1:
                    rec["loss"] = round(2.3 - 0.0004 * step + rng.gauss(0.0, 0.02), 5)
                if step % self.checksum_every == 0:
                    rec["param_checksum"] = hashlib.sha1(
                        f"{self.name}/{r % self.tp}/{g[0]}/{step}".encode()).hexdigest()[:16]
                log.emit("telemetry.step", rec)
                ends, busy = self._busy.setdefault((node, gpu), ([], []))
                ends.append(end)
                busy.append(min(0.97, work[g] / step_ms))
                for f in faults:
                    f.touch(ts)
            assert n_ranks == len(rows)
            t, step = end, step + 1
