"""blind7's physics and emitters: GPUs on a 1 s grid, synchronous training steps, collector rows.

Everything here is my own model, written from DESIGN.md's contract and REFERENCE.md's facts;
none of it reads faultline's simulator or the other blind generators. A `Label` spans the
records its fault's hooks changed (`touch`), so a label is never wider than its evidence.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

# ---------------------------------------------------------------- GPU models (spec sheets)


@dataclass(frozen=True)
class Model:
    """A GPU model's figures: board limit, clocks, idle draw, heat path, slowdown point."""

    name: str
    limit_w: float
    boost_mhz: float
    idle_w: float
    idle_mhz: float
    k_c_per_w: float  # steady temperature rise per watt above the inlet
    slowdown_c: float  # the firmware holds the GPU here with SW thermal (0x20)
    tau_s: float  # temperature time constant


H200 = Model("H200-SXM-141GB", 700.0, 1980.0, 75.0, 345.0, 0.046, 87.0, 40.0)
GH200 = Model("GH200-96GB", 900.0, 1980.0, 95.0, 345.0, 0.030, 87.0, 30.0)


class Label:
    """A labelled fault; `touch(ts)` widens it to the records its hooks changed."""

    def __init__(self, fault_id: str, kind: str, cause: str, scope: dict,
                 attributable: bool = True, note: str = ""):
        self.fault_id, self.kind, self.cause, self.scope = fault_id, kind, cause, scope
        self.attributable, self.note = attributable, note
        self.first: float | None = None
        self.last: float | None = None

    def touch(self, ts: float) -> None:
        self.first = ts if self.first is None else min(self.first, ts)
        self.last = ts if self.last is None else max(self.last, ts)

    def value(self) -> dict | None:
        if self.first is None:
            return None  # a fault that changed no record is not labelled
        return {"fault_id": self.fault_id, "kind": self.kind, "cause": self.cause,
                "scope": self.scope, "start_ts": round(self.first, 3),
                "end_ts": round(self.last, 3), "attributable": self.attributable}


# ---------------------------------------------------------------- per-second GPU physics


@dataclass
class Gpu:
    """One GPU: its load on a 1 s grid (set by jobs and servers) and fault hooks."""

    node: str
    idx: int
    model: Model
    demand: float  # busy power wanted / board limit (silicon and workload spread)
    t_off: float  # airflow position + sensor offset, C
    n_s: int
    load: list = field(default_factory=list)
    # fault hooks, each t -> value; None = healthy
    age: Callable[[int], float] | None = None  # extra power needed for the same clock
    k_add: Callable[[int], float] | None = None  # extra C/W (a failed fan wall)
    out: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.load:
            self.load = [0.0] * self.n_s

    def run(self, inlet: list[float], rng: random.Random) -> None:
        """Power, clock, clock-event reasons and temperature each second, with and without
        the fault hooks (the same noise), so a sample's change can be told from its twin."""
        noise = [rng.gauss(0.0, 0.012) for _ in range(self.n_s)]
        for faulty in (False, True):
            if faulty and self.age is None and self.k_add is None:
                self.out[True] = self.out[False]
                break
            self.out[faulty] = self._run(inlet, noise, faulty)

    def _run(self, inlet, noise, faulty):
        m = self.model
        temp = inlet[0] + self.t_off + m.k_c_per_w * m.idle_w
        alpha = 1.0 - math.exp(-1.0 / m.tau_s)
        pw, clk, thr, tc, slow = [], [], [], [], []
        for t in range(self.n_s):
            load = self.load[t]
            busy_w = m.limit_w * self.demand * (1.0 + noise[t])
            want = m.idle_w + (busy_w - m.idle_w) * min(load, 1.0) * max(1.0, load)
            age = self.age(t) if (faulty and self.age) else 0.0
            k = m.k_c_per_w + (self.k_add(t) if (faulty and self.k_add) else 0.0)
            bits = 0
            if load < 0.08:
                clock, p, bits = m.idle_mhz + (m.boost_mhz - m.idle_mhz) * load * 3, want, 0x1
                ref = clock
            else:
                eff = want * (1.0 + age)  # an aged GPU needs more power for the same clock
                ref = m.boost_mhz * math.sqrt(min(1.0, m.limit_w / want))
                if eff > m.limit_w:
                    clock, p, bits = m.boost_mhz * math.sqrt(m.limit_w / eff), m.limit_w, 0x4
                    p *= 1.0 - abs(noise[t]) * 0.3  # the cap loop sits just under the limit
                else:
                    clock, p = m.boost_mhz, want
            base = inlet[t] + self.t_off
            if temp >= m.slowdown_c and load >= 0.08:
                allowed = max(0.3 * p, (m.slowdown_c + 0.4 - base) / k)
                if allowed < p:
                    clock *= math.sqrt(allowed / p)
                    p, bits = allowed, bits | 0x20
            temp += (base + k * p - temp) * alpha
            pw.append(p)
            clk.append(clock)
            thr.append(bits)
            tc.append(temp)
            # compute time scales with clock^-0.8 (the memory-bound part does not scale);
            # `ref` is the clock the power cap alone would give a healthy GPU
            slow.append((ref / clock) ** 0.8 if load >= 0.08 else 1.0)
        return {"power": pw, "clock": clk, "throttle": thr, "temp": tc, "slow": slow}

    def slow_at(self, t: int, faulty: bool = True) -> float:
        s = self.out[faulty]["slow"]
        return s[min(max(t, 0), self.n_s - 1)]


# ---------------------------------------------------------------- training steps


@dataclass(frozen=True)
class Rank:
    rank: int
    node: str
    gpu: int
    tp: int
    pp: int
    dp: int


def megatron_ranks(hosts: list[tuple[str, int]], tp: int, pp: int, dp: int) -> list[Rank]:
    """Megatron's default order (tp fastest, then dp, then pp) over the (node, gpu) slots."""
    out = []
    for r, (node, gpu) in enumerate(hosts[: tp * pp * dp]):
        out.append(Rank(r, node, gpu, r % tp, r // (tp * dp), (r // tp) % dp))
    return out


@dataclass
class Attempt:
    """One run of a job between a start and a stop (crash, hang, end of log)."""

    job: str
    tenant: str
    ranks: list[Rank]
    start_s: float  # seconds from the log's start of the first step's start
    stop_s: float  # no step ends after this
    step0: int
    compute_ms: float
    comm_ms: float
    loader_ms: float
    stage_off: tuple = (0.0,)
    ckpt_every: int = 0
    ckpt_ms: tuple = (0.0, 0.0)  # blocking save, in neither
    async_tail: tuple = (0, 0.0)  # steps after an async save slowed, and by how much
    checksum_every: int = 10
    warmup: float = 4.0  # first-step factor; decays over ~8 steps
    loader_stall: float = 0.0  # chance a step one rank's loader stalls 1.5-4 s (healthy)
    has_split: bool = True  # compute_ms / comm_ms reported
    seed: int = 0


class Hooks:
    """Fault hooks on steps: compute factor per rank, extra neither per rank, job comm factor,
    stall seconds added to a step; each returns (value, label or None)."""

    def __init__(self):
        self.compute: list[Callable] = []  # (rank, t) -> (factor, label)
        self.neither: list[Callable] = []  # (rank, t, rng) -> (ms, label)
        self.comm: list[Callable] = []  # (job, t) -> (factor, label)
        self.stall: list[Callable] = []  # (job, t0, t1) -> (ms, label)


def run_attempt(at: Attempt, gpus: dict, hooks: Hooks, t0_epoch: float,
                clock_off: dict, emit: Callable[[str, dict], None]) -> tuple[float, int]:
    """Steps of one attempt; returns (end of the last step, s from the log's start; last step)."""
    rng = random.Random(at.seed)
    off = {r.rank: rng.gauss(0.0, 0.006) for r in at.ranks}
    groups: dict[tuple, list[Rank]] = {}
    for r in at.ranks:
        groups.setdefault((r.pp, r.dp), []).append(r)
    t = at.start_s
    step = at.step0
    k = 0
    tail = 0
    loss0 = 2.4 * math.exp(-at.step0 / 4000.0)
    last = (t, step - 1)
    while True:
        warm = 1.0 + (at.warmup - 1.0) * math.exp(-k / 2.5) if at.warmup > 1 else 1.0
        ts_i = int(t)
        touched: set = set()
        comp = {}
        for r in at.ranks:
            c = at.compute_ms * (1 + at.stage_off[r.pp % len(at.stage_off)]) * (1 + off[r.rank])
            c *= (1 + rng.gauss(0.0, 0.01)) * warm
            g = gpus.get((r.node, r.gpu))
            if g is not None:
                f, fc = g.slow_at(ts_i, True), g.slow_at(ts_i, False)
                c *= f
                if abs(f / fc - 1.0) > 0.002 and getattr(g, "label", None):
                    touched.add(g.label)
            for h in hooks.compute:
                f, lab = h(r, t)
                if f != 1.0 and lab:
                    touched.add(lab)
                c *= f
            if tail > 0:
                c *= 1.0 + at.async_tail[1]
            comp[r.rank] = c
        # a TP group runs at its slowest member's pace (the forward-backward timer holds the
        # TP all-reduces)
        for grp in groups.values():
            mx = max(comp[r.rank] for r in grp)
            for r in grp:
                comp[r.rank] = mx * (1 + rng.gauss(0.0, 0.0008))
        neither = {}
        ckpt = at.ckpt_every and k > 0 and step % at.ckpt_every == 0
        save = rng.uniform(*at.ckpt_ms) if ckpt else 0.0
        stalled = rng.choice(at.ranks).rank if rng.random() < at.loader_stall else None
        for r in at.ranks:
            n = at.loader_ms * math.exp(rng.gauss(0.0, 0.15)) + save * (1 + rng.gauss(0, 0.02))
            if r.rank == stalled:
                n += rng.uniform(1500.0, 4000.0)
            for h in hooks.neither:
                ms, lab = h(r, t, rng)
                if ms and lab:
                    touched.add(lab)
                n += ms
            neither[r.rank] = n
        cm = at.comm_ms * (1 + rng.gauss(0.0, 0.02))
        for h in hooks.comm:
            f, lab = h(at.job, t)
            if f != 1.0 and lab:
                touched.add(lab)
            cm *= f
        ready = {r.rank: comp[r.rank] + neither[r.rank] for r in at.ranks}
        top = max(ready.values())
        dur = top + cm
        for h in hooks.stall:
            ms, lab = h(at.job, t, t + dur / 1000.0)
            if ms and lab:
                touched.add(lab)
            dur += ms
        end = t + dur / 1000.0
        if end > at.stop_s:
            break
        loss = loss0 * math.exp(-k / 6000.0) + rng.gauss(0, 0.01)
        for r in at.ranks:
            sm = dur + rng.uniform(0.0, 0.3)
            ts = round(t0_epoch + end + clock_off.get(r.node, 0.0), 3)
            v = {"ts": ts, "job": at.job, "step": step, "rank": r.rank, "node": r.node,
                 "gpu": r.gpu, "step_ms": round(sm, 3), "tenant": at.tenant}
            if at.has_split:
                v["compute_ms"] = round(comp[r.rank], 3)
                v["comm_ms"] = round(sm - comp[r.rank] - neither[r.rank], 3)
            v.update(tp_rank=r.tp, pp_rank=r.pp, dp_rank=r.dp)
            if r.pp == max(x.pp for x in at.ranks):
                v["loss"] = round(loss + rng.gauss(0, 0.004), 5)
            v["grad_norm"] = round(abs(0.9 + rng.gauss(0, 0.05)), 5)
            if at.checksum_every and step % at.checksum_every == 0:
                v["param_checksum"] = hashlib.blake2s(
                    f"{at.job}/{r.tp}/{r.pp}/{step}".encode(), digest_size=8).hexdigest()
            emit("telemetry.step", v)
            for lab in touched:
                lab.touch(ts)
        last = (end, step)
        if ckpt and at.async_tail[0]:
            tail = at.async_tail[0]
        elif tail > 0:
            tail -= 1
        t = end
        step += 1
        k += 1
    return last


# ---------------------------------------------------------------- collector rows


def thermal_row(g: Gpu, t: int, ts: float, ints: bool, mem: bool, extra: dict | None = None):
    o = g.out[True]
    temp = o["temp"][t]
    v = {"ts": ts, "node": g.node, "gpu": g.idx,
         "gpu_temp_c": int(round(temp)) if ints else round(temp, 1),
         "mem_temp_c": (int(round(temp + 7)) if ints else round(temp + 7, 1)) if mem else None,
         "power_w": round(o["power"][t], 1), "sm_clock_mhz": float(int(o["clock"][t] / 15) * 15),
         "throttle": o["throttle"][t]}
    if extra:
        v.update(extra)
    return v


def thermal_changed(g: Gpu, t: int, ints: bool) -> bool:
    a, b = g.out[True], g.out[False]
    if a is b:
        return False
    rt = (lambda x: int(round(x))) if ints else (lambda x: round(x, 1))
    return (rt(a["temp"][t]) != rt(b["temp"][t])
            or int(a["clock"][t] / 15) != int(b["clock"][t] / 15)
            or a["throttle"][t] != b["throttle"][t] or abs(a["power"][t] - b["power"][t]) > 0.5)
