"""Which pages the hold applies to: those the detector may take back within seconds.

Storm control (:mod:`detector.pager.storm`) holds a firing alert ``hold_s`` before it
groups and sends it; a resolve inside the hold drops both, and nobody is paged.  The
correlator resolves a page shortly after it fired in a few ways, each naming why in the
resolved message's evidence (``bench/withdrawn.py`` counts them): a finer page
superseded by the coarser unit (``superseded_by``), a node's power page withdrawn when its
site's cap shows (``resolved_because``: "withdrawn: SW power caps ..."), a NIC page
withdrawn when its rail retrains (``withdrawn``).

A hardware event is a fact the moment it is seen -- an XID, an uncorrectable ECC error, a
link gone down, a checksum that disagrees -- and DESIGN.md wants it told within a second:
its page is never held (storm control's grouping still applies).  A page is a hardware
event's when its kind is ``hardware`` or ``sdc``, or when its evidence names one of
:data:`HARDWARE_SIGNALS`.

>>> from detector.pager.testing import alert
>>> held(alert("node-1", kind="slow_node", cause="power", level="node",
...            evidence={"signals": [{"signal": "slow_rank"}]}))
True
>>> held(alert("node-1", evidence={"signals": [{"signal": "link_down"}]}))
False
>>> held(alert("node-1", kind="hardware", cause="gpu_memory", level="gpu",
...            evidence={"signals": [{"signal": "sbe_burst"}]}))
False
"""

from __future__ import annotations

from detector.alerts import FiredAlert

#: Kinds whose every page is a hardware event's.
HARDWARE_KINDS = frozenset({"hardware", "sdc"})
#: Signals of hardware events (DESIGN.md's detection-latency row: XID, DBE, link down), and
#: of the same events' other faces: a flapping link, a row remap, an XID 154 recovery action.
HARDWARE_SIGNALS = frozenset({"xid", "dbe", "link_down", "link_flap", "row_remap_failure",
                              "row_remap_pending", "recovery_action", "checksum_mismatch"})


def signals(a: FiredAlert) -> set[str]:
    """The signal names in the alert's evidence (``evidence.signals[].signal``)."""
    ev = a.evidence if isinstance(a.evidence, dict) else {}
    items = ev.get("signals")
    if not isinstance(items, list):
        return set()
    return {s["signal"] for s in items if isinstance(s, dict) and isinstance(s.get("signal"), str)}


def held(a: FiredAlert) -> bool:
    """Whether a firing alert waits out the hold (False: a hardware event's, sent at once)."""
    return a.kind not in HARDWARE_KINDS and not (signals(a) & HARDWARE_SIGNALS)
