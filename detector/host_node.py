"""Every job on one node slowed by its host at once, jobs elsewhere not: the node's host.

A CPU-heavy neighbour (a co-located pipeline, a runaway agent, a stuck kernel thread) takes
CPU from every job on its node: each job's data loader and kernel-launch thread wait, so
each job's time in neither compute nor collectives rises there at once (detector.host_rise
tells the correlator a job's node risen: over the job's own past, or over its other nodes).
One job's rise is its own business -- its input pipeline, its data -- and a rise on every
node at once is something they share (a network file system stalling, the storage
cluster).  The node is the unit when ``MIN_JOBS`` different jobs have risen on it together
while, of the other nodes running jobs (at least ``MIN_OTHERS``), at most ``OTHERS_SHARE``
show a rise since shortly before (``WINDOW_S``): one escalation at the node, slow_node /
unknown -- DESIGN has no host cause, and no telemetry names the process; a human looks.

The decision waits ``HOLD_S`` after the rise that made the node's count, for the other
nodes' rises of a shared cause to come in (jobs of longer steps tell theirs later).

State is plain data kept by the correlator (detector.correlate): ``node -> job -> [onset
ts, ts told, excess ms, excess share, tenant]`` of the rises active now.

>>> from detector.alerts import Scope
>>> from detector.findings import Finding
>>> st = new_state()
>>> def rise(job, node, ts, up=True):
...     return note(st, Finding(ts, ts - 9, "host_rise", "slow_node", "unknown",
...                 Scope.of_node(node), up, False, 0.5, {"host_excess_ms": 250.0,
...                 "host_excess_share": 0.25}, job, "t"))
>>> rise("a", "n1", 100.0), rise("b", "n1", 101.0)      # the second job: decide at 131
(None, 131.0)
>>> f = decide(st, "n1", 131.0, {"n2", "n3", "n4"})
>>> f.scope.key, f.onset_ts, f.evidence["jobs_risen"]
('node:n1', 91.0, 2)
>>> _ = [rise(j, n, 102.0) for j, n in (("c", "n2"), ("d", "n3"))]
>>> decide(st, "n1", 132.0, {"n2", "n3", "n4"}) is None   # most nodes: a shared cause
True
"""

from __future__ import annotations

import math
from typing import Any

from detector.alerts import Scope
from detector.findings import Finding

MIN_JOBS = 2          # different jobs risen on the node together
MIN_OTHERS = 2        # other nodes running jobs, to tell the node from a shared cause
OTHERS_SHARE = 0.25   # at most this share of them risen too
WINDOW_S = 120.0      # their rises counted from this long before the node's first
HOLD_S = 30.0         # the decision waits this long after the node's count is made
MAX_NODES = 4096      # nodes with rises kept (the oldest-told forgotten first)
MAX_JOBS = 64         # rises kept a node
SEVERITY = 0.6


def new_state() -> dict[str, dict[str, list[Any]]]:
    """No rise known."""
    return {}


def check(state: Any) -> bool:
    """Whether restored state has the shape and bounds :func:`new_state` and :func:`note`
    give it."""
    return (type(state) is dict and len(state) <= MAX_NODES and all(
        type(n) is str and type(jobs) is dict and len(jobs) <= MAX_JOBS and all(
            type(j) is str and type(v) is list and len(v) == 5
            and all(type(x) in (int, float) and math.isfinite(x) for x in v[:4])
            and (v[4] is None or type(v[4]) is str) for j, v in jobs.items())
        for n, jobs in state.items()))


def _number(x: Any) -> float:
    return float(x) if type(x) in (int, float) and math.isfinite(x) else 0.0


def note(state: dict[str, dict[str, list[Any]]], f: Finding) -> float | None:
    """A job's ``host_rise`` on a node (risen or calm again); returns when to decide on the
    node (a rise that makes its count), else None."""
    node, job = f.scope.node, f.job
    if node is None or job is None:
        return None
    jobs = state.pop(node, {})
    if f.active:
        jobs.pop(job, None)
        if len(jobs) < MAX_JOBS:
            jobs[job] = [f.onset_ts, f.ts, _number(f.evidence.get("host_excess_ms")),
                         _number(f.evidence.get("host_excess_share")), f.tenant]
    else:
        jobs.pop(job, None)
    if jobs:
        state[node] = jobs  # (the most recently told last)
    while len(state) > MAX_NODES:
        del state[next(iter(state))]
    if f.active and len(jobs) >= MIN_JOBS and job in jobs:
        return f.ts + HOLD_S
    return None


def forget_job(state: dict[str, dict[str, list[Any]]], job: str) -> None:
    """A job gone (its layout forgotten): its rises with it."""
    for node in [n for n, jobs in state.items() if job in jobs]:
        del state[node][job]
        if not state[node]:
            del state[node]


def risen(state: dict[str, dict[str, list[Any]]], node: str) -> bool:
    """Whether any job has a rise on ``node`` now."""
    return bool(state.get(node))


def decide(state: dict[str, dict[str, list[Any]]], node: str, now: float,
           busy: set[str]) -> Finding | None:
    """The node's escalation, if its jobs' rises are the node's (``busy``: the nodes running
    jobs, as the correlator knows them); None if not (yet)."""
    jobs = state.get(node, {})
    if len(jobs) < MIN_JOBS:
        return None
    first = min(v[0] for v in jobs.values())
    others = busy - {node}
    elsewhere = sorted(n for n, js in state.items() if n != node
                       and any(v[0] >= first - WINDOW_S for v in js.values()))
    if len(others | set(elsewhere)) < MIN_OTHERS or (
            len(elsewhere) > OTHERS_SHARE * len(others | set(elsewhere))):
        return None
    tenants = {v[4] for v in jobs.values()}
    one = len(tenants) == 1
    # Another tenant's job ids are theirs (DESIGN: evidence never includes another tenant's
    # data): with jobs of several tenants they are told by their numbers alone.
    told = sorted(([j if one else "", round(v[0], 3), round(v[2], 1), round(v[3], 4)]
                   for j, v in jobs.items()), key=lambda x: x[1])
    n_other = len(others | set(elsewhere))
    return Finding(now, first, "host_node", "slow_node", "unknown", Scope.of_node(node), True,
                   True, SEVERITY, {
                       "jobs": told, "jobs_risen": len(jobs),
                       "other_nodes_risen": len(elsewhere), "other_nodes_busy": n_other,
                       "recommended_because": (
                           f"{len(jobs)} different jobs on {node} spend more time in neither "
                           "compute nor collectives (step_ms - compute_ms - comm_ms) at once, "
                           f"{round(max(v[2] for v in jobs.values()))} ms a step at most, while "
                           f"{len(elsewhere)} of {n_other} other nodes running jobs show no "
                           "such rise: the node's host (CPU, memory, its own processes), not "
                           "any one job"),
                       "ruled_out": (
                           "each job's own input pipeline (unrelated jobs changed together); "
                           "a shared cause such as a network file system (jobs elsewhere "
                           "unchanged)"),
                       "next_diagnostic": (
                           f"on {node}: `top -b -n 1 -o %CPU` and `pidstat -u 5 3` for a "
                           "process outside the jobs, the jobs' cgroup CPU throttling "
                           "(`cpu.stat` nr_throttled), `dmesg -T | grep -i lockup` for a stuck "
                           "kernel thread, `turbostat` for the CPU clocks"),
                   }, None, next(iter(tenants)) if one else None, None, escalate=True)
