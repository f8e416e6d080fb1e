"""Synchronous training attempts: one step record per rank per step, a job's phases.

Megatron rank order (TP fastest, then DP, then PP), eight ranks a node. A TP group runs at
its slowest member's pace (its all-reduces sit inside the layers). A step ends when the
slowest rank is ready: every other rank waits that long in its first collective (`comm_ms`).
Phases that change every rank at once -- cold start, an accumulation change, async
checkpoints, evaluation, a synchronous checkpoint before a planned stop -- are part of the
job; faults act through hooks `f(job, step, t, compute, neither) -> (comm_mult, stall_ms)`
that may change the per-rank arrays in place and touch their label.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field

from bench.blind10.world import Node


@dataclass
class Job:
    name: str
    tenant: str
    nodes: list
    rng: random.Random
    tp: int = 8
    pp: int = 1
    dp: int = 1
    rank_fields: bool = True
    compute_ms: float = 2000.0
    comm_ms: float = 400.0
    comm_sd: float = 0.02          # shared step-to-step spread of exposed comm
    stage_w: tuple = (1.0,)
    checksum_every: int | None = 20
    sync_ckpt_every: int | None = None
    sync_ckpt_s: tuple = (6.0, 10.0)
    async_ckpt_every: int | None = None
    eval_every: int | None = None
    eval_s: tuple = (5.0, 9.0)
    accum_from_t: float | None = None      # global batch ramp: accumulation 1 -> 2
    hooks: list = field(default_factory=list)
    touched: list = field(default_factory=list)   # labels a hook changed this step
    records: list = field(default_factory=list)   # (true_ts, topic, value)
    _writes: dict = field(default_factory=dict)   # node -> (until_t, compute factor)

    def ranks(self) -> list:
        out = []
        for r in range(self.tp * self.pp * self.dp):
            tp, rest = r % self.tp, r // self.tp
            dp, pp = rest % self.dp, rest // self.dp
            out.append((r, self.nodes[r // 8], r % 8, tp, pp, dp))
        return out

    def loss_at(self, step: int) -> float:
        return 1.9 + 6.0 * math.exp(-step / 260.0) + 0.9 * math.exp(-step / 2500.0)

    def run(self, t: float, step: int, stop_t: float, hang_t: float | None = None,
            watchdog_s: float = 120.0, final_ckpt: bool = False,
            cold_start: bool = True) -> tuple[float, int]:
        """Steps from `t` until `stop_t` (a planned stop) or a hang at `hang_t` (the job's
        ranks spin in NCCL until the watchdog kills them). Returns (time, next step)."""
        r = self.rng
        ranks = self.ranks()
        start, cold = t, (0 if cold_start else 30)
        end_at = min(stop_t, hang_t) if hang_t is not None else stop_t
        while t < end_at:
            accum = 2 if self.accum_from_t is not None and t >= self.accum_from_t else 1
            base = self.compute_ms * accum * (1 + r.gauss(0, 0.01))
            if cold == 0:
                base *= r.uniform(6.0, 9.0)          # compile, autotune, NCCL init
            elif cold < 30:
                base *= 1 + 0.4 * math.exp(-cold / 6.0)
            comp = []
            for _, node, g, _, pp, _ in ranks:
                f = node.compute_factor(g, t) * self.stage_w[pp] * (1 + r.gauss(0, 0.006))
                w = self._writes.get(node.name)
                if w and t < w[0]:
                    f *= w[1]
                comp.append(base * f)
            neither = [r.uniform(25, 45) for _ in ranks]
            if self.eval_every and step % self.eval_every == 0 and cold:
                ev = r.uniform(*self.eval_s) * 1000
                neither = [n + ev * r.uniform(0.99, 1.01) for n in neither]
            if self.async_ckpt_every and step % self.async_ckpt_every == 0 and cold:
                snap = r.uniform(600, 1200)
                neither = [n + snap * r.uniform(0.9, 1.1) for n in neither]
                for node in self.nodes:   # background write-back contends for PCIe / CPU
                    self._writes[node.name] = (t + r.uniform(30, 80), r.uniform(1.03, 1.07))
            if self.sync_ckpt_every and step % self.sync_ckpt_every == 0 and cold:
                ck = r.uniform(*self.sync_ckpt_s) * 1000
                neither = [n + ck * r.uniform(0.93, 1.07) for n in neither]
            last_step = final_ckpt and t + 60 > stop_t
            if last_step:
                ck = r.uniform(12, 18) * 1000
                neither = [n + ck * r.uniform(0.95, 1.05) for n in neither]
            comm_mult, stall = 1.0, 0.0
            self.touched = []
            for hook in self.hooks:
                m, s = hook(self, step, t, comp, neither)
                comm_mult *= m
                stall += s
            for k in range(0, len(ranks), self.tp):   # TP group at its slowest member's pace
                top = max(comp[k:k + self.tp])
                for j in range(k, k + self.tp):
                    comp[j] = top * (1 + r.gauss(0, 0.002))
            ready = [c + n for c, n in zip(comp, neither, strict=True)]
            slowest = max(ready)
            comm = self.comm_ms * comm_mult * (1 + r.gauss(0, self.comm_sd)) + stall
            step_ms = slowest + comm
            t_end = t + step_ms / 1000.0
            if (hang_t is not None and t_end > hang_t) or (t_end > stop_t and not final_ckpt):
                break
            lo, hi = self._emit(ranks, step, t_end, comp, neither, step_ms, accum)
            for lab in self.touched:
                lab.touch(lo)
                lab.touch(hi)
            t, step, cold = t_end, step + 1, cold + 1
            if last_step or t >= stop_t:
                break
        busy_end = t if hang_t is None else hang_t
        for node in self.nodes:
            node.busy.append((start, busy_end, "train"))
            if hang_t is not None:
                node.busy.append((hang_t, hang_t + watchdog_s, "hang"))
        return (t if hang_t is None else hang_t + watchdog_s), step

    def _emit(self, ranks, step, t_end, comp, neither, step_ms, accum) -> None:
        r = self.rng
        loss = self.loss_at(step)
        cs = self.checksum_every and step % self.checksum_every == 0
        lo, hi = float("inf"), float("-inf")
        for i, (rank, node, g, tp, pp, dp) in enumerate(ranks):
            sm = step_ms * (1 + r.uniform(0, 0.0008))
            comm = sm - comp[i] - neither[i]
            v = {"ts": round(t_end + r.uniform(0.0, 0.015) + node.offset_s, 3),
                 "job": self.name, "step": step, "rank": rank, "node": node.name, "gpu": g,
                 "step_ms": round(sm, 2), "compute_ms": round(comp[i], 2),
                 "comm_ms": round(max(comm, 0.0) - 0.01, 2), "tenant": self.tenant}
            if self.rank_fields:
                v.update(tp_rank=tp, pp_rank=pp, dp_rank=dp)
            if pp == self.pp - 1:
                v["loss"] = round(loss * (1 + r.gauss(0, 0.012)), 4)
            v["grad_norm"] = round((0.9 if accum == 1 else 0.65) * r.lognormvariate(0, 0.05), 4)
            if cs:
                h = hashlib.blake2b(f"{self.name}/{step}/{tp}/{pp}".encode(), digest_size=8)
                v["param_checksum"] = h.hexdigest()
            self.records.append((t_end, "telemetry.step", v))
            lo, hi = min(lo, v["ts"]), max(hi, v["ts"])
        return lo, hi


def spare_in(job: Job, old: Node, new: Node) -> None:
    """The scheduler re-forms the job with `new` in `old`'s place (same rank order)."""
    job.nodes = [new if n is old else n for n in job.nodes]
