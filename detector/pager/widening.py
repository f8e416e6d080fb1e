"""A firing message whose action reaches further than the one delivered is news.

The correlator re-fires an open problem, same ``dedup_key``, when a later finding widens
its action (evidence ``action_was``; the order is :func:`detector.playbook.reach`):
drain_gpu under an open isolation becomes drain_node when the GPU falls off the bus.  The
person asked to approve drain_gpu must hear of it, so storm control lets such a re-fire
through and each sink notifies again, naming the old action; a re-fire with the same or a
narrower action stays de-duplicated.

>>> widened("drain_gpu", "drain_node"), widened("drain_node", "drain_node")
(True, False)
>>> widened("drain_node", "reset_gpu"), widened("", "drain_node")
(False, False)
"""

from __future__ import annotations

from detector.alerts import FiredAlert
from detector.playbook import reach


def widened(before: str, after: str) -> bool:
    """Whether ``after`` takes out more than ``before`` (an unknown ``before``: no)."""
    return bool(before) and reach(after) > reach(before)


def action_of(a: FiredAlert | None) -> str:
    """The alert's action name ("" when it has none)."""
    return a.action.name if a is not None and a.action is not None else ""


def action_was(a: FiredAlert | None) -> str:
    """The action the correlator says this re-fire widens ("" when it says none)."""
    if a is None or not isinstance(a.evidence, dict):
        return ""
    was = a.evidence.get("action_was")
    return was if isinstance(was, str) and len(was) <= 64 else ""


def widens(a: FiredAlert) -> bool:
    """A firing re-send whose own evidence says its action widened."""
    return a.status == "firing" and widened(action_was(a), action_of(a))


def scope_was(a: FiredAlert | None) -> str:
    """The scope key the correlator says this re-fire moved from ("" when it says none):
    a DP-2 checksum tie paged at its job, then named at the GPU the job's next steps judged
    (detector.correlate's _sdc_tie) -- same dedup_key, a new unit to act on."""
    if a is None or not isinstance(a.evidence, dict):
        return ""
    was = a.evidence.get("scope_was")
    return was if isinstance(was, str) and len(was) <= 256 else ""


def rescoped(a: FiredAlert) -> bool:
    """A firing re-send whose own evidence says its unit changed (revB32 1: PagerDuty and
    webhooks never heard a tie named at its GPU): news, as a widened action is."""
    was = scope_was(a)
    return a.status == "firing" and bool(was) and was != a.scope.key


def news(a: FiredAlert) -> bool:
    """A firing re-send of a delivered problem that whoever was paged must hear."""
    return widens(a) or rescoped(a)
