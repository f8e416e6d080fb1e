"""A stage's units by DESIGN's optional `cluster`: one helper for both stages (clusters27).

A unit is (cluster, node): each :class:`~detector.pipeline.source.SourcePartition` keeps a
:class:`~detector.monitors.Monitors` and each
:class:`~detector.pipeline.correlator.CorrelatorPartition` a
:class:`~detector.correlate.Correlator` per `cluster` value.  The stage's own (its
``monitors`` / ``correlator``) is the *home* cluster's -- the cluster of the topology, and of
every record with no `cluster` (a trainer's step rows may lack it beside DCGM rows with it:
one cluster is never split in two); each other value has a unit of its own, made at its first
record, without the topology.  :class:`ClusterSlots` is that bookkeeping: which value is home,
the others' units, at most :data:`MAX_CLUSTERS` in all, and their part of a snapshot.

Which value is home (home28, round 28; home29, home29b), the same rule in every stage and
both drivers:

1. the configured one (``faultline replay --home-cluster``, ``[service] home_cluster``: the
   `cluster` value of the records the topology describes);
2. else a log's topology record's own ``cluster`` (:func:`replay.log.log_head`; replay);
3. else the cluster a faultline topology names itself (``Topology=NAME``,
   :func:`topology_home`) once a record of it went in -- till then, and when no record of it
   comes, the first value the stage reads (round 27's rule; in the service each partition
   decides alone).  A stage whose first value read was another moves its home to NAME at
   NAME's first record (home30: :meth:`ClusterSlots.move`, logged once a process, counted).

So a stream of one cluster value keeps its topology whatever either is named (the bundled
topologies are named after their hardware, h100-128 ..., records after the site: review29 1b,
home29b), and a stream of several, one of them the topology's NAME, gives it the topology in
every stage that reads it -- from NAME's first record on: before it, the first value read had
the topology (its pages of that time say so), and a telemetry partition of the service that
never reads NAME keeps the first value it read.  Set ``home_cluster``.

A stage whose home nobody named that keeps a second value apart while it has a topology says
so, once a process, in the log (naming the topology's own name when it has one): the topology
may be another cluster's than the records'; ``home_cluster`` settles it.

A home once known is kept in the snapshot (key ``cluster``), split or not: a stage restored
mid-stream does not take the next value it reads for its home -- unless its configuration names
another (review29 2: a deployment that ran unconfigured, then set ``home_cluster`` as README
says): the configured one wins, the units trade places (:meth:`ClusterSlots.move`: the named
cluster's unit becomes the stage's own, with the topology; the snapshot's home's an other
cluster's, with its own topology if any), logged (once a process) and counted
(``home_moves`` in the stage's stats).

>>> slots = ClusterSlots(lambda c: f"unit of {c}")
>>> slots.is_home(None), slots.is_home("east"), slots.cluster   # the first value read
(True, True, 'east')
>>> slots.is_home("west"), slots.other("west"), list(slots.others)
(False, 'unit of west', ['west'])
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from detector.events import MAX_NAME_CHARS
from detector.statecodec import refuse_unless

if TYPE_CHECKING:
    from detector.topology import Topology

# Distinct `cluster` values one stage keeps apart (its home and this many less one others): a
# record of one more is refused ("too_many_clusters": dead-lettered, counted), changing nothing
# -- unless another cluster's slot is spent (quiet long enough, nothing open:
# ClusterSlots.give_back_spent), which it then takes (home29).
MAX_CLUSTERS = 16
# Distinct `cluster` values a correlator partition keeps apart.  The sources decide which
# clusters have units (each MAX_CLUSTERS at most, a spent one's slot given back when its
# monitors hold nothing); a correlator takes a correlator for every cluster whose findings
# come -- a source took its records -- and, past MAX_CLUSTERS, first gives back the one of a
# cluster it judges spent (no page firing, no timer, no finding for unit_idle_s).  So a
# cluster a source gave back whose pages are still open (a resolve due, a forget timer) keeps
# its correlator beside the new cluster's until they close (review30 2: the source gave its
# slot to a new cluster, the correlator kept it and dropped every finding of the new one --
# a DBE never paged).  This bound is only against a foreign producer's flood (logged).
MAX_KEPT = 4 * MAX_CLUSTERS

U = TypeVar("U")

log = logging.getLogger(__name__)
_said = False  # the warning of an unnamed home's split: once a process (ClusterSlots.other)
_moved = False  # the warning of a home moved: once a process (ClusterSlots.move)


def check_home(home: str) -> str:
    """``home`` if it is a `cluster` value the contract allows (DESIGN's bounds on a name),
    else ValueError: a configured home cluster that no record could carry is a typo."""
    if type(home) is not str or not home or len(home) > MAX_NAME_CHARS \
            or not home.isprintable():
        raise ValueError(f"home cluster {home!r}: not a `cluster` value (a name of 1 to "
                         f"{MAX_NAME_CHARS} printable characters)")
    return home


def topology_home(topology: Topology | None) -> str | None:
    """The `cluster` value a topology names as its own, if any: a faultline topology's
    ``Topology=NAME`` (when NAME could be a `cluster` value); None for a Slurm
    ``topology.conf`` (its name is only its file's) or no topology."""
    if topology is None or topology.format != "faultline":
        return None
    try:
        return check_home(topology.name)
    except ValueError:
        return None


def home_of(home: str | None) -> str | None:
    """A stage's home before it reads anything: ``home`` (named: configured, or a log's
    topology record's own ``cluster``), else None (the first value read; a topology's own
    name is not the home: home29b)."""
    return check_home(home) if home is not None else None


def other_topologies(home: str | None, topologies: Mapping[str, Topology] | None
                     ) -> dict[str, Topology]:
    """The topologies of clusters other than the home one, by `cluster` value (a stage's
    ``topologies``: each other cluster's units get theirs); ValueError unless the home is
    configured and not among them (the home's is the stage's ``topology``)."""
    if not topologies:
        return {}
    if home is None:
        raise ValueError("a topology per cluster needs the home cluster named (home_cluster): "
                         "else the first value read would be home, whatever its topology")
    if home in topologies:
        raise ValueError(f"cluster {home!r} is the home cluster: its topology is the topology")
    for name in topologies:
        check_home(name)
    return dict(topologies)


class ClusterSlots(Generic[U]):
    """Which `cluster` value is a stage's home, and the units of the others.

    ``make(cluster)``: a new unit for another cluster (no topology).  ``home``: the named one
    (configured, or a log's topology record's), else the first value read; ``topology``: the
    stage's (only for the warning of an unnamed home's split).  With zero or one value read
    nothing of the split shows: :meth:`put` writes no key.
    """

    __slots__ = ("cluster", "others", "named", "hint", "moves", "limit", "_make", "_unnamed")

    def __init__(self, make: Callable[[str], U], home: str | None = None,
                 topology: Topology | None = None, *, limit: int = MAX_CLUSTERS) -> None:
        # the values kept apart at most, the home's among them (MAX_CLUSTERS; a correlator
        # partition's MAX_KEPT)
        self.limit = limit
        # the home cluster: the named one, else the first value read (None: none yet)
        self.cluster: str | None = home_of(home)
        # the home the stage was given (configured, or a log's topology record's): it wins
        # over a snapshot's (:meth:`move`); not state
        self.named = self.cluster
        self.moves = 0  # homes moved (:meth:`move`) since the stage was made; not state
        self.others: dict[str, U] = {}    # every other value's unit, in order of first record
        self._make = make
        # what the warning of a split says the home is, when nobody named it and the stage
        # has a topology (None: named, or nothing to misapply); not state
        self._unnamed: str | None = None
        # nobody named the home: the cluster the topology names itself, which the home
        # moves to when a record of it goes in (rule 3; :meth:`due`); not state
        self.hint: str | None = None
        if home is None and topology is not None:
            named = self.hint = topology_home(topology)
            self._unnamed = "the first value read" if named is None else (
                f"the first value read; the topology names itself {named!r}")

    def is_home(self, cluster: str | None) -> bool:
        """Whether a finding of ``cluster`` goes to the home unit: no value, the home's, or the
        first value read (which becomes the home's: :meth:`settle`).  A finding is made of a
        record that went in; a record may yet be refused -- its stage asks :meth:`goes_home`
        and settles the home once the record went in."""
        if cluster is None or cluster == self.cluster:
            return True
        if self.cluster is None:
            self.cluster = cluster
            return True
        return False

    def goes_home(self, cluster: str | None) -> bool:
        """:meth:`is_home` deciding nothing: a record of ``cluster`` is tried on the home unit
        (no value, the home's, or any while no home is known), which is the home only once
        the record went in (:meth:`settle`; review29 8: one refused row -- a ts past the wall
        clock, a NaN loss -- made its value the home for good)."""
        return cluster is None or cluster == self.cluster or self.cluster is None

    def settle(self, cluster: str | None) -> None:
        """A record of ``cluster`` went into the home unit: with no home known yet, its value
        is the home's (the first value read)."""
        if self.cluster is None and cluster is not None:
            self.cluster = cluster

    def other(self, cluster: str) -> U | None:
        """The unit of ``cluster`` (not the home's), made at its first record; None for a
        value past :data:`MAX_CLUSTERS` (nothing changed: the caller counts it)."""
        unit = self.others.get(cluster)
        if unit is None:
            if len(self.others) + 1 >= self.limit:
                return None
            if self._unnamed is not None and not self.others and cluster != self.hint:
                self._say(cluster)  # (the topology's own is home next: ClusterSlots.move)
            unit = self.others[cluster] = self._make(cluster)
        return unit

    def _say(self, cluster: str) -> None:
        global _said
        if not _said:
            _said = True
            log.warning("records of cluster %r are kept apart from the home cluster %r, which "
                        "the topology describes, and nobody named the home (it is %s): if "
                        "the topology describes cluster %r, set home_cluster (serve "
                        "--home-cluster, [service] home_cluster, replay --home-cluster)",
                        cluster, self.cluster, self._unnamed, cluster)

    def give_back(self, cluster: str) -> None:
        """Forget the unit :meth:`other` made for ``cluster``'s record when the unit refused
        it (DESIGN: an invalid record changes no state -- it takes no slot either)."""
        del self.others[cluster]

    def give_back_spent(self, spent: Callable[[str, U], bool], to: str
                        ) -> tuple[str, U] | None:
        """With every slot taken and a record of cluster ``to`` wanting one: give back the
        slot of the first other cluster (in order of first record) whose unit ``spent(cluster,
        unit)`` says is spent -- quiet long enough, nothing open (each stage says what that
        is) -- and return it, (cluster, unit); None when none is.  Its unit is forgotten: the
        cluster starts afresh if it comes back, as a unit pruned after its silence does."""
        for c, unit in list(self.others.items()):
            if spent(c, unit):
                del self.others[c]
                log.info("cluster %r quiet, nothing open: its slot goes to cluster %r", c, to)
                return c, unit
        return None

    def one_value(self, clusters: set[str | None]) -> str | bool:
        """Whether every record of a batch whose `cluster` values are ``clusters`` goes to the
        home unit (:meth:`goes_home`): True, or -- no home known yet and one value in the
        batch -- that value, home once a record of it went in (the caller settles it)."""
        clusters.discard(None)
        if not clusters or clusters == {self.cluster}:
            return True
        if self.cluster is None and len(clusters) == 1:
            return clusters.pop()  # type: ignore[return-value]
        return False

    def due(self) -> str | None:
        """The cluster the home should move to now, if any: the named one over a snapshot's
        home; else the topology's own name once it has a unit, while another value is home
        (after a restore: both were read before)."""
        home = self.cluster
        if home is None:
            return None
        if self.named is not None:
            return self.named if home != self.named else None
        hint = self.hint
        return hint if hint is not None and hint != home and hint in self.others else None

    def move(self, to: str, own: U) -> U | None:
        """Make ``to`` the home: ``own`` (the stage's own unit, the home's till now) becomes
        the old home's other unit, and the unit returned -- ``to``'s, or a new one -- the
        stage's own.  The stage gives each its topology (the stage's to the new home's unit,
        the old home's own, if any, to ``own``).  None, nothing changed, with no slot left
        for the old home (a snapshot holding :data:`MAX_CLUSTERS` values, ``to`` not among
        them: logged)."""
        old = self.cluster
        unit = self.others.pop(to, None)
        if unit is None:
            if len(self.others) + 1 >= self.limit:
                log.error("home cluster %r is named, but cluster %r is home and no slot is "
                          "left to keep it apart: %r stays home (every %d taken)", to, old,
                          old, self.limit)
                return None
            unit = self._make(to)
        if old is not None:
            self.others[old] = own
        self.cluster = to
        self.moves += 1
        global _moved
        if not _moved:
            _moved = True
            log.warning("home cluster moved from %r to %r (%s): the topology now describes "
                        "%r, and %r runs without it (or with its own) from here on", old, to,
                        "configured" if to == self.named else "the topology names it", to, old)
        return unit

    # -- state ---------------------------------------------------------------------------

    def put(self, state: dict[str, Any], entry: Callable[[str, U], list[Any]]) -> None:
        """The split into a stage's ``state``: ``cluster`` once a home is known, ``others`` only
        when split; ``entry(cluster, unit)``: a unit's list, its cluster first.  (A state of
        round 27 has ``cluster`` only when split: its home is taken afresh, as it was.)"""
        if self.cluster is not None:
            state["cluster"] = self.cluster
        if self.others:
            state["others"] = [entry(c, u) for c, u in self.others.items()]

    def take(self, state: dict[str, Any], width: int, unit: Callable[[list[Any]], U]) -> bool:
        """The split a stage's ``state`` holds, if any (whether it holds one);
        :class:`~detector.statecodec.SnapshotRefused` when it is malformed.  ``unit(entry)``:
        the unit of an entry of ``width`` items whose cluster is checked (refuses the rest)."""
        others, cluster = state.get("others"), state.get("cluster")
        if others is None:
            if "cluster" in state:
                refuse_unless(type(cluster) is str, "a cluster split is malformed")
                self.cluster = cluster  # (a configured one wins after: the stage's move)
            return False
        refuse_unless(type(cluster) is str and type(others) is list
                      and 0 < len(others) < self.limit, "a cluster split is malformed")
        self.cluster = cluster
        for entry in others:
            refuse_unless(type(entry) is list and len(entry) == width
                          and type(entry[0]) is str and entry[0] != cluster
                          and entry[0] not in self.others, "a cluster split is malformed")
            self.others[entry[0]] = unit(entry)
        return True
