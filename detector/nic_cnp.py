"""A NIC that drains slower than its siblings: its CNPs against its peers', its job waiting on it.

A RoCE receiver that cannot drain its queue at line rate -- a NIC behind PCIe x8 in an x16
slot, a riser trained lower, a host memory path starved -- shows no error and carries as many
bytes as its siblings (NCCL splits a collective over the rails alike: the slow rail finishes
last, it does not carry less), with its link up at full rate.  What names it: the leaf's queue
towards it fills and ECN-marks, so it *sends* CNPs far above its node's other ports, and the
ports that send to it -- its job's ports on the other nodes -- *handle* them (their sends
rate-limited) far above their own siblings; the job's collectives finish at its pace from its
first step (blind20 X1: ~1,500-5,000 CNPs/s sent against <= 30 on every other port, its
rail-mates handling ~1,500/s and waiting, the reduce x1.3-1.6).  A port that was never calm
has no past of its own to stand above (the ``congested`` rule's running mean, detector.network),
so its peers decide: detector.network tells ``cnp_sent`` / ``cnp_handled`` per port against
its node's other busy ports of its family; here they are joined.

A NIC isolation (network/nic) when, ``switch_window_s`` (or its sampling's window) after a
port's ``cnp_sent``, still told:

- a job has ranks on its node (its traffic is the job's: an idle node's or a storage
  transfer's CNPs wait on no job), and
- a port on another node of that job handles CNPs far above its own siblings (``cnp_handled``):
  the job's ranks there wait to send to it -- the job waiting on that node's communication, and
- fewer than ``MAX_NODES`` nodes of its cluster send CNPs far above their siblings at once (more
  is the fabric's: an incast pattern, a congested part -- a leaf or spine congested raises every
  port of a node alike, which stands out of nothing, and is detector.part_window's).

Silent: DCQCN's everyday marks (every port a little), a leaf or fabric congested or another
tenant's traffic (every port of the node up together), a receiver of an incast (it carries more
bytes than its siblings: detector.network's ``nic_cnp_bytes_ratio``), a checkpoint or storage
burst (its senders are no job's ports), an idle NIC (not busy: never judged).  It resolves
``flap_window_s`` after the port's ``cnp_sent`` clears.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from detector.alerts import ISOLATION, Scope
from detector.findings import Finding

if TYPE_CHECKING:
    from detector.alerts import Alert
    from detector.correlate import Correlator

SIGNALS = frozenset({"cnp_sent", "cnp_handled"})
# Ports' told findings kept (the oldest dropped first): a fleet's worth of bad ports.
MAX_KEPT = 4096
# Nodes of one cluster sending CNPs far above their siblings at once that are no NIC's each.
MAX_NODES = 3
_MATES_TOLD = 8  # ports handling named in a page


def on_finding(corr: Correlator, f: Finding, out: list[Alert]) -> None:
    """A port's ``cnp_sent`` or ``cnp_handled`` changed (detector.network)."""
    if f.scope.level != "nic" or f.scope.node is None:
        return
    kept = corr._cnp
    key = f.key
    kept.pop(key, None)
    if not f.active:
        if f.signal == "cnp_sent":
            corr._cleared(f, out)
        return
    if len(kept) >= MAX_KEPT:
        del kept[next(iter(kept))]
    kept[key] = f
    if f.signal == "cnp_sent":
        corr._timer(f.ts + corr._window("switch", f), "cnp", key)
        return
    told: _Told | None = None  # (read once for all its senders: _judge changes no kept one)
    for g in list(kept.values()):  # a port handling: a sender waited for may page now
        if g.signal == "cnp_sent" and g.cluster == f.cluster \
                and f.ts >= g.ts + corr._window("switch", g):
            if told is None:
                told = _told(corr, f.cluster)
            _judge(corr, g, f.ts, out, told)


def on_due(corr: Correlator, key: str, due: float, out: list[Alert]) -> None:
    """A sender's window closed (the correlator's ``cnp`` timer)."""
    g = corr._cnp.get(key)
    if g is not None:
        _judge(corr, g, due, out)


# The nodes of a cluster whose ports send CNPs far above their siblings, and its ports handling
# CNPs far above theirs with their nodes, in the kept order (:func:`_told`).
_Told = tuple[set[str], list[tuple[str, str, Finding]]]


def _told(corr: Correlator, cluster: str | None) -> _Told:
    """The kept ports' findings of ``cluster`` that :func:`_judge` weighs, read once."""
    senders: set[str] = set()
    handling: list[tuple[str, str, Finding]] = []
    for key, h in corr._cnp.items():
        if h.cluster == cluster:
            if h.signal == "cnp_sent":
                senders.add(h.scope.node)  # type: ignore[arg-type]
            elif h.signal == "cnp_handled":
                handling.append((h.scope.node, key, h))  # type: ignore[arg-type]
    return senders, handling


def _judge(corr: Correlator, g: Finding, now: float, out: list[Alert],
           told: _Told | None = None) -> None:
    """Page sender ``g``'s NIC if its job waits on it (the module's rules).  ``told``: the
    cluster's kept findings (:func:`_told`), when the caller has read them."""
    node = g.scope.node
    assert node is not None
    p = corr.problems.get(corr.dedup_key(ISOLATION, "network", g.scope, g.cluster))
    if p is not None and p.status == "firing":
        return
    placement = corr._placement
    jobs = sorted({job for job, _ in placement.on_node.get(node, {})})
    if not jobs:
        return  # no job on the node: nobody waits on it
    senders, handling = _told(corr, g.cluster) if told is None else told
    if len(senders) >= MAX_NODES:
        return  # many nodes at once: the fabric's pattern, no NIC's
    topo = corr.topology
    leaf = topo.switch_of(node, g.scope.nic) if topo is not None else None
    if leaf and (corr._firing_above(leaf, g.cluster) is not None
                 or corr._firing_on(Scope.of_switch(leaf), "network")
                 or ("switch", leaf) in corr._group_open):
        # Its leaf failing (its window open, or isolated): the part's decision.  (Not its
        # leaf "congested" by detector.part_window's count: the ports waiting on this NIC are
        # congested by their own running mean, and in a small fabric they are half its leaf.)
        return
    by_key: dict[str, Finding] = {}  # (kept once each, in the order first found)
    waiting: list[str] = []
    for job in jobs:
        nodes = {n for n, _, _ in placement.ranks.get(job, {}).values()} - {node}
        found = False
        for n, key, h in handling:
            if n in nodes:
                found = True
                by_key.setdefault(key, h)
        if found:
            waiting.append(job)
    if not by_key:
        return  # no port of its job handles its CNPs: nobody waits on it
    mates = sorted(by_key.values(), key=lambda h: h.scope.key)
    ev = g.evidence
    sent, peer = ev.get("cnps_per_s"), ev.get("peers_median_cnps_per_s")
    named = ", ".join(f"{h.scope.node}:{h.scope.nic} ({h.evidence.get('cnps_per_s')}/s)"
                      for h in mates[:_MATES_TOLD])
    extra: dict[str, Any] = {
        "recommended_because": (
            f"{g.scope.nic} on {node} sends {sent} CNPs/s against a median {peer}/s of its "
            f"node's {ev.get('peers')} other busy ports, at its siblings' bytes "
            f"({ev.get('gbps')} against {ev.get('peers_median_gbps')} Gb/s) and its link up "
            f"at {ev.get('rate_gbps')} Gb/s: the queue towards it fills, it drains slower than "
            f"they do; the ports of {', '.join(waiting[:4])} on other nodes that send to it "
            f"handle CNPs far above their siblings: {named} -- the job waits on it"),
        "jobs_waiting": waiting[:8],
        "ports_handling": [h.scope.key for h in mates[:_MATES_TOLD]],
        "next_diagnostic": (
            f"`lspci -vv` on {node}'s {g.scope.nic}: LnkSta width and speed against LnkCap "
            f"(a NIC trained at PCIe x8), `mlxlink`/`ethtool -S` for its rx discards and pause "
            f"frames; then ib_write_bw between {node}:{g.scope.nic} and a peer on its leaf")}
    p = corr._raise(ISOLATION, "network", "nic", g.scope, g._replace(job=g.job or waiting[0]),
                    out, detected_ts=now, extra=extra)
    for h in mates[:2]:
        p.add(h, corr.cfg.evidence_items)


def prune(corr: Correlator, idle: float, now: float) -> None:
    """Forget the told CNPs of ports whose node's NIC monitors are gone (told before ``idle``,
    or stamped more than ``now - idle`` ahead of ``now``: a port told from a clock far ahead
    was never forgotten -- review30; findings come on a change only, so their age says
    nothing while the node reports)."""
    seen = corr.seen
    if seen is None:
        return  # (bounded by MAX_KEPT)
    ahead = now + (now - idle)
    for key in [k for k, f in corr._cnp.items()
                if not idle <= f.ts <= ahead and not seen(f.scope.node or "", "nic")]:
        del corr._cnp[key]


def check_restored(corr: Any) -> bool:
    """Whether a restored correlator's ``_cnp`` map has the shape this module reads: finding
    key -> a NIC-scope Finding of finite times (at most MAX_KEPT)."""
    kept = getattr(corr, "_cnp", None)
    return type(kept) is dict and len(kept) <= MAX_KEPT and all(
        type(k) is str and type(f) is Finding and type(f.scope) is Scope
        and f.scope.level == "nic" and type(f.scope.node) is str
        and type(f.evidence) is dict and f.signal in SIGNALS
        and all(type(t) in (float, int) and math.isfinite(t) for t in (f.ts, f.onset_ts))
        and (f.cluster is None or type(f.cluster) is str)
        for k, f in kept.items())
