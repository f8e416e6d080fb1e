"""blind27's training job: TP8 inside a node, data parallel across nodes, one rank a GPU.

A job runs as segments: a member list in rendezvous order (torchrun's elastic restart renumbers
ranks densely in that order), a first step, and an end -- a graceful re-form (a save step first,
so the next segment goes on from the next step) or a crash (steps stop; the next segment starts
from the last periodic checkpoint, so step numbers repeat). The global batch is fixed, so a
replica's compute scales with the job's size. A step: each rank's compute (the job's base x
real PAI rank noise x the job's PAI wander x its GPU's slowdown x a cold start), time in
neither (loader; a one-step host stall; a save), the wait for the slowest rank and the exposed
data-parallel all-reduce: ``step_ms = compute + comm + neither`` on every rank.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.blind27 import noise
from bench.blind27.world import Log, Node

COLD = (2.4, 1.5, 1.15, 1.04)   # first steps of a (re)started segment: compile, caches, warm-up


@dataclass
class Job:
    """One synchronous job: ``compute_ms`` per rank at ``ref_dp`` replicas, exposed
    all-reduce ``comm_ms``, a checkpoint every ``ckpt_every`` steps taking ``save_s``."""
    name: str
    tenant: str
    log: Log
    rng: random.Random
    compute_ms: float
    comm_ms: float
    ref_dp: int
    ckpt_every: int = 40
    save_s: tuple[float, float] = (6.0, 10.0)
    comm_factor: Callable[[float], tuple[float, set[str]]] = lambda t: (1.0, set())
    last_ckpt: int = 0
    attempt: int = 0
    _noise: dict[str, list[float]] = field(default_factory=dict)
    _wander: list[float] = field(default_factory=list)

    def _rank_noise(self, key: str, step: int) -> float:
        xs = self._noise.get(key)
        if xs is None:
            xs = self._noise[key] = noise.stream(self.rng, 1200)
        return xs[step % len(xs)]

    def segment(self, members: list[Node], t: float, step: int, stop: float,
                crash: float | None = None, cold: bool = True, final_save: bool = True
                ) -> tuple[float, int]:
        """Steps from ``t`` with ``members`` until a step ends past ``stop`` (then a save
        step when ``final_save``), or until ``crash`` (the step in flight never ends). Returns
        (time the segment's last step ended, the next step number)."""
        r = self.rng
        if not self._wander:
            self._wander = noise.job_stream(r, 5000)
        n = len(members)
        scale = self.ref_dp / n
        self.attempt += 1
        t_begin, k = t, 0
        saving = False
        while True:
            ck = step > 0 and step % self.ckpt_every == 0
            last = saving
            save = ck or last
            wander = 1.0 + 0.012 * self._wander[step % len(self._wander)]
            warm = COLD[k] if cold and k < len(COLD) else 1.0
            tm = t + self.compute_ms / 1000.0 * 0.5
            rows = []
            for dp, node in enumerate(members):
                stall = r.uniform(400.0, 1500.0) if r.random() < 0.01 else 0.0
                for g in range(8):
                    f, marks = node.slow(g, tm)
                    c = self.compute_ms * scale * wander * warm * f * (
                        1.0 + 0.014 * self._rank_noise(f"{node.name}/{g}", step))
                    if r.random() < 0.0015:   # a GC pause on one rank (one step)
                        c += r.uniform(250.0, 800.0)
                    nei = r.uniform(15.0, 45.0) + stall
                    rows.append((node, g, dp, c, nei, marks))
            save_ms = r.uniform(*self.save_s) * 1000.0 if save else 0.0
            cf, _ = self.comm_factor(tm)
            allreduce = self.comm_ms * cf * r.uniform(0.97, 1.03)
            step_ms = max(c + nei for _, _, _, c, nei, _ in rows) + allreduce + save_ms
            end = t + step_ms / 1000.0
            if crash is not None and end > crash:
                for node in members:
                    node.spans.insert(0, (t_begin, crash, "busy", 1.0))
                return crash, step
            loss = 2.3 * math.exp(-step / 9000.0) + 0.35
            for node, g, dp, c, nei, marks in rows:
                rank = dp * 8 + g
                v = {"ts": round(end + r.uniform(0.0, 0.012), 3), "job": self.name,
                     "step": step, "rank": rank, "node": node.name, "gpu": g,
                     "step_ms": round(step_ms, 2), "compute_ms": round(c, 2),
                     "comm_ms": round(step_ms - c - nei - save_ms, 2),
                     "tp_rank": g, "pp_rank": 0, "dp_rank": dp,
                     "loss": round(loss + r.gauss(0, 0.02), 4),
                     "grad_norm": round(0.9 + 0.25 * math.exp(-step / 3000.0)
                                        + abs(r.gauss(0, 0.05)), 4),
                     "tenant": self.tenant}
                if step % 10 == 0:
                    v["param_checksum"] = hashlib.sha1(
                        f"{self.name}/{self.attempt}/{step}/{g}".encode()).hexdigest()[:16]
                self.log.add("telemetry.step", v, marks)
            if save:
                self.last_ckpt = step
                for node in members:
                    node.busy(end - save_ms / 1000.0, end, "save")
            step += 1
            k += 1
            t = end
            if last:
                break
            if end >= stop:
                if not final_save:
                    break
                saving = True
        for node in members:
            node.spans.insert(0, (t_begin, t, "busy", 1.0))
        return t, step
