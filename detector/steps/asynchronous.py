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
messages of at least MIN_SMALL workers and at most SHARED_MAX of them carried a step number seen
before (a synchronous job's completing message always does: half of its general-path messages).

With MIN_RANKS workers or more the median referees: each worker's median log busy time over the
window is compared with the median of the workers' medians, in units of their spread (MAD,
floored at MAD_FLOOR), after its **class**'s offset is taken out: whole nodes alike slower from
their first judged window -- another GPU model in the job, H100 beside H200 -- are read as a
class by detector.sku_class exactly as the synchronous path reads them (two whole nodes at
least, under its MAX_OFFSET, where they stood at their first look), and a class's worker is
judged against its class's median (revA39 F1: such nodes were escalated a minute in).  One node
slower from the start is not a class (it is a fault, as in the synchronous path); a GPU of a
class node, or the whole node, slowing later stands out of its class.  A worker SLOW_RATIO or
more above and SLOW_Z spreads out is slow in that window; slow in WINDOWS windows in a row (a
minute: the persistence a slow rank needs elsewhere, ~a few dozen of its own steps) it is told.

With MIN_SMALL to MIN_RANKS - 1 workers (PAI's parameter-server jobs are mostly a handful;
revA39 F3: they were never judged) there is no spread of medians to referee: each worker's median
is compared with the median of the *others'*, less its own standing at its first judged window
(a heavier data shard, a slower GPU steady from the start: up to the synchronous path's
``start_offset_max``, 10 %), in units of the standard errors of the three, each from its own
steps' spread over its window; SLOW_RATIO and SLOW_Z over that, SMALL_WINDOWS windows in a row.
A worker slower from the start than its start offset and SLOW_RATIO together (~21 %) is still
told, as the synchronous path's gross prior tells a rank 30 % slow from its first step.

Told ``slow_rank`` -- the same finding the synchronous rules make, so the correlator's one path
decides its page (its GPU's clock stuck low with no reason: detector.stuck_clock, gpu_hardware;
otherwise an escalation, cause unknown).  Back within CLEAR_RATIO for WINDOWS windows, or the
job's async windows over (stopped, too few messages), it is withdrawn.

Routine shapes it must not page: a worker's noise (a median over a window's ~25 steps, then
compared with a spread of the workers' medians, or with its own steps' standard error); a
whole-job slowdown (a hot parameter-server shard, a save, the chief's evaluation pause: the
median moves, not one worker against it); a worker that reports less often (a median of its own
steps, MIN_SAMPLES of them at least); nodes of another GPU model (a class); in a small job, a
worker steady at its own pace from the start (PAI's workers differ by up to ~12 % from their
first iteration: bench/data/alibaba-pai-minibatch jobs 1-3); every synchronous job (its windows
are never asynchronous).

Limits: a class or a start offset is read at a worker's first judged window, so two whole nodes
alike faulty from the job's start (under MAX_OFFSET), or a small job's worker faulty from its
start by less than ~20 %, are taken as their own pace (as the synchronous path takes a class,
and a rank's offset from the start in its CUSUM); a worker added later to a class's node joins
its class only at its node mates' pace (sku_class.joins); and a restored monitor reads them anew
from its first window.

State: not in a snapshot (set on first use, like ``_joined_at``): a restored monitor learns its
windows anew, a minute at most.  Bounded: STEPS_KEPT step numbers, RANKS_KEPT workers (first
looks and classes too), SAMPLES_KEPT samples a worker a window.
"""

from __future__ import annotations

import math
from statistics import median
from typing import TYPE_CHECKING

import numpy as np

from detector import sku_class
from detector.alerts import Scope
from detector.events import StepSample
from detector.findings import Finding
from models.numpy_c import count_nonzero
from models.peer_stats import MAD_TO_SIGMA

if TYPE_CHECKING:
    from detector.steps.job import JobMonitor

WINDOW_S = 20.0       # one judgement per this much of the job's clock
MIN_MSGS = 60         # step messages in a window, at least
MIN_RANKS = 6         # workers with MIN_SAMPLES in a window for the median to referee; ...
MIN_SMALL = 3         # ... with this many to MIN_RANKS - 1, each against its own pace ...
SMALL_WINDOWS = 5     # ... for this many windows in a row
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
                 "onset", "told", "ok_runs", "first", "cls", "off")

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
        self.first: dict[int, tuple[str | None, float, float]] = {}  # rank -> node, first look
        self.cls: dict[int, int] = {}      # rank -> its class (detector.sku_class)
        self.off: dict[int, float] = {}    # rank -> its class's offset (log), last window


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
    meds: dict[int, float] = {}
    ses: dict[int, float] = {}
    if a.msgs >= MIN_MSGS and a.shared <= SHARED_MAX * a.msgs:   # (a synchronous job: never)
        for r, xs in a.samples.items():
            if len(xs) >= MIN_SAMPLES:
                meds[r] = m = median(xs)
                ses[r] = _own_se(xs, m)
    is_async = len(meds) >= MIN_SMALL
    a.start, a.msgs, a.shared = ts, 0, 0
    a.samples = {}
    if not is_async:
        a.runs.clear()
        a.ok_runs.clear()
        _async_withdraw(self, a, ts, "its steps are no longer one worker's each, or too few",
                        out)
        return
    if len(meds) >= MIN_RANKS:
        judged, need = _against_classes(a, meds, ses), WINDOWS
    else:
        judged = _against_own_pace(a, meds, ses, math.log1p(self.cfg.start_offset_max))
        need = SMALL_WINDOWS
    slow_at, clear_at = math.log(SLOW_RATIO), math.log(CLEAR_RATIO)
    for rank, (dev, z, basis) in judged.items():
        if dev >= slow_at and z >= SLOW_Z:
            a.ok_runs.pop(rank, None)
            run = a.runs[rank] = a.runs.get(rank, 0) + 1
            a.onset.setdefault(rank, ts - WINDOW_S)
            if run >= need and rank not in a.told:
                ratio = math.exp(dev)
                a.told[rank] = ratio
                _async_finding(self, a, rank, ts, True, min(0.95, 0.5 + (ratio - 1.0) * 3), {
                    "rank": rank, "asynchronous": True,
                    "compute_ratio_to_peers": round(ratio, 4),
                    "z": round(z, 2), "peers": len(meds) - 1,
                    "window_s": WINDOW_S, "windows": run, **basis}, out)
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


def _own_se(xs: list[float], m: float) -> float:
    """The standard error of a worker's window median ``m`` of its log busy times ``xs``: from
    its own steps' spread (MAD, floored at MAD_FLOOR), times the median's ~1.25 over a mean."""
    sigma = max(MAD_FLOOR, MAD_TO_SIGMA * median([abs(x - m) for x in xs]))
    return 1.2533 * sigma / math.sqrt(len(xs))


def _first_look(a: _Async, rank: int, over: float, se: float) -> tuple[float, float]:
    """The worker's standing at its first judged window on its node (kept; a worker moved to
    another node looks anew and leaves its class): ``(over, se)``."""
    where = a.where.get(rank)
    node = where[0] if where is not None else None
    f = a.first.get(rank)
    if f is None or f[0] != node:
        a.cls.pop(rank, None)
        a.off.pop(rank, None)
        if rank not in a.first and len(a.first) >= RANKS_KEPT:
            return over, se
        f = a.first[rank] = (node, over, se)
    return f[1], f[2]


def _against_classes(a: _Async, meds: dict[int, float],
                     ses: dict[int, float]) -> dict[int, tuple[float, float, dict]]:
    """Each worker's window median over its class's pace (detector.sku_class, as the
    synchronous path reads it: two or more whole nodes alike slower from their first look,
    under MAX_OFFSET, are another GPU model; a worker in no class is judged against the job's
    typical worker), in units of the workers' spread: rank -> ``(dev, z, evidence)``."""
    ranks = list(meds)
    m = np.fromiter((meds[r] for r in ranks), float, len(ranks))
    se = np.fromiter((ses[r] for r in ranks), float, len(ranks))
    nodes = [a.where[r][0] if r in a.where else None for r in ranks]
    prev = np.fromiter((a.off.get(r, 0.0) for r in ranks), float, len(ranks))
    over = m - float(np.median(m - prev))
    looks = [_first_look(a, r, float(over[i]), float(se[i])) for i, r in enumerate(ranks)]
    first = np.array([f[0] for f in looks])
    first_se = np.array([f[1] for f in looks])
    cls = np.fromiter((a.cls.get(r, -1) for r in ranks), np.int64, len(ranks))
    ready = np.ones(len(ranks), dtype=bool)
    off, known = sku_class.offsets(cls, over, se, ready)
    free = cls < 0
    if count_nonzero(free):
        found = sku_class.find(nodes, over - off, se, first, first_se, free, known)
        if found:
            for i, n in enumerate(nodes):
                if n in found and free[i] and len(a.cls) < RANKS_KEPT:
                    cls[i] = a.cls[ranks[i]] = found[n]
            off, known = sku_class.offsets(cls, over, se, ready)
        if _join_node_class(a, ranks, nodes, cls, over, se, first, first_se, known):
            off, _ = sku_class.offsets(cls, over, se, ready)
    adj = m - off
    dev = adj - float(np.median(adj))
    spread = max(MAD_FLOOR, MAD_TO_SIGMA * float(np.median(np.abs(dev))))
    judged: dict[int, tuple[float, float, dict]] = {}
    for i, r in enumerate(ranks):
        o = float(off[i])
        if o > 0.0:
            a.off[r] = o
        judged[r] = (float(dev[i]), float(dev[i]) / spread,
                     {"class_offset_ratio": round(math.exp(o), 4)} if o > 0.0 else {})
    return judged


def _join_node_class(a: _Async, ranks: list[int], nodes: list[str | None], cls: np.ndarray,
                     over: np.ndarray, se: np.ndarray, first: np.ndarray, first_se: np.ndarray,
                     known: dict[int, tuple[float, float]]) -> bool:
    """A worker in no class on a node whose other workers are one class's (added to the job
    later, or restarted there) joins it when it runs at their pace from its first look
    (sku_class.joins): a node joins a class whole, so it could not join with its node.
    Whether one joined."""
    joined = False
    of_node: dict[str, set[int]] = {}
    for i, n in enumerate(nodes):
        if n is not None and cls[i] >= 0:
            of_node.setdefault(n, set()).add(int(cls[i]))
    for i, n in enumerate(nodes):
        ks = of_node.get(n) if n is not None and cls[i] < 0 else None
        if ks is None or len(ks) != 1 or len(a.cls) >= RANKS_KEPT:
            continue
        k = next(iter(ks))
        if k in known and sku_class.joins(float(over[i]), float(se[i]), float(first[i]),
                                          float(first_se[i]), *known[k]):
            cls[i] = a.cls[ranks[i]] = k
            joined = True
    return joined


def _against_own_pace(a: _Async, meds: dict[int, float], ses: dict[int, float],
                      cap: float) -> dict[int, tuple[float, float, dict]]:
    """A few workers (MIN_SMALL to MIN_RANKS - 1): no referee to spread, so each worker's
    window median over the median of the others', less its own standing at its first look
    (a heavier shard, a slower GPU steady from the start: up to ``cap``, the synchronous path's
    start offset), in units of the standard errors of the three from their own steps: rank ->
    ``(dev, z, evidence)``."""
    judged: dict[int, tuple[float, float, dict]] = {}
    for r, m in meds.items():
        others = [v for q, v in meds.items() if q != r]
        ref = median(others)
        ref_se = median([ses[q] for q in meds if q != r])
        over = m - ref
        f, f_se = _first_look(a, r, over, ses[r])
        base = min(max(f, 0.0), cap)
        dev = over - base
        z = dev / math.hypot(ses[r], ref_se, f_se if base > 0.0 else 0.0)
        judged[r] = (dev, z, {"start_offset_ratio": round(math.exp(base), 4)} if base > 0.0
                     else {})
    return judged


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
