"""blind25's simulation: synchronous training jobs' steps and the collectors' polls, written into
one log in arrival order with its labels (the faults) and effects (the routine shapes).

A step: every rank loads its batch (time in neither compute nor comm), computes (its own PAI
noise x the job's shared PAI noise), spends its tensor-parallel all-reduces inside its node on
NVLink, then waits in the data-parallel all-reduce for the last rank to arrive. So a rank's
``comm_ms`` is its TP time + its wait + the exposed all-reduce, and ``step_ms`` is the same on
every rank: ``step_ms = loader + compute_ms + comm_ms`` exactly.

A fault's label spans every record the fault changes (DESIGN): ``touch`` widens it.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field

from bench.blind25 import noise
from bench.blind25.fleet import Gpu, Node, ecc_sample, thermal_sample, xid_event

VOLATILE = ("sbe_volatile", "dbe_volatile", "pcie_replay", "nvlink_crc_errors",
            "nvlink_replay_errors", "nvlink_recovery_errors")


class Log:
    """Records with their arrival times, labels and effects."""

    def __init__(self, rng: random.Random, t0: float, t1: float):
        self.rng, self.t0, self.t1 = rng, t0, t1
        self.recs: list[tuple[float, int, str, dict]] = []
        self.labels: dict[str, dict] = {}
        self.effects: list[dict] = []

    def arrival(self, ts: float) -> float:
        r = self.rng.random()
        return ts + (self.rng.uniform(0.4, 2.5) if r < 0.004 else self.rng.uniform(0.03, 0.4))

    def emit(self, topic: str, value: dict, arrival: float | None = None,
             twice: float = 0.001) -> None:
        at = self.arrival(value["ts"]) if arrival is None else arrival
        self.recs.append((at, len(self.recs), topic, value))
        if self.rng.random() < twice:      # at-least-once delivery: the same row again
            self.recs.append((at + self.rng.uniform(0.2, 1.5), len(self.recs), topic,
                              dict(value)))

    def label(self, fid: str, kind: str, cause: str, scope: dict, attributable: bool = True,
              note: str = "") -> None:
        self.labels[fid] = {"fault_id": fid, "kind": kind, "cause": cause, "scope": scope,
                            "start_ts": math.inf, "end_ts": -math.inf,
                            "attributable": attributable, "note": note}

    def touch(self, fid: str, ts: float) -> None:
        lab = self.labels[fid]
        lab["start_ts"] = min(lab["start_ts"], round(ts, 3))
        lab["end_ts"] = max(lab["end_ts"], round(ts, 3))

    def effect(self, what: str, scope: dict, a: float, b: float) -> None:
        self.effects.append({"effect": what, "scope": scope, "start_ts": round(a, 3),
                             "end_ts": round(b, 3), "expect": "pages nobody"})


@dataclass
class Slow:
    """A fault's effect on a job's steps from ``t_from``: ``part`` x ``factor`` on the ranks
    of ``node`` (all of them when ``gpu`` is None; every rank when ``node`` is None)."""
    fid: str
    t_from: float
    part: str                       # "loader", "compute", "tp", "allreduce"
    factor: float
    node: str | None = None
    gpu: int | None = None


@dataclass
class Job:
    name: str
    tenant: str
    nodes: list[Node]
    start: float
    end: float
    compute_ms: float
    tp_ms: float
    ar_ms: float
    loader_ms: float
    tp: int = 1                     # ranks of one tensor-parallel group (inside a node)
    rank_fields: bool = True        # pure data parallelism writes no tp/pp/dp fields
    sig_rank: float = 0.007
    sig_job: float = 0.010
    ckpt_every_s: float | None = None
    save_s: tuple[float, float] = (6.0, 14.0)
    loss0: float = 7.5
    loss_inf: float = 2.1
    first_step: int = 1
    nic_util: float = 0.25
    slows: list[Slow] = field(default_factory=list)
    hang_at: float | None = None    # a collective never completes from here ...
    kill_at: float | None = None    # ... until the watchdog ends the job
    hang_fid: str | None = None


def _checksum(job: str, tp: int, pp: int, step: int) -> str:
    return hashlib.blake2b(f"{job}/{tp}/{pp}/{step}".encode(), digest_size=8).hexdigest()


def run_job(log: Log, job: Job, rng: random.Random) -> None:
    """Every step of ``job`` into ``log``, and its load on its GPUs and ports."""
    ranks = [(n, g) for n in job.nodes for g in n.gpus]
    step_est = (job.compute_ms + job.tp_ms + job.ar_ms + job.loader_ms) / 1000.0
    n_est = int((job.end - job.start) / step_est) + 64
    rn = [noise.rank_stream(rng, n_est) for _ in ranks]
    jn = noise.job_stream(rng, n_est)
    ckpt = (job.start + rng.uniform(0.3, 1.0) * job.ckpt_every_s) if job.ckpt_every_s else None
    t, step, i = job.start, job.first_step, 0
    saves: list[tuple[float, float]] = []
    stop = job.end if job.hang_at is None else min(job.end, job.hang_at)
    while i < n_est:
        active = [s for s in job.slows if t >= s.t_from]
        save_ms = 0.0
        if ckpt is not None and t >= ckpt:
            save_ms = rng.uniform(*job.save_s) * 1000.0
            saves.append((t, t + save_ms / 1000.0))
            ckpt += job.ckpt_every_s * rng.uniform(0.92, 1.08)
        jf = 1.0 + job.sig_job * jn[i]
        parts = []
        tp_of: dict[tuple[str, int], float] = {}
        for k, (n, g) in enumerate(ranks):
            fac = {"loader": 1.0, "compute": 1.0, "tp": 1.0}
            for s in active:
                if s.part in fac and (s.node is None or s.node == n.name) and (
                        s.gpu is None or s.gpu == g.gpu):
                    fac[s.part] *= s.factor
            load = job.loader_ms * (1.0 + 0.04 * abs(rng.gauss(0, 1))) * fac["loader"] + save_ms
            comp = job.compute_ms * (1.0 + job.sig_rank * rn[k][i]) * jf * fac["compute"]
            grp = (n.name, g.gpu // job.tp)
            if grp not in tp_of:
                tp_of[grp] = job.tp_ms * (1.0 + 0.015 * rng.gauss(0, 1)) * fac["tp"]
            parts.append((load, comp, tp_of[grp]))
        ar = job.ar_ms * (1.0 + 0.03 * abs(rng.gauss(0, 1)))
        for s in active:
            if s.part == "allreduce":
                ar *= s.factor
        last = max(a + b + c for a, b, c in parts)
        t_end = t + (last + ar) / 1000.0
        if t_end > stop:
            break
        step_ms = round(last + ar, 3)
        base = job.loss_inf + (job.loss0 - job.loss_inf) * math.exp(-step / 4000.0)
        for k, ((n, g), (load, comp, _)) in enumerate(zip(ranks, parts, strict=True)):
            comp_r = round(comp, 3)
            comm_r = math.floor((step_ms - comp_r - load) * 1000.0) / 1000.0
            v = {"ts": round(t_end + rng.uniform(0.0, 0.003), 3), "job": job.name,
                 "step": step, "rank": k, "node": n.name, "gpu": g.gpu, "step_ms": step_ms,
                 "compute_ms": comp_r, "comm_ms": max(0.0, comm_r),
                 "loss": round(base * (1.0 + 0.012 * rng.gauss(0, 1)), 5),
                 "grad_norm": round(1.15 * (1.0 + 0.08 * rng.gauss(0, 1)), 5)}
            tp_rank, dp_rank = (k % job.tp, k // job.tp) if job.tp > 1 else (0, k)
            if job.rank_fields:
                v.update(tp_rank=tp_rank, pp_rank=0, dp_rank=dp_rank)
            v["param_checksum"] = _checksum(job.name, tp_rank, 0, step)
            v["tenant"] = job.tenant
            log.emit("telemetry.step", v)
            for s in active:
                log.touch(s.fid, v["ts"])
        t, step, i = t_end, step + 1, i + 1
    run_to = t if job.hang_at is None else job.hang_at
    for n in job.nodes:
        n.nic_util.append((job.start, run_to, job.nic_util))
        for g in n.gpus:
            g.loads.append((job.start, run_to, 0.95))
            for a, b in saves:
                g.loads.append((a, b, 0.12))
            if job.hang_at is not None and job.kill_at is not None:
                g.loads.append((job.hang_at, job.kill_at, 0.32))   # NCCL kernels spinning
                g.loads.append((job.kill_at, math.inf, 0.0))
    for a, b in saves:
        log.effect(f"checkpoint save ({b - a:.0f} s, every rank)", {"job": job.name}, a, b)


@dataclass
class Counting:
    """A counter process on one GPU from ``t_from``: per-second rates of DCGM counters."""
    fid: str | None
    node: str
    gpu: int
    t_from: float
    t_to: float
    rates: dict[str, float]


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, int(round(rng.gauss(lam, math.sqrt(lam)))))
    k, p, lim = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= lim:
            return k
        k += 1


def _in(spans, t: float) -> bool:
    return any(a <= t < b for a, b, *_ in spans)


def poll(log: Log, node: Node, interval_s: float, rng: random.Random,
         counting: list[Counting], touch_thermal: list[tuple[str, float, float]]) -> None:
    """Every scrape of ``node``'s dcgm-exporter (thermal + ECC rows) and node_exporter (ports)
    from the log's start to its end, with the collectors' gaps, partial scrapes, resets, renames
    and late batches. ``touch_thermal``: (fault, from, to) whose thermal rows of this node the
    fault changes."""
    t = log.t0 + node.phase_s
    last_t: float | None = None
    after_dcgm_gap = after_gpu_reload = after_nic_reload = False
    names: dict[str, str] = {}
    while t < log.t1:
        late = next(((a, b, r) for a, b, r in node.late if a <= t < b), None)

        def out(topic: str, v: dict, late=late) -> None:
            if late is None:
                log.emit(topic, v)
            else:   # held in the collector's buffer, shipped as one batch, some rows twice
                at = late[2] + rng.uniform(0.0, 1.5)
                log.emit(topic, v, arrival=at, twice=0.05)

        for c in counting:
            if c.node == node.name and c.t_from <= t and last_t is not None:
                lo, hi = max(c.t_from, last_t), min(c.t_to, t)
                if hi > lo:
                    g = node.gpus[c.gpu]
                    for k, rate in c.rates.items():
                        g.counters[k] += _poisson(rng, rate * (hi - lo))
        dcgm_down = _in(node.dcgm_gaps, t) or _in(node.gpu_reload, t)
        if dcgm_down:
            after_dcgm_gap = after_dcgm_gap or _in(node.dcgm_gaps, t)
            after_gpu_reload = after_gpu_reload or _in(node.gpu_reload, t)
        else:
            if after_gpu_reload:
                for g in node.gpus:
                    for k in VOLATILE:
                        g.counters[k] = 0
            for g in node.gpus:
                if t >= g.gone_from:
                    continue
                th = thermal_sample(g, t, rng, partial=after_dcgm_gap)
                ec = ecc_sample(g, t + 0.002, partial=after_dcgm_gap)
                out("telemetry.thermal", th)
                out("telemetry.ecc", ec)
                for fid, a, b in touch_thermal:
                    if a <= t <= b:
                        log.touch(fid, th["ts"])
                for c in counting:
                    if c.fid and c.node == node.name and c.gpu == g.gpu and c.t_from <= t:
                        log.touch(c.fid, ec["ts"])
            after_dcgm_gap = after_gpu_reload = False
        reload = next((r for r in node.nic_reload if r[0] <= t < r[1]), None)
        if reload is not None:
            after_nic_reload = True
            names = reload[2]
        else:
            util = node.util_at(t)
            for p in node.ports:
                if after_nic_reload:
                    p.reset()
                    p.last_ts = t - rng.uniform(2.0, 6.0)   # the port up a few seconds
                p.advance(t, util, rng)
                out("telemetry.nic", p.sample(t + 0.004, names.get(p.nic)))
            after_nic_reload = False
        last_t = t
        t += interval_s


def emit_xid(log: Log, node: str, gpu: int, ts: float, xid: int, fid: str | None) -> None:
    v = xid_event(node, gpu, ts, xid)
    log.emit("telemetry.ecc", v)
    if fid:
        log.touch(fid, v["ts"])


def trickle(rng: random.Random, gpus: list[Gpu], log: Log, counting: list[Counting]) -> None:
    """Routine: a healthy GPU's NVLink logs a handful of CRC errors once (corrected by replay,
    nothing slower)."""
    for g in gpus:
        t = rng.uniform(log.t0 + 60, log.t1 - 60)
        counting.append(Counting(None, g.node, g.gpu, t, t + 20.0,
                                 {"nvlink_crc_errors": rng.uniform(0.1, 0.25)}))
        log.effect("a healthy NVLink's few CRC errors (replayed, nothing slower)",
                   {"node": g.node, "gpu": g.gpu}, t, t + 20.0)
