"""A rank told slow with its node's others, left slow alone once they are back at their pace.

The correlator's node rule (``Correlator._slow_due``, host33) pages a slow rank at its node
when its node's ranks were slow alike with it when it was found (``node_wide``,
``node_alarmed``) or two of its ranks wait unexplained at once: a host fault -- a CPU
throttle, a NUMA mis-binding -- slows its node's ranks together.  Two mates slowed for a few
steps by a blip of their own (a data loader's wait read in step less collectives, a compute
blip) as one GPU's fault begins read the same at that first decision, and the node was paged
for good: the GPU that stayed slow -- the unit to take out -- was never named (moe34 (a),
tests/test_moe34.py).

The correlator cannot tell a rank still slow from an alarm lingering after its slowness ended
(a CUSUM poking above zero, never ``slow_clear_steps`` clear steps in a row): narrowed on its
findings alone, a node page named a healthy MoE expert's GPU in 3 of 72 probe runs (round 35's
prototype, branch moe35a).  This module says it from the steps: once per run, a rank told slow
with its node's others (:meth:`_mark_with_mates`) is told again -- an active ``slow_rank``
finding with ``alone_on_node`` (how many of the job's other ranks its node holds) -- when

- every other rank of the job on its node is back at its pace: none told slow or alarmed,
  and each one's latest ``slow_clear_steps`` steps averaging under ``slow_k`` noise units;
- it is slow now, on each of those same steps: each over ``slow_k`` and their mean
  ``_ALONE_Z`` or more (a fault slows every step; a lingering alarm's steps are its noise,
  their mean over 2.5 units about 1e-4 of the time under lag-1 0.5 runs, and one under
  ``slow_k`` of five about always);
- its place is not slow alike on other nodes (:meth:`_place_slow`): an MoE expert's GPU
  is slow as the workload's, its node's others at their pace -- the probe's healthy GPU.

A host fault's end brings its ranks back on the same steps, the last found one's too: no
such steps.  What the correlator does with it: detector.correlate.narrow.
"""

from __future__ import annotations

import math

import numpy as np

from detector.findings import Finding
from detector.steps.common import _RECENT, _StepBuffer
from models.numpy_c import count_nonzero

# A rank slow now, alone on its node: its latest slow_clear_steps steps' mean deviation at
# least this many noise units (JobMonitor._tell_alone; _BESIDE_Z's bar for a node's ranks slow
# beside an expert's GPUs)
_ALONE_Z = 2.5


def _mark_with_mates(self, out: list[Finding], mark: int) -> None:
    """Note the slow ranks told on this step (``out[mark:]``, after the holds) that were told
    with their node's others -- ``node_wide`` or ``node_alarmed``, or beside a mate of their
    node told slow already -- and those mates: what the correlator may page at their node."""
    hw = self._hw
    for f in out[mark:]:
        s = self._slot.get(f.rank) if f.rank is not None else None
        if (s is None or f.signal != "slow_rank" or not f.active or hw[s] is None
                or "alone_on_node" in f.evidence):
            continue
        ev = f.evidence
        if ev.get("node_wide") or ev.get("node_alarmed"):
            self._with_mates[s] = True
        node = hw[s][0]
        told = [m for m in np.flatnonzero(self._reported[:len(self._rank_of)]).tolist()
                if m != s and hw[m] is not None and hw[m][0] == node]
        if told:
            self._with_mates[told] = True
            self._with_mates[s] = True


def _tell_alone(self, step: int, slots: np.ndarray, groups: np.ndarray, buf: _StepBuffer,
                decided_ts: float, out: list[Finding]) -> None:
    """Tell again, once per run, a rank told slow with its node's others that is slow alone
    now, its node's other ranks back at their pace (see the module's docstring)."""
    live = self._with_mates
    if not count_nonzero(live):
        return
    n = len(self._rank_of)
    told = self._reported[:n]
    live[:n] &= told  # (a run ended, held or withdrawn: noted anew on its next tell)
    self._alone_told[:n] &= told
    bank = self._slow
    cand = np.flatnonzero(live[:n] & ~self._alone_told[:n] & bank.alarmed[:n])
    if not len(cand):
        return
    cfg, hw = self.cfg, self._hw
    cols = [(self._evaluated % _RECENT - j) % _RECENT for j in range(cfg.slow_clear_steps)]
    here = set(slots.tolist())
    for s in cand.tolist():
        if s not in here or hw[s] is None:
            continue
        if self._held[s] and self._experts_moving(decided_ts) is not None:
            continue  # (held as a moving expert's run: a cause pages it, detector.steps.experts)
        node = hw[s][0]
        mates = [m for m, h in enumerate(hw[:n]) if h is not None and h[0] == node and m != s]
        if not mates or not all(m in here for m in mates) or count_nonzero(
                told[mates] | bank.alarmed[mates]):
            continue
        mine = self._recent[s, cols]
        if float(mine.min()) <= cfg.slow_k or float(mine.mean()) < _ALONE_Z:
            continue
        theirs = self._recent[np.ix_(mates, cols)].mean(axis=1)
        if float(theirs.max()) >= cfg.slow_k or self._place_slow(s, slots, groups):
            continue
        self._alone_told[s] = True
        rank = self._rank_of[s]
        at = int(np.flatnonzero(slots == s)[0])
        mean = math.exp(float(self._run_sum[s] / max(int(self._run_n[s]), 1)))
        out.append(self._finding(
            rank, buf.dp[at], "slow_rank", "slow_node", "unknown", decided_ts,
            float(bank.onset_ts[s]), True, min(0.95, 0.5 + (mean - 1.0) * 3),
            {"step": step, "rank": rank, "alone_on_node": len(mates),
             "recent_z": round(float(mine.mean()), 2),
             "mates_recent_z": round(float(theirs.max()), 2),
             "compute_ratio_to_peers": round(math.exp(float(self._slow_dev[s])), 4),
             "mean_ratio_over_run": round(mean, 4), "run_steps": int(self._run_n[s])}))
