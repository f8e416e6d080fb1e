"""Port names across the nodes one worker sees: which names carry the job's traffic.

A port slow against its node from its first sample never ran at its node's pace, so its
own history cannot tell a bad fabric port from a frontend or storage port
(detector/network.py).  The same name on the other nodes can: a frontend ``mlx5_2`` or
``eth0`` is quiet on every node of the job, a bad fabric port is quiet on one node while
its name runs at the node's pace on the others.  The service partitions telemetry by node
over its workers, so each judges by the nodes it sees; with one node seen a name has no
other nodes and decides nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from detector.thresholds import Thresholds
from detector.topology import Topology

if TYPE_CHECKING:
    from detector.network import _Port


class PortName:
    """One port name's standing across the nodes a worker sees: how many of their ports of
    that name ran at their node's pace on their latest busy sample, how many below it; and
    how many of them negotiated each ``rate_gbps`` (their latest sample up, 0.0 unknown)."""

    __slots__ = ("key", "pace", "low", "kept", "rates")

    def __init__(self, key: tuple[str | None, str, int] | None) -> None:
        self.key = key
        self.pace = 0
        self.low = 0
        self.kept = key is not None  # False: not (or no longer) in the table: no evidence
        self.rates: dict[float, int] = {}


class PortNames:
    """The port names of every node one worker sees, keyed (cluster, NIC, port), so a port
    can be judged by its name on the other nodes; and the topology, for what it says of a
    node's NICs.  One object, shared by the worker's NodeNics.

    Bounded: at most ``nic_port_names`` names.  A new one displaces the name the fewest
    ports stand behind (the oldest of those): a stream of junk names (untrusted telemetry)
    displaces its own kind, one node's port each, not a real name that every node carries.
    A displaced name's ports count no evidence until their vote changes, when they join the
    table again.  With one node seen a name has no other nodes: the node's own ports
    decide (NodeNics._judged).

    Two nodes of two ports at 60 Gb/s, but b's ``mlx5_1`` at 2 from its first sample:

    >>> from detector.network import NodeNics
    >>> from detector.testing import T0, nic
    >>> names, cfg, out = PortNames(), Thresholds(), []
    >>> a, b = NodeNics("a", names), NodeNics("b", names)
    >>> for i in range(8):  # 10 s samples (cumulative bytes, tx and rx halves)
    ...     for nics, rates in ((a, (60, 60)), (b, (60, 2))):
    ...         for k, gbps in enumerate(rates):
    ...             n = int(i * 10 * gbps / 16 * 1e9)
    ...             nics.update(nic(T0 + i * 10, nics.node, f"mlx5_{k}", tx=n, rx=n), cfg, out)
    >>> e = names._names[(None, "mlx5_1", 1)]
    >>> e.pace, e.low  # a's mlx5_1 at its node's pace, b's below it
    (1, 1)
    >>> [(f.scope.key, f.ts - T0, f.evidence["judged_because"]) for f in out
    ...  if f.signal == "nic_throughput"]
    [('nic:b/mlx5_1:1', 60.0, "its name runs at its node's pace on 1 of 1 other nodes")]
    """

    def __init__(self, topology: Topology | None = None) -> None:
        self._names: dict[tuple[str | None, str, int], PortName] = {}
        self.topology = topology  # transient: not in a snapshot (Monitors.attach sets it)

    def __len__(self) -> int:
        return len(self._names)

    def join(self, key: tuple[str | None, str, int], cfg: Thresholds) -> PortName:
        names = self._names
        e = names.get(key)
        if e is None:
            if len(names) >= cfg.nic_port_names:
                old = min(names.values(), key=_weight)
                old.kept = False
                del names[old.key]  # type: ignore[arg-type]
            e = names[key] = PortName(key)
        return e

    def vote(self, p: _Port, v: int, cfg: Thresholds) -> None:
        """The port's vote becomes ``v`` (1 at its node's pace, -1 below it, 0 withdrawn)."""
        e = p.name
        if p.vote > 0:
            e.pace -= 1
        elif p.vote < 0:
            e.low -= 1
        if v and not e.kept and e.key is not None:
            old = e
            e = p.name = self.join(e.key, cfg)  # displaced meanwhile: back in the table
            _count(old.rates, p.rate, -1)  # (its rate goes with it)
            _count(e.rates, p.rate, 1)
        if v > 0:
            e.pace += 1
        elif v < 0:
            e.low += 1
        p.vote = v

    def rate(self, p: _Port, old: float, new: float) -> None:
        """The port's negotiated rate becomes ``new`` (from ``old``; 0.0: unknown or gone)."""
        e = p.name
        if e.key is not None:
            _count(e.rates, old, -1)
            _count(e.rates, new, 1)

    def role(self, node: str, nic: str) -> int:
        """What the topology says of this NIC: 1 a GPU's NIC (or, where it maps no GPU to a
        NIC, one a switch lists), -1 one the node's NIC list has after its GPUs' (storage,
        management: topologies/README.md), 0 a NIC it does not list (a Slurm topology.conf
        lists none)."""
        topo = self.topology
        if topo is None or nic not in topo.nics_of(node):
            return 0
        gpus = topo.gpus_of(node)
        for g in range(gpus):  # (a port's role is asked once, when it is first seen)
            if topo.nic_for_gpu(node, g) == nic:
                return 1
        if gpus and topo.nic_for_gpu(node, 0) is not None:
            return -1
        switch = topo.switch_of(node, nic)
        return 1 if switch is not None and (node, nic) in topo.nics_under(switch) else 0

    def family_names(self, name: PortName, family: str, least: int) -> int:
        """How many names of ``family`` (``name``'s cluster and port number) at least
        ``least`` nodes report at a known rate: the port count of a family on the nodes a
        name's share is read from (one node model's, where it equals a node's own)."""
        key = name.key
        if key is None:
            return 0
        cluster, _, port = key
        return sum(1 for (c, nic, n), e in self._names.items()
                   if c == cluster and n == port and nic.translate(_DIGITS) == family
                   and sum(e.rates.values()) >= least)

    def valid(self, cfg: Thresholds) -> bool:
        """A restored table is a bounded map of well-formed names (detector.statecodec)."""
        return type(self._names) is dict and len(self._names) <= max(cfg.nic_port_names, 0) \
            and all(type(e) is PortName and e.key == k and type(k) is tuple and len(k) == 3
                    and type(e.pace) is int and type(e.low) is int and e.pace >= 0
                    and e.low >= 0 and e.kept is True and type(e.rates) is dict
                    and all(type(r) is float and type(n) is int and n > 0
                            for r, n in e.rates.items())
                    for k, e in self._names.items())


# A NIC name to its family: mlx5_3 -> "mlx_", ibp12s0 -> "ibps".
_DIGITS = str.maketrans("", "", "0123456789")


def _count(rates: dict[float, int], rate: float, n: int) -> None:
    if rate:
        left = rates.get(rate, 0) + n
        if left > 0:
            rates[rate] = left
        else:
            rates.pop(rate, None)


def _weight(e: PortName) -> int:
    return e.pace + e.low


def standing(p: _Port) -> int:
    """Whether the port carries the job's traffic, by what is known beside its own history:
    1 yes, -1 no, 0 nothing known.  A port the topology places after its node's GPU NICs
    (storage, management) never does.  Else its name on the worker's other nodes (its own
    vote taken off) decides when any of them reports it: yes only when they run at their
    node's pace with at most one in ``MIXED`` below it.  A name quiet on several nodes is
    a placement, not a fault: a 4-GPU multi-node job leaves its nodes' other GPU NICs idle
    (NCCL drives the NICs nearest its GPUs), on every node of it or on those beside 8-GPU
    jobs (room review, round 10: 8 switch isolations for idle rails).  With no other node
    reporting the name, the topology's word (a GPU's NIC) is taken."""
    role = p.role
    if role < 0:
        return -1
    e = p.name
    if e.kept:
        v = p.vote
        pace = e.pace - (v > 0)
        low = e.low - (v < 0)
        if pace or low:
            return 1 if pace and low * MIXED <= pace else -1
    return role


# A name's other nodes say "carries the job's traffic" only when no more than one in this
# many of them report it below their node's pace.
MIXED = 4  # (detector.network too: a rate its name has on more nodes is no degraded link)
