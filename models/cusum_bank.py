"""A bank of one-sided CUSUM detectors, one per slot, updated a vector at a time.

Each slot accumulates ``S = max(0, S + min(z, z_clip) - k)`` and alarms when
``S > h``.  Clipping ``z`` makes it robust: one enormous step (a GC pause) adds
at most ``z_clip - k``, so an alarm needs a *run* of evidence.  A 10 % slowdown
with 2 % jitter gives z ≈ 4.8, so with the defaults it alarms on the fourth
step; healthy noise (z ~ N(0, 1)) almost never reaches ``h = 10`` with
``k = 1``.  The onset is the time the current run started (the last time ``S``
left zero), which is what an alert reports as ``onset_ts``.  After an alarm,
``S`` is capped at ``h_cap`` so recovery takes a bounded number of healthy
updates, and the slot clears after ``clear_after`` updates with ``S == 0``.

>>> import numpy as np
>>> bank = CusumBank(k=1.0, h=10.0, z_clip=4.0, clear_after=3)
>>> slots = np.array([0, 1])
>>> for step in range(8):
...     z = np.array([0.2, 4.8 if step >= 2 else 0.1])
...     alarmed, cleared = bank.update(slots, z, np.array([float(step), float(step)]))
...     if len(alarmed):
...         print(step, alarmed.tolist(), bank.onset_ts[1])
5 [1] 2.0
"""

from __future__ import annotations

import numpy as np

from models.numpy_c import count_nonzero


class CusumBank:
    """One-sided robust CUSUMs over integer slots, with onset times and clearing hysteresis."""

    def __init__(self, k: float = 1.0, h: float = 10.0, z_clip: float = 4.0,
                 clear_after: int = 10, h_cap: float | None = None) -> None:
        self.k = k
        self.h = h
        self.z_clip = z_clip
        self.clear_after = clear_after
        self.h_cap = h_cap if h_cap is not None else 2.0 * h
        self.score = np.zeros(0)
        self.onset_ts = np.zeros(0)
        self.alarmed = np.zeros(0, dtype=bool)
        self._quiet = np.zeros(0, dtype=np.int32)

    def ensure(self, n: int) -> None:
        """Make room for slots ``0 .. n-1``."""
        old = len(self.score)
        if n <= old:
            return
        n = max(n, 2 * old, 8)
        self.score = np.concatenate([self.score, np.zeros(n - old)])
        self.onset_ts = np.concatenate([self.onset_ts, np.zeros(n - old)])
        self.alarmed = np.concatenate([self.alarmed, np.zeros(n - old, dtype=bool)])
        self._quiet = np.concatenate([self._quiet, np.zeros(n - old, dtype=np.int32)])

    def update(self, slots: np.ndarray, z: np.ndarray, ts: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """Feed one observation per slot; returns (slots just alarmed, slots just cleared)."""
        new, cleared, _ = self.step(slots, z, ts)
        return new, cleared

    def step(self, slots: np.ndarray, z: np.ndarray, ts: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`update`, and the slots' scores after it (``score[slots]``, a copy)."""
        if len(slots) == 0:
            return slots, slots, self.score[:0]
        try:
            prev = self.score[slots]
        except IndexError:  # (a slot beyond the bank: room for it; max() is ~5k instructions)
            self.ensure(int(slots.max()) + 1)
            prev = self.score[slots]
        s = np.maximum(0.0, prev + np.minimum(z, self.z_clip) - self.k)
        # (no slot alarmed: the usual update, fewer array calls)
        any_was = count_nonzero(self.alarmed)
        if any_was:
            was = self.alarmed[slots]
            any_was = count_nonzero(was)
            s = np.where(was, np.minimum(s, self.h_cap), s) if any_was else s
        rising = (prev == 0.0) & (s > 0.0)
        if count_nonzero(rising):
            self.onset_ts[slots[rising]] = ts[rising]
        self.score[slots] = s
        new = slots[(~was) & (s > self.h)] if any_was else slots[s > self.h]
        if len(new):
            self.alarmed[new] = True
        quiet = np.where(s == 0.0, self._quiet[slots] + 1, 0)
        self._quiet[slots] = quiet
        if not any_was:
            return new, slots[:0], s
        cleared = slots[was & (quiet >= self.clear_after)]
        self.alarmed[cleared] = False
        return new, cleared, s

    def reset(self, slots: np.ndarray) -> None:
        """Forget the history of these slots (a rank moved to other hardware, a job restarted)."""
        slots = slots[slots < len(self.score)]
        self.score[slots] = 0.0
        self.alarmed[slots] = False
        self._quiet[slots] = 0

    def keep(self, slots: np.ndarray) -> None:
        """Keep only these slots, renumbered ``0 .. len(slots)-1`` in their order (the others'
        ranks left: see detector.steps.JobMonitor._free_gone_slots).

        >>> bank = CusumBank()
        >>> bank.ensure(3)
        >>> bank.score[:3] = [1.0, 2.0, 3.0]
        >>> bank.keep(np.array([0, 2]))
        >>> bank.score.tolist()
        [1.0, 3.0]
        """
        self.score = self.score[slots]
        self.onset_ts = self.onset_ts[slots]
        self.alarmed = self.alarmed[slots]
        self._quiet = self._quiet[slots]
