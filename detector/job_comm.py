"""A job waiting in its collectives: its ranks' comm time up together against its own past.

:mod:`detector.steps` compares a rank with its peers, so a job whose every rank waits alike
-- its traffic stuck behind another tenant's on a shared leaf (blind7 G2: every rank's
comm_ms x1.30-1.45) -- cancels out there.  Here each job's comm_ms is binned (``comm_bin_s``
of event time), each bin's median compared with the median of the job's previous calm bins
(``comm_base_bins`` to ``comm_hist_bins`` of them); a bin ``comm_wait_ratio`` times that or
more raises ``comm_wait`` evidence on the job (never a verdict: a job's comm time moves with
its own work too -- an evaluation, a checkpoint); the next calm bin clears it.  The
correlator joins it with a leaf's congested ports under the job's nodes
(Correlator._on_congestion): one escalation at the leaf.

State is plain data (a list a job, detector/statecodec.py walks it as such), bounded: at most
``MAX_VALUES`` comm times a bin, ``comm_hist_bins`` medians a job, ``MAX_JOBS`` jobs (the
longest unheard dropped first).  A median of a list, not river's rolling quantile: the bin's
values are a list anyway, and its sort is C (measured in BENCHMARKS "net19").
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from detector.alerts import Scope
from detector.events import StepSample
from detector.findings import Finding
from detector.thresholds import Thresholds

if TYPE_CHECKING:
    from detector.monitors import Monitors

MAX_VALUES = 512  # comm times kept a bin (a 28-rank job at 2 s steps sends ~140)
MAX_JOBS = 4096   # jobs kept (Monitors' own job bound is time: job_idle_s)
# A job waiting this many times comm_hist_bins bins (10 minutes) has a new usual level (a
# job re-formed on fewer ranks, more micro-batches each): learnt afresh, its wait cleared.
RELEARN_BINS = 2
MAX_HIST = 1024   # calm medians a restored state may hold (comm_hist_bins is 30)
# A job's state: [bin, comm times of the bin, medians of its calm bins, onset of its wait (None:
# not waiting), tenant, cluster].
_BIN, _VALUES, _HIST, _SINCE, _TENANT, _CLUSTER = range(6)


def quiet(mon: Monitors, s: StepSample) -> bool:
    """Whether :func:`note` takes this record without a finding: no comm time, or one of
    its job's open bin (a bin that closes may make one; a new job's first is taken so too,
    but the batch path leaves a new job to the record path)."""
    if s.comm_ms is None:
        return True
    try:  # (a subscript, not dict.get's call: every step record asks -- perf37)
        st = mon._comm[s.job]
    except KeyError:
        return False
    return s.ts // mon.cfg.comm_bin_s == st[_BIN]


def note(mon: Monitors, s: StepSample, _ts: float, out: list[Finding]) -> None:
    """One step record's comm_ms into its job's bin (closing the previous bin first), at the
    fleet's time: the per-sample hook (detector.sample_hooks)."""
    comm = s.comm_ms
    if comm is None:
        return
    jobs, cfg = mon._comm, mon.cfg
    b = int(s.ts // cfg.comm_bin_s)
    try:
        st = jobs[s.job]
    except KeyError:
        if len(jobs) >= MAX_JOBS:
            del jobs[min(jobs, key=lambda j: jobs[j][_BIN])]
        jobs[s.job] = [b, [comm], [], None, s.tenant, s.cluster]
        return
    if b == st[_BIN]:
        values = st[_VALUES]
        if len(values) < MAX_VALUES:
            values.append(comm)
        return
    if b < st[_BIN]:
        return  # a late record of a bin already closed
    _close(s.job, st, b * cfg.comm_bin_s, cfg, out)
    st[_BIN], st[_VALUES], st[_TENANT], st[_CLUSTER] = b, [comm], s.tenant, s.cluster


def _median(values: list[float]) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def _close(job: str, st: list[Any], ts: float, cfg: Thresholds, out: list[Finding]) -> None:
    """The job's bin is over (a record of a later one came at ``ts``): judge its median."""
    med = _median(st[_VALUES])
    hist = st[_HIST]
    usual = _median(hist) if len(hist) >= cfg.comm_base_bins else 0.0
    since = st[_SINCE]
    if since is not None and ts - since >= RELEARN_BINS * cfg.comm_hist_bins * cfg.comm_bin_s:
        hist.clear()  # a level it has held for 10 minutes is its own now (a re-formed job)
        usual = 0.0
    if usual > 0.0 and med >= cfg.comm_wait_ratio * usual:
        if since is None:
            st[_SINCE] = onset = st[_BIN] * cfg.comm_bin_s
            out.append(Finding(ts, onset, "comm_wait", "network", "unknown", Scope.of_job(job),
                               True, False, 0.3, {
                                   "comm_ms_median": round(med, 2),
                                   "usual_comm_ms": round(usual, 2),
                                   "comm_ratio": round(med / usual, 3),
                                   "bin_s": cfg.comm_bin_s, "steps": len(st[_VALUES])},
                               job, st[_TENANT], st[_CLUSTER]))
        return  # (a waiting bin is never learnt as calm)
    hist.append(med)
    if len(hist) > cfg.comm_hist_bins:
        del hist[0]
    if st[_SINCE] is not None:
        out.append(Finding(ts, st[_SINCE], "comm_wait", "network", "unknown", Scope.of_job(job),
                           False, False, 0.0, {}, job, st[_TENANT], st[_CLUSTER]))
        st[_SINCE] = None


def check_restored(jobs: Any) -> bool:
    """Whether a restored map of jobs' comm bins has this module's shape and bounds."""
    def num(x: Any) -> bool:
        return type(x) in (int, float) and math.isfinite(x)

    return type(jobs) is dict and len(jobs) <= MAX_JOBS and all(
        type(j) is str and type(st) is list and len(st) == 6 and type(st[_BIN]) is int
        and type(st[_VALUES]) is list and 0 < len(st[_VALUES]) <= MAX_VALUES
        and all(num(x) for x in st[_VALUES]) and type(st[_HIST]) is list
        and len(st[_HIST]) <= MAX_HIST and all(num(x) for x in st[_HIST])
        and (st[_SINCE] is None or num(st[_SINCE]))
        and all(x is None or type(x) is str for x in (st[_TENANT], st[_CLUSTER]))
        for j, st in jobs.items())
