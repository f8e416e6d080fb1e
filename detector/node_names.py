"""One host, one node: a host name's other form (FQDN or short) taken as the name faultline knows.

DESIGN's ``node`` is "host name" and says no more: collectors on one host name it two ways at
real sites -- dcgm-exporter under Kubernetes labels rows with the node object's name (often
the FQDN, ``gn06.pod2.corp.example``) while the training process (``socket.gethostname()``),
node_exporter and the topology say ``gn06`` (blind17 N1).  Taken as two nodes, a GPU's thermal
cause never joins its rank's slowness and an alert names a node the topology does not list.

The rule, applied to every record where its name enters the monitors
(:meth:`Monitors.process <detector.monitors.Monitors.process>`; the batch path,
:func:`detector.quiet.quiet_run`, leaves any record it could not prove canonical to that path):

- a name the topology lists, or that a step record used (the job's own word for its host), is
  itself -- so a topology (or a job) that uses FQDNs keeps them, and two names it lists are
  never merged;
- a name neither knows, a DNS name ``LABEL.DOMAIN`` (labels of letters, digits, ``-`` and
  ``_``, each 1-63 characters, 253 in all, a last label that is not all digits: no IPv4
  address, nor an IPv6 one, has that shape) whose first label is a known name, is that node;
- a single label neither knows is the one known ``LABEL.DOMAIN`` name of that first label,
  if exactly one is known (a topology of FQDNs, rows in short names);
- a known name takes one other name, the first: a second FQDN of that label
  (``gn06.pod3.corp.example`` after ``gn06.pod2...``: another host in another domain) stays
  itself, and so does a name whose first record is of a kind (thermal, ECC, NIC) the known
  name already reports itself: two collectors naming "one" host's GPUs two ways are two hosts;
- case is kept: ``GN06.pod2.corp.example`` is not ``gn06`` (the contract compares names as
  strings; a site whose collectors disagree on case says so in its topology).

A name's answer is decided once, on its first record, and kept (a unit made under a name is
never orphaned by a later answer): with no topology, an FQDN heard before any step record
of its host named the short form stays itself.  Bounded against untrusted names: at most
``MAX_NAMES`` names decided and kept, as many step names and as many aliases (at most one
a known name); past that a new name is itself (a decision not kept would not be stable) and
is not learnt; a record refused for its time keeps no decision of a name no unit is under
(:meth:`NodeNames.refused`).  A node whose units are all pruned forgets its names
(Monitors.prune_units), and the step names follow the jobs kept.  State
(:mod:`detector.statecodec`): the three tables (of names a record could carry, or the restore
is refused); the index of first labels and the reverse of the aliases are rebuilt on restore.
One table a Monitors: in the service a sample partition resolves by the topology (it sees no
steps), and "reports the kind itself" is judged within the partition.

>>> from detector.events import ThermalSample
>>> from detector.topology import Topology
>>> topo = Topology.from_text("Topology=t\\nNodeSet=gn[01-02] Gpus=8")
>>> names = NodeNames(topo)
>>> row = ThermalSample(1.0, "gn02.pod2.corp.example", 3, 40.0, None, None, None, None)
>>> names.resolve(row, {}).node, names.alias
('gn02', {'gn02.pod2.corp.example': 'gn02'})
>>> names.resolve(ThermalSample(1.0, "gn02.pod3.corp.example", 3), {}).node  # one a node
'gn02.pod3.corp.example'
>>> names.resolve(ThermalSample(1.0, "10.0.0.2", 3), {}).node
'10.0.0.2'
"""

from __future__ import annotations

import re
from typing import Any

from msgspec.structs import replace

from detector.events import MAX_NAME_CHARS, EccSample, NicSample, ThermalSample
from detector.topology import Topology

MAX_NAMES = 65536    # names decided and kept (each a name heard from); as many step names
_DNS = re.compile(r"[A-Za-z0-9_-]{1,63}(?:\.[A-Za-z0-9_-]{1,63})+")
_LABEL = re.compile(r"[A-Za-z0-9_-]{1,63}")
_MAX_DNS_CHARS = 253
_AMBIGUOUS = ""      # a first label of two or more known dotted names: no short name maps
_KIND: dict[type, str] = {ThermalSample: "thermal", EccSample: "ecc", NicSample: "nic"}


def _name(x: Any) -> bool:
    """A node name a record could carry (DESIGN's bounds: 1-256 characters, printable): an
    alias's target is written into every later record of its name, so into alert scopes and
    dedup keys (review28: a forged one put escapes, bidi overrides, '' or 100 kB there)."""
    return type(x) is str and 0 < len(x) <= MAX_NAME_CHARS and x.isprintable()


def dns_name(name: str) -> bool:
    """Whether ``name`` is a DNS name of two or more labels that is not an address."""
    return (len(name) <= _MAX_DNS_CHARS and _DNS.fullmatch(name) is not None
            and not name.rsplit(".", 1)[1].isdigit())


class NodeNames:
    """The names one stream's records give nodes, and the node each one is (see the module)."""

    def __init__(self, topology: Topology | None = None) -> None:
        self.alias: dict[str, str] = {}   # a name -> the known name it is
        self.plain: set[str] = set()      # names decided to be themselves
        self.steps: set[str] = set()      # names step records used (after resolving)
        self.topology = topology
        self._labels: dict[str, str] | None = None  # first label -> its one known dotted name
        self._taken: dict[str, str] = {}  # known name -> its other name (the alias reversed)

    def attach(self, topology: Topology | None) -> None:
        """The topology (restored state, or a new one): its index is rebuilt when asked, and
        what the tables imply that a snapshot does not hold."""
        self.topology = topology
        self._labels = None
        self._taken = {target: name for name, target in self.alias.items()}

    def known(self, name: str) -> bool:
        """A name the topology lists or a step record used."""
        topo = self.topology
        return name in self.steps or (topo is not None and topo.has_node(name))

    def learn_step(self, name: str) -> None:
        """A step record's (resolved) name: a job's word for its host."""
        if len(self.steps) < MAX_NAMES:
            self.steps.add(name)
            if "." in name and self._labels is not None:
                self._index(name, self._labels)

    def resolve(self, ev: Any, seen: dict[str, set[str]]) -> Any:
        """``ev`` under its node's known name (itself when it is one, or none is).

        ``seen``: the kinds each node reported so far (Monitors._seen), for the rule that a
        known name reporting the record's kind itself is another host's."""
        name = ev.node
        target: str | None = self.alias.get(name)
        if target is not None:
            return replace(ev, node=target)
        if name in self.plain or len(self.plain) >= MAX_NAMES:
            return ev
        target = None if self.known(name) or len(self.alias) >= MAX_NAMES else self._target(name)
        kind = _KIND.get(type(ev))
        if target is None or (kind is not None and kind in seen.get(target, ())):
            self.plain.add(name)
            return ev
        self.alias[name] = target
        self._taken[target] = name
        return replace(ev, node=target)

    def forget(self, node: str) -> None:
        """A node whose units were all pruned (Monitors.prune_units): its name, and its other
        name, are decided afresh when heard again (no unit is left to orphan)."""
        self.plain.discard(node)
        other = self._taken.pop(node, None)
        if other is not None:
            del self.alias[other]

    def refused(self, node: str, seen: dict[str, set[str]]) -> None:
        """A record under ``node`` (its name resolved) was refused (Monitors.check_ahead:
        ``ts_out_of_range``): what it decided is not kept when no unit is under the name
        (``seen``: Monitors._seen; nor a step name) -- DESIGN: an invalid record changes no
        state (review28: a flood of refused records under new names filled ``plain`` for
        good, and every later name was itself: no FQDN rule)."""
        if node not in seen and node not in self.steps:
            self.forget(node)

    def keep_steps(self, names: set[str], seen: dict[str, set[str]]) -> None:
        """Only the step names the jobs kept use (Monitors.sweep dropped idle jobs); a name
        dropped that no unit is kept under (``seen``: Monitors._seen) is forgotten."""
        gone = self.steps - names
        if gone:
            self.steps -= gone
            self._labels = None
            for name in gone:
                if name not in seen:
                    self.forget(name)

    def _target(self, name: str) -> str | None:
        """The known name ``name`` (known to neither) is another form of, if it is one."""
        if "." in name:
            if not dns_name(name):
                return None
            target = name[:name.index(".")]
            if not self.known(target):
                return None
        else:
            if _LABEL.fullmatch(name) is None:
                return None
            found = self.labels().get(name)
            if not found:  # none, or _AMBIGUOUS
                return None
            target = found
        if target in self._taken:
            return None  # it has its other name already
        return target

    def labels(self) -> dict[str, str]:
        """First label -> the one known dotted name (topology or steps) that has it."""
        if self._labels is None:
            labels: dict[str, str] = {}
            names = [*(self.topology.nodes() if self.topology is not None else ()), *self.steps]
            for name in names:
                if "." in name:
                    self._index(name, labels)
            self._labels = labels
        return self._labels

    @staticmethod
    def _index(name: str, labels: dict[str, str]) -> None:
        if not dns_name(name):
            return
        label = name[:name.index(".")]
        had = labels.get(label)
        labels[label] = name if had is None or had == name else _AMBIGUOUS

    def valid(self) -> bool:
        """A restored table's shape (detector.statecodec rebuilds it from fields of any type)."""
        return (type(self.alias) is dict and type(self.plain) is set and type(self.steps) is set
                and len(self.plain) <= MAX_NAMES and len(self.steps) <= MAX_NAMES
                and len(self.alias) <= MAX_NAMES
                and all(_name(k) and _name(v) for k, v in self.alias.items())
                and all(map(_name, self.plain)) and all(map(_name, self.steps)))

    def stats(self) -> dict[str, int]:
        return {"node_aliases": len(self.alias)}
