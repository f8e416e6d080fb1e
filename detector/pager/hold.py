"""Which pages the hold applies to: only those the detector may take back within seconds.

Storm control (:mod:`detector.pager.storm`) holds a firing alert ``hold_s`` before it
groups and sends it; a resolve inside the hold drops both, and nobody is paged.  The
correlator resolves a page shortly after it fired on three paths only (the callers of
``Correlator._resolve_now``), each naming why in the resolved message's evidence
(``bench/withdrawn.py`` counts them).  The hold is an allow-list of those pages
(:data:`WITHDRAWABLE`); every other page goes out at once (revA34 F2: a node gone dark, a
hung job, a GPU gone missing were held 20 s, and nothing takes them back):

- ``superseded_by`` (``Correlator._superseded``): a finer page a coarser unit replaces --
  a GPU's or a node's slow_node escalation (the GPU's or node's isolation, the node's
  or replica's escalation takes it over), and a node's or GPU's power/thermal isolation
  a domain's page takes over;
- ``resolved_because`` (``Correlator._withdraw_for_site``): a node's power page
  (isolation slow_node/power at the node) withdrawn when its site's cap shows;
- ``withdrawn`` (``PartWindows._retake_retrain``): a NIC page (isolation network/nic at
  the NIC) withdrawn when its rail retrains.

A hardware event is a fact the moment it is seen -- an XID, an uncorrectable ECC error, a
link gone down, a checksum that disagrees -- and DESIGN.md wants it told within a second:
its page is never held, whatever its shape (storm control's grouping still applies).  A
page is a hardware event's when its kind is ``hardware`` or ``sdc``, or when its evidence
names one of :data:`HARDWARE_SIGNALS` (a link down decided beside a failing switch is
superseded too, but is a hardware event's: never held).

>>> from detector.pager.testing import alert
>>> held(alert("node-1", kind="slow_node", cause="power", level="node",
...            evidence={"signals": [{"signal": "slow_rank"}]}))
True
>>> held(alert("node-1", evidence={"signals": [{"signal": "link_down"}]}))
False
>>> held(alert("node-1", topic="alerts.escalation", kind="unattributed", cause="unknown",
...            level="node", evidence={"signals": [{"signal": "silent"}]}))
False
"""

from __future__ import annotations

from detector.alerts import ESCALATION, ISOLATION, FiredAlert

#: Kinds whose every page is a hardware event's.
HARDWARE_KINDS = frozenset({"hardware", "sdc"})
#: Signals of hardware events (DESIGN.md's detection-latency row: XID, DBE, link down), and
#: of the same events' other faces: a flapping link, a row remap, an XID 154 recovery action.
HARDWARE_SIGNALS = frozenset({"xid", "dbe", "link_down", "link_flap", "row_remap_failure",
                              "row_remap_pending", "recovery_action", "checksum_mismatch"})
#: (topic, kind, cause or None for any, scope levels): the pages a withdrawal path may
#: resolve within seconds of their firing (the module doc names each path).
WITHDRAWABLE: tuple[tuple[str, str, str | None, frozenset[str]], ...] = (
    (ESCALATION, "slow_node", None, frozenset({"gpu", "node"})),      # superseded_by
    (ISOLATION, "slow_node", "power", frozenset({"gpu", "node"})),    # site cap / domain
    (ISOLATION, "slow_node", "thermal", frozenset({"gpu", "node"})),  # a domain's heat
    (ISOLATION, "network", "nic", frozenset({"nic"})),                # a rail's retrain
)


def signals(a: FiredAlert) -> set[str]:
    """The signal names in the alert's evidence (``evidence.signals[].signal``)."""
    ev = a.evidence if isinstance(a.evidence, dict) else {}
    items = ev.get("signals")
    if not isinstance(items, list):
        return set()
    return {s["signal"] for s in items if isinstance(s, dict) and isinstance(s.get("signal"), str)}


def withdrawable(a: FiredAlert) -> bool:
    """Whether a withdrawal path of the detector may take this page back (:data:`WITHDRAWABLE`)."""
    return any(a.topic == topic and a.kind == kind and (cause is None or a.cause == cause)
               and a.scope.level in levels for topic, kind, cause, levels in WITHDRAWABLE)


def held(a: FiredAlert) -> bool:
    """Whether a firing alert waits out the hold: one the detector may take back, and not a
    hardware event's (False: sent at once, through its group)."""
    return (withdrawable(a) and a.kind not in HARDWARE_KINDS
            and not (signals(a) & HARDWARE_SIGNALS))
