"""The simulator's healthy cluster: one generator per topic, each writing one time slice at a time.

Each generator draws its noise from a generator seeded by (seed, topic,
slice or step number), so a fault added to a scenario never shifts the
healthy noise of anything else, and state is a fixed set of arrays (one
entry per rank, GPU or port): memory does not grow with the log's length.
A record is ``(ts, topic, value, tags)``; ``tags`` names the faults that
changed it.

Healthy model (see notes/simulator-spec.md):

- step: compute = stage base x per-GPU bias N(1, 0.4%) x lognormal(0, 1.5%);
  other (data loading) 2-4% of the step period; the step ends when the
  slowest rank is done plus a jittered collective floor (25% +- 2.4%), so a
  slow rank has more compute_ms and less comm_ms than its peers.
- thermal (1 s): 63-69 C per GPU + slow drift + noise, memory +5 C, power
  580-670 W, SM clock 1980 MHz +- 5, throttle 0.
- nic (1 s): 18-26 GB/s per port with per-node burstiness, rare +1 errors.
- ecc (5 s): cumulative counters, a few GPUs with old SBEs or PCIe replays.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

from detector.events import STEP, THERMAL
from replay.sim.plan import Placement, Scenario, rng_for
from replay.sim.schedule import Schedule

Record = tuple[float, str, dict[str, Any], tuple[int, ...]]

STAGE_FRACTION = (0.88, 0.95, 1.0, 0.93)  # pipeline stages hold different layers
COMPUTE_SHARE = 0.68  # busiest stage's compute, as a share of the step period
NO_TAGS: tuple[int, ...] = ()


class StepGen:
    """telemetry.step: synchronous 3D-parallel training, one message per rank and step."""

    def __init__(self, sc: Scenario, pl: Placement, sched: Schedule, cluster: str) -> None:
        job = sc.job
        n = pl.n_ranks
        rng = rng_for(sc.seed, "step-static")
        self.seed, self.sched, self.n, self.job = sc.seed, sched, n, job
        self.period_ms = job.step_s * 1000
        self.base = (self.period_ms * COMPUTE_SHARE
                     * np.array(STAGE_FRACTION)[pl.pp_of % len(STAGE_FRACTION)]
                     * (1 + 0.004 * rng.standard_normal(n)))  # per-GPU speed differs a little
        if sc.axes.speed == "offsets":  # fixed per-GPU speed differences up to +-3 %
            self.base = self.base * (1 + rng_for(sc.seed, "axis-speed").uniform(-0.03, 0.03, n))
        self.drop = (("compute_ms",) if sc.axes.fields == "no_compute" else
                     ("tp_rank", "pp_rank", "dp_rank") if sc.axes.fields == "no_rank_fields"
                     else ())
        if sc.axes.fields == "no_rank_fields" and (job.tp, job.pp) != (1, 1):
            raise ValueError("axis fields=no_rank_fields means pure data parallelism: it needs "
                             f"tp = pp = 1, not tp={job.tp}, pp={job.pp}")
        self.gaps = list(sched.gaps)
        self.step_offset = 0  # steps the job went back to its checkpoint after restarts
        shard = np.exp(0.2 * rng.standard_normal(job.tp * job.pp))  # each shard has its own norm
        self.shard = shard[pl.pp_of * job.tp + pl.tp_of]
        self.first_step = int(rng.integers(1000, 50000))
        self.grad_period = float(rng.uniform(200, 600))
        self.grad_phase = float(rng.uniform(0, 2 * math.pi))
        self.dp_arr = pl.dp_of
        self.group = (pl.pp_of * job.tp + pl.tp_of).tolist()
        self.group_ids = [(g % job.tp, g // job.tp) for g in range(job.tp * job.pp)]
        self.const = list(zip(range(n), (pl.gpus[r][0] for r in range(n)),
                              (pl.gpus[r][1] for r in range(n)), pl.tp_of.tolist(),
                              pl.pp_of.tolist(), pl.dp_of.tolist(), strict=True))
        self.start, self.duration = sc.start_ts, sc.duration_s
        self.end = sc.start_ts + sc.duration_s
        self.cluster = cluster
        self.next_start, self.k = sc.start_ts, 0
        self.pending: tuple[float, list[Record]] | None = None

    def until(self, t1: float, out: list[Record]) -> None:
        """Append the records of every step that ends before ``t1``."""
        while True:
            if self.pending is None:
                if self.next_start >= self.end:
                    return
                self.pending = self._make()
                if self.pending is None:
                    return
            if self.pending[0] >= t1:
                return
            out.extend(self.pending[1])
            self.pending = None

    def _checksum(self, step: int, group: int, salt: str = "") -> str:
        tp, pp = self.group_ids[group]
        text = f"{self.job.job}/{step}/{tp}/{pp}{salt}"
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()

    def _make(self) -> tuple[float, list[Record]] | None:
        while self.gaps and self.gaps[0].a <= self.next_start:  # the job is down: wait
            gap = self.gaps.pop(0)
            self.next_start = max(self.next_start, gap.resume)
            self.step_offset -= gap.rewind
        s, k, n, job = self.next_start, self.k, self.n, self.job
        r = rng_for(self.seed, "step", k)
        compute = self.base * np.exp(0.015 * r.standard_normal(n))
        other = self.period_ms * (0.02 + 0.02 * r.random(n))
        floor = self.period_ms * (0.25 + 0.012 * float(np.clip(r.standard_normal(), -2, 2)))
        measure = 2.0 * r.random(n)  # each rank times its own step: a few ms apart
        report = 0.02 * r.random(n)  # and reports 0-20 ms after the step ends
        loss_noise = 0.01 * r.standard_normal(job.dp)
        grad_noise = np.exp(0.1 * r.standard_normal(job.dp))
        grad_rank = 1 + 0.005 * r.standard_normal(n)
        m = self.sched.step_mods(s, n)
        extra, comm_f = 0.0, 1.0
        if m is not None:
            if m.compute is not None:
                compute = compute * m.compute
            extra, comm_f = m.extra_other_ms, m.comm
            for rank, ms in m.extra_rank_ms.items():
                other[rank] += ms
            healthy_max = float((compute + other).max())
            if m.fault_compute is not None:
                compute = compute * m.fault_compute
        busy = compute + other + extra
        t_ms = float(busy.max()) + floor * comm_f
        e = s + t_ms / 1000
        self.next_start = e
        if e >= self.end:
            return None
        self.k += 1
        if self.gaps and s < self.gaps[0].a < e:  # a node went down mid-step: the step is lost
            return self._make()
        step = self.first_step + k + self.step_offset
        frac = (s - self.start) / self.duration
        loss = (2.2 + 0.3 * math.exp(-3 * frac)) + loss_noise
        level = 1.0 + 0.08 * math.sin(2 * math.pi * (s - self.start) / self.grad_period
                                      + self.grad_phase)
        grad = level * self.shard * grad_noise[self.dp_arr] * grad_rank
        sums = [self._checksum(step, g) for g in range(len(self.group_ids))]
        checks = [sums[g] for g in self.group]
        tags: list[tuple[int, ...]] | None = None
        if m is not None:
            for rank, f in m.grad.items():
                grad[rank] *= f
            for rank, salt in m.checksum.items():
                checks[rank] = self._checksum(step, self.group[rank], "/" + salt)
            everyone = list(m.all_tags)
            if m.compute_tags and abs(float((compute + other).max()) - healthy_max) > 0.005:
                everyone += m.compute_tags  # the slow rank set the pace: every rank's step changed
            if everyone or m.rank_tags:
                base = tuple(dict.fromkeys(everyone))
                tags = [base] * n
                for rank, ts_ in m.rank_tags.items():
                    tags[rank] = tuple(dict.fromkeys(base + tuple(ts_)))
        ts_l = np.round(e + report, 6).tolist()
        step_l = np.round(t_ms + measure, 2).tolist()
        comp_l = np.round(compute, 2).tolist()
        # floor, not round: compute_ms + comm_ms must never exceed step_ms
        comm_l = (np.floor((t_ms - busy) * 100) / 100).tolist()
        loss_l = np.round(loss[self.dp_arr], 4).tolist()
        grad_l = np.round(grad, 4).tolist()
        jn, cl, tn = job.job, self.cluster, job.tenant
        recs: list[Record] = [
            (ts, STEP, {"ts": ts, "job": jn, "step": step, "rank": rank, "node": node, "gpu": gpu,
                        "step_ms": sm, "compute_ms": c, "comm_ms": cm, "tp_rank": tp,
                        "pp_rank": pp, "dp_rank": dp, "loss": lo, "grad_norm": gn,
                        "param_checksum": ck, "cluster": cl, "tenant": tn}, NO_TAGS)
            for ts, (rank, node, gpu, tp, pp, dp), sm, c, cm, lo, gn, ck
            in zip(ts_l, self.const, step_l, comp_l, comm_l, loss_l, grad_l, checks, strict=True)]
        if tags is not None:
            recs = [(a, b, c, t) for (a, b, c, _), t in zip(recs, tags, strict=True)]
        for name in self.drop:
            for rec in recs:
                del rec[2][name]
        return e, recs


class Cadence:
    """When each GPU or port is sampled under the ``interval`` axis (not the default one).

    Every collector of a node samples at the node's own phase within the
    interval, with a per-node jitter on each sample (a scrape returns all GPUs
    of a node at once); internal state still advances every second, so
    cumulative counters carry what happened between two samples.
    """

    def __init__(self, seed: int, topic: str, interval_s: int, entity_node: np.ndarray,
                 n_nodes: int) -> None:
        rng = rng_for(seed, "axis-cadence", topic)
        self.seed, self.topic, self.k = seed, topic, interval_s
        phase = rng.uniform(0, interval_s, n_nodes)[entity_node]
        self.slot = np.floor(phase).astype(np.int64)
        self.frac = phase - self.slot
        self.node = entity_node
        self.n_nodes = n_nodes
        self.jitter_s = 0.1 if interval_s == 1 else 0.25

    def due(self, sl: int) -> np.ndarray:
        """Indexes of the entities sampled in slice ``sl``."""
        return np.flatnonzero(self.slot == sl % self.k)

    def ts(self, sl: int, t0: float) -> np.ndarray:
        r = rng_for(self.seed, "axis-jitter", self.topic, sl)
        j = r.uniform(-self.jitter_s, self.jitter_s, self.n_nodes)[self.node]
        return np.round(t0 + np.clip(self.frac + j, 0.0005, 0.9995), 6)


def _pick(cols: list[list[Any]], idx: list[int]) -> list[list[Any]]:
    return [[c[i] for i in idx] for c in cols]


class ThermalGen:
    """telemetry.thermal: one sample per GPU per interval (1 s), each GPU or node at its phase."""

    def __init__(self, sc: Scenario, pl: Placement, sched: Schedule, cluster: str) -> None:
        g = len(pl.gpus)
        rng = rng_for(sc.seed, "thermal-static")
        self.seed, self.sched, self.start = sc.seed, sched, sc.start_ts
        self.phase = rng.random(g)
        self.base = rng.uniform(63, 69, g)
        self.amp, self.period = rng.uniform(0.5, 2.0, g), rng.uniform(300, 1200, g)
        self.ph = rng.uniform(0, 2 * math.pi, g)
        self.mem_off = 5 + rng.standard_normal(g)
        self.pbase = rng.uniform(580, 670, g)
        # DCGM reports integer degrees; some collectors convert them to floats
        int_node = rng.random(len(pl.nodes)) < 0.5
        self.int_temp = int_node[pl.gpu_node].tolist()
        self.no_mem = np.flatnonzero(rng.random(g) < 0.05).tolist()  # sensor not reported
        self.ids = [(n, i) for n, i in pl.gpus]
        self.cluster, self.tenant = cluster, sc.job.tenant
        ax = sc.axes
        self.cadence = (None if ax.interval == "1-per-gpu" else
                        Cadence(sc.seed, "thermal", ax.interval_s, pl.gpu_node, len(pl.nodes)))
        if ax.numbers != "mixed":
            self.int_temp = [ax.numbers == "int"] * g
        self.float_clock = ax.numbers == "float"
        self.clock_base = np.full(g, 1980.0)
        if ax.clocks == "varied":  # boost clocks differ a few percent from GPU to GPU
            self.clock_base = np.rint(1980 * (1 - rng_for(sc.seed, "axis-clocks").uniform(
                0, 0.05, g)))
        self.capped: np.ndarray | None = None
        if ax.powercap == "fleet":  # power management holds many GPUs at their 700 W cap
            cr = rng_for(sc.seed, "axis-powercap")
            self.capped = cr.random(g) < cr.uniform(0.3, 0.7)
            self.cap_dip = cr.uniform(0.02, 0.06, g)
            self.cap_on = self.capped.copy()
            self.pbase = np.where(self.capped, cr.uniform(670, 695, g), self.pbase)

    def slice(self, sl: int, t0: float, out: list[Record]) -> None:
        g = len(self.ids)
        r = rng_for(self.seed, "thermal", sl)
        ts = np.round(t0 + self.phase, 6) if self.cadence is None else self.cadence.ts(sl, t0)
        drift = self.amp * np.sin(2 * math.pi * (ts - self.start) / self.period + self.ph)
        temp = self.base + drift + 0.4 * r.standard_normal(g)
        mem = temp + self.mem_off + 0.5 * r.standard_normal(g)
        noise = 12 * r.standard_normal(g)
        power = self.pbase + noise
        clock = self.clock_base + np.clip(np.rint(2 * r.standard_normal(g)), -5, 5)
        throttle = np.zeros(g, dtype=np.int64)
        if self.capped is not None:
            cr = rng_for(self.seed, "axis-powercap", sl)
            flip = cr.random(g)
            # capped most of the time: on -> off 2 %/s, off -> on 20 %/s
            self.cap_on = self.capped & np.where(self.cap_on, flip >= 0.02, flip < 0.2)
            on = self.cap_on
            clock = np.where(on, np.rint(clock * (1 - self.cap_dip * (1 + 0.15 * cr.standard_normal(
                g)))), clock)
            power = np.where(on, 700.0 - np.abs(2 * cr.standard_normal(g)), power)
            throttle[on] |= 0x4
        tags: dict[int, list[int]] = {}
        mods: list[Any] = []
        for e in self.sched.thermals:
            if e.a <= t0 + 1 and t0 < e.b:
                e.thermal(ts, mods)
        for gi, dtemp, clock_f, power_f, pinned, bits, tag in mods:
            temp[gi] += dtemp
            mem[gi] += 1.1 * dtemp
            clock[gi] = np.rint(clock[gi] * clock_f)
            jitter = 0.1 * noise[gi] if pinned else noise[gi] * power_f
            power[gi] = self.pbase[gi] * power_f + jitter
            throttle[gi] |= bits
            if tag is not None:
                tags.setdefault(gi, []).append(tag)
        ts_l = ts.tolist()
        tf, ti = np.round(temp, 1).tolist(), np.rint(temp).astype(np.int64).tolist()
        mf, mi = np.round(mem, 1).tolist(), np.rint(mem).astype(np.int64).tolist()
        pw = np.round(np.maximum(power, 30.0), 1).tolist()
        ck = (clock.astype(np.float64) if self.float_clock else clock.astype(np.int64)).tolist()
        th = throttle.tolist()
        ids, whole = self.ids, self.int_temp
        emitted: list[int] | range = range(g)
        if self.cadence is not None:
            due: list[int] = self.cadence.due(sl).tolist()
            ts_l, ids, whole, ti, tf, mi, mf, pw, ck, th = _pick(
                [ts_l, ids, whole, ti, tf, mi, mf, pw, ck, th], due)
            emitted = due
        cl, tn = self.cluster, self.tenant
        start = len(out)
        out.extend(
            (t, THERMAL, {"ts": t, "node": node, "gpu": gpu,
                          "gpu_temp_c": a if wh else b, "mem_temp_c": c if wh else d,
                          "power_w": p, "sm_clock_mhz": k, "throttle": h, "cluster": cl,
                          "tenant": tn}, NO_TAGS)
            for t, (node, gpu), wh, a, b, c, d, p, k, h
            in zip(ts_l, ids, whole, ti, tf, mi, mf, pw, ck, th, strict=True))
        pos = {gi: start + j for j, gi in enumerate(emitted)}
        for gi in self.no_mem:
            if gi in pos:
                del out[pos[gi]][2]["mem_temp_c"]
        for gi, tl in tags.items():
            if gi in pos:
                rec = out[pos[gi]]
                out[pos[gi]] = (rec[0], rec[1], rec[2], tuple(tl))
