"""Shared parts: one alert for a NIC's switch or a GPU's NVLink domain, not one per node.

Trouble on a unit behind a part other units share -- the leaf or rail switch a NIC faces,
the NVSwitch fabric of an NVL72 rack, a spine above several leaves, or a fabric no topology
names -- waits a short window (``switch_window_s``, ``domain_window_s``); when it closes, the
part is the fault if most of the nodes behind it show the same trouble, else each unit gets
its own alert.

:class:`PartWindows` holds these decisions as methods of detector.correlate's ``Correlator``
(a mixin: the state -- ``_group_open``, ``_group_wait``, ``_congested``, ``_comm_wait``, the
problems and timers -- is the Correlator's, made in its ``__init__`` and snapshot with it).
This module does not import detector.correlate (only its ``Problem``, for type checking).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from detector.alerts import ESCALATION, ISOLATION, Alert, Scope
from detector.findings import Finding, keep_by_job
from detector.network import GROUP_INTERVAL_CAP_S as _GROUP_INTERVAL_CAP_S
from detector.network import GROUP_WINDOW_S as _GROUP_WINDOW_S
from detector.topology import compress_hostlist

if TYPE_CHECKING:
    from detector.correlate import Problem

# Trouble that keeps counting while it lasts (NIC or NVLink errors, flaps -- not a state held
# like a link down, a rate or a low port): older, still raised, it supports a shared part's
# count (Correlator._count).
_RISING = frozenset({"errors_seen", "nic_errors", "link_flap", "nvlink_errors"})

# The switch named in the scope of an escalation for a shared network part no topology names.
UNNAMED_SWITCH = "unknown"

# A part above the leaves (a pod spine, a core) that fails errs on a *fraction* of the ports of
# every node under several of its leaves at once: each flow leaving a leaf is hashed (ECMP) over
# the leaf's uplinks, and only those through the failing part err, while a leaf's own failure
# errs on all (or most) ports of its nodes.  A leaf's troubled nodes with at most this share of
# their ports erring, and no link down or flapping among them, have the part-above shape.
_PARTIAL_SHARE = 2 / 3
_LINK_STATE = ("link_down", "link_flap", "flap_seen")
# What a port's bounce between two samples raises (its link up again, link_downed moved) held
# for a switch's window: decided at once beside its scrape's siblings up (Correlator._up_beside).
_BOUNCE = ("nic_errors", "link_flap")
# A port's own quality -- its errors, its throughput against its siblings: counted toward a leaf
# its node faces with every port only as many ports, or one port of many nodes, would be
# (Correlator._switch_ports).
_PORT_QUALITY = frozenset({"errors_seen", "nic_errors", "nic_throughput"})
# ... and so is a port's bounce between two samples (``flap_seen``, evidence): one port's is
# its cable's, a leaf's bounce moves every port it serves (review16: one node's lone bounce
# beside another node's pulled cable made their leaf a switch isolation, 4 nodes drained).
_BY_PORT = _PORT_QUALITY | {"flap_seen"}
# The most ports a NIC finding may tell its node has (``node_ports``); more is no node's (a
# GB200 tray has 8, a DGX H100 12): read as never told (_ports_told).
_MAX_TOLD_PORTS = 1024
_UNITS_TOLD = 16  # GPUs a node's slow escalation keeps as re-sent for (Correlator._slow_due)

# A unit sampled at most this share of the interval of the slowest waiting for its shared
# part waits a window of its own (Correlator._hold_for_group): a few times as often, not
# the jitter between collectors of one cadence (+-0.25 s at 10 s in the simulator).
_FASTER = 0.5

MAX_COMM_WAITS = 1024  # jobs' comm_wait findings kept (the oldest dropped first)
MAX_LEAF_PORTS = 4096  # congested ports kept a leaf (a 64-port leaf x 8 ports a node is 512)

# A GPU's NVLink verdict waits this long for its node's mates (Correlator._hold_board): under
# DESIGN's 1 s for a hardware event, so one GPU's XID 74 is still paged within it.
BOARD_WINDOW_S = 0.9


def _own_counters_beside_low_ports(shared: Problem, f: Finding) -> bool:
    """Whether ``f`` is a port's own trouble (its errors, its rate, its link: not its
    throughput) while the shared part's firing problem stands on ports low against their
    node's other ports alone (``nic_throughput``).

    Such a part's suspicion is a reading of traffic -- a port group carrying less than its
    nodes' other ports (review13 F2), or, on nodes several jobs share, light tenants' ports
    (blind28 F2) -- not of the part's counters: a port under it that starts losing symbols
    by the thousand a poll is no more of that incident, and taken into it, it is never
    paged (blind28 F2: the leaf's page absorbed the only real fault, 12 s after it).  It
    waits its own window: most nodes erring make it the part's, one port its own."""
    return f.signal != "nic_throughput" and bool(shared.active) and all(
        key.startswith("nic_throughput@") for key in shared.active)


class PartWindows:
    """The Correlator's shared-part windows (a mixin of detector.correlate.Correlator)."""

    # -- shared units: NIC or switch, GPU or NVLink domain ------------------------------
    #
    # Trouble on one unit behind a shared part (the leaf or rail switch a NIC faces, the
    # NVSwitch fabric of an NVL72 rack) waits a short window; if by then most of the nodes
    # behind that part show the same trouble, the part is the fault: one alert, not one
    # per node.  Otherwise each unit gets its own.

    def _group_of(self, f: Finding) -> tuple[str, str] | None:
        """The shared part whose failure would also explain this finding, if any.

        NIC trouble on a node no topology puts under a switch still waits: many nodes
        with several NICs failing at once is a shared part nobody can name
        (``"fabric"``, escalated).
        """
        topo = self.topology
        if not f.verdict or f.scope.node is None:
            return None
        if f.kind == "network":
            switch = topo.switch_of(f.scope.node, f.scope.nic) if topo is not None else None
            if switch:
                return ("switch", switch)
            if topo is not None and len(topo.nodes()) < self.cfg.switch_min_nodes:
                return None  # a one-node topology (a collector's own): no part is shared
            return ("fabric", f.cluster or "")
        if topo is None:
            return None
        if f.kind == "hardware" and f.cause == "nvlink" and f.signal != "repeat_xid":
            domain = topo.domain_of(f.scope.node)
            return ("domain", domain) if domain else None
        return None

    def _on_network(self, f: Finding, out: list[Alert]) -> None:
        if not f.active:
            held = self._group_wait.get(f.key)
            if held is not None:
                # Over before its switch window closed (a link down for one 10-30 s sample):
                # it still happened -- decided with the others when the window closes, as
                # trouble that has cleared (it holds nothing open).
                what, name, g = held
                self._group_wait[f.key] = (what, name, g._replace(active=False))
                return
            self._cleared(f, out)
            return
        if not f.verdict:
            return  # "errors seen" evidence: only counted when a switch window closes
        if self._group_of(f) is None:
            self._raise(ISOLATION, "network", "nic", f.scope, f, out)
        else:
            self._hold_for_group(f, out)
            if f.signal == "link_rate" and "rate_before_gbps" in f.evidence:
                self._retrained_beside(f, out)

    def _retrained_beside(self, f: Finding, out: list[Alert]) -> None:
        """A port that bounced and came back lower than it ran, beside a sibling of its node
        sampled up at that rate without a bounce (detector.network's _retrained_lower: blind22
        W1, 400 -> 100 Gb/s, paged 38.5 s late by its switch's window): decided now, as a link
        down beside a sibling up is (_up_beside) -- a switch that fails brings its ports back
        at the rate they had, not at a quarter of it -- unless its part is failing by the
        other nodes' word already; a switch decided failing later supersedes it (its page
        names the sibling: ``decided_beside``).

        Not where the topology file states the port and its sibling face different switches
        (a rail fabric): the sibling then says nothing of the port's rail leaf, whose cable
        bundle reseated retrains its ports lower one node after another (blind8 H4, labelled
        the switch) -- the window decides.  A file naming no NICs (a Slurm topology.conf) is
        read as it is everywhere else: the node's NICs face its leaf."""
        held = self._group_wait.get(f.key)
        if held is None:
            return  # more of a part's incident, or its own isolation firing already
        what, name, _ = held
        topo, node, nic = self.topology, f.scope.node, f.scope.nic
        sibling = f.evidence.get("beside_nic")
        if node is None or nic is None or not isinstance(sibling, str):
            return  # (no sibling named: the window decides)
        if topo is not None:
            here, there = topo.stated_switch_of(node, nic), topo.stated_switch_of(node, sibling)
            if (here or there) and here != there:
                return  # (the file's word: another rail -- the window decides)
        if self._rail_retrained(f, (what, name), out):
            return  # (the same port of another node too, within one poll: the window decides)
        self._member_due(f.key, f.ts, out, now=True)
        q = self.problems.get(self.dedup_key(ISOLATION, f.kind, f.scope, f.cluster))
        if f.key not in self._group_wait and q is not None and q.status == "firing" \
                and what == "switch":
            q.extra.setdefault("decided_beside", {
                "switch": name, "nic": f.evidence.get("beside_nic"),
                "port": f.evidence.get("beside_port"),
                "retrained": f"{f.evidence['rate_before_gbps']} -> "
                             f"{f.evidence.get('rate_gbps')} Gb/s"})
            self._repage(q, out)

    def _rail_retrained(self, f: Finding, group: tuple[str, str], out: list[Alert]) -> bool:
        """Whether the port of ``f`` (a retrain beside a sibling: _retrained_beside) retrained
        lower on another node behind the same part too, within one poll: a rail's part, its
        ports to one NIC name of each node, not two degraded links -- the window decides them
        (revB32 6: a rail leaf retraining mlx5_2 of hgx001-008 400 -> 200, described by a
        Slurm topology.conf, paged nic:hgx001/mlx5_2 at once and the switch 38.5 s later;
        with no topology, 7 NIC isolations).

        One poll: each node samples once an interval at its own phase, so one event on a
        rail shows on every node's next sample, up to an interval after the first (30 s at
        dcgm-exporter's default cadence, 10 s at 10 s): the part's window, an interval and a
        quarter plus a second.  Behind the same part (a Slurm leaf, or the fabric no topology
        names): a rail leaf serves the nodes the file puts under one leaf, and each part's
        window decides only its own.  The first node's retrain has no other beside it yet -- a lone
        port's (blind22 W1) until a second shows: decided at once, and taken back into its
        window when a second comes (_retake_retrain), usually before a pager's group wait
        (10 s) sends it."""
        node, nic, span = f.scope.node, f.scope.nic, self._window(group[0], f)

        def same_port(g: Finding) -> bool:
            return (g.signal == "link_rate" and "rate_before_gbps" in g.evidence
                    and g.scope.nic == nic and g.scope.node != node
                    and g.cluster == f.cluster and abs(f.ts - g.ts) <= span
                    and self._group_of(g) == group)

        rail = any(same_port(g) for _, _, g in self._group_wait.values())
        paged: list[tuple[Problem, Finding]] = []
        for q in [q for q in self.problems.values() if q.status == "firing"
                  and q.topic == ISOLATION and q.kind == "network" and q.scope.nic == nic
                  and q.scope.node != node and q.cluster == f.cluster]:
            g = self._device.get(q.scope.key, {}).get("link_rate")
            if g is not None and same_port(g) and q.evidence and (
                    q.evidence[0].get("signal") == "link_rate"):
                rail = True
                paged.append((q, g))
        if paged:
            # Taken back only once the part is failing by its window's own count (revB33 1:
            # two nodes of a leaf are two links -- withdrawn at the second and paged again
            # when the window decided each alone, one key fired, resolved, fired).  Short of
            # it the page stays open and the window decides the others.
            waiting = [g for w, n, g in self._group_wait.values() if (w, n) == group]
            _, troubled, need = self._count(*group, waiting + [g for _, g in paged])
            if len(troubled) >= need:
                for q, _ in paged:
                    self._retake_retrain(q, f, out)
        return rail

    def _retake_retrain(self, q: Problem, f: Finding, out: list[Alert]) -> None:
        """The NIC page ``q``, decided at once on its port's retrain (_retrained_beside), taken
        back at ``f`` -- the same port of another node retrained lower within one poll
        (_rail_retrained): resolved, its findings held again for their part's window, which
        decides them with ``f`` (the part, or each unit alone).  Not when anything on it is
        not a network finding its part's window would take."""
        held = []
        for k in q.active:
            signal, _, unit = k.partition("@")
            g = self._device.get(unit, {}).get(signal)
            group = self._group_of(g) if g is not None and g.kind == "network" else None
            if g is None or group is None:
                return
            held.append((k, group, g))
        for k, (what, name), g in held:
            self._group_wait[k] = (what, name, g)
            self._owner.pop(k, None)
            if (what, name) not in self._group_open:
                self._group_open.add((what, name))
                self._timer(max(f.ts, g.ts + self._window(what, g)), what, name)
        self._resolve_now(q, f.ts, out, "withdrawn", (
            f"{f.scope.nic} of {f.scope.node} retrained lower too within one poll: the rail's "
            "part, decided by its window"))

    def _on_congestion(self, f: Finding, out: list[Alert]) -> None:
        """A port's ``congested`` or a job's ``comm_wait`` changed: a leaf whose congestion
        costs a job under it is escalated once its window closes (_congestion_due).

        Congestion another tenant makes (blind7 G2: its traffic fills a leaf's uplinks, every
        port of the leaf waits for credit, the training job under it 1.3-1.45x slower in comm
        on every rank) breaks no unit: nothing to isolate, a human decides (QoS, placement).
        A port waiting alone, or a leaf congested while no job under it waits, pages nobody
        (a weight pull at line rate, an incast: routine).
        """
        topo = self.topology
        if topo is None:
            if f.signal == "comm_wait":  # (a port's jobs waiting: correlate.ports._jobs_wait)
                keep_by_job(self._comm_wait, f, MAX_COMM_WAITS)
            return
        if f.signal == "comm_wait":
            job = keep_by_job(self._comm_wait, f, MAX_COMM_WAITS)
            nodes = {node for node, _, _ in self._placement.ranks.get(job, {}).values()}
            leaves = [leaf for leaf, ports in self._congested.items()
                      if any(g.scope.node in nodes for g in ports.values())]
        else:
            node, nic = f.scope.node, f.scope.nic
            leaf = topo.switch_of(node, nic) if node is not None and nic is not None else None
            if not leaf:
                return
            ports = self._congested.setdefault(leaf, {})
            if f.active:
                if len(ports) >= MAX_LEAF_PORTS and f.scope.key not in ports:
                    return  # (a forged finding's port numbers: no leaf has so many)
                ports[f.scope.key] = f
            else:
                ports.pop(f.scope.key, None)
                if not ports:
                    del self._congested[leaf]
            p = self.problems.get(self.dedup_key(ESCALATION, "network", Scope.of_switch(leaf),
                                                 f.cluster))
            if p is not None and p.status == "firing":
                if f.active:
                    p.add(f, self.cfg.evidence_items)
                    self._own(f, p)
                else:
                    self._cleared(f, out)
                return
            leaves = [leaf]
        if f.active:
            for leaf in leaves:
                if self._leaf_congested(leaf) is not None:
                    self._timer(f.ts + self._window("switch", f), "congest", leaf)

    def _leaf_congested(self, leaf: str) -> tuple[set[str], set[str]] | None:
        """(nodes heard from under ``leaf``, those with a port facing it congested) when at
        least half of them (switch_min_nodes or more) are; else None."""
        topo = self.topology
        assert topo is not None
        ports = self._congested.get(leaf)
        if not ports:
            return None
        heard = {n for n in topo.nodes_under(leaf) if self.seen is None or self.seen(n, "nic")}
        hot = {g.scope.node for g in ports.values() if g.scope.node in heard}
        need = max(self.cfg.switch_min_nodes,
                   math.ceil(self.cfg.switch_min_fraction * len(heard)))
        return (heard, hot) if len(hot) >= need else None  # type: ignore[return-value]

    def _congestion_due(self, leaf: str, due: float, out: list[Alert]) -> None:
        """A congested leaf's window closed: escalate it if a job under it waits in its
        collectives -- unless a part's failure explains it: an isolation firing at or above
        the leaf, a switch window still open on it or a leaf of its spine, or another leaf of
        its spine congested as well (a spine's trouble, blind4 X-spine: every leaf under a
        degraded spine congested at once, the spine isolated on its errors)."""
        topo = self.topology
        seen = self._leaf_congested(leaf) if topo is not None else None
        if topo is None or seen is None:
            return
        heard, hot = seen
        ports = self._congested[leaf]
        first = min(ports.values(), key=lambda g: g.onset_ts)
        scope = Scope.of_switch(leaf)
        p = self.problems.get(self.dedup_key(ESCALATION, "network", scope, first.cluster))
        if p is not None and p.status == "firing":
            return  # escalated already (its ports joined it as they came)
        waiting = []
        for node in topo.nodes_under(leaf):
            for job, _ in self._placement.on_node.get(node, {}):
                w = self._comm_wait.get(job)
                if w is not None and w not in waiting:
                    waiting.append(w)
        if not waiting:
            return
        spines = topo.parent_of(leaf)
        siblings = {s for spine in spines for s in topo.children_of(spine)} - {leaf}
        if any(("switch", s) in self._group_open for s in siblings | {leaf}):
            # A switch window open here or on a leaf of its spine: its decision first.
            self._timer(due + self._window("switch", first), "congest", leaf)
            return
        if (self._firing_on(scope, "network") or self._firing_above(leaf, first.cluster)
                or any(self._firing_on(Scope.of_switch(s), "network") for s in spines)
                or any(self._leaf_congested(s) is not None for s in siblings)):
            return
        jobs = sorted(waiting, key=lambda w: -float(w.evidence.get("comm_ratio", 0.0)))
        worst = jobs[0]
        named = ", ".join(f"{w.job} (comm x{w.evidence.get('comm_ratio')})" for w in jobs[:4])
        extra = {
            "nodes_affected": len(hot), "nodes_heard_from": len(heard),
            "affected_nodes": sorted(hot)[:16],
            "jobs_waiting": [w.job for w in jobs[:8]],
            "comm_ratio": {w.job: w.evidence.get("comm_ratio") for w in jobs[:8]},
            "why_escalated": (
                f"{leaf} congested: {len(hot)} of its {len(heard)} nodes' ports wait for credit "
                "(xmit_wait, CNPs) far over their usual, while job(s) under it wait in their "
                f"collectives: {named}; nothing is broken to isolate"),
            "next_diagnostic": (
                f"find the traffic filling {leaf}'s uplinks (another tenant's transfers, a "
                "placement across leaves); QoS, traffic classes or placement decide")}
        summary = first._replace(ts=due, scope=scope, tenant=None, job=worst.job,
                                 cause="switch", severity=0.6)
        p = self._raise(ESCALATION, "network", "switch", scope, summary, out, detected_ts=due,
                        extra=extra, own=False)
        p.tenant = None  # a shared part carries several tenants' work
        for w in jobs[:2]:
            p.add(w, self.cfg.evidence_items)
        for g in sorted(ports.values(), key=lambda g: g.onset_ts):
            p.add(g, self.cfg.evidence_items)
            self._own(g, p)

    def _hold_for_group(self, f: Finding, out: list[Alert]) -> None:
        group = self._group_of(f)
        assert group is not None
        what, name = group
        shared = self.problems.get(self.dedup_key(ESCALATION if what == "fabric" else ISOLATION,
                                                  f.kind, self._group_scope(group), f.cluster))
        if what == "switch" and not (shared is not None and shared.status == "firing") and (
                f.signal not in _LINK_STATE):
            # Its spine's, named before -- never a host link's own state: the leaf's or the
            # cable's (review13 F3: a port pulled mid-incident was the spine's, never paged,
            # and kept the spine's isolation firing after its errors stopped).
            shared = self._firing_above(name, f.cluster)
        if shared is not None and shared.status == "firing" and self._still_failing(shared) \
                and not _own_counters_beside_low_ports(shared, f):
            # The part is still failing: more of the same incident.  Once it has recovered
            # (quiet, waiting out its flap window, or its trouble left on one node only)
            # trouble on one unit behind it is a new fault of that unit unless most nodes
            # show it again (decided by the window).
            shared.add(f, self.cfg.evidence_items)
            self._own(f, shared)
            return
        own = self.problems.get(self.dedup_key(ISOLATION, f.kind, f.scope, f.cluster))
        if own is not None and own.status == "firing":
            self._raise(ISOLATION, f.kind, f.cause, f.scope, f, out, latched=f.kind == "hardware")
            return
        self._group_wait[f.key] = (what, name, f)
        # (A port low on a node its jobs share waits for a job's stop there: _stop_wait.)
        window = max(self._window(what, f), self._stop_wait(f))
        if (what, name) not in self._group_open:
            self._group_open.add((what, name))
            self._timer(f.ts + window, what, name)
            return
        # The window is the first finding's: a unit sampled far more often than that one
        # waits only its own (a 1 s port behind a 60 s one was held 76 s; room harden).
        interval = _interval(f)
        if interval > 0.0 and interval <= _FASTER * max(
                _interval(g) for w, n, g in self._group_wait.values() if (w, n) == group):
            self._timer(f.ts + window, "member", f.key)

    def _window(self, what: str, f: Finding) -> float:
        """How long ``f`` waits for the rest of its shared part's nodes to show trouble.

        Nodes sample at their own phase: with a 10 or 30 s interval (dcgm-exporter's
        default is 30 s) the other nodes behind the part report up to one interval later,
        so the window is at least one interval and a quarter, plus a second -- of a
        collector's cadence: a port that reports once an hour (a broken exporter) does not
        hold every other NIC fault of its switch, or of a cluster without a topology, for an
        hour (room harden, 2026-12-02: 3,736 s).
        """
        if what == "domain" and f.signal == "xid":
            # An XID is an event, not a sample: there is no tray's sampling phase to wait out,
            # and DESIGN pages a hardware event within 1 s -- it waits as a board's does
            # (blind12 B4: an NVL72 GPU's XID 149 held the whole 6 s domain window).
            return BOARD_WINDOW_S
        window = self.cfg.domain_window_s if what == "domain" else self.cfg.switch_window_s
        return max(window, 1.25 * _interval(f) + 1.0)

    def _up_beside(self, f: Finding, out: list[Alert]) -> None:
        """A port of the node sampled up after a link down held for its switch's window: when
        the topology file states both face that switch, the switch is up (a fixed-config
        leaf that fails -- power, ASIC, firmware, a reboot -- takes every port it faces down
        at once), and the link down is its own -- decided now, as the window would have,
        unless the switch is failing by the other nodes' word already (blind13 M2: a NIC
        paged 13.5 s after its down sample; DESIGN's target is 1 s).

        Only the file's word (Topology.stated_switch_of): a Slurm ``topology.conf`` names no
        NICs, and its "every NIC faces the node's leaf" may describe a rail-optimised fabric
        whose rail leaf failing takes one port of each node down while the siblings, on other
        rails, stay up (tests/test_fabric_round11.py, test_review_round9.py: one switch
        alert) -- there the window decides, as it does for a stated rail fabric.
        """
        # (a down sample's wait first; else a bounce between two samples: its errors or flaps
        # told, no down sample -- its scrape's siblings without a bounce say the same)
        for signal in ("link_down", *_BOUNCE):
            key = f"{signal}@{f.scope.key}"
            held = self._group_wait.get(key)
            if held is not None:
                break
        topo = self.topology
        if held is None or topo is None or f.scope.node is None:
            return
        what, name, g = held
        node, nic = f.scope.node, f.evidence.get("nic")
        if what != "switch" or not isinstance(nic, str) or f.scope.nic is None or not (
                topo.stated_switch_of(node, f.scope.nic) == name
                == topo.stated_switch_of(node, nic)):
            return  # (only the file's word: Topology.stated_switch_of)
        self._member_due(key, f.ts, out, now=True)
        q = self.problems.get(self.dedup_key(ISOLATION, g.kind, g.scope, g.cluster))
        if key not in self._group_wait and q is not None and q.status == "firing":
            # (named in its page; and a switch decided failing later supersedes it)
            q.extra.setdefault("decided_beside", {
                "switch": name, "nic": nic, "port": f.evidence.get("port"),
                "since_down_s": f.evidence.get("since_down_s")})
            self._repage(q, out)

    def _supersede_beside(self, switch: str, p: Problem, window: float, due: float,
                          out: list[Alert]) -> None:
        """Link downs decided at once under ``switch`` (_up_beside) that its own isolation
        ``p`` explains -- begun at most its ``window`` before the switch's first trouble
        (the first port down may be the first the leaf's nodes show): resolved now, pointing
        at ``p``.  A part of the leaf failing (a line card, a port group) spares siblings the
        rule read as the leaf's word; one incident is one open page."""
        since = p.onset_ts - window
        for q in [q for q in self.problems.values() if q.status == "firing"
                  and q.extra.get("decided_beside", {}).get("switch") == switch
                  and q.cluster == p.cluster and q.onset_ts >= since]:
            self._superseded(q, p, due, out)

    def _member_due(self, key: str, due: float, out: list[Alert], now: bool = False) -> None:
        """A finding sampled far more often than the one that opened its part's window has
        waited its own (or, ``now``, is known its own: _up_beside): unless the part is
        failing by now (then it is decided with it, one alert), it is decided alone, as the
        part's window would have."""
        held = self._group_wait.get(key)
        if held is None:
            return  # decided with its part
        what, name, f = held
        if not now and f.ts + self._window(what, f) > due:
            return  # a later finding of the same key, waiting for its own time
        waiting = [g for w, n, g in self._group_wait.values() if (w, n) == (what, name)]
        if self._may_be_failing(what, name, waiting, due) is not None:
            return  # decided with its part when the part's window closes
        # Decided now: its node's event if every port of the node waits here down, else it.
        whole = self._whole_node_down([(k, g) for k, (w, n, g) in self._group_wait.items()
                                  if (w, n) == (what, name) and g.scope.node == f.scope.node])
        decided = [(g.key, g) for g in whole[f.scope.node]] if f.scope.node in whole else [
            (key, f)]
        for k, _ in decided:
            del self._group_wait[k]
        self._decide_units(decided, due, out)

    def _whole_node_down(self, waiting: list[tuple[str, Finding]]) -> dict[str, list[Finding]]:
        """Nodes whose every fabric port is among the link downs waiting here (_every_port)."""
        downs: dict[str, list[Finding]] = {}
        for _, f in waiting:
            if f.kind == "network" and f.signal == "link_down" and f.scope.node is not None:
                downs.setdefault(f.scope.node, []).append(f)
        return {node: fs for node, fs in downs.items() if self._every_port(node, fs)}

    def _every_port(self, node: str, downs: list[Finding]) -> bool:
        """Whether one node's link downs ``downs`` (one a port) are all its fabric ports, >= 2.

        Its fabric ports are the NICs a topology puts under a switch, when it names the
        node's NICs (a DGX's storage or management ports face no switch of the compute
        fabric, and stay up when its compute NICs' driver or PCIe fails: blind2 F1, 8 NIC
        isolations beside mlx5_7/8 up) -- or every port, as the node's own detector counted
        them when the last went down (detector.network).
        """
        if len(downs) < 2:
            return False
        if any(f.evidence.get("node_ports_down") == _ports_told(f) == len(downs) for f in downs):
            return True
        topo = self.topology
        nics = topo.nics_of(node) if topo is not None else ()
        down = {f.scope.nic for f in downs}
        if topo is None or not down <= set(nics):
            return False  # (telemetry's NIC names are not the topology's: nothing to go on)
        fabric = {nic for nic in nics if topo.switch_of(node, nic)}
        return len(fabric) >= 2 and fabric <= down

    def _node_down(self, node: str, downs: list[Finding], due: float, out: list[Alert]) -> None:
        """Every port of one node down at once, the rest of its part fine: the node's event
        (its NICs' driver, firmware, PCIe or power), one alert, not one per cable."""
        first = min(downs, key=lambda g: g.onset_ts)
        extra = {"ports_down": len(downs), "recommended_because": (
            f"all {len(downs)} NIC ports of {node} went down together, the other nodes behind "
            "its switch did not: one node event, not a cable each")}
        p = self._raise(ISOLATION, "network", "nic", Scope.of_node(node), first, out,
                        detected_ts=due, extra=extra, own=False)
        for f in downs:
            p.add(f, self.cfg.evidence_items)
            if f.active:
                self._own(f, p)
        self._quiet_if_cleared(p, due)

    def _still_failing(self, p: Problem) -> bool:
        """Whether a shared part's problem still has trouble on ``switch_min_nodes`` nodes.

        A part shows failing on several nodes at once; once all but one have recovered, what
        is left is that node's own trouble.  A NIC fault that began while its errors from a
        leaf's failure were still counted kept that finding active, and its own new trouble
        was taken as "more of the same incident" of a leaf recovered a minute before: a
        missed NIC fault (tuning reproducer interval-30 s9611: a leaf failed at 917-947 s,
        node-007/mlx5_3 from 1011 s).
        """
        nodes = set()
        for key in p.active:
            signal, _, unit = key.partition("@")
            g = self._device.get(unit, {}).get(signal)
            if g is not None and g.scope.node is not None:
                nodes.add(g.scope.node)
                if len(nodes) >= self.cfg.switch_min_nodes:
                    return True
        return False

    @staticmethod
    def _group_scope(group: tuple[str, str]) -> Scope:
        what, name = group
        if what == "fabric":
            # DESIGN.md has no cluster-wide scope: the level of the part that is likely
            # failing (a switch), unnamed because no topology names it.
            return Scope.of_switch(UNNAMED_SWITCH)
        return Scope.of_switch(name) if what == "switch" else Scope.of_domain(name)

    def _fabric_members(self, cluster: str, recent: float, rails: dict[str, set[str]]
                        ) -> tuple[set[str], set[str], set[str]]:
        """(nodes we hear NIC telemetry from, those with NIC trouble on >= 2 NICs begun since
        ``recent``, those with it on >= 2 NICs counting older errors or flaps still rising
        too), no topology; ``rails`` gets, for each NIC name, the nodes whose port of that
        name is in trouble begun since ``recent``.

        Nodes are known from their GPUs' sampling findings and the jobs' layouts (the
        correlator sees findings, not telemetry); with neither, only the troubled ones.
        """
        troubled, still = set(), set()
        for node, units in self._units_of_node.items():
            new, rising = set(), set()
            for u in units:
                if not u.startswith("nic:"):
                    continue
                for g in self._device.get(u, {}).values():
                    if g.verdict and g.kind == "network" and (g.cluster or "") == cluster:
                        if g.onset_ts >= recent:
                            new.add(_nic_of(u))
                        elif g.signal in _RISING:
                            rising.add(_nic_of(u))
            for nic in new:
                rails.setdefault(nic, set()).add(node)
            # A shared part takes a node's NICs with it; one port in trouble on each of a
            # few nodes is as many independent NIC faults -- unless it is the same port of
            # each (a rail switch's: below).
            if len(new) >= 2:
                troubled.add(node)
            elif len(new | rising) >= 2:
                still.add(node)
        known = set(self._interval) | set(self._placement.on_node)
        heard = {n for n in known if self.seen is None or self.seen(n, "nic")}
        return heard | troubled, troubled, still

    def _members(self, what: str, name: str, recent: float, waiting: list[Finding]
                 ) -> tuple[set[str], set[str], set[str]]:
        """(nodes behind the shared part that we hear from, those of them in trouble begun
        since ``recent`` -- or among the ``waiting`` findings that cleared inside the window --,
        those whose only trouble is older errors still rising -- behind a switch, only where
        it looks like the switch's: _like_the_switch; a node facing it with several ports,
        only where its ports' trouble does: _switch_ports)."""
        topo = self.topology
        assert topo is not None
        source = "nic" if what == "switch" else "ecc"
        pairs: Sequence[tuple[str, str | None]]
        if what == "switch":
            # A topology that names no NICs (a Slurm topology.conf) puts a node under its
            # leaf as a whole: every NIC of that node faces it.
            pairs = topo.nics_under(name) or [(n, None) for n in topo.nodes_under(name)]
        else:
            pairs = [(n, None) for n in topo.nodes_in_domain(name)]
        heard, troubled, still = set(), set(), set()
        # A switch's nodes whose only trouble is older and still rising: unit -> (its onset,
        # the node's ports its NIC monitor told), by node.
        older: dict[str, dict[str, tuple[float, int]]] = {}
        # A switch's nodes facing it with every port: their ports in trouble begun since
        # ``recent`` (a port low against its siblings apart), and the ports they have.
        bad: dict[str, set[str]] = {}
        low: dict[str, set[str]] = {}
        sizes: dict[str, int] = {}
        for node, nic in pairs:
            if self.seen is None or self.seen(node, source):
                heard.add(node)
            # A port low against its node's other ports, all of them facing this switch, is not
            # the switch's doing: the switch would have slowed them alike.  A NIC that stops
            # draining its receive queue (a PFC pause storm) is that port, its leaf's other
            # ports merely paused -- with one chance error trickle on another node it drained
            # the leaf (blind4 D7).  (A rail leaf faces one port of each node: counted.)
            whole = what == "switch" and topo.switch_of(node) == name
            if whole and node not in bad:
                bad[node], low[node] = set(), set()
            for unit in self._units_of_node.get(node, ()):
                signals = self._device.get(unit)
                if not signals:
                    continue
                if what == "switch":
                    if nic is None:
                        under = unit.startswith(f"nic:{node}/") and (
                            topo.switch_of(node, _nic_of(unit)) == name)
                    else:
                        under = unit.startswith(f"nic:{node}/{nic}:") or (
                            unit == f"nic:{node}/{nic}")
                    if not under:
                        continue
                    # (A port flapping since before the window goes down on one sample in a
                    # few: that down is its flap's, not trouble begun now.)
                    flap = signals.get("link_flap")
                    flapping = flap is not None and flap.onset_ts < recent
                    new = [g for g in signals.values() if g.onset_ts >= recent
                           and not (flapping and g.signal == "link_down")]
                    kinds = {g.signal for g in new}
                    if whole and kinds and kinds <= _BY_PORT:
                        # (a port's errors, its low throughput, its bounce: _switch_ports)
                        _told_ports(sizes, node, signals.values())
                        if "nic_throughput" in kinds and len(kinds) == 1:
                            low[node].add(_nic_of(unit))
                        else:
                            bad[node].add(_nic_of(unit))
                            continue
                    elif kinds:
                        troubled.add(node)
                        continue
                    for g in signals.values():
                        if g.signal in _RISING and g.signal != "link_flap":
                            older.setdefault(node, {})[unit] = (g.onset_ts, _ports_told(g))
                            break
                    continue
                if unit.startswith("gpu:"):
                    for g in signals.values():
                        if g.cause == "nvlink" and g.kind == "hardware":
                            if g.onset_ts >= recent:
                                troubled.add(node)
                                break
                            if g.signal in _RISING:
                                still.add(node)  # (an NVSwitch's errors spreading, the same)
        for f in waiting:
            node = f.scope.node
            if f.active or node is None:
                continue
            # Trouble that cleared inside the window still happened: a leaf down for less
            # than a sample interval is seen by each node on one sample at its own phase, and
            # is over on every node before the window closes (it was 12-16 NIC isolations,
            # one per node, for one switch blip; review audit row 1b).
            heard.add(node)
            if node in bad and f.scope.nic is not None and f.signal in _BY_PORT:
                (low if f.signal == "nic_throughput" else bad)[node].add(f.scope.nic)
                _told_ports(sizes, node, (f,))
            else:
                troubled.add(node)
        if bad:
            troubled |= self._switch_ports(name, bad, low, sizes, heard)
        if older:
            still = self._like_the_switch(name, older, troubled, recent)
        return heard | troubled, troubled, still - troubled

    def _switch_ports(self, name: str, bad: dict[str, set[str]], low: dict[str, set[str]],
                      sizes: dict[str, int], heard: set[str]) -> set[str]:
        """The nodes facing switch ``name`` with every port whose ports' errors or low
        throughput begun in the window (``bad``: erring ports, ``low``: ports only low against
        their siblings; ``sizes``: the ports each node's NIC monitor told it has) look like the
        switch's, of the ``heard`` nodes.

        Errors are a link's signal quality: a cable's, a transceiver's, one port each.  A
        switch's show on many of the ports it serves -- all of a node's (its ASIC, its
        power), a share of each node's (its uplinks' optics, flows hashed over them), or the
        same port of every node (a port group, a line card).  So a node counts with two or
        more of its ports erring (or the only one it has, or not told how many: as ever), or
        with a port whose name is in trouble on as many nodes as make the switch failing:
        two cables of a leaf erring together -- 2 of the 32 ports it serves -- drained its
        four nodes (blind5 E1); four nodes' mlx5_2 down to 3 % on one sample, a port group of
        the leaf, were four NIC isolations (review13 F2).  A port only low against its node's
        other ports counts by its name alone: the switch would have slowed all of a node's
        ports alike, and one NIC that stops draining its queue (a PFC pause storm) leaves its
        leaf's other ports merely paused (blind4 D7).  A bounce between two samples
        (``flap_seen``) counts as errors do: a leaf's moves every port it serves a node, one
        port's is its cable's.  (A link's state -- down, flapping -- is an event, not a
        quality: two links of one leaf going down at once are one event of the leaf, counted
        by node as ever.)
        """
        topo = self.topology
        assert topo is not None
        named: dict[str, int] = {}
        for node, _ in topo.nics_under(name):
            named[node] = named.get(node, 0) + 1
        nodes: dict[str, int] = {}
        for node in bad:
            for nic in bad[node] | low[node]:
                nodes[nic] = nodes.get(nic, 0) + 1
        group = max(self.cfg.switch_min_nodes,
                    math.ceil(self.cfg.switch_min_fraction * len(heard)))
        out = set()
        for node, nics in bad.items():
            ports = named.get(node) or sizes.get(node, 0)
            if (len(nics) >= 2 or (nics and ports <= 1)
                    or any(nodes[nic] >= group for nic in nics | low[node])):
                out.add(node)
        return out

    def _like_the_switch(self, name: str, older: dict[str, dict[str, tuple[float, int]]],
                         troubled: set[str], recent: float) -> set[str]:
        """The nodes of ``older`` (trouble begun before ``recent`` and still rising, by unit:
        its onset, the node's ports told) whose trouble looks like the switch's, to count
        beside trouble begun in its window (_count).

        A leaf's ASIC or optics degrading hits every port of its nodes facing it, a cable or
        a transceiver one port: older errors count when they are on most of the node's
        ports facing the switch (the topology's count when it names the NICs; else, a Slurm
        topology.conf, the node's own, told in its NIC findings).  A flap is a port's own
        (two cables flapping since 10 and 5 minutes and a third node's port going down
        drained a 4-node leaf: review round 12, F1), never counted here.  Where a node
        faces the switch with one port (a rail leaf: one NIC of every node), "most of its
        ports" says nothing: there the onsets must chain -- each node's within two
        look-backs of the next one's up to the window's trouble, as errors spreading over
        a leaf do, not cables failing minutes apart.
        """
        topo = self.topology
        assert topo is not None
        named: dict[str, int] = {}
        for node, _ in topo.nics_under(name):
            named[node] = named.get(node, 0) + 1
        most, lone = set(), []
        for node, units in older.items():
            if node in troubled:
                continue
            ports = named.get(node, 0) or max(t for _, t in units.values())
            if ports > 1:
                if 2 * len(units) > ports:
                    most.add(node)
            else:
                lone.append((max(o for o, _ in units.values()), node))
        if lone:
            gap = 2.0 * _GROUP_WINDOW_S
            anchor = recent + _GROUP_WINDOW_S  # (the window's first onset)
            for onset, node in sorted(lone, reverse=True):
                if anchor - onset > gap:
                    break
                most.add(node)
                anchor = onset
        return most

    def _count(self, what: str, name: str, waiting: list[Finding]
               ) -> tuple[set[str], set[str], int]:
        """(nodes behind the part heard from, those in trouble, how many make it failing),
        counting the ``waiting`` findings' nodes.

        Trouble counts when it began since the part may have failed: at most one sampling
        interval (of the slowest collector waited for, _GROUP_INTERVAL_CAP_S) before the
        first onset waiting here.  A lasting verdict -- a port trained at half rate, or low
        against its siblings, for minutes -- is its own unit's, not the part's: counted, it
        made an unrelated NIC fault on a 4-node leaf a switch alert, and held a node alert 31 s
        in blind2 (room rate, round 10).
        """
        recent = min((f.onset_ts for f in waiting), default=-math.inf) - _GROUP_WINDOW_S
        rails: dict[str, set[str]] = {}
        if what == "fabric":
            heard, troubled, still = self._fabric_members(name, recent, rails)
            # The same for trouble that cleared inside the window (below): a node whose NICs
            # waiting here, cleared or not, are >= 2 (review, 2026-12-02: a one-sample blip
            # on half the nodes was one isolation per NIC, where 30 s of it was one page).
            waiting_nics: dict[str, set[str]] = {}
            for f in waiting:
                if f.scope.node and f.scope.nic:
                    waiting_nics.setdefault(f.scope.node, set()).add(f.scope.nic)
                    rails.setdefault(f.scope.nic, set()).add(f.scope.node)
            late = {n for n, nics in waiting_nics.items() if len(nics) >= 2}
        else:
            heard, troubled, still = self._members(what, name, recent, waiting)
            late = set()
        troubled, heard = troubled | late, heard | late
        if troubled and len(troubled | still) > self.cfg.switch_min_nodes:
            # Older trouble still rising (errors or flaps arriving on every sample, not a state
            # held) counts beside trouble begun in the window when more nodes than the fewest
            # that make a part show it at once: a leaf's ASIC or optics degrading reaches one
            # node after another over minutes, its errors still rising on the first when the
            # fourth begins (review round 11, R1: 16 NIC isolations, never the switch).  One
            # cable flapping for ten minutes and one new fault beside it are two nodes' own.
            troubled, heard = troubled | still, heard | still
        need = max(self.cfg.switch_min_nodes, math.ceil(self.cfg.switch_min_fraction * len(heard)))
        if rails and len(troubled) < need:
            # No topology, and the same port name in trouble on a share of the nodes at once:
            # a rail switch's signature (in a rail-optimised fabric it takes ONE NIC of every
            # node -- a firmware or port configuration retraining them lower, its power), one
            # part nobody can name, not a NIC fault per node (review round 12, F2: 16 NIC
            # isolations).  Three nodes of eight stay three NICs.
            # (Out of every node whose NIC cadence was told: NIC telemetry alone names no
            # GPU or job, and three nodes of eight are not a share of three heard.)
            rail = max(rails.values(), key=len)
            told = heard | rail | {n for n in self._nic_interval
                                   if self.seen is None or self.seen(n, "nic")}
            share = max(self.cfg.switch_min_nodes,
                        math.ceil(self.cfg.switch_min_fraction * len(told)))
            if len(rail) >= share:
                troubled, heard, need = troubled | rail, told, share
        return heard, troubled, need

    def _may_be_failing(self, what: str, name: str, waiting: list[Finding], due: float
                        ) -> float | None:
        """Whether a part whose window is closing is failing as far as its nodes sampled since
        its first onset can tell: None when it is not, else when every node heard from has
        been (the part's decision is due then).

        A node not sampled since the fault could show cannot say it is fine yet: counted
        over every node heard from, a leaf down looked healthy to a 5 s collector's port at
        7.5 s, its 30 s nodes not yet sampled (review round 9, R6: node-007 paged alone beside
        switch:leaf0).  A node's cadence behind a switch is its NIC ports' (the network
        "sampling" finding, detector.network), else -- and in an NVLink domain -- its GPUs'
        (the thermal one: DCGM's, which also samples ECC/NVLink; dcgm-exporter's default while
        not yet told), else the one most of the part's troubled nodes report at (the lower
        median of their intervals).  Its own NIC cadence first: a leaf failing just after
        its 30 s nodes sampled, seen first by a 5 s collector, had one slow and one fast node
        in trouble when the fast one's window closed, read as the fast cadence -- 2 node
        alerts and a late switch:leaf0 (room fabric, round 11).  Bounded: the answer is due
        at most _GROUP_WINDOW_S (1.25 x _GROUP_INTERVAL_CAP_S + 1 s, 76 s) after the part's
        first onset.
        """
        heard, troubled, need = self._count(what, name, waiting)
        if len(troubled) >= need:
            return due
        cadence: dict[str, float] = {}
        for g in waiting:
            if g.scope.node is not None and g.scope.node in troubled:
                cadence[g.scope.node] = max(cadence.get(g.scope.node, 0.0), _interval(g))
        usual = sorted(cadence.values())[(len(cadence) - 1) // 2] if cadence else 0.0
        since = min(g.onset_ts for g in waiting)
        sampled, slowest = len(troubled), 0.0
        # (A switch's trouble shows on its nodes' NIC samples, an NVLink domain's on DCGM's.)
        nics = self._nic_interval if what != "domain" else {}
        for node in heard - troubled:
            told = nics.get(node) or self._interval.get(node)
            if told is not None:
                c = told[0]
            elif self.seen is not None and self.seen(node, "thermal"):
                c = self.cfg.unknown_cadence_s  # GPUs sampled, at a cadence not told yet
            else:
                c = usual
            c = min(c, _GROUP_INTERVAL_CAP_S)
            if due - since >= c:
                sampled += 1  # (c = 0: nothing to go on -- counted as heard, as ever)
            else:
                slowest = max(slowest, c)
        if not slowest or len(troubled) < max(self.cfg.switch_min_nodes, math.ceil(
                self.cfg.switch_min_fraction * sampled)):
            return None
        return since + 1.25 * slowest + 1.0

    def _group_due(self, what: str, name: str, due: float, out: list[Alert]) -> None:
        waiting = [(k, f) for k, (w, n, f) in self._group_wait.items() if (w, n) == (what, name)]
        if not waiting:
            self._group_open.discard((what, name))
            return
        # A node the file puts elsewhere, waiting here beside this switch (_whole_node_beside):
        # the part is decided by its own nodes; the node goes with it, or alone.
        own = [f for _, f in waiting if self._group_of(f) == (what, name)]
        later = self._may_be_failing(what, name, own, due) if own else None
        if later is not None and later > due:
            # Opened by a faster collector: the part's slower nodes have not all been sampled
            # since (blind2 F5: 32 GPU NVLink isolations 5.6 s before domain:nvl2).
            self._timer(later, what, name)
            return
        spread = self._spreading(name, own, due) if (
            own and later is None and what == "switch") else None
        if spread is not None:
            self._timer(spread, what, name)
            return
        self._group_open.discard((what, name))
        for k, _ in waiting:
            del self._group_wait[k]
        moved = [(k, f) for k, f in waiting if self._group_of(f) != (what, name)]
        waiting = [(k, f) for k, f in waiting if self._group_of(f) == (what, name)]
        if waiting:
            self._group_decide(what, name, waiting, due, out)
        if moved:
            self._decide_units(moved, due, out)

    def _group_decide(self, what: str, name: str, waiting: list[tuple[str, Finding]],
                      due: float, out: list[Alert]) -> None:
        """Part ``(what, name)``'s window closed on its ``waiting`` findings: failing or not."""
        heard, troubled, need = self._count(what, name, [f for _, f in waiting])
        first = min((f for _, f in waiting), key=lambda g: g.onset_ts)
        if what == "switch":
            left = self._above_leaf(name, first, waiting, (heard, troubled, need), due, out)
            if not left:
                return
            if len(left) < len(waiting):
                # Host links' own state beside a part above still failing: the leaf's or the
                # cables', counted again without what the part above took.
                heard, troubled, need = self._count(what, name, [f for _, f in left])
                waiting, first = left, min((f for _, f in left), key=lambda g: g.onset_ts)
        if what == "fabric" and len(troubled) >= need:
            self._fabric_escalation(first, waiting, heard, troubled, due, out)
            return
        if what != "fabric" and len(troubled) >= need:
            cause = "switch" if what == "switch" else first.cause
            p = self._raise_part(ISOLATION, first.kind, cause, self._group_scope((what, name)),
                                 first, heard, troubled, waiting, due, out)
            if what == "switch":
                self._supersede_beside(name, p, self._window(what, first), due, out)
            return
        self._decide_units(waiting, due, out)

    def _spreading(self, name: str, waiting: list[Finding], due: float) -> float | None:
        """When switch ``name``'s window, closing at ``due`` on too few nodes to call it
        failing, should wait on: its trouble is still reaching new nodes -- a second node's
        began within the last window -- so it waits one window past the newest node's first
        onset, at most _GROUP_WINDOW_S after the first onset.  None: decide now.

        A leaf down shows on every node within one sample, but a leaf's cable bundle
        reseated takes its ports down one after another over 40 s (blind8 H4: 3 of a rail
        leaf's 8 nodes in trouble when its 13.5 s window closed, 3 NIC isolations at 591.9 s
        and the switch 14 s later).  Trouble on one node alone never waits longer: a lone
        NIC fault's port down and then erring is one node.
        """
        first: dict[str, Finding] = {}
        for f in waiting:
            node = f.scope.node
            if node is not None and (node not in first or f.onset_ts < first[node].onset_ts):
                first[node] = f
        if len(first) < self.cfg.switch_min_nodes:
            return None
        newest = max(first.values(), key=lambda g: g.onset_ts)
        cap = min(g.onset_ts for g in first.values()) + _GROUP_WINDOW_S
        until = min(newest.onset_ts + self._window("switch", newest), cap)
        return until if until > due else None

    def _raise_part(self, topic: str, kind: str, cause: str, scope: Scope, first: Finding,
                    heard: set[str], troubled: set[str], held: list[tuple[str, Finding]],
                    due: float, out: list[Alert], extra: dict[str, Any] | None = None
                    ) -> Problem:
        """One alert for a shared part failing on ``troubled`` of the ``heard`` nodes behind
        it, the findings ``held`` for it its evidence; returns its problem."""
        extra = {"nodes_affected": len(troubled), "nodes_heard_from": len(heard),
                 "affected_nodes": sorted(troubled)[:16], **(extra or {})}
        summary = first._replace(scope=scope, tenant=None, job=None,
                                 severity=min(0.95, 0.5 + len(troubled) / (2 * len(heard))))
        p = self._raise(topic, kind, cause, scope, summary, out, detected_ts=due,
                        extra=extra, own=False, latched=kind == "hardware")
        p.tenant = None  # a shared part carries several tenants' work
        self._take(p, held)
        self._quiet_if_cleared(p, due)
        return p

    def _take(self, p: Problem, held: list[tuple[str, Finding]]) -> None:
        """Findings held for a shared part become ``p``'s evidence, the active ones its own."""
        for _, f in held:
            p.add(f, self.cfg.evidence_items)
            if f.active:
                self._own(f, p)

    def _above_leaf(self, name: str, first: Finding, waiting: list[tuple[str, Finding]],
                    count: tuple[set[str], set[str], int], due: float, out: list[Alert]
                    ) -> list[tuple[str, Finding]]:
        """A leaf's window closes: its trouble is a part above it (a spine) when the part is
        named already and still failing, or when the leaf fails with the part-above shape
        (_spine_shape) beside other leaves of the part doing the same (_part_above).  Returns
        what is left of ``waiting`` for the leaf's window to decide: all of it when nothing
        went to a part above; else its host links' own state -- a link down or flapping is the
        leaf's or the cable's, never a switch above it (review13 F3, F4) --, [] when none.

        Errors on a fraction of the ports of every node under four leaves were four leaf
        isolations -- four healthy switches drained -- and the spine never named (blind4 D1).
        One leaf failing alone stays the leaf's, whatever its shape (its uplinks' optics are
        the leaf's side of the link), and so do two leaves failing on all their nodes' ports
        at once: two faults overlapping.
        """
        links = [(k, f) for k, f in waiting if f.signal in _LINK_STATE]
        rest = [(k, f) for k, f in waiting if f.signal not in _LINK_STATE]
        above = self._firing_above(name, first.cluster)
        if above is not None and self._still_failing(above):
            if not rest:
                return waiting
            self._take(above, rest)
            return links
        if self._rail_above(name, first, waiting, due, out):
            return []
        heard, troubled, need = count
        if len(troubled) < need or not self.topology or not self.topology.parent_of(name):
            return waiting
        shape = self._spine_shape(name, troubled)
        if shape is None:
            return waiting
        above = self._sibling_above(name, first.cluster)
        if above is not None and self._still_failing(above):
            # A part above named from its sibling leaves, still failing: this leaf, with
            # the same shape later, is more of it (its leaves reached at different rates).
            self._join_above(above, name, (heard, troubled, shape), rest)
            self._decide_units(links, due, out)  # (one node's: _spine_shape)
            return []
        leaves = {name: (heard, troubled, shape)}
        part = self._part_above(name, leaves, first)
        if part is None:
            return waiting
        parts, failing = part
        held = list(rest)
        for k, (w, n, g) in list(self._group_wait.items()):
            if w == "switch" and n in failing and n != name:
                del self._group_wait[k]
                held.append((k, g))
        for n in failing - {name}:
            # A leaf isolated already (_fired_leaf): its trouble goes to the part above, and
            # its own problem, left with nothing active, resolves.
            fired = self._fired_leaf(n, first)
            if fired is not None:
                held.extend((g.key, g) for g in fired[0])
        links.extend((k, g) for k, g in held if g.signal in _LINK_STATE)
        self._raise_above(sorted(parts), {leaf: leaves[leaf] for leaf in sorted(failing)}, first,
                          [(k, g) for k, g in held if g.signal not in _LINK_STATE], due, out)
        self._decide_units(links, due, out)  # (one node's a leaf: _spine_shape)
        return []

    def _firing_above(self, leaf: str, cluster: str | None) -> Problem | None:
        """The firing problem of a part above ``leaf`` that took it in (_raise_above)."""
        for p in self.problems.values():
            if (p.status == "firing" and p.kind == "network" and p.cluster == cluster
                    and leaf in p.extra.get("leaves", ())):
                return p
        return None

    def _spine_shape(self, leaf: str, troubled: set[str]) -> tuple[int, int] | None:
        """(ports erring, ports) of the leaf's troubled nodes when they err on a fraction of
        their ports (at most _PARTIAL_SHARE in all, no link down or flapping); else None.

        A node's ports facing the leaf: the topology's when it names the node's NICs, else
        (a Slurm topology.conf: every NIC faces the node's leaf) the node's own count, told in
        its NIC findings' evidence (``node_ports``, detector.network).  A rail leaf faces one
        port of each node: no share to tell, never this shape.
        """
        topo = self.topology
        assert topo is not None
        named: dict[str, int] = {}
        for node, _ in topo.nics_under(leaf):
            named[node] = named.get(node, 0) + 1
        erring = total = 0
        linked: set[str] = set()
        sets: set[frozenset[str]] = set()
        nodes = 0
        for node in troubled:
            errs, ports = set(), named.get(node, 0)
            for unit in self._units_of_node.get(node, ()):
                signals = self._device.get(unit)
                if not signals or not unit.startswith("nic:") or topo.switch_of(
                        node, _nic_of(unit)) != leaf:
                    continue
                if any(s in signals for s in _LINK_STATE):
                    linked.add(node)  # a host link's own state: the leaf or the cable
                seen = signals.get("nic_errors") or signals.get("errors_seen")
                if seen is None:
                    continue
                errs.add(_nic_of(unit))
                if not named:
                    ports = max(ports, _ports_told(seen))
            if not errs:
                continue  # (trouble that cleared, or of another kind: not counted)
            if ports < 2 or len(errs) > ports:
                return None
            erring, total, nodes = erring + len(errs), total + ports, nodes + 1
            sets.add(frozenset(errs))
        if len(linked) >= self.cfg.switch_min_nodes:
            # Host links down or flapping on as many nodes as make a leaf failing: the leaf.
            # One node's is that cable's, beside a part above failing (review13 F4: a port
            # down in a spine's first window made its healthy leaf a switch isolation).
            return None
        if not total or erring > _PARTIAL_SHARE * total:
            return None
        if len(sets) == 1 and nodes >= 2:
            # The same ports erring on every node: the ports the leaf serves them with, all
            # of them -- a Slurm topology.conf names no NIC, and a DGX H100's 4 storage ports
            # made 8 erring compute ports of 12 the part-above share (review13 F5).  Flows
            # hashed over a spine's ports err on a different share of each node's ports.
            return None
        return erring, total

    def _rail_above(self, name: str, first: Finding, waiting: list[tuple[str, Finding]],
                    due: float, out: list[Alert]) -> bool:
        """A rail leaf's window closes (each node faces it with one port): its trouble is the
        part above it when, below that part, >= half the nodes heard from err on at least two
        of their ports facing its leaves, none down or flapping, across at least three of its
        leaves.  True when it went to that part.

        In a rail-optimised fabric a spine's failing ports err on the flows hashed (ECMP)
        through them: some ports of every node, each on its own rail leaf -- so each rail leaf
        may see fewer than half its nodes erring and fail alone nowhere (a spine of h100-128
        erring on 3 of every node's 8 ports was 48 NIC isolations), or, every port carrying
        flows through it, all of them (16 rail leaf isolations: review round 13).  A node
        faces no rail leaf with all its ports, so there is no leaf-shaped share to tell (a
        Slurm leaf's own failure errs on all ports of its nodes): the count says it -- a rail
        leaf's own failure errs on one port of each node, a node's own HCAs on one node, two
        rail leaves failing at once on two rails, not three.
        """
        topo = self.topology
        assert topo is not None
        pairs = topo.nics_under(name)
        ups = topo.parent_of(name)
        if not pairs or not ups or len(pairs) != len({n for n, _ in pairs}):
            return False  # (not a rail leaf: a node faces it with several ports, or none named)
        above = self._sibling_above(name, first.cluster)
        if above is not None:
            # Named already: a rail leaf with trouble on some of its nodes joins it while it
            # fails (a later rail's flows), else is decided as before.
            if not self._still_failing(above):
                return False
            nodes = {f.scope.node for _, f in waiting if f.scope.node is not None}
            under = {n for n, _ in pairs}
            self._join_above(above, name, (under | nodes, nodes, (len(nodes), len(under))),
                             waiting)
            return True
        recent = min(f.onset_ts for _, f in waiting) - _GROUP_WINDOW_S
        parts: list[str] = []
        leaves: dict[str, Any] = {}
        for up in ups:
            facing: dict[str, set[str]] = {}
            for leaf in topo.leaves_below(up):
                for node, nic in topo.nics_under(leaf):
                    facing.setdefault(node, set()).add(nic)
            heard = {n for n in facing if self.seen is None or self.seen(n, "nic")}
            erring: dict[str, set[str]] = {}
            for node, nics in facing.items():
                errs: set[str] = set()
                for unit in self._units_of_node.get(node, ()):
                    signals = self._device.get(unit)
                    if not signals or not unit.startswith("nic:") or _nic_of(unit) not in nics:
                        continue
                    if any(s in signals for s in _LINK_STATE):
                        errs = set()
                        break  # a host link's own state: the leaf or the cable, not above
                    if any(g.onset_ts >= recent for g in signals.values()
                           if g.signal in ("errors_seen", "nic_errors")):
                        errs.add(_nic_of(unit))
                if len(errs) >= 2:
                    erring[node] = errs
            by_leaf: dict[str, set[str]] = {}
            for node, errs in erring.items():
                for nic in errs:
                    at = topo.switch_of(node, nic)
                    if at is not None:
                        by_leaf.setdefault(at, set()).add(node)
            # (Three nodes at least, as three leaves: two nodes with two bad cables each on
            # a 4-node fabric are four NICs' own.)
            need = max(self.cfg.switch_min_nodes, 3,
                       math.ceil(self.cfg.switch_min_fraction * len(heard | set(erring))))
            if len(erring) >= need and len(by_leaf) >= 3:
                parts.append(up)
                for leaf, nodes in by_leaf.items():
                    under = {n for n, _ in topo.nics_under(leaf)}
                    seen = {n for n in under if self.seen is None or self.seen(n, "nic")}
                    leaves[leaf] = (seen | nodes, nodes, (len(nodes), len(under)))
        if not parts:
            return False
        held = list(waiting)
        for k, (w, n, g) in list(self._group_wait.items()):
            if w == "switch" and n in leaves and n != name:
                del self._group_wait[k]
                held.append((k, g))
        self._raise_above(sorted(parts), {leaf: leaves[leaf] for leaf in sorted(leaves)},
                          first, held, due, out)
        return True

    def _join_above(self, above: Problem, leaf: str, entry: tuple[set[str], set[str], Any],
                    waiting: list[tuple[str, Finding]]) -> None:
        """``leaf``'s trouble (``entry``: heard, troubled, shape) joins the part above it."""
        above.extra["leaves"] = sorted({*above.extra["leaves"], leaf})
        above.extra["ports_erring_per_leaf"] = {
            **above.extra.get("ports_erring_per_leaf", {}), leaf: _erring_ports(*entry)}
        self._take(above, waiting)

    def _sibling_above(self, leaf: str, cluster: str | None) -> Problem | None:
        """The firing problem of a part above that took in a leaf of the same parent as
        ``leaf`` (_raise_above), if any."""
        topo = self.topology
        assert topo is not None
        ups = set(topo.parent_of(leaf))
        for p in self.problems.values():
            taken = p.extra.get("leaves") if p.status == "firing" else None
            if taken and p.kind == "network" and p.cluster == cluster and any(
                    ups.intersection(topo.parent_of(t)) for t in taken):
                return p
        return None

    def _fired_leaf(self, leaf: str, first: Finding) -> tuple[list[Finding], Any] | None:
        """(its active findings, (heard, troubled, shape)) of a leaf isolated already as a
        switch, with the part-above shape (_spine_shape) and still failing, whose trouble
        began at most two look-backs (152 s) from ``first``'s; else None.

        A spine's leaves cross the line one after another when the flows through it reach
        them at different rates: the first leaf's window closed alone (a leaf isolation),
        and the later leaves' windows did not count it -- four leaves drained, or two, and
        the spine never named (fabric13's open shape)."""
        p = self.problems.get(self.dedup_key(ISOLATION, "network", Scope.of_switch(leaf),
                                             first.cluster))
        if (p is None or p.status != "firing" or p.cause != "switch" or "leaves" in p.extra
                or abs(first.onset_ts - p.onset_ts) > 2.0 * _GROUP_WINDOW_S
                or not self._still_failing(p)):
            return None
        active = []
        for key in p.active:
            signal, _, unit = key.partition("@")
            g = self._device.get(unit, {}).get(signal)
            if g is not None and g.scope.node is not None:
                active.append(g)
        troubled = {g.scope.node for g in active if g.scope.node is not None}
        shape = self._spine_shape(leaf, troubled)
        if shape is None:
            return None
        topo = self.topology
        assert topo is not None
        heard = troubled | {n for n in topo.nodes_under(leaf)
                            if self.seen is None or self.seen(n, "nic")}
        return active, (heard, troubled, shape)

    def _part_above(self, leaf: str, leaves: dict[str, Any], first: Finding
                    ) -> tuple[set[str], set[str]] | None:
        """(the lowest parts above ``leaf`` failing, the leaves failing under them) or None.

        ``leaves`` maps a leaf to (heard, troubled, shape) or None once looked at (filled in
        here: a leaf whose window is open and that fails with the part-above shape, or one
        isolated already with it, its trouble begun near ``first``'s: _fired_leaf).  Up from
        the leaf, tier by tier, a switch is failing when more of the leaves below it fail
        than below the tier beneath (it explains more) and at least two of its children do
        (a leaf by its shape, a switch by two of its leaves): a spine over four erring leaves;
        a core only when leaves under two of its spines err.  Switches of one tier over the
        same leaves (a fat tree's spines) cannot be told apart: all are returned.
        """
        topo = self.topology
        assert topo is not None

        def fails(s: str) -> bool:
            if s not in leaves:
                leaves[s] = None
                held = [g for w, n, g in self._group_wait.values() if w == "switch" and n == s]
                if held:
                    heard, troubled, need = self._count("switch", s, held)
                    shape = self._spine_shape(s, troubled) if len(troubled) >= need else None
                    if shape is not None:
                        leaves[s] = (heard, troubled, shape)
                else:
                    fired = self._fired_leaf(s, first)
                    if fired is not None:
                        leaves[s] = fired[1]
            return leaves[s] is not None

        parts, failing = {leaf}, {leaf}
        while True:
            up: dict[str, set[str]] = {}
            for p in {q for c in parts for q in topo.parent_of(c)}:
                below = {s for s in topo.leaves_below(p) if fails(s)}
                kids = sum(1 for c in topo.children_of(p) if (
                    fails(c) if not topo.children_of(c)
                    else sum(1 for s in topo.leaves_below(c) if fails(s)) >= 2))
                if len(below) > len(failing) and kids >= 2:
                    up[p] = below
            if not up:
                break
            parts, failing = set(up), set().union(*up.values())
        return None if parts == {leaf} else (parts, failing)

    def _raise_above(self, parts: list[str], leaves: dict[str, Any], first: Finding,
                     held: list[tuple[str, Finding]], due: float, out: list[Alert]) -> None:
        """One alert for a part above the leaves: an isolation of the one switch common to the
        erring leaves, or -- several of one tier over them (a fat tree's spines) -- an
        escalation naming them all."""
        part = parts[0] if len(parts) == 1 else compress_hostlist(parts)
        heard = set().union(*(h for h, _, _ in leaves.values()))
        troubled = set().union(*(t for _, t, _ in leaves.values()))
        erring = sum(e for _, _, (e, _) in leaves.values())
        ports = sum(n for _, _, (_, n) in leaves.values())
        where = "the one switch above them" if len(parts) == 1 else "one of the switches above"
        uplinks = compress_hostlist(sorted(leaves))
        extra: dict[str, Any] = {
            "leaves": sorted(leaves),
            "ports_erring_per_leaf": {
                leaf: _erring_ports(h, t, shape) for leaf, (h, t, shape) in leaves.items()},
            "recommended_because": (
                f"{len(leaves)} leaves under {part} fail at once, each node erring on a fraction "
                f"of its ports ({erring} of {ports}), none with a link down: flows hashed over "
                f"the leaves' uplinks err through {where}; a leaf's own failure errs on all "
                "ports of its nodes, and traffic that stays inside a leaf never crosses "
                f"{part}"),
            "next_diagnostic": (
                f"read {part}'s port counters (ibdiagnet, or the switch's telemetry: symbol "
                f"and FEC errors, discards per port) for the uplinks to {uplinks}; an NCCL "
                "all-reduce inside one leaf should run clean")}
        self._raise_part(ISOLATION if len(parts) == 1 else ESCALATION, "network", "switch",
                         Scope.of_switch(part), first, heard, troubled, held, due, out, extra)

    def _decide_units(self, held: list[tuple[str, Finding]], due: float,
                      out: list[Alert]) -> None:
        """Findings held for a part that is not failing (and no longer waiting): a node whose
        every port is down among them is one node alert, every other finding its own unit's."""
        for node, downs in self._whole_node_down(held).items():
            self._node_down(node, downs, due, out)
            gone = {id(f) for f in downs}
            held = [(k, f) for k, f in held if id(f) not in gone]
        for node, (p, errs) in self._whole_node_beside(held).items():
            gone = {id(f) for f in errs}
            if isinstance(p, str):  # (a switch erring so, its window open: decided with it)
                for k, f in held:
                    if id(f) in gone:
                        self._group_wait[k] = ("switch", p, f)
            else:
                self._stale_map(node, p, errs, due, out)
            held = [(k, f) for k, f in held if id(f) not in gone]
        for _, f in sorted(held, key=lambda kf: kf[1].ts):
            if not (f.signal == "link_down" and f.kind == "network"
                    and self._node_down_across_parts(f, due, out)):
                self._decide_alone(f, due, out)

    def _whole_node_beside(self, held: list[tuple[str, Finding]]
                           ) -> dict[str, tuple[Problem | str, list[Finding]]]:
        """Nodes whose every fabric port errs among ``held`` (one signal of a port's quality),
        begun within a switch window of a firing switch isolation erring with that signal
        in the cluster: that switch's, the node behind it whatever the topology file says.

        Eight ports of one node failing at once with one signature are never eight cables;
        while a leaf erring that way is isolated, the node most likely faces it -- re-cabled
        since the file was written (blind15 O1: pp04, listed on leaf-a, 8 NIC isolations
        beside leaf-b's).  A node with some ports erring (two bad cables) keeps its NICs'.
        A switch erring so on ``switch_min_nodes`` nodes whose window is still open (its
        nodes sampled later) is named instead: the node's findings wait in it and are decided
        with it (_group_due: its page notes the node), or alone when it is not failing.
        """
        byport: dict[tuple[str, str], dict[str, Finding]] = {}
        for _, f in held:
            if (f.kind == "network" and f.signal in _PORT_QUALITY and f.active
                    and f.scope.node is not None and f.scope.nic is not None):
                byport.setdefault((f.scope.node, f.signal), {})[f.scope.key] = f
        found: dict[str, tuple[Problem | str, list[Finding]]] = {}
        for (node, signal), ports in byport.items():
            errs = list(ports.values())
            if node in found or not (self._every_port(node, errs) or (
                    not (self.topology is not None and self.topology.nics_of(node))
                    and len(errs) >= 2 and all(_ports_told(f) == len(errs) for f in errs))):
                continue  # (no NIC names -- a Slurm file: the node's own count of its ports)
            onset = min(f.onset_ts for f in errs)
            window = max(self._window("switch", f) for f in errs)
            near = [p for p in self.problems.values() if (
                p.status == "firing" and p.kind == "network" and p.scope.level == "switch"
                and p.cluster == errs[0].cluster and abs(p.onset_ts - onset) <= window
                and any(k.startswith(f"{signal}@") for k in p.active)
                and self._still_failing(p))]
            if near:
                found[node] = (min(near, key=lambda p: abs(p.onset_ts - onset)), errs)
                continue
            stated = {self.topology.switch_of(node, f.scope.nic) for f in errs} if (
                self.topology is not None) else set()
            for what, name in sorted(self._group_open):
                others = [g for w, n, g in self._group_wait.values() if (w, n) == (what, name)
                          and g.signal == signal and g.scope.node != node
                          and g.cluster == errs[0].cluster]
                if (what == "switch" and name not in stated and others
                        and abs(min(g.onset_ts for g in others) - onset) <= window
                        and len({g.scope.node for g in others}) >= self.cfg.switch_min_nodes):
                    found[node] = (name, errs)
                    break
        return found

    def _stale_map(self, node: str, p: Problem, errs: list[Finding], due: float,
                   out: list[Alert]) -> None:
        """``node``'s every port erring beside switch isolation ``p`` (_whole_node_beside):
        more of ``p``, its page naming the node and where the topology file puts it."""
        topo = self.topology
        stated = sorted({s for f in errs if topo is not None and f.scope.nic is not None
                         for s in [topo.switch_of(node, f.scope.nic)] if s})
        for f in errs:
            p.add(f, self.cfg.evidence_items)
            self._own(f, p)
        beside = p.extra.setdefault("nodes_beside_map", [])
        if len(beside) >= _UNITS_TOLD or any(b.get("node") == node for b in beside):
            self._repage(p, out)
            return
        beside.append({"node": node, "ports": len(errs), "stated_switch": (
                ", ".join(stated) or None), "why": (
                f"all {len(errs)} ports of {node} err with this switch's signature from the "
                "same moment; the topology file puts it elsewhere: most likely it faces this "
                "switch (the file is stale -- check its cabling)")})
        if any(a.dedup_key == p.key and a.status == "firing" for a in out):
            self._repage(p, out)
        else:  # (re-sent, as a GPU found slow under a firing escalation is: _slow_due)
            out.append(self._alert(p, due))

    def _node_down_across_parts(self, f: Finding, due: float, out: list[Alert]) -> bool:
        """A link down decided alone whose node has every port down, each held for (or
        decided beside) a part of its own: the node's event.  True when ``f`` went to it.

        In a rail-optimised fabric (DGX SuperPOD, topologies/h100-*.topo) each of a node's
        ports faces its own rail leaf, so its ports' link downs wait in as many windows and
        _whole_node_down, which looks within one, never sees them together (review round 9,
        R9: 8 NIC isolations for one node's NIC driver).  Taken from the node's link downs
        waiting for a part that is not failing (cleared in its window or not: a one-sample
        NIC firmware reset, review round 10): a rail leaf that is failing keeps its own (one
        rail leaf down is one port of many nodes, a switch; two at once, two of each node's
        ports: never every port of a node with more than two).
        """
        node = f.scope.node
        if node is None:
            return False
        node_scope = Scope.of_node(node)
        p = self.problems.get(self.dedup_key(ISOLATION, "network", node_scope, f.cluster))
        if p is not None and p.status == "firing" and p.active:
            # The node's event is firing: a port of it going down too is more of it.
            p.add(f, self.cfg.evidence_items)
            if f.active:
                self._own(f, p)
            return True
        downs = {f.scope.key: f}
        waiting: list[str] = []
        failing: dict[tuple[str, str], bool] = {}
        for k, (what, name, g) in self._group_wait.items():
            if (g.scope.node == node and g.signal == "link_down" and g.kind == "network"
                    and g.scope.key not in downs):  # (cleared in its window too: it happened)
                part = (what, name)
                if part not in failing:
                    # (as far as its nodes sampled since can tell: a unit's rail leaves losing
                    # power together open their windows within a second or two -- review
                    # round 10, 3 nodes drained beside 8 switch alerts)
                    failing[part] = self._may_be_failing(what, name, [
                        h for w, n, h in self._group_wait.values() if (w, n) == part],
                        due) is not None
                if not failing[part]:
                    downs[g.scope.key] = g
                    waiting.append(k)
        # (Only ports that went down together, waiting now: one down long before, with its
        # own NIC alert, stays that cable's -- review round 10.)
        found = list(downs.values())
        if not self._every_port(node, found):
            return False
        for k in waiting:
            del self._group_wait[k]
        self._node_down(node, found, due, out)
        return True

    def _decide_alone(self, f: Finding, due: float, out: list[Alert]) -> None:
        """A finding held for its shared part, which is not failing: its own unit's problem."""
        if f.scope.key in self._device or not f.active:
            cause = "nic" if f.kind == "network" else f.cause
            p = self._raise(ISOLATION, f.kind, cause, f.scope, f, out, detected_ts=due,
                            latched=f.kind == "hardware", own=f.active)
            self._explain_waiting(f.scope, p, out)
            self._quiet_if_cleared(p, due)

    def _quiet_if_cleared(self, p: Problem, ts: float) -> None:
        """A problem raised from trouble that had already cleared starts its quiet time."""
        if not p.active and not p.latched and p.status == "firing" and p.quiet_since == math.inf:
            self._schedule_resolve(p, ts)

    def _fabric_escalation(self, first: Finding, waiting: list[tuple[str, Finding]],
                           heard: set[str], troubled: set[str], due: float,
                           out: list[Alert]) -> None:
        """NIC trouble on many nodes at once and no topology to name the part: one page."""
        nodes = sorted(troubled)
        scope = self._group_scope(("fabric", ""))
        listed = f"{', '.join(nodes[:8])}{' ...' if len(nodes) > 8 else ''}"
        extra = {"nodes_affected": len(nodes), "nodes_heard_from": len(heard),
                 "affected_nodes": nodes[:16],
                 "why_escalated": (f"network trouble on {len(nodes)} nodes at once: a shared "
                                   "part (switch, cable bundle, fabric manager) is likely; no "
                                   "topology to attribute it"),
                 "next_diagnostic": (f"check the switches and fabric manager serving {listed}"
                                     "; give faultline a topology to name the part")}
        rails: dict[str, set[str]] = {}
        for _, f in waiting:
            if f.scope.nic is not None and f.scope.node in troubled:
                rails.setdefault(f.scope.nic, set()).add(f.scope.node)
        nic, on = max(rails.items(), key=lambda kv: (len(kv[1]), kv[0]), default=("", set()))
        if 2 * len(on) > len(nodes):
            # Most of them in trouble on the same port name: one rail's switch (review round
            # 12, F2) -- its ports to those nodes, not each node's NIC.
            extra["rail"] = f"{nic} on {len(on)} of {len(heard)} nodes"
            extra["why_escalated"] = (
                f"{nic} in trouble on {len(on)} of the {len(heard)} nodes heard from at once: "
                "in a rail-optimised fabric one switch takes that port of every node (its "
                "firmware, port configuration or power); no topology to name it")
            extra["next_diagnostic"] = (
                f"check the switch ports facing {nic} of {listed} (the rail's leaf: "
                "ibdiagnet, or the switch's port rates and counters); give faultline a "
                "topology to name the switch")
        summary = first._replace(scope=scope, tenant=None, job=None,
                                 severity=min(0.95, 0.5 + len(nodes) / (2 * max(len(heard), 1))))
        p = self._raise(ESCALATION, "network", "unknown", scope, summary, out, detected_ts=due,
                        extra=extra, own=False)
        p.tenant = None  # a shared part carries several tenants' work
        for _, f in waiting:
            p.add(f, self.cfg.evidence_items)
            self._own(f, p)


def _erring_ports(heard: set[str], troubled: set[str], shape: tuple[int, int]) -> str:
    """A leaf's share of erring ports under a part above it (the evidence, per leaf)."""
    return f"{shape[0]} of {shape[1]} ports of {len(troubled)} of {len(heard)} nodes"


def _interval(f: Finding) -> float:
    """How often ``f``'s unit is sampled (0.0: not known), as far as a shared part's window
    waits for it (:data:`_GROUP_INTERVAL_CAP_S`)."""
    return min(f.evidence.get("sample_interval_s", 0.0), _GROUP_INTERVAL_CAP_S)


def _nic_of(unit: str) -> str:
    """The NIC name of a ``nic:NODE/NIC[:PORT]`` unit key."""
    return unit.split("/", 1)[1].split(":", 1)[0]


def _told_ports(told: dict[str, int], node: str, findings: Iterable[Finding]) -> None:
    """The most ports ``node``'s NIC monitor told it has (``node_ports``) in ``findings``."""
    for g in findings:
        n = _ports_told(g)
        if n > told.get(node, 0):
            told[node] = n


def _ports_told(g: Finding) -> int:
    """The ports ``g``'s node has by its NIC monitor (``node_ports``, detector.network): 0
    when not told, or when it is no count of a node's ports (a bool, more than
    :data:`_MAX_TOLD_PORTS`: the findings topic is untrusted input)."""
    n = g.evidence.get("node_ports")
    return n if type(n) is int and 0 < n <= _MAX_TOLD_PORTS else 0
