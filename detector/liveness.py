"""A node gone silent: every collector of a node stops while the rest of the fleet reports.

A kernel panic, a dead PSU or a hung BMC leaves no XID and no last words: the node's
records just stop (blind7 G4; Llama 3 counts host, CPU, memory and PSU failures among its
interruptions, REFERENCE.md).  Its jobs stall until NCCL's watchdog (10 min by default)
or torchrun re-forms them elsewhere; nobody is told *which* node went dark.

Two halves, one path for the service and the replay:

- **where the records are** (:func:`scan`, from :meth:`Monitors.sweep` every
  :data:`SCAN_S` of a source's event time): per node and telemetry topic (ecc, thermal,
  nic) the newest record time, how far apart they come (the largest gap seen, decaying),
  and whether it is *silent on that topic*: no record while the other nodes of the
  **same source** went on recording for :func:`bound_s` (at least :data:`SILENT_MIN_S`,
  and :data:`SILENT_INTERVALS` of its own interval).  That time is the records' own (the
  topic's *progress*: its newest record time, moving between two scans, a move over
  :data:`JUMP_CAP_S` -- a gap in the feed -- counted as that), never the clock an idle
  advance moved: a feed that stops, a broker hiccup (every node late at once), the end
  of a replayed log move no record time, so they silence nobody, and a log's gap or the
  records after an outage lost count a minute at most; a source's records come in order,
  so catching up after a hiccup never shows one node behind another.  A change (silent, or
  heard again) is a ``silent`` finding at node scope, routed to the node's cluster like
  every finding.  (A service partition holding only the node that died has no other
  node to see time pass: it never judges it, and nothing pages -- the conservative
  side, kept in round 18: producers key every telemetry topic by node, so the node is
  alone in that partition on every topic and no other topic's time is there to borrow;
  the worker's idle-advance clock moves on a feed stop, a broker hiccup and a partition
  leader's failover alike; and a partition whose records stop while the others go on is
  just as much one stalled broker partition as one dead node.)
- **where the cluster's findings meet** (:func:`on_silent`, from
  :meth:`Correlator.on_finding`): a node silent on *every* topic it was seen on
  (``seen``: a collector lag on one topic, a job ending -- steps only -- are not a node
  going dark) *with a job on it to the end* (it stepped within :data:`RUNNING_S` of the
  node's last record and its ranks were still there once the node was quiet
  :data:`SUSPECT_S` -- a job that stalled with it is re-formed elsewhere only minutes
  later, a node replaced under a running job has them moved at once: the node's source's
  step view, or where
  the source sees no steps -- the service -- the job layouts, and a busy GPU) is one
  escalation, ``unattributed``/``unknown`` at the node, with the last record time per
  topic, the jobs and the next diagnostic (BMC, console, power).  A node heard again
  resolves it.  A node replaced under a running job (its ranks run elsewhere), drained
  (its jobs ended before it went quiet) or idle is no page: operators take nodes out all
  the time and the contract has no maintenance field, so a machine that dies idle is not
  told either (silent18: the churning fleet's 188 pages in 32 h -> 15).
- **a node lost under its job, in seconds** (silent19; :func:`_fast`, :func:`_stalled`): the
  240 s wait is for a node seen by its records alone.  A node quiet on every topic -- its
  quickest :data:`FAST_INTERVALS` of its interval (at least :data:`FAST_S`, at most
  :data:`FAST_CAP_S`), the others :data:`FAST_S` -- is judged at once when a job with ranks
  on it stepped up to then and stopped stepping everywhere with it, while the job's GPUs on
  its other nodes stay busy (NCCL spinning on a dead peer) with no other job stepping there,
  or went dark with it: the job is lost, whatever the node does next.  A job ended, cancelled
  or stopped for a planned reboot leaves its GPUs idle (replay/sim's reboot) or on to the next
  job (the churning fleet), a node replaced under a running job leaves it stepping, a job
  on the node alone ending looks like its death: those wait for the 240 s path (and the
  jobs it counts are those noted once the node was quiet :data:`SUSPECT_S`, so a job whose
  GPUs went on to another job is none: the churning fleet's 15 pages in 32 h -> 0).  Nodes
  of the source that went dark with it (within :data:`DARK_WITH_S`) are judged with it, job
  or not, after at most :data:`FAST_WAIT_S` for those not quiet long enough yet: a part's
  page.  blind9: 238-362 s -> 22-31 s; the confirm follows :data:`CONFIRM_S` later.
- **a part of the fleet going dark** (an NVLink domain -- a rack of trays --, a leaf, or a
  spine over its leaves, as the topology gives them: a rack's power, the switch itself, or
  the collection path of its nodes): a node's source names the nodes whose records
  stopped within :data:`DARK_WITH_S` (1.5 intervals) of its own (``dark_with``); its page
  waits until those of its part are silent too (at most :data:`CONFIRM_S`: a ``confirm``
  finding) and is then one escalation at the part holding most of them with more than half
  of its nodes dark, listing ``dark_nodes`` (two nodes dying together by chance stay two
  node pages; a node judged later joins it).  It
  resolves once every node of it reports again or left the fleet.  No topology: no part to
  name, a page a node.  (In the service each source names only its own nodes: a part
  spread over partitions may be paged in pieces.)

State: plain data.  Per source, one entry a node that has units there (dropped with
them: :meth:`Monitors.prune_units`), at most :data:`MAX_NODES`; per correlator, one a node
silent on some topic, at most :data:`MAX_NODES`.

Why 240 s: the simulator's reboot (a benign event: the node is down 60-120 s, then its
collectors come back) is silent up to 120 s + two 30 s intervals = 180 s as seen from its
records; a node that died is told well before NCCL's 10-minute watchdog ends its jobs.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from detector.alerts import ESCALATION, Scope
from detector.findings import Finding
from detector.hang import hang_s, look_due

if TYPE_CHECKING:
    from detector.alerts import Alert
    from detector.correlate import Correlator
    from detector.monitors import Monitors

SCAN_S = 10.0            # how often (a source's event time) the newest records are looked at
SILENT_MIN_S = 240.0     # the least silence that makes a node silent on a topic
SILENT_INTERVALS = 6.0   # ... and at least this many of its own (largest recent) intervals
MIN_UPDATES = 3          # scans that saw a node's topic move before it may be judged silent
GAP_DECAY = 1 / 8        # how fast a node's largest gap comes down after a longer one
MAX_NODES = 1 << 16      # nodes tracked per source and per correlator
# The most one scan credits to a silence: the records' time moving further between two scans
# (10 s apart) is a gap in the feed -- a replayed log's, or records lost in an outage --
# not time the rest of the fleet was seen reporting (blind7 gaps, the service's catch-up).
JUMP_CAP_S = 60.0
# A job ran on a node to its end when it stepped within this (or two of the node's record
# intervals) of the node's last record -- a job that ended before, on a node then drained or
# taken out, did not.
RUNNING_S = 120.0
# A node quiet this long (and two of its intervals) has the jobs with ranks on it noted: a job
# that stalled with it keeps them there until it is re-formed elsewhere (NCCL's timeout and a
# restart: blind7 G4 95-150 s, blind9's PDU trip), while a node replaced under a running job
# has them moved at once (the churning fleet).
SUSPECT_S = 30.0
MAX_JOBS = 8             # jobs named in a finding's evidence
TOPICS = ("ecc", "nic", "thermal")
# A part of the fleet going dark (a switch, a rack's PDU): nodes whose records stopped this
# close together are named with a node's silence (``dark_with``) and its page waits for
# theirs -- at most CONFIRM_S after the node's own silence (a ``confirm`` finding).
DARK_WITH_S = 30.0
CONFIRM_S = 30.0
MAX_DARK = 256           # nodes named in one finding's ``dark_with``
# A node lost under its job (silent19): every topic of the node quiet FAST_S (and
# FAST_INTERVALS of its interval, counted at most FAST_CAP_S) while a job with ranks on it,
# stepping up to then (within FAST_RUN_S of its last record), stopped stepping everywhere and
# its ranks on the other nodes wait in the collective (their GPUs busy with no step, nothing
# else stepping there) -- or its other nodes went dark with it.  Paged then, not after 240 s:
# a drained node's job ended or moved first, a reboot planned under a stopped job leaves its
# GPUs idle, a node replaced under a running job has its job stepping on.  Looked at for
# FAST_WINDOW_S; the nodes of its source that went dark with it join it (a part's page).
FAST_S = 20.0
FAST_INTERVALS = 1.5
FAST_CAP_S = 40.0
FAST_RUN_S = 30.0
FAST_WINDOW_S = 60.0
FAST_WAIT_S = 2 * SCAN_S  # the most a judgment waits for nodes going dark with it
# A job moved on from a node's going dark when another job stepped on its GPUs this long after
# its own last step (the churning fleet's next job, starting as the node leaves).
MOVED_S = 1.0
# A correlator's node entry holds, beside its topics' findings, the one that made it silent
# on every topic: under _WAIT while its part's other nodes are awaited, _JUDGED once judged.
_WAIT, _JUDGED = "wait", "judged"

# A source's entry for one node: [cluster, {topic: [newest ts, interval, updates, silent (0;
# 1 silent; 2 its ``confirm`` sent), the topic's progress at that record, the jobs on the node
# once it was quiet SUSPECT_S (None before; _jobs_on's rows)]}]; the topic's:
# [newest ts of any node, progress]
# (progress: how long the fleet was seen reporting, gaps of the feed capped at JUMP_CAP_S).
_LAST, _GAP, _N, _SILENT, _AT, _JOBS = range(6)


def bound_s(interval: float) -> float:
    """How long a node with records ``interval`` apart may be quiet on a topic."""
    return max(SILENT_MIN_S, SILENT_INTERVALS * interval)


def fast_s(interval: float) -> float:
    """How long a node with records ``interval`` apart is quiet on a topic before its job's
    stall may say it was lost (:func:`_stalled`)."""
    return max(FAST_S, min(FAST_INTERVALS * interval, FAST_CAP_S))


def stop_s(period: float) -> float:
    """How long a job with steps ``period`` apart goes without one before it has stopped
    stepping: :data:`FAST_S`, and three of its steps (an unmeasured period: none)."""
    return max(FAST_S, 3 * period) if math.isfinite(period) else FAST_S


def note(mon: Monitors, node: str, cluster: str | None) -> None:
    """A node's first unit on some topic (Monitors._heard): remember its cluster."""
    alive = mon._alive
    entry = alive.get(node)
    if entry is None:
        if len(alive) < MAX_NODES:
            alive[node] = [cluster, {}]
    elif cluster is not None:
        entry[0] = cluster


def scan(mon: Monitors, findings: list[Finding]) -> None:
    """Newest record per node and topic; a ``silent`` finding for each change of state."""
    newest: dict[str, dict[str, float]] = {w: {} for w in TOPICS}
    for what, units in (("thermal", mon._thermal), ("ecc", mon._ecc)):
        seen = newest[what]
        for (node, _), m in units.items():
            t = m.last_ts
            if t > seen.get(node, -1e300):
                seen[node] = t
    seen = newest["nic"]
    for node, nics in mon._nics.items():
        seen[node] = nics.last_ts
    clock = mon.clock
    alive = mon._alive
    prog: dict[str, float] = {}
    times_of: dict[str, list[float]] = {}
    quiet: set[str] = set()  # nodes quiet on a topic long enough for _fast to look at them
    for what in TOPICS:
        seen = newest[what]
        if not seen:
            continue
        fleet = max(seen.values())
        tp = mon._fleet.get(what)
        if tp is None:
            tp = mon._fleet[what] = [fleet, 0.0]
        elif fleet > tp[0]:
            tp[1] += min(fleet - tp[0], JUMP_CAP_S)
            tp[0] = fleet
        progress = prog[what] = tp[1]
        # the newest record times, sorted: how many nodes recorded past a node's silence
        times = times_of[what] = sorted(seen.values())
        for node, last in seen.items():
            entry = alive.get(node)
            if entry is None:
                continue  # (over MAX_NODES when first heard)
            st = entry[1].get(what)
            behind = min(fleet - last, JUMP_CAP_S)
            if st is None:
                entry[1][what] = [last, 0.0, 0, 0, progress - behind, None]
                continue
            if last > st[_LAST]:
                gap = last - st[_LAST]
                st[_GAP] = gap if gap > st[_GAP] else st[_GAP] + (gap - st[_GAP]) * GAP_DECAY
                st[_N] += 1
                st[_LAST] = last
                st[_AT] = progress - behind
                st[_JOBS] = None
                if st[_SILENT]:
                    st[_SILENT] = 0
                    findings.append(_finding(mon, node, entry[0], what, st, clock, False, 0))
                if not mon._jobs and st[_N] >= MIN_UPDATES and behind > FAST_S:
                    # (a source without steps whose records come in bursts -- an ECC poll of
                    # all nodes every 30 s -- scans at a burst's first record: a node's last,
                    # noticed now, may be FAST_S behind the fleet already)
                    quiet.add(node)
                continue
            if st[_SILENT] == 2 or st[_N] < MIN_UPDATES:
                continue
            if st[_JOBS] is None and mon._jobs and progress - st[_AT] > max(
                    SUSPECT_S, 2 * st[_GAP]):
                # quiet a while: the jobs with ranks there now, before a job that stalled with
                # it is re-formed on other nodes (NCCL's timeout, then a restart: minutes)
                st[_JOBS] = _jobs_on(mon, node, -math.inf)
            bound = bound_s(st[_GAP])
            if st[_SILENT] in (1, 3):
                if progress - st[_AT] > (fast_s(st[_GAP]) if st[_SILENT] == 3 else bound) + \
                        CONFIRM_S:  # still quiet: a part's wait ends
                    st[_SILENT] = 2
                    findings.append(_finding(mon, node, entry[0], what, st, clock, True, 0))
                continue
            # (a source without steps -- one topic of a node in the service -- tells each of
            # its topics quiet from FAST_S: the correlator holds it to its quickest topic's)
            if (fast_s(st[_GAP]) if mon._jobs else FAST_S) < progress - st[_AT] <= \
                    fast_s(st[_GAP]) + FAST_WINDOW_S:
                quiet.add(node)
            if progress - st[_AT] <= bound:
                continue
            later = len(times) - bisect_right(times, last + bound)
            if later >= 1:
                st[_SILENT] = 1
                f = _finding(mon, node, entry[0], what, st, clock, True, later)
                # the nodes of this source whose records stopped with it (judged within a scan
                # or two): a part of the fleet going dark is one page (on_silent)
                near = max(DARK_WITH_S, 1.5 * st[_GAP])
                lo, hi = last - near, last + near
                with_ = sorted(n for n, t in seen.items()
                               if lo <= t <= hi and n != node and fleet - t > bound / 2)
                if with_:
                    f.evidence["dark_with"] = with_[:MAX_DARK]
                findings.append(f)
    if quiet and mon._jobs:
        _fast(mon, sorted(quiet), newest, prog, times_of, findings)
    elif quiet:  # no step records here (a service's telemetry partition): the correlator judges
        _quiet(mon, sorted(quiet), newest, prog, times_of, findings)
    if mon._jobs:
        _stops(mon, findings)
    # Topics whose units were pruned (Monitors.prune_units): a silence there is over.
    for node in list(alive):
        entry = alive[node]
        for what in [w for w in entry[1] if node not in newest[w]]:
            st = entry[1].pop(what)
            if st[_SILENT]:
                findings.append(_finding(mon, node, entry[0], what, st, clock, False, -1))
        if not entry[1] and not any(node in newest[w] for w in TOPICS):
            del alive[node]


def _finding(mon: Monitors, node: str, cluster: str | None, what: str, st: list[Any],
             clock: float, active: bool, later: int,
             stalled: list[list[Any]] | None = None) -> Finding:
    """``later``: other nodes heard past its silence (active; 0: still silent
    :data:`CONFIRM_S` later); -1: its monitors were dropped (silent for ``unit_idle_s``: it
    left the fleet), 0: heard again.  ``stalled``: judged by :func:`_fast`, the jobs that
    stalled with it (none: it went dark with a node that has some)."""
    ev: dict[str, Any] = {"topic": what, "last_ts": round(st[_LAST], 3),
                          "interval_s": round(st[_GAP], 3),
                          "bound_s": fast_s(st[_GAP]) if st[_SILENT] == 3 else bound_s(st[_GAP])}
    if later < 0:
        ev["dropped"] = True
    if active and later == 0:
        ev["confirm"] = True
    elif active and stalled is not None:
        ev["nodes_heard_since"] = later
        ev["steps_seen"] = True
        ev["job_stalled"] = True
        if stalled:
            ev["jobs"] = stalled
    elif active:
        ev["nodes_heard_since"] = later
        if mon._jobs:  # this source sees step records: which jobs ran on the node to the end
            ev["steps_seen"] = True
            since = st[_LAST] - max(RUNNING_S, 2 * st[_GAP])
            # as noted once it was quiet SUSPECT_S (the job's GPUs may have gone on to other
            # jobs, and its other nodes left, since: the churning fleet), else as now
            jobs = _jobs_on(mon, node, since) if st[_JOBS] is None else [
                j for j in st[_JOBS] if j[2] >= since]
            if jobs:
                ev["jobs"] = jobs
    return Finding(clock, st[_LAST], "silent", "unattributed", "unknown", Scope.of_node(node),
                   active, False, 0.9 if active else 0.0, ev, cluster=cluster)


def _jobs_on(mon: Monitors, node: str, since: float) -> list[list[Any]]:
    """[job, ranks on the node, its last step's time] of this source's jobs that still have
    ranks there and stepped at ``since`` or later -- running when the node went quiet (the
    in-process engine's one source sees them; a service's step partitions do not).  A job
    that ended before (a node drained, then taken out), whose ranks moved to other nodes
    (a node replaced under a running job), or whose other GPUs went on with another job
    (it ended as the node left: the churning fleet) is not."""
    out = []
    for name, job in mon._jobs.items():
        if job.clock < since:
            continue
        n = sum(1 for hw in job._hw if hw is not None and hw[0] == node)
        if n and not _moved(mon, name, {(hw[0], hw[1]) for hw in job._hw
                                        if hw is not None and hw[0] != node}, job.clock):
            out.append([name, n, round(job.clock, 3)])
            if len(out) >= MAX_JOBS:
                break
    return out


def _moved(mon: Monitors, name: str, gpus: set[tuple[str, int]], t: float) -> bool:
    """Whether another job stepped on one of ``gpus`` (job ``name``'s) after its last step
    at ``t``: the job ended and its GPUs went on, whatever became of a node of it."""
    if gpus:
        for other, job in mon._jobs.items():
            if other != name and job.clock > t + MOVED_S and any(
                    hw is not None and (hw[0], hw[1]) in gpus for hw in job._hw):
                return True
    return False


def _fast(mon: Monitors, nodes: list[str], newest: dict[str, dict[str, float]],
          prog: dict[str, float], times_of: dict[str, list[float]],
          findings: list[Finding]) -> None:
    """Judge now the nodes quiet :func:`fast_s` on every topic that were lost under a job
    (:func:`_stalled`), and those of them that went dark with one (within
    :data:`DARK_WITH_S`: a part of the fleet), without the :func:`bound_s` wait."""
    alive = mon._alive
    now = max(max(seen.values()) for seen in newest.values() if seen)
    ready = _ready(mon, nodes, prog, times_of, (0,))
    if not ready:
        return
    lost = {n: jobs for n, (last, _) in ready.items()
            if (jobs := _stalled(mon, n, last, now, newest))}
    # the nodes lost now or a little before (not yet confirmed): those that went dark with
    # them join them, job or not (a rack's idle node; the correlator pages the part)
    before = {n: max(st[_LAST] for st in e[1].values()) for n, e in alive.items()
              if n not in ready and any(st[_SILENT] == 3 for st in e[1].values())}
    anchors = [ready[n][0] for n in lost] + list(before.values())
    judged = [n for n, (last, _) in ready.items() if n in lost or any(
        abs(last - a) <= DARK_WITH_S for a in anchors)]
    if not judged:
        return
    # nodes that missed a record near their going quiet but are not quiet long enough yet:
    # wait for them (a scan or two), so that a part going dark is judged together
    waited = max(max(prog[w] - st[_AT] - fast_s(st[_GAP]) for w, st in alive[n][1].items())
                 for n in judged)
    if waited <= FAST_WAIT_S and any(
            n not in ready and any(abs(_newest(e) - ready[m][0]) <= DARK_WITH_S
                                   for m in judged) and _missed(e, newest)
            for n, e in alive.items()):
        return
    for node in judged:
        last, later = ready[node]
        jobs = lost.get(node)
        entry = alive[node]
        with_ = sorted({n for n in judged if n != node and abs(ready[n][0] - last) <=
                        DARK_WITH_S} | {n for n, t in before.items()
                                        if abs(t - last) <= DARK_WITH_S})
        for what, st in entry[1].items():
            st[_SILENT] = 3
            f = _finding(mon, node, entry[0], what, st, mon.clock, True, later, jobs or [])
            if with_:
                f.evidence["dark_with"] = with_[:MAX_DARK]
            findings.append(f)


def _ready(mon: Monitors, nodes: list[str], prog: dict[str, float],
           times_of: dict[str, list[float]], states: tuple[int, ...], least: bool = False
           ) -> dict[str, tuple[float, int]]:
    """node -> (its newest record, nodes heard past it) of the ``nodes`` quiet long enough on
    every topic of this source (its quickest topic :func:`fast_s` of its interval, the others
    :data:`FAST_S`: an ECC poll of 30-60 s would hold the page that long, its last record
    may be a poll before; ``least``: every topic :data:`FAST_S`) while other nodes were heard
    past it, each topic's state among ``states``."""
    ready: dict[str, tuple[float, int]] = {}
    for node in nodes:
        entry = mon._alive.get(node)
        if entry is None or not entry[1]:
            continue
        later, quick = 0, min(st[_GAP] for st in entry[1].values())
        for what, st in entry[1].items():
            q = fast_s(st[_GAP]) if st[_GAP] == quick and not least else FAST_S
            if st[_SILENT] not in states or st[_N] < MIN_UPDATES or what not in prog or \
                    prog[what] - st[_AT] <= q:
                break
            times = times_of[what]
            later = max(later, len(times) - bisect_right(times, st[_LAST] + q))
        else:
            if later:
                ready[node] = (max(st[_LAST] for st in entry[1].values()), later)
    return ready


def _quiet(mon: Monitors, nodes: list[str], newest: dict[str, dict[str, float]],
           prog: dict[str, float], times_of: dict[str, list[float]],
           findings: list[Finding]) -> None:
    """dark20: a source that sees no step records (a service's telemetry partition) cannot
    judge a node lost under its job (:func:`_fast`): it tells the correlator, which sees every
    partition's job layouts, job stops and busy GPUs, that the node is quiet -- a ``silent``
    finding with ``quiet`` at the fast bound, again each scan of :data:`FAST_WINDOW_S` (the
    correlator's judgement may need the job's other GPUs to be seen idle or busy first) --
    and keeps waiting for the 240 s bound (state 4).  :func:`on_silent` judges it."""
    ready = _ready(mon, nodes, prog, times_of, (0, 4), least=True)
    for node, (last, later) in ready.items():
        entry = mon._alive[node]
        with_ = sorted(n for n, (t, _) in ready.items()
                       if n != node and abs(t - last) <= DARK_WITH_S)
        for what, st in entry[1].items():
            st[_SILENT] = 4
            f = _finding(mon, node, entry[0], what, st, mon.clock, True, later)
            # the topic under ``quiet``, not ``topic``: a correlator of a build before dark20
            # (a rolling upgrade) passes it over instead of taking it for the 240 s silence
            f.evidence["quiet"] = f.evidence.pop("topic")
            f.evidence["bound_s"] = fast_s(st[_GAP])
            f.evidence["quiet_s"] = round(prog[what] - st[_AT], 3)
            if with_:
                f.evidence["dark_with"] = with_[:MAX_DARK]
            findings.append(f)


def _stops(mon: Monitors, findings: list[Finding]) -> None:
    """dark20: a job that stopped stepping -- no step for :data:`FAST_S` and three of its
    steps, crossed since the last scan -- is a ``silent`` finding at the job's scope with its
    last step's time: what the correlator needs to judge a node that went quiet under it
    where that node's source sees no steps (:func:`_quiet`).  Told once a stop (the job's
    clock is its last step's time), nothing kept but the last scan's clock; and, while it
    stays silent, a look for a hung rank every hang_s (detector.hang.look_due)."""
    mark = mon._fleet.get("steps")
    clock = mon.clock
    prev = mark[0] if mark is not None else -math.inf
    mon._fleet["steps"] = [clock, 0.0]
    for name, job in mon._jobs.items():
        t = job.clock
        if not math.isfinite(t):
            continue
        period = job._period if math.isfinite(job._period) else 0.0  # (nan: not measured)
        if prev < t + stop_s(period) <= clock:
            findings.append(Finding(
                clock, t, "silent", "unattributed", "unknown", Scope.of_job(name), True, False,
                0.0, {"last_step_ts": round(t, 3), "step_period_s": round(period, 3)},
                name, job.tenant, job.cluster))
        if look_due(period, prev - t, clock - t):  # (still silent: a hung rank? detector.hang)
            findings.append(Finding(
                clock, t, "silent", "unattributed", "unknown", Scope.of_job(name), True, False,
                0.0, {"last_step_ts": round(t, 3), "step_period_s": round(period, 3),
                      "hang_s": hang_s(period)}, name, job.tenant, job.cluster))


def _newest(entry: list[Any]) -> float:
    """A source entry's newest record on any topic."""
    return max((st[_LAST] for st in entry[1].values()), default=-math.inf)


def _missed(entry: list[Any], newest: dict[str, dict[str, float]]) -> bool:
    """Whether a node not yet judged is quiet half its :func:`fast_s` on every topic (a
    record or more missed everywhere), as a node going dark with others is."""
    tops = entry[1]
    return bool(tops) and not any(st[_SILENT] for st in tops.values()) and all(
        newest[w] and max(newest[w].values()) - st[_LAST] > fast_s(st[_GAP]) / 2
        for w, st in tops.items())


def _stalled(mon: Monitors, node: str, last: float, now: float,
             newest: dict[str, dict[str, float]]) -> list[list[Any]]:
    """[job, ranks on the node, its last step's time] of the jobs lost with ``node`` (quiet
    since ``last``; the records' time ``now``), where the steps are: :func:`_lost_jobs`'s
    rule on this source's step view (:class:`_StepView`)."""
    return _lost_jobs(_StepView(mon, node, now, newest), last)


def _lost_jobs(view: _StepView | _LayoutView, last: float) -> list[list[Any]]:
    """[job, ranks on the node, its last step's time] of the jobs lost with a node quiet since
    ``last`` -- the one rule, whoever sees the jobs (a source that sees their steps,
    :class:`_StepView`; the correlator from every partition's layouts, stops and busy GPUs,
    :class:`_LayoutView`): each had ranks there and stepped until it went quiet (within
    :data:`FAST_RUN_S`), has stopped stepping since (:data:`FAST_S`, three of its steps),
    had ranks on other nodes, and those still heard wait for it -- most of their GPUs known
    since busy (NCCL spinning on a dead peer: a job stopped or ended leaves them idle), no
    other job stepping there -- or went dark with it (a part of the fleet).  A job on this
    node alone ending as it goes quiet looks the same as its death: none."""
    out = []
    for name, mine, t, others in view.stopped(last - FAST_RUN_S):
        if not mine or not others:
            continue
        up = view.up(others, t)
        if up:
            known, busy = view.waiting(name, up, t)
            if 2 * busy <= known or view.moved(name, others, up, t):
                continue
        elif not view.settled(others):
            continue  # (its other nodes not quiet long enough yet)
        out.append([name, mine, round(t, 3)])
        if len(out) >= MAX_JOBS:
            break
    return out


class _StepView:
    """The jobs on ``node`` as a source that sees their steps knows them (the in-process
    engine's one source): each job's steps, the GPUs its ranks report from, each GPU's
    thermal samples and idle state."""

    def __init__(self, mon: Monitors, node: str, now: float,
                 newest: dict[str, dict[str, float]]) -> None:
        self.mon, self.node, self.now, self.newest = mon, node, now, newest

    def heard(self, n: str) -> float:
        return max(self.newest[w].get(n, -math.inf) for w in TOPICS)

    def stopped(self, since: float) -> Iterator[tuple[str, int, float, set[Any]]]:
        """(job, ranks on the node, its last step, its GPUs on other nodes) of the jobs that
        stepped at ``since`` or later and have stopped."""
        node, now = self.node, self.now
        for name, job in self.mon._jobs.items():
            t = job.clock
            if t < since or now - t < stop_s(job._period):
                continue
            hws = [(hw[0], hw[1]) for hw in job._hw if hw is not None]
            yield name, sum(1 for hw in hws if hw[0] == node), t, {
                hw for hw in hws if hw[0] != node}

    def up(self, others: set[Any], t: float) -> set[Any]:
        """Its GPUs on nodes heard since it stopped."""
        return {hw for hw in others if self.heard(hw[0]) > t + MOVED_S}

    def waiting(self, _name: str, up: set[Any], t: float) -> tuple[int, int]:
        """(GPUs with a thermal sample since it stopped, those of them busy)."""
        mon = self.mon
        known = busy = 0
        for hw in up:
            m = mon._thermal.get(hw)
            temps = mon._node_temps.get(hw[0])
            if m is None or temps is None or m.last_ts <= t:
                continue  # (no sample since it stopped)
            known += 1
            busy += hw[1] not in temps.idle
        return known, busy

    def moved(self, name: str, _others: set[Any], up: set[Any], t: float) -> bool:
        return _moved(self.mon, name, up, t)

    def settled(self, others: set[Any]) -> bool:
        """Its other nodes, dark with it, quiet :data:`FAST_S` at least."""
        return not any(self.now - self.heard(hw[0]) <= FAST_S for hw in others)


def check_restored(mon: Monitors) -> bool:
    """Whether a restored source's entries have the types :func:`scan` reads."""
    alive = mon._alive
    if type(alive) is not dict or len(alive) > MAX_NODES:
        return False
    for node, entry in alive.items():
        if type(node) is not str or type(entry) is not list or len(entry) != 2:
            return False
        if (entry[0] is not None and type(entry[0]) is not str) or type(entry[1]) is not dict:
            return False
        for what, st in entry[1].items():
            if type(st) is list and len(st) == 5:
                st.append(None)  # (a source entry before round 18)
            if what not in TOPICS or type(st) is not list or len(st) != 6 or not (
                    type(st[_LAST]) is float and type(st[_GAP]) is float
                    and type(st[_N]) is int and type(st[_SILENT]) in (int, bool)
                    and st[_SILENT] in (0, 1, 2, 3, 4)  # (a bool before round 18)
                    and type(st[_AT]) is float and (st[_JOBS] is None or (
                        type(st[_JOBS]) is list and len(st[_JOBS]) <= MAX_JOBS and all(
                            type(j) is list and len(j) == 3 and type(j[0]) is str
                            and type(j[1]) is int and type(j[2]) is float
                            for j in st[_JOBS])))):
                return False
    fleet = mon._fleet
    return type(fleet) is dict and all(
        (w in TOPICS or w == "steps") and type(tp) is list and len(tp) == 2
        and all(type(x) is float for x in tp) for w, tp in fleet.items())


# -- the correlator's half ---------------------------------------------------------------


def on_silent(corr: Correlator, f: Finding, out: list[Alert]) -> None:
    """A node's silence on one topic began or ended (:func:`scan`): page when it is silent
    on every topic it was seen on and jobs ran on it to the end -- one page for a part of the
    fleet going dark together; resolve when it is heard again or has left the fleet."""
    if f.scope.level == "job":
        _on_stop(corr, f, out)
        return
    node = f.scope.node
    what = f.evidence.get("topic", f.evidence.get("quiet"))
    if node is None or f.scope.level != "node" or what not in TOPICS:
        return
    silent = corr._silent
    if not f.active:
        topics = silent.get(node)
        if topics is not None:
            topics.pop(what, None)
            topics.pop(_WAIT, None)
            topics.pop(_JUDGED, None)
            if not any(w in TOPICS for w in topics):
                del silent[node]
        p = _page_of(corr, node, f.cluster)
        if p is not None:
            p.add(f, corr.cfg.evidence_items)
            dark = p.extra.get("dark_nodes")
            if type(dark) is list and node in dark and len(dark) > 1:
                # the part's other nodes are still dark (a new list: a sent alert holds the old)
                p.extra["dark_nodes"] = [n for n in dark if n != node]
                return
            p.extra["resolved_because"] = (
                f"no telemetry from {node} for {corr.cfg.unit_idle_s:g} s: it left the fleet"
                if f.evidence.get("dropped") is True else f"{node} reported on {what} again")
            corr._schedule_resolve(p, f.ts)
        return
    topics = silent.get(node)
    if topics is None:
        if len(silent) >= MAX_NODES:
            return
        topics = silent[node] = {}
    if f.evidence.get("confirm") is True:  # still quiet CONFIRM_S on: its part waits no more
        if _WAIT in topics:
            _flush(corr, node, f, out)
        return
    if _WAIT in topics or _JUDGED in topics:
        topics[what] = f if not _is_quiet(f) or what not in topics \
            else topics[what]
        return
    topics[what] = f
    uses = _uses(corr, node, topics)
    if not uses or any(w not in topics for w in uses):
        return  # still heard on another topic (a collector's lag, not the node)
    if any(_is_quiet(topics[w]) for w in uses):
        _on_quiet(corr, node, f.ts, out)
        return
    _judge(corr, node, f, out)


def _uses(corr: Correlator, node: str, topics: dict[str, Finding]) -> list[str]:
    """The topics ``node`` was seen on (all of which must be silent)."""
    seen = corr.seen
    return [w for w in TOPICS if seen(node, w)] if seen is not None else [
        w for w in topics if w in TOPICS]


def _judge(corr: Correlator, node: str, f: Finding, out: list[Alert]) -> None:
    """``node`` silent on every topic it used: judge it, with its part of the fleet."""
    silent = corr._silent
    topics = silent[node]
    topics[_WAIT] = f
    if not any(_WAIT not in silent.get(n, {}) and _JUDGED not in silent.get(n, {})
               for n in _with(corr, node)):
        _flush(corr, node, f, out)  # nobody of its part is still to come
        return
    # most of its part is silent already: page it now, the others join as they are judged
    part = _choose(corr, node, _waiting(corr, node, f))
    if part is not None and 2 * sum(
            1 for n, t in silent.items() if (_WAIT in t or _JUDGED in t)
            and part in _parts(corr.topology, n)) > len(_below(corr.topology, part)):
        _flush(corr, node, f, out)


# -- dark20: the correlator's judgement of a node quiet where its source sees no steps -----

# corr._silent's entry holding the jobs' stops (a key no node has: names are printable):
# job -> its latest stop (_stops), at most MAX_STOPS.
_STOPS = "\0stops"
MAX_STOPS = 4096


def _on_stop(corr: Correlator, f: Finding, out: list[Alert]) -> None:
    """A job stopped stepping (:func:`_stops`): kept, and the quiet nodes it has ranks on
    judged again."""
    job = f.job
    if job is None or not _is_time(f.evidence.get("last_step_ts")):
        return
    silent = corr._silent
    stops = silent.get(_STOPS)
    if stops is None:
        if len(silent) >= MAX_NODES:
            return
        stops = silent[_STOPS] = {}
    if job not in stops and len(stops) >= MAX_STOPS:
        return
    stops[job] = f
    nodes = {hw[0] for hw in corr._placement.ranks.get(job, {}).values()}
    for node in sorted(nodes):
        topics = silent.get(node)
        if topics is not None and _WAIT not in topics and _JUDGED not in topics:
            uses = _uses(corr, node, topics)
            if uses and all(w in topics and _is_quiet(topics[w])
                            for w in uses):
                _on_quiet(corr, node, f.ts, out)


def _is_quiet(f: Finding) -> bool:
    """A ``quiet`` finding (:func:`_quiet`), not a silence."""
    return f.evidence.get("quiet") in TOPICS


def _is_time(x: Any) -> bool:
    return type(x) in (float, int) and math.isfinite(x)


def _on_quiet(corr: Correlator, node: str, now: float, out: list[Alert]) -> None:
    """``node`` quiet on every topic it used (its sources' ``quiet`` findings, some maybe
    silent past the 240 s bound already): paged now when a job was lost with it
    (:func:`_lost`) -- its findings then say so, as the in-process engine's do -- else the
    240 s bound decides."""
    topics = corr._silent[node]
    found = [g for w, g in topics.items() if w in TOPICS]
    last = max((g.evidence.get("last_ts") for g in found
                if _is_time(g.evidence.get("last_ts"))), default=None)
    if last is None:
        return
    # its quickest topic quiet fast_s of its interval (the others FAST_S), as _fast holds it
    quick = min(found, key=lambda g: g.evidence.get("interval_s")
                if _is_time(g.evidence.get("interval_s")) else math.inf)
    if _is_quiet(quick) and not (_is_time(q := quick.evidence.get("quiet_s")) and _is_time(
            b := quick.evidence.get("bound_s")) and q > b):
        return  # (told again next scan)
    jobs = _lost(corr, node, last, now)
    if not jobs:
        return
    judged = None
    for w, g in list(topics.items()):
        if w in TOPICS:
            ev = {k: v for k, v in g.evidence.items() if k != "quiet"}
            ev["topic"] = w
            ev.update(steps_seen=True, job_stalled=True, jobs=jobs)
            judged = topics[w] = g._replace(evidence=ev)
    if judged is not None:
        _judge(corr, node, judged, out)
        if _WAIT in topics:  # its part's other nodes may never be judged so: no wait
            _flush(corr, node, judged, out)


def _lost(corr: Correlator, node: str, last: float, now: float) -> list[list[Any]]:
    """[job, ranks on the node, its last step's time] of the jobs lost with ``node`` (quiet
    since ``last``), as :func:`_stalled` judges them where the steps are (the same rule,
    :func:`_lost_jobs`), here from what every partition tells the correlator
    (:class:`_LayoutView`)."""
    return _lost_jobs(_LayoutView(corr, node, now), last)


class _LayoutView:
    """The jobs on ``node`` as the correlator knows them from every partition: the job's
    layout (``job_layout``) had ranks there and on other nodes; it stopped stepping
    (:func:`_stops`); its other nodes went quiet too (:func:`_dark`), or its GPUs on those
    heard are busy (``gpus_busy`` and the node's ``idle_gpus``: a GPU, as the source that
    sees its thermal samples knows it, whatever another job does on the node's other GPUs),
    judged once a thermal sample of theirs is due after the stop (1.5 of their interval, at
    least :data:`FAST_S`)."""

    def __init__(self, corr: Correlator, node: str, now: float) -> None:
        self.corr, self.node, self.now = corr, node, now

    def stopped(self, since: float) -> Iterator[tuple[str, int, float, set[Any]]]:
        corr, node = self.corr, self.node
        stops = corr._silent.get(_STOPS) or {}
        placement = corr._placement
        here: dict[str, int] = {}
        for (job, _rank) in placement.on_node.get(node, {}):
            here[job] = here.get(job, 0) + 1
        for job, mine in sorted(here.items()):
            stop = stops.get(job)
            if stop is None:
                continue
            t = stop.evidence["last_step_ts"]
            if not _is_time(t) or t < since:
                continue
            yield job, mine, t, {(hw[0], hw[1]) for hw in placement.ranks.get(job, {}).values()
                                 if hw[0] != node}

    def up(self, others: set[Any], _t: float) -> set[str]:
        """Its other nodes not quiet on every topic they used."""
        return {n for n, _ in others if not _dark(self.corr, n)}

    def waiting(self, name: str, up: set[str], t: float) -> tuple[int, int]:
        """(its GPUs on nodes up with thermal samples, those of them busy), once a sample of
        theirs is due after the stop; (0, 0) before.  A busy node whose idle GPUs were not
        told (a source before round 22) counts only if the job has it to itself."""
        corr = self.corr
        placement = corr._placement
        seen = corr.seen
        gpus = {(hw[0], hw[1]) for hw in placement.ranks.get(name, {}).values()
                if hw[0] in up and (seen is None or seen(hw[0], "thermal")) and (
                    corr.gpu_idle(hw[0], hw[1]) is not None or all(
                        j == name for j, _ in placement.on_node.get(hw[0], {})))}
        if not gpus:
            return 0, 0
        every = max((corr._interval.get(n, (0.0, 0.0))[0] for n, _ in gpus), default=0.0)
        if self.now < t + max(FAST_S, 1.5 * every):
            return 0, 0
        return len(gpus), sum(1 for n, g in gpus if corr.gpu_idle(n, g) is not True)

    def moved(self, name: str, others: set[Any], _up: set[str], t: float) -> bool:
        return _went_on(self.corr, name, others, t, self.corr._silent.get(_STOPS) or {})

    def settled(self, _others: set[Any]) -> bool:
        return True  # (dark: quiet on every topic, as its sources judged it)


def _dark(corr: Correlator, node: str) -> bool:
    """Whether ``node`` is quiet or silent on every topic it used."""
    topics = corr._silent.get(node)
    if not topics:
        return False
    uses = _uses(corr, node, topics)
    return bool(uses) and all(w in topics for w in uses)


def _went_on(corr: Correlator, name: str, gpus: set[tuple[str, int]], t: float,
             stops: dict[str, Finding]) -> bool:
    """Whether another job has ranks on one of ``gpus`` and has not stopped since ``t`` (it
    stepped there after job ``name`` stopped: the churning fleet's next job)."""
    placement = corr._placement
    for node in {n for n, _ in gpus}:
        for (job, _rank), (gpu, _dp) in placement.on_node.get(node, {}).items():
            if job != name and (node, gpu) in gpus:
                stop = stops.get(job)
                if stop is None or not _is_time(s := stop.evidence.get("last_step_ts")) or \
                        s > t + MOVED_S:
                    return True
    return False


def _with(corr: Correlator, node: str) -> list[str]:
    """The nodes its sources saw stop with it, in its part of the fleet (its leaf or its
    leaf's spine, as the topology gives them); none without a topology (no part to name)."""
    topo = corr.topology
    part = _parts(topo, node)
    if not part:
        return []
    out: set[str] = set()
    for g in corr._silent.get(node, {}).values():
        for n in g.evidence.get("dark_with") or ():
            if type(n) is str and n != node and set(_parts(topo, n)) & set(part):
                out.add(n)
    return sorted(out)


def _parts(topo: Any, node: str) -> list[Scope]:
    """The parts of the fleet the node is in, as the topology gives them: its NVLink domain
    (a rack of trays), its leaf and the switches above that."""
    if topo is None:
        return []
    domain = topo.domain_of(node)
    leaf = topo.switch_of(node)
    out = [] if domain is None else [Scope.of_domain(domain)]
    if leaf is not None:
        out += [Scope.of_switch(s) for s in (leaf, *topo.parent_of(leaf))]
    return out


def _below(topo: Any, part: Scope) -> tuple[str, ...]:
    """The nodes in a part."""
    if part.level == "domain":
        return topo.nodes_in_domain(part.domain)
    return topo.nodes_below(part.switch)


def _flush(corr: Correlator, node: str, f: Finding, out: list[Alert]) -> None:
    """Judge the node and the nodes of its part waiting with it: one page at the part (its
    NVLink domain, its leaf, a spine above) holding most of them -- with those its sources
    saw stop with them -- and more than half of its nodes dark (a domain before a switch over
    the same nodes, a leaf before a spine), listing them; a page a node for the others; each
    only if a job ran on it (or them) to the end."""
    silent = corr._silent
    topo = corr.topology
    group = _waiting(corr, node, f)
    part = _choose(corr, node, group)
    for n in group:
        silent[n][_JUDGED] = silent[n].pop(_WAIT)
    rest = group
    if part is not None:
        under = [n for n in group if part in _parts(topo, n)]
        _page(corr, part, under, f, out)
        rest = [n for n in group if n not in under]
    for n in rest:
        _page(corr, None, [n], f, out)


def _waiting(corr: Correlator, node: str, f: Finding) -> list[str]:
    """The node and the nodes of its parts waiting to be judged."""
    mine = set(_parts(corr.topology, node))
    return [node] + sorted(
        n for n, t in corr._silent.items() if n != node and _WAIT in t
        and t[_WAIT].cluster == f.cluster and set(_parts(corr.topology, n)) & mine)


def _choose(corr: Correlator, node: str, group: list[str]) -> Scope | None:
    """The part of ``node`` holding most of ``group`` and the nodes its sources saw stop
    with them (a wait cut short), with more than half of its nodes among those: a rack (a
    domain) before a switch over the same nodes, the smaller of two switches; None."""
    topo = corr.topology
    mine = _parts(topo, node)
    dark = set(group).union(*(_with(corr, n) for n in group))
    best: tuple[int, int] | None = None
    for k, part in enumerate(mine if len(dark) > 1 else ()):
        under = sum(1 for n in dark if part in _parts(topo, n))
        if under > 1 and 2 * under > len(_below(topo, part)) and (
                best is None or (under, -k) > best):
            best = (under, -k)
    return None if best is None else mine[-best[1]]


def _page(corr: Correlator, part: Scope | None, group: list[str], f: Finding,
          out: list[Alert]) -> None:
    """One escalation at ``part`` (a switch, a domain) over ``group``, or at the node
    ``group[0]``; a node alone joins its part's page when one is firing."""
    silent = corr._silent
    node = group[0]
    found = [g for n in group for w, g in silent[n].items() if w in TOPICS]
    if part is None:  # alone now: a part already paged as dark takes it in
        for sw in _parts(corr.topology, node):
            p = corr.problems.get(corr.dedup_key(ESCALATION, "unattributed", sw, f.cluster))
            if p is not None and p.status == "firing" and type(
                    dark := p.extra.get("dark_nodes")) is list:
                if node not in dark:
                    p.extra["dark_nodes"] = [*dark, node]
                for g in found:
                    p.add(g, corr.cfg.evidence_items)
                return
    jobs = [j for n in group for j in _running(corr, n, [g for w, g in silent[n].items()
                                                          if w in TOPICS])]
    if not jobs:
        return  # nothing ran on it to the end: drained, replaced, taken out -- or idle
    scope = part if part is not None else Scope.of_node(node)
    name = None if part is None else part.switch or part.domain
    key = corr.dedup_key(ESCALATION, "unattributed", scope, f.cluster)
    p = corr.problems.get(key)
    if p is not None and p.status == "firing":
        dark = p.extra.get("dark_nodes")
        if type(dark) is list:
            p.extra["dark_nodes"] = dark + [n for n in group if n not in dark]
        return
    first = min(found, key=lambda g: g.onset_ts)
    where = node if part is None else f"{len(group)} nodes of {name} ({', '.join(group)})"
    last = {n: {w: g.evidence.get("last_ts") for w, g in silent[n].items() if w in TOPICS}
            for n in group}
    extra: dict[str, Any] = {
        "last_record_ts": last[node] if part is None else last,
        "silent_s": round(f.ts - first.onset_ts, 1),
        "interval_s": {w: g.evidence.get("interval_s") for w, g in silent[node].items()
                       if w in TOPICS},
        "jobs_on_node": jobs[:MAX_JOBS],
        "ruled_out": ["the feed stopping or a broker hiccup (other nodes of its partition "
                      "reported past its silence)",
                      "a collector's lag on one topic (silent on every topic it used)",
                      "a job ending, or a node drained or replaced (jobs ran on it to the "
                      "end and did not move)"],
        "recommended_because": (
            f"{where} stopped sending every record at {first.onset_ts:.1f} with no XID, "
            "while the rest of the fleet kept reporting and jobs ran on it"
            + (" (they stopped stepping with it, their other ranks busy waiting in the "
               "collective)" if any(g.evidence.get("job_stalled") is True for g in found)
               else "") + ": "
            + ("a host that went dark (kernel panic, PSU, hung BMC)" if part is None else
               "a part of the fleet that went dark together (its switch, its rack's power)")),
        "next_diagnostic": (
            f"check {node}'s BMC (ipmitool chassis status; ipmitool sel list), its serial "
            "console (kernel panic?) and its PSU / PDU; once it answers, dmesg and "
            "`dcgmi diag -r 3`" if part is None else
            f"check {name}'s power (its PDU / power shelves) and, for a switch, its ports, "
            f"uplinks and management interface; then one node's BMC ({node}: ipmitool "
            "chassis status)"),
    }
    if part is not None:
        extra["dark_nodes"] = list(group)
    p = corr._raise(ESCALATION, "unattributed", "unknown", scope, first, out,
                    detected_ts=f.ts, extra=extra, own=False)
    for g in found:
        if g is not first:
            p.add(g, corr.cfg.evidence_items)


def _page_of(corr: Correlator, node: str, cluster: str | None) -> Any:
    """The firing silent page naming ``node``: its own, or its part's."""
    for s in [None, *_parts(corr.topology, node)]:
        scope = Scope.of_node(node) if s is None else s
        p = corr.problems.get(corr.dedup_key(ESCALATION, "unattributed", scope, cluster))
        if p is not None and p.status == "firing" and (
                s is None or node in (p.extra.get("dark_nodes") or ())):
            return p
    return None


def _running(corr: Correlator, node: str, found: list[Finding]) -> list[Any]:
    """The jobs that ran on ``node`` to its end: as its sources saw them (the engine's one
    source sees steps: jobs that stepped within the bound of its last record and whose ranks
    stayed there), else as the correlator's job layouts place them, when its GPUs were busy
    (a drained node's GPUs report idle)."""
    if any(g.evidence.get("steps_seen") is True for g in found):
        return _jobs_of(corr, node, found, placed=False)
    if corr.seen is not None and corr.seen(node, "thermal") and node not in corr._busy:
        return []
    return _jobs_of(corr, node, found)


def _jobs_of(corr: Correlator, node: str, found: Any, placed: bool = True) -> list[Any]:
    """The jobs with ranks on ``node``: as its source saw them (the in-process engine) or
    as the correlator's job layouts place them."""
    jobs: dict[str, Any] = {}
    for g in found:
        for item in g.evidence.get("jobs") or ():
            if type(item) is list and len(item) == 3 and type(item[0]) is str:
                jobs.setdefault(item[0], {"job": item[0], "ranks": item[1],
                                          "last_step_ts": item[2]})
    if not placed:
        return list(jobs.values())
    where: dict[str, int] = {}
    for (job, _rank) in corr._placement.on_node.get(node, {}):
        where[job] = where.get(job, 0) + 1
    for job, n in where.items():
        jobs.setdefault(job, {"job": job, "ranks": n})
        if len(jobs) >= MAX_JOBS:
            break
    return list(jobs.values())


def prune(corr: Correlator, now: float) -> None:
    """Drop silences of nodes no longer seen on any topic (their monitors were pruned)."""
    seen = corr.seen
    old = now - corr.cfg.unit_fault_idle_s
    for node in list(corr._silent):
        topics = corr._silent[node]
        if node == _STOPS:  # a job's stop: kept while its layout is, and unit_fault_idle_s
            for job in [j for j, g in topics.items()
                        if g.ts < old or j not in corr._placement.ranks]:
                del topics[job]
            if not topics:
                del corr._silent[node]
            continue
        for what in [w for w, g in topics.items() if w in TOPICS and (
                g.ts < old or (seen is not None and not seen(node, w)))]:
            del topics[what]
        if not any(w in TOPICS for w in topics):
            del corr._silent[node]
