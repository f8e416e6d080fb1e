"""The service's two stages without Kafka: telemetry partitions to findings, findings to alerts.

Detection is two stages, Monitors (events to findings) and a Correlator
(findings to alerts).  The service runs them on different partitions with a
topic in between (see notes/service-spec.md); the in-process
:class:`~detector.engine.Engine` runs one of each, the findings passed in
memory:

- a :class:`SourcePartition` per telemetry topic-partition runs a
  :class:`~detector.monitors.Monitors` over that partition's messages and turns
  them into *findings messages*, each tagged with the partition's event-time
  clock when it was made, plus *watermarks* (the clock itself);
- a ``CorrelatorPartition`` (:mod:`detector.pipeline.correlator`) per findings
  partition merges the findings of every source in tag order and runs the
  :class:`~detector.correlate.Correlator` on the slowest live source's clock,
  so its timers (switch windows, escalation waits) see every finding made
  before they fire, whatever order the partitions are consumed in.  That is
  what makes the service raise the same problems as the in-process replay.

Both are plain objects driven by the Faust adapter (:mod:`detector.service.app`)
and tested without a broker: wall time comes in as ``now``, output goes out
as lists.  Both snapshot to data (:mod:`detector.statecodec`, never pickle), for
the snapshots that let a partition move.

Findings-topic messages (orjson), all with ``type``, and all but ``watermarks``
with ``source`` ("telemetry.ecc:3"):

- ``finding``: ``id`` [input offset, index] (unique per source, the same when
  the input is reprocessed, so repeats are dropped), ``tag`` (the source's
  clock when it was made), ``arrived`` (wall time, epoch seconds, at which
  the input record reached Kafka, for the end-to-end latency of the alerts it
  causes) and ``finding`` (:meth:`Finding.to_dict`);
- ``watermarks``: ``clocks``, a list of [source, ts, idle] — each source's
  clock (null before any input) and whether it is idle (caught up and quiet:
  it holds nobody back).  A worker sends one for all the sources a fetched
  batch touched, and one for all of its sources each heartbeat: one message,
  not one per partition, so the output producer and the correlator see a few
  messages a batch, not dozens;
- ``seen``: ``node`` and ``what`` (ecc, thermal, nic) — telemetry from that
  node reached the monitors, which the correlator cites in escalations;
- ``forget``: ``node`` and ``what`` — that node's monitors were pruned after
  ``unit_idle_s`` of silence (a fleet churns), so it is no longer "seen".
"""

from __future__ import annotations

import logging
import math
import zlib
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from operator import itemgetter, lt
from typing import Any, NamedTuple

import orjson
from msgspec.structs import replace

from detector.decoding import decode, decode_chunked
from detector.events import (
    JUMP_AGREE,
    MAX_AHEAD_S,
    STEP,
    EccSample,
    Event,
    InvalidMessage,
    ThermalSample,
)
from detector.findings import Finding
from detector.monitors import Monitors, out_of_range
from detector.pipeline.clusters import MAX_CLUSTERS, ClusterSlots, other_topologies
from detector.quiet import quiet_run
from detector.statecodec import UNSIGNED, SnapshotRefused, StateCodec, refuse_unless
from detector.thresholds import Thresholds
from detector.topology import Topology

log = logging.getLogger(__name__)

DEFAULT_CLUSTER = "default"
# Findings made by an idle advance (no input record) are numbered after the
# record they follow: offset, then this plus a counter.
_IDLE_BASE = 1 << 30
# With every cluster slot taken and none spent, how long (the stream's time) before a record of
# one more cluster looks for one again (SourcePartition._give_back_spent).
SPENT_EVERY_S = 60.0
# With two or more clusters kept apart: how often (the stream's time) the units are looked at,
# and how long a unit's clock stands still while another cluster's records move the stream's
# time before it is run on with them (SourcePartition._run_on_quiet; the same 300 s after
# which a cluster's next record runs it on: _catch_up).
RUN_ON_EVERY_S = 10.0
# A GPU row naming no `cluster` whose GPU two clusters' monitors hold (_unnamed): of the one that
# alone took a row of that GPU within the last MOVED_S -- a node re-racked from one site to
# another names its new site only from then on -- else of neither: two sites' hosts of one name
# report at each one's cadence (dcgm-exporter's 30 s default, a poll lost), and such a row could
# be either's (revA40 F2 / F3).
MOVED_S = 60.0
_GPU_ROWS = (EccSample, ThermalSample)
QUIET_S = MAX_AHEAD_S
SNAPSHOT_VERSION = 1
_OFFSET, _VALUE = itemgetter(0), itemgetter(2)  # a record's (offset, key, value, arrival)


class Undecodable(bytes):
    """The value of a record batch the Kafka client could not decompress (see faust_io)."""

    reason: str

    def __new__(cls, reason: str) -> Undecodable:
        obj = super().__new__(cls)
        obj.reason = reason
        return obj


class Emit(NamedTuple):
    """A message for the findings topic; ``partition`` None means every partition."""

    partition: int | None
    key: bytes
    value: bytes


class DeadLetter(NamedTuple):
    """An input message that broke the contract, with why and where it came from."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    reason: str


def findings_partition(cluster: str | None, partitions: int) -> int:
    """The findings partition of a cluster: all of a cluster's findings meet in one correlator."""
    return zlib.crc32((cluster or DEFAULT_CLUSTER).encode()) % partitions


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY, default=_fallback)


def _fallback(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    try:
        return float(obj)
    except (TypeError, ValueError):
        return str(obj)


def _is_clock(x: Any) -> bool:
    """A clock of the state: a number, -inf before the first record (not NaN, not +inf)."""
    return type(x) in (float, int) and x == x and x != math.inf


def finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def finding_tag(clock: float, f: Finding) -> float:
    """The event time a finding is correlated at: its source's clock when it was made.

    (A NaN loss from a stream with no valid record yet has no clock: its own time.)
    """
    return clock if clock > -math.inf else f.ts


def partition_state(codec: StateCodec, blob: bytes, context: str, part: str, cls: type,
                    what: str) -> dict[str, Any]:
    """A stage's snapshot: :class:`SnapshotRefused` unless it holds a ``cls`` at ``part``."""
    return checked_state(codec.decode(blob, context), part, cls, what)


def checked_state(state: Any, part: str, cls: type, what: str) -> dict[str, Any]:
    """``state`` if it is a stage's (this version, a ``cls`` at ``part``), else
    :class:`SnapshotRefused`."""
    if type(state) is not dict or state.get("v") != SNAPSHOT_VERSION or type(
            state.get(part)) is not cls:
        raise SnapshotRefused("malformed", what)
    return state


# -- stage 1 ---------------------------------------------------------------------------


class SourcePartition:
    """One telemetry topic-partition: its Monitors, and how far into the partition they are."""

    def __init__(self, topic: str, partition: int, findings_partitions: int,
                 thresholds: Thresholds | None = None, topology: Topology | None = None,
                 *, now: float = 0.0, wall_clock: Callable[[], float] | None = None,
                 hold_ahead: bool = False, home: str | None = None,
                 topologies: Mapping[str, Topology] | None = None) -> None:
        self.topic = topic                  # the contract name, e.g. "telemetry.ecc"
        self.partition = partition
        self.source = f"{topic}:{partition}"
        self.findings_partitions = findings_partitions
        # wall_clock (epoch seconds): a partition's first records may not be far ahead of it
        self.monitors = Monitors(thresholds, topology, wall_clock=wall_clock)
        # A unit is (cluster, node) (DESIGN's optional `cluster`): ``monitors`` are the home
        # cluster's -- ``home`` (named), else the first `cluster` value read; every record
        # with none, and the topology's -- each other value
        # has monitors of its own in ``others`` (no topology), made at its first record
        # (detector.pipeline.clusters).
        self.clusters: ClusterSlots[Monitors] = ClusterSlots(self._new_monitors, home, topology)
        home = self.clusters.cluster
        # Other clusters' topologies, by cluster value (not state: given back on restore).
        self.topologies = other_topologies(home, topologies)
        # The findings partition of a finding with no `cluster` (a trainer's step rows): the
        # home's when every stage knows it, where its cluster's findings meet (not each
        # source's own guess).
        self.home_key = (home or DEFAULT_CLUSTER).encode()
        self._home_partition = findings_partition(home, findings_partitions)
        self.others = self.clusters.others  # (the same dict)
        self.too_many_clusters = 0
        # Clusters whose slot was given back (_give_back_spent), with their monitors, until
        # their last notices are passed (pass_notices); and the stream time before which no
        # slot is looked for again.  Not state.
        self._parting: list[tuple[str, Monitors]] = []
        self._spent_after = -math.inf
        # Quiet units run on as the stream's time passes (_run_on_quiet): the stream's time of
        # the next look; each cluster's (its units' clock at the last look, the stream's time
        # since which that clock stood still) -- both state (defer32, revA31 5: a restored
        # partition runs a quiet cluster on when an uninterrupted one would, not QUIET_S
        # afresh); whether a run-on left notices to pass (those of a unit other than the
        # record's: not state, drained with the record's).
        self._run_on_at = -math.inf
        self._still: dict[str | None, tuple[float, float]] = {}
        self._told = False
        self._wall_clock = wall_clock
        self.offset = -1                    # last input offset processed
        self._idle_seq = 0                  # findings made by idle advances since that offset
        self.last_input = now               # wall time of the last input (or of assignment)
        self._advanced_at = now             # wall time the clock was last moved by idleness
        self.caught_up = False              # the caller's view: nothing left to read for now
        self.events = 0
        self.invalid = 0
        self.hold_ahead = hold_ahead        # see admit()
        self.held: list[Event] = []         # far ahead of the clock, waiting for others to agree
        # No home known: the one `cluster` value of the batch the batch path is taking, home
        # once a record of it went in (batch_of_one_cluster, took).  Not state.
        self._first: str | None = None
        self.refused: list[InvalidMessage] = []  # held records refused after all; caller drains
        # hold_ahead: records of a cluster with no units yet, far ahead of the stream's clock,
        # by cluster, waiting for that cluster's own records to agree (admit_new); and the
        # cluster whose first record, so agreed, is let in next.  (held_new is state.)
        self.held_new: dict[str, list[Event]] = {}
        self._let_in: str | None = None

    # -- state ---------------------------------------------------------------------------

    def snapshot(self, codec: StateCodec = UNSIGNED) -> tuple[int, bytes]:
        """(last processed offset, state bytes); the topology is not included."""
        return self.offset, codec.encode(self.state(), f"{self.source}@{self.offset}")

    def state(self) -> dict[str, Any]:
        """What :meth:`snapshot` saves, as data (also a part of the Engine's snapshot)."""
        state = {"v": SNAPSHOT_VERSION, "monitors": self.monitors, "idle_seq": self._idle_seq,
                 "events": self.events, "invalid": self.invalid, "held": self.held}
        self.clusters.put(state, lambda c, m: [c, m])
        if self.others:
            state["too_many_clusters"] = self.too_many_clusters
        if self.held_new:
            state["held_new"] = [e for held in self.held_new.values() for e in held]
        if self._still:
            state["run_on"] = [self._run_on_at, [[c, *v] for c, v in self._still.items()]]
        return state

    @classmethod
    def restore(cls, topic: str, partition: int, findings_partitions: int, offset: int,
                blob: bytes, topology: Topology | None = None, *, now: float = 0.0,
                codec: StateCodec = UNSIGNED, wall_clock: Callable[[], float] | None = None,
                hold_ahead: bool = False, home: str | None = None,
                topologies: Mapping[str, Topology] | None = None) -> SourcePartition:
        """The partition a snapshot saved; :class:`SnapshotRefused` if it is not one of ours."""
        state = partition_state(codec, blob, f"{topic}:{partition}@{offset}", "monitors",
                                Monitors, "not a telemetry partition's state")
        return cls.from_state(state, topic, partition, findings_partitions, offset, topology,
                              now=now, wall_clock=wall_clock, hold_ahead=hold_ahead, home=home,
                              topologies=topologies)

    @classmethod
    def from_state(cls, state: dict[str, Any], topic: str, partition: int,
                   findings_partitions: int, offset: int, topology: Topology | None, *,
                   now: float = 0.0, wall_clock: Callable[[], float] | None = None,
                   hold_ahead: bool = False, home: str | None = None,
                   topologies: Mapping[str, Topology] | None = None) -> SourcePartition:
        """The partition :meth:`state` described, with what a snapshot never holds given back
        (``home``: the configured home cluster; a home the state names wins)."""
        held_new = state.get("held_new", [])
        refuse_unless(all(type(state.get(k)) is int for k in ("idle_seq", "events", "invalid"))
                      and type(state.get("held", [])) is list and type(held_new) is list
                      and len(held_new) <= MAX_CLUSTERS * JUMP_AGREE
                      and all(type(getattr(e, "cluster", None)) is str for e in held_new),
                      "a count or held is malformed")
        def checked(mon: Monitors) -> None:
            # (its times held to the worker's wall clock where there is one, else to its own)
            mon.check_restored()
            ref = mon.clock if wall_clock is None else wall_clock()
            if ref > -math.inf:  # (no wall clock and no record yet: nothing to hold it to)
                mon.check_times(ref + MAX_AHEAD_S)

        checked(state["monitors"])
        part = cls(topic, partition, findings_partitions, topology=topology, now=now,
                   hold_ahead=hold_ahead, home=home, topologies=topologies)
        part.monitors = state["monitors"]
        part.monitors.attach(topology, wall_clock)
        part.offset = offset
        part._idle_seq = state["idle_seq"]
        part.events, part.invalid = state["events"], state["invalid"]
        part.held = list(state.get("held", ()))
        for e in held_new:
            part.held_new.setdefault(e.cluster, []).append(e)
        def monitors(entry: list[Any]) -> Monitors:
            refuse_unless(type(entry[1]) is Monitors, "a cluster split is malformed")
            checked(entry[1])
            entry[1].attach(part.topologies.get(entry[0]), wall_clock)
            return entry[1]

        if part.clusters.take(state, 2, monitors):
            too_many = state.get("too_many_clusters")
            refuse_unless(type(too_many) is int and too_many >= 0,
                          "a cluster split is malformed")
            part.too_many_clusters = too_many
        run_on = state.get("run_on")
        if run_on is not None:  # (none before round 32, or no other cluster: as fresh)
            refuse_unless(type(run_on) is list and len(run_on) == 2 and _is_clock(run_on[0])
                          and type(run_on[1]) is list and len(run_on[1]) <= MAX_CLUSTERS + 1
                          and all(type(e) is list and len(e) == 3
                                  and (e[0] is None or type(e[0]) is str)
                                  and _is_clock(e[1]) and _is_clock(e[2]) for e in run_on[1]),
                          "run_on: malformed (the quiet clusters' run-on)")
            # (a look or a "still since" past the partition's clock never comes: the quiet
            # cluster would never be run on again -- revA32 1)
            clock = part.clock
            refuse_unless(run_on[0] <= clock + RUN_ON_EVERY_S
                          and all(e[2] <= clock for e in run_on[1]),
                          "run_on: past the partition's clock")
            part._run_on_at = float(run_on[0])
            part._still = {e[0]: (float(e[1]), float(e[2])) for e in run_on[1]}
        to = part.clusters.due()
        if to is not None:
            part.move_home(to)  # (configuration wins: review29 2; or the topology's name)
        return part

    def move_home(self, to: str) -> None:
        """Make cluster ``to`` the home (ClusterSlots.move): its monitors -- another
        cluster's till now, or new -- become ``monitors`` and take the topology; the old
        home's become another cluster's, with its own topology if any."""
        old = self.cluster
        topology = self.monitors.topology
        mon = self.clusters.move(to, self.monitors)
        if mon is None:
            return
        wall_clock = self._wall_clock
        mon.attach(topology, wall_clock)
        self.monitors.attach(self.topologies.get(old), wall_clock)  # type: ignore[arg-type]
        self.monitors = mon

    @property
    def cluster(self) -> str | None:
        """The home cluster: ``monitors``' (see ``clusters``)."""
        return self.clusters.cluster

    @property
    def clock(self) -> float:
        if not self.others:
            return self.monitors.clock
        return max(self.monitors.clock, *(m.clock for m in self.others.values()))

    def _new_monitors(self, cluster: str) -> Monitors:
        return Monitors(self.monitors.cfg, self.topologies.get(cluster),
                        wall_clock=self._wall_clock)

    def monitors_for(self, ev: Event, found: list[Finding] | None = None) -> Monitors:
        """The monitors of ``ev``'s cluster (see ``clusters``) -- with every slot taken, a
        spent cluster's given back for it (:meth:`_give_back_spent`, when ``found`` takes
        what running the others on finds); :class:`InvalidMessage` "too_many_clusters" for
        a cluster past MAX_CLUSTERS (nothing changed)."""
        mon = self.monitors_of(ev.cluster)
        if mon is None and found is not None and self._give_back_spent(ev.cluster, found):
            mon = self.monitors_of(ev.cluster)
        if mon is None:
            self.too_many_clusters += 1
            raise InvalidMessage(self.topic, "too_many_clusters", "cluster")
        return mon

    def _give_back_spent(self, cluster: str | None, found: list[Finding]) -> bool:
        """Every slot taken: give back another cluster's whose monitors, run on to the
        stream's time (as the service's idle advance runs them; findings into ``found``),
        hold nothing any more -- every unit and job pruned after its silence (``unit_idle_s``;
        ``unit_fault_idle_s`` for a unit with a fault raised; ``job_idle_s``): quiet that
        long, nothing open.  Its last notices (forget) are passed with the record's
        (:attr:`_parting`); if it comes back, it starts afresh.  Tried at most once a
        :data:`SPENT_EVERY_S` of the stream's time while none is spent (a flood of a
        17th cluster's records does not run the 15 on each)."""
        clock = self.clock
        if clock < self._spent_after:
            return False

        def spent(_: str, mon: Monitors) -> bool:
            if mon.clock < clock:
                mon.advance(clock, found)
            return mon.holds_nothing(found)

        gone = self.clusters.give_back_spent(spent, cluster)  # type: ignore[arg-type]
        if gone is None:
            self._spent_after = clock + SPENT_EVERY_S
            return False
        self._parting.append(gone)
        return True

    def feed(self, ev: Event, found: list[Finding],
             through: list[tuple[float, int]] | None = None) -> Monitors:
        """``ev`` through its unit's monitors, which it returns; InvalidMessage as they raise
        it.  The one way a record admitted goes in, in both drivers (the service's
        :meth:`process`, the Engine's ``process``): its cluster's monitors
        (:meth:`process_other` for another cluster's), run on to the stream's time first when
        that cluster was quiet while another kept it (:meth:`_catch_up`) -- the home cluster's
        as much as another's (home29: a home quiet > 300 s had its next records refused
        ts_out_of_range in the service, held in the Engine)."""
        named: list[str] | None = None
        if ev.cluster is None and self.others and type(ev) in _GPU_ROWS:
            ev, named = self._unnamed(ev)
        n0 = len(found)
        c = ev.cluster
        if c is not None and c != self.clusters.cluster:
            if self.clusters.cluster is None:
                # No home known: the first value read is home once a record of it went in -- a
                # refused one decides nothing (review29 8; DESIGN: an invalid record changes
                # no state).  (No other cluster's units yet: nothing to catch up with.)
                self.monitors.process(ev, found, through)
                self.clusters.settle(c)
                return self.monitors
            mon = self.process_other(ev, found, through)
        else:
            mon = self.monitors
            if self.others and ev.ts - mon.clock > MAX_AHEAD_S:
                self._catch_up(mon, ev.ts, found)
            mon.process(ev, found, through)
        if named is not None:
            for i in range(n0, len(found)):
                f = found[i]
                if f.cluster is None and f.scope.node == ev.node:
                    found[i] = f._replace(evidence={**f.evidence, "clusters_named": named})
        if self.others and mon.clock >= self._run_on_at:
            self._run_on_quiet(found)
        return mon

    def _unnamed(self, ev: Event) -> tuple[Event, list[str] | None]:
        """A GPU row naming no ``cluster`` (DESIGN makes it optional; an XID event row of a
        collector that names none) while this partition keeps two clusters or more: named
        after the cluster whose monitors alone took a row of its GPU within MOVED_S (a node
        re-racked: its old site's monitors keep its GPUs an hour, its rows name the new one
        only -- the old site's key would page a fault it no longer holds, revA40 F3), or
        after the only one holding the GPU, when not the home's; left unnamed otherwise,
        with the clusters whose rows of the GPU are that recent (``clusters_named``: told in
        its findings' evidence, which the correlator partition pages under no cluster's key
        rather than the node's first one -- two sites' hosts of one name, revA40 F2: its
        healthy namesake's).  The home's alone holding it: unnamed as before (the node's
        known cluster: CorrelatorPartition.cluster_of), and so where the home is the
        topology's and the topology has the node (home28: its hosts' names are the home's,
        CorrelatorPartition._homes)."""
        slots, topo = self.clusters, self.monitors.topology
        if topo is not None and slots.cluster in (slots.named, slots.hint) and (
                slots.cluster is not None and topo.has_node(ev.node)):
            return ev, None
        heard = [(t, c) for c, mon in ((self.cluster, self.monitors), *self.others.items())
                 if c is not None and (t := mon.heard_at(ev)) is not None]
        if not heard:
            return ev, None
        recent = sorted(c for t, c in heard if t > ev.ts - MOVED_S)
        if len(heard) == 1 or len(recent) == 1:
            c = heard[0][1] if len(heard) == 1 else recent[0]
            return (ev, None) if c == self.cluster else (replace(ev, cluster=c), None)
        return ev, recent or sorted(c for _, c in heard)

    @property
    def run_on_due(self) -> float:
        """The stream's time of the next look for quiet clusters (:meth:`_run_on_quiet`; inf:
        one cluster, none): the batch path (detector.quiet's ``until``) ends its runs before
        it, so the record that reaches it goes through :meth:`feed` -- the look, and what it
        runs on, at the same record whatever the batching (revA31 5: a quiet cluster's
        resolve moved with the batch boundaries, 2101 s record by record, 2110 s through
        Engine.process_many)."""
        return self._run_on_at if self.others else math.inf

    def _run_on_quiet(self, found: list[Finding]) -> None:
        """Every cluster's units run on as the stream's time passes (review30 4): a cluster
        whose units' clock stood still for :data:`QUIET_S` of the stream's time (the
        partition's clock, moved by the other clusters' records) is run on to it -- as a
        one-cluster stream's other nodes' records run a stopped job's on (not quiet: the
        records are the evidence that the stream is live and the cluster's job stopped;
        Monitors.advance), looked at every :data:`RUN_ON_EVERY_S` of the stream's time (at
        most :data:`MAX_CLUSTERS` units a look).  Before, a quiet cluster's stopped job was
        decided only at its own next record (_catch_up) or when its slot was wanted
        (_give_back_spent): its slow rank's page fired as long as the others reported.  A
        unit whose clock moves (its own records) is never run on; findings into ``found``."""
        clock = self.clock
        self._run_on_at = clock + RUN_ON_EVERY_S
        last = self._still
        still: dict[str | None, tuple[float, float]] = {}
        for c, mon in ((self.cluster, self.monitors), *self.others.items()):
            seen = last.get(c)
            if seen is None or seen[0] != mon.clock:
                still[c] = (mon.clock, clock)
                continue
            if clock - seen[1] >= QUIET_S and mon.clock < clock:
                mon.advance(clock, found, quiet=False)
                if mon.forgotten or mon.heard:
                    self._told = True
            still[c] = (mon.clock, seen[1])
        self._still = still

    def process_other(self, ev: Event, found: list[Finding],
                      through: list[tuple[float, int]] | None = None) -> Monitors:
        """``ev``, whose `cluster` is not the home's (as far as known), through its cluster's
        monitors (:meth:`monitors_for`), which it returns; InvalidMessage as they raise it.
        Monitors made for a record they refuse give their slot back: an invalid record
        changes no state, and 15 of them must not shut a real cluster out."""
        c = ev.cluster
        fresh = c not in self.others
        mon = self.monitors_for(ev, found)
        if not fresh or mon is self.monitors:
            if ev.ts - mon.clock > MAX_AHEAD_S:
                self._catch_up(mon, ev.ts, found)
            mon.process(ev, found, through)
            return mon
        try:
            mon.process(ev, found, through)
        except InvalidMessage:
            self.clusters.give_back(c)  # type: ignore[arg-type]
            raise
        if self.held_new:
            self._refuse_new(c)  # (held far ahead of the time its units now start at)
        if c == self.clusters.hint:
            self.move_home(c)  # type: ignore[arg-type]  # the topology's own: home now
        return mon

    def _catch_up(self, mon: Monitors, ts: float, found: list[Finding]) -> None:
        """A record far ahead of its cluster's clock but not of the stream's (the partition's
        clock, :attr:`clock`): that cluster was quiet while another kept the time, and its
        monitors' clock runs on to the stream's first, as the idle advance would have run it
        (Monitors.advance), so the record is judged against the stream's time -- not refused
        ts_out_of_range until three agree on a jump that no clock made (review28 finding 4).
        A record far ahead of the stream too is left to the event-time guard."""
        clock = self.clock
        if mon.clock > -math.inf and ts - clock <= MAX_AHEAD_S:
            mon.advance(clock, found)

    def monitors_of(self, cluster: str | None, *, make: bool = True) -> Monitors | None:
        """The monitors of ``cluster`` (see ``clusters``), None past MAX_CLUSTERS -- or, not
        ``make``, for another cluster with no units yet (a NaN step's salvage: a dead-lettered
        row takes no cluster slot; review29 -- 15 of them under new values shut every later
        cluster out, too_many_clusters)."""
        if self.clusters.goes_home(cluster):
            # (with no home known, a NaN row of a value goes nowhere: it would decide the
            # home -- review29 8 -- or salvage into another cluster's units)
            return self.monitors if make or cluster is None or self.cluster is not None \
                else None
        if not make:
            return self.others.get(cluster)  # type: ignore[arg-type]
        return self.clusters.other(cluster)  # type: ignore[arg-type]

    def batch_of_one_cluster(self, evs: list[Any]) -> bool:
        """Whether every record of ``evs`` goes to ``monitors`` (the batch path may take
        them: detector.quiet).  With no home known and one value among them, that value is
        home once a record of it went in (:meth:`took`, :meth:`feed`)."""
        one = self.clusters.one_value({e.cluster for e in evs if e is not None})
        self._first = one if type(one) is str else None
        return one is not False

    def took(self, evs: list[Any], i: int, j: int) -> None:
        """``evs[i:j]`` went into ``monitors`` by the batch path (detector.quiet): the first
        value read is home if a record of it is among them (ClusterSlots.settle)."""
        first = self._first
        if first is not None and any(e.cluster == first for e in islice(evs, i, j)):
            self.clusters.settle(first)
            self._first = None

    # -- the way in (shared by the service and the in-process Engine) ----------------------

    def decode(self, topic: str, value: Any, found: list[Finding],
               decoder: Callable[[str, Any], Event] = decode) -> Event:
        """One record's value as a telemetry event, or :class:`InvalidMessage` (its dead-letter
        reason) once what can be salvaged from it is in ``found``: a step dead-lettered for a
        NaN loss still reports the NaN on its GPU (:class:`~detector.events.NonFinite`).

        ``decoder``: :func:`~detector.decoding.decode` for Kafka message bytes (the service),
        :func:`~detector.decoding.decode_value` for a log's parsed value (replay).
        """
        try:
            return decoder(topic, value)
        except InvalidMessage as exc:
            if exc.nonfinite is not None:
                # (in its cluster's monitors: the job of that name there; none of a cluster
                # with no units yet, or past the cap)
                mon = self.monitors_of(exc.cluster, make=False)
                if mon is not None:
                    mon.process_nonfinite(exc.nonfinite, found)
            raise

    def admit(self, ev: Event) -> tuple[Event, ...]:
        """The event-time guard: the records that go into the monitors now, given ``ev``.

        A record more than ``MAX_AHEAD_S`` ahead of the clock counts towards a
        jump (:meth:`Monitors.count_jump`); the clock moves only when
        ``JUMP_AGREE`` consecutive records agree on the new time (a gap in
        the input).  What happens to the records counted short of that is the
        one thing that differs between the two drivers, by ``hold_ahead``:

        - False (the service): each is refused at once -- :meth:`Monitors.process`
          raises ``ts_out_of_range`` and the record is dead-lettered with its
          batch.  A partition's offset is committed after each snapshot, and a
          record decided later than it is read would have to travel in the
          snapshot and hold its dead letter back; a live partition's clock is
          also bounded by the wall clock, so a jump there is rare and short.
        - True (the in-process Engine, a log with its own time): they wait here
          (and in the snapshot), and go in with the record that makes the jump
          real, so a gap in a log loses nothing.  A record back on the old clock
          first means they were strays: they are refused into :attr:`refused`
          having changed nothing -- unless the old clock is still unconfirmed
          (:attr:`Monitors.unconfirmed`: its first record may be the stray, a node
          reporting 1970) and has, with this record, no more records than they are:
          then the record goes in and they stay held (a vote the majority wins).
        """
        c = ev.cluster
        if c is not None and c != self.clusters.cluster and c not in self.others \
                and self.hold_ahead and self.clusters.cluster is not None:
            return self.admit_new(ev)
        mon = self.monitors
        # (judged against the stream's time, every cluster's: a home cluster quiet while
        # another keeps the time is run on to it as its next record goes in -- feed)
        clock = mon.clock if not self.others else self.clock
        if not self.hold_ahead or ev.ts - clock <= MAX_AHEAD_S or clock == -math.inf:
            if self.held and (not mon.unconfirmed
                              or JUMP_AGREE - mon.unconfirmed + 1 > len(self.held)):
                self.refuse_held()
            return (ev,)
        n = mon.count_jump(ev.ts)
        if n == 1 and self.held:
            # It disagrees with them: they were strays, and the count it started stays
            # (refuse_held would forget it, and a real gap after a stray never be taken).
            self._refuse()
        if n < JUMP_AGREE:
            self.held.append(ev)
            return ()
        held = (*self.held, ev)
        self.held = []
        mon.clock = held[0].ts  # the jump is real
        return held

    def admit_new(self, ev: Event) -> tuple[Event, ...]:
        """:meth:`admit` (hold_ahead) for a record of a cluster with no units yet: that
        cluster's time is its own (review29 3: one whose clock runs > 300 s ahead of the
        stream's -- its NTP source off -- had its first records held against the stream's
        clock, each record of another cluster between resetting the count: never any units,
        never a page, while the service takes its first record at its own time).  Far ahead
        of the stream's clock, it waits (:attr:`held_new`) for ``JUMP_AGREE`` records of its
        own cluster agreeing on its time -- other clusters' records between do not count --
        and goes in with them, its units made at its time (a lone stray of a new value, a
        node's clock in 2100, moves no clock: refused when its cluster's records come on the
        stream's time, or at the end)."""
        c: str = ev.cluster  # type: ignore[assignment]
        if c == self._let_in:
            self._let_in = None
            return (ev,)
        clock = self.clock
        held = self.held_new.get(c)
        if ev.ts - clock <= MAX_AHEAD_S or clock == -math.inf:
            if held:
                self._refuse_new(c)  # (its own records on the stream's time: strays)
            return (ev,)
        if held is None:
            if len(self.held_new) >= MAX_CLUSTERS:
                # (bounded: far-ahead rows each under a new value -- a forged or garbled
                # log -- would hold one list a value; no more new clusters than slots wait)
                self.refused.append(out_of_range(ev, clock))
                return ()
            held = self.held_new[c] = []
        elif abs(ev.ts - held[-1].ts) > MAX_AHEAD_S:
            self._refuse_new(c)  # it disagrees with them: they were strays
            held = self.held_new[c] = []
        held.append(ev)
        if len(held) < JUMP_AGREE:
            return ()
        del self.held_new[c]
        self._let_in = c
        return tuple(held)

    def _refuse_new(self, cluster: str | None = None) -> None:
        """Records :meth:`admit_new` held, of ``cluster`` (None: every one), refused."""
        for c in [cluster] if cluster is not None else list(self.held_new):
            held = self.held_new.pop(c, ())  # type: ignore[arg-type]
            self.refused.extend(out_of_range(e, self.clock) for e in held)

    def refuse_held(self) -> None:
        """The held records were strays: refused (see :meth:`admit`), the jump count reset."""
        self._refuse()
        self.monitors.forget_jump()

    def _refuse(self) -> None:
        self.refused.extend(out_of_range(e, self.clock) for e in self.held)
        self.held = []

    def run_on(self, until: float, found: list[Finding]) -> None:
        """Let event time run on to ``until`` without a record, deciding what waited for it.

        ``until`` = inf is the end of the input (the in-process Engine's
        ``finish``): every step still waiting for ranks is decided, and the
        clock and the units stay (silence at the end of a log is not a fleet
        shrinking).  Otherwise (the service's idle advance) the clock moves
        there, and overdue steps are decided and silent units pruned as the
        next record would have.
        """
        if self.held:
            self.refuse_held()
        if self.held_new:
            self._refuse_new()
        for mon in (self.monitors, *self.others.values()):
            if until == math.inf:
                mon.finish(found)
            else:
                mon.advance(until, found)

    # -- processing ----------------------------------------------------------------------

    def process(self, records: Iterable[tuple[int, bytes | None, bytes | None, float | None]],
                now: float, emits: list[Emit], dead: list[DeadLetter], *,
                arrivals_per_s: float = 1.0) -> None:
        """Feed (offset, key, value, arrival) records in partition order; output is appended.

        ``arrival`` is when the record reached Kafka (its timestamp: epoch
        seconds, or ``arrivals_per_s`` units a second) or None.
        """
        mon = self.monitors
        topic = self.topic
        found: list[Finding] = []
        n_in = 0
        if type(records) is not list:
            records = list(records)
        # The batch in a few msgspec calls; a None is a message decided on its own.  (The
        # fields by map(itemgetter): a list comprehension ran ~7 bytecodes a record each.)
        evs = decode_chunked(topic, list(map(_VALUE, records)))
        n = len(records)
        i = 0
        if n:
            offsets = list(map(_OFFSET, records))
            if offsets[0] > self.offset and all(map(lt, offsets, islice(offsets, 1, None))) \
                    and self.batch_of_one_cluster(evs):
                # Offsets new and in order: runs of records that make no finding (healthy
                # samples, step messages that only wait for their step's other ranks) in one
                # loop (detector.quiet), the rest one by one as below.
                while i < n:
                    j = quiet_run(mon, evs, i, self.run_on_due)
                    if j > i:
                        if self._first is not None:
                            self.took(evs, i, j)
                        n_in += j - i
                        self.events += j - i
                        self.offset = offsets[j - 1]
                        self._idle_seq = 0
                        i = j
                        if i == n:
                            break
                    self._one(records[i], evs[i], found, emits, dead, arrivals_per_s)
                    n_in += 1
                    i += 1
        for k in range(i, n):
            if records[k][0] <= self.offset:
                continue  # already in the state (a fetch repeated after a seek)
            n_in += 1
            self._one(records[k], evs[k], found, emits, dead, arrivals_per_s)
        if n_in:
            self.last_input = now
            self._advanced_at = now

    def _one(self, record: tuple[int, bytes | None, bytes | None, float | None],
             ev: Event | None, found: list[Finding], emits: list[Emit], dead: list[DeadLetter],
             arrivals_per_s: float) -> None:
        """One record (new to the state) through the monitors: findings, seen, dead letter."""
        offset, key, raw, arrived = record
        topic = self.topic
        mon = self.monitors
        through: list[tuple[float, int]] | None = [] if topic == STEP else None
        try:
            if ev is None:
                if raw is None or type(raw) is not bytes:
                    if isinstance(raw, Undecodable):
                        raise InvalidMessage(topic, raw.reason)
                    if raw is None:
                        raise InvalidMessage(topic, "message has no value (a tombstone?)")
                ev = self.decode(topic, raw, found)
            mon = self.feed(ev, found, through)  # InvalidMessage too: ts out of range (admit)
        except InvalidMessage as exc:
            self.invalid += 1
            dead.append(DeadLetter(topic, self.partition, offset, key, raw, str(exc)))
        except Exception as err:  # noqa: BLE001 - see _engine_error
            self._engine_error(err, offset, key, raw, dead)
        else:
            self.events += 1
        self.offset = offset
        self._idle_seq = 0
        if mon.heard or mon.forgotten or mon.rewound or self._parting or self._told:
            self._emit_seen(emits)
        if found:
            self._emit_findings(found, offset, 0, emits,
                                None if arrived is None else arrived / arrivals_per_s, through)
            found.clear()

    def _engine_error(self, exc: Exception, offset: int, key: bytes | None, raw: bytes | None,
                      dead: list[DeadLetter]) -> None:
        # A record the engine chokes on is dead-lettered like bad input: one poison
        # message must not stop a partition (and with it every job keyed there).
        log.error("engine failed on %s offset %d", self.source, offset, exc_info=exc)
        dead.append(DeadLetter(self.topic, self.partition, offset, key, raw,
                               f"{self.topic}: internal error in the engine: "
                               f"{type(exc).__name__}: {exc}"[:500]))

    def _emit_findings(self, found: list[Finding], offset: int, first: int,
                       emits: list[Emit], arrived: float | None = None,
                       through: list[tuple[float, int]] | None = None) -> None:
        """``through``: Monitors.process's marks -- the findings of a sweep run through a
        jump of the clock are tagged with the clock of their sweep, not the record's."""
        clock = self.clock
        parts = self.findings_partitions
        marks = iter(through or ())
        mark = next(marks, None)
        for k, f in enumerate(found, first):
            while mark is not None and k - first >= mark[1]:
                mark = next(marks, None)
            cluster = f.cluster
            tag = finding_tag(clock if mark is None else mark[0], f)
            if cluster is None:
                part, key = self._home_partition, self.home_key
            else:
                part, key = findings_partition(cluster, parts), cluster.encode()
            emits.append(Emit(part, key, dumps(
                {"type": "finding", "source": self.source, "id": [offset, k], "tag": tag,
                 "arrived": arrived, "finding": f.to_dict()})))

    def pass_notices(self, rewound: Callable[[float], None],
                     seen: Callable[[str | None, str, str], None],
                     forget: Callable[[str | None, str, str], None]) -> None:
        """What the correlators must learn of the monitors after a record, drained, before
        its findings: the clock went back (``Monitors.rewound``: ``rewound(clock)``), a
        node's telemetry of a kind heard from (``seen(cluster, node, what)``) or pruned
        (``forget(cluster, node, what)``: the cluster only from a source keeping two or
        more apart).  One path for both drivers: the service puts them on the
        findings topic (:meth:`_emit_seen`), the in-process Engine hands them to its
        correlator partition; either way CorrelatorPartition.rewound / .seen / .forget."""
        mon = self.monitors
        if mon.rewound:
            mon.rewound = False
            rewound(mon.clock)
        for cluster, node, what in mon.heard:
            seen(cluster, node, what)
        mon.heard.clear()
        for node, what in mon.forgotten:
            forget(self.cluster, node, what)
        mon.forgotten.clear()
        for c, mon in (*self._parting, *self.others.items()):
            # (a rewind of another cluster's first node: the source's clock is the first's)
            mon.rewound = False
            for _, node, what in mon.heard:
                seen(c, node, what)
            mon.heard.clear()
            for node, what in mon.forgotten:
                forget(c, node, what)
            mon.forgotten.clear()
        self._parting.clear()
        self._told = False

    def _emit_seen(self, emits: list[Emit]) -> None:
        """The notices of :meth:`pass_notices` as findings-topic messages."""
        source, parts = self.source, self.findings_partitions

        def rewound(clock: float) -> None:  # every correlator takes this source's clock
            emits.append(Emit(None, b"watermark", dumps(
                {"type": "rewound", "source": source, "ts": clock})))

        def seen(cluster: str | None, node: str, what: str) -> None:
            msg = {"type": "seen", "source": source, "node": node, "what": what}
            if cluster is not None:  # (its correlator partition may keep clusters apart)
                msg["cluster"] = cluster
                part = findings_partition(cluster, parts)
            else:
                part = self._home_partition
            emits.append(Emit(part, b"seen", dumps(msg)))

        def forget(cluster: str | None, node: str, what: str) -> None:
            # A forgotten node's cluster is not known any more: every correlator hears it.
            msg = {"type": "forget", "source": source, "node": node, "what": what}
            if cluster is not None:
                msg["cluster"] = cluster
            emits.append(Emit(None, b"seen", dumps(msg)))

        self.pass_notices(rewound, seen, forget)

    def idle_advance(self, now: float, idle_after_s: float, emits: list[Emit]) -> None:
        """With no input for ``idle_after_s`` (wall), let event time run on with the wall clock.

        Steps still waiting for ranks get decided, and the correlator's timers
        fire, when a stream goes quiet (at the end of a replay, or when a job
        stops) — in process, ``Engine.finish`` does this.
        """
        if not self.is_idle(now, idle_after_s) or not math.isfinite(self.monitors.clock):
            return
        found: list[Finding] = []
        self.run_on(self.clock + (now - self._advanced_at), found)
        self._advanced_at = now
        if any(m.heard or m.forgotten for m in (self.monitors, *self.others.values())):
            self._emit_seen(emits)
        if found:
            self._emit_findings(found, self.offset, _IDLE_BASE + self._idle_seq, emits)
            self._idle_seq += len(found)

    def is_idle(self, now: float, idle_after_s: float) -> bool:
        """Caught up and quiet: its clock should hold no other source back."""
        if not self.caught_up:
            return False
        if not math.isfinite(self.monitors.clock):
            return True  # nothing ever read and nothing to read: nothing to wait for
        return now - self.last_input >= idle_after_s

    def clock_entry(self, now: float, idle_after_s: float, clock: float | None = None
                    ) -> list[Any]:
        """[source, clock, idle] for a watermarks message; ``clock``: what to report instead
        of the monitors' own (PipelineWorker.reported_clock)."""
        return [self.source, finite(self.clock if clock is None else clock),
                self.is_idle(now, idle_after_s)]

    def stats(self) -> dict[str, Any]:
        stats = {"offset": self.offset, "clock": finite(self.clock),
                 "events": self.events, "invalid": self.invalid,
                 "findings": self.monitors.counts["findings"]}
        if self.others:
            stats["findings"] += sum(m.counts["findings"] for m in self.others.values())
            stats["clusters"] = 1 + len(self.others)
            stats["too_many_clusters"] = self.too_many_clusters
        if self.clusters.moves:
            stats["home_moves"] = self.clusters.moves
        return stats


def watermarks(parts: Iterable[SourcePartition], now: float, idle_after_s: float,
               clocks: Iterable[tuple[float, float]] | None = None,
               ended: Mapping[str, float] | None = None) -> Emit:
    """The clocks of several sources in one message, for every findings partition;
    ``clocks``: one (clock, explain) pair per part, reported instead of their own: ``clock``
    in ``clocks``, and ``explain`` in ``explain`` where it is lower (a source later than the
    5 s the correlator's clock allows, which a wait for an explanation is held for: see
    PipelineWorker.reported_clock and CorrelatorPartition.release_to).  ``ended``: source ->
    when the fetch that found it at its end was sent; in ``ended`` for an idle source with no
    record yet (the correlator lets it go on what that fetch saw: CorrelatorPartition._said)."""
    explain: list[list[Any]] = []
    if clocks is None:
        entries = [p.clock_entry(now, idle_after_s) for p in parts]
    else:
        entries = []
        for p, (c, x) in zip(parts, clocks, strict=True):
            entries.append(p.clock_entry(now, idle_after_s, c))
            if x < c:
                explain.append([p.source, x])
    msg: dict[str, Any] = {"type": "watermarks", "clocks": entries}
    if explain:
        msg["explain"] = explain
    if ended:
        said = [[name, ended[name]] for name, ts, idle in entries
                if ts is None and idle and name in ended]
        if said:
            msg["ended"] = said
    return Emit(None, b"watermark", dumps(msg))
