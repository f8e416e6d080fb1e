"""Stage 2 of the service, without Kafka: findings of every source to alerts, in event-time order.

See :mod:`detector.pipeline.source` for the two stages and the findings-topic
messages this reads.
"""

from __future__ import annotations

import functools
import heapq
import logging
import math
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from detector import hang, host_node, job_pace, lemon, liveness, nic_cnp
from detector.alerts import Alert
from detector.cadence import MAX_JITTER_S
from detector.correlate import Correlator, check_power_restored
from detector.correlate.ports import check_restored as ports_restored
from detector.events import MAX_AHEAD_S
from detector.findings import (
    Finding,
    FindingMessage,
    RewoundMessage,
    SeenMessage,
    WatermarksMessage,
    decode_message,
    finding_of,
)
from detector.pipeline.clusters import MAX_CLUSTERS, MAX_KEPT, ClusterSlots, other_topologies
from detector.pipeline.source import SNAPSHOT_VERSION, dumps, finite, partition_state
from detector.recovery import Placement
from detector.statecodec import (
    DEADLINE_S,
    UNSIGNED,
    StateCodec,
    first_past,
    is_map_of,
    is_time,
    refuse_unless,
)
from detector.thermal import MAX_IDLE_TOLD, PAUSE_S
from detector.thresholds import Thresholds
from detector.topology import Topology

# Nodes whose cluster a findings partition remembers (CorrelatorPartition.cluster_of): past it
# a node's first `cluster` value is not kept (counted), and its findings without one stay so.
MAX_NODE_CLUSTERS = 1 << 16

log = logging.getLogger(__name__)
# A node's cluster in CorrelatorPartition._cluster_of when it is the home's and unnamed, whatever
# its later rows name (cluster_of: its first page went out under a key naming no cluster).
_HOME = ""
_said_full = False  # the error of a cluster's findings dropped past MAX_KEPT: once a process


class _Source:
    """What a correlator knows of one source: its clock, whether it is idle, its last finding."""

    __slots__ = ("wm", "idle", "heard", "last_id")

    def __init__(self, heard: float) -> None:
        self.wm: float | None = None
        self.idle = False
        self.heard = heard
        self.last_id: tuple[int, int] = (-1, -1)


def _is_entry(e: Any) -> bool:
    """A heap entry (tag, source, offset, index, finding, arrival) of the right types."""
    return (type(e) is tuple and len(e) == 6 and type(e[0]) in (float, int) and e[0] == e[0]
            and type(e[1]) is str and type(e[2]) is int and type(e[3]) is int
            and type(e[4]) is Finding and (e[5] is None or type(e[5]) in (float, int)))


@functools.cache
def _fresh_kinds() -> dict[str, type]:
    """Each field of a fresh Correlator and the type it holds there (None ones: transient)."""
    return {k: type(v) for k, v in vars(Correlator(Thresholds())).items() if v is not None}


def _unlike_fresh(corr: Any) -> str | None:
    """The first field of a restored correlator not of the kind a fresh one holds there (a map
    a map, a clock a number), or None.  review27: 20 of its 41 fields were restored as any
    type -- a string for ``problems``, ``_timers``, ``_device`` or ``_next_prune`` failed its
    next finding; what a field's items hold is checked for those the checks below name."""
    if type(corr) is not Correlator:
        return "correlator"
    for name, kind in _fresh_kinds().items():
        got = type(getattr(corr, name, None))
        if not (got is kind or kind in (int, float) and got in (int, float)):
            return f"correlator.{name}"
    return None


def check_times(state: dict[str, Any], limit: float | None) -> None:
    """:class:`SnapshotRefused` if a restored time of a findings partition lies past ``limit``
    (the restoring worker's wall clock + ``MAX_AHEAD_S``; None: no wall clock, the deadlines
    alone held to its newest time) or a deadline ``DEADLINE_S`` past it.  ``state``: what
    :meth:`CorrelatorPartition.state` saves, or a cluster split's correlator alone.  svc39
    refused +inf and NaN; a finite year 2100 in ``_clock`` or a source's watermark still went
    (hard40) -- and a correlator at 2100 took every finding as late, a watermark there
    released every finding at once, unordered."""
    corr = state["correlator"]
    times: list[tuple[str, Any]] = [("correlator._clock", corr._clock)]
    if "released" in state:
        times.append(("released", state["released"]))
    times += [("sources: a watermark", s.wm) for s in state.get("sources", {}).values()]
    for name in ("last", "cluster_at"):  # (their shapes checked in from_state)
        kept = state.get(name)
        times += [(name, t) for t in (kept.values() if type(kept) is dict else ())]
    times += [("heap: a finding's ts", e[4].ts) for e in state.get("heap", ())]
    times += [("correlator.problems: an onset", getattr(p, "onset_ts", None))
              for p in corr.problems.values()]
    if limit is None:
        # (no wall clock: its newest time is all it can be held to -- its deadlines only)
        limit = max((t for _, t in times if type(t) in (float, int)), default=-math.inf)
        if limit == -math.inf:
            return  # (nothing told yet that a deadline could be far past)
    bad = first_past(limit, times) or first_past(limit + DEADLINE_S, [
        ("correlator._next_prune", corr._next_prune),
        *(("correlator._timers", t[0] if type(t) is tuple and t else None)
          for t in corr._timers)])
    refuse_unless(bad is None, f"{bad}: a time past the restoring worker's clock")


def _check_state(state: dict[str, Any]) -> None:
    """:class:`SnapshotRefused` unless the restored fields a release reads have their types
    (the codec rebuilds classes from fields of any type: a clock that is a string, a heap
    entry that is a list, would fail the worker's every batch)."""
    refuse_unless(is_time(state.get("released")), "released: not a time")
    bad = _unlike_fresh(state.get("correlator"))
    refuse_unless(bad is None, f"{bad}: not of its kind")
    corr = state.get("correlator")
    # (svc39: "of its kind" takes a float for an int and any number for a time -- a +inf
    # _clock or _next_prune restored as is: every timer after it, every prune never.)
    refuse_unless(type(corr._seq) is int and corr._seq >= 0, "correlator._seq: not a count")
    for name in ("_clock", "_next_prune"):
        refuse_unless(is_time(getattr(corr, name)), f"correlator.{name}: not a time")
    heap = state.get("heap")
    refuse_unless(type(heap) is list and all(map(_is_entry, heap)), "heap: malformed entry")
    refuse_unless(is_map_of(state.get("sources"), str, _Source), "sources: not a map")
    refuse_unless(all((s.wm is None or is_time(s.wm)) and type(s.last_id) is tuple
                      for s in state["sources"].values()), "sources: a clock is malformed")
    refuse_unless(is_map_of(state.get("seen"), str, set), "seen: not a map of sets")
    refuse_unless(lemon.check(getattr(state.get("correlator"), "_lemon", None)),
                  "correlator._lemon: malformed (detector.lemon)")
    refuse_unless(host_node.check(getattr(state.get("correlator"), "_host_rise", None)),
                  "correlator._host_rise: malformed (detector.host_node)")
    refuse_unless(hang.check(getattr(state.get("correlator"), "_hangs", None)),
                  "correlator._hangs: malformed (detector.hang)")
    idle = getattr(state.get("correlator"), "_idle", None)
    refuse_unless(is_map_of(idle, str, frozenset) and all(
        len(v) <= MAX_IDLE_TOLD and all(type(g) is int for g in v) for v in idle.values()),
        "correlator._idle: malformed (node -> its idle GPUs)")
    for name in ("_woke", "_slept"):  # (node -> GPU -> since when it woke / idled)
        since = getattr(corr, name, None)
        refuse_unless(is_map_of(since, str, dict) and all(
            len(w) <= MAX_IDLE_TOLD and is_map_of(w, int, (float, int))
            and all(map(is_time, w.values())) for w in since.values()),
            f"correlator.{name}: malformed (node -> GPU -> since when)")
    late = getattr(corr, "_late_rows", None)
    refuse_unless(is_map_of(late, str, (float, int)) and all(
        type(v) in (float, int) and 0.0 <= v <= 300.0 for v in late.values()),
        "correlator._late_rows: malformed (node -> how late its rows came, s)")
    jitter = getattr(corr, "_jitter", None)
    refuse_unless(is_map_of(jitter, str, (float, int)) and all(
        type(v) in (float, int) and 0.0 <= v <= MAX_JITTER_S for v in jitter.values()),
        "correlator._jitter: malformed (node -> its rows' jitter off their grid, s)")
    phases = getattr(corr, "_phases", None)
    refuse_unless(is_map_of(phases, str, dict) and all(
        is_map_of(g, int, (float, int)) and all(is_time(t) and t > -math.inf for t in g.values())
        for g in phases.values()),
        "correlator._phases: malformed (node -> GPU -> the ts of its told sample)")
    cadences = getattr(corr, "_cadences", None)
    refuse_unless(is_map_of(cadences, str, dict) and all(
        is_map_of(g, int, (float, int)) and all(0.0 <= t < PAUSE_S for t in g.values())
        for g in cadences.values()),
        "correlator._cadences: malformed (node -> GPU -> the interval it told)")
    calm = getattr(corr, "_calm", None)
    refuse_unless(is_map_of(calm, str, (float, int)) and all(map(is_time, calm.values())),
                  "correlator._calm: malformed (node -> since when all its GPUs idle)")
    placement = getattr(corr, "_placement", None)
    refuse_unless(isinstance(placement, Placement) and placement.restored_ok(),
                  "correlator._placement: malformed (detector.recovery.Placement)")
    refuse_unless(nic_cnp.check_restored(corr), "correlator._cnp: malformed (detector.nic_cnp)")
    refuse_unless(ports_restored(corr), "correlator._paced: malformed (correlate.ports)")
    refuse_unless(liveness.check_corr_restored(corr),
                  "correlator._silent: malformed (detector.liveness)")
    bad = job_pace.check_restored(corr)
    refuse_unless(bad is None, f"correlator.{bad}: malformed (detector.job_pace)")
    bad = check_power_restored(corr)
    refuse_unless(bad is None, f"correlator.{bad}: malformed (detector.correlate's power caps)")
    counts = state.get("counts")
    refuse_unless(type(counts) in (tuple, list) and len(counts) == 4 and all(
        type(n) is int for n in counts), "counts: malformed")


class CorrelatorPartition:
    """One findings partition's Correlator, fed in event-time order on the slowest source's clock.

    Findings wait in a heap until every live source's watermark has passed
    their tag.  A source is live when heard from within ``source_timeout_s``
    (wall); one that has had data holds at its watermark, idle (caught up and
    quiet) or not -- its worker reports how far it can have got when it has
    nothing new (``PipelineWorker.reported_clock``), so a quiet partition whose
    collector delivers late is waited for and one whose clock runs ahead
    drives nobody else's; a source expected but never heard from holds the
    clock until it times out, so at start-up no partition races ahead of one
    still being fetched.

    An empty source (no record yet) reports itself idle once its worker has
    fetched it to its end (its position is the partition's high watermark:
    nothing there to read).  It is let go

    - ``fed_grace_s`` after the first clock of another source of its *topic*,
      when it still says it is at its end: that topic's feed is running, so
      the partition is empty because no key of the feed goes there, not
      because its first records are still on their way.  A topic's records
      come from a producer writing in event-time order, so a record due
      before the others' clocks would have been fetched by then; the grace
      is the producer's skew between partitions, the same allowance
      ``hold_back_s`` gives a quiet source that has had data.  A fresh worker's
      first alerts need not wait for partitions that will never have any;
    - otherwise ``empty_grace_s`` after the first clock of any source: when
      a log is replayed into running workers, one *topic's* first records
      (say, the steps of a reporter started later) may land seconds after
      another's, and looked empty until then.

    An empty source its worker has not fetched to its end (the end is not
    known yet, or records are there not yet handed over) is not idle: it
    holds the clock until it reports or times out.
    """

    def __init__(self, partition: int, thresholds: Thresholds | None = None,
                 topology: Topology | None = None, *, expected: Iterable[str] = (),
                 now: float = 0.0, source_timeout_s: float = 30.0,
                 empty_grace_s: float = 5.0, fed_grace_s: float = 0.25,
                 home: str | None = None,
                 topologies: Mapping[str, Topology] | None = None) -> None:
        self.partition = partition
        self.cfg = thresholds or Thresholds()
        self.topology = topology
        self.source_timeout_s = source_timeout_s
        self.empty_grace_s = empty_grace_s
        self.fed_grace_s = fed_grace_s
        self._data_since: float | None = None  # wall time a source first had a clock
        # topic ("telemetry.step") -> wall time a source of it first had a clock (not state)
        self._topic_since: dict[str, float] = {}
        self.correlator = Correlator(self.cfg, topology, self.was_seen)
        # A unit is (cluster, node): ``correlator`` (and ``_seen``) are the home cluster's --
        # ``home`` (named), else the first `cluster` value of a finding; every finding with
        # none, and the topology's -- each other value has its
        # own in ``others`` (correlator, seen; no topology), made at its first finding
        # (detector.pipeline.clusters, as SourcePartition's) -- for every cluster a source
        # took records of, a spent one's given back past MAX_CLUSTERS (correlator_for).
        # Findings of a cluster past MAX_KEPT are counted in ``invalid`` and dropped (logged).
        self.clusters: ClusterSlots[tuple[Correlator, dict[str, set[str]]]] = ClusterSlots(
            self._new_correlator, home, topology, limit=MAX_KEPT)
        # Other clusters' topologies, by cluster value (not state: given back on restore).
        self.topologies = other_topologies(self.clusters.cluster, topologies)
        self.others = self.clusters.others  # (the same dict)
        # Another cluster -> the tag of its newest finding (_spent; in the snapshot, "last");
        # one with none: since _taken_at, -inf for a fresh partition, its clock then for one
        # restored from a snapshot without it (round 28's).
        self._last: dict[str, float] = {}
        self._taken_at = -math.inf
        self.sources: dict[str, _Source] = {s: _Source(now) for s in expected}
        # source -> how far a wait for an explanation waits for it, where that is below its
        # clock (a watermarks message's ``explain``: a source later than the 5 s the clock
        # allows; see release_to).  Not state: every watermarks message says it afresh.
        self._explain: dict[str, float] = {}
        # Empty source -> when the fetch that found it at its end was sent (a watermarks
        # message's ``ended``), on this partition's clock (``now``: the service's is
        # monotonic) -- what _said reads in place of when it was heard.  Not state: every
        # watermarks message says it afresh.
        self._ended: dict[str, float] = {}
        # Wall time (epoch seconds), what ``ended`` is in: its age is taken off ``now`` as the
        # message is read (None: ``now`` is wall time -- the tests').  Set by its worker.
        self.wall_clock: Callable[[], float] | None = None
        self.offset = -1
        self.released = -math.inf   # the correlator's clock: everything up to it is decided
        # Event time from which release_to has work (a finding, a timer or a prune due); up to
        # it the in-process Engine only moves `released` (release_to after every record).
        # Not state: -inf (work at once) after a restore, and refreshed by every release_to.
        self.due_at = -math.inf
        # (tag, source, offset, index, finding, arrival): unique up to the finding
        self._heap: list[tuple[float, str, int, int, Finding, float | None]] = []
        self._seen: dict[str, set[str]] = {}
        # node -> the first `cluster` value a record or finding of it carried (cluster_of).
        self._cluster_of: dict[str, str] = {}
        # node -> the released clock when a record or finding of it last named it (or none):
        # its entry in _cluster_of goes with its other state (_prune_nodes).
        self._cluster_at: dict[str, float] = {}
        # Nodes of _cluster_of keyed the home's by their unnamed rows alone, no record naming a
        # cluster yet (cluster_of): a record naming another cluster moves them (key45).
        self._defaulted: set[str] = set()
        self.cluster_moves = 0    # a node named under another cluster than its first: kept
        self.cluster_claims = 0   # a node keyed the home's by its unnamed rows, moved (key45)
        self.cluster_over = 0     # a node's cluster not kept: MAX_NODE_CLUSTERS known
        self.findings = 0
        self.duplicates = 0
        self.late = 0
        self.invalid = 0
        self.errors = 0
        # Stage tracing (off: None): called with (source, finding id, tag) for each finding
        # taken.
        self.taken: Callable[[str, tuple[int, int], float], None] | None = None
        # Prefixed to the key of a findings message this very object took in memory (see
        # take_local), so that its copy read back from the topic is passed over.  New with
        # every object (a restore, a fresh assignment): a message another object took --
        # before a restart or a rebalance -- is read as usual.  Not state.
        self.local_tag = b"\0" + os.urandom(6).hex().encode() + b"|"

    def cluster_of(self, node: str | None, cluster: str | None) -> str | None:
        """The cluster a record or finding of ``node`` that names ``cluster`` (or none) is of:
        a node belongs to one cluster, the first a record of it named -- its telemetry (a
        ``seen`` notice), its step records (a ``steps`` notice: key45) or a finding.  DESIGN
        makes ``cluster`` optional on every message: an XID event row without it and the
        same GPU's ECC rows with it are one fault, and a dedup key made of the record's own
        value would page it twice (blind30 F1) -- one without is that node's known
        cluster's, and one of a node no record named yet the home's (the source's home
        monitors took it), named so (blind33 F6: a tray's DCGM rows without `cluster`, its
        step records with it: one fault under two keys) -- till a record of it names a
        cluster: the home's keeps it there, another's moves it (:meth:`_claimed`; key45,
        revA44 F1: two sites in one stream, east's DCGM rows unnamed, its step records
        naming east -- keyed west, its GPU's cap under west no longer explained its slow
        rank under east, and its XID paged under both).  The home's topology knows its nodes
        first: where the home is the topology's (configured, or the cluster the topology
        names itself) and the topology has ``node``, a record without a value stays the
        home's (home28: two clusters naming their hosts alike; blind29's two sites under a
        topology of its own name are not that).  A later value that differs (a
        misconfigured or forged row) does not move a node a record named: counted
        (``cluster_moves``), the first kept; the finding keeps the value it names (its own
        cluster's correlator, as before).  But a node whose first rows named none while no
        home was known, and whose fault the home's correlator already holds (its first row
        an XID event without ``cluster``, paged at once under a key naming none) is the
        home's, unnamed (``_HOME``; counted a move): its later rows' value would make a
        second key, a second page of the one fault (hard40, clu39's open case).  Bounded:
        past MAX_NODE_CLUSTERS nodes a new one is not remembered (``cluster_over``)."""
        if node is None:
            return cluster
        known = self._cluster_of.get(node)
        if known is not None:
            self._cluster_at[node] = self.released
            if known == _HOME:
                if cluster is not None:
                    self.cluster_moves += 1
                return None
        if cluster is None:
            home = self.clusters.cluster
            if known is not None and known != home and self._homes(node):
                return home  # (the home's topology has it: the home's)
            if known is None and home is not None:
                # A node no record named yet is the home's, whose monitors took the row
                # (SourcePartition routes a row without a value there): named so, till a
                # record of it names its cluster (blind33 F6; key45).
                if len(self._cluster_of) < MAX_NODE_CLUSTERS:
                    self._cluster_at[node] = self.released
                    self._cluster_of[node] = home
                    self._defaulted.add(node)
                else:
                    self.cluster_over += 1
                return home
            return known
        if known is None:
            if len(self._cluster_of) < MAX_NODE_CLUSTERS:
                self._cluster_at[node] = self.released
                if node in self.correlator._units_of_node and not self._homes(node):
                    self._cluster_of[node] = _HOME
                    self.cluster_moves += 1
                    return None
                self._cluster_of[node] = cluster
            else:
                self.cluster_over += 1
        elif node in self._defaulted:
            return self._claimed(node, known, cluster)
        elif known != cluster:
            self.cluster_moves += 1
        return cluster

    def _claimed(self, node: str, home: str, cluster: str) -> str:
        """A record of ``node``, keyed the home's (``home``) by its unnamed rows alone, names
        ``cluster``: the node is ``cluster``'s -- its step records or telemetry say where it
        runs (key45: an unnamed row takes its node's cluster, the home's only while no record
        of it named one).  The home's own value keeps it (named now).  Another's moves it,
        with what the home's correlator was told of its telemetry (``seen``: whether to wait
        for an explanation) -- unless the home's topology has it (home28: two clusters
        naming their hosts alike; it stays) or the home's correlator holds a signal of it
        (a page made, a throttle held): its findings then stay there, this one's too, under
        the home's key -- one page of one fault, its explanation beside it -- till the
        home's correlator lets the node go, and a record naming ``cluster`` moves it then."""
        if cluster == home:
            self._defaulted.discard(node)
            return cluster
        if self._homes(node):
            self._defaulted.discard(node)
            self.cluster_moves += 1
            return cluster
        if node in self.correlator._units_of_node:
            return home
        theirs = self.correlator_for(cluster)
        if theirs is None:
            return home  # (a cluster past MAX_KEPT: its findings are dropped; the node stays)
        self._defaulted.discard(node)
        self._cluster_of[node] = cluster
        self.cluster_claims += 1
        if theirs is not self.correlator:  # (else the home moved to it: its seen already)
            told = self._seen.pop(node, None)
            if told:
                self.others[cluster][1].setdefault(node, set()).update(told)
        return cluster

    def _homes(self, node: str) -> bool:
        """The home is the topology's (configured, or the cluster it names itself) and the
        topology has ``node``: a row without ``cluster`` is the home's node, one naming
        another cluster that cluster's (home28: two clusters naming their hosts alike)."""
        slots = self.clusters
        home = slots.cluster
        return (self.topology is not None and home is not None
                and home in (slots.named, slots.hint) and self.topology.has_node(node))

    def was_seen(self, node: str, what: str) -> bool:
        return what in self._seen.get(node, ())

    def _prune_nodes(self, now: float) -> None:
        """Forget the cluster of each node gone with its other state (run with the home
        correlator's prune): no word of it -- a record's notice or a finding -- for
        ``unit_idle_s``, its monitors forgotten by every source (no ``seen``), and no
        correlator holding a signal of it (a firing problem keeps its signals: a latched
        XID waits for its GPU's reset, its node's rows must still find its cluster).  Bounded
        at MAX_NODE_CLUSTERS, the map still kept a node gone for a day for ever (clu39)."""
        idle = now - self.cfg.unit_idle_s
        gone = [n for n, t in self._cluster_at.items() if t < idle]
        if not gone:
            return
        seen = [self._seen, *(s for _, s in self.others.values())]
        corrs = self._correlators()
        for node in gone:
            if not any(node in s for s in seen) and not any(
                    node in c._units_of_node for c in corrs):
                del self._cluster_at[node]
                self._cluster_of.pop(node, None)
                self._defaulted.discard(node)

    @property
    def cluster(self) -> str | None:
        """The home cluster: ``correlator``'s (see ``clusters``)."""
        return self.clusters.cluster

    @cluster.setter
    def cluster(self, cluster: str | None) -> None:
        self.clusters.cluster = cluster

    def _new_correlator(self, cluster: str) -> tuple[Correlator, dict[str, set[str]]]:
        seen: dict[str, set[str]] = {}
        return Correlator(self.cfg, self.topologies.get(cluster), _seen_in(seen)), seen

    def correlator_for(self, cluster: str | None) -> Correlator | None:
        """The correlator of ``cluster`` (see ``clusters``): a new cluster's is made -- its
        findings come from records a source took (the sources decide which clusters have
        units: MAX_CLUSTERS) -- after giving back a spent cluster's (:meth:`_spent`) when
        MAX_CLUSTERS are kept; one not spent (a source gave its slot back, its pages still
        open) is kept beside it (MAX_KEPT: review30 2).  None past MAX_KEPT (logged)."""
        if self.clusters.is_home(cluster):
            return self.correlator
        fresh = cluster not in self.others
        if fresh and len(self.others) + 1 >= MAX_CLUSTERS:
            gone = self.clusters.give_back_spent(self._spent, cluster)  # type: ignore[arg-type]
            if gone is not None:
                self._last.pop(gone[0], None)
        other = self.clusters.other(cluster)  # type: ignore[arg-type]
        if other is None:
            global _said_full
            if not _said_full:
                _said_full = True
                log.error("findings partition %d: findings of cluster %r dropped: %d clusters "
                          "kept apart, none spent (counted in `invalid`)", self.partition,
                          cluster, MAX_KEPT)
            return None
        if fresh and cluster == self.clusters.hint:
            self.move_home(cluster)  # type: ignore[arg-type]  # the topology's own: home now
            return self.correlator
        return other[0]

    def _spent(self, cluster: str, other: tuple[Correlator, dict[str, set[str]]]) -> bool:
        """Whether another cluster's correlator may give its slot back: no telemetry of it
        seen any more (every source forgot its nodes after ``unit_idle_s`` of silence), no
        finding of it for ``unit_idle_s`` of this stage's clock, no timer waiting and no
        problem firing -- quiet that long, nothing open.  (What it knew goes with it: a
        cluster that comes back starts afresh, its resolved problems and GPU histories
        forgotten.)"""
        corr, seen = other
        return (not seen and not corr._timers
                and self._last.get(cluster, self._taken_at) < self.released - self.cfg.unit_idle_s
                and all(p.status != "firing" for p in corr.problems.values()))

    def move_home(self, to: str) -> None:
        """Make cluster ``to`` the home (ClusterSlots.move): its correlator and seen --
        another cluster's till now, or new -- become ``correlator`` / ``_seen`` and take the
        topology; the old home's become another cluster's, with its own topology if any."""
        old = self.cluster
        unit = self.clusters.move(to, (self.correlator, self._seen))
        if unit is None:
            return
        self._last.pop(to, None)
        if old is not None and math.isfinite(self.released):
            self._last[old] = self.released  # (its slot is spent unit_idle_s from now at most)
        self.correlator.attach(self.topologies.get(old),  # type: ignore[arg-type]
                               _seen_in(self._seen))
        self.correlator, self._seen = unit
        self.correlator.attach(self.topology, self.was_seen)

    def _correlators(self) -> list[Correlator]:
        return [self.correlator, *(c for c, _ in self.others.values())]

    # -- state ---------------------------------------------------------------------------

    def snapshot(self, codec: StateCodec = UNSIGNED) -> tuple[int, bytes]:
        return self.offset, codec.encode(self.state(),
                                         f"findings:{self.partition}@{self.offset}")

    def state(self) -> dict[str, Any]:
        """What :meth:`snapshot` saves, as data (also a part of the Engine's snapshot)."""
        state = {"v": SNAPSHOT_VERSION, "correlator": self.correlator, "sources": self.sources,
                 "heap": self._heap, "released": self.released, "seen": self._seen,
                 "counts": (self.findings, self.duplicates, self.late, self.invalid)}
        self.clusters.put(state, lambda c, other: [c, *other])
        if self._last:
            state["last"] = self._last
        if self._cluster_of:
            state["cluster_of"] = self._cluster_of
            state["cluster_at"] = self._cluster_at
        if self._defaulted:
            state["cluster_unclaimed"] = sorted(self._defaulted)
        return state

    @classmethod
    def restore(cls, partition: int, offset: int, blob: bytes,
                topology: Topology | None = None, *, expected: Iterable[str] = (),
                now: float = 0.0, source_timeout_s: float = 30.0,
                empty_grace_s: float = 5.0, fed_grace_s: float = 0.25,
                codec: StateCodec = UNSIGNED, home: str | None = None,
                topologies: Mapping[str, Topology] | None = None,
                wall_clock: Callable[[], float] | None = None) -> CorrelatorPartition:
        """The partition a snapshot saved; :class:`SnapshotRefused` if it is not one of ours
        (``wall_clock``: the restoring worker's, which no restored time may be far past)."""
        state = partition_state(codec, blob, f"findings:{partition}@{offset}", "correlator",
                                Correlator, "not a findings partition's state")
        return cls.from_state(state, partition, offset, topology, expected=expected, now=now,
                              source_timeout_s=source_timeout_s, empty_grace_s=empty_grace_s,
                              fed_grace_s=fed_grace_s, home=home, topologies=topologies,
                              wall_clock=wall_clock)

    @classmethod
    def from_state(cls, state: dict[str, Any], partition: int, offset: int,
                   topology: Topology | None = None, *, expected: Iterable[str] = (),
                   now: float = 0.0, source_timeout_s: float = 30.0,
                   empty_grace_s: float = 5.0, fed_grace_s: float = 0.25,
                   home: str | None = None,
                   topologies: Mapping[str, Topology] | None = None,
                   wall_clock: Callable[[], float] | None = None) -> CorrelatorPartition:
        """The partition :meth:`state` described, with what a snapshot never holds given back
        (``home``: the configured home cluster; a home the state names wins)."""
        _check_state(state)
        limit = None if wall_clock is None else wall_clock() + MAX_AHEAD_S
        check_times(state, limit)
        part = cls(partition, state["correlator"].cfg, topology, expected=expected, now=now,
                   source_timeout_s=source_timeout_s, empty_grace_s=empty_grace_s,
                   fed_grace_s=fed_grace_s, home=home, topologies=topologies)
        part.correlator = state["correlator"]
        part.correlator.attach(topology, part.was_seen)
        for name, src in state["sources"].items():
            src.heard = now  # a fresh grace period: its partition may be moving too
            part.sources[name] = src
        part._heap = state["heap"]
        part.released = state["released"]
        part._seen = state["seen"]
        part.findings, part.duplicates, part.late, part.invalid = state["counts"]
        part.offset = offset
        def correlator(entry: list[Any]) -> tuple[Correlator, dict[str, set[str]]]:
            refuse_unless(type(entry[1]) is Correlator, "a cluster split is malformed")
            _check_state({"released": 0.0, "heap": [], "sources": {}, "seen": entry[2],
                          "correlator": entry[1], "counts": (0, 0, 0, 0)})
            check_times({"correlator": entry[1]}, limit)
            entry[1].attach(part.topologies.get(entry[0]), _seen_in(entry[2]))
            return entry[1], entry[2]

        part.clusters.take(state, 3, correlator)
        last = state.get("last", {})
        refuse_unless(type(last) is dict and all(
            c in part.others and is_time(t) for c, t in last.items()),
            "a cluster's newest finding is malformed")
        part._last = last
        cluster_of = state.get("cluster_of", {})  # (a snapshot of round 38 has none)
        refuse_unless(is_map_of(cluster_of, str, str)
                      and len(cluster_of) <= MAX_NODE_CLUSTERS, "cluster_of: malformed")
        part._cluster_of = cluster_of
        # (a snapshot of round 39 has no times: its nodes as of the clock it was taken at)
        cluster_at = state.get("cluster_at", dict.fromkeys(cluster_of, part.released))
        refuse_unless(is_map_of(cluster_at, str, (float, int)) and cluster_at.keys()
                      == cluster_of.keys() and all(map(is_time, cluster_at.values())),
                      "cluster_at: malformed")
        part._cluster_at = cluster_at
        # (a snapshot of round 44 or before has none: its nodes as named by a record)
        unclaimed = state.get("cluster_unclaimed", [])
        refuse_unless(type(unclaimed) is list and all(
            type(n) is str and cluster_of.get(n) not in (None, _HOME) for n in unclaimed),
            "cluster_unclaimed: malformed")
        part._defaulted = set(unclaimed)
        to = part.clusters.due()
        if to is not None:
            part.move_home(to)  # (configuration wins: review29 2; or the topology's name)
        part._taken_at = part.released  # (a snapshot of round 28 has none: as of now)
        for name, src in part.sources.items():
            if src.wm is not None:
                part._data_since = now
                part._topic_since.setdefault(_topic(name), now)
        return part

    # -- input ---------------------------------------------------------------------------

    def on_message(self, offset: int, raw: bytes | None, now: float,
                   key: bytes | None = None) -> None:
        """Take in one findings-topic message (decided later, by :meth:`release`); one whose
        ``key`` carries :attr:`local_tag` was taken already (:meth:`take_local`)."""
        if offset <= self.offset:
            return
        self.offset = offset
        if key is not None and key[:1] == b"\0":
            if key.startswith(self.local_tag):
                return
            # Taken in memory by the partition's owner before us (a restart, a
            # rebalance): our state may be past it (see _watermark).
            self._apply(offset, raw, now, replayed=True)
            return
        self._apply(offset, raw, now)

    def take_local(self, raw: bytes, now: float) -> None:
        """Take in a findings message of this worker's own stage 1 before it reaches the
        topic: its producer keys it with :attr:`local_tag`, and the copy read back is
        passed over.  Kafka keeps one partition's messages in the order they were
        produced, and this worker takes its own in that same order, so a source's
        findings still come before the watermark that covers them; the topic stays
        what a restarted or another worker reads."""
        self._apply(self.offset, raw, now)

    def _apply(self, offset: int, raw: bytes | None, now: float, replayed: bool = False) -> None:
        try:
            # Typed and checked before anything changes (detector.findings.decode_message):
            # a refused message registers no source and moves no clock.
            msg = decode_message(raw)
            t = type(msg)
            if t is WatermarksMessage:
                explain, ended = self._explain, self._ended
                for name, ts, idle in msg.clocks:
                    self._watermark(name, self._heard(name, now), ts, idle, now, replayed)
                    if explain:
                        explain.pop(name, None)
                    if ended:
                        ended.pop(name, None)
                if msg.explain and not replayed:
                    for name, ts in msg.explain:
                        if name in self.sources:
                            explain[name] = ts
                if msg.ended and not replayed:
                    wall = now if self.wall_clock is None else self.wall_clock()
                    for name, sent in msg.ended:
                        if name in self.sources:  # (a fetch "sent" after now: as of now)
                            ended[name] = now - (wall - sent) if sent < wall else now
            elif t is FindingMessage:
                f = finding_of(msg.finding)
                src = self._heard(msg.source, now)
                fid = msg.id
                if fid <= src.last_id:
                    self.duplicates += 1  # a source reprocessing after a restore
                    return
                self.take(src, msg.source, fid, msg.tag, f, msg.arrived)
            elif t is SeenMessage:
                self._heard(msg.source, now)
                self.seen(msg.node, msg.what, msg.cluster)
            elif t is RewoundMessage:
                self._heard(msg.source, now)
                if not replayed:  # (the state restored is past what its previous owner took)
                    self.rewound(msg.source, msg.ts, now)
            else:
                self._heard(msg.source, now)
                self.forget(msg.node, msg.what, msg.cluster)
        except Exception as exc:  # noqa: BLE001
            # Written by our own stage 1, so this is a bug or a foreign producer: count, go on.
            self.invalid += 1
            log.warning("findings partition %d offset %d: unreadable message: %s",
                        self.partition, offset, exc)

    # The findings-topic messages' effects, also called directly by the in-process Engine
    # (its findings go to its one correlator partition in memory, not through the topic).

    def take(self, src: _Source, name: str, fid: tuple[int, int], tag: float, f: Finding,
             arrived: float | None) -> None:
        """A new finding of source ``name`` (id ``fid``, tagged ``tag``): decided on release."""
        src.last_id = fid
        if tag < self.released:
            self.late += 1
        if tag < self.due_at:
            self.due_at = tag
        heapq.heappush(self._heap, (tag, name, fid[0], fid[1], f, arrived))
        self.findings += 1
        if self.taken is not None:
            self.taken(name, fid, tag)

    def seen(self, node: str, what: str, cluster: str | None = None) -> None:
        """Telemetry of kind ``what`` (ecc, thermal, nic) from ``node`` reached a monitor; or
        (``steps``) a step record of ``node`` named ``cluster``: where it runs (key45), kept
        as seen there till its steps are forgotten (no telemetry: was_seen asks a kind)."""
        c = self.cluster_of(node, cluster)
        if what == "steps":
            pass  # (its cluster's, as named: the node's kept while its steps are -- _prune_nodes)
        elif self._cluster_of.get(node) == _HOME:
            cluster = None  # (the home's node: seen there, as its findings go there)
        elif cluster is None or node in self._defaulted:
            # (an unnamed row's: its node's cluster's, as its findings; a named one's of a node
            # the home's correlator holds: the home's while it does -- cluster_of, key45)
            cluster = c
        seen = self._seen
        if cluster is not None and cluster != self.clusters.cluster:
            if self.correlator_for(cluster) is None:
                return  # a cluster past MAX_KEPT: dropped, as its findings are
            # (another's, or the home's: a first value read, or the topology's own, moved to)
            seen = self.others[cluster][1] if cluster in self.others else self._seen
        seen.setdefault(node, set()).add(what)

    def forget(self, node: str, what: str, cluster: str | None = None) -> None:
        """A source pruned ``node``'s ``what`` monitors after silence: no longer seen."""
        known = self._cluster_of.get(node)
        if what == "steps":
            pass  # (its cluster's, as named: seen)
        elif known == _HOME:
            cluster = None
        elif cluster is None:
            cluster = known  # (an unnamed row's: its node's cluster's, as seen: key45)
        seen = self._seen
        if cluster is not None and cluster != self.clusters.cluster \
                and self.clusters.cluster is not None:
            if cluster not in self.others:
                return  # (a forget goes to every partition: not this one's cluster)
            seen = self.others[cluster][1]
        sources = seen.get(node)
        if sources is not None:
            sources.discard(what)
            if not sources:
                del seen[node]

    def _heard(self, name: str, now: float) -> _Source:
        src = self.sources.get(name)
        if src is None:
            src = self.sources[name] = _Source(now)
        src.heard = now
        return src

    def _watermark(self, name: str, src: _Source, ts: Any, idle: Any, now: float,
                   replayed: bool = False) -> None:
        if replayed and src.wm is not None and (ts is None or ts < src.wm):
            # A message the previous owner had taken in memory, older than what the state
            # restored says of the source (it was snapshotted ahead of the topic): nothing
            # in it is news (a source with a clock holds at it, idle or not).
            return
        if ts is not None and (src.wm is None or ts > src.wm):
            if src.wm is None:
                if self._data_since is None:
                    self._data_since = now
                self._topic_since.setdefault(_topic(name), now)
            src.wm = float(ts)
        src.idle = bool(idle)

    def clock(self, now: float) -> float | None:
        """Event time up to which every live source has reported; None: nothing to go on."""
        return self.clocks(now)[0]

    def clocks(self, now: float) -> tuple[float | None, float | None]:
        """:meth:`clock`, and how far a wait for an explanation may go (see release_to): the
        same, with each source's ``explain`` where it has one."""
        low = math.inf
        explain = self._explain
        xlow = math.inf
        hold_empty = self._data_since is None or now - self._data_since < self.empty_grace_s
        for name, src in self.sources.items():
            if now - src.heard > self.source_timeout_s:
                continue  # its worker is gone, or the partition is not assigned to anyone
            wm = src.wm
            if wm is None:
                if src.idle and (self._fed(name, src)
                                 or not hold_empty and self._said_since(name, src)):
                    continue  # empty and fetched to its end: nothing to wait for
                return None, None
            if wm < low:
                low = wm
            if explain:
                x = explain.get(name, wm)
                if x < xlow:
                    xlow = x
        if low == math.inf:
            return None, None
        return low, (xlow if xlow < low else low)

    def _said_since(self, name: str, src: _Source) -> bool:
        """An empty source said it was at its end ``fed_grace_s`` after any source had data:
        what it said before the feed began is no news of the feed's records for it.  A worker
        starved from then on (no core for seconds at load 12, its empty partitions' last word
        "at its end" from before the feed) was let go ``empty_grace_s`` later, and the
        correlator ran past records still in its partitions: a slow rank escalated unknown
        before its throttle sample came (svc37; tests/integration/test_service_scaleout.py's
        extra escalation).  A live worker says it again each heartbeat."""
        return self._data_since is not None \
            and self._said(name, src) - self._data_since >= self.fed_grace_s

    def _fed(self, name: str, src: _Source) -> bool:
        """An empty source reported at its end ``fed_grace_s`` after its topic had data."""
        since = self._topic_since.get(_topic(name))
        return since is not None and self._said(name, src) - since >= self.fed_grace_s

    def _said(self, name: str, src: _Source) -> float:
        """As of when an empty source is known to be at its end: when the fetch that found it
        so was sent (``ended``), else when its word was heard.  A worker whose fetcher thread
        is starved while its heartbeats run (fetch answers 3 s late under load 10-12) says
        "at its end" now of a fetch sent before the feed began, whose high watermark is
        older than the feed's records: taken as of when it was heard, the claim let node-000's
        thermal partition go and a slow rank was escalated unknown before its throttle sample
        came (svc37; tests/integration/test_service_scaleout.py's extra escalation)."""
        return self._ended.get(name, src.heard)

    def release(self, now: float, alerts: list[Alert],
                arrivals: list[float | None] | None = None,
                causes: list[tuple[str, int, int] | None] | None = None) -> None:
        """Decide every finding and timer up to the clock, in event-time order.

        With ``arrivals``, one entry per alert appended: when the input it
        answers reached Kafka, or None for an alert a timer decided; with
        ``causes`` (and ``arrivals``), likewise the (source, input offset, index)
        of the finding it answers (stage tracing).
        """
        clock, explain = self.clocks(now)
        if clock is not None:
            self.release_to(clock, alerts, arrivals, causes,
                            hold=explain if explain < clock else None)  # type: ignore[operator]

    def release_to(self, clock: float, alerts: list[Alert],
                   arrivals: list[float | None] | None = None,
                   causes: list[tuple[str, int, int] | None] | None = None,
                   hold: float | None = None) -> None:
        """:meth:`release` up to the event time ``clock`` (the in-process Engine's, after
        each record: its one source's clock).  Runs after every record in process, so
        the common case -- nothing waiting, nothing due -- is kept to a few loads.

        ``hold`` (below ``clock``): a slow rank's wait for an explanation is decided only up
        to it (Correlator.advance): a source later than the 5 s of disorder the clock
        allows -- a collector flushing every 10 s -- may still bring the throttle sample
        that explains the rank; everything else is decided up to ``clock``, in event order
        (review round 12, C1).  The wait, decided later, sees what came meanwhile."""
        heap = self._heap
        if heap and heap[0][0] <= clock:
            self._release_findings(clock, alerts, arrivals, causes, hold)
        corr = self.correlator
        timers = corr._timers
        if clock > self.released or (hold is not None and timers and timers[0][0] <= clock):
            # corr.advance(clock) when it has anything to do (a timer due, a prune)
            if clock >= corr._next_prune or (timers and timers[0][0] <= clock):
                if clock >= corr._next_prune and self._cluster_at:
                    self._prune_nodes(clock)
                self._guarded(corr.advance, clock, alerts, hold)
            if clock > self.released:
                self.released = clock
        for corr, _ in self.others.values():
            timers = corr._timers
            if clock >= corr._next_prune or (timers and timers[0][0] <= clock):
                self._guarded(corr.advance, clock, alerts, hold)
        self._refresh_due()
        if arrivals is not None:
            arrivals.extend([None] * (len(alerts) - len(arrivals)))
        if causes is not None:
            causes.extend([None] * (len(alerts) - len(causes)))

    def rewound(self, name: str, clock: float, now: float = 0.0) -> None:
        """Source ``name``'s clock went back to ``clock``: its first clock was one node's,
        found ahead of the others (Monitors._first_node).  Its watermark goes back with it
        (watermarks only rise otherwise: it held nobody at its real clock), and so does the
        clock released (:meth:`rewind`).  What both drivers do with the notice
        (SourcePartition.pass_notices): the in-process Engine calls this, the service's
        findings topic carries it as a ``rewound`` message, before the findings made at
        the clock it went back to."""
        src = self.sources.get(name)
        if src is not None and src.wm is not None and clock < src.wm:
            src.wm = clock
        low = self.clock(now)
        self.rewind(clock if low is None or low > clock else low)

    def rewind(self, clock: float) -> None:
        """The clock it was released to was one node's, found ahead of the others
        (Monitors._first_node, a partition's first records): back to ``clock`` while
        nothing is held or timed yet, else left (what was decided stays decided)."""
        if clock < self.released and not self._heap and not any(
                c._timers for c in self._correlators()):
            self.released = clock
            self._refresh_due()

    def _refresh_due(self) -> None:
        corr = self.correlator
        due = corr._next_prune
        timers = corr._timers
        if timers and timers[0][0] < due:
            due = timers[0][0]
        for corr, _ in self.others.values():
            timers = corr._timers
            if corr._next_prune < due:
                due = corr._next_prune
            if timers and timers[0][0] < due:
                due = timers[0][0]
        heap = self._heap
        if heap and heap[0][0] < due:
            due = heap[0][0]
        self.due_at = due

    def _release_findings(self, clock: float, alerts: list[Alert],
                          arrivals: list[float | None] | None,
                          causes: list[tuple[str, int, int] | None] | None = None,
                          hold: float | None = None) -> None:
        corr = self.correlator
        heap = self._heap
        while heap and heap[0][0] <= clock:
            tag, name, off, k, f, arrived = heapq.heappop(heap)
            if tag > self.released:  # timers due before this finding's time go first
                self._guarded(corr.fire_due, tag, alerts, hold)
                for other, _ in self.others.values():
                    self._guarded(other.fire_due, tag, alerts, hold)
                self.released = tag
            # (a GPU row two clusters' hosts of its name may have sent: no cluster's key,
            # SourcePartition._unnamed)
            c = None if f.cluster is None and f.evidence.get("clusters_named") else (
                self.cluster_of(f.scope.node, f.cluster))
            if c != f.cluster:
                f = f._replace(cluster=c)  # (its node's cluster, named by its other rows)
            on = corr
            if c is not None and c != self.clusters.cluster:
                theirs = self.correlator_for(c)
                if theirs is None:
                    self.invalid += 1  # a cluster past MAX_KEPT
                    continue
                if theirs is self.correlator:  # (the home moved to it: the topology's own)
                    corr = theirs
                else:
                    self._last[c] = tag
                on = theirs
            if arrivals is not None:
                if causes is not None:
                    causes.extend([None] * (len(alerts) - len(arrivals)))
                arrivals.extend([None] * (len(alerts) - len(arrivals)))
            if tag > f.ts:  # (made behind its source's clock: a row delivered late)
                on._note_late_row(f, tag)
            self._guarded(on.on_finding, f, alerts)
            if arrivals is not None:
                if causes is not None:
                    causes.extend([(name, off, k)] * (len(alerts) - len(arrivals)))
                arrivals.extend([arrived] * (len(alerts) - len(arrivals)))

    def run_out(self, alerts: list[Alert]) -> None:
        """End of input: time runs on through the timers waiting when the input ended, each
        fired at its due time, and through what they arm up to the last of them -- no
        further.  A look again later (power management still explaining a slow rank, a wait
        for a poll) finds nothing new once the input has ended: run on until no timer was
        left, a slow rank excused by a cap still on at the end was looked at every 15 s for
        a day of event time, until the cap's memory was pruned (unit_fault_idle_s), and
        escalated then -- a page stamped a day past the last record (blind33's cut F5
        log; key43).  Timers past the horizon stay (state, as any timer not yet due); a
        resolved problem's ``forget`` (an hour on) decides nothing and sets no horizon."""
        for corr in self._correlators():
            horizon = max((t[0] for t in corr._timers if t[2] != "forget"), default=-math.inf)
            while (due := corr.due()) <= horizon:
                self.released = max(self.released, due)
                self._guarded(corr.advance, self.released, alerts)
                if corr.due() <= self.released:
                    break  # the timer failed (logged and counted): do not spin on it
        self._refresh_due()

    def _guarded(self, step: Any, arg: Any, alerts: list[Alert], *more: Any) -> None:
        # One finding the correlator chokes on must not stop the partition (and with it
        # every later alert of the cluster): logged, counted, and the next one goes on.
        try:
            step(arg, alerts, *more)
        except Exception:  # noqa: BLE001
            self.errors += 1
            log.exception("findings partition %d: correlator failed on %r", self.partition,
                          arg)

    def stats(self, now: float) -> dict[str, Any]:
        clock = self.clock(now)
        return {"offset": self.offset, "released": finite(self.released),
                "clock": finite(clock) if clock is not None else None,
                "waiting": len(self._heap), "findings": self.findings,
                "duplicates": self.duplicates, "late": self.late, "invalid": self.invalid,
                "errors": self.errors,
                "problems": sum(len(c.problems) for c in self._correlators()),
                "sources": len(self.sources),
                "live_sources": sum(now - s.heard <= self.source_timeout_s
                                    for s in self.sources.values()),
                **({"home_moves": self.clusters.moves} if self.clusters.moves else {}),
                **({"cluster_moves": self.cluster_moves} if self.cluster_moves else {}),
                **({"cluster_claims": self.cluster_claims} if self.cluster_claims else {}),
                **({"cluster_over": self.cluster_over} if self.cluster_over else {})}


def _seen_in(seen: dict[str, set[str]]) -> Callable[[str, str], bool]:
    """was_seen over one cluster's ``seen`` (CorrelatorPartition.others)."""
    return lambda node, what: what in seen.get(node, ())


def _topic(source: str) -> str:
    """The telemetry topic of a source name ("telemetry.step:3" -> "telemetry.step")."""
    return source.rpartition(":")[0]


def alert_message(a: Alert) -> tuple[bytes, bytes]:
    """(key, value) of an alert on its topic: keyed by ``dedup_key``."""
    return a.dedup_key.encode(), dumps(a.to_dict())
