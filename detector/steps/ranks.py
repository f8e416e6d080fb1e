"""A job's slots: ranks given a slot, moved to other hardware, gone and back.

Per-rank state lives in numpy arrays by slot; a rank that moves to other
hardware starts afresh (or takes back its learned start offset), and the
slots of ranks that left are given back.
"""

from __future__ import annotations

import math

import numpy as np

from detector import sdc
from detector.alerts import Scope
from detector.findings import Finding
from detector.step_numerics import _pick
from detector.steps.common import _GONE_STEPS, _PARKED_KEPT, _SLOT_ARRAYS, _ints, _StepBuffer

_JOINED_KEPT = 64  # GPUs that joined a job lately, remembered (JobMonitor._joined)
_LIVE_STEPS = 3    # a slot in none of the job's last this many steps holds no GPU of the job


def _grow(self, n: int) -> None:
    old = len(self._base)
    if n <= old:
        return
    n = max(n, 2 * old)
    self._hw.extend([None] * (n - old))
    for name, fill in _SLOT_ARRAYS:
        a = getattr(self, name)
        # (np.zeros and np.ones: half np.full's instructions, and a job's first step
        # makes 13 arrays)
        more = (np.full(n - old, self.cfg.slow_baseline_clip) if fill is None
                else np.ones(n - old, dtype=a.dtype) if fill
                else np.zeros((n - old, *a.shape[1:]), a.dtype))
        setattr(self, name, np.concatenate([a, more]))
    self._slow.ensure(n)
    self._host.ensure(n)


def _free_gone_slots(self, ts: float, out: list[Finding]) -> None:
    """Give back the slots of ranks that left the job: in none of its last ``_GONE_STEPS``
    steps while it stepped on (an elastic job that shrank, a node replaced, a producer
    writing a stray rank number a step).

    Without this a live job kept a slot for every rank number it ever saw (room harden,
    2026-12-02: one stray rank a step was 6,008 slots after 6,000 steps, each step 2.5x
    slower to evaluate), and a job that lost a rank for good never again took the usual
    step's path (every slot in the step).  A new rank always gets a slot: nothing is
    refused.  What a leaving rank had reported is withdrawn (no step will confirm or
    clear it, as for a job that stopped, :meth:`_retract_slow`); one that comes back is a
    new rank, as on other hardware (:meth:`_track_hardware`), but for the start offset it
    learned, which it finds again on the same GPU (:meth:`_unpark`).
    """
    n = len(self._rank_of)
    seen = self._seen_at[:n]
    gone = np.flatnonzero(self._evaluated - np.maximum(seen, self._whole_at) >= _GONE_STEPS)
    if not len(gone):
        return
    rank_of, clip = self._rank_of, self.cfg.slow_baseline_clip
    parked = self._parked
    for s in gone.tolist():
        rank = rank_of[s]
        note = {"step": self._last_step, "rank": rank,
                "note": f"the rank left the job: in none of its last {_GONE_STEPS} steps"}
        for signal, kind, cause, was in (
                ("slow_rank", "slow_node", "unknown", bool(self._reported[s])),
                ("grad_outlier", "sdc", "unknown", bool(self._spiking[s])),
                ("grad_drift", "sdc", "unknown", bool(self._gd_rep[s])),
                ("checksum_mismatch", "sdc", "gpu_hardware",
                 self._mismatch.pop(rank, None) is not None),
                ("host_late", "slow_node", "unknown", bool(self._host_rep[s]))):
            if was:
                out.append(self._finding(rank, None, signal, kind, cause, ts, ts, False, 0.0,
                                         note, verdict=signal != "host_late"))
        if self._pair.pop(rank, None) is not None and not self._pair:  # (detector.sdc)
            out.append(sdc.tie_over(ts, self._last_step, note["note"], self.job,
                                    self.tenant, self.cluster))
        if self._cap[s] > clip:  # learned a start offset: kept for its return
            parked.pop(rank, None)
            parked[rank] = (self._hw[s], float(self._base[s]), float(self._cap[s]))
            while len(parked) > _PARKED_KEPT:
                oldest = next(iter(parked))
                del parked[oldest]
                self.start_offsets.pop(oldest, None)
        else:
            self.start_offsets.pop(rank, None)
    keep = np.ones(n, dtype=bool)
    keep[gone] = False
    idx = np.flatnonzero(keep)
    for name, _ in _SLOT_ARRAYS:
        setattr(self, name, getattr(self, name)[idx])
    renum = np.zeros(n + 1, dtype=np.int64)  # (twins are slots + 1: renumbered, 0 if gone)
    renum[idx + 1] = np.arange(1, len(idx) + 1)
    self._twins = renum[np.clip(self._twins, 0, n)]
    self._slow.keep(idx)
    self._host.keep(idx)
    self._hw = [self._hw[i] for i in idx.tolist()]
    self._rank_of = [rank_of[i] for i in idx.tolist()]
    self._slot = {r: i for i, r in enumerate(self._rank_of)}
    self._seen_at = seen[idx]
    # Layouts learned by slot are void (slots renumbered): learned again at the next step.
    self._moves += 1
    self._fixed_rows.clear()
    self._whole_layouts.clear()


def _follow_hardware(self, buf: _StepBuffer, slots: tuple[int, ...], ts: float,
                     out: list[Finding]) -> tuple[tuple[int, ...], list[int]]:
    """A job that re-formed (an elastic resize, a VM swapped: the members re-ranked in
    rendezvous order, step numbers going on) keeps each GPU's evidence: a rank now on a GPU
    another slot of the job holds takes that slot; returns the step's slots and those ranks
    (placed anew: their ``job_layout`` is sent, :meth:`_layout_finding`).

    A slot is a rank's only as a key: what it holds -- the CUSUM and its run, the learned
    bias, a slow rank told, the host path's and the wander index's sums -- is the GPU's
    (a slow GPU is slow in every shape it is in; renumbering says nothing of the hardware).
    Keyed by rank, a job that re-forms every ~2 min started every rank afresh at every
    re-form (:meth:`_track_hardware`): a slow GPU told slow was withdrawn and found again
    after each one, and found on the same steps as another slow GPU found again likewise
    the pair read as slowness visiting node after node (:meth:`_visiting`) and was held for
    good (blind27 F2: a new VM's GPU 40 % slow never paged, others 465-502 s late); the
    wander index, each slot's history now another GPU's, read 2.2 and never let the job
    calm.  What is the rank's work, not its GPU's -- its twins (the ranks whose pace moves
    with its own, detector.steps.twins) and its gradient history -- starts afresh.

    Not after a restart (the job's first step, step numbers gone back): the restart starts
    every run afresh and :meth:`_offsets_kept` weighs what a moved rank keeps.  A rank on a
    GPU no slot holds (a new VM), or that another rank of this step claimed first (a
    forged duplicate), keeps its slot and is :meth:`_track_hardware`'s, as before."""
    if self._evaluated == 0:
        return slots, []
    hw, rank_of, slot = self._hw, self._rank_of, self._slot
    n = len(rank_of)
    # The GPUs of the slots in the job's latest steps: a slot whose rank left with its GPU
    # (a VM reclaimed) holds a GPU that is no longer the job's -- a VM that comes later under
    # that host name is a new machine (cloud host names are reused), new to the job.  (A GPU
    # in two slots -- a rank that left, kept on the GPU it was last on, below -- is the slot
    # that took part in a step last.)
    seen, whole = self._seen_at, self._whole_at
    last = [max(int(seen[s]), whole) if s < len(seen) else whole for s in range(n)]
    live = self._evaluated - _LIVE_STEPS
    held: dict[tuple[str, int], int] = {}
    for s, h in enumerate(hw[:n]):
        if h is not None and last[s] >= live:
            t = held.get(h)
            if t is None or last[s] > last[t]:
                held[h] = s
    claims: dict[int, int] = {}  # slot -> the rank now on its GPU
    for r, s, h in zip(buf.ranks, slots, buf.hw, strict=True):
        if hw[s] != h:
            t = held.get(h)
            if t is not None and t not in claims and rank_of[t] != r:
                claims[t] = r
    if not claims:
        return slots, []
    movers = list(claims.values())
    free = [slot[r] for r in movers if slot[r] not in claims]
    moving = set(movers)
    displaced = [rank_of[t] for t in claims if rank_of[t] not in moving]
    for t, r in claims.items():
        rank_of[t] = r
        slot[r] = t
    # A rank whose GPU another rank took now holds a GPU the job left (as many: rank_of is
    # one-to-one).  One not in this step (the job shrank) is kept as before the re-form, on
    # the GPU it was last on (detector.liveness reads where the job's ranks are from the
    # slots): the GPU that left is withdrawn and its slot starts afresh.  One in this step is
    # on a new GPU: _track_hardware's, below.
    here = set(buf.ranks)
    for r, s in zip(displaced, free, strict=True):
        last = hw[slot[r]]
        rank_of[s] = r
        slot[r] = s
        if r not in here:
            self._left_gpu(s, r, "the job re-formed without its GPU", ts, out)
            self._afresh(_ints([s]))
            hw[s] = last
    m = _ints(sorted(claims))
    self._twins[np.isin(self._twins, m + 1)] = 0  # (twins are slots + 1)
    self._twins[m] = 0
    self._twin_rep[m] = False
    self._spikes[m] = 0.0
    self._spike_seq[m] = 0.0
    self._big_seq[m] = 0.0
    self._gd_fast[m] = 0.0  # (a page open resolves on its next step: off the GPU)
    self._gd_run[m] = 0
    self._gd_last[m] = 0
    self._spiking[m] = False
    self._gn[m] = 0
    # Layouts and caches learned by slot are void (slots renumbered): learned again.
    self._moves += 1
    self._fixed_rows.clear()
    self._whole_layouts.clear()
    return _pick(slot, buf.ranks), movers


def _unpark(self, moved: list[int]) -> None:
    """Ranks that come back on the GPU they left from take their learned start offset
    again (:meth:`_track_hardware` started them afresh, as on other hardware)."""
    parked = self._parked
    for rank in moved:
        s = self._slot[rank]
        was = parked.get(rank)
        if was is not None and was[0] == self._hw[s]:
            del parked[rank]
            _, self._base[s], self._cap[s] = was
            self._fresh[s] = False


def _track_hardware(self, buf: _StepBuffer, slots: tuple[int, ...], ts: float,
                    out: list[Finding]) -> tuple[tuple[int, ...], list[int], list[int]]:
    """A rank that now runs on other hardware starts its history afresh -- unless a slot of
    the job holds that GPU's (a re-form, :meth:`_follow_hardware`): it takes that slot.
    Returns the step's slots, the ranks started afresh and the ranks that took a GPU's slot.

    What a rank started afresh had reported on its old GPU is withdrawn there (nothing will
    clear it: the rank's steps now name another GPU), as for a rank that left the job."""
    hw = self._hw
    now = _pick(hw, slots)
    if now == buf.hw:
        return slots, [], []
    slots, placed = self._follow_hardware(buf, slots, ts, out)
    if placed:
        now = _pick(hw, slots)
        if now == buf.hw:
            return slots, [], placed
    at = [i for i, (h, b) in enumerate(zip(now, buf.hw, strict=True)) if h != b]
    kept = self._offsets_kept(buf, slots, now, at) if self.restarts else None
    if self._evaluated >= self.cfg.warmup_steps:
        # GPUs new to the job past its warm-up (no slot held them: _follow_hardware), when
        # (steps.holds._gross_joiner); the oldest forgotten
        joined = self._joined
        for i in at:
            joined.pop(buf.hw[i], None)
            joined[buf.hw[i]] = self._evaluated
        while len(joined) > _JOINED_KEPT:
            del joined[next(iter(joined))]
    for i in at:
        s = slots[i]
        self._left_gpu(s, buf.ranks[i], f"the rank moved to {buf.hw[i][0]} GPU {buf.hw[i][1]}",
                       ts, out)
        hw[s] = buf.hw[i]
    moved = [buf.ranks[i] for i in at]
    self._moves += 1
    m = _ints(slots)[at]
    self._afresh(m)
    # A start offset is learned only in the job's first start: a rank the job moved to
    # other hardware after a restart (a spare for a failed node) ran at its peers' pace
    # before, so a slowness the new GPU brings is a change (blind4 D5: a spare 15-22 %
    # slow learned as the offset of a fresh start, paged 13-39 steps later) -- beyond
    # the offset it keeps (_offsets_kept).
    self._fresh[m] = self.restarts == 0
    # A rank that joins the job past its warm-up starts cold (_cold_steps); in the
    # warm-up (a start, a restart) every rank does, alike.
    self._cold[m] = self.cfg.warmup_steps if self._evaluated >= self.cfg.warmup_steps else 0
    if kept is not None:
        self._base[m], self._cap[m] = kept
    return slots, moved, placed


def _left_gpu(self, s: int, rank: int, why: str, ts: float, out: list[Finding]) -> None:
    """Withdraw what slot ``s`` had reported at its GPU, which its rank left (``why``):
    nothing will clear it there."""
    if self._hw[s] is None or not (self._reported[s] or self._host_rep[s]):
        return
    note = {"step": self._last_step, "rank": rank, "note": why}
    for signal, was in (("slow_rank", self._reported[s]), ("host_late", self._host_rep[s])):
        if was:
            out.append(self._finding(rank, None, signal, "slow_node", "unknown", ts, ts, False,
                                     0.0, note, verdict=signal == "slow_rank"))


def _afresh(self, m: np.ndarray) -> None:
    """Slots ``m`` start their runs and learned bias afresh (their rank on other hardware)."""
    self._reset_slow(m)
    self._reported[m] = False
    self._twin_rep[m] = False
    self._twins[m] = 0
    self._past_n[m] = 0
    self._past_run[m] = 0
    self._past_gross[m] = 0
    self._past_rep[m] = False
    self._gross[m] = 0
    self._paced[m] = 0
    self._run_sum[m] = 0.0
    self._run_own[m] = 0.0
    self._run_n[m] = 0
    self._run_since[m] = 0.0
    self._base[m] = 0.0
    self._cap[m] = self.cfg.slow_baseline_clip
    self._spikes[m] = 0.0
    self._spike_seq[m] = 0.0
    self._big_seq[m] = 0.0
    self._gd_fast[m] = 0.0  # (a page open resolves on its next step: off the GPU)
    self._gd_run[m] = 0
    self._gd_last[m] = 0
    self._recur[m] = 0.0
    self._recurring[m] = False
    self._recur_last[m] = False
    self._reset_sustained(m)
    self._reset_host(m)


def _offsets_kept(self, buf: _StepBuffer, slots: tuple[int, ...],
                  now: tuple[tuple[str, int] | None, ...], at: list[int]
                  ) -> tuple[np.ndarray, np.ndarray]:
    """After a restart, the (bias, cap) each moved rank (``at``, positions in the step)
    keeps: the larger of the offset it had learned and the one its new GPU's last rank
    had learned there -- an offset is the rank's own work (an uneven shard, the rank that
    logs) or its GPU's silicon, and which one no step tells.

    Without this a job restarted on the same nodes in another order (torchrun numbers
    nodes as they join) paged the GPU 8 % slow since the job's start under its new rank,
    and a rank 8 % slow by its own work restarted on a healthy spare paged the spare
    (review round 13, S2 and S4: 5 steps after the restart).  A spare slower than either
    (blind4 D5) is still a change.
    """
    clip = self.cfg.slow_baseline_clip
    learned = {h: s for s, h in enumerate(self._hw[:len(self._rank_of)])
               if h is not None and self._cap[s] > clip}
    base, cap = np.zeros(len(at)), np.full(len(at), clip)
    for j, i in enumerate(at):
        for s in (slots[i] if now[i] is not None else None, learned.get(buf.hw[i])):
            if s is not None and self._cap[s] > cap[j]:
                base[j], cap[j] = self._base[s], self._cap[s]
    return base, cap


def _layout_finding(self, buf: _StepBuffer, moved: list[int], ts: float) -> Finding:
    """Evidence only: where these ranks now run, so the correlator can say what isolating
    a unit takes out of the job (its granularity).  Sent when a rank first appears or
    moves, so a job's layout costs one finding, not one per step."""
    where = {r: i for i, r in enumerate(buf.ranks)}
    placement = [[r, buf.hw[where[r]][0], buf.hw[where[r]][1], buf.dp[where[r]]]
                 for r in moved]
    return Finding(ts, ts, "job_layout", "slow_node", "unknown", Scope.of_job(self.job),
                   True, False, 0.0, {"placement": placement}, self.job, self.tenant,
                   self.cluster)


def _note_offsets(self, r: np.ndarray) -> None:
    """Record the ranks whose learned start offset exceeds the 2 % any GPU may have.

    Policy: a rank steadily slower than its peers from the job's first steps (and less
    than ``start_offset_max``) is that rank's baseline, not a fault -- Alibaba's PAI job
    1 has three workers 8-10 % slower from the start on shared GPUs, by Alibaba's notes
    no stragglers.  It is reported (``start_offsets``, and in the evidence of any later
    slow_rank of that rank), never paged; a rank >= ``gross_slowdown`` slower is caught
    by the gross prior instead, and any change after warm-up pages as usual.
    """
    big = r[self._base[r] > self.cfg.slow_baseline_clip]
    for s in big.tolist():
        self.start_offsets[self._rank_of[s]] = round(math.expm1(float(self._base[s])), 4)
