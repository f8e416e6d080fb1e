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
  later, a node replaced under a running job has them moved at once; a rank is there when it
  took part in the job's recent steps, not a slot still naming the node after the job shrank
  (:func:`_ranks_on`, dark37: blind27 F3); and not a job that stopped before the node went
  quiet -- its last step over a step period and ``lateness_s`` before the node's last record
  -- and stepped on without it (:func:`_went_on_without`: a save, then a re-form without a
  reclaimed VM; a crash restart without it stays the node's page): the node's source's
  step view, or where
  the source sees no steps -- the service -- the job layouts, and a busy GPU; not one whose
  stop was due while the node still reported, unless its GPUs elsewhere wait for the node:
  :func:`_ended_first`, blind21 F1's firmware flash after the job's end) is one
  escalation, ``unattributed``/``unknown`` at the node, with the last record time per
  topic, the jobs and the next diagnostic (BMC, console, power).  A node heard again
  resolves it.  A node replaced under a running job (its ranks run elsewhere), drained
  (its jobs ended before it went quiet) or idle is no page: operators take nodes out all
  the time and the contract has no maintenance field, so a machine that dies idle is not
  told either (silent18: the churning fleet's 188 pages in 32 h -> 15).
- **a node lost under its job, in seconds** (silent19, dark20; :func:`_quiet`, :func:`_on_quiet`):
  the 240 s wait is for a node seen by its records alone.  Every source -- the replay's one, which
  sees the steps, and a service's telemetry partitions, which do not -- tells the correlator a
  node is ``quiet`` once it was quiet :data:`FAST_S` on every topic of the source (and again each
  scan for :data:`FAST_WINDOW_S`), naming the nodes of the source that went dark with it (quiet
  too, or a record missed everywhere, within :data:`DARK_WITH_S`); step sources tell a job
  ``stopped`` (:func:`_stops`).  The correlator -- one judgement, whoever the sources are -- waits
  until every topic of the node has missed its rows (:func:`_overdue`: quiet, at the
  correlator's clock, past its own interval -- the one rule, live36) and judges it at once when a
  job with ranks on it stepped up to then (:func:`_ran_to`: its last step within a step period
  and ``lateness_s`` of the node's last record, as a node's death stops its jobs -- a job hung
  before, its collectors restarting during the hang, is not the node's: revA36 F7, dark37)
  and stopped stepping everywhere with it -- within
  :data:`FAST_WINDOW_S` of its :func:`fast_s`, as a source tells it (:func:`_window_left`);
  past it the 240 s bound decides (a job's other node may have left the fleet since: round 23's
  churning-fleet pages) -- while the job's GPUs on its other nodes stay busy (NCCL
  spinning on a dead peer) with no other job stepping there, or went dark with it: the job is
  lost, whatever the node does next (:func:`_lost`, from every partition's job layouts, stops and
  busy GPUs).  A job that re-formed without the node before it was judged (torchelastic onto a
  spare or on fewer nodes 10-40 s on: no rank names the node any more, no stop may have been
  told) says so (:func:`_reforms`: the nodes it left, its last step before, the step it moved
  in) and is lost the same way when that step ran to the node's last record and the re-form
  came after a stall (:func:`_left_lost`, revA37 F1: 18 of 24 probe runs never paged).  A job
  ended, cancelled or stopped for a planned reboot leaves its GPUs idle (replay/sim's reboot)
  or on to the next job (the churning fleet), a node replaced under a running job leaves it
  stepping, a job on the node alone ending looks like its death: those wait
  for the 240 s path (and the jobs it counts are those noted once the node was quiet
  :data:`SUSPECT_S`, so a job whose GPUs went on to another job is none: the churning fleet's 15
  pages in 32 h -> 0).  A node of its part of the fleet that went dark with a node judged so
  (within :data:`DARK_WITH_S`) is judged with it, job or not; the part is paged once the nodes its
  sources saw go dark with them (named on two of a node's topics, or its only one: a service's
  one-topic partition reading a poll in bursts names a healthy node for a record missed) are
  judged too, or :data:`FAST_WAIT_S` on (a part going dark is judged together: one page listing
  it). blind9: 238-362 s -> 22-31 s.  A node one of whose topics went quiet (1.5 of its own
  interval) while another still reported is a collector's outage, not the node (:func:`_outage`,
  live35: blind26 F1's rolling dcgm-exporter upgrade across a checkpoint): the 240 s bound decides.
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
  spread over partitions waits :data:`FAST_WAIT_S` at most for those it does not name.)

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
_ROUNDED = 1e-3          # a job's last step time as a row holds it (rounded to the ms)
TOPICS = ("ecc", "nic", "thermal")
# A part of the fleet going dark (a switch, a rack's PDU): nodes whose records stopped this
# close together are named with a node's silence (``dark_with``) and its page waits for
# theirs -- at most CONFIRM_S after the node's own silence (a ``confirm`` finding).
DARK_WITH_S = 30.0
CONFIRM_S = 30.0
MAX_DARK = 256           # nodes named in one finding's ``dark_with`` (or ``nodes_absent``)
# A job's ranks on a node that took part in none of its last ABSENT_STEPS decided steps while it
# stepped on are absent from it: its steps prove nothing of that node (_stepping).
ABSENT_STEPS = 3
# A node lost under its job (silent19): every topic of the node quiet FAST_S, and past its own
# interval at the correlator's clock (_overdue), while a job with ranks on it,
# stepping up to then (within a step period and lateness_s of its last record, FAST_RUN_S at
# most: _ran_to), stopped stepping everywhere and
# its ranks on the other nodes wait in the collective (their GPUs busy with no step, nothing
# else stepping there) -- or its other nodes went dark with it.  Paged then, not after 240 s:
# a drained node's job ended or moved first, a reboot planned under a stopped job leaves its
# GPUs idle, a node replaced under a running job has its job stepping on.  Looked at for
# FAST_WINDOW_S past a topic's fast_s (FAST_INTERVALS of its interval, at least FAST_S, at most
# FAST_CAP_S); the nodes of its part that went dark with it join it (a part's page).
FAST_S = 20.0
FAST_INTERVALS = 1.5
FAST_CAP_S = 40.0
FAST_RUN_S = 30.0
FAST_WINDOW_S = 60.0
# A node whose NIC ports were all quiet from its job's stop on for this many of their
# intervals (FAST_RUN_S at least) before it went dark was idle, not saving (_idle_past_stop).
IDLE_POLLS = 2
FAST_WAIT_S = 2 * SCAN_S  # the most a part's judgment waits for nodes going dark with it
# A job moved on from a node's going dark when another job stepped on its GPUs this long after
# its own last step (the churning fleet's next job, starting as the node leaves).
MOVED_S = 1.0
# A correlator's node entry holds, beside its topics' findings, the one that made it silent
# on every topic: under _WAIT while its part's other nodes are awaited, _JUDGED once judged.
_WAIT, _JUDGED = "wait", "judged"
# defer32 (revA31 2): a node judged silent whose jobs all stopped stepping while it still
# reported (_ended_first: blind21 F1's firmware flash after its job's end -- or a node that died
# in its job's checkpoint save, the same telemetry until it stays dark) is not dropped: its
# judgement is deferred (under _DEFER, the jobs it excused) until every topic of it is still
# dark DEFER_S after its last record (the records' time, as the 240 s bound: a log's end or a
# feed stopping proves nothing), then paged.  45 minutes (defer32 chose 15; the lead's review,
# revA32 2, found the routine shape that paged): a reboot or a firmware flash's activation is
# back within minutes (the simulator's reboot 60-120 s, blind21 F1's flashes 180-300 s, a
# DGX-class host's POST with its memory training some 5-10 min), but the scheduler's own
# "reboot when the job ends" (Slurm's `scontrol reboot ASAP`), a firmware bundle or a re-image
# keeps an HGX host dark 20-40 min -- each one a page at 15 min, one per node of a rolling
# update.  A node dead in its job's save is paged late, not never (the scheduler marks it down
# itself at its own timeout); under unit_idle_s (an hour: its monitors, and the silence, are
# dropped then).
DEFER_S = 2700.0
_DEFER = "defer"
_NODE_KEYS = frozenset((*TOPICS, _WAIT, _JUDGED, _DEFER))  # a correlator's node entry's keys

# A source's entry for one node: [cluster, {topic: [newest ts, interval, updates, silent (0;
# 1 silent; 2 its ``confirm`` sent; 4 told ``quiet``: _quiet; 5 told ``still_dark`` DEFER_S
# on; 3, round 22's fast judgment, is restored as 4), the topic's progress at that record,
# the jobs on the node once it was quiet SUSPECT_S (None before; _jobs_on's rows)]}]; the topic's:
# [newest ts of any node, progress]
# (progress: how long the fleet was seen reporting, gaps of the feed capped at JUMP_CAP_S).
_LAST, _GAP, _N, _SILENT, _AT, _JOBS = range(6)


def bound_s(interval: float) -> float:
    """How long a node with records ``interval`` apart may be quiet on a topic."""
    return max(SILENT_MIN_S, SILENT_INTERVALS * interval)


def fast_s(interval: float) -> float:
    """How long a node with records ``interval`` apart is quiet on a topic before its source's
    window of telling it ``quiet`` (:data:`FAST_WINDOW_S`, :func:`_window_left`) begins."""
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
    quiet: set[str] = set()  # nodes quiet on a topic long enough for _quiet to look at them
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
                if st[_SILENT] not in (1, 2, 5):  # (a silence told past its bound is no interval:
                    #   a node back, or a collector's held rows sent at once -- blind15 O4)
                    st[_GAP] = gap if gap > st[_GAP] else \
                        st[_GAP] + (gap - st[_GAP]) * GAP_DECAY
                st[_N] += 1
                st[_LAST] = last
                st[_AT] = progress - behind
                st[_JOBS] = None
                if st[_SILENT]:
                    st[_SILENT] = 0
                    findings.append(_finding(mon, node, entry[0], what, st, clock, False, 0))
                if st[_N] >= MIN_UPDATES and behind > FAST_S:
                    # (a source whose records come in bursts -- an ECC poll of all nodes every
                    # 30 s -- scans at a burst's first record: a node's last, noticed now, may
                    # be FAST_S behind the fleet already)
                    quiet.add(node)
                continue
            if st[_SILENT] == 2 and progress - st[_AT] > DEFER_S:
                # still dark a reboot's or a firmware flash's minutes on: told once more, for
                # a node whose judgement a job's end deferred (on_silent, _still_dark)
                st[_SILENT] = 5
                f = _finding(mon, node, entry[0], what, st, clock, True, max(
                    1, len(times) - bisect_right(times, last + DEFER_S)))
                f.evidence["still_dark"] = True
                f.evidence["dark_s"] = round(progress - st[_AT], 3)
                findings.append(f)
                continue
            if st[_SILENT] in (2, 5) or st[_N] < MIN_UPDATES:
                continue
            if st[_JOBS] is None and mon._jobs and progress - st[_AT] > max(
                    SUSPECT_S, 2 * st[_GAP]):
                # quiet a while: the jobs with ranks there now, before a job that stalled with
                # it is re-formed on other nodes (NCCL's timeout, then a restart: minutes)
                st[_JOBS] = _jobs_on(mon, node, -math.inf)
            bound = bound_s(st[_GAP])
            if st[_SILENT] == 1:
                if progress - st[_AT] > bound + CONFIRM_S:  # still quiet: a part's wait ends
                    st[_SILENT] = 2
                    findings.append(_finding(mon, node, entry[0], what, st, clock, True, 0))
                continue
            # (each topic told quiet from FAST_S: the correlator judges a node once every topic
            # missed its rows, _overdue -- one topic of a node is a service partition's whole view)
            if FAST_S < progress - st[_AT] <= fast_s(st[_GAP]) + FAST_WINDOW_S:
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
    if quiet:  # the correlator judges them, with the jobs' stops (_stops) and layouts
        _quiet(mon, sorted(quiet), newest, prog, times_of, findings)
    if mon._jobs:
        _stops(mon, findings)
        _reforms(mon, findings)
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
             clock: float, active: bool, later: int) -> Finding:
    """``later``: other nodes heard past its silence (active; 0: still silent
    :data:`CONFIRM_S` later); -1: its monitors were dropped (silent for ``unit_idle_s``: it
    left the fleet), 0: heard again."""
    ev: dict[str, Any] = {"topic": what, "last_ts": round(st[_LAST], 3),
                          "interval_s": round(st[_GAP], 3), "bound_s": bound_s(st[_GAP])}
    if later < 0:
        ev["dropped"] = True
    if what == "nic" and active and (idle := _nic_idle(mon, node)) is not None:
        ev["nic_idle_ts"] = round(idle, 3)  # (its ports quiet since: _idle_past_stop)
    if active and later == 0:
        ev["confirm"] = True
    elif active:
        ev["nodes_heard_since"] = later
        if mon._jobs:  # this source sees step records: which jobs ran on the node to the end
            ev["steps_seen"] = True
            since = st[_LAST] - max(RUNNING_S, 2 * st[_GAP])
            # as noted once it was quiet SUSPECT_S (the job's GPUs may have gone on to other
            # jobs, and its other nodes left, since: the churning fleet), else as now
            jobs = _jobs_on(mon, node, since) if st[_JOBS] is None else [
                j for j in st[_JOBS] if j[2] >= since and not _went_on_without(mon, node, j)]
            if jobs:
                ev["jobs"] = jobs
    return Finding(clock, st[_LAST], "silent", "unattributed", "unknown", Scope.of_node(node),
                   active, False, 0.9 if active else 0.0, ev, cluster=cluster)


def _nic_idle(mon: Monitors, node: str) -> float | None:
    """When ``node``'s NIC ports last stopped carrying traffic (detector.network's ``busy``,
    ``idle_ts``), every one of them idle on its latest sample; None while one was busy, or
    none ever carried any."""
    nics = mon._nics.get(node)
    if nics is None or not nics._ports:
        return None
    ports = nics._ports.values()
    if any(p.busy for p in ports):
        return None
    idle = max(p.idle_ts for p in ports)
    return idle if math.isfinite(idle) else None


def _jobs_on(mon: Monitors, node: str, since: float) -> list[list[Any]]:
    """[job, ranks on the node, its last step's time] of this source's jobs that still have
    ranks there and stepped at ``since`` or later -- running when the node went quiet (the
    in-process engine's one source sees them; a service's step partitions do not).  A job
    that ended before (a node drained, then taken out), whose ranks moved to other nodes
    (a node replaced under a running job), that steps on without its ranks there (an elastic
    job re-formed without the node: :func:`_ranks_on`), or whose other GPUs went on with
    another job (it ended as the node left: the churning fleet) is not."""
    out = []
    for name, job in mon._jobs.items():
        if job.clock < since:
            continue
        n = _ranks_on(job, node)
        if n and not _moved(mon, name, {(hw[0], hw[1]) for hw in job._hw
                                        if hw is not None and hw[0] != node}, job.clock):
            # (its last step decided: a re-form's first steps, still waiting for the ranks
            # the node held, are no step of it there -- job.clock, their messages' time, made
            # a node dark 40 s into its job's save look stepped past: dark39)
            t = job._last_step_ts
            out.append([name, n, round(t if math.isfinite(t) else job.clock, 3)])
            if len(out) >= MAX_JOBS:
                break
    return out


def _ranks_on(job: Any, node: str) -> int:
    """How many of the job's ranks run on ``node``: its slots there, but those of ranks that
    left it (:func:`_left`) -- a slot still naming the node long after the job re-formed
    without it is not one (blind27 F3 and the churn corpus's other dark page: a 96-rank job
    shrunk to 88 kept eight slots on a VM reclaimed 60 steps later)."""
    left = _left(job)
    return sum(1 for s, hw in enumerate(job._hw) if hw is not None and hw[0] == node
               and s not in left)


def _left(job: Any) -> set[int]:
    """The job's slots whose ranks left it: in none of its last :data:`ABSENT_STEPS` decided
    steps (:func:`_present`) nor in any since its ranks last moved to other hardware (a
    re-form: ``JobMonitor._moved_at``).  A slot absent with no re-form since is a rank whose
    records are lost while the job steps on (its node's steps prove nothing of it:
    ``nodes_absent``), still a rank there."""
    present = _present(job)
    moved = job._moved_at
    if present is None or moved <= job._whole_at:
        return set()
    seen = job._seen_at
    return {s for s in range(min(len(job._rank_of), len(job._hw))) if s not in present
            and (s >= len(seen) or seen[s] < moved)}


def _went_on_without(mon: Monitors, node: str, row: list[Any]) -> bool:
    """Whether the job of a row noted once ``node`` was quiet (:func:`_jobs_on`: [job, ranks,
    its last step then]) stepped on since without ranks there, from where it stopped, having
    stopped before the node went quiet -- its last step as noted more than a step period and
    ``lateness_s`` before the node's newest record: a save, then a re-form without the node
    (blind27 F3: a spot VM reclaimed during its job's rendezvous; noted while the job paused,
    its ranks still there) -- or in a save: its last step far over its period
    (``JobMonitor._moved_gap``'s last: a checkpoint written in it) and the re-form going on from
    it (dark39: blind27 held churn-s6, a VM reclaimed with a 30 s notice while its job saves
    through the notice, dark 1.8 s after the save's step).  A node's death stops its job within
    a step of its last row: a job restarted without it after a crash had its last step then,
    a routine one (blind7 G4), and stays the node's.  So does a job that went back to an
    older checkpoint since (``JobMonitor._went_back``, a step or more behind the step it
    stopped at: the save never finished -- revA38 F6, the node dead 8-40 s into its job's
    save, 0 of 24 paged in 600 s): that is what a crash looks like, not a planned leave."""
    job = mon._jobs.get(row[0])
    entry = mon._alive.get(node)
    if job is None or entry is None or not job.clock > row[2] or _ranks_on(job, node):
        return False
    if _went_back(job, row[2]):
        return False
    period = job._period if math.isfinite(job._period) else 0.0
    before, _at, saved = job._moved_gap
    return row[2] + period + mon.cfg.lateness_s < _newest(entry) or (
        saved and before >= row[2] - _ROUNDED)


def _went_back(job: Any, t: float) -> int:
    """How many steps job ``job`` went back when it restarted after its step at ``t`` (a
    checkpoint behind the step it stopped at; 0: none since, or it resumed where it stopped)."""
    at, back = job._went_back
    return back if at >= t and back >= 1 else 0


def _moved(mon: Monitors, name: str, gpus: set[tuple[str, int]], t: float) -> bool:
    """Whether another job stepped on one of ``gpus`` (job ``name``'s) after its last step
    at ``t``: the job ended and its GPUs went on, whatever became of a node of it."""
    if gpus:
        for other, job in mon._jobs.items():
            if other != name and job.clock > t + MOVED_S and any(
                    hw is not None and (hw[0], hw[1]) in gpus for hw in job._hw):
                return True
    return False


def _ready(mon: Monitors, nodes: list[str], prog: dict[str, float],
           times_of: dict[str, list[float]]) -> dict[str, tuple[float, int]]:
    """node -> (its newest record, nodes heard past it) of the ``nodes`` quiet :data:`FAST_S`
    on every topic of this source while other nodes were heard past it, each topic not
    silent (0) or told quiet (4) -- the correlator waits until every topic has missed its
    rows (:func:`_overdue`: an ECC poll of 30 s is told quiet from 20 s, its last record may be
    a poll before)."""
    ready: dict[str, tuple[float, int]] = {}
    for node in nodes:
        entry = mon._alive.get(node)
        if entry is None or not entry[1]:
            continue
        later = 0
        for what, st in entry[1].items():
            if st[_SILENT] not in (0, 4) or st[_N] < MIN_UPDATES or what not in prog or \
                    prog[what] - st[_AT] <= FAST_S:
                break
            times = times_of[what]
            later = max(later, len(times) - bisect_right(times, st[_LAST] + FAST_S))
        else:
            if later:
                ready[node] = (max(st[_LAST] for st in entry[1].values()), later)
    return ready


def _quiet(mon: Monitors, nodes: list[str], newest: dict[str, dict[str, float]],
           prog: dict[str, float], times_of: dict[str, list[float]],
           findings: list[Finding]) -> None:
    """Tell the correlator -- which sees every partition's job layouts, job stops and busy
    GPUs, and every source's word on a node -- that a node is quiet: a ``silent`` finding
    with ``quiet`` at the fast bound, again each scan of :data:`FAST_WINDOW_S` (the
    correlator's judgement may need the job's other GPUs to be seen idle or busy first, and
    a part's waits on these), naming the nodes of this source that went dark with it
    (``dark_with``: quiet too, or a record missed on every topic, within
    :data:`DARK_WITH_S`: its part's nodes not quiet long enough yet) -- and keep waiting for
    the 240 s bound (state 4).  :func:`on_silent` judges it."""
    ready = _ready(mon, nodes, prog, times_of)
    if not ready:
        return
    dark = {n: t for n, (t, _) in ready.items()}
    for n, e in mon._alive.items():
        if n not in dark and _missed(e, newest):
            dark[n] = _newest(e)
    for node, (last, later) in ready.items():
        entry = mon._alive[node]
        with_ = sorted(n for n, t in dark.items() if n != node and abs(t - last) <= DARK_WITH_S)
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
        if t > job.stop_told > -math.inf:
            # it stepped again: its stop is over (the correlator's _stepping: a job that steps
            # proves its nodes alive) -- under keys a correlator before round 25 passes over
            findings.append(Finding(
                clock, t, "silent", "unattributed", "unknown", Scope.of_job(name), False, False,
                0.0, {"resumed_ts": round(t, 3), "stopped_ts": round(job.stop_told, 3),
                      "step_period_s": round(period, 3)}, name, job.tenant, job.cluster))
            job.stop_told = -math.inf
        if prev < t + stop_s(period) <= clock:
            findings.append(Finding(
                clock, t, "silent", "unattributed", "unknown", Scope.of_job(name), True, False,
                0.0, {"last_step_ts": round(t, 3), "step_period_s": round(period, 3)},
                name, job.tenant, job.cluster))
            job.stop_told = t
        elif t + stop_s(period) > clock and (absent := _absent(job)) != job.absent_told:
            # nodes whose ranks it steps on without (an elastic job that lost a node, its
            # ranks' records lost): its steps prove nothing of them (_stepping)
            findings.append(Finding(
                clock, t, "silent", "unattributed", "unknown", Scope.of_job(name), bool(absent),
                False, 0.0, {"nodes_absent": absent}, name, job.tenant, job.cluster))
            job.absent_told = absent
        if look_due(period, prev - t, clock - t):  # (still silent: a hung rank? detector.hang)
            findings.append(Finding(
                clock, t, "silent", "unattributed", "unknown", Scope.of_job(name), True, False,
                0.0, {"last_step_ts": round(t, 3), "step_period_s": round(period, 3),
                      "hang_s": hang_s(period)}, name, job.tenant, job.cluster))


def _reforms(mon: Monitors, findings: list[Finding]) -> None:
    """revA37 F1: a job whose ranks moved to other hardware since the last scan and left some
    nodes altogether (an elastic re-form without them: torchelastic onto a spare, or on fewer
    nodes) -- or that steps on without a node's ranks (``nodes_absent``, :func:`_stops`: a
    re-form on fewer nodes that dropped the top ranks, no rank moving) -- is a ``silent``
    finding at the job's scope naming those nodes (``nodes_left``: [node, its slots]) with the
    job's last step before the move or its first step without them (``left_step_ts``) and
    that step (``reformed_ts``; ``JobMonitor._moved_gap``).  Its ranks no longer name (or
    step on) the node, so a node that died in the step in flight and whose job re-formed
    before the node was told quiet had no job on it any more (18 of 24 probe runs never
    paged); the correlator judges the node with this (:func:`_left_lost`).  What the source
    keeps is the job's nodes as last looked at (``JobMonitor._live_nodes``, not state: a
    re-form across a restore is not told), made again only when its ranks moved; a node it
    left long ago leaves nothing (its slots stay until ``_GONE_STEPS`` on: the next re-form
    tells it then, its last step long before the node's end)."""
    for name, job in mon._jobs.items():
        mark = (job._moves, job.restarts)
        was = job._live_nodes
        absent = job.absent_told
        if was is not None and was[:2] == mark:
            if was[3] == absent:
                continue
            nodes = was[2]
        else:
            nodes = {}
            for hw in job._hw:
                if hw is not None:
                    nodes[hw[0]] = nodes.get(hw[0], 0) + 1
        job._live_nodes = (*mark, nodes, absent)
        if was is None:
            continue
        # (absent: a shrink that dropped the top ranks, the others' slots kept -- _stops)
        left = [[n, k] for n, k in sorted(was[2].items())
                if n not in nodes or (n in absent and n not in was[3])]
        before, at, _saved = job._moved_gap
        if left and math.isfinite(before) and math.isfinite(at):
            period = job._period if math.isfinite(job._period) else 0.0
            ev = {"nodes_left": left[:MAX_DARK], "left_step_ts": round(before, 3),
                  "reformed_ts": round(at, 3), "step_period_s": round(period, 3)}
            if back := _went_back(job, before):
                ev["steps_back"] = back  # (restarted from an older checkpoint: a crash)
            findings.append(Finding(
                mon.clock, before, "silent", "unattributed", "unknown", Scope.of_job(name),
                True, False, 0.0, ev, name, job.tenant, job.cluster))


def _absent(job: Any) -> list[str]:
    """The nodes (at most :data:`MAX_DARK`) none of whose ranks took part in the job's last
    :data:`ABSENT_STEPS` decided steps (:func:`_present`)."""
    present = _present(job)
    if present is None:
        return []  # (every rank in a recent step: the usual job, one compare)
    hw = job._hw
    nodes = {h[0] for s in range(min(len(job._rank_of), len(hw))) if (h := hw[s]) is not None}
    return sorted(nodes - {hw[s][0] for s in present})[:MAX_DARK]


def _present(job: Any) -> set[int] | None:
    """The job's slots whose ranks took part in one of its last :data:`ABSENT_STEPS` decided
    steps (detector.steps: a slot's last step, counted in evaluations; a step with every rank
    in it counts for all); None: every slot (such a step, or too few steps yet).  A slot whose
    rank has not stepped since is a rank that left -- an elastic job that shrank or re-formed
    keeps its slot, naming the hardware it last ran on, until ``_GONE_STEPS`` (256) steps on:
    blind27 F3 -- or whose records were lost."""
    last = job._evaluated - ABSENT_STEPS
    if last < 0 or job._whole_at >= last:
        return None
    seen, hw = job._seen_at, job._hw
    return {s for s in range(min(len(job._rank_of), len(hw), len(seen)))
            if hw[s] is not None and seen[s] >= last}


def _newest(entry: list[Any]) -> float:
    """A source entry's newest record on any topic."""
    return max((st[_LAST] for st in entry[1].values()), default=-math.inf)


def _missed(entry: list[Any], newest: dict[str, dict[str, float]]) -> bool:
    """Whether a node not told quiet or silent is quiet half its :func:`fast_s` on every
    topic (a record or more missed everywhere), as a node going dark with others is."""
    tops = entry[1]
    return bool(tops) and not any(st[_SILENT] for st in tops.values()) and all(
        newest[w] and max(newest[w].values()) - st[_LAST] > fast_s(st[_GAP]) / 2
        for w, st in tops.items())


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
            if type(st) is list and len(st) == 6 and type(st[_SILENT]) is int and \
                    st[_SILENT] == 3:
                st[_SILENT] = 4  # (round 22's fast judgment: its correlator has the node)
            if what not in TOPICS or type(st) is not list or len(st) != 6 or not (
                    type(st[_LAST]) is float and type(st[_GAP]) is float
                    and type(st[_N]) is int and type(st[_SILENT]) in (int, bool)
                    and st[_SILENT] in (0, 1, 2, 4, 5)  # (a bool before round 18)
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


def check_corr_restored(corr: Any) -> bool:
    """Whether a restored correlator's ``_silent`` has the shape :func:`on_silent` reads:
    node -> {topic, _WAIT, _JUDGED or _DEFER: a finding} (a deferral naming at most
    :data:`MAX_JOBS` jobs), and the jobs' entries (_STOPS, _ABSENT) job -> a finding, each
    bounded."""
    silent = getattr(corr, "_silent", None)
    if type(silent) is not dict or len(silent) > MAX_NODES + len(_JOBS_KEYS):
        return False
    for node, topics in silent.items():
        if type(node) is not str or type(topics) is not dict:
            return False
        if node in _JOBS_KEYS:
            if len(topics) > MAX_STOPS or not all(
                    type(j) is str and type(g) is Finding and type(g.evidence) is dict
                    for j, g in topics.items()):
                return False
            continue
        if not all(w in _NODE_KEYS and type(g) is Finding and type(g.evidence) is dict
                   for w, g in topics.items()):
            return False
        held = topics.get(_DEFER)
        if held is not None and not (type(jobs := held.evidence.get("jobs")) is list and len(
                jobs) <= MAX_JOBS and all(_job_row(j) for j in jobs)):
            return False
    return True


def _job_row(j: Any) -> bool:
    """A deferral's job row as :func:`_jobs_of` writes it (it goes verbatim into a page's
    evidence: revA32 4): its job's name, its ranks there, when it last stepped."""
    return (type(j) is dict and type(j.get("job")) is str and len(j["job"]) <= 256
            and j.keys() <= {"job", "ranks", "last_step_ts"}
            and all(type(v := j.get(k, 0)) in (int, float) and v == v
                    for k in ("ranks", "last_step_ts")))


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
            topics.pop(_DEFER, None)  # (heard again: its flash or reboot is over)
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
            if node in silent and any(w in TOPICS for w in silent[node]):
                # Not steady yet: still silent on a topic it went silent on -- or that topic's
                # collector did not come back with the node (a NIC exporter not restarted):
                # then the page resolves flap_window_s after this topic came back (the rule
                # before cap19), not when the silent topic's unit is pruned an hour later as
                # "left the fleet" (review30).  Every topic back first: 30 s after the last.
                p.extra["resolved_because"] = f"{node} reported on {what} again"
                corr._schedule_resolve(
                    p, f.ts, max(corr.cfg.flap_window_s, corr.cfg.resolve_after_s))
                return
            p.extra["resolved_because"] = (
                f"no telemetry from {node} for {corr.cfg.unit_idle_s:g} s: it left the fleet"
                if f.evidence.get("dropped") is True else f"{node} reported on {what} again")
            corr._schedule_resolve(p, f.ts)
        return
    topics = silent.get(node)
    if topics is not None and what not in topics and any(w in TOPICS for w in topics):
        # Silent again on a topic it came back on, others still silent: not back -- the
        # resolve its return set (flap_window_s on) is called off (review30).
        p = _page_of(corr, node, f.cluster)
        if p is not None and p.status == "firing":
            p.quiet_since = math.inf
    if topics is None:
        if len(silent) >= MAX_NODES:
            return
        topics = silent[node] = {}
    if f.evidence.get("confirm") is True:  # still quiet CONFIRM_S on: its part waits no more
        if _WAIT in topics:
            _flush(corr, node, f, out)
        return
    if _WAIT in topics or _JUDGED in topics:
        if not _is_quiet(f) or what not in topics:
            topics[what] = f
            if _DEFER in topics and f.evidence.get("still_dark") is True:
                _still_dark(corr, node, f, out)
        elif _WAIT in topics and topics[_WAIT].evidence.get("job_stalled") is True:
            _retold(corr, node, what, f, out)
        return
    topics[what] = f
    uses = _uses(corr, node, topics)
    if not uses or any(w not in topics for w in uses):
        return  # still heard on another topic (a collector's lag, not the node)
    if any(_is_quiet(topics[w]) for w in uses):
        _on_quiet(corr, node, f.ts, out)
        return
    _judge(corr, node, f, out)


def is_dark_page(p: Any) -> bool:
    """Whether problem ``p`` is a silent page (:func:`_page`: a node, or a part of the fleet,
    gone dark under its jobs).  It resolves ``resolve_after_s`` after its node reports again
    on every topic it went silent on (:func:`on_silent`), not after a soft signal's
    ``flap_window_s``: a node heard again is back -- there is no limit it hovers near -- and
    an operator watching a rebooted node wants its page gone once it reports steadily (it
    was 600 s); a node that goes dark again is paged again, under the same dedup_key."""
    return p.topic == ESCALATION and p.kind == "unattributed" and "silent_s" in p.extra


def _uses(corr: Correlator, node: str, topics: dict[str, Finding]) -> list[str]:
    """The topics ``node`` was seen on (all of which must be silent)."""
    seen = corr.seen
    return [w for w in TOPICS if seen(node, w)] if seen is not None else [
        w for w in topics if w in TOPICS]


def _judge(corr: Correlator, node: str, f: Finding, out: list[Alert]) -> None:
    """``node`` silent on every topic it used: judge it, with its part of the fleet -- unless
    a job with ranks on it stepped well past its silence (:func:`_stepping`: its collector's,
    not the node's; judged again when that job stops, :func:`_on_stop`)."""
    silent = corr._silent
    topics = silent[node]
    last = _last(topics)
    if last is not None and _stepping(corr, node, topics, last, f.ts):
        return
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
# corr._silent's entry holding the jobs stepping on without some nodes' ranks: job -> its
# ``nodes_absent`` finding (_stops), at most MAX_STOPS.
_ABSENT = "\0absent"
# ... and the jobs re-formed without some nodes: job -> its latest ``nodes_left`` finding
# (_reforms), at most MAX_STOPS.
_LEFT = "\0left"
_JOBS_KEYS = (_STOPS, _ABSENT, _LEFT)
# revA37 F1: a job re-formed without a node after a stall lost it (_left_lost) -- the re-form
# came this long (and three of its steps) after the job's last step: the step in flight never
# ended, its ranks waited in the collective (NCCL's timeout, torchelastic's rendezvous).  A node
# replaced under a running job has its ranks go on at once (a cold first step at most).
REFORM_GAP_S = 10.0


def _on_stop(corr: Correlator, f: Finding, out: list[Alert]) -> None:
    """A job stopped stepping (:func:`_stops`): kept, and the quiet nodes it has ranks on
    judged again, and those silent on every topic whose judgement its steps held
    (:func:`_judge`).  A job stepping again (inactive, ``resumed_ts``): kept, as its stop's
    end."""
    job = f.job
    silent = corr._silent
    if job is not None and "nodes_left" in f.evidence:  # re-formed without them (_reforms)
        left = silent.get(_LEFT)
        if f.active and _is_time(f.evidence.get("left_step_ts")) and (
                left is not None or len(silent) < MAX_NODES):
            left = silent.setdefault(_LEFT, {})
            if job in left or len(left) < MAX_STOPS:
                left[job] = f
                _judge_again(corr, _left_ranks(f), f, out)
                _undefer(corr, f, out)
        return
    if job is not None and "nodes_absent" in f.evidence:  # stepping on without their ranks
        absent = silent.get(_ABSENT)
        if not f.active or type(f.evidence["nodes_absent"]) is not list:
            if absent is not None:
                absent.pop(job, None)
        elif absent is not None or len(silent) < MAX_NODES:
            absent = silent.setdefault(_ABSENT, {})
            if job in absent or len(absent) < MAX_STOPS:
                absent[job] = f
        return
    if job is None or not _is_time(f.evidence.get(
            "last_step_ts" if f.active else "resumed_ts")):
        return
    stops = silent.get(_STOPS)
    if stops is None:
        if len(silent) >= MAX_NODES:
            return
        stops = silent[_STOPS] = {}
    if job not in stops and len(stops) >= MAX_STOPS:
        return
    stops[job] = f
    if not f.active:
        return
    _judge_again(corr, {hw[0] for hw in corr._placement.ranks.get(job, {}).values()}, f, out)


def _undefer(corr: Correlator, f: Finding, out: list[Alert]) -> None:
    """The nodes whose judgement their job's end deferred (:func:`_page`, ``_DEFER``) that the
    job, re-formed without them (``f``), went back to an older checkpoint for
    (:func:`_back_without`: it crashed with them, the re-form later than the 240 s bound):
    paged now, unless a page names them already."""
    for node in sorted(_left_ranks(f)):
        topics = corr._silent.get(node)
        last = None if topics is None or _DEFER not in topics else _last(topics)
        if last is not None and _back_without(corr, f, last, node):
            del topics[_DEFER]
            if _page_of(corr, node, f.cluster) is None:
                _page(corr, None, [node], f, out)


def _judge_again(corr: Correlator, nodes: Any, f: Finding, out: list[Alert]) -> None:
    """The ``nodes`` of a job told stopped or re-formed without them (``f``), judged again:
    those quiet on every topic they used (:func:`_on_quiet`), and those silent on every one
    whose judgement a job's steps held (:func:`_judge`)."""
    silent = corr._silent
    for node in sorted(nodes):
        topics = silent.get(node)
        if topics is not None and _WAIT not in topics and _JUDGED not in topics:
            uses = _uses(corr, node, topics)
            if uses and all(w in topics and _is_quiet(topics[w])
                            for w in uses):
                _on_quiet(corr, node, f.ts, out)
            elif uses and all(w in topics and not _is_quiet(topics[w]) for w in uses):
                _judge(corr, node, topics[uses[0]]._replace(ts=f.ts), out)


def _stepping(corr: Correlator, node: str, topics: dict[str, Finding], last: float,
              now: float) -> bool:
    """Whether a job with ranks on ``node`` (the job layouts) stepped well past its newest
    record ``last``: its ranks computed, so the node is alive and only its collector is silent
    (a stuck exporter, a full buffer, a restarted sidecar sending minutes of rows at once
    later: blind15 O4).  "Well past": beyond ``near`` -- :data:`FAST_RUN_S`, or two of the
    node's record intervals (its last sample may be an interval older than its end) -- as
    the job's stop says (it stopped later, :func:`_stops`), or because its source has told
    no stop by ``now`` though a stall with the node would have been told (:func:`stop_s` of
    its period, two scans) -- unless it stopped as the node went quiet and steps again since:
    a job re-formed, maybe without the node (NCCL's timeout, a restart elsewhere).

    A job that stopped lost with the node (:func:`_lost`: stopped everywhere, its GPUs on the
    other nodes waiting in the collective) proves it alive up to its last step only: that is
    the node's last sign of life, and the node died there -- a collector holding the node's
    rows dies with it, and the job's stall is the death's (live26: never paged before)."""
    stops = corr._silent.get(_STOPS) or {}
    absent = corr._silent.get(_ABSENT) or {}
    near = max([FAST_RUN_S] + [2.0 * i for g in topics.values() if _is_time(
        i := g.evidence.get("interval_s"))])
    lost: set[str] | None = None
    for job in sorted({j for j, _ in corr._placement.on_node.get(node, {})}):
        gone = absent.get(job)
        if gone is not None and type(ns := gone.evidence.get("nodes_absent")) is list and (
                node in ns or len(ns) >= MAX_DARK):
            continue  # (it steps on without the node's ranks -- or without more nodes than
            #            its finding could name, this one maybe among them: review26)
        stop = stops.get(job)
        period = 0.0
        if stop is not None:
            ev = stop.evidence
            if stop.active:  # stopped: stepping until its last step
                if _is_time(t := ev.get("last_step_ts")) and t > last + near:
                    if lost is None:
                        lost = {j[0] for j in _lost(corr, node, last, now)}
                    if job not in lost:
                        return True
                continue
            if not _is_time(s0 := ev.get("stopped_ts")) or abs(s0 - last) <= near:
                continue  # (stopped with the node, stepping since: re-formed)
            if _is_time(p := ev.get("step_period_s")) and p > 0:
                period = p
        if now - last > max(RUNNING_S, stop_s(period) + 2 * SCAN_S + near):
            return True
    return False


def _is_quiet(f: Finding) -> bool:
    """A ``quiet`` finding (:func:`_quiet`), not a silence."""
    return f.evidence.get("quiet") in TOPICS


def _is_time(x: Any) -> bool:
    return type(x) in (float, int) and math.isfinite(x)


def _retold(corr: Correlator, node: str, what: str, f: Finding, out: list[Alert]) -> None:
    """A node judged in seconds, waiting for its part, told quiet again on ``what``: the
    nodes its source names now as going dark with it replace those it named (a node named
    for a record missed and heard since is no longer awaited); its part is paged when none
    is still to come, :data:`FAST_WAIT_S` after its judgement, or when this may be the
    topic's last (:data:`FAST_WINDOW_S`)."""
    topics = corr._silent[node]
    g = topics[what]
    if g.evidence.get("dark_with") != f.evidence.get("dark_with"):
        ev = {k: v for k, v in g.evidence.items() if k != "dark_with"}
        if f.evidence.get("dark_with"):
            ev["dark_with"] = f.evidence["dark_with"]
        topics[what] = g._replace(evidence=ev)
    if f.ts - topics[_WAIT].ts > FAST_WAIT_S or _window_left(corr, f, f.ts) < SCAN_S or \
            not _to_come(corr, node, f):
        _flush(corr, node, f, out)


def _quiet_at(corr: Correlator, f: Finding, now: float) -> float:
    """How long a ``quiet`` finding's topic has been quiet at the correlator's ``now`` (-inf:
    not told).  Its source counts ``quiet_s`` on the topic's own progress: up to the fleet's
    newest record on that topic, ``last_ts + quiet_s`` -- a topic polled in bursts (the
    fleet's ECC rows every 30 s, within seconds of each other) lags the source's clock by up
    to an interval, and a finding is judged later than told (a job's stop, another partition's
    word).  The time since is counted too, less DESIGN's disorder (``lateness_s``: a row
    stamped then may still come): the correlator's clock moves on the records of every
    source, so that time passed with the fleet reporting (live36: blind9 G2's rack, one
    node's 30 s ECC poll told 29 s quiet for two scans, judged a scan late).  A gap in the
    feed counted so makes a topic look quiet longer: past its window (:func:`_window_left`),
    the 240 s bound decides."""
    q, t = f.evidence.get("quiet_s"), f.evidence.get("last_ts")
    if not (_is_time(q) and _is_time(t)):
        return -math.inf
    return q + max(0.0, now - (t + q) - corr.cfg.lateness_s)


def _window_left(corr: Correlator, f: Finding, now: float) -> float:
    """How long, at ``now``, a ``quiet`` finding's source still tells its topic quiet: its
    window, :data:`FAST_WINDOW_S` past its fast bound (``bound_s``, :func:`_quiet`), less
    the time it has been quiet (:func:`_quiet_at`); -inf: not told.  Past it, the 240 s
    bound decides (:func:`_in_window`), and a part waits no more (:func:`_retold`)."""
    b = f.evidence.get("bound_s")
    return b + FAST_WINDOW_S - _quiet_at(corr, f, now) if _is_time(b) else -math.inf


def _on_quiet(corr: Correlator, node: str, now: float, out: list[Alert]) -> None:
    """``node`` quiet on every topic it used (its sources' ``quiet`` findings, some maybe
    silent past the 240 s bound already): judged now when a job was lost with it, or it went
    dark with a node of its part judged so (:func:`_fast_judged`) -- with the nodes its
    sources saw go dark with it that are quiet already -- else the 240 s bound decides.  A
    part going dark is paged together: once the nodes still to come with it (:func:`_to_come`)
    are judged too, else when one of those judged is told quiet again :data:`FAST_WAIT_S`
    after its judgement (:func:`_retold`) -- at once when no topic of it will be told again
    (judged late in its :data:`FAST_WINDOW_S`: a job's stop told late)."""
    judged = _fast_judged(corr, node, now)
    if judged is None:
        return
    tried = {node}
    while todo := [n for n in _to_come(corr, node, judged)
                   if n not in tried and _dark(corr, n)]:
        for n in todo:  # (told quiet before a job was seen lost with it)
            tried.add(n)
            _fast_judged(corr, n, now)
    if not _to_come(corr, node, judged) or not any(
            _window_left(corr, g, now) >= SCAN_S
            for w, g in corr._silent[node].items() if w in TOPICS):
        _flush(corr, node, judged, out)


def _fast_judged(corr: Correlator, node: str, now: float) -> Finding | None:
    """Judge ``node``, quiet on every topic it used, in seconds: its findings, saying so (as
    the 240 s path's, and with the jobs lost with it) at ``now``, under _WAIT; None (nothing
    changed) when it is not quiet long enough yet or neither lost a job (:func:`_lost`) nor
    went dark within :data:`DARK_WITH_S` of a node of its part judged so (a rack's idle
    node)."""
    topics = corr._silent.get(node)
    if topics is None or _WAIT in topics or _JUDGED in topics:
        return None
    found = [g for w, g in topics.items() if w in TOPICS]
    last = _last(topics)
    if last is None:
        return None
    if _outage(found, last):
        return None  # (a collector's outage: the 240 s bound decides)
    if not all(_overdue(corr, g, now) > 0 for g in found if _is_quiet(g)):
        return None  # (a topic not due yet: told again next scan)
    if not _in_window(corr, found, now):
        return None  # (the 240 s bound decides: a job's other nodes may have left since)
    jobs = _lost(corr, node, last, now)
    if not jobs and not _near_judged(corr, node, last, found[0].cluster):
        return None
    judged = None
    for w, g in list(topics.items()):
        if w in TOPICS:
            ev = {k: v for k, v in g.evidence.items() if k not in ("quiet", "jobs")}
            ev["topic"] = w
            ev.update(steps_seen=True, job_stalled=True)
            if jobs:
                ev["jobs"] = jobs
            judged = topics[w] = g._replace(evidence=ev)
    if judged is not None:
        judged = topics[_WAIT] = judged._replace(ts=now)  # (when its wait began)
    return judged


def _outage(found: list[Finding], last: float) -> bool:
    """Whether a topic of a node was quiet while the node still spoke on another (live35,
    blind26 F1): its last record more than :data:`FAST_INTERVALS` of its own interval (at least
    :data:`FAST_S`) older than the node's newest record ``last``.  A node going dark stops every
    channel at once -- each topic's last record within an interval of its end -- while a
    collector's outage (a rolling dcgm-exporter upgrade: its GPU rows missing 35-70 s, the
    port counters and the steps flowing) leaves one topic dark while another reports: that
    collector is out, not the node, and a job's checkpoint stall then is the job's own pause.
    Not judged in seconds then (the 240 s bound, every topic silent, still decides)."""
    for g in found:
        t, i = g.evidence.get("last_ts"), g.evidence.get("interval_s")
        if _is_time(t) and _is_time(i) and last - t > max(FAST_S, FAST_INTERVALS * i):
            return True
    return False


def _overdue(corr: Correlator, f: Finding, now: float) -> float:
    """How long past its due a ``quiet`` finding's topic is quiet at ``now`` (> 0: it has
    missed its rows; -inf: not told) -- the one rule for "this topic of this node stopped"
    (live36; before, a node's quickest topic was held to its fast bound and the others to
    their interval, two readings of the same evidence).  It reads the time quiet, re-aged to
    the correlator's clock (:func:`_quiet_at`), against its due: the topic's own interval
    (``interval_s``: the largest gap between its records lately, its jitter in it -- quiet
    longer, a row missed at its own cadence) and at least :data:`FAST_S` (two scans of the
    fleet heard past it).  Not paged by it: port counters polled every 30 s, quiet 26-29 s
    while a node's GPU collector restarts across a checkpoint (blind26 F1: the node's other
    channels still spoke -- :func:`_outage` -- and this one has not missed a row yet); a
    topic whose fleet is polled in bursts, between two bursts (its due counts from the
    node's own last row)."""
    i = f.evidence.get("interval_s")
    return _quiet_at(corr, f, now) - max(FAST_S, i if _is_time(i) else 0.0)


def _in_window(corr: Correlator, found: list[Finding], now: float) -> bool:
    """Whether a topic of a node is told quiet and, at ``now``, still within its window (a
    scan past it at most: partitions' clocks, :func:`_window_left`) -- where its source
    judged it in seconds, looking at it no later.  A node's ``quiet`` findings stay while it
    goes on to the 240 s bound: judged by them then, a job's other nodes may have left the
    fleet since (the churning fleet: one replaced every 10 minutes) -- no job lost with this
    node, whatever the rest of the fleet did after."""
    return any(_is_quiet(g) and _window_left(corr, g, now) >= -SCAN_S for g in found)


def _near_judged(corr: Correlator, node: str, last: float, cluster: str | None) -> bool:
    """Whether a node of ``node``'s parts of the fleet judged lost in seconds went dark
    within :data:`DARK_WITH_S` of ``last`` (its newest record)."""
    mine = set(_parts(corr.topology, node))
    if not mine:
        return False
    for n, t in corr._silent.items():
        g = t.get(_WAIT) or t.get(_JUDGED)
        if g is None or n == node or g.cluster != cluster or \
                g.evidence.get("job_stalled") is not True:
            continue
        x = _last(t)
        if x is not None and abs(x - last) <= DARK_WITH_S and \
                mine & set(_parts(corr.topology, n)):
            return True
    return False


def _last(topics: dict[str, Finding]) -> float | None:
    """A node's newest record, as its silences and quiet findings tell it."""
    return max((x for w, g in topics.items() if w in TOPICS
                and _is_time(x := g.evidence.get("last_ts"))), default=None)


def _to_come(corr: Correlator, node: str, f: Finding) -> list[str]:
    """The nodes not judged yet that went dark with ``node`` and the nodes of its parts
    waiting with it: those their sources saw go dark with them (``dark_with``), and those of
    its parts told quiet past its interval or silent on some topic within
    :data:`DARK_WITH_S` of them (another source's word: a service partition names only its
    own nodes)."""
    silent = corr._silent
    group = _waiting(corr, node, f)
    # (named on two of its topics: a service's one-topic partition reading a poll in bursts
    # names a healthy node at every scan -- the lone node's page held FAST_WAIT_S for it)
    out = {n for m in group for n in _with(corr, m, 2)}
    lasts = [x for m in group if (x := _last(silent[m])) is not None]
    mine = set(_parts(corr.topology, node))
    if lasts and mine:
        lo, hi = min(lasts) - DARK_WITH_S, max(lasts) + DARK_WITH_S
        for n, t in silent.items():
            if n in out or n in _JOBS_KEYS or _WAIT in t or _JUDGED in t:
                continue
            # (a record missed: a 30 s ECC poll is told quiet at 20 s -- _overdue)
            x = _last({w: g for w, g in t.items()
                       if not _is_quiet(g) or _overdue(corr, g, f.ts) > 0})
            if x is not None and lo <= x <= hi and any(
                    g.cluster == f.cluster for w, g in t.items() if w in TOPICS) and \
                    mine & set(_parts(corr.topology, n)):
                out.add(n)
    return sorted(n for n in out
                  if _WAIT not in silent.get(n, ()) and _JUDGED not in silent.get(n, ()))


def _back_without(corr: Correlator, f: Finding, last: float, node: str) -> bool:
    """Whether a job re-formed without a node (``f``, :func:`_reforms`) went back to an older
    checkpoint (``steps_back``: ``JobMonitor._went_back``, a step or more behind the step it
    stopped at) while the node, its newest record at ``last``, was there when the job stopped
    (within :data:`FAST_RUN_S` of its last step) and dark before the re-form: the save in
    flight never finished -- what a crash looks like, not a job's end (dark39, revA38 F6: a
    node dead 8-40 s into its job's save, the job back 100 steps without it, was excused as
    a reclaimed VM's: 0 of 24 runs paged in 600 s).  Not judged in seconds by it: a node
    drained off its job and rebooted while the job is requeued from its last checkpoint
    without it has the same telemetry (b19fix) until it stays dark past the 240 s bound -- a
    reboot is back within it.  A planned leave that the job saved for (a spot VM reclaimed
    after its job's save, blind27 F3 and held churn-s6) has the job go on from where it
    stopped: no ``steps_back``."""
    ev = f.evidence
    t, at, back = ev.get("left_step_ts"), ev.get("reformed_ts"), ev.get("steps_back")
    return type(back) is int and back >= 1 and _is_time(t) and _is_time(at) and (
        t - FAST_RUN_S <= last <= at) and not _idle_past_stop(corr, node, t, last)


def _idle_past_stop(corr: Correlator, node: str, t: float, last: float) -> bool:
    """Whether ``node`` (its newest record at ``last``) sat idle past its job's stop at ``t``:
    its NIC ports all quiet (``nic_idle_ts`` on its NIC topic's silence, detector.network's
    traffic) from at most two of their intervals after that stop, and it reported on so for
    :data:`IDLE_POLLS` of them and :data:`FAST_RUN_S` at least.  A save moves bytes -- the
    checkpoint's shards leave the node -- so a node idle that long was not saving: its job
    was stopped without one (a preemption), and a node released then (powered off, drained)
    crashed nothing of it, whatever checkpoint the job is requeued from (odd42, revA40 F1:
    a node off 60-120 s after its job's preemption escalated unattributed at the requeue,
    4 of 6 runs).  A node dead in its job's save -- its ports moving the save's bytes to its
    end -- is still its job's crash (dark39)."""
    g = (corr._silent.get(node) or {}).get("nic")
    if g is None:
        return False
    idle, interval = g.evidence.get("nic_idle_ts"), g.evidence.get("interval_s")
    if not (_is_time(idle) and _is_time(interval) and interval > 0):
        return False
    return idle <= t + 2.0 * interval + corr.cfg.lateness_s and (
        last - idle >= max(IDLE_POLLS * interval, FAST_RUN_S))


def _crashed_with(corr: Correlator, node: str, last: float) -> list[dict[str, Any]]:
    """The jobs that re-formed without ``node`` (its newest record at ``last``) back to an
    older checkpoint (:func:`_back_without`), as :func:`_jobs_of`'s rows: they ran on it to
    its end, whatever its sources noted once it was quiet (a 30 s poll's node is noted after
    the re-form, its ranks gone) or its GPUs did after the job's stop."""
    return [{"job": job, "ranks": n, "last_step_ts": g.evidence["left_step_ts"]}
            for job, g in sorted((corr._silent.get(_LEFT) or {}).items())
            if (n := _left_ranks(g).get(node)) and _back_without(corr, g, last, node)
            ][:MAX_JOBS]


def _lost(corr: Correlator, node: str, last: float, now: float) -> list[list[Any]]:
    """[job, ranks on the node, its last step's time] of the jobs lost with ``node`` quiet
    since ``last``, from what every partition tells the correlator (:class:`_LayoutView`):
    each had ranks there and stepped until it went quiet (:func:`_ran_to`: within a step
    period and ``lateness_s`` of its newest record -- a job stopped before, a hang of its own,
    was lost to something else: revA36 F7), has stopped stepping since (:data:`FAST_S`, three
    of its steps), had ranks on other nodes, and those still heard wait for it -- most of
    their GPUs known since busy (NCCL spinning on a dead peer: a job stopped or ended leaves
    them idle), busy without a break since its last step (a GPU that idled after it and is
    busy again runs new work: the job stopped, a drain, and was requeued before the quiet
    node was judged -- blind19 O1, b19fix), no other job stepping there -- or went dark with
    it (a part of the fleet).  A job on this node alone ending as it goes quiet looks the
    same as its death: none."""
    view = _LayoutView(corr, node, now)
    out = []
    for name, mine, t, others in view.stopped(last):
        if not mine or not others:
            continue
        up = view.up(others)
        if up:
            known, busy = view.waiting(name, up, t)
            if 2 * busy <= known or view.moved(name, others, t):
                continue
        out.append([name, mine, round(t, 3)])
        if len(out) >= MAX_JOBS:
            break
    return out


def _ran_to(corr: Correlator, stop: Finding, last: float) -> bool:
    """Whether a job's stop (:func:`_stops`) says it stepped until ``last``, a node's newest
    record: its last step at most a step period (``step_period_s``) and DESIGN's disorder
    (``lateness_s``) before it, and :data:`FAST_RUN_S` at most.  A node's death stops its
    jobs' steps within a step of its last row (the step in flight never ends); a job whose
    last step came earlier stopped while the node still reported -- a hang of its own (revA36
    F7: NCCL waiting on every node, a collector restart on one of them 20 s on), a save, a
    re-form -- and the node's silence did not stop it."""
    return _stepped_to(corr, stop.evidence.get("last_step_ts"),
                       stop.evidence.get("step_period_s"), last)


def _stepped_to(corr: Correlator, t: Any, period: Any, last: float) -> bool:
    """Whether a job's last step at ``t`` (steps ``period`` apart) came at most a step period
    and ``lateness_s`` (:data:`FAST_RUN_S` at most) before ``last``, a node's newest record."""
    if not _is_time(t):
        return False
    period = period if _is_time(period) and period > 0 else 0.0
    return t >= last - min(FAST_RUN_S, period + corr.cfg.lateness_s)


def _left_ranks(f: Finding) -> dict[str, int]:
    """node -> its slots, of a job's ``nodes_left`` finding (:func:`_reforms`)."""
    rows = f.evidence.get("nodes_left")
    return {r[0]: r[1] for r in rows if type(r) is list and len(r) == 2 and type(r[0]) is str
            and type(r[1]) is int and r[1] > 0} if type(rows) is list else {}


def _left_lost(corr: Correlator, f: Finding, last: float) -> bool:
    """Whether a job re-formed without a node (``f``, :func:`_reforms`) lost it, the node's
    newest record at ``last``: the job's last step before the re-form ran to that record
    (:func:`_stepped_to`: a node's death stops its jobs within a step) and the re-form came
    after a stall -- :data:`REFORM_GAP_S` and three of its steps on: the step in flight never
    ended, its ranks waited in the collective until a timeout re-formed the job without the
    dead node (revA37 F1: re-formed within 10-40 s, before the node was told quiet, never
    paged).  :func:`_lost` asks, as of a stop, that its GPUs elsewhere stayed busy through
    the stall (waiting on the dead peer).  Not lost so: a node replaced under a running job
    (its ranks go on at once), a node gone quiet well after the job's last step with it (a VM
    reclaimed during its job's rendezvous: blind27 F3); a job whose GPUs idled in the stall
    (a save, or workers that gave up at once: blind7 G4) is left to the 240 s path."""
    ev = f.evidence
    t, at, period = ev.get("left_step_ts"), ev.get("reformed_ts"), ev.get("step_period_s")
    if not (_is_time(t) and _is_time(at)):
        return False
    p = period if _is_time(period) and period > 0 else 0.0
    return at - t > max(REFORM_GAP_S, 3 * p) and _stepped_to(corr, t, period, last)


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

    def stopped(self, last: float) -> Iterator[tuple[str, int, float, set[Any]]]:
        """(job, ranks on the node, its last step, its GPUs on other nodes) of the jobs
        that stepped until ``last``, the node's newest record (:func:`_ran_to`), and have
        stopped."""
        corr, node = self.corr, self.node
        stops = corr._silent.get(_STOPS) or {}
        placement = corr._placement
        here: dict[str, int] = {}
        for (job, _rank) in placement.on_node.get(node, {}):
            here[job] = here.get(job, 0) + 1
        found: dict[str, tuple[int, float]] = {}
        for job, mine in here.items():
            stop = stops.get(job)
            if stop is None or not stop.active:
                continue  # (stepping, or stepping again)
            t = stop.evidence["last_step_ts"]
            if _is_time(t) and _ran_to(corr, stop, last):
                found[job] = (mine, t)
        for job, g in (corr._silent.get(_LEFT) or {}).items():
            # (re-formed without the node: its ranks no longer name it -- revA37 F1)
            mine = _left_ranks(g).get(node, 0)
            if job not in found and mine and _left_lost(corr, g, last):
                found[job] = (mine, g.evidence["left_step_ts"])
        for job, (mine, t) in sorted(found.items()):
            yield job, mine, t, {(hw[0], hw[1]) for hw in placement.ranks.get(job, {}).values()
                                 if hw[0] != node}

    def up(self, others: set[Any]) -> set[str]:
        """Its other nodes not quiet on every topic they used."""
        return {n for n, _ in others if not _dark(self.corr, n)}

    def waiting(self, name: str, up: set[str], t: float, since_stop: bool = True
                ) -> tuple[int, int]:
        """(its GPUs on nodes up with thermal samples, those of them busy since the stop --
        a busy run begun more than a sample after its last step followed an idle spell: the
        job stopped there, whatever runs now; not ``since_stop``: busy now), once a sample of
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
        return len(gpus), sum(1 for n, g in gpus if corr.gpu_idle(n, g) is not True and not (
            since_stop and _is_time(s := corr.busy_since(n, g)) and s > t + max(MOVED_S, every)))

    def moved(self, name: str, others: set[Any], t: float) -> bool:
        """Another job stepped on its GPUs since (:func:`_went_on`)."""
        return _went_on(self.corr, name, others, t, self.corr._silent.get(_STOPS) or {})


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


def _with(corr: Correlator, node: str, least: int = 1) -> list[str]:
    """The nodes its sources saw stop with it, in its part of the fleet (its leaf or its
    leaf's spine, as the topology gives them); none without a topology (no part to name).
    ``least``: named on that many of its topics at least (or on every one it was told on) --
    a service's one-topic partition names a node for one record of it missed, which a poll
    read in bursts does at every scan."""
    topo = corr.topology
    part = _parts(topo, node)
    if not part:
        return []
    named: dict[str, int] = {}
    told = 0
    for w, g in corr._silent.get(node, {}).items():
        if w not in TOPICS:
            continue  # (_WAIT, _JUDGED: one of these, as first told)
        told += 1
        for n in {n for n in g.evidence.get("dark_with") or () if type(n) is str}:
            if n != node and set(_parts(topo, n)) & set(part):
                named[n] = named.get(n, 0) + 1
    need = min(least, told)
    return sorted(n for n, k in named.items() if k >= need)


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
    with them, quiet on every topic (a wait cut short; a node named for a record missed by
    chance is not), with more than half of its nodes among those: a rack (a domain) before a
    switch over the same nodes, the smaller of two switches; None."""
    topo = corr.topology
    mine = _parts(topo, node)
    dark = set(group).union(n for m in group for n in _with(corr, m) if _dark(corr, n))
    best: tuple[int, int] | None = None
    for k, part in enumerate(mine if len(dark) > 1 else ()):
        under = sum(1 for n in dark if part in _parts(topo, n))
        if under > 1 and 2 * under > len(_below(topo, part)) and (
                best is None or (under, -k) > best):
            best = (under, -k)
    return None if best is None else mine[-best[1]]


def _page(corr: Correlator, part: Scope | None, group: list[str], f: Finding,
          out: list[Alert], deferred: list[Any] | None = None) -> None:
    """One escalation at ``part`` (a switch, a domain) over ``group``, or at the node
    ``group[0]``; a node alone joins its part's page when one is firing.  ``deferred``: the
    jobs whose end deferred the node's judgement (:func:`_still_dark`), paging it now."""
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
    excused: dict[str, list[Any]] = {}
    jobs = deferred if deferred is not None else [
        j for n in group for j in _running(corr, n, [g for w, g in silent[n].items()
                                                    if w in TOPICS], f.ts, excused)]
    if not jobs:
        # nothing ran on it to the end: drained, replaced, taken out -- or idle; or its jobs
        # stopped stepping while it still reported: deferred, paged if it stays dark
        for n, held in excused.items():
            silent[n][_DEFER] = f._replace(evidence={"jobs": held[:MAX_JOBS]})
            _still_dark(corr, n, f, out)  # (told still dark already: a correlator restarted)
        return
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
                      "end and did not move)" if deferred is None else
                      f"a reboot or firmware flash after its job's end (still dark "
                      f"{DEFER_S:g} s after its last record; those are back within minutes)"],
        "recommended_because": (
            f"{where} stopped sending every record at {first.onset_ts:.1f} with no XID, "
            "while the rest of the fleet kept reporting and jobs ran on it"
            + (" (they stopped stepping with it, their other ranks busy waiting in the "
               "collective)" if any(g.evidence.get("job_stalled") is True for g in found)
               else "")
            + (" -- they had stopped stepping shortly before it went dark (a checkpoint "
               "save, an eval, or their end), so it was judged again once still dark "
               f"{DEFER_S:g} s on" if deferred is not None else "") + ": "
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


def _running(corr: Correlator, node: str, found: list[Finding], now: float,
             excused: dict[str, list[Any]] | None = None) -> list[Any]:
    """The jobs that ran on ``node`` to its end: as its sources saw them (the engine's one
    source sees steps: jobs that stepped within the bound of its last record and whose ranks
    stayed there), else as the correlator's job layouts place them, when its GPUs were busy
    (a drained node's GPUs report idle) -- either way not one that ended first
    (:func:`_ended_first`).  Those that ended first, or left its GPUs idle, having stepped
    within the bound of its last record (as their stops tell) go to ``excused[node]``: its
    judgement deferred (:func:`_still_dark`) -- a save's idle GPUs are a job's end's too."""
    last = max((x for g in found if _is_time(x := g.evidence.get("last_ts"))), default=None)
    since = -math.inf if last is None else last - max([RUNNING_S] + [
        2.0 * i for g in found if _is_time(i := g.evidence.get("interval_s"))])
    crashed = [] if last is None else _crashed_with(corr, node, last)
    if any(g.evidence.get("steps_seen") is True for g in found):
        jobs = _jobs_of(corr, node, found, placed=False)
    elif corr.seen is not None and corr.seen(node, "thermal") and node not in corr._busy:
        if crashed:
            return crashed  # (idle in its job's save, which never finished: _back_without)
        if excused is not None and last is not None and not any(
                g.evidence.get("job_stalled") is True for g in found):
            held = [j for j in _jobs_of(corr, node, found) if _stopped_at(corr, j["job"]) >= since]
            if held:
                excused[node] = held
        return []
    else:
        jobs = _jobs_of(corr, node, found)
    jobs += [j for j in crashed if all(j["job"] != k["job"] for k in jobs)]
    if last is None or any(g.evidence.get("job_stalled") is True for g in found):
        return jobs  # (judged in seconds: its jobs were lost with it, _lost)
    view = _LayoutView(corr, node, now)
    kept = []
    for j in jobs:
        if not _ended_first(view, j["job"], last):
            kept.append(j)
        elif excused is not None and _stopped_at(corr, j["job"]) >= since:
            excused.setdefault(node, []).append(j)
    return kept


def _stopped_at(corr: Correlator, name: str) -> float:
    """Job ``name``'s last step as its stop was told (-inf: none told)."""
    stop = (corr._silent.get(_STOPS) or {}).get(name)
    t = None if stop is None else stop.evidence.get("last_step_ts")
    return t if _is_time(t) else -math.inf


def _still_dark(corr: Correlator, node: str, f: Finding, out: list[Alert]) -> None:
    """A node whose judgement its jobs' end deferred (:func:`_page`), told ``still_dark``
    (:data:`DEFER_S` after its last record) on every topic it used, and heard on none since:
    no reboot or flash takes this long -- paged now, naming the jobs (a node alone joins its
    part's page when one is firing), unless a page names it already."""
    topics = corr._silent.get(node)
    held = None if topics is None else topics.get(_DEFER)
    if held is None:
        return
    uses = _uses(corr, node, topics)
    if not uses or any(w not in topics or topics[w].evidence.get("still_dark") is not True
                       for w in uses):
        return
    del topics[_DEFER]
    if _page_of(corr, node, f.cluster) is None:
        jobs = [j for j in held.evidence.get("jobs") or () if type(j) is dict]
        _page(corr, None, [node], f, out, jobs)


def _ended_first(view: _LayoutView, name: str, last: float) -> bool:
    """Whether job ``name`` stopped stepping while its node still reported (blind21 F1: Slurm
    reboots a node for a firmware flash a minute after its job ended -- nothing lost): its
    source told it stopped (:func:`_stops`) and that stop was due -- :func:`stop_s` of its
    period (three steps, :data:`FAST_S` at least) after its last step -- before ``last``, the
    node's newest record on any topic; and it does not wait for the node now: none of its GPUs
    on its other nodes still heard are busy with no other job stepping there (its ranks
    spinning in the collective for a node that died in the job's save or an eval's idle
    spell -- unlike :func:`_lost`'s, busy now whatever idled between).  A node dying under
    its job has the job's last step at its silence, a step period or so before it: kept."""
    corr = view.corr
    g = (corr._silent.get(_LEFT) or {}).get(name)
    if g is not None and view.node in _left_ranks(g):
        if _back_without(corr, g, last, view.node):
            return False  # (it crashed with the node: back to an older checkpoint without it)
        t = g.evidence.get("left_step_ts")
        if _is_time(t) and _idle_past_stop(corr, view.node, t, last):
            return True  # (re-formed without a node that sat idle past its stop there)
    stop = (corr._silent.get(_STOPS) or {}).get(name)
    if stop is None or not stop.active:
        return False  # (no stop told, or stepping again: as before)
    t, period = stop.evidence.get("last_step_ts"), stop.evidence.get("step_period_s")
    if not _is_time(t) or t + stop_s(period if _is_time(period) and period > 0 else math.nan) \
            >= last:
        return False
    others = {(hw[0], hw[1]) for hw in corr._placement.ranks.get(name, {}).values()
              if hw[0] != view.node}
    up = view.up(others)
    if up:
        known, busy = view.waiting(name, up, t, since_stop=False)
        if 2 * busy > known and not view.moved(name, others, t):
            return False
    return True


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
        if node in _JOBS_KEYS:  # a job's stop: kept while its layout is, and unit_fault_idle_s
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
