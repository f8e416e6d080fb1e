"""A job's host time on one of its nodes, risen over its own past or over its other nodes.

A rank's time in neither compute nor collectives (``step_ms - compute_ms - comm_ms``: data
loading, host-to-device copies, kernel launches -- DESIGN's "neither") is its host's share of
the step.  A CPU-heavy neighbour, a runaway agent or a stuck kernel thread on a node takes
CPU from every job there: each job's loader and launch thread wait, so each job's host time
on that node rises at once, whatever the job (Minder watches per-machine CPU for this).  One
job alone cannot tell that from its own input pipeline changing; the node's jobs together can
(detector.host_node, in the correlator).  This module is one job's part: per node its ranks'
host time (their median: one rank's logging moves nothing) each step, and whether it has
**risen**, against

- its **own past** on that node: a level learned from the job's calm steps after the warm-up
  (``LEARN_STEPS`` of them before it is used); a step ``ON`` or more of the job's step over it,
  and ``NOISE_Z`` times its usual wander, is hot (a job that started before the trouble);
- its **other nodes** (a job on two nodes or more): ``ON_PEERS`` of the step over the lower
  median of its nodes' (a job that started on the troubled node already: its other nodes
  are its reference; a lower bar would take a node's steady few-percent difference).

The larger excess, clipped at ``CLIP``, is smoothed over ~``1 / ALPHA`` steps; a run begins
at a hot step and lasts while the smoothed excess stays ``OFF`` or more; ``RUN_STEPS`` hot
steps into it, still ``ON`` or more, the node is risen for the job (a ``host_rise`` finding,
evidence: it pages nobody alone).  One step's checkpoint or stall adds at most ``CLIP *
ALPHA`` and ends the run in a few steps; a checkpoint of every node moves the job's every
unit, and its own past only for a step.  A level that stays risen is learned slowly
(``ALPHA_RISEN``: ~``1 / ALPHA_RISEN`` steps), so a job's lasting change of input stops being
a rise in minutes.

State is plain data on the job's monitor: the nodes' names (at most ``MAX_NODES``) and a row
of floats a node.

>>> import numpy as np
>>> table = grow(np.zeros((0, NCOLS)), 1)
>>> code = np.zeros(2, dtype=np.intp)            # one node, two ranks
>>> found = []
>>> for s in range(80):                          # 1 s steps; the node's CPU busy from step 50
...     host = np.array([30.0, 34.0]) + (5.0 * (s % 3)) + (250.0 if s >= 50 else 0.0)
...     found += judge(table, code, host, 1000.0, float(s))
>>> found                                        # risen 8 hot steps in, its run from step 50
[(0, True, 50.0)]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from detector.host_time import MAX_HOST_MS, _lower_medians
from models.numpy_c import clip, count_nonzero

MAX_NODES = 4096     # nodes a job is judged on; more are not judged
LEARN_STEPS = 16     # calm steps before a node's own level is used
ALPHA_BASE = 1 / 16  # the level learned from calm steps over ~16 ...
ALPHA_RISEN = 1 / 512  # ... and from risen steps over ~512 (a lasting change becomes the level)
ON = 0.05            # a step 5 % of the job's step over the node's level: hot ...
NOISE_Z = 4.0        # ... and this many times the node's usual wander about it
ON_PEERS = 0.10      # a step 10 % of the job's step over its nodes' lower median: hot
OFF = 0.025          # the run ends when the smoothed excess falls below this
ALPHA = 1 / 4        # the excess smoothed over ~4 steps
CLIP = 0.5           # one step's excess counts at most this
RUN_STEPS = 8        # hot steps into a run before the node is risen
# A node's row: its level (ms), its wander about it (ms), calm steps learned, the smoothed
# excess, ts of the run's first hot step (NaN: no run), hot steps in the run, risen (1.0),
# which reference the latest excess was over (0: its own past, 1: its other nodes), the
# latest host time (ms).
BASE, NOISE, LEARNED, EWMA, RUN_FROM, HOT, RAISED, BASIS, VALUE = range(9)
NCOLS = 9


def grow(table: np.ndarray, n: int) -> np.ndarray:
    """``table`` with rows for nodes up to ``n`` (new ones: nothing learned, no run)."""
    old = len(table)
    if n <= old:
        return table
    more = np.zeros((n - old, NCOLS))
    more[:, RUN_FROM] = math.nan
    return np.concatenate([table, more])


def forget(table: np.ndarray, i: int) -> None:
    """Row ``i``'s run ended and its verdict dropped (its node left by the job); its learned
    level and wander kept, for the job coming back."""
    table[i, EWMA] = table[i, HOT] = table[i, RAISED] = 0.0
    table[i, RUN_FROM] = math.nan


def judge(table: np.ndarray, code: np.ndarray, host_ms: np.ndarray, step_ms: float,
          ts: float) -> list[tuple[int, bool, float]]:
    """One step: each rank's node (its row; -1: none) and host time; returns the nodes risen
    (True) or calm again (False) at this step, with the ts their run began (risen) or ``ts``."""
    if not step_ms > 0.0 or not len(code):
        return []
    if code.min() < 0:
        ok = code >= 0
        code, host_ms = code[ok], host_ms[ok]
        if not len(code):
            return []
    uid, val, _ = _lower_medians(clip(host_ms, 0.0, MAX_HOST_MS), code)
    uid = uid.astype(np.intp)
    rows = table[uid]
    base, noise, learned = rows[:, BASE], rows[:, NOISE], rows[:, LEARNED]
    over = val - base
    own = np.where((learned >= LEARN_STEPS) & (over >= NOISE_Z * noise), over / step_ms, 0.0)
    if len(uid) >= 2:
        k = (len(val) - 1) // 2
        peers = (val - np.partition(val, k)[k]) / step_ms
        peers = np.where(peers >= ON_PEERS, peers, 0.0)
        excess = np.maximum(own, peers)
        rows[:, BASIS] = peers > own
    else:
        excess = own
    clip(excess, -CLIP, CLIP, out=excess)
    rows[:, VALUE] = val
    rows[:, EWMA] += ALPHA * (excess - rows[:, EWMA])
    hot = excess >= ON
    first = learned == 0
    rate = np.where(hot, ALPHA_RISEN, ALPHA_BASE)
    # (the wander is learned from calm steps only: a risen level is no wander)
    rows[:, NOISE] = np.where(first, 0.0, np.where(hot, noise, noise + ALPHA_BASE * (
        np.abs(over) - noise)))
    rows[:, BASE] = np.where(first, val, base + rate * over)
    rows[:, LEARNED] = learned + ~hot
    live = ~np.isnan(rows[:, RUN_FROM])
    out: list[tuple[int, bool, float]] = []
    if count_nonzero(hot) or count_nonzero(live):
        start = hot & ~live
        rows[start, RUN_FROM] = ts
        rows[start, HOT] = 0.0
        rows[hot, HOT] += 1.0
        live |= start
        ended = live & (rows[:, EWMA] < OFF)
        for i in np.flatnonzero(ended & (rows[:, RAISED] != 0.0)).tolist():
            out.append((int(uid[i]), False, ts))
        rows[ended, RUN_FROM] = math.nan
        rows[ended, RAISED] = 0.0
        due = (live & ~ended & (rows[:, RAISED] == 0.0) & (rows[:, HOT] >= RUN_STEPS)
               & (rows[:, EWMA] >= ON))
        for i in np.flatnonzero(due).tolist():
            out.append((int(uid[i]), True, float(rows[i, RUN_FROM])))
        rows[due, RAISED] = 1.0
    table[uid] = rows
    return out


def evidence(row: np.ndarray, step_ms: float) -> dict[str, Any]:
    """What a risen node's finding says (the correlator reads ``host_excess_ms``)."""
    own = row[BASIS] == 0.0
    return {
        "basis": "own_past" if own else "other_nodes",
        "host_ms": round(float(row[VALUE]), 1),
        **({"host_level_ms": round(float(row[BASE]), 1)} if own else {}),
        "host_excess_share": round(float(row[EWMA]), 4),
        "host_excess_ms": round(float(row[EWMA]) * step_ms, 1),
        "job_step_ms": round(step_ms, 1), "hot_steps": int(row[HOT]),
    }


def check_restored(keys: Any, table: Any) -> bool:
    """Whether a restored job's nodes have this module's shape and bounds."""
    return (type(keys) is list and len(keys) <= MAX_NODES
            and all(type(k) is str and len(k) <= 1024 for k in keys)
            and isinstance(table, np.ndarray) and table.dtype == np.float64
            and table.ndim == 2 and table.shape[1] == NCOLS and len(keys) <= len(table)
            and len(table) <= MAX_NODES
            and bool(np.isfinite(np.delete(table, RUN_FROM, axis=1)).all()))
