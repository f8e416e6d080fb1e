"""blind24's jobs and collectors: synchronous steps, thermal / ECC / port samples, labels.

A job is a list of members (node, gpu, rank and its parallel coordinates) over time segments
(an elastic job has several), and its steps are synchronous: each rank computes its own share
(`compute_ms`: base x PAI noise x the job-wide PAI term x its GPU's clock factor x any fault),
loads its batch (`other`, in neither part; a save adds to it), and then waits in the all-reduce
for the slowest (`comm_ms` = the step's wall - its compute - its other). Every rank's step ends
within a few ms of the others. A GPU's load (what its power and heat follow) comes from the jobs
on it, so the physics runs before the steps and a step reads its GPU's clock at mid-step.
Records carry the node's clock (an NTP step shifts `ts`, not when a record arrives).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field

from bench.blind24.noise import Stream
from bench.blind24.world import Board, Fault, Trace, run


@dataclass
class Member:
    node: str
    gpu: int
    rank: int
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None


@dataclass
class Segment:
    """A stretch of a job with one membership (steps from t_from to t_to, seconds)."""
    t_from: float
    t_to: float
    members: list[Member]
    work: float = 1.0                  # per-rank share of the global batch (elastic: 32 / world)
    cold: dict = field(default_factory=dict)   # node -> slowdown of its first steps


@dataclass
class Job:
    name: str
    tenant: str
    segments: list[Segment]
    compute_ms: float
    other_ms: float
    allreduce_ms: float
    intensity: float                   # load it puts on a GPU (0..1)
    first_step: int = 1
    stage_extra: float = 0.0           # last pipeline stage's extra compute (its loss head)
    cold_steps: tuple[float, ...] = ()  # job-wide slowdown of its first steps (compile, warmup)
    saves: list[tuple[float, float]] = field(default_factory=list)   # (t, seconds) sync saves
    pauses: list[tuple[float, float]] = field(default_factory=list)  # eval passes: no steps
    loss: tuple[float, float, float] = (2.1, 0.0, 1.0)  # floor, excess at step 0, decay steps
    bad_batch: int | None = None       # a step whose batch is bad on every replica
    bad: tuple[float, float] = (1.0, 1.0)   # its loss and gradient-norm multipliers
    checksums: bool = True


@dataclass
class GpuSpec:
    node: str
    gpu: int
    board: Board
    inlet_c: float
    load_w: float
    seed: float
    fault: Fault | None = None
    label: Label | None = None


class Fleet:
    """The per-second load of every GPU, then its physics (with and without its fault)."""

    def __init__(self, gpus: list[GpuSpec], seconds: int):
        self.gpus = {(g.node, g.gpu): g for g in gpus}
        self.n = seconds
        self.load = {k: [0.0] * seconds for k in self.gpus}
        self.trace: dict[tuple, Trace] = {}
        self.healthy: dict[tuple, Trace] = {}

    def busy(self, key: tuple, t_from: float, t_to: float, level: float) -> None:
        arr = self.load[key]
        for t in range(max(0, int(t_from)), min(self.n, int(math.ceil(t_to)))):
            arr[t] = level

    def simulate(self) -> None:
        for key, g in self.gpus.items():
            args = dict(inlet_c=g.inlet_c, load_w=g.load_w, seed=g.seed)
            self.healthy[key] = run(g.board, self.load[key], **args)
            self.trace[key] = (run(g.board, self.load[key], fault=g.fault, **args)
                               if g.fault else self.healthy[key])


@dataclass
class Label:
    fault_id: str
    kind: str
    cause: str
    scope: dict
    attributable: bool
    start_ts: float = math.inf
    end_ts: float = -math.inf

    def saw(self, ts: float) -> None:
        self.start_ts = min(self.start_ts, ts)
        self.end_ts = max(self.end_ts, ts)

    def value(self) -> dict:
        return {"fault_id": self.fault_id, "kind": self.kind, "cause": self.cause,
                "scope": self.scope, "start_ts": round(self.start_ts, 3),
                "end_ts": round(self.end_ts, 3), "attributable": self.attributable}


class Recorder:
    """Collects (arrival, order, topic, value); a node's clock offset moves its `ts` only."""

    def __init__(self, epoch: float, rng: random.Random, cluster: str):
        self.epoch = epoch
        self.rng = rng
        self.cluster = cluster
        self.recs: list[tuple[float, int, str, dict]] = []
        self.offsets: dict[str, list[tuple[float, float, float]]] = {}

    def offset(self, node: str, t: float) -> float:
        for a, b, d in self.offsets.get(node, ()):
            if a <= t < b:
                return d
        return 0.0

    def emit(self, topic: str, t: float, value: dict) -> float:
        ts = self.epoch + t + self.offset(value["node"], t)
        value = {"ts": round(ts, 3), **value, "cluster": self.cluster}
        arrive = self.epoch + t + self.rng.uniform(0.03, 0.4)
        self.recs.append((min(arrive, ts + 4.8), len(self.recs), topic, value))
        if self.rng.random() < 0.001:            # at-least-once: delivered twice
            again = arrive + self.rng.uniform(0.3, 1.5)
            self.recs.append((min(again, ts + 4.8), len(self.recs), topic, dict(value)))
        return value["ts"]


def _checksum(job: str, tp: int, pp: int, step: int, salt: str = "") -> str:
    return hashlib.blake2b(f"{job}/{tp}/{pp}/{step}{salt}".encode(), digest_size=8).hexdigest()


@dataclass
class Sdc:
    """One GPU computing wrong now and then: every 50-150 of its steps its local gradient is
    off and its parameters after the step differ from its peers' (the job's per-step
    consistency check re-syncs them from a healthy replica, so the next step agrees again)."""
    node: str
    gpu: int
    t0: float
    label: Label
    rng: random.Random
    next_hit: int | None = None


def run_job(job: Job, fleet: Fleet, rec: Recorder, rng: random.Random, horizon: float,
            slow: dict[tuple, tuple[str, float, float, Label | None]],
            sdc: Sdc | None = None) -> None:
    """Emit the job's step records. ``slow`` maps a GPU to a compute drift: (kind, t0, rate per
    second, label or None for a routine drift)."""
    common = Stream(rng, common=True)
    noise: dict[tuple, Stream] = {}
    static: dict[tuple, float] = {}
    loss_dp: dict[int, float] = {}
    gn_base: dict[tuple, float] = {}
    step = job.first_step
    k = 0
    for seg in job.segments:
        t = seg.t_from
        seen_nodes = {m.node for m in seg.members}
        cold = dict(seg.cold)
        node_steps = {n: 0 for n in seen_nodes}
        while True:
            for a, b in job.pauses:
                if a <= t < b:
                    t = b
            if t >= seg.t_to or t >= horizon:
                break
            cj = 1.0 + 0.006 * common.next()
            jcold = job.cold_steps[k] if k < len(job.cold_steps) else 1.0
            save = sum(d for ts_, d in job.saves if t <= ts_ < t + 2.5) * 1000.0
            rows = []
            for m in seg.members:
                key = (m.node, m.gpu)
                if key not in noise:
                    noise[key] = Stream(rng)
                    static[key] = 1.0 + rng.gauss(0.0, 0.002)
                    gn_base[key] = rng.uniform(0.7, 1.3)
                g = fleet.gpus[key]
                base = (job.compute_ms * seg.work * static[key] * cj * jcold
                        * math.exp(g.board.sigma * noise[key].next()))
                if m.pp is not None and job.stage_extra and m.pp == _last_pp(seg):
                    base *= 1.0 + job.stage_extra
                nc = cold.get(m.node)
                if nc and node_steps[m.node] < len(nc):
                    base *= nc[node_steps[m.node]]
                mid = t + base / 2000.0
                healthy = base * fleet.healthy[key].compute_factor(mid)
                comp = base * fleet.trace[key].compute_factor(mid)
                lab = None
                if key in slow:
                    _, t0, rate, lab = slow[key]
                    if mid >= t0:
                        comp *= 1.0 + rate * (mid - t0)
                other = job.other_ms * rng.uniform(0.85, 1.2) + save
                rows.append((m, comp, healthy, other, lab))
            wall = max(c + o for _, c, _, o, _ in rows) + job.allreduce_ms * rng.uniform(0.95, 1.08)
            if t >= 0:
                _emit_steps(job, seg, rows, wall, t, step, fleet, rec, rng, loss_dp, gn_base,
                            sdc)
            for n in node_steps:
                node_steps[n] += 1
            t += wall / 1000.0 + rng.uniform(0.001, 0.004)
            step += 1
            k += 1


def _last_pp(seg: Segment) -> int:
    return max(m.pp or 0 for m in seg.members)


def _emit_steps(job, seg, rows, wall, t, step, fleet, rec, rng, loss_dp, gn_base, sdc) -> None:
    floor, excess, decay = job.loss
    loss0 = floor + excess * math.exp(-step / decay)
    bad = 0 if job.bad_batch is None else step - job.bad_batch
    lmul = gmul = 1.0
    if bad == 0:
        lmul, gmul = job.bad
    elif 0 < bad <= 3:
        lmul = 1.0 + (job.bad[0] - 1.0) * 0.25 ** bad
    last_pp = _last_pp(seg)
    hit = False
    if sdc is not None:
        if sdc.next_hit is None and t >= sdc.t0:
            sdc.next_hit = step
        hit = sdc.next_hit == step
        if hit:
            sdc.next_hit = step + sdc.rng.randint(50, 150)
    for m, comp, healthy, other, lab in rows:
        end = t + wall / 1000.0 + rng.uniform(0.0, 0.003)
        step_ms = wall + rng.uniform(0.0, 0.4)
        comm = step_ms - comp - other
        dp = m.dp if m.dp is not None else m.rank
        if dp not in loss_dp:
            loss_dp[dp] = rng.uniform(-0.03, 0.03)
        v = {"node": m.node, "gpu": m.gpu, "job": job.name, "step": step, "rank": m.rank,
             "step_ms": round(step_ms, 2), "compute_ms": round(comp, 2),
             "comm_ms": round(max(comm, 0.0), 2)}
        if m.tp is not None:
            v.update(tp_rank=m.tp, pp_rank=m.pp, dp_rank=m.dp)
        if m.pp is None or m.pp == last_pp:
            v["loss"] = round((loss0 + loss_dp[dp] + rng.gauss(0.0, 0.015 * loss0)) * lmul, 4)
        gn = gn_base[(m.node, m.gpu)] * (1.0 + 0.6 * math.exp(-step / max(job.loss[2], 1.0)))
        gn *= math.exp(rng.gauss(0.0, 0.06)) * gmul
        wrong = hit and (m.node, m.gpu) == (sdc.node, sdc.gpu)
        if wrong:
            gn *= sdc.rng.choice((-1, 1)) * sdc.rng.uniform(0.2, 0.7) + 1.0
        v["grad_norm"] = round(gn, 4)
        if job.checksums:
            v["param_checksum"] = _checksum(job.name, m.tp or 0, m.pp or 0, step,
                                            "x" if wrong else "")
        v["tenant"] = job.tenant
        ts = rec.emit("telemetry.step", end, v)
        if lab is not None and round(comp, 2) != round(healthy, 2):
            lab.saw(ts)
        elif round(comp, 2) != round(healthy, 2) and fleet.gpus[(m.node, m.gpu)].fault:
            fleet.gpus[(m.node, m.gpu)].label.saw(ts)
        if wrong:
            sdc.label.saw(ts)


def collectors(fleet: Fleet, rec: Recorder, rng: random.Random, nodes: dict[str, dict],
               thermal_s: float, ecc_s: float, nic_s: float, horizon: float) -> None:
    """Each node's DCGM and port collectors at the node's own phase."""
    for node, spec in nodes.items():
        phase = rng.uniform(0.0, thermal_s)
        gpus = sorted(g for (n, g) in fleet.gpus if n == node)
        t = phase
        while t < horizon:
            for g in gpus:
                key = (node, g)
                tr = fleet.trace[key]
                temp, mem, power, clock, thr = tr.sample(t)
                v = {"node": node, "gpu": g, "gpu_temp_c": temp, "mem_temp_c": mem,
                     "power_w": power, "sm_clock_mhz": clock, "throttle": thr}
                ts = rec.emit("telemetry.thermal", t + 0.01 * g, v)
                spec_g = fleet.gpus[key]
                if spec_g.fault and tr.sample(t) != fleet.healthy[key].sample(t):
                    spec_g.label.saw(ts)
            t += thermal_s
        sbe = {g: rng.choice((0, 0, 0, 1, 2, 4)) for g in gpus}
        t = rng.uniform(0.0, ecc_s)
        while t < horizon:
            for g in gpus:
                rec.emit("telemetry.ecc", t + 0.01 * g, {
                    "node": node, "gpu": g, "sbe_volatile": sbe[g], "dbe_volatile": 0,
                    "retired_pages_sbe": 0, "retired_pages_dbe": 0, "row_remap_pending": False,
                    "row_remap_failure": False, "pcie_replay": 0, "nvlink_crc_errors": 0,
                    "nvlink_replay_errors": 0, "nvlink_recovery_errors": 0,
                    "recovery_action": "none"})
            t += ecc_s
        nics = spec["nics"]
        tx = {n: rng.randrange(10**12, 10**14) for n in nics}
        rx = {n: tx[n] + rng.randrange(0, 10**11) for n in nics}
        sym = {n: rng.choice((0, 0, 0, 2)) for n in nics}
        t = rng.uniform(0.0, nic_s)
        prev = 0.0
        while t < horizon:
            busy = sum(fleet.load[(node, g)][min(int(t), fleet.n - 1)] for g in gpus) / len(gpus)
            for i, nic in enumerate(nics):
                moved = int(spec["gbps"] / 8 * 1e9 * 0.35 * busy * (t - prev)
                            * rng.uniform(0.9, 1.1))
                tx[nic] += moved
                rx[nic] += moved + rng.randrange(0, 10**6)
                rec.emit("telemetry.nic", t + 0.005 * i, {
                    "node": node, "nic": nic, "port": 1, "link_state": "up",
                    "rate_gbps": spec["gbps"], "tx_bytes": tx[nic], "rx_bytes": rx[nic],
                    "symbol_errors": sym[nic], "link_downed": 0, "rcv_errors": 0,
                    "xmit_discards": 0, "xmit_wait": 0, "out_of_sequence": 0,
                    "packet_seq_err": 0, "np_cnp_sent": 0, "rp_cnp_handled": 0})
            prev = t
            t += nic_s
