"""Synchronous training jobs: one `telemetry.step` record per rank per step.

Megatron rank order, TP fastest, then CP, then DP: ``rank = (dp * cp + c) * tp + t``, eight
ranks a node in the order of the job's node list. A context-parallel job reports Megatron's
default ``dp_rank`` (``get_data_parallel_rank()`` without context parallelism), so the ``cp``
ranks of one (tp, dp) position share the same ``(tp_rank, pp_rank, dp_rank)``; the collector
adds ``cp_rank`` as an extra field (DESIGN: unknown fields are ignored).

Each step: every rank computes ``compute_s`` x its noise x the story's slow factor; a rank's TP
partners block with it inside the forward pass's per-layer all-reduces (they report the TP
group's slowest compute); everyone else waits in comm for the slowest group; the loader's
time and any checkpoint or storage stall are time in neither.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field


@dataclass
class Job:
    name: str
    tenant: str
    nodes: list                       # node names, 8 ranks each, rank order
    tp: int
    cp: int
    dp: int
    compute_s: float
    comm_s: float
    ckpt_every: int
    ckpt_s: tuple
    checksum_every: int
    start_step: int
    # hooks the story sets
    slow: object = None              # (node, gpu, t) -> compute factor >= 1
    comm_stall: object = None        # (t0, t1) -> seconds every rank's collective hangs
    neither_extra: object = None     # (t_start) -> seconds of storage stall in the loader
    bad_checksum: object = None      # (node, gpu, step) -> True when the rank's copy diverged
    runs: list = field(default_factory=list)   # (t_start, t_kill|None, nodes, first_step, cold)

    @property
    def ranks(self) -> int:
        return self.tp * self.cp * self.dp


def _checksum(job: str, tp: int, step: int, salt: str = "") -> str:
    return hashlib.blake2b(f"{job}/{tp}/{step}{salt}".encode(), digest_size=8).hexdigest()


def run(job: Job, t_end: float, rng: random.Random, busy, effects: list,
        touch) -> list[tuple[str, dict]]:
    """Every run of the job (start, optional kill, nodes, first step, cold) as step records.

    ``busy(node, gpu, t0, t1)`` marks a GPU computing; ``effects`` collects routine shapes;
    ``touch(key, ts)`` marks a record a fault changed (the labels' spans come from it).
    """
    out = []
    for t_start, t_kill, nodes, first, cold in job.runs:
        t, step, k = t_start, first, 0
        stop = min(t_end, t_kill) if t_kill is not None else t_end
        if cold:
            effects.append({"effect": "cold_start", "scope": {"level": "job",
                                                              "job": job.name},
                            "start_ts": t_start, "end_ts": t_start + 60.0})
        while True:
            warm = 1.0 if not cold else 6.0 if k == 0 else 1.0 + 0.3 * math.exp(-k / 6.0)
            comp = []
            for r in range(job.ranks):
                node, gpu = nodes[r // 8], r % 8
                f = job.slow(node, gpu, t) if job.slow else 1.0
                comp.append(job.compute_s * warm * f * (1.0 + rng.gauss(0.0, 0.012)))
            tp_max = [max(comp[r - r % job.tp: r - r % job.tp + job.tp])
                      for r in range(job.ranks)]
            core = max(tp_max) + job.comm_s * (1.0 + abs(rng.gauss(0.0, 0.03)))
            stall = job.comm_stall(t, t + core) if job.comm_stall else 0.0
            if stall:
                touch(job.name + ":stall", t + core + stall)
            neither = rng.uniform(0.02, 0.04)
            if step % job.ckpt_every == 0 and k > 0:
                ck = rng.uniform(*job.ckpt_s)
                neither += ck
                effects.append({"effect": "checkpoint", "scope": {"level": "job",
                                                                  "job": job.name},
                                "start_ts": t, "end_ts": t + ck + core})
            extra = job.neither_extra(t) if job.neither_extra else 0.0
            if extra:
                neither += extra
                effects.append({"effect": "storage_stall", "scope": {"level": "job",
                                                                     "job": job.name},
                                "start_ts": t, "end_ts": t + extra + core})
            wall = core + stall + neither
            if t + wall > stop:
                break
            loss = 2.4 * math.exp(-step / 40000.0) + rng.gauss(0.0, 0.01)
            done = []
            for r in range(job.ranks):
                node, gpu = nodes[r // 8], r % 8
                tpr, c, dpr = r % job.tp, (r // job.tp) % job.cp, r // (job.tp * job.cp)
                jitter = rng.uniform(0.0, 0.004)
                step_s = wall + jitter
                rec = {"ts": round(t + step_s, 3), "job": job.name, "step": step, "rank": r,
                       "node": node, "gpu": gpu, "step_ms": round(step_s * 1000.0, 1),
                       "compute_ms": round(tp_max[r] * 1000.0, 1),
                       "comm_ms": round((core - tp_max[r] + stall) * 1000.0, 1),
                       "tp_rank": tpr, "pp_rank": 0, "dp_rank": dpr,
                       "loss": round(loss + rng.gauss(0.0, 0.004) * (dpr + 1) / job.dp, 4),
                       "grad_norm": round(0.82 + rng.gauss(0.0, 0.03), 4),
                       "tenant": job.tenant}
                if job.cp > 1:
                    rec["cp_rank"] = c
                if step % job.checksum_every == 0:
                    bad = job.bad_checksum and job.bad_checksum(node, gpu, step)
                    rec["param_checksum"] = _checksum(job.name, tpr, step,
                                                      f"/{node}/{gpu}" if bad else "")
                    if bad:
                        touch(f"{job.name}:sdc", rec["ts"])
                if job.slow and comp[r] > job.compute_s * warm * 1.05:
                    touch(f"{job.name}:slow:{node}/{gpu}", rec["ts"])
                done.append(("telemetry.step", rec))
                busy(node, gpu, t, t + core + stall)
            out += done
            t += wall + 0.004
            step, k = step + 1, k + 1
    return out
