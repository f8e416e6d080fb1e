"""Synchronous training steps at scale, and what the GPUs and ports are doing meanwhile.

A step of a job: every rank computes (its stage's compute x its own PAI noise x the job's PAI
wander x what its GPU's clock allows), spends some time in neither part (loader, host, a
checkpoint write), and waits for the slowest rank -- the pipeline flush and the data-parallel
all-reduce make a step end at the same moment everywhere. So on every rank
``step_ms = critical + exposed comm`` and ``comm_ms = exposed comm + (critical - own compute -
own other)``: a slow GPU shows as its own compute, and as every other rank's comm.

Ranks are laid out as Megatron does (tensor fastest, then data, then pipeline): with TP8 a node
holds one TP group, pipeline stage p the nodes ``p*DP .. p*DP+DP-1``. A job may crash (every
rank stops mid-step, the GPUs spin in NCCL until the elastic agent kills them), and restart
from its last checkpoint on a replacement node: step numbers repeat.
"""

from __future__ import annotations

import bisect
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.blind26 import noise
from bench.blind26.world import Log


@dataclass
class Job:
    name: str
    tenant: str
    nodes: list
    tp: int                          # 0: pure data parallelism (no rank fields)
    pp: int
    compute_ms: list                 # per pipeline stage
    comm_ms: float                   # exposed comm every rank waits (bubble, DP all-reduce)
    other_ms: float                  # loader and host time, in neither part
    t0: float
    t1: float
    save_every: int = 0              # steps; 0 = never
    save_s: tuple = (0.0, 0.0)       # a node's write time of a synchronous save
    async_save: tuple = (0.0, 0.0)   # steps slowed by an asynchronous save and by how much
    checksum_every: int = 0
    gc_rate: float = 0.0             # chance a rank pauses for Python's GC in a step
    stall_rate: float = 0.0          # chance one node stalls one step (host, loader)
    cold: bool = False               # compile and warm-up at the start
    loss0: float = 0.0               # > 0: the last stage reports a loss
    rank_sigma: float = 0.006
    job_sigma: float = 0.008
    crash: tuple | None = None       # (t_crash, hang_s, t_restart, {old node: new})
    slow: dict = field(default_factory=dict)     # (node, gpu) -> (fid, f(t) -> factor)
    comm_extra: list = field(default_factory=list)  # f(t) -> extra fraction of exposed comm
    sdc: tuple | None = None         # (node, gpu, t_from, fid)

    @property
    def size(self) -> int:
        return 8 * len(self.nodes)


@dataclass
class Activity:
    """What each node's GPUs are doing over time: (start, end, kind) segments."""
    segs: dict = field(default_factory=dict)

    def add(self, node: str, a: float, b: float, kind: str) -> None:
        s = self.segs.setdefault(node, [])
        if s and s[-1][2] == kind and a - s[-1][1] < 1.5:
            s[-1] = (s[-1][0], max(b, s[-1][1]), kind)
        else:
            s.append((a, b, kind))

    def finish(self) -> None:
        for s in self.segs.values():
            s.sort()
        self._starts = {n: [x[0] for x in s] for n, s in self.segs.items()}

    def state(self, node: str, t: float) -> str:
        s = self.segs.get(node)
        if not s:
            return "idle"
        i = bisect.bisect_right(self._starts[node], t) - 1
        return s[i][2] if i >= 0 and s[i][0] <= t <= s[i][1] else "idle"

    def busy_share(self, node: str, a: float, b: float) -> float:
        s = self.segs.get(node, ())
        tot = sum(max(0.0, min(b, y) - max(a, x)) for x, y, k in s if k == "busy")
        return tot / (b - a)


def _checksum(job: str, tp: int, pp: int, step: int, bad: bool) -> str:
    h = hashlib.blake2b(f"{job}/{tp}/{pp}/{step}/{'x' if bad else ''}".encode(), digest_size=8)
    return h.hexdigest()


def run(job: Job, rng: random.Random, log: Log, act: Activity,
        on_step: Callable | None = None) -> None:
    """Steps ``job`` from t0 to t1 into ``log``; its nodes' activity into ``act``."""
    n = job.size
    tp_n = job.tp or 1
    pp_n = job.pp or 1
    dp_n = n // (tp_n * pp_n)
    est = int((job.t1 - job.t0) / (sum(job.compute_ms) / len(job.compute_ms) / 1000) + 80)
    streams = [noise.rank_stream(rng, est) for _ in range(n)]
    wander = noise.job_stream(rng, est)
    skew = [rng.uniform(0.002, 0.030) for _ in range(n)]
    coords = []
    for r in range(n):
        if job.tp:
            coords.append((r % tp_n, (r // tp_n) % dp_n, r // (tp_n * dp_n)))
        else:
            coords.append((0, r, 0))
    nodes = list(job.nodes)
    t, step, k, warm = job.t0, 0, 0, (0 if job.cold else 99)
    last_save, crashed, resumed = 0, False, -1
    while t < job.t1:
        i = k % est
        w = 1.0 + job.job_sigma * wander[i]
        saving = (job.save_every and step > 0 and step % job.save_every == 0
                  and step != resumed)             # a restart does not save what it loaded
        write = {nd: rng.uniform(*job.save_s) for nd in nodes} if saving and job.save_s[1] else {}
        stall_node = nodes[rng.randrange(len(nodes))] if rng.random() < job.stall_rate else None
        stall = rng.uniform(600, 2500)
        comp, oth, touched = [0.0] * n, [0.0] * n, [None] * n
        warm_f = (1.6, 1.25, 1.08)[warm - 1] if 1 <= warm <= 3 else 1.0
        for r in range(n):
            tp, dp, pp = coords[r]
            node, gpu = nodes[r // 8], r % 8
            c = job.compute_ms[pp] * w * (1.0 + job.rank_sigma * streams[r][i]) * warm_f
            hook = job.slow.get((node, gpu))
            if hook is not None:
                f = hook[1](t)
                if f > 1.0005:
                    c *= f
                    touched[r] = hook[0]
            if job.gc_rate and rng.random() < job.gc_rate:
                c += rng.uniform(300, 1200)
            o = job.other_ms * rng.uniform(0.85, 1.15)
            if warm == 0:
                o += 1000.0 * rng.uniform(18, 22)          # compile, first batch
            if node == stall_node:
                o += stall
            if write:
                o += 1000.0 * write[node]
            comp[r], oth[r] = c, o
        crit = max(c + o for c, o in zip(comp, oth, strict=False))
        extra = max((f(t) for f in job.comm_extra), default=0.0)
        if job.async_save[0] and job.save_every and 0 < step % job.save_every <= job.async_save[0]:
            extra += job.async_save[1]
        exposed = job.comm_ms * (1.0 + 0.03 * wander[(i + 7) % est]) * (1.0 + extra)
        end = t + (crit + exposed) / 1000.0
        if job.crash and not crashed and end > job.crash[0]:
            t_c, hang_s, t_re, swap = job.crash
            for nd in nodes:
                act.add(nd, t, t_c, "busy")
                act.add(nd, t_c, t_c + hang_s, "hung")
            nodes = [swap.get(nd, nd) for nd in nodes]
            crashed, t, step, warm, resumed = True, t_re, last_save, 0, last_save
            k += 1
            continue
        comp_max = max(comp)
        for nd in nodes:
            if write:
                act.add(nd, t, t + comp_max / 1000.0, "busy")
                act.add(nd, t + comp_max / 1000.0, end, "save")
            else:
                act.add(nd, t, end, "busy")
        for r in range(n):
            tp, dp, pp = coords[r]
            node, gpu = nodes[r // 8], r % 8
            v = {"ts": round(end + skew[r], 3), "job": job.name, "step": step, "rank": r,
                 "node": node, "gpu": gpu, "step_ms": round(crit + exposed, 2),
                 "compute_ms": round(comp[r], 2),
                 "comm_ms": round(exposed + crit - comp[r] - oth[r], 2), "tenant": job.tenant}
            if v["compute_ms"] + v["comm_ms"] > v["step_ms"]:
                v["comm_ms"] = round(v["step_ms"] - v["compute_ms"], 2)
            if job.tp:
                v.update(tp_rank=tp, pp_rank=pp, dp_rank=dp)
            faults = [touched[r]] if touched[r] else []
            if job.loss0 and pp == pp_n - 1:
                v["loss"] = round(job.loss0 * (1.0 + 2.0 / (1.0 + step / 50.0)) +
                                  rng.gauss(0, 0.01), 4)
            if job.checksum_every and step % job.checksum_every == 0:
                bad = bool(job.sdc and (node, gpu) == job.sdc[:2] and end >= job.sdc[2])
                v["param_checksum"] = _checksum(job.name, tp, pp, step, bad)
                if bad:
                    faults.append(job.sdc[3])
            log.add("telemetry.step", v, faults)
        if saving:
            last_save = step
        if on_step:
            on_step(job, step, t, end)
        t, step, k, warm = end + 0.004, step + 1, k + 1, warm + 1
