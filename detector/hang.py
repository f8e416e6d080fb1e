"""A rank hung in its job: the job stops stepping, every GPU of it busy but one node's few.

A rank that deadlocks (its data loader, a host-side lock, a CUDA call that never returns)
never enters the next collective; every other rank of the job does, and waits there: NCCL's
kernels spin on the GPU (busy, full clock, 150-200 W) until the watchdog (10 min by default)
kills the job.  The hung rank's GPU has nothing queued: it idles.  So the job's silence of
many step periods while every GPU of it is busy but a few on one node names those few --
the one place to look (py-spy the rank's process, its host), which no record says (blind13
M1: a 48-rank job silent 216 s until the watchdog, 47 GPUs spinning, gr-01/1 idle; nothing
paged).  One escalation, ``unattributed``/``unknown``, at the idle GPU (several on one node:
the node), once the job's source tells it silent :data:`HANG_S` (and :data:`HANG_STEPS` step
periods) since its last step (detector.liveness._stops: a job that stepped again is not told).

Not a hang: a job that stops on purpose or ends (its GPUs idle together), a whole-job pause
(a checkpoint, an evaluation: every GPU busy or every one idle), idle GPUs spread over nodes
or half the job (no one place to name), a node whose idle GPUs its source does not tell (a
source before round 22), a node gone dark (:mod:`detector.liveness` pages that), a node
whose hardware is isolated already (a DBE's XID killed the rank: its cause is paged).  The wait
is long beside a step: a page a few minutes before the watchdog, not at once.
It resolves when the job's GPUs no longer show it (the job killed: all idle; resumed: all
busy).

hang23: a hung job's peers spin from its last step on, so a GPU of it that turned busy from
idle after its peers would have entered the collective is not one of them: the job ended
and other work took the GPU before its first step told its layout (blind8 held
scale-1k-s7).  The source looks every hang_s of silence (to :data:`LOOK_S`).  Rank 0 idle
alone is also rank 0 writing a checkpoint while every other rank waits in a barrier
(``torch.save`` on slow storage: minutes); no record says which (DESIGN has no host I/O),
so it is named after :data:`CKPT_S` -- a write that long holds the whole job and is worth
a look too, and a hang still pages well before the watchdog's default 10 min.  Which job a
GPU was laid out for last is by the layouts' event time (Placement.last_on), not the order
they reached the correlator.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from detector.alerts import ESCALATION, ISOLATION, Scope

if TYPE_CHECKING:
    from detector.alerts import Alert
    from detector.correlate import Correlator
    from detector.findings import Finding

HANG_S = 60.0      # the least silence of a job before a hung rank is named
HANG_STEPS = 20    # ... and this many of its step periods
LOOK_S = 900.0     # a silent job is looked at every hang_s until this long (the watchdog's
#                    10 min by default, and a margin)
CKPT_S = 300.0     # rank 0 idle alone: the least wait (a checkpoint rank 0 writes alone)
WOKE_SAMPLES = 1.5  # a GPU busy from idle (idle from busy) this many samples and a step
#                    after the job's last step: not a hung job's GPU (_moved_since)
MAX_NAMED = 8      # idle GPUs named in the evidence
MAX_HANGS = 4096   # jobs with a hung rank named, kept to resolve them (Correlator._hangs)


def check(hangs: Any) -> bool:
    """Whether a restored ``Correlator._hangs`` has the shape and bound :func:`on_long_stop`
    gives it (job -> [its scope, cluster])."""
    return type(hangs) is dict and len(hangs) <= MAX_HANGS and all(
        type(j) is str and type(v) is list and len(v) == 2 and type(v[0]) is Scope
        and (v[1] is None or type(v[1]) is str) for j, v in hangs.items())


def hang_s(period: Any) -> float:
    """How long a job with steps ``period`` apart is silent before a hung rank is named."""
    ok = type(period) in (float, int) and math.isfinite(period) and period > 0
    return max(HANG_S, HANG_STEPS * period) if ok else HANG_S


def look_due(period: Any, before: float, now: float) -> bool:
    """Whether a job with steps ``period`` apart, silent ``before`` s at its source's last
    scan and ``now`` s at this one, is due a look (detector.liveness._stops): every
    :func:`hang_s` of silence up to :data:`LOOK_S` (a job of long steps: once) -- rank 0
    idle alone is named only after :data:`CKPT_S` (:func:`on_long_stop`)."""
    h = hang_s(period)
    k = math.floor(min(now, max(LOOK_S, h)) / h)
    return k >= 1 and k * h > before


def _idle_few(corr: Correlator, job: str) -> tuple[str, list[int], int] | None:
    """(node, its idle GPUs, the job's GPUs) when every GPU of ``job`` is busy but a minority
    on one node; None otherwise (or when a node's idle GPUs are not told)."""
    seen = corr.seen
    place = corr._placement
    gpus = {(hw[0], hw[1]) for hw in place.ranks.get(job, {}).values()}
    if len(gpus) < 2:
        return None
    if any(place.last_on(*hw) not in (None, job) for hw in gpus):
        return None  # (a GPU of it laid out for another job since: it ended, its GPUs reused)
    idle: set[tuple[str, int]] = set()
    for node, gpu in gpus:
        if seen is not None and not seen(node, "thermal"):
            return None  # (its GPUs not seen: nothing to say)
        state = corr.gpu_idle(node, gpu)
        if state is None:
            return None  # (busy, its idle GPUs not told)
        if state:
            idle.add((node, gpu))
    nodes = {n for n, _ in idle}
    if len(nodes) != 1 or 2 * len(idle) >= len(gpus):
        return None
    node = nodes.pop()
    return node, sorted(g for _, g in idle), len(gpus)


def on_long_stop(corr: Correlator, stop: Finding, out: list[Alert]) -> None:
    """A job silent :func:`hang_s` (its source's word, detector.liveness._stops: it has not
    stepped since): its hung rank named, if its GPUs show one."""
    from detector.liveness import _dark
    job, t, due = stop.job, stop.evidence.get("last_step_ts"), stop.ts
    if job is None or not (type(t) in (float, int) and math.isfinite(t)):
        return
    period = stop.evidence.get("step_period_s")
    if not (type(period) in (float, int) and math.isfinite(period) and period > 0):
        return  # (its pace never measured -- a job of a few steps, ended: no cadence broken)
    if job in corr._hangs:
        return  # (named at an earlier look)
    found = _idle_few(corr, job) if len(corr._hangs) < MAX_HANGS else None
    if found is None:
        return
    node, idle, total = found
    if _moved_since(corr, job, t, period):
        return  # (GPUs of it woke or idled after its last step: not a hung job's)
    rank0 = _rank0_alone(corr, job, node, idle)
    need = max(hang_s(period), CKPT_S) if rank0 else hang_s(period)
    if rank0 and due - t < need - 0.01:  # (the last step's time is told to the ms)
        return  # (rank 0 alone, not yet a checkpoint's length: the next look)
    if any(_dark(corr, hw[0]) for hw in corr._placement.ranks.get(job, {}).values()):
        return  # a node gone dark: liveness's page
    if any(p.status == "firing" and p.topic == ISOLATION and p.kind == "hardware"
           and p.scope.node == node for p in corr.problems.values()):
        # Its node's hardware isolated already (a DBE's XID killed the rank): that is the
        # cause.  (A slowdown's isolation is not: a rank hung on a GPU isolated for its pace
        # is news -- blind13 grow-s2, gr-05/7 throttled, then its loader hung.)
        return
    scope = Scope.of_gpu(node, idle[0]) if len(idle) == 1 else Scope.of_node(node)
    where = f"{node} GPU {idle[0]}" if len(idle) == 1 else f"{node} GPUs {idle[:MAX_NAMED]}"
    ckpt = (f"; rank 0 writing a checkpoint alone holds its peers in a barrier too, but not "
            f"for {need:.0f} s: if its log says it is saving, its storage is the problem"
            ) if rank0 else ""
    extra: dict[str, Any] = {
        "job_silent_s": round(due - t, 1), "last_step_ts": round(t, 3),
        "step_period_s": stop.evidence.get("step_period_s"),
        "idle_gpus": {node: idle[:MAX_NAMED]}, "job_gpus": total,
        "job_gpus_busy": total - len(idle),
        "recommended_because": (
            f"{job} has not stepped for {due - t:.0f} s while {total - len(idle)} of its "
            f"{total} GPUs stay busy (its ranks waiting in a collective) and {where} idles: "
            "a rank hung outside the collective (data loader, host-side lock, a call that "
            f"never returns); NCCL's watchdog will kill the job{ckpt}"),
        "next_diagnostic": (
            f"py-spy dump the rank on {where} (its Python stack), its host's dmesg and "
            "load; restart the job from its last checkpoint without waiting for the watchdog"),
    }
    summary = stop._replace(ts=due, scope=scope, kind="unattributed", cause="unknown",
                            severity=0.5)
    corr._raise(ESCALATION, "unattributed", "unknown", scope, summary, out, detected_ts=due,
                extra=extra, own=False)
    corr._hangs[job] = [scope, stop.cluster]


def _moved_since(corr: Correlator, job: str, last: float, period: float) -> bool:
    """Whether a GPU of ``job`` turned busy from idle, or idle from busy, later than its
    ranks would all have settled after its last step (a step, and WOKE_SAMPLES samples of
    its GPU: one sampled idle in the gap between steps is a peer; the hung rank's own work
    drains within a step).  A hung job's GPUs hold still from its last step on -- its peers
    spin, its hung rank idles -- until the watchdog kills it.  A GPU idle after it and busy
    again was let go -- the job ended -- and taken by other work whose layout is not told
    yet (blind8 held scale-1k-s7: ft-4d18d1's four GPUs idle 60 s, then the next job's first
    step, three sampled busy before the fourth), or by work no step source reports.  A GPU
    busy after it and idle since was a peer that spun, let go: the job killed or ended, and
    its GPUs still told busy only sampled before that (blind2 superpod eval-sweep: 120 s
    silent, its GPUs spinning, the watchdog's kill; su1-dgx13 sampled idle 4 s after it, the
    other nodes' last samples, busy, up to 30 s older).  (A whole-job pause then a hang in the
    first step after it looks the same: not named -- nothing says those GPUs are its ranks'.)"""
    for node, gpu, _ in corr._placement.ranks.get(job, {}).values():
        since = corr.busy_since(node, gpu)
        if since is None:
            since = corr.idle_since(node, gpu)
        if since is not None and since > last + period + WOKE_SAMPLES * (
                corr._interval.get(node, (0.0, 0.0))[0] or corr.cfg.unknown_cadence_s):
            return True
    return False


def _rank0_alone(corr: Correlator, job: str, node: str, idle: list[int]) -> bool:
    """Whether the one idle GPU is the job's rank 0's: the rank that writes a checkpoint
    alone by convention (``torch.save`` under ``if rank == 0``) while every other rank waits
    in a barrier -- its GPU idle, theirs spinning, as in a hang, for as long as the write."""
    hw = corr._placement.ranks.get(job, {}).get(0)
    return len(idle) == 1 and hw is not None and (hw[0], hw[1]) == (node, idle[0])


def on_gpus_busy(corr: Correlator, node: str, ts: float) -> None:
    """A node's busy/idle GPUs changed: a hung rank named on a job with GPUs there resolves
    once the job's GPUs no longer show it (killed: all idle; resumed: all busy).  Only the
    jobs laid out on ``node`` are looked at (a busy/idle change is told at every job start
    and end: with thousands of hangs named, every hung job's every rank looked at, each
    time, made it quadratic -- review23: 277 s of CPU for 20,000 forged hangs)."""
    hangs = corr._hangs
    for job in {j for j, _ in corr._placement.on_node.get(node, ())}:
        if job in hangs and _idle_few(corr, job) is None:
            _resolve(corr, job, ts)


def on_job_gone(corr: Correlator, job: str, ts: float) -> None:
    """A job's layout forgotten (it ended): its hung rank named, if any, resolves."""
    if job in corr._hangs:
        _resolve(corr, job, ts)


def _resolve(corr: Correlator, job: str, ts: float) -> None:
    scope, cluster = corr._hangs.pop(job)
    p = corr.problems.get(corr.dedup_key(ESCALATION, "unattributed", scope, cluster))
    if p is not None and p.status == "firing":
        p.extra["resolved_because"] = f"{job}'s GPUs no longer show one rank hung"
        corr._schedule_resolve(p, ts)
