"""A rank against its tensor-parallel mates in a job whose steps spread widely (rl46).

A TP group's ranks compute one layer's shards in lockstep: their ``compute_ms`` agree to a
percent or two, whatever the step's work, and a GPU slower than its mates shows as its own
compute over theirs while they wait for it in ``comm_ms``.  Against its DP peers the same GPU
is buried where the work differs by design -- a rollout engine's round ends at its batch's
longest answer (rounds 0.6-2x the median with no fault): blind36 F1, a rollout GPU slow at
decode x1.18-1.30, its compute 1.21-1.40x its 15 engine peers' median, never paged (0 of 8);
against its TP2 partner it is x1.2-1.3 on every round, the partner within a percent of the
other engines' pairs.

In force only once the job's step-to-step spread is wide (``_sus_on``: the sustained rule's
gate, where the CUSUM cannot see a steady 10-30 %); elsewhere the peers' CUSUM finds the same
GPU within a few steps.  A rank whose compute stands ``_TP_EFFECT`` over every mate of its TP
group (same replica, same stage), on ``_TP_STEPS`` steps in a row, is slow (``slow_rank``); it
clears on a step back within half that.
"""

from __future__ import annotations

import math

import numpy as np

from detector.findings import Finding
from detector.steps.common import _StepBuffer
from models.numpy_c import count_nonzero

_TP_EFFECT = math.log1p(0.08)  # over every TP mate by this (log) ...
_TP_STEPS = 8                  # ... on this many steps in a row


def _check_tp_mates(self, step: int, r: np.ndarray, x: np.ndarray, stage: np.ndarray,
                    dp: np.ndarray, buf: _StepBuffer, decided_ts: float,
                    out: list[Finding]) -> None:
    """Slots ``r`` of this step at log compute ``x``, pipeline ``stage`` and replica ``dp``
    (-1: none): each rank's lead over its TP mates (the module's docstring)."""
    if not self._sus_on:
        return
    known = dp >= 0
    if count_nonzero(known) < 2:
        return
    key = np.where(known, dp * 65536 + stage, -1)
    order = np.lexsort((-x, key))
    k = key[order]
    start = np.ones(len(k), dtype=bool)
    start[1:] = k[1:] != k[:-1]
    first = np.flatnonzero(start)
    size = np.diff(np.append(first, len(k)))
    top = order[first]  # (each group's slowest rank, its largest compute)
    second = np.where(size >= 2, order[np.minimum(first + 1, len(k) - 1)], top)
    lead = np.zeros(len(r))
    multi = (size >= 2) & (key[top] >= 0)
    lead[top[multi]] = x[top[multi]] - x[second[multi]]
    # (a rank not its group's slowest leads nobody: its lead is 0)
    run = self._tp_run[r]
    over = lead >= _TP_EFFECT
    run = np.where(over, run + 1, 0)
    self._tp_run[r] = run
    rep = self._tp_rep[r]
    due = r[over & (run >= _TP_STEPS) & ~self._reported[r]]
    falling = r[rep & (lead < 0.5 * _TP_EFFECT)]
    if not len(due) and not len(falling):
        return
    at = {int(s): i for i, s in enumerate(r.tolist())}
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    rank_of = self._rank_of
    for s in due.tolist():
        rank, i = rank_of[s], at[s]
        self._reported[s] = self._tp_rep[s] = True
        ratio = math.exp(float(lead[i]))
        out.append(self._rule_finding(
            rank, dp_of[rank], decided_ts, ratio, step, float(self._slow_dev[s]),
            {"tp_mates_ratio": round(ratio, 4), "tp_steps": int(run[i]),
             "rule": f"its compute >= {math.expm1(_TP_EFFECT):.0%} over every mate of its "
                     f"TP group (its replica's, its stage's) on {_TP_STEPS} steps in a row, "
                     f"in a job whose steps spread too widely for its peers' CUSUM"}))
    for s in falling.tolist():
        self._rule_cleared(s, self._tp_rep, step, dp_of, decided_ts, out)
