"""One MoE job's step records for the tests of an expert moving beside faults (moe31, moe34,
the lead's round-34 pins, moe35).

64 ranks, TP2: rank r is on GPU r % g of node-(r // g) (``gpus`` g a node, 8 unless told),
replica r // 2; the expert's EP index of a replica is dp % 8, so a hot expert is the ranks
of four replicas -- two GPUs of four nodes.  Compute 700 ms, each rank's log compute an AR(1)
of lag-1 ``rho``, spread 1 %; every rank waits 20 ms on the host (a data loader) and the step
is the slowest rank's work and wait plus 230 ms.
"""

from __future__ import annotations

import numpy as np

from detector.testing import T0, step

RANKS, SIGMA = 64, 0.01
# moe31's expert: hot from step 140 (after the job's index read calm for 100 steps), moving
# every 20-35 steps to another index
MOVES = ((140, 5, 0.06), (165, 6, 0.08), (200, 1, 0.05), (220, 3, 0.07), (255, 6, 0.06),
         (285, 0, 0.0))


def moe_job(*, seed: int, rho: float = 0.0, steps: int = 320,
            hot: tuple[tuple[int, int, float], ...] = (),
            slow: tuple[tuple[int, int, int, float], ...] = (),
            host: tuple[tuple[int, int, int, float], ...] = (), compute: bool = True,
            gpus: int = 8) -> list:
    """The job's step records.  ``hot``: (first step, EP index, extra log ratio) -- that
    index's ranks carry it from the step to the next entry's; ``slow``: (first step, end step,
    rank, extra log ratio) of its compute; ``host``: (first step, end step, rank, ms) more host
    time (a data loader's wait: neither compute nor the collectives).  ``compute`` False: no
    ``compute_ms`` sent (a rank's work read as its step less its collectives, data loading in
    it)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(RANKS)
    e = np.sqrt(1.0 - rho * rho)
    dp = np.arange(RANKS) // 2
    out = []
    for s in range(steps):
        z = rho * z + e * rng.standard_normal(RANKS)
        x = SIGMA * z
        now = [h for h in hot if h[0] <= s]
        if now:
            _, index, extra = now[-1]
            x[dp % 8 == index] += extra
        for a, b, r, extra in slow:
            if a <= s < b:
                x[r] += extra
        work = 700.0 * np.exp(x)
        wait = np.full(RANKS, 20.0)
        for a, b, r, ms in host:
            if a <= s < b:
                wait[r] += ms
        step_ms = round(float((work + wait).max()) + 230.0, 2)
        out += [step(T0 + s + 0.001 * r, r, s, node=f"node-{r // gpus:03d}", gpu=r % gpus,
                     step_ms=step_ms,
                     compute_ms=round(float(work[r]), 2) if compute else None,
                     comm_ms=round(step_ms - float(work[r] + wait[r]), 2), tp=r % 2, pp=0,
                     dp=r // 2) for r in range(RANKS)]
    return out


def units(alerts: list) -> list[str]:
    """The units paged (firing), each once, sorted."""
    return sorted({a.scope.key for a in alerts if a.status == "firing"})
