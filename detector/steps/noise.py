"""A job's noise: wandering slowness (MoE routing), its lag-1, its excursions, its tail,
cold starts and the warm-up prior.
"""

from __future__ import annotations

import math

import numpy as np

from detector.findings import Finding
from detector.steps.common import (
    _EXC_Z,
    _FLEET_UNDER,
    _FLEET_Z,
    _HEAVY_EDGE,
    _HEAVY_KNOWN,
    _HEAVY_SHARE,
    _HEAVY_SURE,
    _LAG1_PRIOR,
    _LAG1_READ_MAX,
    _MEMORY_ON,
    _MEMORY_STEPS,
    _TAIL_ALPHA,
    _TAIL_EDGES,
    _TAIL_STEPS,
    _WANDER_ALONE,
    _WANDER_HOLD_STEPS,
    _WANDER_LONG,
    _WANDER_MEAN_ALPHA,
    _WANDER_MIN_EFFECT,
    _WANDER_MIN_STEPS,
    _WANDER_OFF,
    _WANDER_ON,
    _WANDER_READY_STEPS,
    _WANDER_SHORT,
    _WANDER_VAR,
    _StepBuffer,
)
from models import excursion, lag1
from models.peer_stats import median

# A rank joining a job past its warm-up is cold while its excess over its peers falls by this
# many of the job's noise a step (JobMonitor._cold_steps): E1's x2.6, 1.7, 1.25, 1.1, 1.0 fall
# by 12-50 sigma a step; a rank that stays slow falls by more than 2 in 1 step of 12.
_COLD_FALL_Z = 2.0


def _tail_light(share: float, n: float) -> bool:
    """Whether a job's tail read at ``share`` on ``n`` rank-steps is known under
    ``_HEAVY_SHARE``: a Poisson count at that share's rate comes as low as the one read
    (``share * n``, rounded) with a chance under ``_HEAVY_SURE`` (a normal's above 50 expected).

    >>> _tail_light(9e-4, 1136.0), _tail_light(0.0, 1000.0), _tail_light(0.0, 1600.0)
    (False, False, True)
    >>> _tail_light(5e-4, 3200.0), _tail_light(1.9e-3, 1e6), _tail_light(1.99e-3, 1e6)
    (True, True, False)
    """
    if share >= _HEAVY_SHARE:
        return False
    lam = _HEAVY_SHARE * n
    c = math.floor(share * n + 0.5)
    if lam > 50.0:
        return 0.5 * math.erfc((lam - c - 0.5) / math.sqrt(2.0 * lam)) < _HEAVY_SURE
    term = cdf = math.exp(-lam)
    for k in range(1, c + 1):
        term *= lam / k
        cdf += term
    return cdf < _HEAVY_SURE


def _wander_update(self, step: int, r: np.ndarray, groups: np.ndarray, z: np.ndarray,
                   over: np.ndarray, med: np.ndarray, buf: _StepBuffer, decided_ts: float,
                   out: list[Finding]) -> None:
    """Whether the job's slowness wanders between its ranks (MoE expert routing), and in
    such a job its rule for a slow rank: slow for good, and alone.

    Token routing makes a few expert-parallel ranks 10-35 % heavier for tens of steps,
    then others (blind8 H1: an AR(1) walk of each EP rank's load, ~20 steps of memory):
    slower and more persistent than sequence-length imbalance, whose draw is new every
    step, so the CUSUM (made for i.i.d. steps), the sustained rule (its standard error
    taken from i.i.d. steps) and the gross prior all paged it, on every node in turn.
    What names it: every rank's deviation is persistent over a few steps and moves over
    many.  Each rank's ``z`` smoothed over ~10 steps (``_WANDER_SHORT``) varies about its
    own long mean, over i.i.d. steps, by ``_WANDER_SHORT / (2 - _WANDER_SHORT)`` of z's
    variance; the job's index is the ranks' median of that variance over it (~1 for
    jitter and batch imbalance, a steady offset or one slow rank leaving the median
    alone; 3-8 under routing).  At ``_WANDER_ON`` (left under ``_WANDER_OFF``) the job
    wanders: its ranks found slow by the other rules are held (:meth:`_hold_wandering`).
    There a rank is slow when its deviation from its peers over its bias, averaged over
    ~``1 / _WANDER_MEAN_ALPHA`` steps (a wandering rank's returns to zero, a slow GPU's
    does not: a rank against its own history, as NVIDIA's straggler detection), is
    ``_WANDER_MIN_EFFECT`` over the ranks' median, and ``_WANDER_ALONE`` over every peer
    of its group on another node: routing makes the ranks holding one expert in every EP
    group hot together (4 nodes at a time in blind8), a fault is on one unit.  It clears
    back under half the first margin.
    """
    ws, wl, wv = self._wshort[r], self._wlong[r], self._wvar[r]
    zc = z.clip(-self.cfg.slow_z_clip, self.cfg.slow_z_clip)
    # (running means over the first steps: no start from zero to climb out of, and a
    # steady offset is its own from the start)
    first = 1.0 / (self._wander_n + 1)
    ws += max(_WANDER_SHORT, first) * (zc - ws)
    wl += max(_WANDER_LONG, first) * (zc - wl)
    wv += max(_WANDER_VAR, first) * ((ws - wl) ** 2 - wv)
    self._wshort[r], self._wlong[r], self._wvar[r] = ws, wl, wv
    wm = self._wmean[r]
    wm += max(_WANDER_MEAN_ALPHA, first) * (over - wm)
    self._wmean[r] = wm
    self._wander_n += 1
    if self._wander_n < _WANDER_MIN_STEPS or len(r) < 2 * self.cfg.min_peers:
        return
    self._wander = median(wv, scratch=True) / (_WANDER_SHORT / (2.0 - _WANDER_SHORT))
    # Entered only after _WANDER_HOLD_STEPS steps at _WANDER_ON or more: one move of every
    # rank's deviation (a GPU of four peers slowing moves its peers' median, and so each
    # peer's deviation, once) lifts the index for tens of steps, then it decays; routing
    # keeps it up (tests/test_steps_round13.py's heavy tail: 3.3 for ~60 steps).
    self._wander_hot = 0 if self._wander < _WANDER_OFF else (
        self._wander_hot + 1 if self._wander >= _WANDER_ON else self._wander_hot)
    if self._wander_calm < _WANDER_HOLD_STEPS:  # (latched once reached, till a stir: _stirred)
        self._wander_calm = self._wander_calm + 1 if self._wander < _WANDER_OFF else 0
    self._wandering = self._wander >= _WANDER_OFF and (
        self._wandering or self._wander_hot >= _WANDER_HOLD_STEPS)
    live = np.count_nonzero(self._wander_rep)
    if not self._wandering and not live:
        return
    mid = median(wm)
    lead = wm - mid
    ready = self._wander_n >= _WANDER_READY_STEPS
    cand = (lead >= math.log1p(_WANDER_MIN_EFFECT)) & ~self._reported[r] \
        if self._wandering and ready else np.zeros(len(r), dtype=bool)
    hw = self._hw
    rising = []
    for i in np.flatnonzero(cand).tolist():
        node = hw[r[i]][0] if hw[r[i]] is not None else None
        peers = np.flatnonzero((groups == groups[i]) & (np.arange(len(r)) != i))
        others = [float(wm[j]) for j in peers.tolist()
                  if hw[r[j]] is None or hw[r[j]][0] != node]
        if others and float(wm[i]) - max(others) >= math.log1p(_WANDER_ALONE):
            rising.append(int(r[i]))
    falling = r[self._wander_rep[r] & (lead < math.log1p(0.5 * _WANDER_MIN_EFFECT))] \
        if live else r[:0]
    if not rising and not len(falling):
        return
    at = {int(s): i for i, s in enumerate(r.tolist())}
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    for s in rising:
        rank, i = self._rank_of[s], at[s]
        self._reported[s] = self._wander_rep[s] = True
        ratio = math.exp(float(lead[i]))
        out.append(self._rule_finding(
            rank, dp_of[rank], decided_ts, ratio, step, float(self._slow_dev[s]),
            {"wander_mean_ratio": round(ratio, 4), "wander_index": round(self._wander, 2),
             "peer_median_compute_ms": round(math.exp(float(med[i])), 2),
             "baseline_ratio": round(math.exp(float(self._base[s])), 4),
             "rule": f"a job whose slow ranks wander (routing): its mean over its bias, "
                     f"weighed over ~{1.0 / _WANDER_MEAN_ALPHA:.0f} steps, "
                     f">= {_WANDER_MIN_EFFECT:.0%} over the ranks' median and "
                     f">= {_WANDER_ALONE:.0%} over its peers' on other nodes"}))
    for s in falling.tolist():
        self._rule_cleared(s, self._wander_rep, step, dp_of, decided_ts, out)


def _cold_steps(self, r: np.ndarray, d: np.ndarray, sigma: float) -> np.ndarray | None:
    """Which of ``r`` (slots; ``d`` their deviations from their peers this step, the job's
    noise ``sigma``) are in a cold start: joined the job past its warm-up (an elastic job
    taking a node back after a re-rendezvous, a spare without a restart:
    :meth:`_track_hardware`), at their first step there or slower than their peers by
    ``_COLD_FALL_Z`` sigma less than on their step before, within ``warmup_steps`` of the
    join (None: none).  A cold step adds nothing to the rank's runs and teaches it no
    offset; the first step that is not falling so ends the cold start.

    A process new on its GPU pays for a CUDA context, an allocator and autotuning: its
    first steps are slow and fall back to its peers' pace (blind24 E1: x2.6, 1.7, 1.25,
    1.1 on the rejoined node's 8 ranks, escalated at the node 3-7 s after the rejoin).
    Its peers are warm: at a job's start every rank is cold alike and the peer median
    takes it.  A rank that stays slow stops falling, and its steps score from there."""
    left = self._cold[r]
    cold = (left > 0) & ((left == self.cfg.warmup_steps)
                         | (d < self._slow_dev[r] - _COLD_FALL_Z * sigma))
    self._cold[r] = np.where(cold, left - 1, 0)
    return cold if np.count_nonzero(cold) else None


def _over_prior(self, fresh: np.ndarray, z: np.ndarray, base_r: np.ndarray,
                size_sigma: float) -> np.ndarray:
    """Warm-up scores ``z``, for ranks in their first warm-up on their GPU (``fresh``)
    taken over the prior: the most slowness a healthy rank may bring from the job's start
    (``start_offset_max``) instead of the bias learned so far.

    Below that prior a rank's steady offset is its own (learned, reported, never paged:
    Alibaba PAI's workers up to 11 % slower from the start on shared GPUs); above it
    the excess is scored from the first step, in the units the run is scored in, so a
    node 19 % slow from a job's first step is found within the warm-up rather than
    learned for ten steps and found ten later (blind4 D5 without the job's history).
    """
    if not np.count_nonzero(fresh):
        return z
    prior = math.log1p(self.cfg.start_offset_max)
    unit = size_sigma * max(self._zscale, 1.0)
    return np.where(fresh, z - (prior - base_r) / unit, z)


def _ar_on(self) -> bool:
    """Whether the job's lag-1 is in force (models.lag1.in_force; :meth:`_ar_step`)."""
    return lag1.in_force((self._ar_xy, self._ar_xx, self._ar_n), len(self._rank_of)) > 0.0


def _heavy(self, ar_on: bool) -> bool:
    """Whether a modest run must outlast the job's noise episodes (``_HEAVY_*``; while the
    noise is not measured, :meth:`_unmeasured`, a run not far over it -- under
    ``_HEAVY_EPISODE_Z`` of it or ``_HEAVY_EFFECT`` -- and only while its latest steps are
    still slow, :meth:`_still_slow`; a finding told so says it waited): under
    runs (``ar_on``: :meth:`_ar_on`) in a job whose tail reaches ``_HEAVY_SHARE`` at
    3 sigma; and while the job's noise is not measured -- its lag-1 not known yet
    (models.lag1.known) or its tail not read on ``_HEAVY_KNOWN`` rank-steps since the
    warm-up -- whatever it reads so far: a job's noise unmeasured is taken for real noise,
    runs and tail (Alibaba PAI job 2), not a Gaussian's."""
    if self._unmeasured():
        return True
    return ar_on and not _tail_light(float(self._tail[_HEAVY_EDGE]),
                                     min(self._tail_n, _TAIL_STEPS) * len(self._rank_of))


def _unmeasured(self) -> bool:
    """Whether the job's noise is not measured yet: its lag-1 not known (models.lag1.known)
    or its tail not read on ``_HEAVY_KNOWN`` rank-steps since the warm-up (:meth:`_heavy`)."""
    ranks = len(self._rank_of)
    return self._tail_n * ranks < _HEAVY_KNOWN or not lag1.known(
        (self._ar_xy, self._ar_xx, self._ar_n), ranks)


def _lag1_read(self) -> float:
    """The lag-1 a slow run's mean is read with (:meth:`_check_slow_rules`,
    models.lag1.mean_factor): the job's estimate so far from its healthy ranks' scores
    (:meth:`_ar_step`), at most ``_LAG1_READ_MAX``; before ``lag1.MIN_FEW`` steps of it -- the
    warm-up, the first steps after it -- at least ``_LAG1_PRIOR``, the job's noise taken for real
    noise's runs (:meth:`_heavy`); under ``lag1.ON`` none (independent noise, whose estimate
    wanders around zero by a few hundredths: the simulator's jobs read as before).

    A run's mean of correlated steps wanders more than the step-to-step spread (the job's
    noise) says, and its margin (``slow_effect_z`` standard errors) is of that mean.  Clocks
    following power and heat (revA38 F2: a DP-4 job at lag-1 0.95, 1.5 %) made a GPU 3.0 %
    over its peers for 11 steps on 0.9 % step noise: 11 standard errors of a mean of
    independent steps, 4.1 of one at the 0.88 read -- its size less its margin 1.2 %, under
    ``slow_min_effect`` (escalated before: 5 of 6 runs).  F5 (lag-1 0.8, 2 %, 32 ranks): +4.8 %
    for 7 steps in the warm-up, at the 0.74 read 1.7 % (before: 3.2 %, escalated in 4 of 12
    runs).  A real 10 % slowdown stands far over either.  Read from the job's own ranks, not
    a generator's shape; unlike the whitened CUSUM (``lag1.in_force``, the estimate less
    ``lag1.ON``) at the full estimate -- what a mean's spread is.

    Read so only while the run is shorter than ``_LAG1_MEMORIES`` of the noise's memory,
    ``(1 + rho) / (1 - rho)`` steps -- what one independent sample of it spans, about an
    excursion's length (noise40).  Read so at any length, a real straggler at PAI's lag-1
    (0.59: memory 3.9 steps) of 3-5 % -- 4-5 times the job's noise -- waited 7-17 steps more
    for its margin (tests/test_n1run.py's 5 % at 8 and 11 steps, pin < 8; blind23 N2's 3.4 %
    straggler told 7 steps later, beside a node mate's run and so paged at its node; host33's
    ramp); F2's 17-step run (memory 14 at 0.87) and F5's 7-step one (6.7 at 0.74) are read so
    still.  What it must not hold: a run that outlasts two excursions, the physics of a fault
    (a slow GPU stays slow), not of a wander (which reverts within its memory)."""
    rho = lag1.rho_of((self._ar_xy, self._ar_xx, self._ar_n))
    if self._ar_n < lag1.MIN_FEW:
        rho = max(rho, _LAG1_PRIOR)
    return min(rho, _LAG1_READ_MAX) if rho >= lag1.ON else 0.0


def _ar_held(self, on: bool | None = None) -> bool:
    """Whether the job's lag-1 is in force (``on``: :meth:`_ar_on`, when the caller has
    it) and some rank's CUSUM alarmed.  Such a rank, not told yet (held until its run
    outlasts the job's runs, or by the size and tail tests), is taken as told slow: out of
    the job's reference (:meth:`_untold_reference`) and no stir of its median
    (:meth:`_check_slow`).  Four of PAI job 3's ten workers slowing to 1.3x together,
    held, lifted the job's noise from 4 % to 12 % and its wander index (held as visiting)
    until none was ever told."""
    return (self._ar_on() if on is None else on) and bool(
        np.count_nonzero(self._slow.alarmed))


def _ar_step(self, r: np.ndarray, z: np.ndarray, prev_score: np.ndarray) -> None:
    """After warm-up: learn the job's lag-1 autocorrelation from its healthy ranks' ``z``
    (slots ``r``; not told slow, not alarmed, its CUSUM at most half way to slow_h before
    this step) and, while it is in force (models.lag1: over ``lag1.ON``), score each
    rank's run as the step CUSUM does (slow_k, slow_h, slow_z_clip) on its ``z``
    pre-whitened at the estimate less ``lag1.ON`` (``_ar_score``): an alarm is reported
    only once that score is over slow_h too (:meth:`_check_slow_rules`, while the lag-1
    was in force before the step).  Under independent noise (the simulator's) nothing
    changes.

    Real step times come in runs (Alibaba PAI job 2: lag-1 0.45-0.71 a worker, blind20's
    noise): scored as independent, a chance run of 4 steps at +5-8 % of one rank of a TP8
    node lifted the CUSUM over slow_h and escalated the node (blind20 N1: 21 of its 37
    false positives), and PAI job 1's worker 2, +3.8-8.2 % over its peers for 8 samples,
    was paged.  A score's innovation is what its step brings that its last did not: a run
    that decays back pays for its return, and a sustained slowdown still scores two thirds
    of its size a step at the 0.4 used at lag-1 0.6 (tests/test_n1run.py).  The plain
    CUSUM still finds the run first, and its alarm takes the rank out of the job's
    reference while it is held (:meth:`_ar_held`)."""
    prev = self._zprev[r]
    self._zprev[r] = z
    healthy = ~self._reported[r] & (prev_score <= 0.5 * self.cfg.slow_h)
    if np.count_nonzero(self._slow.alarmed):
        healthy &= ~self._slow.alarmed[r]
    state = (self._ar_xy, self._ar_xx, self._ar_n)
    ranks = len(self._rank_of)
    was = lag1.in_force(state, ranks)
    state = lag1.update(state, z[healthy], prev[healthy])
    self._ar_xy, self._ar_xx, self._ar_n = state
    rho = lag1.in_force(state, ranks)
    if rho == 0.0:
        return
    # The plain bank's update (CusumBank.step: its k, z_clip and alarmed cap h_cap, here
    # always), seeded from its score the step the lag-1 comes into force (the sum's order
    # is this one's since round 30: a snapshot's scores are the same to the bit)
    bank = self._slow
    score = prev_score if was == 0.0 else self._ar_score[r]
    x = np.minimum(lag1.whiten(z, prev, rho), bank.z_clip) - bank.k
    self._ar_score[r] = (score + x).clip(0.0, bank.h_cap)


def _tail_update(self, v: np.ndarray, prev: np.ndarray) -> None:
    """The job's tail: the share of rank-steps at or above each of ``_TAIL_EDGES`` (a
    deviation over the rank's bias), from ranks whose CUSUM was at zero before this step
    (so a slow rank's run does not count as the job's noise, and for i.i.d. noise the
    choice is independent of the step's value); the mean of the steps seen, then a mean
    over the last ~``1 / _TAIL_ALPHA`` steps."""
    v = v[prev == 0.0]
    if not len(v):
        return
    over = np.bincount(_TAIL_EDGES.searchsorted(v, side="right"),
                       minlength=len(_TAIL_EDGES) + 1)[:0:-1].cumsum()[::-1] / len(v)
    self._tail_n += 1
    self._tail += max(1.0 / self._tail_n, _TAIL_ALPHA) * (over - self._tail)


def _excursion_update(self, r: np.ndarray, x: np.ndarray, unit: float) -> None:
    """After warm-up: each rank's deviation over its bias ``x`` (slots ``r``; log ratio, as a
    run is sized) into the job's excursions (models.excursion), each step taken at most at
    ``slow_z_clip`` of the job's noise ``unit`` (as the CUSUM takes it: one spike is no
    excursion); learnt on ranks neither told slow nor alarmed.  A run learnt up to its alarm
    is the job's noise as far as anything knows then; past it, a slowdown that stays would
    teach the job that it is routine: a site's cap wave on 3 of 8 nodes, learnt whole,
    lifted every peer's spread for 150 steps and held a hidden 9-20 % fault beside it
    (tests/test_cap40.py, revA39 F6's probe: 6 of 6 paged late or never)."""
    lim = self.cfg.slow_z_clip * unit
    self._exc_n += 1
    x = x.clip(-lim, lim)
    n = len(self._exc_s)
    if len(r) == n:  # (every slot in the step, the usual one: whole arrays, no gathers)
        xs = np.empty(n)
        xs[r] = x
        learn = None if not (np.count_nonzero(self._slow.alarmed) or np.count_nonzero(
            self._reported)) else ~(self._reported | self._slow.alarmed[:n])
        self._exc_s, self._exc_v = excursion.update(self._exc_s, self._exc_v, xs,
                                                    self._exc_n, learn)
        return
    learn = ~(self._reported[r] | self._slow.alarmed[r])
    self._exc_s[r], self._exc_v[r] = excursion.update(
        self._exc_s[r], self._exc_v[r], x, self._exc_n, learn)


def _exc_peers(self, s: int, at: dict[int, int], r: np.ndarray,
               groups: np.ndarray) -> np.ndarray | None:
    """The peers whose excursions a run of slot ``s`` is read against (:meth:`_excursion_held`,
    :meth:`_memory_read`): its group's other ranks of ``r`` (``at``: slot to its index there,
    ``groups`` of ``r``), less those told slow while two others are left; None when ``s`` is
    not in this step or has fewer than two peers."""
    i = at.get(s)
    if i is None:
        return None
    peers = r[(groups == groups[i]) & (r != s)]
    untold = peers[~self._reported[peers]]
    if len(untold) >= 2:
        return untold
    return peers if len(peers) >= 2 else None


def _excursion_held(self, waiting: np.ndarray, n: np.ndarray, mean: np.ndarray,
                    r: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per slot of ``waiting`` (alarmed; ``n`` its runs' lengths, ``mean`` their sizes, log):
    whether its run is one of the job's own excursions -- its mean under ``_EXC_Z`` of the
    spread an ``n``-step mean of its peers' deviations has (models.excursion.sd_of_mean of
    its peers' mean variances -- the variance's unbiased estimate; a median of three peers'
    is low, their variances skewed -- on this step's group ``groups`` of ``r``, less the ranks
    told slow while two others are left; none measured yet: no).  Such a run is told held
    (:meth:`_held_runs`): paged with a cause on its GPU or node only, until its mean stands
    out of what the job's ranks do at its length.

    The run's standard error read from the step-to-step spread and the job's lag-1
    (:meth:`_lag1_read`) holds for noise of one AR(1)'s memory, at its job's spread.  A VLM
    replica's batches run video-heavy for tens of steps (the data's; blind31 F1: a stage-0
    node x1.07 over its 3 peers for 18 steps, escalated): the job's lag-1 read 0.43 (its
    memory 2.5 steps), its noise 3 % where its vision stage's is 5 %, and the run was read
    as 4.6 standard errors of 18 independent steps.  Its peers' own 16-step means spread by
    1.8 %: the run is 3.7 of those, one of theirs.  A slow GPU stays slow: its mean holds
    while the spread falls with its length (a 10 % slowdown on a simulator's independent
    1-2 % noise stands 10-20 of it out at its alarm; blind31 G1's memory-bound GPU on the
    vision stage, 4.6 at its 7th step, paged 52 s later than before -- the price of that
    stage's wander, as large as the fault).

    A rank told slow is out of this reference as it is out of the peer median
    (:meth:`_untold_reference`): its variance is of its own life -- learnt up to its alarm, a
    gross straggler's in the warm-up -- not of the job's noise.  Left in, Alibaba job 4's five
    workers told at 3.7-5.3x (their 3-step spread 0.28-0.46 in log, the fast half's 0.02-0.05)
    made worker 3's 1.2-1.5x run read 1.2 of its peers' spread, held 21 samples more (paged at
    17,014, not 16,804: noise42); out, it reads 12."""
    out = np.zeros(len(waiting), dtype=bool)
    if not excursion.ready(self._exc_n).any():
        return out
    at = {int(s): i for i, s in enumerate(r.tolist())}
    for j, s in enumerate(waiting.tolist()):
        peers = _exc_peers(self, s, at, r, groups)
        if peers is None:
            continue
        sd = excursion.sd_of_mean(self._exc_v[peers].mean(axis=0), self._exc_n, int(n[j]))
        x = float(mean[j])
        out[j] = sd > 0.0 and x < _EXC_Z * sd
    return out


def _fleet_held(self, n: np.ndarray, mean: np.ndarray, se: np.ndarray | float,
                rho: float, memory: np.ndarray | None = None) -> np.ndarray:
    """Per run (``n`` its lengths, ``mean`` its sizes, log; ``se`` the standard error of one
    step's deviation in the units it is sized in): whether its mean is under ``_FLEET_Z``
    standard errors of a mean of ``n`` of the job's steps at its lag-1 ``rho``
    (:meth:`_lag1_read`; models.lag1.mean_factor at any length).  Such a run is told held
    (:meth:`_held_runs`): paged with a cause on its GPU or node, escalated without one only once
    it stands so.  Under independent noise (``rho`` 0: the simulator's jobs) none is.

    A bar is a false-alarm rate, and a fleet multiplies it.  Real step noise (Alibaba PAI's
    workers: lag-1 ~0.5, 1-2 % CoV, a heavy tail) makes healthy runs of 7-14 steps 3-6 % over
    their peers; read as a z of a mean at the job's lag-1, blind28's healthy ranks (real PAI job-2
    noise, ~310 rank-hours) cross 4.5 ~0.4 times a rank-hour, 5 ~0.1, 5.5 ~1e-2, 6 ~3e-3 -- a
    factor ~5 each half standard error.  The rules before (2.5 % cleared by 2.5 standard
    errors, the runs' 7 steps, the excursions' 4.5) escalated such runs at 5.7-6.5 (blind28 H5,
    H8, packed-s1, spread-s3, packed-s3, blind29 F4, blind30 F4): ~1e-2 a rank-hour, ~40 pages an
    hour on a fleet of 4,000 GPUs.  One a day there is ~1e-5 a rank-hour: ~2 standard errors
    further, 7.5.  A 10 % slowdown on 2 % noise at lag-1 0.5 stands 8 at its 7th step (the
    runs' rule waits for it anyway); a 3-5 % one waits until its length makes it so.

    A lag-1 reads one memory only.  Noise remembered at other lags (revA45 F1: AR 0.8 at lag 2,
    a schedule alternating two kinds of step; its lag-1 ~0, so ``rho`` 0 and the bar off) made
    healthy runs of 8-20 steps 3-4 standard errors of independent steps, escalated unknown 11
    times in 6 runs of 4,000 steps (~0.1 a rank-hour).  So a run whose job's ``n``-step means
    are measured to spread ``_MEMORY_ON`` times or more what the lag-1 says (``memory``:
    :meth:`_memory_read`, 0 elsewhere) is held to the bar too, at that measured factor (3.5-4.9
    at F1's runs: 0 escalations in the 6 runs).  Independent noise and one AR(1)'s (the
    simulator's, PAI's lag-1 ~0.5: measured 1-1.4x what the lag-1 says) are read as before."""
    on = np.full(np.shape(n), bool(rho))
    factor = lag1.mean_factor(rho, n)
    if memory is not None:
        remembered = memory > 0.0
        on |= remembered
        factor = np.where(remembered, np.maximum(factor, memory), factor)
    if not np.count_nonzero(on):
        return on
    return on & (mean < math.log1p(_FLEET_UNDER)) & (
        mean < _FLEET_Z * se * np.sqrt(factor / n))


def _clear_of_wander(self, f: Finding, slots: np.ndarray, groups: np.ndarray) -> bool:
    """Whether ``f``, a slow rank told on this step of a wandering job (:meth:`_wander_update`),
    is no wander: a CUSUM run told as a verdict while the job's excursions are measured (so
    its mean cleared them at its length: :meth:`_excursion_held`), its mean
    ``_WANDER_ALONE`` or more over every peer of its group (``groups`` of ``slots``) on
    another node, each read smoothed over ~7 steps (models.excursion's second span).  Such
    a run is not taken back (:meth:`_hold_wandering`).

    The wandering regime holds every other rule's finding for the wander rule's (a mean over
    ~100 steps 7 % over the ranks'): routing's excursions are long, and the rules of i.i.d.
    steps paged them on every node in turn.  An AR(1) wander (revA40 F10: lag-1 0.8, 2 %)
    lifts the index as routing does (3.3-5.8), and a rank 9 % slow for 40 steps -- its
    100-step mean 3.6 % -- was never paged (4 of 16 runs).  Measured, the job's excursions
    are what the run is judged against already; and routing makes the ranks holding one
    expert hot together on several nodes (blind8 H1), a fault is on its unit alone."""
    ev = f.evidence
    s = self._slot.get(f.rank) if f.rank is not None else None
    if (s is None or not f.verdict or "run_steps" not in ev or "rule" in ev
            or "noise_hold" in ev or not excursion.ready(self._exc_n)[1]):
        return False
    at = np.flatnonzero(slots == s)
    if not len(at) or self._hw[s] is None:
        return False
    node = self._hw[s][0]
    hw = self._hw
    peers = [m for m in slots[groups == groups[at[0]]].tolist()
             if m != s and hw[m] is not None and hw[m][0] != node]
    if not peers:
        return False
    mean = float(self._run_sum[s]) / max(int(self._run_n[s]), 1)
    return mean - float(self._exc_s[peers, 1].max()) >= math.log1p(_WANDER_ALONE)


def _memory_read(self, waiting: np.ndarray, n: np.ndarray, r: np.ndarray, groups: np.ndarray,
                 se: np.ndarray | float, rho: float) -> np.ndarray:
    """Per run of ``waiting`` (``n`` its lengths; ``se`` the standard error of one step's
    deviation in the units its job's excursions are learnt in -- :meth:`_excursion_update`'s:
    a replica on one node's whole deviation, its replica's batch with its own; elsewhere the
    rank's own; ``rho`` the job's lag-1 read, :meth:`_lag1_read`): how many times the
    variance of an ``n``-step mean of its peers' deviations, measured (models.excursion: the
    job's variance-time curve; its peers as :meth:`_excursion_held` takes them,
    :func:`_exc_peers`), is that of ``n`` independent steps of spread ``se`` -- where that
    is ``_MEMORY_ON`` times or more what the lag-1 says (models.lag1.mean_factor), else 0.0:
    the job's noise remembered at lags its lag-1 does not see (revA45 F1: AR 0.8 at lag 2,
    its lag-1 ~0 -- a schedule alternating two kinds of step).  Nothing measured yet: 0.0.

    A ratio of two spreads of one quantity: a long-context job's TP group on one node
    (blind21 lc-b: its replica's batch 2.9 % a step, the rank's own 1.3 %) read its peers'
    whole deviations against the rank's own spread -- 4.4-6.7x "memory" where the same
    quantity's is 0.6-0.7x (none) -- and held three slow GPUs 33-58 s (noise47)."""
    out = np.zeros(len(waiting))
    if not excursion.ready(self._exc_n).any():
        return out
    se = np.broadcast_to(np.asarray(se, dtype=float), (len(waiting),))
    told = lag1.mean_factor(rho, n)
    at = {int(s): i for i, s in enumerate(r.tolist())}
    for j, s in enumerate(waiting.tolist()):
        peers = _exc_peers(self, s, at, r, groups) if se[j] > 0.0 else None
        if peers is None:
            continue
        k = int(n[j])
        if k >= _MEMORY_STEPS:  # (no excursion of the noise: a fault's run, as before)
            continue
        sd = excursion.sd_of_mean(self._exc_v[peers].mean(axis=0), self._exc_n, k)
        f = sd * sd * k / (se[j] * se[j])
        if f >= _MEMORY_ON * float(told[j]):
            out[j] = f
    return out
