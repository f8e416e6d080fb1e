"""One elastic job's step records for the tests of a slow GPU in a job that re-forms
(elastic37: blind27 F2's shape, drawn from the story, not from its generator).

The job lives as segments.  A segment is its members (node names, in rendezvous order: rank
``r`` is GPU ``r % gpus`` of the segment's ``r // gpus``-th node -- ranks renumbered at every
re-form), its steps, and how it began: ``"start"`` (the job's first), ``"reform"`` (a graceful
re-form: the step before it saves, 8 s outside compute on every rank; step numbers go on) or
``"crash"`` (a restart from the last checkpoint: step numbers go back to the last multiple of
``save_every``).  Each segment's first four steps are cold (x2.4, 1.5, 1.15, 1.04 on every
rank); the global batch is fixed, so compute scales with 1 / the members' count.  Every GPU
has a stable offset of its own (1 % spread) and each step a 2 % jitter; ``slow`` maps
(node, gpu) -> its compute factor, in every segment it is in (a pair (factor, step): from that
step number on; (factor, step, end): until step number ``end``).  TP ``tp`` (1: pure data
parallelism): tp rank ``r % tp``, replica ``r // tp``.
"""

from __future__ import annotations

import numpy as np

from detector.testing import T0, step

COLD = (2.4, 1.5, 1.15, 1.04)


def elastic_job(segments: list[tuple[list[str], int, str]], *, gpus: int = 8, tp: int = 1,
                compute_ms: float = 2000.0, ref_nodes: int = 8, seed: int = 0,
                slow: dict[tuple[str, int], float | tuple] | None = None,
                pause_s: float = 25.0,
                save_every: int = 40, t0: float = T0) -> list:
    """The job's step records, in time order (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    slow = slow or {}
    offset: dict[tuple[str, int], float] = {}
    out: list = []
    t, s = t0, 0
    for members, steps, how in segments:
        if how == "crash":
            s = (s // save_every) * save_every
        if how != "start":
            t += pause_s
        hw = [(n, g) for n in members for g in range(gpus)]
        for h in hw:
            if h not in offset:
                offset[h] = float(rng.normal(0.0, 0.01))
        base = compute_ms * ref_nodes / len(members)
        own = np.exp([offset[h] for h in hw])
        for k in range(steps):
            cold = COLD[k] if k < len(COLD) else 1.0
            factor = own * np.array([_factor(slow.get(h, 1.0), s) for h in hw])
            work = base * cold * factor * rng.lognormal(0.0, 0.02, len(hw))
            save = 8000.0 if k == steps - 1 else 0.0
            step_ms = round(float(work.max()) + 300.0 + save, 2)
            t += step_ms / 1000.0
            out += [step(t + 0.002 * r, r, s, node=n, gpu=g, step_ms=step_ms,
                         compute_ms=round(float(work[r]), 2),
                         comm_ms=round(step_ms - float(work[r]) - 20.0 - save, 2),
                         tp=r % tp, dp=r // tp) for r, (n, g) in enumerate(hw)]
            s += 1
    return out


def _factor(f: float | tuple[float, int] | tuple[float, int, int], s: int) -> float:
    if isinstance(f, tuple):
        return f[0] if f[1] <= s < (f[2] if len(f) > 2 else s + 1) else 1.0
    return f
