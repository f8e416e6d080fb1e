"""A step's slow ranks: the CUSUMs on each rank's deviation from its peers and
the rules' judgement of the step (node alike, runs grown, persistent).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from detector import host_time
from detector.findings import Finding
from detector.step_numerics import _pick
from detector.steps.common import (
    _AFTER_EVENT_S,
    _CLEARLY_SLOW_Z,
    _EXC_Z,
    _FISHER_ALPHA,
    _FLEET_UNDER,
    _FLEET_Z,
    _GROWN_MARGIN,
    _GROWN_STEPS,
    _HEAVY_EFFECT,
    _HEAVY_EPISODE_Z,
    _HEAVY_STEPS,
    _HEAVY_TRAIL,
    _LAG1_MEMORIES,
    _NODE_ALARMED,
    _RECENT,
    _REPLICA_APART_Z,
    _TAIL_EDGES,
    _TAIL_FLOOR,
    _TOLD_OUT,
    _TP_LOCKED,
    _WANDER_HOLD_STEPS,
    _WANDER_MIN_STEPS,
    _WANDER_OFF,
    _WANDER_ON,
    _WANDER_SHORT,
    _smoothed,
    _StepBuffer,
)
from detector.thresholds import Thresholds
from models import lag1
from models.numpy_c import clip, count_nonzero
from models.peer_stats import (
    MAD_TO_SIGMA,
    group_median_scale,
    group_stats,
    median,
    row_mads,
    row_stats,
    sorted_rows,
)

# A pipeline stage whose noise is under this share of the job's is scored in its own
# (_quiet_stages): blind31's VLM, its text stage ~1 % against its vision stage's ~10 %.
_QUIET_STAGE = 0.5


def _gamma_tail_quantile(k: int, alpha: float) -> float:
    """T with P(Gamma(k, 1) > T) = alpha: what the sum of k i.i.d. ``ln(1 / p)`` passes by
    chance that rarely (Fisher's method; the tail of an integer-shape gamma in closed form)."""
    lo, hi = 0.0, 200.0
    for _ in range(60):
        t = 0.5 * (lo + hi)
        term, tail = 1.0, 1.0
        for i in range(1, k):
            term *= t / i
            tail += term
        lo, hi = (t, hi) if math.exp(-t) * tail > alpha else (lo, t)
    return hi


_FISHER = [0.0] + [_gamma_tail_quantile(k, _FISHER_ALPHA) for k in range(1, _RECENT + 1)]


def _peer_centred(y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``y`` (deviations less each rank's replica batch) less its peer group's median of them.

    A rank's deviation from its DP peers' median carries how its replica's batch ranks
    among theirs: at DP 4 the median of four is the mean of the middle two, so a rank 4 %
    slower than its replica mates shows 2 % when its replica's batch sits in the middle and
    4 % when it is the slowest -- a steady offset seen at full size on exactly the steps
    its replica draws the slowest batch.  With the batches taken out first the peers
    differ by their own offsets and noise only, and one more median (one step of Tukey's
    median polish) gives each rank its offset at the same size whatever its batch.
    """
    return y - group_median_scale(y, groups)[0]


def _check_slow(self, step: int, slots: np.ndarray, groups: np.ndarray, ts: np.ndarray,
                compute: np.ndarray, ok: np.ndarray | None, buf: _StepBuffer,
                decided_ts: float, out: list[Finding]) -> None:
    """``compute``: :meth:`_busy`'s times, ``ok`` its ranks with one (None: all).

    In a wandering job (:meth:`_wander_update`) the step's slow ranks found by the other
    rules are held (:meth:`_hold_wandering`): only the wandering job's rule reports."""
    mark = len(out)
    told = bool(count_nonzero(self._reported[slots]))  # (a rank told slow before this step)
    if not told and self._ar_held():  # (or held by the run test: as told, _ar_step)
        told = bool(count_nonzero(self._slow.alarmed[slots]))
    self._check_slow_rules(step, slots, groups, ts, compute, ok, buf, decided_ts, out)
    if len(out) > mark:  # (a job whose slowness moves: detector.steps.experts)
        self._experts_hold_rules(out, mark, decided_ts)
    # (the same place slow on several nodes: read before the holds below take any back)
    place = self._same_place(out, mark, slots, groups) if len(out) > mark else []
    # Routing is told from faults by the job's wander index once it can be read: a job
    # that reads under _WANDER_OFF there does not wander, and ranks slowing together in it
    # are faults (Alibaba PAI job 3: workers 6-9 1.3x their peers from iteration ~2200 of
    # a job whose index read 0.8-1.1 -- held as visiting for good while they stayed slow).
    # Once the index has read under _WANDER_OFF for _WANDER_HOLD_STEPS steps in a row the
    # job does not route (routing is its workload's, from its start): an index lifted later
    # is its slow ranks' own -- ranks going slow and staying slow move the peer median, and
    # so every rank's deviation, once (Alibaba job 3: 0.8-1.1 for 200 samples, 4-6 from
    # iteration ~2250 as workers 6-9 slowed; workers 8, 9 held as visiting for good).
    # Entering the wandering regime (100 steps at _WANDER_ON) holds all the same.  The calm
    # ends when its reason does: routing that starts later moves the median rank at once,
    # before the index reads it (_stirred); with no rank told slow such a step ends the
    # calm and its holds are back (review25's latch: 44 node pages from step 254).
    may_wander = (self._wander_n < _WANDER_MIN_STEPS + _WANDER_HOLD_STEPS
                  or self._wander >= _WANDER_OFF and self._wander_calm < _WANDER_HOLD_STEPS)
    if len(out) > mark and not may_wander and not told and self._stirred(slots):
        self._wander_calm = 0  # (the calm ended with it: its holds are back, _wander_update)
        may_wander = True
        # and the twins learnt in the calm are none (i.i.d. steps, a few routed ones:
        # experts 5 and 7 correlated by chance paged 4 nodes) -- picked anew (_twin_update)
        self._twin_n = 0
        self._twins[:] = 0
    if len(out) > mark and (self._wandering or (self._visiting(out, mark) and may_wander)):
        self._hold_wandering(out, mark, slots, groups)
    elif len(out) > mark and may_wander:
        self._hold_shared(out, mark, slots, groups)
    if place:
        self._hold_same_place(out, mark, place)
    if len(out) > mark:
        self._alarmed_without_places(out, mark, slots, groups)
    if len(out) > mark and decided_ts - self._event_ts[0] <= 2 * _AFTER_EVENT_S:
        self._hold_after_snapshot(out, mark, decided_ts)
    if len(out) > mark:
        self._mark_with_mates(out, mark)
    self._tell_alone(step, slots, groups, buf, decided_ts, out)  # (moe36: detector.steps.alone)


def _hold_after_snapshot(self, out: list[Finding], mark: int, now: float) -> None:
    """:meth:`_hold_after_event` after the job's snapshots only: a job-wide host step
    ``_SYNC_SAVE_STEPS`` of its usual steps long or more (``_event_long``) -- a synchronous
    save, a pause, a context extension's re-shard -- leaves no write-back behind it to hold.

    Held after every such step, a GPU 7-10 % slow from the step after blind32's context
    extension (its TP group, so its node, waiting for it; the last pipeline stage) was paged
    only when the hold let go, 106 s after its onset (F5, DESIGN: 10 % in <= 10 steps); and a
    stage-1 GPU of blind31 F3 18 s after a 20 s synchronous save, 106 s."""
    events, long = self._event_ts, self._event_long
    if not (long[0] or long[1]):  # (the usual: no long step among them)
        self._hold_after_event(out, mark, now)
        return
    # (the hold reads the job's events: the long ones left out of them while it runs)
    self._event_ts = [-math.inf if lg else e for e, lg in zip(events, long, strict=True)]
    try:
        self._hold_after_event(out, mark, now)
    finally:
        self._event_ts = events


def _node_alarmed(self, slot: int, place: Callable[[int], bool] | None = None) -> int:
    """How many of the job's ranks on ``slot``'s node (itself counted) are in a slow run
    whose CUSUM has alarmed -- each over its own noise -- by at least half ``slot``'s run
    mean, told slow already or not; 0 for a rank of no node, 1 alone.

    A rank found slow alone may have mates alarmed beside it that wait only on their
    effect size (``slow_min_effect``, :meth:`_node_alike`'s floor): a host fault ramping
    up slows the node's ranks alike, and the one over the bar first was escalated at its
    GPU, the node 17 s later when the rest passed it (blind23 D2, loop-s3: gpu08/6 found
    at +3.1 %, its 7 mates alarmed at +1.4-2.3 %).  Told ``node_alarmed`` at
    ``_NODE_ALARMED`` or more, for the correlator (host33, Correlator._slow_due's node
    rule): what finds ranks is unchanged.  ``place``: a mate it says True of is not
    counted (:meth:`_alarmed_without_places`)."""
    hw = self._hw
    node = hw[slot][0] if hw[slot] is not None else None
    if node is None:
        return 0
    at = [m for m, h in enumerate(hw[:len(self._rank_of)]) if h is not None and h[0] == node]
    n = self._run_n[at]
    mean = self._run_sum[at] / np.maximum(n, 1)
    mine = float(self._run_sum[slot]) / max(int(self._run_n[slot]), 1)
    ok = (n >= 2) & self._slow.alarmed[at] & (mean > 0.0) & (mean >= 0.5 * mine)
    if place is not None:  # (a mate slow as its place: the workload's, not the node's)
        ok &= np.array([m == slot or not place(m) for m in at], dtype=bool)
    return int(count_nonzero(ok | (np.array(at) == slot)))


def _node_slow(self, slot: int) -> bool:
    """Whether the job's other ranks on ``slot``'s node are slow with it: the median of
    their deviations from their peers at least half of its own (a node-wide slowdown,
    not one GPU among healthy mates; a node of one rank: False).  A rank's deviation is
    its mean over its slow run (the CUSUM above zero), its latest step's outside one:
    a write-back ending leaves the run's mean, not the latest step, slow."""
    hw = self._hw
    node = hw[slot][0] if hw[slot] is not None else None
    at = [m for m, h in enumerate(hw[:len(self._rank_of)])
          if h is not None and h[0] == node]
    if len(at) < 2:
        return False
    n = self._run_n[at]
    dev = np.where(n > 0, self._run_sum[at] / np.maximum(n, 1), self._slow_dev[at])
    mine = float(dev[at.index(slot)])
    return mine > 0.0 and float(np.median(np.delete(dev, at.index(slot)))) >= 0.5 * mine


def _mates_pace(self, slot: int, r: np.ndarray,
                by_node: dict[str, list[int]] | None = None) -> float:
    """The median pace (ratio to peers, its latest step's) of the job's other ranks on
    ``slot``'s node in this step (``r``; ``by_node``: its slots by node, when made already):
    0.0 when it has none."""
    hw = self._hw
    node = hw[slot][0] if hw[slot] is not None else None
    if node is None:
        return 0.0
    if by_node is None:
        by_node = self._slots_by_node(r)
    at = [m for m in by_node.get(node, ()) if m != slot]
    return math.exp(float(np.median(self._slow_dev[at]))) if at else 0.0


def _most_of_node(self, slot: int, alike: int, r: np.ndarray) -> bool:
    """Whether ``alike`` ranks (``node_wide``, itself counted) are most of the job's ranks on
    ``slot``'s node in this step (``r``): a limit on the node, not two of its GPUs (an MoE
    expert's pair told alike, blind34 extremes: re-told on its own, each GPU then paged
    alone instead of their node)."""
    hw = self._hw
    node = hw[slot][0] if hw[slot] is not None else None
    return node is not None and 2 * alike > len(self._slots_by_node(r).get(node, ()))


def _slots_by_node(self, r: np.ndarray) -> dict[str, list[int]]:
    """The slots ``r`` by their node (slots whose hardware is not known left out)."""
    out: dict[str, list[int]] = {}
    for m, h in zip(r.tolist(), _pick(self._hw, r.tolist()), strict=True):
        if h is not None:
            out.setdefault(h[0], []).append(m)
    return out


def _node_grown(self, slot: int, told: float) -> int:
    """How many of the job's ranks on ``slot``'s node (itself counted) stepped up with its run
    grown past its ``told`` pace (:meth:`_grown_runs`): each at least half way from the told
    pace to ``slot``'s latest step, when most of its mates are (0 otherwise; a node of one
    rank: 0).  A limit lowered on the node's GPUs together -- a site's power budget cut
    again, every capped GPU's clock down alike -- grows every rank's pace with it; a fault
    of the GPU's own grows its rank alone (Correlator._deepening_wait reads it)."""
    hw = self._hw
    node = hw[slot][0] if hw[slot] is not None else None
    at = [m for m, h in enumerate(hw[:len(self._rank_of)])
          if h is not None and h[0] == node and m != slot]
    if node is None or not at:
        return 0
    base = math.log(told) if told > 0.0 else 0.0
    half = base + 0.5 * (float(self._slow_dev[slot]) - base)
    k = int(count_nonzero(self._slow_dev[at] >= half))
    return k + 1 if 2 * k >= len(at) else 0


def _host_up(self, slot: int) -> bool:
    """Whether ``slot``'s unit (its node's ranks of its stage and replica,
    detector.host_time) is late by its host now (:func:`host_time.late`); False before
    the units are known or while they are stale (a move, a restart)."""
    code = self._hs_code
    if (slot >= len(code)
            or self._hs_code_at != (self._moves, self.restarts, id(self._hs_keys))):
        return False
    u = int(code[slot])
    return 0 <= u < len(self._hs) and host_time.late(self._hs[u])


def _stirred(self, slots: np.ndarray) -> bool:
    """Whether the job's median rank moves now: the index of :meth:`_wander_update` read
    from this step's smoothed deviations (``_wshort`` about ``_wlong``, the ranks' median of
    their square over the i.i.d. figure) without its ~20 steps of smoothing, at
    ``_WANDER_ON`` or more.

    A job's calm (its index under ``_WANDER_OFF`` for ``_WANDER_HOLD_STEPS`` steps) says
    that it does not route *now*; routing that starts later (a gate's balance lost, a new
    data mix) moves every rank's pace at once, and the ranks it makes slow are found
    within ~5 steps, before the smoothed index reads it (1.5-2.0 on the step of the first
    finds, this figure 5-11: tests/test_review25.py).  A fault moves its own ranks: the
    median rank moves only once they move the peer median (Alibaba PAI job 3: 2.3 on
    the step workers 6, 7 were found, 12 fifty iterations later), and by then they are
    told -- :meth:`_check_slow` asks this only of a job with no rank told slow.

    Each rank's move is read about the ranks' median move: routing moves each rank its own
    way, while ranks a fault slows together lift the peer median and so move every other
    rank's deviation down alike -- one common move, no stir (review27: three of eight
    nodes ramping to 1.15x in a calm job read 3.2-4.5 uncentred, and their first finds,
    on three nodes at once, were held as visiting: paged 40-43 s after the onset, 21-27 s
    before live26; centred 1.0-1.3; late routing 5.2-11.3, Alibaba's jobs <= 2.6)."""
    if self._wander_n < _WANDER_MIN_STEPS or len(slots) < 2 * self.cfg.min_peers:
        return False
    move = self._wshort[slots] - self._wlong[slots]
    move = (move - median(move)) ** 2
    return median(move, scratch=True) / (_WANDER_SHORT / (2.0 - _WANDER_SHORT)) >= _WANDER_ON


def _stage_noise(self, r: np.ndarray, d: np.ndarray, stage: np.ndarray) -> None:
    """Each rank's stage's noise this step, smoothed as the job's is (``_stage_sigma``): the
    spread of its stage's ranks' moves since their last step (``d``: the ranks' deviations
    from their peers, log, ``stage`` each one's pipeline stage, more than one).

    Moves, not the peer groups' scales: a slow node in a stage of four replicas sits in every
    one of its stage's peer groups, whose scales it lifts for as long as it stays slow (blind32
    tune selfheal-s0: a slow GPU's node and a hot spare lifted their stage's scales 5-10x,
    which made the other stage "quiet" and a replica mate's 4 % restart transient paged), while
    a steady offset moves nothing step to step; the batches a data-following stage draws move
    it every step (blind31's vision stage)."""
    move = np.abs(d - self._slow_dev[r])
    sr = None if count_nonzero(np.isnan(move)) else sorted_rows(move, stage)
    if sr is not None:
        # (each stage's median from its sorted row -- median()'s value bit for bit, ``move``
        # being >= 0 and not NaN -- in a third of the calls of the loop below)
        per = sr[1][sr[2].back] * (MAD_TO_SIGMA / math.sqrt(2.0))
    else:
        per = np.empty(len(r))
        for p in np.unique(stage).tolist():
            at = stage == p
            per[at] = median(move[at]) * (MAD_TO_SIGMA / math.sqrt(2.0))
    prev = self._stage_sigma[r]
    self._stage_sigma[r] = np.where(
        prev == 0.0, per, prev + self.cfg.slow_sigma_alpha * (per - prev))


def _quiet_stages(self, r: np.ndarray, over: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """The ranks of ``r`` on a quiet pipeline stage -- its own noise under ``_QUIET_STAGE`` of
    the loudest stage's (``_stage_sigma``) -- and the noise each is scored in, its stage's;
    None when there are none (the usual job).  ``over``: the ranks' deviations over their
    biases (log).

    A job's noise is the median of its peer groups' scales, and a pipeline stage whose work
    follows its data (a VLM's vision stage, its images and videos a batch) spreads far wider
    than a text stage beside it: the job's noise was the loud stage's, and a GPU of the quiet
    one 5-8 % slow from mid-job (its TP group waiting for it inside compute) was some 1.5 of
    those units, under the CUSUM's allowance much of the time -- never paged, while its own
    stage's noise (~1.7 %) puts it at 3-4 (blind31 F3).  Stages alike are the usual job; the
    other stages' ranks are scored exactly as before.

    A small group's MAD under-reads its spread, which the job's ``_zscale`` makes up for; the
    quiet ranks' own (``_quiet_z``: the median of their deviations in their stage's units,
    smoothed as the job's) makes up for theirs."""
    q = self._stage_sigma[r]
    quiet = (q > 0.0) & (q < _QUIET_STAGE * q.max())
    if not count_nonzero(quiet):
        return None
    at = np.flatnonzero(quiet)
    q = np.maximum(q[at], self.cfg.slow_sigma_floor)
    told = self._reported[r[at]] | self._slow.alarmed[r[at]]
    calm = np.abs(over[at] / q)[~told]  # (its slow ranks are not its noise)
    if len(calm):
        self._quiet_z = _smoothed(self._quiet_z, median(calm) / 0.6745,
                                  self.cfg.slow_sigma_alpha)
    return at, q * max(self._quiet_z, 1.0)


def _check_slow_rules(self, step: int, slots: np.ndarray, groups: np.ndarray,
                      ts: np.ndarray, compute: np.ndarray, ok: np.ndarray | None,
                      buf: _StepBuffer, decided_ts: float, out: list[Finding]) -> None:
    cfg = self.cfg
    if ok is not None:
        slots, groups, ts, compute = slots[ok], groups[ok], ts[ok], compute[ok]
    if len(slots) == 0:
        return
    x = np.log(compute)
    sr = sorted_rows(x, groups)
    comparable: np.ndarray | None = None  # (None: all comparable)
    if sr is not None and sr[2].k >= cfg.min_peers:
        # Every peer group of one size, large enough (the usual step): all comparable.
        # The job's noise is the median of the groups' scales, taken over a row a group.
        v, mid, rows = sr
        step_sigma = median(row_mads(v, mid, rows) * MAD_TO_SIGMA, scratch=True)
        med = mid[rows.back]
    else:
        med, scale, size, k = group_stats(x, groups) if sr is None else row_stats(sr)
        if k >= cfg.min_peers:  # (the general path: only with min_peers <= 0)
            step_sigma = median(scale, scratch=True)
        else:
            comparable, groups, n_comparable = self._comparable(x, groups, med, scale, size)
            if not n_comparable:
                if ok is None:
                    self._check_pair(step, slots, compute, buf, decided_ts, out)
                return
            step_sigma = median(scale if comparable is None else scale[comparable],
                                scratch=True)
    told = None  # (the ranks out of the reference this step: _untold_reference)
    # Under runs (the job's lag-1 in force: _ar_held) a rank whose CUSUM alarmed and is not
    # told yet is out of the reference as a told one is
    ar_on = self._ar_on()
    held = self._ar_held(ar_on)
    if comparable is None and (held or count_nonzero(self._reported)):
        told = self._reported[slots]
        if held:
            told = told | self._slow.alarmed[slots]
        if count_nonzero(told) >= _TOLD_OUT:
            med, step_sigma, told = self._untold_reference(x, groups, told, med, step_sigma)
        else:
            told = None
    if comparable is None:
        r, d, gc, tc, mc = slots, x - med, groups, ts, med
    else:
        r, d, gc = slots[comparable], (x - med)[comparable], groups[comparable]
        tc, mc = ts[comparable], med[comparable]
    self._sigma = _smoothed(self._sigma, step_sigma, cfg.slow_sigma_alpha)
    sigma = max(self._sigma, cfg.slow_sigma_floor)
    warm = self._evaluated <= cfg.warmup_steps
    cold = (self._cold_steps(r, d, sigma) if not warm and count_nonzero(self._cold)
            else None)
    stage = gc >> 24
    staged = bool(stage[0] != stage[-1] or stage.min() != stage.max())  # (a pipeline)
    if staged:
        self._stage_noise(r, d, stage)
    self._slow_dev[r] = d
    mates, imbalanced = self._replica_common(d, buf, ok, comparable, warm)
    common = mates if imbalanced else None
    base_r = self._base[r]  # (each rank's bias before this step's learning)
    quiet = None  # (its quiet stages: _quiet_stages)
    if common is None:
        own = d
        z = (d - base_r) / sigma
        size, size_sigma, one = d, sigma, None
        # (a pipeline stage far quieter than the job: its ranks in its own noise, below)
        quiet = self._quiet_stages(r, d - base_r) if staged and not warm else None
    else:
        # Each rank's deviation is its replica's share (the batch it drew this step) and
        # its own: one statistic from the two, each in units of its own noise, so a rank
        # slower than its replica mates stands out of the replica-wide noise, and a whole
        # replica slower than its peers (a node) is still counted, at its own noise --
        # for a replica on one node only (below).  ``own`` is the rank's deviation from
        # its replica mates, peer-centred (_peer_centred).
        own = _peer_centred(d - common, gc)
        over = own - base_r
        own_sigma = max(median(np.abs(over), scratch=True) * 1.4826, cfg.slow_sigma_floor)
        z_own = over / own_sigma
        # The replicas' spread is a property of the workload, not of one step: with few
        # replicas (DP 4) one step's MAD of 4 medians ranges from a tenth of it to twice
        # it, and a step whose other replicas happen to sit close together would make an
        # ordinary batch a 4-sigma surprise.  Smoothed like the job's noise scale.
        step_rep = median(np.abs(common), scratch=True) * 1.4826
        self._rep_sigma = _smoothed(self._rep_sigma, step_rep, cfg.slow_sigma_alpha)
        z_rep = common / max(self._rep_sigma, cfg.slow_sigma_floor)
        # A whole replica slower than its peers is a unit only when its ranks share one
        # node (a node's fault).  A replica spanning nodes is slow as a whole by its
        # batch: a bad GPU or node slows its own ranks, which stand out of their
        # replica's median by z_own alone (a node slows 8 of a 64-rank replica and
        # barely moves that median).  Counting z_rep there paged a healthy rank over
        # its replica mates when its 8-node replica drew the slowest batch on 10 of 21
        # steps (healthy fleet dp4-10s seed 55000).
        # A replica spanning nodes whose median stands _REPLICA_APART_Z of the replicas'
        # own spread over its peers on a step is no batch draw: the spread is what the
        # batches do, step by step.  It is scored as a replica on one node is (its whole
        # replica's deviation counts): blind15 O2 -- a pipeline's p2p waits held in
        # ``compute_ms`` slow all 16 ranks of a stage's low-clock GPU's replica alike
        # (17.5 %, 33-38 of the replicas' sigma, the sigma floored at slow_sigma_floor)
        # while the job sat in this regime (its replicas 0.4 % apart, ranks 0.2 %), and
        # no rank stood out of its replica mates: nothing paged in 700 s.  The CUSUM
        # still needs such a step several times in a row (slow_h), which batches that
        # move a replica by 5-20 % step to step (a spread this regime measures) do not do;
        # not in the warm-up, while that spread is still one step's MAD of a few medians.
        one = self._one_node_replicas(buf, r)
        if not warm:
            one = one | (z_rep >= _REPLICA_APART_Z)
        z = np.where(one, (z_own + z_rep) * math.sqrt(0.5), z_own)
        # A run is sized as it is scored: on a replica spanning nodes by the rank's own
        # deviation (its replica's batch is no evidence), over its learned bias (below).
        size, size_sigma = np.where(one, d, own), own_sigma
    # The MAD of a small peer group underestimates the spread, and real jitter has fatter
    # tails than a normal: rescale so the median |z| of a step is what it is for N(0, 1).
    # (over the ranks not told slow, as the reference above: a job's slow ranks are not
    # its noise)
    spread = median(np.abs(z if told is None else z[~told]), scratch=True) / 0.6745
    self._zscale += cfg.slow_sigma_alpha * (spread - self._zscale)
    z /= max(self._zscale, 1.0)
    if quiet is not None:  # (and sized so: its noise a unit -- size_sigma x _zscale -- too)
        at_q, unit_q = quiet
        z[at_q] = (d - base_r)[at_q] / unit_q
        size_sigma = np.full(len(r), sigma)
        size_sigma[at_q] = unit_q / max(self._zscale, 1.0)
    z_sigma = size_sigma  # (each rank's noise its z is in: the job's, or its quiet stage's)
    learn = np.abs(z) < 3.0
    if warm:
        fresh: np.ndarray | None = self._fresh[r]  # (before the last warm-up step)
        if common is None and mates is not None:
            # Learn the start offset against the rank's replica mates on a replica that
            # spans nodes, also before imbalance is recognised (its smoothed ratio takes
            # tens of steps to pass replica_noise_ratio): against its DP peers a rank's
            # offset is buried under its replica's batches, and a healthy GPU 3.4 % over
            # its replica mates was left with the 2 % cap and paged hours later under
            # imbalance (healthy fleet dp4-10s seed 55000).  Without imbalance the
            # replica's median is ~0 and this is the same figure.  A replica on one node
            # keeps its deviation from its peers: that whole replica slow from the start
            # is its node's offset.
            own = np.where(self._one_node_replicas(buf, r), own,
                           _peer_centred(d - mates, gc))
        self._base[r] += 0.2 * (own - self._base[r])  # fast start, then slow tracking
        # An offset present from the job's first steps is this rank's normal (a shared
        # or slightly slower GPU, an uneven data shard): learned up to start_offset_max.
        # Only in a rank's first warm-up on its GPU: after a restart, a slowness that was
        # not there at the job's start is a change, not a baseline.
        f = r[self._fresh[r]]
        self._cap[f] = clip(self._base[f] + cfg.slow_baseline_clip, cfg.slow_baseline_clip,
                             math.log1p(cfg.start_offset_max))
        if self._evaluated == cfg.warmup_steps:
            self._note_offsets(f)
            self._fresh[r] = False
    else:
        if count_nonzero(self._slow.alarmed):  # (none alarmed: the usual step)
            learn &= ~self._slow.alarmed[r]
        if cold is not None:
            learn &= ~cold
        # base_r is self._base[r]: nothing learned since; kept where not learning
        self._base[r] = np.where(learn, base_r + cfg.slow_baseline_alpha * (own - base_r),
                                 base_r)
    # Only "this GPU is a little slower than its peers" is learned as normal: learning
    # "faster" would make its return to the median look like a slowdown.  After warm-up
    # no more slowness is learned than the rank showed from the start (at least 2 %):
    # a change after warm-up is a change, and pages.
    clip(self._base, 0.0, self._cap, out=self._base)
    if warm:
        # The job's noise for the gross prior: its steps' spreads so far weighed alike --
        # the smoothed one is its first step's (alpha 0.05) through the warm-up, and one
        # step of 3-8 replicas drawing close together is a tenth of their spread (review16:
        # long-context DP 3 x TP 4 and DP 8 x TP 4, x lognormal(0, 0.42) a replica a step,
        # paged a healthy node at steps 3-5 with the smoothed noise at 0.07-0.16, 0.4 real).
        if self._evaluated <= 1:
            self._warm_sigma = [0.0, 0.0]
        acc_sigma = self._warm_sigma
        acc_sigma[0] += step_sigma
        acc_sigma[1] += 1
        pos = np.arange(len(compute)) if ok is None else ok.nonzero()[0]
        self._gross_prior(step, r, d, tc, mc, max(sigma, acc_sigma[0] / acc_sigma[1]), buf,
                          pos if comparable is None else pos[comparable], decided_ts, out)
        # The CUSUM runs from the first step: the warm-up (alike on every rank) moves the
        # peer median, not the ratio, so a GPU slow from it is a ratio from it (blind4 D5:
        # a spare 15-22 % slow found 13-39 steps after the restart).  After a restart the
        # job's noise and its ranks' offsets are known (a rank moved to other hardware
        # learns no more than slow_baseline_clip, _track_hardware).  A rank in its first
        # warm-up on its GPU has no history: it is scored under a conservative prior --
        # over the most a healthy rank may be slower from the start (start_offset_max,
        # what it may learn as its own) -- not left silent until its offset is learned.
        cusum_z = self._over_prior(fresh, z, base_r, size_sigma)
    else:
        cusum_z, fresh = z, None
        if cold is not None:  # (a cold step adds nothing to a rank's runs)
            cusum_z = np.where(cold, np.minimum(z, 0.0), z)
    prev_score = self._slow.score[r]
    _, cleared, score = self._slow.step(r, cusum_z, tc)
    if warm:
        self._zprev[r] = z
    else:
        self._ar_step(r, z, prev_score)
        if cold is not None:
            self._ar_score[r[cold]] = 0.0
    self._wander_update(step, r, gc, z, d, mc, buf, decided_ts, out)
    self._twin_update(step, r, gc, d, mc, buf, decided_ts, out)
    self._past_update(step, r, gc, d + mc, buf, decided_ts, out)  # (peer42: its own past)
    if not warm:  # (the gross prior's counters are the warm-up's)
        over_base = size - base_r
        zr = z
        if cold is not None:
            over_base = np.where(cold, np.minimum(over_base, 0.0), over_base)
            zr = cusum_z
        self._check_burst(step, r, over_base, tc, mc, buf, decided_ts, out,
                          None if common is not None else (d, gc))
        self._check_recurring(step, r, zr, over_base, tc, mc, buf, decided_ts, out)
        self._check_sustained(step, r, over_base, tc, mc, buf, decided_ts, out)
        if self._sus_on:  # (rl46: a rank over its TP mates where the steps spread widely)
            dp = buf.dp_array()
            if ok is not None:
                dp = dp[ok]
            self._check_tp_mates(step, r, d + mc, stage, dp if comparable is None
                                 else dp[comparable], buf, decided_ts, out)
        self._excursion_update(r, over_base, size_sigma * max(self._zscale, 1.0))
    # The mean slowdown of the current run (since the score left zero): an alarm is
    # reported only when the run is slow by a meaningful amount on average, not just
    # unusually noisy (the CUSUM measures surprise; this measures size).
    in_run = score > 0.0
    self._recent[r, self._evaluated % _RECENT] = cusum_z
    if fresh is not None and count_nonzero(fresh):
        # (the job's tail is measured on ranks whose bias is known: one still learning
        # its offset has a z of its learning, not of the job's noise)
        self._tail_update(z[~fresh], prev_score[~fresh])
    elif cold is not None:  # (nor is a cold start's)
        self._tail_update(z[~cold], prev_score[~cold])
    else:
        self._tail_update(z, prev_score)
    self._run_sum[r] = np.where(in_run, self._run_sum[r] + size, 0.0)
    if one is not None:  # (its replica's share apart: only a replica on one node differs)
        self._run_own[r] = np.where(in_run, self._run_own[r] + own, 0.0)
    self._run_n[r] = np.where(in_run, self._run_n[r] + 1, 0)
    if len(cleared) or np.count_nonzero(self._slow.alarmed) or self.start_offsets:
        # (a job whose slowness moves: detector.steps.experts)
        self._experts_note(r, cleared)
    # When the run became clearly slow (its first step >= 3 sigma; a step's ts is its
    # end): the CUSUM's onset is where the score left zero, which a chance slow step
    # just before the change can lead by a step or two; this says from when a throttle
    # would show on the GPU's telemetry (the correlator waits for the first sample taken
    # after it, Correlator._explanation_wait).  Tuning reproducer interval-10, seeds
    # 9600..9611: 10 % slowdowns' median 9.5 -> 8.5 steps, attribution unchanged.
    clearly = z >= _CLEARLY_SLOW_Z
    if count_nonzero(clearly):
        since = self._run_since[r]
        since = np.where((since == 0.0) & clearly, tc, since)
        self._run_since[r] = np.where(in_run, since, 0.0)
    elif count_nonzero(self._run_since):  # (no run clearly slow: the usual step)
        self._run_since[r] = np.where(in_run, self._run_since[r], 0.0)
    if count_nonzero(self._slow.alarmed):
        alarmed = self._slow.alarmed[r]
        told = self._reported[r]
        if count_nonzero(self._held):  # (a run told held is judged again: _held_runs)
            told = told & ~self._held[r]
        at = (alarmed & ~told).nonzero()[0]
        waiting = r[at]
    else:  # (the usual step: no rank alarmed)
        waiting = r[:0]
    outlasted = waiting[:0]  # (runs told only once they outlasted the job's noise episodes)
    rho = 0.0  # (the lag-1 their means are read at: _lag1_read)
    hold = waiting[:0]  # (runs told before that, for a cause only: _held_runs)
    routed: dict[int, dict[str, Any]] = {}  # (... as a moving expert's: _experts_held)
    remembered: dict[int, float] = {}  # (runs read at the job's measured memory: _memory_read)
    if len(waiting):
        # The run is where the CUSUM alarmed, so its mean is biased up: a healthy rank's
        # chance run of 8 steps at +1.8 sigma (tuning reproducer scenario-reboot s9012:
        # +3.5 % over 8 steps, mean of the draws 1.78 sigma) alarms the CUSUM and has a
        # mean above any small effect.  Its size is the mean less its standard error
        # margin; a real 10 % slowdown clears it by far at its alarm, a sustained 3 % one
        # after tens of steps, and a chance run ends (back to the median) first.
        # Under batch imbalance a rank whose replica spans nodes is scored on its own
        # deviation from its replica mates over its learned bias, and its run is sized
        # so: the mean of ``own`` less that bias and the margin.  Sized on ``d`` with no
        # margin (as it was), a healthy rank 2.3 % over its mates from the start paged
        # on 8 steps of its own deviation at +3.9-8.4 % whose ``d`` averaged +7.2 %
        # with its replica's batches (healthy fleet dp4-10s seed 90002).  A replica on
        # one node is scored on its replica's deviation too (below).
        n = np.maximum(self._run_n[waiting], 1)
        if type(size_sigma) is np.ndarray:  # (quiet stages: each rank's own, _quiet_stages)
            size_sigma = size_sigma[at]
        margin = cfg.slow_effect_z * size_sigma * max(self._zscale, 1.0) / np.sqrt(n)
        mean = self._run_sum[waiting] / n
        rep_margin = margin
        if one is not None:
            # A replica on one node is sized two ways, and counts if either is large
            # enough: as a rank on a replica spanning nodes is (its own deviation from its
            # replica mates over its bias, less its margin: a GPU slow inside its replica),
            # and on ``d``, its whole replica's deviation from its peers (a node slow as a
            # whole, TP keeping its ranks together), less the margin of that deviation's
            # noise: the replicas' spread with the rank's own.  Sized on ``d`` with no
            # margin (as it was), a 4-step run of a healthy node 1.5 % over its DP peers
            # with +-1 % a step (TP 8: its replica paced by its slowest GPU's offset)
            # averaged 2.7 % and paged (blind5 held workloads-s5, h100n009; the replicas'
            # spread 0.9 %).
            spans = ~one[at]
            by_own = np.where(spans, mean, self._run_own[waiting] / n) - self._base[waiting]
            rep_margin = (cfg.slow_effect_z * math.hypot(size_sigma, self._rep_sigma)
                          * max(self._zscale, 1.0) / np.sqrt(n))
            sized = np.where(spans, by_own, np.maximum(by_own, mean - rep_margin + margin))
        else:
            spans = sized = by_own = None
        effect = np.exp((mean if sized is None else sized) - margin) - 1.0
        # Its mean read at the job's lag-1 (_lag1_read): the same margins, of a mean of
        # correlated steps.  A run under slow_min_effect so is told held (_held_runs) -- until
        # it has lasted _LAG1_MEMORIES of the noise's memory, (1 + rho) / (1 - rho) steps (the
        # steps one independent sample of it spans): an excursion of the noise is about one
        # memory long, so a run of two is no single excursion, and the margin is again that
        # of its steps (noise40: a real 3-5 % straggler at PAI's lag-1 0.59, memory 3.9
        # steps, was held 7-17 steps longer -- tests/test_n1run.py, blind23 N2, host33's
        # ramp; revA38 F2's 17-step run at 0.87, memory 14, and F5's 7-step one at 0.74 are
        # held still).
        hold_at = np.zeros(len(waiting), dtype=bool)
        rho = self._lag1_read()
        if rho:
            wide = np.where(n < _LAG1_MEMORIES * (1.0 + rho) / (1.0 - rho),
                            np.sqrt(lag1.mean_factor(rho, n)), 1.0)
            worn = mean - margin * wide if by_own is None else np.where(
                spans, by_own - margin * wide,
                np.maximum(by_own - margin * wide, mean - rep_margin * wide))
            hold_at = np.exp(worn) - 1.0 < cfg.slow_min_effect
        # (and under the job's own excursions at its length, measured: _excursion_held)
        hold_at |= self._excursion_held(waiting, n, mean if sized is None else sized, r, gc)
        # (in a job whose slowness moves from rank to rank, an expert's: detector.steps.experts)
        expert, routed = self._experts_held(waiting, n, mean if sized is None else sized,
                                            margin, decided_ts)
        hold_at |= expert
        # (noise not measured yet, or measured heavy under runs: _heavy)
        episodic = self._heavy(ar_on)
        # (the job's noise's memory at the run's length, measured whatever lag holds it --
        # against one step's spread of what its excursions learn: a replica on one node's
        # deviation, its replica's batch with its own, elsewhere its own)
        per = np.sqrt(n) / cfg.slow_effect_z
        memory = self._memory_read(waiting, n, r, gc, (margin if spans is None else np.where(
            spans, margin, rep_margin)) * per, rho)
        if count_nonzero(memory):
            remembered = {int(s): round(float(m), 2)
                          for s, m in zip(waiting.tolist(), memory.tolist(), strict=True) if m}
        if (episodic and rho) or remembered:
            # (real noise's runs and tail: a fleet's bar, _fleet_held; sized as its margins
            # are: a replica on one node by its own deviation and by its replica's, each
            # against its own noise -- held while both are under the bar)
            bar_rho = rho if episodic else 0.0
            fleet = self._fleet_held(n, mean if by_own is None else by_own, margin * per,
                                     bar_rho, memory)
            if spans is not None:
                fleet &= spans | self._fleet_held(n, mean, rep_margin * per, bar_rho, memory)
            hold_at |= fleet
        # (a run beside a node mate told slow is no episode of the job's noise alone)
        beside = (self._beside_told(waiting) if episodic or count_nonzero(hold_at)
                  else hold_at)
        if episodic:
            # (the job's noise taken for real noise's runs and tail -- while it is not
            # measured, or measured so: a run lasts past its episodes unless it stands over
            # what an episode reaches, in the job's noise and in share, at its latest step
            # too -- blind28 F4: 4-step episodes at +9-15 % of a 2 % CoV job; tenant41 H2,
            # H6, H7: the same in jobs whose tail was measured heavy, told at their alarm by
            # their share alone; H1: a host stall's two steps at x2.2 carrying a 4-step run)
            unit = size_sigma * max(self._zscale, 1.0)
            high = ((effect >= _HEAVY_EFFECT) & (mean - margin >= _HEAVY_EPISODE_Z * unit)
                    & (cusum_z[at] >= _HEAVY_EPISODE_Z))
            lasting = n >= _HEAVY_STEPS
            if count_nonzero(lasting):
                lasting[lasting] = self._still_slow(waiting[lasting], n[lasting])
            high |= beside
            outlasted = waiting[~high & lasting & (effect >= cfg.slow_min_effect)]
            hold_at |= ~(high | lasting)
        # (an expert's run beside a node mate told slow is still the workload's: two hot
        # experts of one node; a node slowed on one step is not held, _experts_held)
        hold = waiting[(hold_at & ~beside) | expert]
        # Reported while its run goes on: its latest step adds to its score.  A run found
        # late -- held while it was a checkpoint's write-back (_hold_after_event), or by
        # another hold -- whose ranks are back at their peers' pace when the hold lets go
        # is over: its CUSUM stays alarmed for a few healthy steps (the score drains at
        # slow_k a step), and reporting it then paged a node whose write-back, 3.7 % over
        # 8 steps, had ended two steps before (blind10 held life-s7 hgx-a01, 120 s after
        # the snapshot).  A fresh alarm's latest step is always slow (it lifted the score
        # over slow_h).
        ongoing = cusum_z[at] > cfg.slow_k
        if ar_on:  # (a run under the job's lag-1: :meth:`_ar_step`)
            ongoing &= self._ar_score[waiting] > cfg.slow_h
        new = waiting[(effect >= cfg.slow_min_effect) & ongoing & self._persistent(waiting)]
        if len(hold) and len(new):  # (beside a mate told a verdict on this very step)
            told_now = self._beside_told(hold, np.setdiff1d(new, hold))
            if routed:  # (not a moving expert's run: the workload's beside a told mate too)
                told_now &= ~np.isin(hold, np.fromiter(routed, dtype=np.int64))
            hold = hold[~told_now]
    else:
        new = waiting
    waited = self._waited(outlasted, new[self._held[new] & self._reported[new]], new, rho)
    alike: dict[int, int] = {}
    held: set[int] = set()
    if len(hold) and len(new):
        new, held = self._held_runs(new, hold)
    if len(new):
        found = len(new)
        new, alike = self._node_alike(new, r, routed)
        if held and len(new) > found:  # (its node's mates found with a held run: held too)
            nodes = {self._hw[m][0] for m in held if self._hw[m] is not None}
            held |= {m for m in new[found:].tolist()
                     if self._hw[m] is not None and self._hw[m][0] in nodes}
    if len(cleared):
        # (a rank reported as a recurring straggler clears as one: _check_recurring)
        cleared = cleared[self._reported[cleared] & ~self._recurring[cleared]
                          & ~self._sustained[cleared] & ~self._wander_rep[cleared]
                          & ~self._twin_rep[cleared]]
    grown = self._grown_runs(r, new)
    if len(new) == 0 and len(cleared) == 0 and len(grown) == 0:
        return
    peer_med = dict(zip(r.tolist(), np.exp(mc).tolist(), strict=True))
    quiet_of = ({} if type(z_sigma) is not np.ndarray
                else dict(zip(r.tolist(), z_sigma.tolist(), strict=True)))
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    rank_of = self._rank_of
    for s in [*new.tolist(), *grown.tolist()]:  # slots; findings name the rank
        rank = rank_of[s]
        self._reported[s] = True
        self._held[s] = s in held
        ratio = math.exp(float(self._slow_dev[s]))
        mean = math.exp(float(self._run_sum[s] / max(self._run_n[s], 1)))
        self._told[s], self._told_onset[s] = ratio, self._slow.onset_ts[s]
        stepped = self._node_grown(s, self._told_was[s]) if s in self._told_was else 0
        self._told_mates[s] = (self._mates_pace(s, r) if stepped or (
            s in alike and self._most_of_node(s, alike[s], r)) else 0.0)
        out.append(self._finding(
            rank, dp_of[rank], "slow_rank", "slow_node", "unknown", decided_ts,
            float(self._slow.onset_ts[s]), True, min(0.95, 0.5 + (mean - 1.0) * 3),
            {"step": step, "rank": rank, "compute_ratio_to_peers": round(ratio, 4),
             "mean_ratio_over_run": round(mean, 4), "run_steps": int(self._run_n[s]),
             "peer_median_compute_ms": round(peer_med[s], 2),
             "noise_sigma": round(quiet_of.get(s, sigma), 4),
             "cusum": round(float(self._slow.score[s]), 2),
             "baseline_ratio": round(math.exp(float(self._base[s])), 4),
             **({"clearly_slow_since": round(float(self._run_since[s]), 3)}
                if self._run_since[s] > 0.0 else {}),
             # its host time over its stage's at its latest step (share of a step's work; over
             # its learned offset): a node's host path slows compute and host alike
             **({"host_excess": round(float(self._host_dev[s]), 4)}
                if self._host_dev[s] != 0.0 else {}),
             **({"start_offset": self.start_offsets[rank]} if rank in self.start_offsets
                else {}),
             **({"node_wide": alike[s]} if s in alike else {}),
             **({"node_alarmed": k} if s not in alike
                and (k := self._node_alarmed(s)) >= _NODE_ALARMED else {}),
             **({"grown_from": round(float(self._told_was[s]), 4)} if s in self._told_was
                else {}),
             **({"node_grown": stepped} if stepped else {}),
             **({"waited": waited[s]} if s in waited and s not in held else {}),
             **({"run_lag1": round(rho, 3)} if rho else {}),
             **({"run_memory": remembered[s]} if s in remembered else {}),
             **({"noise_hold": routed.get(s) or _held_for(int(self._run_n[s]), rho, cfg,
                                                            remembered.get(s))}
                if s in held
                else {})},
            verdict=s not in held))
    self._told_was.clear()
    for s in cleared.tolist():
        rank = rank_of[s]
        self._reported[s] = False
        self._told[s] = self._told_mates[s] = 0.0
        out.append(self._finding(rank, dp_of[rank], "slow_rank", "slow_node", "unknown",
                                 decided_ts, decided_ts, False, 0.0, {"step": step}))


def _beside_told(self, waiting: np.ndarray, now: np.ndarray | None = None) -> np.ndarray:
    """Per slot of ``waiting`` (alarmed, not told): whether a mate on its node is told slow and
    still in its alarmed run at a mean of at least half its own -- the mate counted by
    :meth:`_node_alarmed` that has itself been told -- or, ``now`` given (slots), one of the
    mates told a verdict on this step.

    Read while the job's noise is not measured (:meth:`_unmeasured`), where a run under
    ``_HEAVY_EPISODE_Z`` of the noise waits ``_HEAVY_STEPS`` steps to outlast the noise's
    episodes: an episode is one rank's (blind28 F4: one healthy rank at a time, 9-15 % for 4
    steps), while a node's fault reaches its GPUs one after the other -- a board braking one
    GPU a poll (tests/test_brake38.py: GPU 2 told at +30 %, GPU 5's run at +12 % on 1.5 %
    noise alarmed 6 s later and held 4 s more, its node's power page with it: 75 s, the pin
    72 s, main 71 s).  A run beside a told mate is told at its alarm, as it was before
    noise38; its size still has to pass ``slow_min_effect`` and the job's tail
    (:meth:`_persistent`).  Not a mate merely alarmed: two episodes at once on one node
    are still two episodes, each waits.

    Told beside a mate told on the same step (``now``): a node's TP group is one run -- its
    ranks wait for one another inside compute, their runs the same but for where each CUSUM
    began -- and a bar read at each rank's own mean (:meth:`_fleet_held`) let its first rank
    over it go alone, a step before the rest were told beside it.  In a wandering job its held
    mates were taken back with its ``node_wide`` (:meth:`_hold_wandering`) and the correlator
    escalated the GPU alone, slow_node/unknown (blind31 tune vlm-s0: v-04 GPU 2, 22 s after
    GPU 0's NVLink isolation, which its mates joined; tests/test_trace45.py)."""
    out = np.zeros(len(waiting), dtype=bool)
    ranks = len(self._rank_of)
    hw = self._hw
    if now is not None:
        told = [m for m in now.tolist() if hw[m] is not None]
    elif not count_nonzero(self._reported[:ranks]):
        return out
    else:
        told = [m for m in np.flatnonzero(self._reported[:ranks] & ~self._held[:ranks]
                                          & self._slow.alarmed[:ranks]).tolist()
                if hw[m] is not None]
    if not told:
        return out
    for i, s in enumerate(waiting.tolist()):
        if hw[s] is None:
            continue
        mine = float(self._run_sum[s]) / max(int(self._run_n[s]), 1)
        out[i] = any(m != s and hw[m][0] == hw[s][0] and self._run_n[m] >= 1
                     and float(self._run_sum[m]) / int(self._run_n[m]) >= 0.5 * mine
                     for m in told)
    return out


def _held_runs(self, new: np.ndarray, hold: np.ndarray) -> tuple[np.ndarray, set[int]]:
    """``new`` (slots found slow this step) less the runs told held already, and those of it
    to tell held (``hold``: runs that have not outlasted the job's noise episodes yet, while
    its noise is not measured -- :meth:`_unmeasured`).

    A run held for the noise is told at its alarm all the same, as evidence (not a verdict),
    marked ``noise_hold`` (:func:`_held_for`): the correlator pages it if its GPU's or node's
    own telemetry names a cause (a power brake's 0x80 on its GPU: tests/test_brake38.py, the
    page at the brake's poll), and escalates none without a cause (Correlator._slow_due) until
    the run is told again, a verdict -- once it stands over the noise's episodes, has outlasted them
    (:meth:`_still_slow`) or a node mate is told (:meth:`_beside_told`), or the job's noise
    is measured.  A noise episode the GPU explains is a page with a cause either way; what
    waits is a human woken for an unexplained one (blind28 F4).  Told held, the rank is a
    told rank to every other rule, as it was before noise38 (out of its peers' reference,
    withdrawn when the job stops, cleared when its run ends); its run is not told grown
    (:meth:`_grown_runs`): told again it is told whole."""
    again = self._reported[new] & self._held[new] & np.isin(new, hold)
    if count_nonzero(again):
        new = new[~again]
    return new, set(np.intersect1d(new, hold).tolist())


def _held_for(steps: int, rho: float, cfg: Thresholds,
              memory: float | None = None) -> dict[str, Any]:
    """A held run's ``noise_hold`` evidence (:meth:`_held_runs`): what it waits for."""
    return {"steps": steps,
            "for": f"a cause on its GPU or node only: the job's noise is taken for real noise "
                   f"(runs, a heavy tail) -- while it is not measured, or measured so, a run under "
                   f"{_HEAVY_EPISODE_Z:g} sigma of it or {_HEAVY_EFFECT:.0%} escalates without "
                   f"a cause once it has lasted {_HEAVY_STEPS} steps, slow throughout"
                   + (f"; and once its mean clears {cfg.slow_min_effect:.1%} by "
                      f"{cfg.slow_effect_z:g} standard errors of a mean of the job's correlated "
                      f"steps (lag-1 {rho:.2f}), or once it has lasted "
                      f"{_LAG1_MEMORIES * (1.0 + rho) / (1.0 - rho):.0f} steps, "
                      f"{_LAG1_MEMORIES:g} of the noise's memory" if rho else "")
                   + f"; and once its mean stands {_EXC_Z:g} times the spread its peers' own "
                     f"means of as many steps have (the job's excursions, measured)"
                   + (f"; and, under {_FLEET_UNDER:.0%}, once it stands {_FLEET_Z:g} standard "
                      f"errors of a mean of as many of the job's correlated steps (lag-1 "
                      f"{rho:.2f}): a fleet's bar on real noise" if rho else "")
                   + (f"; and, under {_FLEET_UNDER:.0%}, once it stands {_FLEET_Z:g} standard "
                      f"errors of a mean of as many of the job's steps, their memory measured "
                      f"(its variance x{memory:.2f} of independent steps')" if memory else "")}


def _still_slow(self, waiting: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per slot of ``waiting`` (``n`` its runs' lengths, at least ``_HEAVY_STEPS``): whether
    its run is slow throughout -- its last ``_HEAVY_TRAIL`` steps and the steps before them
    (the run's last ``_RECENT`` at most) each at a mean score of at least half the run's and
    clear of zero by ``slow_effect_z`` standard errors (each score taken at most at
    ``_HEAVY_EPISODE_Z``: one spike of the noise does not carry a run).

    A run that has lasted ``_HEAVY_STEPS`` steps has outlasted the noise's episodes only if
    its excess spans it: an episode's CUSUM runs on for a few steps after the episode ends, on
    the noise's own smaller excess (a rank +11-13 % for 4 steps, then +4 %, +1 %, +5 %), and a
    chance step or two over the peers can start the run before the episode does
    (tests/test_noise38.py); a slowdown's steps carry it whole, a ramp's latest more than
    whole (PAI job 3 worker 9, +3-5 % on 0.9 % noise for 16 steps: blind23 N2)."""
    col = self._evaluated % _RECENT
    back = (col - np.arange(_RECENT)) % _RECENT  # (the latest step first)
    z = np.minimum(self._recent[waiting][:, back], _HEAVY_EPISODE_Z)
    k = np.minimum(n, _RECENT).astype(np.int64)
    run = np.array([z[i, :k[i]].mean() for i in range(len(waiting))])
    head = np.array([z[i, _HEAVY_TRAIL:k[i]].mean() for i in range(len(waiting))])
    trail = z[:, :_HEAVY_TRAIL].mean(axis=1)
    bar = self.cfg.slow_effect_z
    return ((trail >= np.maximum(bar / math.sqrt(_HEAVY_TRAIL), 0.5 * run))
            & (head >= np.maximum(bar / np.sqrt(k - _HEAVY_TRAIL), 0.5 * run)))


def _waited(self, outlasted: np.ndarray, again: np.ndarray, new: np.ndarray,
            rho: float) -> dict[int, dict[str, Any]]:
    """What each slot of ``new`` (told slow this step) that waited past its alarm waited for,
    for its finding's evidence: a page that came later than the run's alarm says why.
    ``outlasted``: held until its run outlasted the job's noise episodes (the rule for a job
    whose noise is unmeasured, :meth:`_unmeasured`, :meth:`_still_slow`); ``again``: told held
    before (:meth:`_held_runs`), now whole; ``rho``: the lag-1 its mean was read at
    (:meth:`_lag1_read`)."""
    if not len(new) or not (len(outlasted) or len(again)):
        return {}
    cfg = self.cfg
    out: dict[int, dict[str, Any]] = {}
    for s in new.tolist():
        why = []
        if s in outlasted:
            why.append(f"its run to outlast the job's noise episodes: the job's noise is not "
                       f"measured yet, or measured heavy, and taken for real noise (runs, a "
                       f"heavy tail), so a run "
                       f"under {_HEAVY_EPISODE_Z:g} sigma of it or {_HEAVY_EFFECT:.0%} is told "
                       f"for a cause only (noise_hold) until it has lasted {_HEAVY_STEPS} "
                       f"steps, slow throughout")
        if rho and (s in outlasted or s in again):
            why.append(f"its mean to clear {cfg.slow_min_effect:.1%} by "
                       f"{cfg.slow_effect_z:g} standard errors of a mean of the job's "
                       f"correlated steps (lag-1 {rho:.2f})")
        if not why and s in again:
            why.append("a cause on its GPU or node, or its run to outlast the job's noise")
        if why:
            out[s] = {"steps": int(self._run_n[s]), "for": "; and ".join(why)}
    return out


def _untold_reference(self, x: np.ndarray, groups: np.ndarray, told: np.ndarray,
                      med: np.ndarray, step_sigma: float
                      ) -> tuple[np.ndarray, float, np.ndarray | None]:
    """Each rank's peer median and the job's noise this step (``med``, ``step_sigma`` of
    all ranks) from its group's ranks not told slow, in each group with ``_TOLD_OUT`` or
    more ranks told (``told``) that keeps ``min_peers`` others; and the ranks so taken out
    (None: none).

    A rank told slow is a fault, not its job's normal: while it stays slow it is out of the
    reference its peers are judged against.  The median and the MAD break down with half of
    a group off its pace, and are dragged well before -- Alibaba job 3's four workers 1.3x
    slower among ten (two more 1.1x from the start, their learned offsets): the median sat
    between the steady and the slow, the noise went from 4 % to 13 % in 30 samples (and its
    rescale 0.8 -> 1.5), and workers 8 and 9, 1.27-1.30x the steady ones, scored under the
    CUSUM's allowance to the job's end.  A rank told slow that recovers is back at its
    peers' median, and clears as before.  One told rank in a group is left in: one moves a
    median of three or more by half a gap at most, and a node's ranks (one a group under
    TP) are judged as before (blind5's fan case: a node slow at a hot GPU's pace, joined
    to that GPU's page)."""
    uniq, inv = np.unique(groups, return_inverse=True)
    keep = ~told
    enough = ((np.bincount(inv[keep], minlength=len(uniq)) >= self.cfg.min_peers)
              & (np.bincount(inv[told], minlength=len(uniq)) >= _TOLD_OUT))
    if not count_nonzero(enough):
        return med, step_sigma, None
    kmed, kscale, _, _ = group_stats(x[keep], groups[keep])
    gmed, gscale, gall = np.empty(len(uniq)), np.empty(len(uniq)), np.empty(len(uniq))
    gmed[inv[keep]], gscale[inv[keep]] = kmed, kscale
    gall[inv] = group_stats(x, groups)[1]
    return (np.where(enough[inv], gmed[inv], med),
            median(np.where(enough, gscale, gall), scratch=True), told & enough[inv])


def _grown_runs(self, r: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Slots whose CUSUM-reported run now runs well beyond the pace it was told at: told
    again (the same ``slow_rank``, fresh evidence and ``grown_from``), at most each time
    its excess doubles.

    A run is told once, at its alarm, with its pace of then; what the correlator weighs
    against it later (a minor power cap's clock loss, :meth:`Correlator._benign_explanation`)
    it weighs against that pace.  A slowdown ramping up is found early in its ramp, a few
    percent slow: a GPU routinely capped 3 % held a rank that went on to 24 % slower
    excused as power management until its run ended, never paged (22nd reporting corpus,
    powercap=fleet: a silent_slow ramp to 24 % over 67 s).  Work slows at most as its
    clock does, so a pace grown past twice the told excess plus ``_GROWN_MARGIN`` on
    ``_GROWN_STEPS`` steps in a row is a slowdown that the told pace no longer describes.
    A run told alike with its node's mates (``node_wide``, or told again ``node_grown``) was
    told at the node's pace -- a limit lowered on the node's GPUs together, a site's cap wave
    -- so its own growth is its pace over its mates' now: told again once that stands
    ``_GROWN_MARGIN`` past what it was when told (``_told_mates``: their pace then).  cap41 F1:
    a GPU's fault begun under a site's wave deepened to -12 %, +12 % over its capped mates,
    stood at 1.27x against a told-again bar of 1.42x (told at 1.18x as the wave deepened) and
    was paged only after the wave lifted, 146 s late.
    Only the CUSUM's runs (the other rules report their own measures) of the same run."""
    told = self._told[r]
    if not count_nonzero(told):  # (the usual step: no run told)
        return r[:0]
    latest = np.exp(self._slow_dev[r])
    mine = ((told > 0.0) & self._reported[r] & ~self._held[r]
            & (self._told_onset[r] == self._slow.onset_ts[r])
            & ~self._recurring[r] & ~self._sustained[r] & ~self._wander_rep[r]
            & ~self._twin_rep[r])
    over = mine & (latest - 1.0 >= 2.0 * (told - 1.0) + _GROWN_MARGIN)
    alike = np.flatnonzero(mine & ~over & (self._told_mates[r] > 0.0))
    by_node = self._slots_by_node(r) if len(alike) else {}
    for i in alike.tolist():
        # (told alike with its node's mates -- a limit lowered on the node, a site's cap
        # wave: its pace over theirs is its own, grown the margin past what it was -- and its
        # own pace grown the margin too: mates back at their pace after a blip of theirs
        # leave it where it was, tests/test_moe34.py)
        s = int(r[i])
        mates = self._mates_pace(s, r, by_node)
        was = max(told[i] / self._told_mates[s], 1.0)
        over[i] = (mates > 0.0
                   and latest[i] >= max(told[i], self._told_mates[s]) * (1.0 + _GROWN_MARGIN)
                   and latest[i] / mates >= was * (1.0 + _GROWN_MARGIN))
    self._grown[r] = np.where(over, self._grown[r] + 1, 0)
    grown = r[(self._grown[r] >= _GROWN_STEPS) & ~np.isin(r, new)]
    for s in grown.tolist():
        self._told_was[s] = float(self._told[s])
        self._grown[s] = 0
    return grown


def _rule_finding(self, rank: int, dp: int | None, ts: float, ratio: float, step: int,
                  dev: float, evidence: dict[str, Any]) -> Finding:
    """A slow rank found by a rule sized by ``ratio`` (the wandering job's, the twins'):
    onset at ``ts``, its confidence from the ratio, ``dev`` its log ratio to its peers.

    Told ``node_alarmed`` as the CUSUM's findings are (:meth:`_node_alarmed`): these rules
    judge a rank against its peers on other nodes, and a host fault slows its node's every
    rank -- under a moving MoE expert only the expert's ranks have twins, so one GPU of the
    slow node was found by its twins and paged alone, its 7 mates alarmed beside it and held
    as the wandering job's (revA36 F1)."""
    s = self._slot.get(rank)
    k = self._node_alarmed(s) if s is not None else 0
    return self._finding(rank, dp, "slow_rank", "slow_node", "unknown", ts, ts, True,
                         min(0.95, 0.5 + (ratio - 1.0) * 3),
                         {"step": step, "rank": rank,
                          "compute_ratio_to_peers": round(math.exp(dev), 4), **evidence,
                          **({"node_alarmed": k} if k >= _NODE_ALARMED else {})})


def _reset_slow(self, slots: np.ndarray | None) -> None:
    """Forget the step CUSUMs of ``slots`` (None: every slot): the plain one (``_slow``)
    and the one under the job's lag-1 (``_ar_score``, :meth:`_ar_step`), always together.

    The two are sized apart: ``_ar_score`` is a slot array (:meth:`_grow`, its length the
    job's slots), the bank grows to at least that and often more (CusumBank.ensure: by 8
    at least, doubling its own length), so the bank's slots past the slot arrays hold no
    rank.  Indexing ``_ar_score`` by the bank's slots raised IndexError
    (tests/test_batch_samples.py); only the slots both have are the ranks'."""
    if slots is None:
        self._slow.reset(np.arange(len(self._slow.score)))
        self._ar_score[:] = 0.0
    else:
        self._slow.reset(slots)
        self._ar_score[slots[slots < len(self._ar_score)]] = 0.0


def _persistent(self, waiting: np.ndarray) -> np.ndarray:
    """Per slot of ``waiting`` (alarmed, effect large enough): whether its run is more than
    the job's own tail can make by chance.

    MoE expert imbalance gives every TP group a heavy-tailed extra drawn anew each step
    (``0.02 x (Pareto(2) - 1)``: p90 +4 %, p99 +18 %); four steps at +5.5-10 % in a row
    happen to some rank by chance, cross a CUSUM scaled for Gaussian-like jitter, and
    paged healthy ranks (blind4 D4).  So the run's last ``_RECENT`` steps (at most) are
    scored on the job's measured tail (:meth:`_tail_update`): Fisher's sum of
    ``ln(1 / p)``, p the share of the job's rank-steps at least as slow (at least
    ``_TAIL_FLOOR``), must pass what chance gives k i.i.d. steps once in
    ``1 / _FISHER_ALPHA`` (``_FISHER``).  Under Gaussian jitter a 10 % slowdown has p at
    the floor on every step and passes in 3; a chance MoE run of 4 steps sums ~12 of 23.
    """
    col = self._evaluated % _RECENT
    ok = np.ones(len(waiting), dtype=bool)
    if self._tail_n == 0:
        return ok
    tail = np.maximum(self._tail, _TAIL_FLOOR)
    for i, s in enumerate(waiting.tolist()):
        k = min(max(int(self._run_n[s]), 1), _RECENT)
        vals = self._recent[s, [(col - j) % _RECENT for j in range(k)]]
        at = np.searchsorted(_TAIL_EDGES, vals, side="right")
        surprise = float(-np.log(np.where(at > 0, tail[at - 1], 1.0)).sum())
        ok[i] = surprise >= _FISHER[k]
    return ok


def _node_alike(self, new: np.ndarray, r: np.ndarray, experts: Collection[int] = ()
                ) -> tuple[np.ndarray, dict[int, int]]:
    """Ranks found slow on this step (``new``, slots), with the job's other ranks on their
    nodes that are in a slow run alike, not reported yet: found with them, each told
    ``node_wide`` (how many of its node's ranks in this step are slow alike).

    With TP inside a node, ``compute_ms`` holds the TP all-reduces: one slow GPU (an
    NVLink fault, the host) makes every rank of the node slower than its DP peers by the
    same share, and their CUSUMs cross a step or two apart.  Found one by one, the first
    was paged alone at its GPU and each later one a new problem (blind4 D3: 6-7 GPU
    escalations beside the node's).  A mate counts when its run (the CUSUM above zero) is
    at least two steps long, its score half way to the alarm, and averages
    ``slow_min_effect`` and half the found rank's mean; it enters its CUSUM alarmed, so it
    clears by the same hysteresis as any slow rank.  A mate whose deviation this step is
    the found rank's (within ``_TP_LOCKED`` of it: a TP partner waits in the TP
    all-reduce, so their compute_ms are one) counts at any score: blind7 G3, an aged GPU
    (gh-03/1, 0x4 at a lower clock) and its partner gh-03/0 both 1.07x with start offsets
    of 4.3-4.7 %; the partner's CUSUM alarmed first and was escalated alone, the wrong GPU,
    while the aged one's score was 3.4 of 10 (found 5 steps later).  A lone slow GPU (its
    TP mates at the peers' pace) is found alone, as before.  A mate told held
    (:meth:`_held_runs`) is told again with it, whole: a node's run let go one rank a step
    was paged at the node by its first rank alone, before the correlator could read the
    node's group (blind30 F3's cohort clock policy, its runs held by the job's excursions,
    :meth:`_excursion_held`, let go at steps 3411-3412).  Not a mate held as a moving
    expert's (``experts``: detector.steps.experts): an expert's run on the node of a GPU slow
    for good is the workload's, not the node's.
    """
    hw = self._hw
    node_of = [h[0] if h is not None else None for h in _pick(hw, r.tolist())] \
        if len(r) > 1 else []
    n = np.maximum(self._run_n[r], 1)
    mean = self._run_sum[r] / n
    at = {int(s): i for i, s in enumerate(r.tolist())}
    bank = self._slow
    more: list[int] = []
    alike: dict[int, int] = {}
    for s in new.tolist():
        node = hw[s][0] if hw[s] is not None else None
        if node is None or s in alike:
            continue
        mine = [i for i, x in enumerate(node_of) if x == node]
        if len(mine) < 2:
            continue
        floor = max(math.log1p(self.cfg.slow_min_effect), 0.5 * float(mean[at[s]]))
        idx = np.array(mine)
        dev = self._slow_dev[s]
        locked = np.abs(self._slow_dev[r[idx]] - dev) <= _TP_LOCKED * abs(dev)
        slow = idx[(self._run_n[r[idx]] >= 2) & (mean[idx] >= floor)
                   & ((bank.score[r[idx]] >= 0.5 * bank.h) | locked)]
        group = (set(r[slow].tolist()) - set(experts)) | {s}
        if len(group) < 2:
            continue
        for m in group:
            alike[m] = len(group)
            if m != s and (not self._reported[m] or self._held[m]) and m not in new:
                more.append(m)
    if more:
        m = np.array(more, dtype=np.int64)
        bank.alarmed[m] = True
        bank.score[m] = np.maximum(bank.score[m], bank.h)
        new = np.concatenate([new, m])
    return new, alike


def _comparable(self, x: np.ndarray, groups: np.ndarray, med: np.ndarray,
                scale: np.ndarray, size: np.ndarray
                ) -> tuple[np.ndarray | None, np.ndarray, int]:
    """Peer groups of different sizes or too small (:meth:`_check_slow`): ``med``,
    ``scale``, ``size`` in place for the stage where a group is too small; returns the
    ranks that have enough peers (None: all), each rank's group used, and how many
    ranks have enough peers."""
    cfg = self.cfg
    small = size < cfg.min_peers
    if count_nonzero(small):
        # Too few data-parallel peers (DP 2): compare with the whole pipeline stage
        # instead.  Tensor-parallel shards of a stage split every GEMM evenly, so each
        # does the same compute as its data-parallel peers; a stage is still never
        # compared with another stage.  A rank's steady offset from the stage (a shard
        # a little heavier) is learned as its own bias, like any GPU's.
        smed, sscale, ssize = group_median_scale(x[small], groups[small] >> 24)
        med[small], scale[small], size[small] = smed, sscale, ssize
        groups = np.where(small, (groups >> 24) | (1 << 48), groups)  # the group used
    comparable = size >= cfg.min_peers
    n = count_nonzero(comparable)
    return (None if n == len(size) else comparable), groups, n
