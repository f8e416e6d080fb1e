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
    free = (n >= _PAST_FIRST) & ~reported & (self._evaluated > cfg.warmup_steps)
    eligible = rising & free
    run = self._duo_run[r]
    self._duo_run[r] = np.where(eligible, run + 1, 0)
    now = eligible & (run + 1 >= _PAST_STEPS)
    falling = rep & (short < 0.5 * need)
    if not count_nonzero(now) and not count_nonzero(falling):
        return
    # (its node's ranks over their own past alike, a step or two from their own run's end:
    # found with it, each told ``node_wide`` -- the sustained rule's _sustained_alike)
    near = held & (short >= 0.5 * need) & (change >= 0.25 * need) & ~alike & free
    now, wide = _duo_alike(self, now, near, r, short)
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
                     f"steps in a row, its partner at its pace and waiting for it",
             **({"node_wide": wide[i]} if wide.get(i, 0) >= 2 else {})}))
    for i in np.flatnonzero(falling).tolist():
        self._rule_cleared(int(r[i]), self._duo_rep, step, dp_of, decided_ts, out)


def _duo_fell(self, s: int) -> bool:
    """Whether slot ``s``, of two peers, runs faster than its own past by half its bar or
    more (its past known): its partner's slower pace is then the two's work moving between
    them -- a sequence-length imbalance, one up and the other down -- not a slow GPU
    (_check_pair: a +-10 % imbalance swapping every 30-50 steps made each rank 1.22x the
    other for 20 steps in a row, escalated both in turn)."""
    if self._duo_n[s] < _PAST_FIRST:
        return False
    need = max(math.log1p(_PAST_EFFECT), _PAST_WANDER_Z * math.sqrt(float(self._duo_var[s])))
    return float(self._duo_short[s]) <= -0.5 * need


def _duo_alike(self, now: np.ndarray, near: np.ndarray, r: np.ndarray, short: np.ndarray
               ) -> tuple[np.ndarray, dict[int, int]]:
    """``now`` (a mask over ``r``) with the ranks on the told ranks' nodes that are ``near``
    (over their own past, their partners held, at half the bar) by at least half the told
    rank's change: found with them, as steps.rules' _sustained_alike does for the sustained
    rule; and each told index's ``node_wide`` (how many of its node's ranks are told now).

    TP inside a node paces the node's ranks at its slowest GPU: their own-past runs cross a
    step or two apart, and the ranks told after the GPU's own page were escalated at the
    node beside it (revA36 F6: TP8 x DP2, GPU 3 at HW slowdown, node-000 slow_node/unknown
    beside gpu:node-000/3 gpu_hardware).  Told ``node_wide``, the correlator joins them to
    their node mate's page (Correlator._mates_cause), as it does the CUSUM's."""
    hw = self._hw
    slots = r.tolist()
    node_of = [hw[s][0] if hw[s] is not None else None for s in slots]
    told = np.flatnonzero(now).tolist()
    least: dict[str, float] = {}
    for i in told:
        if node_of[i] is not None:
            least[node_of[i]] = min(least.get(node_of[i], math.inf), float(short[i]))
    if not least:
        return now, {}
    now = now.copy()
    for i in np.flatnonzero(near & ~now).tolist():
        node = node_of[i]
        if node in least and float(short[i]) >= 0.5 * least[node]:
            now[i] = True
    count: dict[str, int] = {}
    for i in np.flatnonzero(now).tolist():
        if node_of[i] is not None:
            count[node_of[i]] = count.get(node_of[i], 0) + 1
    return now, {i: count[node_of[i]] for i in np.flatnonzero(now).tolist()
                 if node_of[i] is not None}
