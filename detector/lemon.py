"""A GPU that fails job after job: what no one job can pin on a GPU, several jobs can.

Within one job some trouble names no GPU.  An XID the catalogue calls the application's
(13, 31, 43: DESIGN.md, "evidence, not a verdict") is, once, the job's own bug.  A job of two
data-parallel replicas whose one replica computes slower cannot say which of that
replica's GPUs it is, nor (a vote of two) that it is a GPU at all: its tensor-parallel
partner waits in the TP all-reduce and reports the same ``compute_ms`` (detector.steps,
``replica_split``).  Across jobs the same GPU can be the one: gpud sends a GPU whose XID
keeps coming after two reboots to hardware inspection, NVIDIA's catalogue says "app + HW
inspect" for XID 31, and Meta's clusters find "lemon" nodes this way (REFERENCE.md).

This module is that memory, plain data kept by the :class:`~detector.correlate.Correlator`
(so a replay and the service share it, and a snapshot holds it as lists and dicts).  A
*strike* is one job's trouble on one GPU: an application XID under that job (the job the
correlator's placement last saw on the GPU), or the GPU in a job's slow replica.  A GPU
with strikes from ``XID_JOBS`` different jobs (``SLOW_JOBS`` for slow replicas) within
``WINDOW_S`` is escalated once, with the jobs, XIDs and times as evidence: a human decides.

Not a strike: a job whose application XIDs hit two or more of its GPUs (the application,
not a GPU -- its earlier strikes are withdrawn too); a job counted again (a restart under
the same job id is one job); XID 45 (preemptive cleanup: the consequence of another XID);
a GPU no job's placement puts there (a record naming a GPU never seen grows nothing).

Why these numbers:

- ``XID_JOBS = 3``: gpud's ``DefaultRebootThreshold`` is 2 -- the same XID after two
  restarts goes to inspection on the third.  Application page faults are common (a user's
  bug, resubmitted once, lands on the same slot), so two jobs is not yet a GPU.
- ``SLOW_JOBS = 2``: a replica 12 % or more slower than its one peer for a minute or more is
  rare in a healthy job (per-GPU spread is +-3 %, sequence-length imbalance averages out);
  the same GPU in the slow replica of two different jobs is not the workload's.
- ``WINDOW_S = 6 h``: the contract has no maintenance field, so nothing tells a repaired
  or swapped GPU (same node and index) from the lemon it replaced.  A pool job lasts
  minutes, a large job fails every few hours at scale (Llama 3: one interruption every
  ~3 h on 16k GPUs), so three strikes of one GPU fall within hours; memory of days would
  blame a GPU replaced in between.

>>> from detector.alerts import Scope
>>> from detector.findings import Finding
>>> st = new_state()
>>> def xid(ts, job):
...     f = Finding(ts, ts, "app_xid", "hardware", "software", Scope.of_gpu("n1", 6), True,
...                 False, 0.3, {"xid": 31})
...     return on_app_xid(st, f, job)
>>> xid(100.0, "a"), xid(400.0, "b")
([], [])
>>> [e.scope.key for e in xid(700.0, "c")]
['gpu:n1/6']
>>> xid(705.0, "c")     # the same job again: no new strike
[]
"""

from __future__ import annotations

import math
from typing import Any

from detector.alerts import Scope
from detector.findings import Finding

STRIKE_XIDS = frozenset({13, 31, 43})  # the application's XIDs a lemon raises (not 45)
XID_JOBS = 3
SLOW_JOBS = 2
WINDOW_S = 6 * 3600.0
MAX_GPUS = 4096        # GPUs remembered (the least recently struck forgotten first)
MAX_STRIKES = 8        # strikes kept a GPU (the latest)
MAX_JOBS = 4096        # jobs whose XID'd GPUs are remembered (to tell the application)
MAX_REPLICA_GPUS = 8   # a slow replica of more GPUs is not one GPU's trouble (not kept)


def new_state() -> dict[str, Any]:
    """Empty memory: ``gpus`` unit key -> strikes ``[what, job, ts, detail, tenant]`` (oldest
    first; what: "xid" or "slow"); ``xid_jobs`` job -> {unit key: ts} of its strike XIDs."""
    return {"gpus": {}, "xid_jobs": {}}


def check(state: Any) -> bool:
    """Whether restored memory has the shape and bounds :func:`new_state` makes."""
    if type(state) is not dict or set(state) != {"gpus", "xid_jobs"}:
        return False
    gpus, jobs = state["gpus"], state["xid_jobs"]
    if type(gpus) is not dict or type(jobs) is not dict:
        return False
    if len(gpus) > MAX_GPUS or len(jobs) > MAX_JOBS:
        return False
    for unit, strikes in gpus.items():
        if type(unit) is not str or type(strikes) is not list or len(strikes) > MAX_STRIKES:
            return False
        for s in strikes:
            if not (type(s) is list and len(s) == 5 and s[0] in ("xid", "slow")
                    and type(s[1]) is str and type(s[2]) in (float, int) and math.isfinite(s[2])
                    and type(s[3]) in (float, int) and (s[4] is None or type(s[4]) is str)):
                return False
    return all(type(j) is str and type(g) is dict and len(g) <= 2
               and all(type(u) is str and type(t) in (float, int) for u, t in g.items())
               for j, g in jobs.items())


def on_app_xid(state: dict[str, Any], f: Finding, job: str | None) -> list[Finding]:
    """An application XID on ``f.scope``'s GPU under ``job``: the escalation it completes
    (one, or none)."""
    code = f.evidence.get("xid")
    if job is None or f.scope.level != "gpu" or type(code) is not int or code not in STRIKE_XIDS:
        return []
    unit = f.scope.key
    jobs = state["xid_jobs"]
    hit = jobs.pop(job, None) or {}
    if unit not in hit and len(hit) < 2:
        hit[unit] = f.ts
    jobs[job] = hit  # (the newest last)
    while len(jobs) > MAX_JOBS:
        del jobs[next(iter(jobs))]
    if len(hit) > 1:
        # One job's application XIDs on two of its GPUs: the application's, on every GPU.
        for u in hit:
            strikes = state["gpus"].get(u)
            if strikes is not None:
                strikes[:] = [s for s in strikes if not (s[0] == "xid" and s[1] == job)]
        return []
    if not _strike(state, unit, ["xid", job, f.ts, code, f.tenant]):
        return []
    return _escalation(state, [unit], f, "xid", XID_JOBS)


def on_split(state: dict[str, Any], f: Finding, layout: dict[int, tuple[str, int, int]] | None
             ) -> list[Finding]:
    """A job's slow replica (``replica_split``, naming its GPUs): the escalation it
    completes.  Only GPUs the job's placement (``layout``: rank -> node, GPU, replica) has
    count: a finding naming others grows nothing."""
    named = f.evidence.get("replica_gpus")
    ratio = f.evidence.get("compute_ratio_to_peers")
    if f.job is None or not layout or type(named) is not list or len(named) > MAX_REPLICA_GPUS:
        return []
    ratio = float(ratio) if type(ratio) in (float, int) and math.isfinite(ratio) else 0.0
    placed = {(n, g) for n, g, _ in layout.values()}
    units = []
    for item in named:
        if (type(item) is list and len(item) == 2 and type(item[0]) is str
                and type(item[1]) is int and (item[0], item[1]) in placed):
            units.append(Scope.of_gpu(item[0], item[1]).key)
    new = [u for u in dict.fromkeys(units)
           if _strike(state, u, ["slow", f.job, f.ts, round(ratio, 3), f.tenant])]
    if not new:
        return []
    return _escalation(state, list(dict.fromkeys(units)), f, "slow", SLOW_JOBS)


def _strike(state: dict[str, Any], unit: str, strike: list[Any]) -> bool:
    """Remember ``strike`` on ``unit``; False when that job already struck it so."""
    gpus = state["gpus"]
    strikes = gpus.pop(unit, None) or []
    what, job, ts = strike[0], strike[1], strike[2]
    strikes = [s for s in strikes if s[2] >= ts - WINDOW_S]
    fresh = not any(s[0] == what and s[1] == job for s in strikes)
    if fresh:
        strikes.append(strike)
        del strikes[:-MAX_STRIKES]
    if strikes:
        gpus[unit] = strikes  # (the most recently struck last)
    while len(gpus) > MAX_GPUS:
        del gpus[next(iter(gpus))]
    return fresh


def _escalation(state: dict[str, Any], units: list[str], f: Finding, what: str, need: int
                ) -> list[Finding]:
    """The escalation of the GPUs among ``units`` struck by ``need`` jobs or more: one GPU
    at its own scope; several on one node (a replica's TP pair in every slow replica --
    the jobs put the same ranks there) at the node's; none else."""
    gpus = state["gpus"]
    lemons = []
    for unit in units:
        strikes = [s for s in gpus.get(unit, ()) if s[0] == what]
        if len({s[1] for s in strikes}) >= need:
            lemons.append((unit, strikes))
    if not lemons:
        return []
    scopes = [_gpu_scope(u) for u, _ in lemons]
    nodes = {s.node for s in scopes}
    if len(nodes) != 1:
        return []  # (a slow replica across nodes: no one unit holds it)
    scope = scopes[0] if len(scopes) == 1 else Scope.of_node(scopes[0].node)  # type: ignore[arg-type]
    strikes = lemons[0][1]
    tenants = {s[4] for s in strikes if s[4] is not None}
    tenant = next(iter(tenants)) if len(tenants) == 1 else None
    # Another tenant's job ids are theirs (DESIGN: evidence never includes another tenant's
    # data): with strikes of several tenants the jobs are told by time alone.
    jobs = [[s[1] if len(tenants) <= 1 else "", round(s[2], 3), s[3]] for s in strikes]
    where = (f"GPU {scope.gpu} on {scope.node}" if scope.level == "gpu" else
             f"GPUs {', '.join(str(s.gpu) for s in scopes)} on {scope.node}")
    if what == "xid":
        kind, cause = "hardware", "gpu_hardware"
        because = (f"application XIDs ({', '.join(sorted({str(s[3]) for s in strikes}))}) on "
                   f"{where} under {len(strikes)} different jobs within {WINDOW_S / 3600:g} h, "
                   "each on this GPU alone: one is the application's, the repetition is the "
                   "GPU's (gpud: XID 31 = app + HW inspect)")
        diag = (f"hardware inspection of {where}: `dcgmi diag -r 3` (memory tests) and "
                f"`nvidia-bug-report.sh` on {scope.node}; keep new jobs off the GPU meanwhile")
        ruled = "one job's own bug: each job's XID hit this GPU alone, and the jobs differ"
    else:
        kind, cause = "slow_node", "unknown"
        because = (f"{where} in the slow replica of {len(strikes)} different two-replica jobs "
                   f"within {WINDOW_S / 3600:g} h (compute up to "
                   f"{max(float(s[3]) for s in strikes):.2f}x the other replica's): one job "
                   "cannot tell which GPU of its replica, the jobs together can")
        diag = (f"`dcgmi diag -r 3` on {scope.node}, then a single-GPU GEMM benchmark on "
                f"{where} against its node's other GPUs")
        ruled = ("the workload: the other replica of every job ran at its pace; "
                 "within one job the replica's TP partner waits with the same compute_ms")
    first = min(s[2] for s in strikes)
    return [Finding(f.ts, first, "lemon", kind, cause, scope, True, True, 0.6, {
        "jobs": jobs, "gpus": [s.key for s in scopes], "window_s": WINDOW_S,
        "recommended_because": because, "next_diagnostic": diag, "ruled_out": ruled},
        None, tenant, f.cluster, escalate=True)]


def _gpu_scope(unit: str) -> Scope:
    """The GPU scope of a unit key ``gpu:NODE/INDEX`` (as Scope.key writes it)."""
    node, _, index = unit[len("gpu:"):].rpartition("/")
    return Scope.of_gpu(node, int(index))
