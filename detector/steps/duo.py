"""Two peers: a job of two ranks, or of two replicas (every peer group two ranks, DP 2) --
which of the two is slow, by each one's own past (steps.past's smoothing, bar and run)."""

from __future__ import annotations

import math

import numpy as np

from detector.findings import Finding
from detector.steps.common import _floats, _StepBuffer
from detector.steps.past import (
    _PAST_ALPHA,
    _PAST_BASE_ALPHA,
    _PAST_CLIP,
    _PAST_EFFECT,
    _PAST_FIRST,
    _PAST_STEPS,
    _PAST_VAR_ALPHA,
    _PAST_WANDER_Z,
)
from models.numpy_c import count_nonzero

# Two peers (revA45 F2, F6; revA44 F8): a job of two ranks, or of two replicas -- every peer
# group (same tp_rank and pp_rank) two ranks, DP 2.  No median referees, the partner does.  A
# rank whose own compute rose against its own past (``_duo_*``: the own-past rule's smoothing,
# bar and run) while its partner's held its pace (within ``_DUO_HELD`` of its change, and
# under half its own bar), and whom its partner waits for where ``comm_ms`` says so, is the
# slow one: a 9-15 % slow rank of a DP-2 job was never paged (_check_pair asks 20 % for 20
# steps), nor a TP group of a two-replica job (the stage's median sits between the groups).
# Workload moves both: a job-wide change (a save, a context change) moves the two alike (levels
# anew), a sequence-length imbalance moves one up and the other down -- the partner has left
# its pace too.  Without ``compute_ms`` the time a rank was not waiting holds its data loading:
# a loader stall of 60 ms for 200 steps read as a 15 % slow GPU, paged 4 steps in -- such jobs
# are left to _check_pair's gross or 20 % runs.
_DUO_HELD = 0.25


def _duo_update(self, step: int, r: np.ndarray, groups: np.ndarray, compute: np.ndarray,
                buf: _StepBuffer, decided_ts: float, out: list[Finding]) -> None:
    """Slots ``r`` at ``compute`` (ms) this step, every peer group of ``groups`` two of them:
    the rank whose compute rose against its own past while its partner's held (the block
    above)."""
    if not (compute > 0.0).all() or any(c is None for c in buf.compute):
        return
    order = np.argsort(groups, kind="stable")
    partner = np.empty(len(r), dtype=np.int64)
    partner[order[0::2]] = order[1::2]
    partner[order[1::2]] = order[0::2]
    x = np.log(compute)
    n = self._duo_n[r]
    base = np.where(n == 0, x, self._duo_base[r])
    self._duo_n[r] = n + 1
    change = x - base
    cfg = self.cfg
    var = self._duo_var[r]
    need = np.maximum(math.log1p(_PAST_EFFECT), _PAST_WANDER_Z * np.sqrt(var))
    short = self._duo_short[r]
    short += _PAST_ALPHA * (np.minimum(change, _PAST_CLIP * need) - short)
    reported = self._reported[r]
    rep = self._duo_rep[r]
    untold = ~(reported | rep)
    hot = np.abs(short) >= 0.5 * need
    # (a pair moved alike, neither told: its work changed -- levels anew)
    alike = hot & hot[partner] & ((short > 0.0) == (short[partner] > 0.0)) & untold & untold[
        partner]
    base = np.where(alike, x, base)
    short = np.where(alike, 0.0, short)
    self._duo_short[r] = short
    cool = ~hot | alike
    wander = ((n < _PAST_FIRST) | cool) & untold & ~alike
    self._duo_var[r] = np.where(wander, var + np.maximum(_PAST_VAR_ALPHA, 1.0 / (n + 1.0)) * (
        short * short - var), var)
    self._duo_base[r] = np.where(cool & untold & ~alike, base + _PAST_BASE_ALPHA * change, base)
    po = short[partner]
    held = np.abs(po) < np.minimum(0.5 * need[partner], _DUO_HELD * short)
    rising = held & (short >= need) & (change >= 0.5 * need) & ~alike
    comm = _floats(buf.comm)
    if not np.isnan(comm).any():
        gap = compute - compute[partner]
        rising &= (gap > 0.0) & (comm[partner] - comm >= 0.5 * gap)
    eligible = rising & (n >= _PAST_FIRST) & ~reported & (self._evaluated > cfg.warmup_steps)
    run = self._duo_run[r]
    self._duo_run[r] = np.where(eligible, run + 1, 0)
    now = eligible & (run + 1 >= _PAST_STEPS)
    falling = rep & (short < 0.5 * need)
    if not count_nonzero(now) and not count_nonzero(falling):
        return
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    rank_of = self._rank_of
    for i in np.flatnonzero(now).tolist():
        s, o = int(r[i]), int(partner[i])
        self._reported[s] = self._duo_rep[s] = True
        ratio = math.exp(float(short[i]))
        out.append(self._rule_finding(
            rank_of[s], dp_of.get(rank_of[s]), decided_ts, ratio, step, float(short[i]),
            {"past_ratio": round(ratio, 4), "partner": rank_of[int(r[o])],
             "partner_past_ratio": round(math.exp(float(short[o])), 4),
             "rule": f"of two peers, against its own past pace: >= {_PAST_EFFECT:.0%} "
                     f"slower, weighed over ~{1.0 / _PAST_ALPHA:.0f} steps, {_PAST_STEPS} "
                     f"steps in a row, its partner at its pace and waiting for it"}))
    for i in np.flatnonzero(falling).tolist():
        self._rule_cleared(int(r[i]), self._duo_rep, step, dp_of, decided_ts, out)
