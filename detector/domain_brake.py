"""A power or thermal brake on most trays of one NVLink domain at once: the domain's fault.

A GB200 NVL72 rack is fed by power shelves in the rack and cooled by one CDU; when the shelves
lose supplies below the rack's load, the rack's power management asserts the power brake
(DCGM clock-event reasons 0x80 HW power brake and 0x8 HW slowdown) on *every* GPU of the rack
at the same instants -- and a failing CDU heats every tray of it together.  Seen tray by
tray, that is one node isolation per tray whose three samples in a row happened to fall in a
burst of the brake: 3-15 ``drain_node`` pages a rack, none of them the fault (blind12 B1).

The rule (:func:`widen`, called by ``Correlator._raise`` for every power or heat isolation
it is about to raise on a node or a GPU): when the topology puts the node in an NVLink domain
(the project format's ``Domain=``, a Slurm ``topology/block`` ``BlockName=``) and *most* of
the domain's nodes heard from showed a node-wide never-routine throttle (every GPU of the
node braking: detector.thermal's node-scope ``throttle`` / ``throttle_seen``) since one
sampling interval before the isolation's run began, the domain is the unit: one isolation at
``domain`` scope, cause kept, the braking nodes its evidence, and the node or GPU isolations
of the same cause already open in it resolved as superseded by it.

Why "most", and why over the run: a shelf feeds the whole rack, so a rack-level brake is on
all its trays at once; the samples show it only where a tray's collector sampled inside a
burst, at its own phase.  The node whose verdict is being raised was braked for its whole run
(``throttle_samples`` samples in a row); over that run and one interval before it every tray
of the domain was sampled two or three times, so under a rack's brake on a share ``d`` of the
time a share 1 - (1 - d)^2 or more of them show it -- at the first verdict, the brake only as
old as that run: 28 % of the trays at d = 0.15 (3 s bursts every 20 s), 58 % at 0.35 (blind12
B1: 13 of 18 trays at its first tray's verdict, the brake on 36 % of samples).  So the domain
is the unit when ``MIN_SHARE`` (a third) of its nodes heard from, and at least ``MIN_NODES``
(3), brake together.  A tray's own brake (its PSU or board: blind2's tray) is rare -- a few a
rack-year --, so three trays of one rack starting theirs within one verdict's run by chance is
not a case to plan for; two trays of eighteen braking are two trays' own: two node
isolations, as before.
Once the domain's isolation is firing, a tray braking with at least ``switch_min_nodes``
trays of the domain (itself among them) is more of that incident and joins it.

Without a domain in the topology nothing changes: DESIGN has no rack scope (a rack of HGX
nodes cooled by one row is one label per node: blind3), and no unit to widen to.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from detector.alerts import ISOLATION, Scope
from detector.findings import Finding

if TYPE_CHECKING:
    from detector.correlate import Correlator

# Clock-event reasons that are never routine (DESIGN: 0x8 HW slowdown, 0x20 SW thermal,
# 0x40 HW thermal, 0x80 HW power brake); 0x4 (SW power cap) is power management.
NEVER_ROUTINE = 0x8 | 0x20 | 0x40 | 0x80
_CAUSES = ("power", "thermal")
_THROTTLE_SIGNALS = ("throttle", "throttle_seen")
DOMAIN_NAMED = 16  # braking nodes named in the domain isolation's evidence
# How many of a domain's nodes heard from braking together make the domain the unit: at least
# MIN_NODES and MIN_SHARE of them (module docstring).
MIN_NODES = 3
MIN_SHARE = 1 / 3


def _never_routine(f: Finding) -> bool:
    try:
        bits = int(str(f.evidence.get("throttle_reasons", "0x0")), 16)
    except ValueError:
        return False
    return bool(bits & NEVER_ROUTINE)


def braking(corr: Correlator, domain: str, since: float
            ) -> tuple[set[str], set[str], float]:
    """(the domain's nodes heard from on thermal telemetry, those of them whose every GPU --
    or, for heat, several -- showed a never-routine throttle at node scope at any time since
    ``since``: active now, or let go at or after ``since``; the earliest onset of those runs,
    ``since`` at the earliest)."""
    topo = corr.topology
    assert topo is not None
    heard, braked = set(), set()
    first = math.inf
    for node in topo.nodes_in_domain(domain):
        if corr.seen is None or corr.seen(node, "thermal"):
            heard.add(node)
        key = Scope.of_node(node).key
        runs = [g for s, g in corr._device.get(key, {}).items()
                if s in _THROTTLE_SIGNALS and _never_routine(g)]
        gone, ended = corr._throttled.get(key, (None, -math.inf))
        if gone is not None and ended >= since and gone.signal in _THROTTLE_SIGNALS and (
                _never_routine(gone)):
            runs.append(gone)
        if runs:
            braked.add(node)
            first = min(first, *(g.onset_ts for g in runs))
    return heard | braked, braked, max(first, since)


def _need(corr: Correlator, heard: set[str], open_: bool) -> int:
    """Nodes braking together that make the domain the unit (module docstring); once its
    isolation is firing, ``switch_min_nodes``: a tray braking with another is more of it."""
    if open_:
        return corr.cfg.switch_min_nodes
    return max(MIN_NODES, math.ceil(MIN_SHARE * len(heard)))


def _open(corr: Correlator, domain: str, cluster: str | None):
    p = corr.problems.get(corr.dedup_key(ISOLATION, "slow_node", Scope.of_domain(domain),
                                         cluster))
    return p if p is not None and p.status == "firing" else None


def _interval(corr: Correlator, node: str) -> float:
    return corr._interval.get(node, (0.0, 0.0))[0] or corr.cfg.unknown_cadence_s


def on_seen(corr: Correlator, f: Finding, out: list) -> None:
    """A node-wide never-routine throttle seen on one sample (``throttle_seen`` at node scope):
    the domain's isolation at once when the domain's brake is sustained -- a third of its nodes
    (:func:`_need`) braking within the last ``throttle_samples`` sampling intervals, its
    samples spanning ``throttle_samples - 1`` intervals (the span a node's own verdict takes:
    that many samples in a row) -- without waiting for one tray's samples to fall in the
    brake ``throttle_samples`` times in a row (blind12 B1: 74-222 s after the brake began);
    a node's brake seen while the domain's isolation is firing, with another node of it
    braking, is more of it (its evidence; the isolation resolves when the domain has been
    quiet)."""
    topo = corr.topology
    node = f.scope.node
    if (topo is None or not f.active or f.scope.level != "node" or node is None
            or f.kind != "slow_node" or f.cause not in _CAUSES or not _never_routine(f)):
        return
    domain = topo.domain_of(node)
    if domain is None:
        return
    interval = _interval(corr, node)
    samples = corr.cfg.throttle_samples
    since = f.ts - (samples * interval + 1.0)
    heard, braked, first = braking(corr, domain, since)
    p = _open(corr, domain, f.cluster)
    if len(braked) < _need(corr, heard, p is not None):
        return
    if p is not None:
        p.add(f, corr.cfg.evidence_items)
        corr._own(f, p)
        return
    if f.ts - first < (samples - 1) * interval:
        return
    corr._raise_domain((Scope.of_domain(domain), _said(f.cause, domain, braked, heard,
                                                         f.ts - first)),
                       ISOLATION, "slow_node", f.cause, f, out, detected_ts=None, own=True)


def _said(cause: str, domain: str, braked: set[str], heard: set[str], span: float
          ) -> dict[str, Any]:
    """The domain isolation's evidence: the nodes braking, and why the domain is the unit."""
    what = "power brake" if cause == "power" else "thermal throttling"
    named = sorted(braked)[:DOMAIN_NAMED]
    where = (f"never-routine {what} on {len(braked)} of the {len(heard)} nodes of NVLink "
             f"domain {domain} heard from within {span:.0f} s ({', '.join(named[:8])}"
             f"{' ...' if len(braked) > 8 else ''})")
    return {
        "nodes_affected": len(braked), "nodes_heard_from": len(heard), "affected_nodes": named,
        "recommended_because": (
            f"{where}: one cause the domain shares -- its power shelves or rack power "
            "controller" if cause == "power" else
            f"{where}: the rack's cooling (its CDU, coolant flow or inlet), not each tray's"),
    }


def widen(corr: Correlator, topic: str, kind: str, cause: str, scope: Scope, f: Finding
          ) -> tuple[Scope, dict[str, Any]] | None:
    """The domain isolation a power or heat isolation about to be raised on ``scope`` (a node
    or a GPU) belongs to, with its evidence; None when it is the unit's own."""
    topo = corr.topology
    if (topo is None or topic != ISOLATION or kind != "slow_node" or cause not in _CAUSES
            or scope.level not in ("node", "gpu") or scope.node is None
            or not _never_routine(f)):
        return None
    domain = topo.domain_of(scope.node)
    if domain is None:
        return None
    since = min(f.onset_ts, f.ts) - (1.25 * _interval(corr, scope.node) + 1.0)
    heard, braked, first = braking(corr, domain, since)
    braked.add(scope.node)
    heard.add(scope.node)
    if len(braked) < _need(corr, heard, _open(corr, domain, f.cluster) is not None):
        return None
    return Scope.of_domain(domain), _said(cause, domain, braked, heard, f.ts - first)
