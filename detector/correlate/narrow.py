"""A node's slow page narrowed to its one GPU still slow once its other ranks are back at their
pace (moe34's open shape (a), issue 10).

host33's node rule (:meth:`Correlator._slow_due`, ``_found_alike``) pages a slow rank at its
node when its node's ranks were slow alike with it when it was found: a host fault slows its
node's ranks together.  Two mates slowed for a few steps by a blip of their own as one GPU's
fault begins read the same at that first decision, and the node page stayed open for good
after they were back at their pace (tests/test_moe34.py: +8 % for 8 steps as GPU 3's +8 % for
good began): the GPU that was slow was never named.

The steps say when the slowness left is one GPU's: detector.steps' JobMonitor tells a rank
found with its node's others again, once per run, with ``alone_on_node``, when each of its
node's other ranks is back at its pace and it is slow on each of the same latest steps, its
place not slow on other nodes (detector.steps.alone).  A firing node escalation (slow_node)
that stands on that rank's finding alone -- no other finding active on it, not latched -- is
superseded by an escalation of the GPU (evidence ``narrowed_from``: the node, and why),
resolved at once pointing at it (:meth:`Correlator._superseded`, as an isolation supersedes
the escalations it explains): one incident, its unit told once more, never narrowed back.
The node's page was sent long before (the pager's hold, detector.pager.hold, lets a
``superseded_by`` resolve inside its 20 s drop both): its resolve is news.

Round 35's prototype narrowed from findings alone (a wait of ``resolve_after_s`` after the
last mate's finding cleared) and named a healthy GPU in 3 of 72 probe runs: an MoE expert's
GPU found with a host fault, its alarm lingering after its slowness ended -- the correlator
cannot tell a rank still slow from a lingering alarm; the steps can.

A node's ``software`` isolation (a clock held by a setting: reset_clocks) narrows so too once
its rank's GPU is busy at its job's clock again (:func:`_clock_back`): the setting reset, what
is still slow is no setting's -- escalated at the GPU, ``unknown`` (revA40 F4, esc41).

Not narrowed: a page standing on findings of more than one unit (its other ranks' findings
not cleared here), latched, a replica's or a GPU's, another isolation (power, heat: a cause's),
a software page whose GPU's clock is still held.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from detector.alerts import ESCALATION, ISOLATION, Alert
from detector.findings import Finding
from detector.playbook import next_diagnostic

if TYPE_CHECKING:
    from detector.correlate.common import Problem


def _narrow_node_page(self, f: Finding, out: list[Alert]) -> None:
    """Slow rank ``f``, told slow alone on its node now (``alone_on_node``, detector.steps):
    narrow the node escalation it stands on alone to its GPU (see the module's docstring),
    or the node's clock-setting isolation whose clocks are back (:func:`_clock_back`);
    nothing else when there is none."""
    p: Problem | None = self.problems.get(self._owner.get(f.key, ""))
    if (p is None or p.kind != "slow_node" or p.status != "firing"
            or p.scope.level != "node" or p.scope.node != f.scope.node or p.latched
            or p.active != {f.key} or f.scope.level != "gpu"):
        return
    mates = f.evidence.get("alone_on_node")
    others = f"{mates} other ranks" if type(mates) is int else "other ranks"
    because = (f"its node's {others} of job {f.job} back at their pace, {f.scope.key}'s "
               "rank slow on each of the same steps")
    if p.topic == ESCALATION:
        cause, ruled_out = p.cause, list(p.extra.get("ruled_out", []))
    elif (back := _clock_back(self, p, f)) is not None:
        cause, ruled_out = "unknown", self._ruled_out(f)
        because = f"{because}, {back}"
        p.extra["clocks_back"] = back
    else:
        return
    extra = {"narrowed_from": p.scope.key, "narrowed_because": because,
             "ruled_out": ruled_out, "next_diagnostic": next_diagnostic("slow_node", f.scope)}
    q = self._raise(ESCALATION, "slow_node", cause, f.scope, f, out, detected_ts=f.ts,
                    extra=extra)
    if q is not p:
        self._superseded(p, q, f.ts, out)


def _clock_back(self, p: Problem, f: Finding) -> str | None:
    """Why slow rank ``f``, the last one standing on node page ``p``, is no longer the
    clock setting's: ``p`` is the node's ``software`` isolation (a clock held by a setting,
    Correlator._held_by_setting: reset the clocks) and ``f``'s GPU is busy at its job's
    clock again (no ``_held_clock``).  None otherwise.

    The setting reset, every other rank of the node back at its pace, a rank still slow on a
    GPU whose clock is its peers' is something reset_clocks cannot mend -- a fault that began
    under the lock (revA40 F4: node-002 locked at 1700 MHz from 100 s and reset at 200 s, its
    GPU 5 15 % slow from 150 s; the software page held GPU 5's slow rank for good and it was
    never paged).  It is escalated at its GPU, ``unknown`` (nothing in telemetry names it),
    the software page resolved pointing at it, saying its clocks are back.  A GPU still held
    (a lock reset on the node's other GPUs only) stays the setting's page."""
    if p.topic != ISOLATION or p.cause != "software":
        return None
    if self._held_clock(f, [f]) is not None:
        return None
    clock = self._clocks.get(f.scope.key)
    if clock is None:
        return None  # (no clock told for it: nothing says the setting is gone)
    return f"its SM clock {clock[0]:g} MHz back at its job's (the setting reset)"
