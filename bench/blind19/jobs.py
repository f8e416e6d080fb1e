"""blind19's training jobs: synchronous attempts in Megatron order `tp + TP * dp` (no pipeline).

A TP group (its ranks on one node) computes at its slowest GPU's pace and reports that in
`compute_ms`; the loader and a synchronous save are time in neither; then the DP reduce, which
everyone leaves together: a faster group's wait for the slowest is in `comm_ms`. Each replica
(one `dp_rank`) trains on its own batch, so its loss and local grad norms are its own; the
parameters after the step are the same on every replica (the checksum of a `tp_rank` agrees)
unless a rank's copy was corrupted. A cold attempt's first step is 6-9x, then ~20 warm-up steps.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

from bench.blind19.world import T0, Span, World


@dataclass
class Attempt:
    job: str
    tenant: str
    nodes: list[str]
    tp: int
    dp: int
    t0: float
    step0: int
    compute_s: float
    reduce_s: float
    checksum_every: int
    save_every: int = 0
    save_s: tuple = (6.0, 9.0)
    cold: bool = True
    stop_at: float | None = None          # SIGTERM: the step in flight ends with a save
    die_at: float | None = None           # a crash: nothing after this time
    loss0: float = 2.3
    # (dp, step) -> (loss x, grad x, label) ; rank -> (from step, grad x, label) corrupt copy
    spikes: dict = field(default_factory=dict)
    corrupt: dict = field(default_factory=dict)
    # hooks: extra seconds in neither for a node, extra reduce factor, labels a step touches
    neither_extra: object = None
    reduce_x: object = None
    step_labels: object = None
    attempt: int = 0
    ranks_rows: int = 0
    last_step: int = 0
    last_save: int = 0
    end_t: float = 0.0

    def where(self, rank: int) -> tuple[str, int]:
        per_node = 8
        return self.nodes[rank // per_node], rank % per_node


def run(world: World, a: Attempt, until: float) -> Attempt:
    """Step rows of attempt `a` from a.t0 until `until` (or its stop / death); marks its GPUs
    training; returns it with last_step / last_save / end_t set."""
    r = world.rng
    n = a.tp * a.dp
    groups = [[d * a.tp + k for k in range(a.tp)] for d in range(a.dp)]
    persist = {d: r.gauss(1.0, 0.005) for d in range(a.dp)}
    tpx = {k: r.uniform(0.85, 1.15) for k in range(a.tp)}
    t, step, k = a.t0, a.step0, 0
    a.last_save = a.step0 - 1
    while t < until:
        step += 1
        warm = 1.0 + (r.uniform(5.0, 8.0) if (a.cold and k == 0) else 0.0) + (
            2.0 * math.exp(-k / 5.0) if a.cold and k > 0 else 0.0)
        comp = {}
        for d, ranks in enumerate(groups):
            gx = max(world.gpus[a.where(rk)].compute_x(t) for rk in ranks)
            comp[d] = a.compute_s * persist[d] * warm * gx * r.gauss(1.0, 0.007)
        stopping = a.stop_at is not None and t >= a.stop_at
        saving = stopping or (a.save_every and step % a.save_every == 0)
        neither = {}
        for d in range(a.dp):
            node = a.where(groups[d][0])[0]
            extra = a.neither_extra(node, t) if a.neither_extra else 0.0
            neither[d] = r.uniform(0.02, 0.04) + extra + (r.uniform(*a.save_s) if saving else 0)
        if saving:  # the slowest writer sets the step; all write at once
            w = max(neither.values())
            neither = {d: w * r.uniform(0.97, 1.0) for d in neither}
        red = a.reduce_s * r.gauss(1.0, 0.02) * (a.reduce_x(a.nodes, t) if a.reduce_x else 1.0)
        slowest = max(comp[d] + neither[d] for d in range(a.dp))
        end = t + slowest + red
        if a.die_at is not None and end > a.die_at:
            break
        if end > world.duration:
            break
        base_loss = a.loss0 * (1.0 - 0.00002 * step) + 0.0
        gnorm = 0.9 + 0.1 * math.exp(-step / 3000.0)
        labs = list(a.step_labels(a, t, end) if a.step_labels else ())
        for d, ranks in enumerate(groups):
            lx, gx_, slab = a.spikes.get((d, step), (1.0, 1.0, None))
            loss = base_loss * r.gauss(1.0, 0.006) * lx
            rg = gnorm * r.gauss(1.0, 0.04) * gx_
            for rk in ranks:
                node, g = a.where(rk)
                tpk = rk % a.tp
                row_end = end + r.uniform(0.0, 0.003)
                c = comp[d]
                step_s = row_end - t
                comm = step_s - c - neither[d]
                row = {"ts": round(T0 + row_end, 3), "job": a.job, "step": step, "rank": rk,
                       "node": node, "gpu": g, "step_ms": round(step_s * 1000, 2),
                       "compute_ms": round(c * 1000, 2), "comm_ms": round(comm * 1000, 2),
                       "tp_rank": tpk, "pp_rank": 0, "dp_rank": d,
                       "loss": round(loss, 5), "grad_norm": round(rg * tpx[tpk], 5),
                       "tenant": a.tenant}
                cx = a.corrupt.get(rk)
                if cx is not None and step >= cx[0]:
                    row["grad_norm"] = round(row["grad_norm"] * cx[1], 5)
                    cx[2].touch(T0 + row_end)
                if a.checksum_every and step % a.checksum_every == 0:
                    bad = ":flip" if cx is not None and step >= cx[0] else ""
                    row["param_checksum"] = hashlib.sha1(
                        f"{a.job}/{a.attempt}/{tpk}/{step}{bad}".encode()).hexdigest()[:16]
                if slab is not None:
                    slab.touch(T0 + row_end)
                for lab in labs:
                    if lab.scope.get("node") in (None, node):
                        lab.touch(T0 + row_end)
                world.emit(row_end, "telemetry.step", row)
                a.ranks_rows += 1
        if saving:
            a.last_save = step
        a.last_step, t, k = step, end, k + 1
        if stopping:
            break
    a.end_t = t
    for rk in range(n):
        world.gpus[a.where(rk)].modes.append(Span(a.t0, a.end_t, "train"))
    return a


def busy_share(attempts: list[Attempt]):
    """A node's port traffic share while one of `attempts` trains on it."""
    def busy(node: str, t: float) -> float:
        return 0.35 if any(a.t0 <= t < a.end_t and node in a.nodes for a in attempts) else 0.0
    return busy
