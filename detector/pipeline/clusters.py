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

>>> slots = ClusterSlots(lambda c: f"unit of {c}")
>>> slots.is_home(None), slots.is_home("east"), slots.cluster   # the first value read
(True, True, 'east')
>>> slots.is_home("west"), slots.other("west"), list(slots.others)
(False, 'unit of west', ['west'])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from detector.statecodec import refuse_unless

# Distinct `cluster` values one stage keeps apart (its home and this many less one others): a
# record of one more is refused ("too_many_clusters": dead-lettered, counted), changing nothing.
MAX_CLUSTERS = 16

U = TypeVar("U")


class ClusterSlots(Generic[U]):
    """Which `cluster` value is a stage's home, and the units of the others.

    ``make(cluster)``: a new unit for another cluster (no topology).  With zero or one value
    read nothing of the split shows: :meth:`put` writes no key.
    """

    __slots__ = ("cluster", "others", "_make")

    def __init__(self, make: Callable[[str], U]) -> None:
        self.cluster: str | None = None   # the home cluster (None: no value read yet)
        self.others: dict[str, U] = {}    # every other value's unit, in order of first record
        self._make = make

    def is_home(self, cluster: str | None) -> bool:
        """Whether a record of ``cluster`` goes to the home unit: no value, the home's, or the
        first value read (which becomes the home's)."""
        if cluster is None or cluster == self.cluster:
            return True
        if self.cluster is None:
            self.cluster = cluster
            return True
        return False

    def other(self, cluster: str) -> U | None:
        """The unit of ``cluster`` (not the home's), made at its first record; None for a
        value past :data:`MAX_CLUSTERS` (nothing changed: the caller counts it)."""
        unit = self.others.get(cluster)
        if unit is None:
            if len(self.others) + 1 >= MAX_CLUSTERS:
                return None
            unit = self.others[cluster] = self._make(cluster)
        return unit

    def one_value(self, clusters: set[str | None]) -> bool:
        """Whether every record of a batch whose `cluster` values are ``clusters`` goes home
        (sets the home from them when it is the batch's one value)."""
        clusters.discard(None)
        if not clusters or clusters == {self.cluster}:
            return True
        if self.cluster is None and len(clusters) == 1:
            self.cluster = clusters.pop()
            return True
        return False

    # -- state ---------------------------------------------------------------------------

    def put(self, state: dict[str, Any], entry: Callable[[str, U], list[Any]]) -> None:
        """The split into a stage's ``state`` (keys ``cluster``, ``others``: only when split);
        ``entry(cluster, unit)``: a unit's list, its cluster first."""
        if self.others:
            state["cluster"] = self.cluster
            state["others"] = [entry(c, u) for c, u in self.others.items()]

    def take(self, state: dict[str, Any], width: int, unit: Callable[[list[Any]], U]) -> bool:
        """The split a stage's ``state`` holds, if any (whether it holds one);
        :class:`~detector.statecodec.SnapshotRefused` when it is malformed.  ``unit(entry)``:
        the unit of an entry of ``width`` items whose cluster is checked (refuses the rest)."""
        others = state.get("others")
        if others is None:
            return False
        cluster = state.get("cluster")
        refuse_unless(type(cluster) is str and type(others) is list
                      and 0 < len(others) < MAX_CLUSTERS, "a cluster split is malformed")
        self.cluster = cluster
        for entry in others:
            refuse_unless(type(entry) is list and len(entry) == width
                          and type(entry[0]) is str and entry[0] != cluster
                          and entry[0] not in self.others, "a cluster split is malformed")
            self.others[entry[0]] = unit(entry)
        return True
