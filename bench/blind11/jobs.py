"""Synchronous data-parallel training as blind11 runs it: one step record per rank per step.

Megatron order, TP fastest: rank = dp * tp_size + tp. A TP group runs at its slowest member's
pace (the forward-backward timer holds the TP all-reduces, so `compute_ms` is the group's);
the step ends when the slowest replica is done; every wait is `comm_ms`; loader, rollout waits
and checkpoint saves are time in neither. The workload hooks (`Workload`) set what varies by
design; fault hooks multiply one GPU's kernels or change one rank's record.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field

from bench.blind11.world import Gpu, Label, compute_factor, train_clock


@dataclass
class SlowHook:
    """One GPU's kernels x factor from t_from (log seconds) on; nothing in telemetry."""
    gpu: Gpu
    factor: float
    t_from: float
    label: Label


@dataclass
class Job:
    name: str
    gpus: list                       # [Gpu] in rank order
    tp: int
    base_compute_ms: float
    comm_ms: float
    t_start: float
    t_end: float
    step0: int
    rng: random.Random
    tenant: str | None = None
    ckpt_every: int = 0
    ckpt_s: tuple = (18.0, 24.0)
    step_scale: object = None        # (step, rng) -> factor for every rank (the batch's tokens)
    replica_scale: object = None     # (step, dp, rng) -> factor for one replica (its packing)
    extra_comm_s: object = None      # (step, rng) -> seconds blocked in a collective, all ranks
    wait_s: object = None            # (step, rng) -> seconds in neither, all ranks (rollouts)
    cold_steps: int = 0              # a fresh attempt's warm-up
    slow: list = field(default_factory=list)
    blips: dict = field(default_factory=dict)    # step -> (rank, label): a wrong checksum
    stalls: list = field(default_factory=list)   # [(t, seconds, label)]: a step in flight held
    records: list = field(default_factory=list)
    timeline: list = field(default_factory=list)  # [(t_start, t_compute_end, t_end, step)]
    labels_on_steps: list = field(default_factory=list)

    @property
    def dp(self) -> int:
        return len(self.gpus) // self.tp

    def run(self, fleet_caps: list, t0: float) -> None:
        rng = self.rng
        offs = [rng.gauss(1.0, 0.006) for _ in self.gpus]
        t, step, k = self.t_start, self.step0, 0
        loss = rng.uniform(0.9, 2.4)
        while t < self.t_end:
            tokens = self.step_scale(step, rng) if self.step_scale else 1.0
            warm = 1.0 + (6.0 * math.exp(-k / 1.5) + 1.2 * math.exp(-k / 8) if self.cold_steps
                          and k < self.cold_steps else 0.0)
            wait = self.wait_s(step, rng) if self.wait_s else 0.0
            ckpt = (rng.uniform(*self.ckpt_s) if self.ckpt_every and step % self.ckpt_every == 0
                    and k > 0 else 0.0)
            group_ms, slowed = [], set()
            for d in range(self.dp):
                pack = self.replica_scale(step, d, rng) if self.replica_scale else 1.0
                worst = 0.0
                for j in range(self.tp):
                    r = d * self.tp + j
                    gpu = self.gpus[r]
                    f = compute_factor(gpu.model, train_clock(gpu, fleet_caps, t))
                    for h in self.slow:
                        if h.gpu is gpu and t >= h.t_from:
                            f *= h.factor
                            slowed.add(h.label.fault_id)
                    ms = self.base_compute_ms * tokens * pack * warm * f * offs[r]
                    worst = max(worst, ms * (1 + rng.gauss(0, 0.008)))
                group_ms.append(worst)
            loader = [rng.uniform(25, 60) for _ in self.gpus]
            before = [loader[r] + wait * 1000 * rng.uniform(0.995, 1.0)
                      for r in range(len(self.gpus))]
            done = max(before[r] + group_ms[r // self.tp] for r in range(len(self.gpus)))
            comm_all = self.comm_ms * (1 + rng.gauss(0, 0.02))
            if self.extra_comm_s:
                comm_all += self.extra_comm_s(step, rng) * 1000
            held = 0.0
            step_end_guess = t + (done + comm_all) / 1000
            for ts, secs, lab in self.stalls:
                if t <= ts < step_end_guess:
                    held += secs * 1000
                    slowed.add(lab.fault_id)
            step_ms = done + comm_all + held + ckpt * 1000
            t_end = t + step_ms / 1000
            if t_end >= self.t_end:
                break
            loss = max(0.2, loss * rng.uniform(0.996, 1.0015) + rng.gauss(0, 0.01))
            base_norm = rng.lognormvariate(0, 0.15) * (0.7 if k > 30 else 1.2)
            blip = self.blips.get(step)
            for r, gpu in enumerate(self.gpus):
                d, j = divmod(r, self.tp)
                compute = group_ms[d] + rng.uniform(0, 2.5)
                neither = before[r] + ckpt * 1000
                comm = max(1.0, step_ms - compute - neither)
                rec = {"job": self.name, "step": step, "rank": r, "node": gpu.node.name,
                       "gpu": gpu.idx,
                       "step_ms": round(compute + comm + neither + rng.uniform(0, 1.5), 2),
                       "compute_ms": round(compute, 2), "comm_ms": round(comm, 2),
                       "tp_rank": j, "pp_rank": 0, "dp_rank": d,
                       "loss": round(loss * rng.uniform(0.97, 1.03), 4),
                       "grad_norm": round(base_norm * rng.uniform(0.96, 1.04), 4),
                       "param_checksum": _sum(self.name, j, step)}
                if self.tenant:
                    rec["tenant"] = self.tenant
                ts = t0 + t_end + rng.uniform(0, 0.004) + gpu.node.skew_s
                if blip and blip[0] == r:
                    rec["param_checksum"] = _sum(self.name, j, step, "flip")
                    spike = random.Random(step).uniform(1.05, 1.3)
                    rec["grad_norm"] = round(rec["grad_norm"] * spike, 4)
                    blip[1].touch(ts)
                for h in self.slow:
                    if h.label.fault_id in slowed:
                        h.label.touch(ts)
                for _, _, lab in self.stalls:
                    if lab.fault_id in slowed:
                        lab.touch(ts)
                self.records.append((ts, "telemetry.step", rec))
            self.timeline.append((t + wait, t + done / 1000, t_end, step))
            t, step, k = t_end + rng.uniform(0.002, 0.01), step + 1, k + 1

    def busy_seconds(self, dur_s: int) -> list:
        """Per second of the log: True while a step computes (False while it waits or is off)."""
        out = [False] * (dur_s + 1)
        for a, b, _, _ in self.timeline:
            for s in range(int(a), min(int(b) + 1, dur_s + 1)):
                out[s] = True
        return out


def _sum(job: str, tp: int, step: int, salt: str = "") -> str:
    return hashlib.blake2b(f"{job}/{tp}/{step}/{salt}".encode(), digest_size=8).hexdigest()
