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
    self._spikes_looked = False


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
                    out: list[Finding]) -> list[int]:
    """A rank that now runs on other hardware starts its history afresh; returns those.

    What it had reported on its old GPU is withdrawn there (nothing will clear it: the
    rank's steps now name another GPU), as for a rank that left the job."""
    hw = self._hw
    now = _pick(hw, slots)
    if now == buf.hw:
        return []
    at = [i for i, (h, b) in enumerate(zip(now, buf.hw, strict=True)) if h != b]
    kept = self._offsets_kept(buf, slots, now, at) if self.restarts else None
    for i in at:
        s = slots[i]
        if now[i] is not None and (self._reported[s] or self._host_rep[s]):
            note = {"step": self._last_step, "rank": buf.ranks[i],
                    "note": f"the rank moved to {buf.hw[i][0]} GPU {buf.hw[i][1]}"}
            for signal, was in (("slow_rank", self._reported[s]),
                                ("host_late", self._host_rep[s])):
                if was:
                    out.append(self._finding(buf.ranks[i], None, signal, "slow_node",
                                             "unknown", ts, ts, False, 0.0, note,
                                             verdict=signal == "slow_rank"))
        hw[s] = buf.hw[i]
    moved = [buf.ranks[i] for i in at]
    self._moves += 1
    m = _ints(slots)[at]
    self._reset_slow(m)
    self._reported[m] = False
    self._twin_rep[m] = False
    self._twins[m] = 0
    self._gross[m] = 0
    self._run_sum[m] = 0.0
    self._run_own[m] = 0.0
    self._run_n[m] = 0
    self._run_since[m] = 0.0
    self._base[m] = 0.0
    self._cap[m] = self.cfg.slow_baseline_clip
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
    self._spikes[m] = 0.0
    self._recur[m] = 0.0
    self._recurring[m] = False
    self._recur_last[m] = False
    self._reset_sustained(m)
    self._reset_host(m)
    return moved


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
