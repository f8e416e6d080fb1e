"""blind21's simulation: GPUs heat, cap and brake second by second; jobs step synchronously.

One `Cluster` holds every GPU's load, power limit, brake and thermal resistance as arrays over
the log's seconds; `settle()` turns them into power, clock, temperature and clock-event
reasons (world.py's board). Jobs then step on top of the settled clocks: a rank's compute is
its base x its PAI jitter x its workload's extra (MoE routing, context-parallel masks) x its
GPU's clock over the step; every rank of a job ends a step together (the wait for the slowest
in `comm_ms`, TP and DP collectives alike: DESIGN's `compute_ms` is what differs between a
slow rank and its peers). Collectors sample at their node's own phase. Every record carries
the faults that changed it, so a label spans exactly those records.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from bench.blind21 import world as W


@dataclass
class Job:
    """One run of a training job on a set of nodes (a requeue is a second run, same name)."""

    name: str
    tenant: str
    nodes: list[str]
    tp: int
    pp: int
    dp: int
    step_ms: float
    start_s: float
    end_s: float                 # last possible step end (a stop, a kill, the log's end)
    demand_w: float = 660.0
    comm_frac: float = 0.12
    other_frac: float = 0.015
    jitter: float = 0.014
    save_every_s: float = 0.0
    save_s: float = 0.0
    step0: int = 1
    cold_steps: int = 0
    cp: int = 1                  # context-parallel ranks, reported inside dp_rank
    stage_skew: float = 0.03     # pipeline stage 1's extra work
    extra: object = None         # callable(job, k, ranks) -> per-rank multipliers or None
    faults: list = field(default_factory=list)   # (fault_id, gpu-key, t_from, factor)
    saves: list = field(default_factory=list)    # (t, t + save_s), filled by occupy()
    saved_steps: list = field(default_factory=list)  # steps whose synchronous save finished

    def ranks(self) -> list[tuple[int, str, int, int, int, int]]:
        """(rank, node, gpu, tp, pp, reported dp) in Megatron's order tp-cp-dp-pp."""
        out = []
        per = self.tp * self.cp * self.dp
        for r in range(per * self.pp):
            tp, rest = r % self.tp, r // self.tp
            cpdp, pp = rest % (self.cp * self.dp), rest // (self.cp * self.dp)
            out.append((r, self.nodes[r // 8], r % 8, tp, pp, cpdp))
        return out


class Cluster:
    """Every GPU's load and limits over the log, then their settled board state."""

    def __init__(self, nodes: list[str], t0: float, seconds: int, rng: np.random.Generator):
        self.nodes, self.t0, self.T, self.rng = nodes, t0, seconds, rng
        self.gpus = [(n, g) for n in nodes for g in range(8)]
        self.ix = {k: i for i, k in enumerate(self.gpus)}
        G = len(self.gpus)
        self.busy = np.zeros((G, seconds), bool)
        self.spin = np.zeros((G, seconds), bool)
        self.demand = np.full((G, seconds), W.IDLE_W)
        self.limit = np.full((G, seconds), W.LIMIT_W)
        self.brake = np.zeros((G, seconds), bool)
        self.r_th = np.repeat(rng.uniform(0.055, 0.072, G)[:, None], seconds, axis=1)
        self.inlet = np.repeat(rng.uniform(23.0, 27.0, len(nodes))[:, None], seconds, axis=1)
        self.gone = np.full(G, seconds)             # a GPU off the bus reports nothing after
        self.dark: dict[str, list[tuple[int, int]]] = {n: [] for n in nodes}
        self.row_tags: dict[str, np.ndarray] = {}   # fault -> (G, T) thermal rows it changes
        self.step_tags: dict[str, np.ndarray] = {}  # fault -> (G, T) compute it changes
        self.extra_ecc: list[tuple[float, str, int, dict, set]] = []   # XID events
        self.spread = rng.uniform(0.97, 1.03, G)

    def gi(self, node: str, gpu: int) -> int:
        return self.ix[(node, gpu)]

    def tag(self, table: str, fault: str) -> np.ndarray:
        tags = self.row_tags if table == "row" else self.step_tags
        if fault not in tags:
            tags[fault] = np.zeros((len(self.gpus), self.T), bool)
        return tags[fault]

    def occupy(self, job: Job) -> None:
        """The job's GPUs busy from its start to its end, idle during its synchronous saves."""
        a, b = int(job.start_s), min(int(math.ceil(job.end_s)), self.T)
        if job.save_every_s:
            t = job.start_s + job.save_every_s
            while t + job.save_s < job.end_s:
                job.saves.append((t, t + job.save_s))
                t += job.save_every_s
        for _, node, gpu, *_ in job.ranks():
            i = self.gi(node, gpu)
            self.busy[i, a:b] = True
            self.demand[i, a:b] = job.demand_w * self.spread[i] + self.rng.normal(0, 12, b - a)
            for s, e in job.saves:
                self.busy[i, int(s):int(e)] = False
                self.demand[i, int(s):int(e)] = W.IDLE_W

    def settle(self) -> None:
        G, T = len(self.gpus), self.T
        self.power = np.zeros((G, T))
        self.clock = np.zeros((G, T))
        self.temp = np.zeros((G, T))
        self.reasons = np.zeros((G, T), np.int64)
        node_of = np.array([self.nodes.index(n) for n, _ in self.gpus])
        temp = self.inlet[node_of, 0] + self.r_th[:, 0] * W.IDLE_W
        a = 1.0 - math.exp(-1.0 / W.TAU_S)
        for t in range(T):
            busy, spin = self.busy[:, t], self.spin[:, t] & ~self.busy[:, t]
            loaded = busy | spin
            demand = np.where(busy, self.demand[:, t], np.where(spin, W.SPIN_W, W.IDLE_W))
            limit = self.limit[:, t]
            capped = loaded & (demand > limit)
            p = np.minimum(demand, limit)
            clk = np.where(loaded, W.BOOST_MHZ * np.where(
                capped, (limit / demand) ** W.CLOCK_EXP, 1.0), W.IDLE_MHZ)
            inlet = self.inlet[node_of, t]
            r = self.r_th[:, t]
            nxt = temp + (inlet + r * p - temp) * a
            hold = loaded & (nxt > W.T_HOLD_C)
            if hold.any():
                want = ((W.T_HOLD_C - temp) / a + temp - inlet) / r
                p2 = np.clip(want, 0.3 * p, p)
                clk = np.where(hold, clk * (p2 / p) ** W.CLOCK_EXP, clk)
                p = np.where(hold, p2, p)
                nxt = np.where(hold, temp + (inlet + r * p - temp) * a, nxt)
            br = self.brake[:, t] & loaded
            clk = np.where(br, clk * W.BRAKE_CLOCK, clk)
            p = np.where(br, p * 0.55, p)
            temp = nxt
            self.power[:, t], self.clock[:, t], self.temp[:, t] = p, clk, temp
            self.reasons[:, t] = (np.where(loaded, 0, 0x1) | np.where(capped, 0x4, 0)
                                  | np.where(hold, 0x20, 0) | np.where(br, 0x80, 0))
        slow = np.where(self.busy | self.spin, (W.BOOST_MHZ / self.clock) ** W.COMPUTE_EXP, 1.0)
        self.slow_cum = np.concatenate([np.zeros((G, 1)), np.cumsum(slow, axis=1)], axis=1)

    def slowness(self, ix: np.ndarray, t: float, d: float) -> np.ndarray:
        """Mean compute stretch of GPUs ``ix`` over [t, t + d] (their clocks against boost)."""
        a = min(max(int(t), 0), self.T - 1)
        b = min(max(int(t + d) + 1, a + 1), self.T)
        return (self.slow_cum[ix, b] - self.slow_cum[ix, a]) / (b - a)


class Recorder:
    """Records in arrival order with the faults that changed each; label spans from them."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.out: list[tuple[float, int, str, dict]] = []
        self.spans: dict[str, list[float]] = {}
        self._draws: list[tuple[float, float, float]] = []

    def _draw(self) -> tuple[float, float, float]:
        if not self._draws:                  # drawn in blocks: a scalar draw costs ~1 us
            lag = self.rng.uniform(0.03, 0.6, 4096)
            dup = self.rng.random(4096)
            late = self.rng.uniform(0.2, 2.0, 4096)
            self._draws = list(zip(lag.tolist(), dup.tolist(), late.tolist(), strict=True))
            self._draws.reverse()
        return self._draws.pop()

    def add(self, topic: str, value: dict, tags=()) -> None:
        lag, dup, late = self._draw()
        self.out.append((value["ts"] + lag, len(self.out), topic, value))
        if dup < 0.001:                                  # at-least-once delivery
            self.out.append((value["ts"] + lag + late, len(self.out), topic, value))
        for f in tags:
            s = self.spans.setdefault(f, [value["ts"], value["ts"]])
            s[0], s[1] = min(s[0], value["ts"]), max(s[1], value["ts"])

    def records(self) -> list[tuple[str, dict]]:
        return [(tp, v) for _, _, tp, v in sorted(self.out, key=lambda r: (r[0], r[1]))]


def _checksum(job: str, tp: int, pp: int, step: int) -> str:
    return hashlib.blake2b(f"{job}/{tp}/{pp}/{step}".encode(), digest_size=8).hexdigest()


def run_job(cl: Cluster, job: Job, rec: Recorder, rng: np.random.Generator) -> int:
    """Steps ``job`` over the settled cluster and records each rank's steps; returns the last
    step number recorded."""
    ranks = job.ranks()
    R = len(ranks)
    n_max = int((job.end_s - job.start_s) / (job.step_ms / 1000.0) * 1.3) + 16
    pace = W.pace(rng, n_max, 0.003)
    jit = np.stack([W.jitter(rng, n_max, job.jitter) for _ in range(R)])
    host = rng.uniform(0.8, 1.2, (R, n_max))
    gix = np.array([cl.gi(node, gpu) for _, node, gpu, *_ in ranks])
    stage = np.array([1.0 + job.stage_skew * pp for *_, pp, _ in ranks])
    loss0 = float(rng.uniform(2.2, 2.8))
    saves = list(job.saves)
    t, k, last = job.start_s, 0, job.step0 - 1
    base_c = job.step_ms * (1.0 - job.comm_frac - job.other_frac)
    while k < n_max:
        step = job.step0 + k
        cold = 1.0 + (1.5 * (job.cold_steps - k) / job.cold_steps if k < job.cold_steps else 0)
        c = base_c * pace[k] * cold * stage * jit[:, k]
        tags: list[set] = [set() for _ in range(R)]
        if job.extra is not None:
            c = c * job.extra(job, k, ranks)
        d_guess = job.step_ms / 1000.0 * cold
        for fid, (fnode, fgpu), t_from, factor in job.faults:
            if t >= t_from:
                for j, (_, node, gpu, *_rest) in enumerate(ranks):
                    if (node, gpu) == (fnode, fgpu):
                        c[j] *= factor
                        tags[j].add(fid)
        c = c * cl.slowness(gix, t, d_guess)
        a, b = int(t), int(t + d_guess) + 1
        for fid, m in cl.step_tags.items():
            for j in np.flatnonzero(m[gix, a:b].any(axis=1)):
                tags[j].add(fid)
        top = float(c.max())
        slowest = tags[int(c.argmax())]
        reduce_ms = job.step_ms * job.comm_frac * float(rng.uniform(0.97, 1.03))
        other = job.step_ms * job.other_frac * host[:, k]
        saving = bool(saves) and t + (top + reduce_ms) / 1000.0 >= saves[0][0]
        if saving:
            s, e = saves.pop(0)
            other = other + (e - s) * 1000.0
        step_ms = top + reduce_ms + other
        ends = t + step_ms / 1000.0 + rng.uniform(0, 0.004, R)
        if ends.max() > job.end_s:
            break
        if saving:
            job.saved_steps.append(step)
        loss = loss0 - 0.15 * math.log1p(step / 200.0)
        sums = {(tp, pp): _checksum(job.name, tp, pp, step)
                for tp in range(job.tp) for pp in range(job.pp)}
        for j, (rank, node, gpu, tp, pp, dp) in enumerate(ranks):
            val = {"ts": round(float(ends[j]) + cl.t0, 4), "job": job.name, "step": step,
                   "rank": rank, "node": node, "gpu": gpu,
                   "step_ms": round(float(step_ms[j]), 3), "compute_ms": round(float(c[j]), 3),
                   "comm_ms": round(float(top - c[j] + reduce_ms), 3),
                   "tp_rank": tp, "pp_rank": pp, "dp_rank": dp,
                   "loss": round(loss + float(rng.normal(0, 0.02)), 4),
                   "grad_norm": round(float(np.exp(rng.normal(0.0, 0.08))) * 0.9, 4),
                   "param_checksum": sums[(tp, pp)], "tenant": job.tenant}
            rec.add("telemetry.step", val, tags[j] | slowest)
        t = float(ends.max())
        last = step
        k += 1
    return last


def sample(cl: Cluster, rec: Recorder, rng: np.random.Generator, thermal_s: float,
           ecc_s: float, nic_s: float, nic_gbs: dict[str, float]) -> None:
    """Every collector's rows at its node's phase: thermal and ECC per GPU, NIC per port."""
    for node in cl.nodes:
        ph_t, ph_e, ph_n = (float(rng.uniform(0, s)) for s in (thermal_s, ecc_s, nic_s))
        dark = cl.dark[node]

        def up(t: float, dark=dark) -> bool:
            return not any(a <= t < b for a, b in dark)

        sbe = {g: 0 for g in range(8)}
        t = ph_t
        while t < cl.T:
            if up(t):
                for g in range(8):
                    i = cl.gi(node, g)
                    s = int(t)
                    if s >= cl.gone[i]:
                        continue
                    temp = cl.temp[i, s] + float(rng.normal(0, 0.3))
                    val = {"ts": round(cl.t0 + t, 3), "node": node, "gpu": g,
                           "gpu_temp_c": int(round(temp)),
                           "mem_temp_c": int(round(temp + 5 + 0.004 * cl.power[i, s])),
                           "power_w": round(float(cl.power[i, s] + rng.normal(0, 3)), 2),
                           "sm_clock_mhz": int(round(float(cl.clock[i, s]) / 15) * 15),
                           "throttle": int(cl.reasons[i, s])}
                    tags = {f for f, m in cl.row_tags.items() if m[i, s]}
                    rec.add("telemetry.thermal", val, tags)
            t += thermal_s + float(rng.uniform(-0.05, 0.05))
        t = ph_e
        reset_at = [b for _, b in dark]
        while t < cl.T:
            if up(t):
                if reset_at and t >= reset_at[0]:
                    reset_at.pop(0)
                    sbe = {g: 0 for g in range(8)}
                for g in range(8):
                    i = cl.gi(node, g)
                    if int(t) >= cl.gone[i]:
                        continue
                    val = {"ts": round(cl.t0 + t, 3), "node": node, "gpu": g,
                           "sbe_volatile": sbe[g], "dbe_volatile": 0, "retired_pages_sbe": 0,
                           "retired_pages_dbe": 0, "row_remap_pending": False,
                           "row_remap_failure": False, "pcie_replay": 0,
                           "nvlink_crc_errors": 0, "nvlink_replay_errors": 0,
                           "nvlink_recovery_errors": 0, "recovery_action": "none"}
                    rec.add("telemetry.ecc", val)
            t += ecc_s
        t = ph_n
        tx = {k: int(rng.integers(10**12, 10**14)) for k in range(8)}
        rx = {k: tx[k] - int(rng.integers(10**9, 10**10)) for k in range(8)}
        wait = {k: int(rng.integers(10**6, 10**8)) for k in range(8)}
        reset_at = [b for _, b in dark]
        gbs = nic_gbs.get(node, 0.0)
        while t < cl.T:
            s = min(int(t), cl.T - 1)
            if up(t):
                if reset_at and t >= reset_at[0]:
                    reset_at.pop(0)
                    tx = {k: 0 for k in range(8)}
                    rx = {k: 0 for k in range(8)}
                    wait = {k: 0 for k in range(8)}
                busy = cl.busy[cl.gi(node, 0):cl.gi(node, 0) + 8, s].mean()
                for k in range(8):
                    rate = gbs * busy * float(rng.uniform(0.9, 1.1)) * 1e9 + 2e5
                    tx[k] += int(rate * nic_s)
                    rx[k] += int(rate * nic_s * float(rng.uniform(0.98, 1.02)))
                    wait[k] += int((2e4 if busy else 10) * nic_s * float(rng.uniform(0.5, 1.5)))
                    val = {"ts": round(cl.t0 + t, 3), "node": node, "nic": f"mlx5_{k}",
                           "port": 1, "link_state": "up", "rate_gbps": 400.0,
                           "tx_bytes": tx[k], "rx_bytes": rx[k],
                           "symbol_errors": 0, "link_downed": 0, "rcv_errors": 0,
                           "xmit_discards": 0, "xmit_wait": wait[k], "out_of_sequence": 0,
                           "packet_seq_err": 0, "np_cnp_sent": 0, "rp_cnp_handled": 0}
                    rec.add("telemetry.nic", val)
            t += nic_s + float(rng.uniform(-0.05, 0.05))
    for ts, node, gpu, val, tags in cl.extra_ecc:
        rec.add("telemetry.ecc", {"ts": round(cl.t0 + ts, 3), "node": node, "gpu": gpu, **val},
                tags)
