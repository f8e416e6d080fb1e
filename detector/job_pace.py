"""A job's compute time stepping up on every rank alike (``job_pace``, evidence).

Under overlapped communication (FSDP with prefetch, TP comm overlap, DP buckets reduced
inside backward) a rank's wait for its slowest peer is timed inside its ``compute_ms``: one
GPU running a fifth slower makes *every* rank's ``compute_ms`` rise alike and no rank is
slower than its peers (blind16 P1: 64 ranks pure DP, 1735 -> ~2170 ms each, the slow rank
0.9 % above the rest).  What is left of the straggler in the step messages is the job's own
step change; the job monitor tells it, and the correlator weighs it with the one GPU of the
job whose clock fell at that moment (Correlator._pace_clock).  Without overlap the same
fault leaves the ranks' median compute where it was (the slow rank's own rises; its peers'
wait goes to ``comm_ms``), so this says nothing there.

Evidence only: a job's compute stepping up alike is also a new phase of its work, a longer
sequence, a storage slowdown timed as compute -- it pages nothing on its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import islice
from typing import TYPE_CHECKING, Any

from detector.alerts import ESCALATION, ISOLATION, Scope
from detector.findings import Finding, keep_by_job
from detector.playbook import clock_diagnostic

if TYPE_CHECKING:
    from detector.alerts import Alert
    from detector.correlate import Correlator

# A busy GPU's clock this share below its job's other GPUs' with no clock-event reason runs
# at a clock held by a setting (held_below; here and Correlator._held_clock): 10 %, twice the
# step between an H100's boost clock and its clock under a routine SW power cap (1980 -> ~1900).
CLOCK_HELD = 0.10

RISE = 0.10      # the ranks' median compute this share over its usual: a step up ...
STEPS = 3        # ... on this many steps in a row (a lone slow step -- a save -- is no step)
LEARN = 0.05     # the usual's smoothing, on steps under the rise
MIN_RANKS = 4    # ranks a step needs for its median to say the job's
HOLD = 300       # steps a told step up lasts at most: then it is the job's usual
# [usual median compute_ms (0: none yet), steps over it in a row, the first one's time,
#  told (0/1), steps back under half the rise in a row]
BASE, RUN, SINCE, TOLD, BACK = range(5)


def median_clock(clocks: Iterable[float]) -> float:
    """The (upper) median of busy clocks told: a job's GPUs' reference, or a group's own --
    one rule for a GPU paged here and a slow rank's held clock (Correlator._held_clock)."""
    told = sorted(clocks)
    return told[len(told) // 2]


def held_below(clock: float, ref: float) -> bool:
    """Whether a busy clock with no clock-event reason is held CLOCK_HELD or more below the
    median ``ref`` of its job's other GPUs (a setting's: locked or application clocks)."""
    return clock <= (1.0 - CLOCK_HELD) * ref


def new_state() -> list[float]:
    return [0.0, 0.0, 0.0, 0.0, 0.0]


def check(st: Any) -> bool:
    """Whether a restored state has :func:`new_state`'s shape (finite numbers)."""
    return type(st) is list and len(st) == 5 and all(
        type(x) is float and math.isfinite(x) for x in st) and st[BASE] >= 0.0


def step(st: list[float], med: float, ts: float, warm: bool) -> bool | None:
    """Take one decided step's median ``compute_ms``: True when the job's compute has just
    stepped up (tell it), False when a told step up has just gone, None otherwise.  ``warm``:
    the job is past its warm-up (before it, the usual is only learnt)."""
    if not (math.isfinite(med) and med > 0.0):
        return None
    base = st[BASE]
    if base <= 0.0 or not warm:
        st[BASE] = med if base <= 0.0 else base + 0.5 * (med - base)
        return None
    if st[TOLD]:
        st[RUN] += 1.0
        st[BACK] = st[BACK] + 1.0 if med < (1.0 + 0.5 * RISE) * base else 0.0
        if st[BACK] >= STEPS or st[RUN] >= HOLD:
            if st[RUN] >= HOLD:
                st[BASE] = med  # (a new usual: a lasting change of the job's work)
            st[TOLD] = st[RUN] = st[BACK] = 0.0
            return False
        return None
    if med < (1.0 + RISE) * base:
        st[RUN] = 0.0
        st[BASE] = base + LEARN * (med - base)
        return None
    if not st[RUN]:
        st[SINCE] = float(ts)
    st[RUN] += 1.0
    if st[RUN] >= STEPS:
        st[TOLD], st[BACK] = 1.0, 0.0
        return True
    return None


def finding(st: list[float], med: float, ts: float, active: bool, job: str,
            tenant: str | None, cluster: str | None) -> Finding:
    base = st[BASE]
    return Finding(ts, st[SINCE] if active else ts, "job_pace", "slow_node", "unknown",
                   Scope.of_job(job), active, False, 0.0,
                   {"compute_ms": round(med, 3), "usual_compute_ms": round(base, 3),
                    "ratio": round(med / base, 4) if base > 0.0 else None}, job, tenant, cluster)


# -- the correlator's side ---------------------------------------------------------------
# A job's compute stepping up alike (``job_pace``) pages at the one GPU of the job slowed at
# that moment: its busy clock fallen with no clock-event reason (detector.throttle's
# ``sm_clock``) CLOCK_HELD or more below the job's other GPUs' -- an escalation, cause
# unknown -- or a SW power cap (0x4 alone) holding its clock ``cap_clock_drop`` or more below
# its own baseline -- a power isolation (blind16 P2: a power limit left at ~440 W, found by
# the sustained-cap rule only, 140-360 s late).  The job's step change is that GPU's
# slowness shown by every rank.  Lone: no other GPU of the job throttled nor low (a fleet's
# or a rack's power capping caps many at once: routine, paged by nobody here).  Coincident:
# the GPU's change told within NEAR_S of the step up (a GPU held low from the job's start is
# _held_clock's, with a slow rank).  Decided HOLD_S after the GPU's change was seen: the
# job's other GPUs' samples of that poll arrive too.
NEAR_S = 60.0
HOLD_S = 15.0
PEERS = 4           # GPUs of the job with a reasonless clock told, besides the slowed one
MAX_PACES = 1024    # jobs' step ups kept (the oldest dropped first)
# A GPU's clock or throttle finding looks at its stepped-up jobs' GPUs at most once a LOOK_S a
# job; one coming sooner sets a look for then (review26: a clock change told on every GPU of
# a 4,096-GPU job that stepped up -- a fleet's clock lowered -- read the job's 4,096 GPUs once
# a finding, 16.8 M reads and 32 s of CPU in one poll).  Under HOLD_S: the page's time is the
# hold's, its own timer, unless a finding after the hold changes the verdict (<= LOOK_S later).
LOOK_S = 1.0
_THROTTLED = ("throttle_seen", "power_cap", "throttle_minor", "throttle", "hot")


def check_restored(corr: Any) -> str | None:
    """The first of a restored correlator's fields this module reads that is malformed
    (None: all sound): ``_paces`` / ``_pace_paged`` maps of job -> a Finding of times and an
    evidence map (at most MAX_PACES), ``_clocks`` GPU -> (clock MHz, ts) of finite floats
    (review26: each restored as any type, read on a GPU's next clock finding)."""
    for name in ("_paces", "_pace_paged"):
        kept = getattr(corr, name, None)
        if not (type(kept) is dict and len(kept) <= MAX_PACES and all(
                type(j) is str and _sound(f) for j, f in kept.items())):
            return name
    look = getattr(corr, "_pace_look", None)
    if not (type(look) is dict and len(look) <= MAX_PACES and all(
            type(j) is str and type(v) is tuple and len(v) == 2 and type(v[0]) is float
            and math.isfinite(v[0]) and type(v[1]) is bool for j, v in look.items())):
        return "_pace_look"
    clocks = getattr(corr, "_clocks", None)
    if not (type(clocks) is dict and all(
            type(k) is str and type(v) is tuple and len(v) == 2
            and all(type(x) is float and math.isfinite(x) for x in v)
            for k, v in clocks.items())):
        return "_clocks"
    return None


def _sound(f: Any) -> bool:
    return (type(f) is Finding and type(f.scope) is Scope and type(f.evidence) is dict
            and all(type(t) in (float, int) and math.isfinite(t) for t in (f.ts, f.onset_ts))
            and all(x is None or type(x) is str for x in (f.job, f.tenant, f.cluster)))


def on_pace(corr: Correlator, f: Finding, out: list[Alert]) -> None:
    """A job's ``job_pace`` finding: kept while active; page its GPU (:func:`_page`)."""
    job = keep_by_job(corr._paces, f, MAX_PACES)
    corr._pace_look.pop(job, None)
    if f.active:
        _page(corr, job, f.ts, out)
    else:
        _clear(corr, job, f.ts, out)


def on_gpu(corr: Correlator, f: Finding, out: list[Alert]) -> None:
    """A GPU's busy reasonless clock told (``sm_clock``) or its throttle seen: the jobs on it
    with a step up."""
    node, gpu = f.scope.node, f.scope.gpu
    if not corr._paces or node is None or gpu is None:
        return
    jobs = sorted({job for (job, _), (g, _) in corr._placement.on_node.get(node, {}).items()
                   if g == gpu and job in corr._paces})
    look = corr._pace_look
    for job in jobs:
        nxt, set_ = look.get(job, (-math.inf, False))
        if f.ts < nxt:  # (looked within LOOK_S: one look at nxt sees this finding too)
            if not set_:
                look[job] = (nxt, True)
                corr._timer(nxt, "pace", job)
            continue
        if job not in look and len(look) >= MAX_PACES:  # (jobs _paces dropped: theirs go)
            for gone in [j for j in look if j not in corr._paces]:
                del look[gone]
        look[job] = (f.ts + LOOK_S, False)
        _page(corr, job, f.ts, out)


def on_due(corr: Correlator, job: str, due: float, out: list[Alert]) -> None:
    """The hold for a job's slowed GPU is over, or a look set by :func:`on_gpu` is due (the
    correlator's ``pace`` timer)."""
    if job in corr._pace_look:
        corr._pace_look[job] = (due + LOOK_S, False)
    _page(corr, job, due, out)


def on_job_gone(corr: Correlator, job: str, ts: float, out: list[Alert]) -> None:
    corr._paces.pop(job, None)
    corr._pace_look.pop(job, None)
    _clear(corr, job, ts, out)


def _clear(corr: Correlator, job: str, ts: float, out: list[Alert]) -> None:
    g = corr._pace_paged.pop(job, None)
    if g is not None and g.signal == "job_pace":
        corr._cleared(g._replace(ts=max(ts, g.ts), active=False), out)


def _capped(f: Finding, deep: float) -> bool:
    return f.evidence.get("throttle_reasons") == hex(0x4) and float(
        f.evidence.get("clock_drop") or 0.0) >= deep


def _page(corr: Correlator, job: str, now: float, out: list[Alert]) -> None:
    pace = corr._paces.get(job)
    ranks = corr._placement.ranks.get(job)
    if pace is None or not ranks or job in corr._pace_paged:
        return
    told: list[tuple[float, float, str, int]] = []
    caps: list[tuple[Finding, str, int]] = []
    throttled = 0
    for node, gpu in sorted({(node, gpu) for node, gpu, _ in islice(ranks.values(), 4096)}):
        key = Scope.of_gpu(node, gpu).key
        signals = corr._device.get(key, {})
        seen = next((signals[s] for s in _THROTTLED if s in signals), None)
        if seen is not None:
            throttled += 1
            if throttled > 1:
                return  # (two of its GPUs throttled: a fleet's or rack's capping, below)
            cap = signals.get("power_cap") or signals.get("throttle_seen")
            if cap is not None and _capped(cap, corr.cfg.cap_clock_drop):
                caps.append((cap, node, gpu))
            continue
        c = corr._clocks.get(key)
        if c is not None:
            told.append((c[0], c[1], node, gpu))
    if len(told) < PEERS or throttled > 1:
        return
    ref = median_clock(c[0] for c in told)
    low = [c for c in told if held_below(c[0], ref)]
    if len(low) + len(caps) != 1 or throttled != len(caps):
        return
    if caps:
        cap, node, gpu = caps[0]
        since = cap.onset_ts if cap.signal == "power_cap" else cap.ts
    else:
        cap, (_, since, node, gpu) = None, low[0]
    if not pace.onset_ts - NEAR_S <= since <= pace.onset_ts + NEAR_S:
        return
    if now < since + HOLD_S:
        corr._timer(since + HOLD_S, "pace", job)  # (the poll's other samples first)
        return
    scope = Scope.of_gpu(node, gpu)
    for topic, kind in ((ESCALATION, "slow_node"), (ISOLATION, "slow_node")):
        for unit in (scope, Scope.of_node(node)):
            p = corr.problems.get(corr.dedup_key(topic, kind, unit, pace.cluster))
            if p is not None and p.status == "firing":
                return  # (paged already: its slow ranks' page, its throttle's)
    step = (f"every rank of {job} stepped up alike ({pace.evidence.get('usual_compute_ms')} "
            f"-> {pace.evidence.get('compute_ms')} ms compute: its waits timed inside compute)")
    if cap is not None:
        drop = float(cap.evidence.get("clock_drop") or 0.0)
        corr._raise(ISOLATION, "slow_node", "power", scope, cap, out, detected_ts=now, extra={
            "recommended_because": (
                f"impact: {step} as {scope.key} alone of the job's GPUs came under a SW power "
                f"cap holding its clock {drop:.1%} below its baseline: the job runs at that "
                "GPU's pace")})
        _keep_paged(corr, job, cap, now, out)
        return
    clock = low[0][0]
    ev = dict(pace.evidence)
    ev.update(sm_clock_mhz=clock, clock_told_ts=since, peers_median_mhz=ref,
              peers_told=len(told) - 1, throttle_reasons="0x0")
    g = Finding(now, min(since, pace.onset_ts), "job_pace", "slow_node", "unknown", scope,
                True, True, 0.5, ev, job, pace.tenant, pace.cluster)
    why = (f"{step} as {scope.key}'s busy SM clock fell to {clock:g} MHz with no clock-event "
           f"reason, {1.0 - clock / ref:.0%} below the job's other GPUs (median {ref:g} MHz of "
           f"{len(told) - 1}): the job runs at that GPU's pace")
    extra = {"ruled_out": [why, *corr._ruled_out(g)],
             "next_diagnostic": clock_diagnostic(scope, clock),
             "sm_clock": {"sm_clock_mhz": clock, "gpus_told": 1, "peers_median_mhz": ref,
                          "peers_told": len(told) - 1, "throttle_reasons": "0x0"}}
    corr._raise(ESCALATION, "slow_node", "unknown", scope, g, out, detected_ts=now, extra=extra)
    _keep_paged(corr, job, g, now, out)


def _keep_paged(corr: Correlator, job: str, g: Finding, now: float, out: list[Alert]) -> None:
    """Keep ``g`` as the page made for ``job``'s step up: at most MAX_PACES jobs' (the oldest
    page resolved first -- a bound, as on _paces, that check_restored holds a snapshot to)."""
    while len(corr._pace_paged) >= MAX_PACES:
        _clear(corr, next(iter(corr._pace_paged)), now, out)
    corr._pace_paged[job] = g
