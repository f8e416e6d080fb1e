"""Synchronous training jobs of a blind5 log: attempts, layouts, one step record per rank.

A step's end is shared by every rank (the slowest rank's compute + its time in neither
sets it; the others wait in collectives). A TP group runs at its slowest member's pace
(the reporter's forward-backward timer holds the TP all-reduces). Workload shapes:
`plain`, `longctx` (one document per replica per step: 2-5x step-to-step variance),
`rl` (rollout iterations ~3x longer than training ones, per-replica response length).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field

from bench.blind5.fleet import GpuTrace, Node


@dataclass
class Attempt:
    start: float
    end: float
    nodes: list[str]
    step0: int


@dataclass
class Job:
    name: str
    tp: int
    pp: int
    base_ms: float  # compute of one rank at full clock
    comm_ms: float  # collectives when nobody is late
    other_ms: float  # data loading etc. (time in neither)
    attempts: list[Attempt]
    workload: str = "plain"
    rank_fields: bool = True
    timing_fields: bool = True
    stage_mult: tuple[float, ...] = (1.0,)
    checksum_every: int = 0  # 0: no checksum
    ckpt_every: int = 0
    ckpt_ms: float = 0.0
    loss_every_rank: bool = False
    # (step, dp_rank, loss multiplier, fault id or None): a replica's loss jumps on a step
    loss_spikes: list[tuple[int, int, float, str | None]] = field(default_factory=list)
    # (t0, t1, comm multiplier, fault id): the job's collectives slowed by a link
    comm_windows: list[tuple[float, float, float, str]] = field(default_factory=list)

    def layout(self, att: Attempt, gpus_per_node: int):
        """(rank, node, gpu, tp, pp, dp) in Megatron order: rank = tp + TP*(dp + DP*pp)."""
        world = len(att.nodes) * gpus_per_node
        dp = world // (self.tp * self.pp)
        out = []
        for r in range(world):
            t = r % self.tp
            d = (r // self.tp) % dp
            p = r // (self.tp * dp)
            out.append((r, att.nodes[r // gpus_per_node], r % gpus_per_node, t, p, d))
        return out, dp


def mark_busy(jobs: list[Job], nodes: dict[str, Node]) -> None:
    for job in jobs:
        for att in job.attempts:
            for name in att.nodes:
                for g in range(nodes[name].gpus):
                    nodes[name].busy[g].append((att.start, att.end))


def _checksum(*parts) -> str:
    return hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).hexdigest()


def emit_steps(rng: random.Random, job: Job, nodes: dict[str, Node],
               traces: dict[tuple[str, int], GpuTrace], t0: float, seconds: int, out: list,
               ) -> list[int]:
    """Appends (true_ts, topic, value, fids, key) step records; returns each attempt's last step."""
    last_steps = []
    for ai, att in enumerate(job.attempts):
        if att.step0 < 0:
            # An elastic re-rendezvous or a restart resumes from the last checkpoint.
            prev = last_steps[-1] if last_steps else 0
            every = job.ckpt_every or 1
            att.step0 = (prev // every) * every + 1
        gpn = nodes[att.nodes[0]].gpus
        ranks, dp = job.layout(att, gpn)
        off = [1 + rng.gauss(0, 0.006) for _ in ranks]
        t = att.start + rng.uniform(20, 40)  # process start, model load, NCCL init
        step = att.step0
        k = 0
        rollout_left = 0
        last = step - 1
        while True:
            ti = int(t - t0)
            if ti >= seconds or t >= att.end:
                break
            pre = ti < 0  # the job ran before the log began: simulated, not written
            ti = max(ti, 0)
            warm = 1.0 + (7.0 if k == 0 else 4.0 * math.exp(-k / 4.0) if k < 20 else 0.0)
            per_dp = [1.0] * dp
            comm_mult = 1.0
            if job.workload == "longctx":
                # One long document per replica per step: compute grows ~ length^1.3
                # (attention); lengths spread 8k..128k tokens.
                per_dp = [min(5.0, max(0.45, rng.lognormvariate(0.0, 0.42))) for _ in range(dp)]
            elif job.workload == "rl":
                if rollout_left == 0 and rng.random() < 0.25:
                    rollout_left = rng.randint(1, 3)
                if rollout_left:
                    rollout_left -= 1
                    # Generation: memory-bound decoding, length of the longest response.
                    per_dp = [3.0 * min(2.5, max(0.6, rng.lognormvariate(0.0, 0.25)))
                              for _ in range(dp)]
                    comm_mult = 0.3
            fids: set[str] = set()
            comp = {}
            for (r, node, g, _tp, pp_r, dp_r) in ranks:
                tr = traces[(node, g)]
                if not pre:
                    fids |= tr.stouch[ti]
                comp[r] = (job.base_ms * warm * per_dp[dp_r] * off[r]
                           * (1.0 if pre else tr.factor[ti])
                           * job.stage_mult[pp_r % len(job.stage_mult)]
                           * (1 + rng.gauss(0, 0.01)))
            # A TP group runs at its slowest member's pace.
            group_max: dict[tuple[int, int], float] = {}
            for (r, _n, _g, _t, pp_r, dp_r) in ranks:
                key = (pp_r, dp_r)
                group_max[key] = max(group_max.get(key, 0.0), comp[r])
            ckpt = job.ckpt_every and step > att.step0 and step % job.ckpt_every == 0
            other = {r: job.other_ms * (1 + abs(rng.gauss(0, 0.05)))
                     + (job.ckpt_ms * rng.uniform(0.9, 1.1) if ckpt else 0.0)
                     for (r, *_rest) in ranks}
            for a, b, f, fid in job.comm_windows:
                if a <= t < b:
                    comm_mult *= f
                    fids.add(fid)
            comm_min = job.comm_ms * comm_mult * (1 + abs(rng.gauss(0, 0.03)))
            work = {r: group_max[(pp_r, dp_r)] for (r, _n, _g, _t, pp_r, dp_r) in ranks}
            step_ms = max(work[r] + other[r] for r in work) + comm_min
            end = t + step_ms / 1000.0
            if end >= att.end or int(end - t0) >= seconds:
                break
            base_loss = 1.9 + 1.4 * math.exp(-step / 4000.0)
            loss_dp = [base_loss + rng.gauss(0, 0.03) for _ in range(dp)]
            grad_dp = [0.8 + 0.4 * math.exp(-step / 3000.0) + rng.gauss(0, 0.03)
                       for _ in range(dp)]
            spiked: dict[int, str | None] = {}
            for s, d, mult, fid in job.loss_spikes:
                if s == step and d < dp:
                    loss_dp[d] *= mult
                    grad_dp[d] *= 1 + 0.6 * (mult - 1)
                    spiked[d] = fid
            for (r, node, g, tp_r, pp_r, dp_r) in ([] if end < t0 else ranks):
                v = {"ts": end + rng.uniform(0, 0.004) + nodes[node].clock_off_s,
                     "job": job.name, "step": step, "rank": r, "node": node, "gpu": g,
                     "step_ms": round(step_ms, 3)}
                if job.timing_fields:
                    c = round(work[r], 3)
                    v["compute_ms"] = c
                    v["comm_ms"] = max(0.0, math.floor((v["step_ms"] - c - other[r]) * 1000 - 1)
                                       / 1000)
                if job.rank_fields:
                    v["tp_rank"], v["pp_rank"], v["dp_rank"] = tp_r, pp_r, dp_r
                if job.loss_every_rank or pp_r == job.pp - 1:
                    v["loss"] = round(loss_dp[dp_r], 5)
                v["grad_norm"] = round(grad_dp[dp_r] * (1 + rng.gauss(0, 0.01)), 5)
                if job.checksum_every and step % job.checksum_every == 0:
                    v["param_checksum"] = _checksum(job.name, ai, tp_r, pp_r, step)
                rec_fids = set(fids)
                if dp_r in spiked and spiked[dp_r]:
                    rec_fids.add(spiked[dp_r])
                out.append((end, "telemetry.step", v, frozenset(rec_fids), job.name))
            last = step
            t = end + rng.uniform(0.001, 0.004)
            step += 1
            k += 1
        last_steps.append(last)
    return last_steps
