"""A new isolation takes over what it explains: slow ranks waiting or escalated
on its unit are resolved into it.
"""

from __future__ import annotations

from detector.alerts import ESCALATION, ISOLATION, Alert, Scope
from detector.correlate.common import Problem
from detector.part_window import _UNITS_TOLD


def _explain_waiting(self, scope: Scope, p: Problem, out: list[Alert]) -> None:
    """A new isolation problem on a GPU takes over slow ranks on it, waiting or escalated
    (on a node: :meth:`_explain_node`; a GPU's raised at its node, :meth:`_gpu_unconfirmed`:
    both)."""
    if scope.level == "gpu" and p.scope.level == "node" and p.scope.node == scope.node:
        self._supersede(scope, p, out)  # (an escalation of its slowness on the GPU)
        scope = p.scope
    if p.topic == ISOLATION and scope.level == "node" and p.kind == "slow_node":
        self._explain_node(scope, p, out)
    if p.topic != ISOLATION or scope.level != "gpu":
        return
    slow = self._device.get(scope.key, {}).get("slow_rank")
    if slow is not None:
        self._slow_wait.pop(scope.key, None)
        p.add(slow, self.cfg.evidence_items)
        self._own(slow, p)
    self._supersede(scope, p, out)


def _explain_node(self, scope: Scope, p: Problem, out: list[Alert]) -> None:
    """A node's power or heat isolation ``p`` just raised takes the slow ranks it explains
    on the node (:meth:`_explanation`: on a GPU whose throttle it holds; or slow alike with
    such a rank, :meth:`_mates_cause`), waiting or escalated; a node escalation of their
    slowness left with nothing else is resolved at once, pointing at ``p`` (blind5 held
    pl-wrong: the node's ranks escalated slow_node/unknown 6 s before its power isolation,
    then both open for 15 min -- two pages for one ``nvidia-smi -pl``)."""
    node = scope.node or ""
    slow = [g for unit in sorted(self._units_of_node.get(node, ()))
            if (g := self._device.get(unit, {}).get("slow_rank")) is not None]
    esc = self.problems.get(self.dedup_key(ESCALATION, "slow_node", scope, p.cluster))
    for explains in (self._explanation, self._mates_cause):  # (mates: of those taken)
        for g in [g for g in slow if self._owner.get(g.key) != p.key and explains(g) is p]:
            self._slow_wait.pop(g.scope.key, None)
            p.add(g, self.cfg.evidence_items)
            self._own(g, p)
    if esc is not None and esc.status == "firing" and not esc.active and not esc.latched:
        self._superseded(esc, p, max(p.onset_ts, max(
            (e.get("ts", 0.0) for e in p.evidence), default=0.0)), out)


def _supersede(self, scope: Scope, p: Problem, out: list[Alert]) -> None:
    """An escalation of GPU ``scope``'s slowness, firing, that the new isolation ``p`` of
    that GPU explains: resolved now, pointing at ``p`` -- not left open beside it for
    its quiet time (blind10: a PCIe-storm GPU's rank escalated slow_node/unknown
    0.2-13 s before the 30 s ECC poll showed the replays, then paged for ~10 min beside
    the isolation).  Its findings still active on the GPU go to ``p``."""
    q = self.problems.get(self.dedup_key(ESCALATION, "slow_node", scope, p.cluster))
    if q is None or q.status != "firing" or any(
            not k.endswith("@" + scope.key) for k in q.active):
        return  # (none, or slow ranks of other GPUs stand on it too)
    self._superseded(q, p, max(p.onset_ts, max((e.get("ts", 0.0) for e in p.evidence),
                                                default=0.0)), out)


def _repage(self, p: Problem, out: list[Alert]) -> None:
    """``p``'s firing message still in ``out``, rebuilt with what ``p`` holds now."""
    for i in range(len(out) - 1, -1, -1):
        if out[i].dedup_key == p.key and out[i].status == "firing":
            out[i] = self._alert(p, out[i].detected_ts)
            break


def _superseded(self, q: Problem, p: Problem, ts: float, out: list[Alert]) -> None:
    """Resolve escalation ``q`` at ``ts``, pointing at ``p``, which takes what still
    stands on it (and names ``q`` in its page)."""
    for k in q.active:
        self._owner[k] = p.key
        p.active.add(k)
    supersedes = p.extra.setdefault("supersedes", [])
    if q.key not in supersedes and len(supersedes) < _UNITS_TOLD:
        supersedes.append(q.key)
    self._repage(p, out)  # (its page names what it took)
    self._resolve_now(q, ts, out, "superseded_by", p.key)


def _resolve_now(self, q: Problem, ts: float, out: list[Alert], why: str, said: str
                 ) -> None:
    """Resolve firing ``q`` at ``ts`` at once, its ``why`` in its evidence: superseded
    (:meth:`_superseded`), withdrawn as a site's cap (:meth:`_withdraw_for_site`) or as a
    rail's retrain (PartWindows._retake_retrain).  What it held is the caller's to move."""
    q.active.clear()
    q.quiet_since = min(q.quiet_since, ts)
    q.status = "resolved"
    q.extra[why] = said
    out.append(self._alert(q, ts))
    self._timer(ts + self.cfg.forget_after_s, "forget", q.key)
