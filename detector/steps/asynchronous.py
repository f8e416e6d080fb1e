"""A worker slow against its peers over time, in a job whose steps no two ranks share (issue 10).

Asynchronous data parallelism against parameter servers (TensorFlow's PS strategy, PAI's
recommendation jobs): every ``step`` is one worker's update -- the global step the parameter
servers return -- so no two ranks ever report the same step number, and the step-at-a-time
comparison of :meth:`JobMonitor._evaluate` has one rank a step and nothing to compare it with.
No worker waits for another either, so a slow GPU never shows as a wait on its peers: it shows
only as its own ``compute_ms`` (``step_ms`` less ``comm_ms`` without it) standing above the other
workers' for as long as it is slow (blind29 F2: a worker 18-25 % slow with nothing in telemetry;
F1: a GPU's clock stuck at 62-70 % of its maximum, its worker 1.4-1.55x slower).

What this reads: the step messages of the general path of :meth:`JobMonitor.add` (a
synchronous job's quiet path never comes here: its steps' middle messages are the quiet path's).
A window of WINDOW_S on the job's clock is **asynchronous** when it had at least MIN_MSGS step
messages of at least MIN_RANKS workers and at most SHARED_MAX of them carried a step number seen
before (a synchronous job's completing message always does: half of its general-path messages).
In such a window each worker's median log busy time is compared with the median of the
workers' medians, in units of their spread (MAD, floored at MAD_FLOOR): a worker SLOW_RATIO or
more above and SLOW_Z spreads out is slow in that window; slow in WINDOWS windows in a row (a
minute: the persistence a slow rank needs elsewhere, ~a few dozen of its own steps) it is
told ``slow_rank`` -- the same finding the synchronous rules make, so the correlator's one path
decides its page (its GPU's clock stuck low with no reason: detector.stuck_clock, gpu_hardware;
otherwise an escalation, cause unknown).  Back within CLEAR_RATIO for WINDOWS windows, or the
job's async windows over (stopped, too few messages), it is withdrawn.

Routine shapes it must not page: a worker's noise (a median over a window's ~25 steps, then
compared with a spread of the workers' medians); a whole-job slowdown (a hot parameter-server
shard, a save, the chief's evaluation pause: the median moves, not one worker against it); a
worker that reports less often (a median of its own steps, MIN_SAMPLES of them at least);
every synchronous job (its windows are never asynchronous).

State: not in a snapshot (set on first use, like ``_joined_at``): a restored monitor learns its
windows anew, a minute at most.  Bounded: STEPS_KEPT step numbers, RANKS_KEPT workers,
SAMPLES_KEPT samples a worker a window.
"""

from __future__ import annotations

import math
from statistics import median
from typing import TYPE_CHECKING

from detector.alerts import Scope
from detector.events import StepSample
from detector.findings import Finding
from models.peer_stats import MAD_TO_SIGMA

if TYPE_CHECKING:
    from detector.steps.job import JobMonitor

WINDOW_S = 20.0       # one judgement per this much of the job's clock
MIN_MSGS = 60         # step messages in a window, at least
MIN_RANKS = 6         # workers with MIN_SAMPLES in a window, at least (the median referees)
MIN_SAMPLES = 5       # a worker's steps in a window for its median to count
SHARED_MAX = 0.05     # share of a window's messages whose step number was seen before
SLOW_RATIO = 1.10     # a worker's median busy time over the workers' median, at least ...
SLOW_Z = 4.0          # ... and this many of the workers' spreads out
MAD_FLOOR = 0.01      # (a 1 % spread at least: workers alike to the percent are not a referee)
CLEAR_RATIO = 1.05    # back under this, WINDOWS windows in a row: withdrawn
WINDOWS = 3           # windows in a row
STEPS_KEPT = 4096
RANKS_KEPT = 4096
SAMPLES_KEPT = 256


class _Async:
    """One job's windows (not snapshot state: see the module docstring)."""

    __slots__ = ("start", "last_ts", "msgs", "shared", "seen", "samples", "where", "runs",
                 "onset", "told", "ok_runs")

    def __init__(self, ts: float) -> None:
        self.start = ts
        self.last_ts = ts
        self.msgs = 0
        self.shared = 0
        self.seen: dict[int, None] = {}
        self.samples: dict[int, list[float]] = {}
        self.where: dict[int, tuple[str, int, int | None]] = {}
        self.runs: dict[int, int] = {}
        self.onset: dict[int, float] = {}
        self.told: dict[int, float] = {}   # rank -> its ratio when told
        self.ok_runs: dict[int, int] = {}


def _async_see(self: JobMonitor, e: StepSample, out: list[Finding]) -> None:
    """Take a general-path step message into the job's asynchronous windows; a window over is
    judged (:func:`_async_judge`) first."""
    a = self._async
    ts = e.ts
    if a is None:
        a = self._async = _Async(ts)
    if ts >= a.start + WINDOW_S:
        _async_judge(self, a, ts, out)
    if ts > a.last_ts:
        a.last_ts = ts
    a.msgs += 1
    seen = a.seen
    if e.step in seen:
        a.shared += 1
    else:
        seen[e.step] = None
        if len(seen) > STEPS_KEPT:
            del seen[next(iter(seen))]
    busy = e.compute_ms
    if busy is None:
        busy = e.step_ms - e.comm_ms if e.comm_ms is not None else e.step_ms
    if not busy > 0.0 or not math.isfinite(busy):
        return
    rank = e.rank
    xs = a.samples.get(rank)
    if xs is None:
        if len(a.samples) >= RANKS_KEPT:
            return
        xs = a.samples[rank] = []
    if len(xs) < SAMPLES_KEPT:
        xs.append(math.log(busy))
    if rank in a.where or len(a.where) < RANKS_KEPT:
        a.where[rank] = (e.node, e.gpu, e.dp_rank)


def _async_judge(self: JobMonitor, a: _Async, ts: float, out: list[Finding]) -> None:
    """Judge the window that ended before ``ts`` and start the next."""
    meds = {r: median(xs) for r, xs in a.samples.items() if len(xs) >= MIN_SAMPLES}
    is_async = (a.msgs >= MIN_MSGS and a.shared <= SHARED_MAX * a.msgs
                and len(meds) >= MIN_RANKS)
    a.start, a.msgs, a.shared = ts, 0, 0
    a.samples = {}
    if not is_async:
        a.runs.clear()
        a.ok_runs.clear()
        _async_withdraw(self, a, ts, "its steps are no longer one worker's each, or too few",
                        out)
        return
    ref = median(list(meds.values()))
    spread = max(MAD_FLOOR, MAD_TO_SIGMA * median([abs(m - ref) for m in meds.values()]))
    slow_at, clear_at = math.log(SLOW_RATIO), math.log(CLEAR_RATIO)
    for rank, m in meds.items():
        dev = m - ref
        if dev >= slow_at and dev >= SLOW_Z * spread:
            a.ok_runs.pop(rank, None)
            run = a.runs[rank] = a.runs.get(rank, 0) + 1
            a.onset.setdefault(rank, ts - WINDOW_S)
            if run >= WINDOWS and rank not in a.told:
                ratio = math.exp(dev)
                a.told[rank] = ratio
                _async_finding(self, a, rank, ts, True, min(0.95, 0.5 + (ratio - 1.0) * 3), {
                    "rank": rank, "asynchronous": True,
                    "compute_ratio_to_peers": round(ratio, 4),
                    "z": round(dev / spread, 2), "peers": len(meds) - 1,
                    "window_s": WINDOW_S, "windows": run}, out)
            continue
        a.runs.pop(rank, None)
        a.onset.pop(rank, None)
        if rank in a.told and dev < clear_at:
            ok = a.ok_runs[rank] = a.ok_runs.get(rank, 0) + 1
            if ok >= WINDOWS:
                del a.told[rank]
                a.ok_runs.pop(rank, None)
                _async_finding(self, a, rank, ts, False, 0.0, {
                    "rank": rank, "asynchronous": True,
                    "compute_ratio_to_peers": round(math.exp(dev), 4),
                    "note": f"back at its peers' pace for {WINDOWS} windows"}, out)


def _async_expire(self: JobMonitor, now: float, out: list[Finding]) -> None:
    """The job's steps stopped (no message for two windows on ``now``): its slow workers
    are withdrawn -- no window will confirm or clear them."""
    a = self._async
    if a is not None and a.told and now != math.inf and now - a.last_ts > 2 * WINDOW_S:
        a.runs.clear()
        a.ok_runs.clear()
        _async_withdraw(self, a, now, f"the job stopped: no step for {now - a.last_ts:.0f} s",
                        out)


def _async_withdraw(self: JobMonitor, a: _Async, ts: float, why: str,
                    out: list[Finding]) -> None:
    for rank in list(a.told):
        del a.told[rank]
        _async_finding(self, a, rank, ts, False, 0.0,
                       {"rank": rank, "asynchronous": True, "note": why}, out)
    a.onset.clear()


def _async_finding(self: JobMonitor, a: _Async, rank: int, ts: float, active: bool,
                   severity: float, evidence: dict, out: list[Finding]) -> None:
    where = a.where.get(rank)
    if where is None:
        return
    node, gpu, dp = where
    out.append(Finding(ts, a.onset.get(rank, ts) if active else ts, "slow_rank", "slow_node",
                       "unknown", Scope.of_gpu(node, gpu), active, True, severity, evidence,
                       self.job, self.tenant, self.cluster, rank, dp))
