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
  side.)
- **where the cluster's findings meet** (:func:`on_silent`, from
  :meth:`Correlator.on_finding`): a node silent on *every* topic it was seen on
  (``seen``: a collector lag on one topic, a job ending -- steps only -- are not a node
  going dark) is one escalation, ``unattributed``/``unknown`` at the node, with the last
  record time per topic, the jobs placed on it and the next diagnostic (BMC, console,
  power).  A node heard again resolves it.

State: plain data.  Per source, one entry a node that has units there (dropped with
them: :meth:`Monitors.prune_units`), at most :data:`MAX_NODES`; per correlator, one a node
silent on some topic, at most :data:`MAX_NODES`.

Why 240 s: the simulator's reboot (a benign event: the node is down 60-120 s, then its
collectors come back) is silent up to 120 s + two 30 s intervals = 180 s as seen from its
records; a node that died is told well before NCCL's 10-minute watchdog ends its jobs.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING, Any

from detector.alerts import ESCALATION, Scope
from detector.findings import Finding

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
MAX_JOBS = 8             # jobs named in a finding's evidence
TOPICS = ("ecc", "nic", "thermal")

# A source's entry for one node: [cluster, {topic: [newest ts, interval, updates, silent,
# the topic's progress at that record]}]; the topic's: [newest ts of any node, progress]
# (progress: how long the fleet was seen reporting, gaps of the feed capped at JUMP_CAP_S).
_LAST, _GAP, _N, _SILENT, _AT = range(5)


def bound_s(interval: float) -> float:
    """How long a node with records ``interval`` apart may be quiet on a topic."""
    return max(SILENT_MIN_S, SILENT_INTERVALS * interval)


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
        progress = tp[1]
        # the newest record times, sorted: how many nodes recorded past a node's silence
        times = sorted(seen.values())
        for node, last in seen.items():
            entry = alive.get(node)
            if entry is None:
                continue  # (over MAX_NODES when first heard)
            st = entry[1].get(what)
            behind = min(fleet - last, JUMP_CAP_S)
            if st is None:
                entry[1][what] = [last, 0.0, 0, False, progress - behind]
                continue
            if last > st[_LAST]:
                gap = last - st[_LAST]
                st[_GAP] = gap if gap > st[_GAP] else st[_GAP] + (gap - st[_GAP]) * GAP_DECAY
                st[_N] += 1
                st[_LAST] = last
                st[_AT] = progress - behind
                if st[_SILENT]:
                    st[_SILENT] = False
                    findings.append(_finding(mon, node, entry[0], what, st, clock, False, 0))
                continue
            if st[_SILENT] or st[_N] < MIN_UPDATES:
                continue
            bound = bound_s(st[_GAP])
            if progress - st[_AT] <= bound:
                continue
            later = len(times) - bisect_right(times, last + bound)
            if later >= 1:
                st[_SILENT] = True
                findings.append(_finding(mon, node, entry[0], what, st, clock, True, later))
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
    """``later``: other nodes heard past its silence (active); -1: its monitors were dropped
    (silent for ``unit_idle_s``: it left the fleet), 0: heard again."""
    ev: dict[str, Any] = {"topic": what, "last_ts": round(st[_LAST], 3),
                          "interval_s": round(st[_GAP], 3), "bound_s": bound_s(st[_GAP])}
    if later < 0:
        ev["dropped"] = True
    if active:
        ev["nodes_heard_since"] = later
        jobs = _jobs_on(mon, node)
        if jobs:
            ev["jobs"] = jobs
    return Finding(clock, st[_LAST], "silent", "unattributed", "unknown", Scope.of_node(node),
                   active, False, 0.9 if active else 0.0, ev, cluster=cluster)


def _jobs_on(mon: Monitors, node: str) -> list[list[Any]]:
    """[job, ranks on the node, its last step's time] of this source's jobs with ranks there
    (the in-process engine's one source sees them; a service's step partitions do not)."""
    out = []
    for name, job in mon._jobs.items():
        n = sum(1 for hw in job._hw if hw is not None and hw[0] == node)
        if n:
            out.append([name, n, round(job.clock, 3)])
            if len(out) >= MAX_JOBS:
                break
    return out


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
            if what not in TOPICS or type(st) is not list or len(st) != 5 or not (
                    type(st[_LAST]) is float and type(st[_GAP]) is float
                    and type(st[_N]) is int and type(st[_SILENT]) is bool
                    and type(st[_AT]) is float):
                return False
    fleet = mon._fleet
    return type(fleet) is dict and all(
        w in TOPICS and type(tp) is list and len(tp) == 2
        and all(type(x) is float for x in tp) for w, tp in fleet.items())


# -- the correlator's half ---------------------------------------------------------------


def on_silent(corr: Correlator, f: Finding, out: list[Alert]) -> None:
    """A node's silence on one topic began or ended (:func:`scan`): page when it is silent
    on every topic it was seen on; resolve when it is heard again."""
    node = f.scope.node
    what = f.evidence.get("topic")
    if node is None or f.scope.level != "node" or what not in TOPICS:
        return
    silent = corr._silent
    key = corr.dedup_key(ESCALATION, "unattributed", f.scope, f.cluster)
    if not f.active:
        topics = silent.get(node)
        if topics is not None:
            topics.pop(what, None)
            if not topics:
                del silent[node]
        p = corr.problems.get(key)
        if p is not None and p.status == "firing":
            p.add(f, corr.cfg.evidence_items)
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
    topics[what] = f
    seen = corr.seen
    uses = [w for w in TOPICS if seen(node, w)] if seen is not None else list(topics)
    if not uses or any(w not in topics for w in uses):
        return  # still heard on another topic (a collector's lag, not the node)
    p = corr.problems.get(key)
    if p is not None and p.status == "firing":
        return
    first = min(topics.values(), key=lambda g: g.onset_ts)
    last = {w: topics[w].evidence.get("last_ts") for w in uses}
    jobs = _jobs_of(corr, node, topics.values())
    extra: dict[str, Any] = {
        "last_record_ts": last, "silent_s": round(f.ts - first.onset_ts, 1),
        "interval_s": {w: topics[w].evidence.get("interval_s") for w in uses},
        "jobs_on_node": jobs,
        "ruled_out": ["the feed stopping or a broker hiccup (other nodes of its partition "
                      f"reported past its silence: {f.evidence.get('nodes_heard_since')})",
                      "a collector's lag on one topic (silent on every topic it used: "
                      f"{', '.join(uses)})",
                      "a job ending (that stops step records only)"],
        "recommended_because": (
            f"{node} stopped sending every record ({', '.join(uses)}) at "
            f"{first.onset_ts:.1f} with no XID, while the rest of the fleet kept reporting: "
            "a host that went dark (kernel panic, PSU, hung BMC)"),
        "next_diagnostic": (
            f"check {node}'s BMC (ipmitool chassis status; ipmitool sel list), its serial "
            "console (kernel panic?) and its PSU / PDU; once it answers, dmesg and "
            "`dcgmi diag -r 3`"),
    }
    p = corr._raise(ESCALATION, "unattributed", "unknown", f.scope, first, out,
                    detected_ts=f.ts, extra=extra, own=False)
    for w in uses:
        if topics[w] is not first:
            p.add(topics[w], corr.cfg.evidence_items)


def _jobs_of(corr: Correlator, node: str, found: Any) -> list[Any]:
    """The jobs with ranks on ``node``: as its source saw them (the in-process engine) or
    as the correlator's job layouts place them."""
    jobs: dict[str, Any] = {}
    for g in found:
        for item in g.evidence.get("jobs") or ():
            if type(item) is list and len(item) == 3 and type(item[0]) is str:
                jobs.setdefault(item[0], {"job": item[0], "ranks": item[1],
                                          "last_step_ts": item[2]})
    placed: dict[str, int] = {}
    for (job, _rank) in corr._placement.on_node.get(node, {}):
        placed[job] = placed.get(job, 0) + 1
    for job, n in placed.items():
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
        for what in [w for w, g in topics.items()
                     if g.ts < old or (seen is not None and not seen(node, w))]:
            del topics[what]
        if not topics:
            del corr._silent[node]
