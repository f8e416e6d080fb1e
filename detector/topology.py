"""Cluster topology: the switch each NIC faces, NVLink domains, racks, GPU-to-NIC.

The engine uses it only to add context: NIC trouble on many nodes under one
leaf or rail switch is one switch problem, GPUs of one NVL72 rack share an
NVLink domain. Lookups are dictionary hits precomputed at load time; a name
the topology does not list gives None or (), never an error.

Two formats, told apart by the first line that is not blank or a comment:
``Topology=NAME`` starts a faultline topology; ``SwitchName=``,
``BlockName=`` or ``BlockSizes=`` a Slurm ``topology.conf``. Both have one
record a line of whitespace-separated ``Key=Value`` pairs, case-insensitive
keys, ``#`` comments and ``\\`` continuations; names and node lists are Slurm
hostlists (:mod:`detector.hostlist`). The faultline format (reference:
``topologies/README.md``)::

    Topology=NAME [Version=1]                        first record
    NodeSet=HOSTS Gpus=N [Nics=NICS] [GpuNics=NICS]  nodes, GPUs and NICs per node
    Rack=NAMES Nodes=HOSTS                           racks
    Domain=NAMES Nodes=HOSTS                         NVLink domains (NVL72 racks)
    SwitchName=NAMES Nodes=HOSTS [Nics=NICS]         leaf or rail switches
    SwitchName=NAMES Switches=SWITCHES               switches one tier up

When the first value names several racks, domains or switches, ``Nodes=`` is
dealt to them in equal consecutive blocks (a node is in one rack and one
domain, and a NIC faces one switch) while ``Switches=`` goes whole to each (in
a fat tree every spine reaches every leaf below it). ``Nics=`` on a switch
says which NICs of those nodes face it (one rail); without it, all do. GPU k's
nearest NIC is NIC k, or NIC k // (GPUs per NIC) when NICs are fewer, unless
``GpuNics=`` lists one NIC per GPU. In a Slurm file a switch's nodes face it
with every NIC, ``BlockName=`` blocks are NVLink domains, and ``LinkSpeed=``
and ``BlockSizes=`` are ignored.

A topology is text a user (or a log's head) hands over: what it may hold in all
-- names expanded, GPU-to-NIC entries, NIC-to-switch and switch-to-parent links --
is bounded by ``detector.hostlist.MAX_NAMES`` (1,000,000: ``h100-16k.topo`` holds
55,064, so about 290,000 GPUs of that shape), and refused before it is built.

>>> topo = Topology.from_text('''
... Topology=demo
... NodeSet=node-[000-015] Gpus=8 Nics=mlx5_[0-7]
... Rack=rack-[0-3] Nodes=node-[000-015]
... SwitchName=rail3-leaf[0-1] Nodes=node-[000-015] Nics=mlx5_3
... SwitchName=spine0 Switches=rail3-leaf[0-1]
... ''')
>>> topo.switch_of("node-009", "mlx5_3"), topo.nic_for_gpu("node-009", 3), topo.rack_of("node-009")
('rail3-leaf1', 'mlx5_3', 'rack-2')
>>> topo.nodes_under("rail3-leaf0")[-1], topo.parent_of("rail3-leaf0"), topo.switch_of("node-99")
('node-007', ('spine0',), None)
>>> topo.children_of("spine0"), topo.leaves_below("spine0"), len(topo.nodes_below("spine0"))
(('rail3-leaf0', 'rail3-leaf1'), ('rail3-leaf0', 'rail3-leaf1'), 16)
>>> Topology.from_text("Topology=demo\\nNodeSet=n[0-1] Gpus=eight", source="x.topo")
Traceback (most recent call last):
...
detector.topology.TopologyError: x.topo:2: field 'Gpus': expected a positive integer, got 'eight'
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace

from detector import hostlist as _hostlist
from detector.hostlist import TooManyNames, compress_hostlist, expand_hostlist

__all__ = ["Topology", "TopologyError", "compress_hostlist", "expand_hostlist",
           "load_by_cluster"]

FAULTLINE, SLURM = "faultline", "slurm"
GPU_LIMIT = 1 << 24  # GPUs a node: the contract's bound on a GPU index

# Record kind (the first key of a line) -> (required keys, allowed keys).
_GRAMMAR: dict[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    FAULTLINE: {
        "Topology": ((), ("Version",)),
        "NodeSet": (("Gpus",), ("Gpus", "Nics", "GpuNics")),
        "Rack": (("Nodes",), ("Nodes",)),
        "Domain": (("Nodes",), ("Nodes",)),
        "SwitchName": ((), ("Nodes", "Nics", "Switches")),
    },
    SLURM: {
        "SwitchName": ((), ("Nodes", "Switches", "LinkSpeed")),
        "BlockName": (("Nodes",), ("Nodes",)),
        "BlockSizes": ((), ()),
    },
}
_GROUP_WORD = {"Rack": "rack", "Domain": "domain", "BlockName": "block"}


class TopologyError(ValueError):
    """A topology that cannot be used; the message names file, line and field."""

    def __init__(self, source: str, line: int, field: str | None, detail: str) -> None:
        self.source, self.line, self.field, self.detail = source, line, field, detail
        where = f"field {field!r}: " if field else ""
        super().__init__(f"{source}:{line}: {where}{detail}")

    def __reduce__(self):  # the default would call __init__ with the message alone
        return type(self), (self.source, self.line, self.field, self.detail)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Topology:
    """An immutable, precomputed view of a cluster's nodes, switches and domains.

    Build it with :meth:`load` or :meth:`from_text`, never by hand.
    """

    name: str
    _gpus: dict[str, int]
    _nics: dict[str, tuple[str, ...]]
    _gpu_nics: dict[str, tuple[str, ...]]
    _nic_switch: dict[tuple[str, str], str]
    _node_switch: dict[str, str]
    _nodes_under: dict[str, tuple[str, ...]]
    _nics_under: dict[str, tuple[tuple[str, str], ...]]
    _parents: dict[str, tuple[str, ...]]
    _children: dict[str, tuple[str, ...]]
    _domain: dict[str, str]
    _domain_nodes: dict[str, tuple[str, ...]]
    _rack: dict[str, str]
    _nodes: tuple[str, ...]
    _switches: tuple[str, ...]
    format: str = "faultline"   # the format it was read from: "faultline" or "slurm"
    text: str = ""              # the text it was read from, so a log can carry it

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Topology:
        """Read a topology file of either format; errors name the path as given."""
        with open(path, encoding="utf-8") as f:
            return cls.from_text(f.read(), source=os.fspath(path))

    @classmethod
    def from_text(cls, text: str, *, source: str = "<string>", fmt: str | None = None) -> Topology:
        """Parse topology text; ``fmt`` is "faultline", "slurm", or None to detect it."""
        if fmt not in (None, FAULTLINE, SLURM):
            raise ValueError(f"unknown topology format {fmt!r}: use {FAULTLINE!r} or {SLURM!r}")
        lines = list(_logical_lines(text))
        if not lines:
            raise TopologyError(source, 1, None, "no records: the topology is empty")
        if fmt is None:
            first_key = lines[0][1].split("=", 1)[0].lower()
            fmt = FAULTLINE if first_key == "topology" else SLURM
            if first_key not in ("topology", "switchname", "blockname", "blocksizes"):
                raise TopologyError(source, lines[0][0], None, "cannot tell the format: a "
                                    "faultline topology starts with 'Topology=NAME', a Slurm "
                                    "topology.conf with 'SwitchName=' or 'BlockName='")
        records = [_Record.parse(source, number, content, fmt) for number, content in lines]
        if fmt == SLURM:
            base = os.path.basename(source)
            name = base.removesuffix(".conf").removesuffix(".topology")
            topo = _Builder(source, SLURM if base.startswith("<") else name).build(records)
            return replace(topo, format=SLURM, text=text)
        head, *body = records
        if head.kind != "Topology":
            raise TopologyError(source, head.line, head.kind,
                                "a faultline topology starts with 'Topology=NAME'")
        if head.fields.get("Version", "1") != "1":
            raise TopologyError(source, head.line, "Version",
                                f"unsupported version {head.fields['Version']!r}; this reads 1")
        again = next((r for r in body if r.kind == "Topology"), None)
        if again is not None:
            raise TopologyError(source, again.line, "Topology", "given twice")
        return replace(_Builder(source, head.name, strict=True).build(body), text=text)

    def record(self) -> dict[str, object]:
        """This topology as an incident-log record (DESIGN.md: a log may carry its topology)."""
        return {"topic": "topology", "value": {"format": self.format, "text": self.text}}

    def nodes(self) -> tuple[str, ...]:
        """All node names, sorted."""
        return self._nodes

    def has_node(self, node: str) -> bool:
        return node in self._gpus

    def gpus_of(self, node: str) -> int:
        """GPUs on the node; 0 when unknown (always 0 from a Slurm file)."""
        return self._gpus.get(node, 0)

    def nics_of(self, node: str) -> tuple[str, ...]:
        """The node's NIC names; () when unknown (always () from a Slurm file)."""
        return self._nics.get(node, ())

    def switch_of(self, node: str, nic: str | None = None) -> str | None:
        """The switch this NIC faces; with no NIC (or one no switch lists), the node's leaf.

        The node's leaf is the one switch all its NICs face. A rail-optimized
        node faces one switch per rail and so has none: picking one rail would
        group nodes under a switch they don't share.
        """
        if nic is not None:
            switch = self._nic_switch.get((node, nic))
            if switch is not None:
                return switch
        return self._node_switch.get(node)

    def stated_switch_of(self, node: str, nic: str) -> str | None:
        """The switch the file says this NIC faces; None where it names no NICs (a Slurm
        ``topology.conf``, a NodeSet without ``Nics=``), whose "every NIC faces the node's
        leaf" (:meth:`switch_of`) is an assumption, not the operator's word: in a
        rail-optimised fabric described by nodes alone each NIC faces another leaf."""
        return self._nic_switch.get((node, nic))

    def nodes_under(self, switch: str) -> tuple[str, ...]:
        """Nodes with at least one NIC facing this switch directly, sorted; () for spines."""
        return self._nodes_under.get(switch, ())

    def nics_under(self, switch: str) -> tuple[tuple[str, str], ...]:
        """(node, nic) pairs facing this switch, sorted; () when the file names no NICs."""
        return self._nics_under.get(switch, ())

    def parent_of(self, switch: str) -> tuple[str, ...]:
        """The switches one tier up (a leaf's spines), sorted."""
        return self._parents.get(switch, ())

    def children_of(self, switch: str) -> tuple[str, ...]:
        """The switches one tier down (a spine's leaves), sorted; () for a leaf."""
        return self._children.get(switch, ())

    def leaves_below(self, switch: str) -> tuple[str, ...]:
        """The switches facing nodes at the bottom of ``switch``'s tree, sorted (itself for a
        leaf): a spine's leaves, a core's leaves through its spines, however deep."""
        leaves: set[str] = set()
        todo, seen = [switch], {switch}
        while todo:
            s = todo.pop()
            below = self._children.get(s, ())
            if not below:
                leaves.add(s)
            for c in below:
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
        return tuple(sorted(leaves))

    def nodes_below(self, switch: str) -> tuple[str, ...]:
        """Nodes reached through ``switch`` (the nodes under its leaves), sorted."""
        return tuple(sorted({n for leaf in self.leaves_below(switch)
                             for n in self._nodes_under.get(leaf, ())}))

    def domain_of(self, node: str) -> str | None:
        """The node's NVLink domain (an NVL72 rack); None when it has none."""
        return self._domain.get(node)

    def nodes_in_domain(self, domain: str) -> tuple[str, ...]:
        return self._domain_nodes.get(domain, ())

    def domains(self) -> tuple[str, ...]:
        """All NVLink domain names, sorted."""
        return tuple(sorted(self._domain_nodes))

    def rack_of(self, node: str) -> str | None:
        return self._rack.get(node)

    def nic_for_gpu(self, node: str, gpu: int) -> str | None:
        """The NIC nearest this GPU; None when unknown or not derivable."""
        nics = self._gpu_nics.get(node)
        if nics is None or not 0 <= gpu < len(nics):
            return None
        return nics[gpu]

    def switches(self) -> tuple[str, ...]:
        """All switch names, sorted."""
        return self._switches

    def __repr__(self) -> str:
        return (f"<Topology {self.name!r}: {len(self._nodes)} nodes, "
                f"{sum(self._gpus.values())} GPUs, {len(self._switches)} switches, "
                f"{len(self._domain_nodes)} NVLink domains>")


def load_by_cluster(entries: Iterator[str] | list[str] | tuple[str, ...]
                    ) -> dict[str, Topology]:
    """``CLUSTER=FILE`` entries (``--cluster-topology``, ``[service] cluster_topologies``):
    each other cluster's topology, by its `cluster` value; ValueError for an entry that is
    not one, or a cluster named twice."""
    out: dict[str, Topology] = {}
    for entry in entries:
        cluster, eq, path = entry.partition("=")
        cluster, path = cluster.strip(), path.strip()
        if not eq or not cluster or not path:
            raise ValueError(f"cluster topology {entry!r}: expected CLUSTER=FILE")
        if cluster in out:
            raise ValueError(f"cluster topology {entry!r}: cluster {cluster!r} named twice")
        out[cluster] = Topology.load(path)
    return out


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, content) of each record, comments and continuations resolved."""
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        content = raw.split("#", 1)[0].strip()
        if not pending:
            start = number
        if content.endswith("\\"):
            pending += content[:-1] + " "
            continue
        content, pending = (pending + content).strip(), ""
        if content:
            yield start, content
    if pending.strip():
        yield start, pending.strip()


@dataclass(frozen=True, slots=True)
class _Record:
    """One record: its kind (first key, canonical case), the kind's value, the other fields."""

    line: int
    kind: str
    name: str
    fields: dict[str, str]

    @classmethod
    def parse(cls, source: str, line: int, content: str, fmt: str) -> _Record:
        def fail(field: str | None, detail: str) -> TopologyError:
            return TopologyError(source, line, field, detail)

        pairs = []
        for token in content.split():
            key, eq, value = token.partition("=")
            if not eq or not key:
                raise fail(None, f"syntax error: expected Key=Value, got {token!r}")
            if not value:
                raise fail(key, "empty value")
            pairs.append((key, value))
        kinds = _GRAMMAR[fmt]
        (kind_key, name), *rest = pairs
        kind = {k.lower(): k for k in kinds}.get(kind_key.lower())
        if kind is None:
            expected = ", ".join(f"{k}=" for k in kinds)
            raise fail(kind_key, f"unknown record type in a {fmt} topology (expected {expected})")
        required, allowed = kinds[kind]
        canonical = {k.lower(): k for k in allowed}
        fields: dict[str, str] = {}
        for key, value in rest:
            if key.lower() not in canonical:
                expected = ", ".join(allowed) or "no other key"
                raise fail(key, f"unknown key on a {kind} line (expected {expected})")
            if canonical[key.lower()] in fields:
                raise fail(key, "given twice")
            fields[canonical[key.lower()]] = value
        for key in required:
            if key not in fields:
                raise fail(key, f"missing: a {kind} line needs it")
        return cls(line, kind, name, fields)


class _Builder:
    """Turns records into the maps a Topology is made of, checking as it goes."""

    def __init__(self, source: str, name: str, *, strict: bool = False) -> None:
        # strict (faultline format): nodes come from NodeSet lines only, and a node
        # or NIC faces one switch. A Slurm file declares nodes by listing them and
        # may list a node under several leaves ("multi-homed"): it then has no leaf.
        self.source, self.name, self.strict, self.line = source, name, strict, 0
        self.node_line: dict[str, int] = {}
        self.gpus: dict[str, int] = {}
        self.nics: dict[str, tuple[str, ...]] = {}
        self.gpu_nics: dict[str, tuple[str, ...]] = {}
        self.group_line: dict[tuple[str, str], int] = {}
        self.member: dict[str, dict[str, str]] = {"rack": {}, "domain": {}, "block": {}}
        self.switch_line: dict[str, int] = {}
        self.children: dict[str, tuple[str, ...]] = {}
        self.leaf_nodes: dict[str, list[str]] = {}
        self.nic_switch: dict[tuple[str, str], str] = {}
        self.node_switches: dict[str, list[str]] = {}
        # What the whole topology may hold: names expanded, GPU-to-NIC entries, NIC and
        # switch links.  MAX_NAMES bounds one hostlist; without this a few short lines
        # of large ranges (or one NodeSet times one switch) still eat the memory.
        self.budget = self.limit = _hostlist.MAX_NAMES

    def spend(self, field: str, n: int) -> None:
        """Take ``n`` entries from the topology's budget; TopologyError past it."""
        if n > self.budget:
            raise self.fail(field, f"the topology holds more than {self.limit:,} names, "
                            "GPU-to-NIC and switch links in all (a typo in a range?)")
        self.budget -= n

    def fail(self, field: str, detail: str) -> TopologyError:
        """An error at the record being read (self.line)."""
        return TopologyError(self.source, self.line, field, detail)

    def hostlist(self, record: _Record, field: str, *, unique: bool = True) -> list[str]:
        try:
            names = expand_hostlist(record.name if field == record.kind else record.fields[field],
                                    limit=self.budget)
        except TooManyNames as exc:
            if self.budget == self.limit:
                raise self.fail(field, str(exc)) from None
            self.spend(field, self.budget + 1)
        except ValueError as exc:
            raise self.fail(field, str(exc)) from None
        self.spend(field, len(names))
        seen: set[str] = set()
        for name in names if unique else ():
            if name in seen:
                raise self.fail(field, f"lists {name!r} twice")
            seen.add(name)
        return names

    def deal(self, record: _Record, names: list[str]) -> Iterator[tuple[str, list[str]]]:
        """Give each name its equal, consecutive block of the record's Nodes=."""
        nodes = self.hostlist(record, "Nodes")
        if len(nodes) % len(names):
            raise self.fail("Nodes", f"{len(nodes)} nodes cannot be dealt evenly to "
                            f"{len(names)} names ({compress_hostlist(names)})")
        size = len(nodes) // len(names)
        for i, name in enumerate(names):
            block = nodes[i * size:(i + 1) * size]
            for node in block:
                if node not in self.gpus:
                    if self.strict:
                        raise self.fail("Nodes", f"unknown node {node!r}: no NodeSet declares it")
                    self.gpus[node], self.nics[node] = 0, ()
            yield name, block

    def build(self, records: list[_Record]) -> Topology:
        for record in sorted(records, key=lambda r: r.kind != "NodeSet"):  # nodes first
            self.line = record.line
            if record.kind == "NodeSet":
                self.add_nodes(record)
            elif record.kind in _GROUP_WORD:
                self.add_group(record)
            elif record.kind == "SwitchName":
                self.add_switch(record)
        return self.freeze()

    def add_nodes(self, record: _Record) -> None:
        nodes, gpus_text = self.hostlist(record, "NodeSet"), record.fields["Gpus"]
        if not (gpus_text.isascii() and gpus_text.isdigit() and gpus_text.strip("0")):
            raise self.fail("Gpus", f"expected a positive integer, got {gpus_text[:40]!r}")
        if len(gpus_text.lstrip("0")) > 8 or int(gpus_text) > GPU_LIMIT:
            raise self.fail("Gpus", f"{gpus_text[:40]} GPUs a node: more than {GPU_LIMIT:,}")
        gpus = int(gpus_text)
        nics = tuple(self.hostlist(record, "Nics")) if "Nics" in record.fields else ()
        if "GpuNics" in record.fields:
            gpu_nics = tuple(self.hostlist(record, "GpuNics", unique=False))
            if len(gpu_nics) != gpus:
                raise self.fail("GpuNics", f"names {len(gpu_nics)} NICs for {gpus} GPUs")
            for nic in gpu_nics:
                if nic not in nics:
                    raise self.fail("GpuNics", f"{nic!r} is not one of Nics=")
        elif len(nics) >= gpus:  # extra NICs (storage, management) come after the GPU ones
            gpu_nics = nics[:gpus]
        elif nics and gpus % len(nics) == 0:  # GPUs sharing a NIC sit next to each other
            gpu_nics = tuple(nics[k * len(nics) // gpus] for k in range(gpus))
        else:
            gpu_nics = ()
        self.spend("Gpus", len(gpu_nics))
        for node in nodes:
            if node in self.gpus:
                raise self.fail("NodeSet", f"node {node!r} already declared on line "
                                f"{self.node_line[node]}")
            self.node_line[node], self.gpus[node], self.nics[node] = record.line, gpus, nics
            if gpu_nics:
                self.gpu_nics[node] = gpu_nics

    def add_group(self, record: _Record) -> None:
        word = _GROUP_WORD[record.kind]
        member = self.member[word]
        for group, nodes in self.deal(record, self.hostlist(record, record.kind)):
            if (word, group) in self.group_line:
                raise self.fail(record.kind, f"{word} {group!r} already defined on line "
                                f"{self.group_line[word, group]}")
            self.group_line[word, group] = record.line
            for node in nodes:
                earlier = member.setdefault(node, group)
                if earlier != group:
                    raise self.fail("Nodes", f"node {node!r} is already in {word} {earlier!r} "
                                    f"(line {self.group_line[word, earlier]})")

    def add_switch(self, record: _Record) -> None:
        fields = record.fields
        if "Nodes" in fields and "Switches" in fields:
            raise self.fail("Switches", "a switch lists Nodes= or Switches=, not both")
        if "Nodes" not in fields and "Switches" not in fields:
            raise self.fail("SwitchName", "needs Nodes= (a leaf) or Switches= (the tier below)")
        if "Nics" in fields and "Nodes" not in fields:
            raise self.fail("Nics", "only a switch with Nodes= faces NICs")
        names = self.hostlist(record, "SwitchName")
        for name in names:
            if name in self.switch_line:
                raise self.fail("SwitchName", f"switch {name!r} already defined on line "
                                f"{self.switch_line[name]}")
            self.switch_line[name] = record.line
        if "Switches" in fields:
            children = tuple(self.hostlist(record, "Switches"))
            self.spend("Switches", len(names) * len(children))  # each is a parent of each
            self.children.update(dict.fromkeys(names, children))
            return
        wanted = tuple(self.hostlist(record, "Nics")) if "Nics" in fields else None
        for switch, nodes in self.deal(record, names):
            self.leaf_nodes[switch] = nodes
            for node in nodes:
                nics = self.nics[node] if wanted is None else wanted
                self.spend("Nodes", len(nics))
                if not nics:  # a node without NICs faces the switch as a whole
                    earlier = self.node_switches.setdefault(node, [])
                    if earlier and self.strict:
                        raise self.fail("Nodes", f"node {node!r} already faces switch "
                                        f"{earlier[0]!r} (line {self.switch_line[earlier[0]]})")
                    earlier.append(switch)
                for nic in nics:
                    if nic not in self.nics[node]:
                        raise self.fail("Nics", f"node {node!r} has no NIC {nic!r}")
                    taken = self.nic_switch.setdefault((node, nic), switch)
                    if taken != switch:
                        raise self.fail("Nodes", f"{nic} of {node!r} already faces switch "
                                        f"{taken!r} (line {self.switch_line[taken]})")

    def parents(self) -> dict[str, tuple[str, ...]]:
        """Each switch's upper tier; Switches= must name known switches and make no loop."""
        parents: dict[str, list[str]] = {}
        for switch, children in self.children.items():
            self.line = self.switch_line[switch]
            for child in children:
                if child not in self.switch_line:
                    raise self.fail("Switches", f"{switch!r} lists unknown switch {child!r}")
                parents.setdefault(child, []).append(switch)
        # Peel off, bottom up, the switches whose children are all done; a loop is left over.
        pending = {s: set(c) for s, c in self.children.items()}
        done = set(self.switch_line) - set(pending)
        while pending:
            ready = [s for s, c in pending.items() if c <= done]
            if not ready:
                switch = min(pending, key=self.switch_line.__getitem__)
                self.line = self.switch_line[switch]
                raise self.fail("Switches", f"switch {switch!r} is below itself (a loop)")
            done.update(ready)
            for s in ready:
                del pending[s]
        return {s: tuple(sorted(p)) for s, p in parents.items()}

    def freeze(self) -> Topology:
        node_switch: dict[str, str] = {}
        for node, nics in self.nics.items():
            faced = self.node_switches.get(node) or {
                self.nic_switch[node, n] for n in nics if (node, n) in self.nic_switch}
            if len(faced) == 1:
                node_switch[node] = next(iter(faced))
        nics_under: dict[str, list[tuple[str, str]]] = {}
        for pair, switch in self.nic_switch.items():
            nics_under.setdefault(switch, []).append(pair)
        domain = self.member["domain"] or self.member["block"]
        domain_nodes: dict[str, list[str]] = {}
        for node, name in domain.items():
            domain_nodes.setdefault(name, []).append(node)
        return Topology(
            name=self.name,
            _gpus=self.gpus,
            _nics=self.nics,
            _gpu_nics=self.gpu_nics,
            _nic_switch=self.nic_switch,
            _node_switch=node_switch,
            _nodes_under={s: tuple(sorted(n)) for s, n in self.leaf_nodes.items()},
            _nics_under={s: tuple(sorted(p)) for s, p in nics_under.items()},
            _parents=self.parents(),
            _children={s: tuple(sorted(c)) for s, c in self.children.items()},
            _domain=domain,
            _domain_nodes={d: tuple(sorted(n)) for d, n in domain_nodes.items()},
            _rack=self.member["rack"],
            _nodes=tuple(sorted(self.gpus)),
            _switches=tuple(sorted(self.switch_line)),
        )
