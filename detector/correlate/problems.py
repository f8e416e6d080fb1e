"""Problems: one per (topic, kind, unit) -- raised, joined by evidence,
resolved after quiet or at once, and the alerts they make.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import replace
from typing import Any

from detector.alerts import ESCALATION, ISOLATION, Action, Alert, Scope
from detector.calibration import conditions, confidence
from detector.correlate.common import (
    REMAP_INSTANT_S,
    Problem,
    _alike,
    _gpus_told,
    _node_of,
    _remap_pending,
)
from detector.domain_brake import widen as _widen_to_domain
from detector.findings import Finding
from detector.liveness import is_dark_page as _is_dark_page
from detector.part_window import _UNITS_TOLD
from detector.playbook import action_for, next_diagnostic, reach
from detector.recovery import estimate
from detector.xid import REMAP_PENDING_XID

# Causes that say more than "something on the GPU": a problem's cause is refined
# towards these, never away from them.
_GENERIC = ("unknown", "gpu_hardware", "software")


def _path(signal: str, evidence: dict[str, Any]) -> str | None:
    """Which part of a rank's step a slow_node finding (or a problem's evidence item) reads:
    ``host`` -- its time in neither compute nor collectives (its loader, CPUs, PCIe link:
    detector.steps ``host_late``, detector.host_time, detector.host_events, detector.host_node,
    a lone straggler's ``basis`` ``host_time``) --, ``compute`` -- its time in compute over its
    peers' (``slow_rank``) --, or None (a throttle, a clock, hardware: a cause of its own)."""
    if signal in _HOST_SIGNALS or evidence.get("basis") == "host_time":
        return "host"
    return "compute" if signal == "slow_rank" else None


_HOST_SIGNALS = ("host_late", "host_share", "host_events", "host_rise")


def _another_fault(p: Problem, kind: str, cause: str, f: Finding) -> str | None:
    """Why a slow_node verdict ``f`` of ``cause`` raised into firing ``p`` of the same unit is
    another fault rather than ``p``'s return (None: its return, or ``p`` still active): ``p``
    is quiet (every finding it stood on has cleared; it waits out the flap window,
    :meth:`_quiet_needed`, before resolving) and either the two name different specific
    causes, or ``f`` reads another part of the step than every finding ``p`` stood on
    (:func:`_path`: its host path late where ``p`` was slow in compute, or the reverse).

    Issue 10's rule -- a problem that resolves and returns within a stated window is one
    incident -- is about the same fault coming back (a rank slow, then not, then slow
    again; a GPU hot again; a loader stalling on and off): an operator reading "node-006
    hot again" for a power brake on another of its GPUs, with the first GPU's stale heat as
    its evidence and the first fault's onset, is misled (reporting corpus 36: a 0x80 brake
    on GPU 5, 165 s after GPU 2's heat had cleared, paged ``thermal`` with onset 220 s
    earlier).  So is one who never hears of a starved loader because the node's page for a
    run of heavy batches in compute, over minutes before, was still waiting out its flap
    window: compute and host time are different paths of the hardware, and a page on one
    says nothing of the other (blind31 F4: a node escalated for a data-mix run at 344 s,
    its host late from 446 s joined that quiet page silently -- the loader never paged).
    Not another fault: ``p`` still active (a node's GPUs throttling 0x40 and 0x80 together
    as its cooling or supply fails is one node page; a rank slow in compute and its host
    late at once), a latched page, a generic cause refined (``unknown`` to a cause is the
    same incident), the same part of the step again, nor a run on the other part that
    began before ``p`` went quiet (its ``onset_ts`` before ``quiet_since``): it ran beside
    the page's own run -- the rank slow in compute and late on its host at once, only
    told later (a host share's verdict waits minutes for its evidence) -- and is that
    episode's, added to the page's evidence.  Paged anew, a pager de-duplicating by key
    sees the page resolve and fire again: a human paged twice for one episode (blind14
    pipe-s0..s2: a node's compute page, its host_share run from 0.1-9 s after the compute
    run's onset, told 470-610 s after the page while it was quiet)."""
    if not (kind == "slow_node" and p.kind == kind and p.status == "firing" and not p.active
            and not p.latched and p.quiet_since != math.inf):
        return None
    if p.cause != cause and p.cause not in _GENERIC and cause not in _GENERIC:
        return f"{cause} raised on {p.scope.key} while this {p.cause} page was quiet"
    path = _path(f.signal, f.evidence)
    stood = {_path(str(e.get("signal")), e) for e in p.evidence}
    if path is None or None in stood or path in stood or f.onset_ts < p.quiet_since:
        return None
    return (f"{p.scope.key}'s {path} time over its peers' ({f.signal}) while this page, "
            f"raised for its {stood.pop()} time, was quiet")


# The held-clock causes a GPU's page is raised at its node for when its rank shares its replica
# there (_gpu_unconfirmed): a power limit or heat, which the node's supply or cooling may
# share.  ``gpu_hardware`` is the GPU's own (its regulator, its board: HW slowdown 0x8 with
# neither heat nor a power limit behind it, or a clock stuck with no reason) and named by its
# own telemetry row, the number `nvidia-smi -r -i` takes: raised at that GPU, its TP mates'
# ranks its consequence (_mates_cause) -- a drain of the node would take out seven healthy
# GPUs other jobs can use (revA36 F6).
_NODE_HELD = ("power", "thermal")


def _summary(p: Problem) -> str:
    """What was seen, in one line.  Kind, cause and scope are fields of their own, and every
    reader (the replay line, the pager's title) prints them beside this: not repeated here."""
    first = p.evidence[0] if p.evidence else {}
    return ", ".join(f"{k}={v}" for k, v in first.items()
                     if k not in ("unit", "ts") and not isinstance(v, (dict, list)))[:300]


def dedup_key(self, topic: str, kind: str, scope: Scope, cluster: str | None) -> str:
    where = f"{cluster}:" if cluster else ""
    return f"fl:{where}{'iso' if topic == ISOLATION else 'esc'}:{kind}:{scope.key}"


def _raise(self, topic: str, kind: str, cause: str, scope: Scope, f: Finding,
           out: list[Alert], *, latched: bool = False, detected_ts: float | None = None,
           extra: dict[str, Any] | None = None, own: bool = True) -> Problem:
    """Fire (or add to) the problem of this topic, kind and unit; ``f`` is its evidence.

    ``own=False`` when ``f`` is a summary made up here (it never clears by itself).
    A power or heat isolation of a node or GPU whose NVLink domain brakes on most of its
    nodes at once is raised at the domain (detector.domain_brake).
    """
    told = None  # (the GPU's number, when raised at its node: _gpu_unconfirmed)
    if topic == ISOLATION and kind == "slow_node" and cause in _NODE_HELD and (
            scope.level == "gpu"):
        open_ = self.problems.get(self.dedup_key(topic, kind, scope, f.cluster))
        why = (None if open_ is not None and open_.status == "firing"  # (stays the GPU's)
               else {} if self._named_by_node_page(scope, f.cluster)  # (stays the node's)
               else self._gpu_unconfirmed(scope))
        apart = self._apart_from_node_page(scope, cause, f) if why else None
        if apart is not None:
            extra = {**(extra or {}), **apart}  # (its own page, at the GPU)
        elif why is not None:
            told, scope = scope.gpu, Scope.of_node(scope.node)  # type: ignore[arg-type]
            extra = {**(extra or {}), **why}
    widened = _widen_to_domain(self, topic, kind, cause, scope, f)
    if widened is not None:
        return self._raise_domain(widened, topic, kind, cause, f, out,
                                  detected_ts=detected_ts, own=own)
    key = self.dedup_key(topic, kind, scope, f.cluster)
    p = self.problems.get(key)
    detected = f.ts if detected_ts is None else detected_ts
    ended = _another_fault(p, kind, cause, f) if p is not None else None
    if p is not None and ended is not None:
        p.extra["quiet_since_ts"] = round(p.quiet_since, 3)
        self._resolve_now(p, detected, out, "ended_before",
                          f"{ended}: another fault, not its return")
    if p is None or p.status == "resolved":
        p = Problem(key, topic, kind, cause, scope, f, latched)
        p.add(f, self.cfg.evidence_items)
        p.extra = extra or {}
        self.problems[key] = p
        if own:
            self._own(f, p)
        out.append(self._alert(p, detected))
        return p
    refined = p.cause in _GENERIC and cause not in _GENERIC
    before = self._action_of(p)
    if refined:
        p.cause = cause
    p.latched = p.latched or latched
    p.add(f, self.cfg.evidence_items)
    another = False
    if told is not None and extra:
        # Another GPU of the node raised into its open page: the page names it and fires
        # again (a second GPU's heat is news, as its own GPU page was before).
        gpus = _gpus_told(p)
        another = told not in gpus
        extra = {k: v for k, v in extra.items()
                 if k not in ("gpu_in_telemetry", "scope_because") or k not in p.extra}
        if another and len(gpus) < _UNITS_TOLD:
            extra["gpus_in_telemetry"] = sorted([*gpus, told])
    if extra:
        p.extra.update(extra)
    if own:
        self._own(f, p)
    wider = p.topic == ISOLATION and reach(self._action_of(p)) > reach(before)
    if wider:
        # A worse finding inside an open isolation (a GPU off the bus while its PCIe
        # replays are paged as drain_gpu): the action the human approves changed, so
        # the problem fires again at once with it -- not only in its resolved message
        # (blind10 K6: drain_gpu -> drain_node said 300 s later, at resolution).
        p.extra["action_was"] = before
    if refined or wider or another:
        out.append(self._alert(p, detected))
    return p


def _gpu_page_returns(self, f: Finding, node: list[Finding], due: float,
                      out: list[Alert]) -> bool:
    """The node rule's pair (``node``: the slow ranks of ``f``'s job on its node, ``f`` among
    them) when one of them is a GPU whose own slow escalation is quiet -- its run cleared, the
    page waiting out its flap window -- and at most one other rank is slow beside it: the
    GPU's rank slow again is its page's return (issue 10's flap rule), and the one mate found
    with it is named in that page (``units_found_slow``, re-sent under its key), not made a
    node page.  True when the pair went so.

    Blind30 held canary-s7: c-12's GPU 1, 12-18 % slow with nothing in telemetry, escalated
    at its GPU; at its job's cold restart its page went quiet, its rank was found slow from
    the new run's first steps, and GPU 3's 4-step noise run beside it (x1.05-1.08, back at
    its peers' pace from the fifth step) made the two the node's: node c-12 escalated 490 s
    after the GPU's page -- a human paged twice for one GPU's fault.  One slow GPU and one
    mate do not say the node; a node's own fault slows more of its ranks, and a third one
    found makes the node's page (the GPU's superseded by it) as before.  An active GPU page
    is left to that rule too (blind10 K5: its node's page takes it)."""
    if len(node) > 2 or f.scope.node is None:
        return False
    paged = [q for g in node if g.scope.level == "gpu" and (q := self.problems.get(
        self.dedup_key(ESCALATION, "slow_node", g.scope, g.cluster))) is not None
        and q.status == "firing" and q.scope == g.scope and q.job == g.job
        and not q.active and not q.latched]
    if len(paged) != 1:
        return False
    p = paged[0]
    mates = [g.scope.key for g in node if g.scope != p.scope]
    for g in node:
        self._slow_wait.pop(g.scope.key, None)
        p.add(g, self.cfg.evidence_items)
        self._own(g, p)
    told = list(p.extra.get("units_found_slow") or ())
    if any(m not in told for m in mates):
        p.extra["units_found_slow"] = [*told, *(m for m in mates if m not in told)][
            -_UNITS_TOLD:]
        out.append(self._alert(p, due))
    return True


def _named_by_node_page(self, scope: Scope, cluster: str | None) -> bool:
    """GPU ``scope`` is one its node's power or heat page, firing, was raised for
    (:meth:`_gpu_unconfirmed`: its number in the page's ``gpu_in_telemetry`` /
    ``gpus_in_telemetry``).  A later raise of that GPU joins the node's page even when
    the step records now single the GPU out (its rank found slow alone after the page):
    the same fault, already paged at the unit that holds it, with the GPU named -- a
    second page at the GPU would page one fault twice (ojoin, round 28: the
    twenty-seventh reporting corpus's slow_node problems 164 -> 186 after o3node; an
    intermittent brake's next episode once its rank was slow alone)."""
    p = self.problems.get(self.dedup_key(ISOLATION, "slow_node", Scope.of_node(
        scope.node or ""), cluster))
    if p is None or p.status != "firing":
        return False
    return scope.gpu in _gpus_told(p)


def _apart_from_node_page(self, scope: Scope, cause: str, f: Finding
                          ) -> dict[str, Any] | None:
    """Why a power, heat or HW slowdown verdict ``f`` of ``cause`` on GPU ``scope``, which
    the unit rules would raise at its node (:meth:`_gpu_unconfirmed`), is paged at the GPU
    instead: its node's slow_node isolation is firing for another fault that still stands
    -- another specific cause, told for other GPUs, standing on GPUs' findings, none of
    this GPU's but its slow rank (taken for that page while nothing else explained it: its
    own fault explains it now, and its page takes it, :meth:`_explain_waiting`) -- and this
    GPU is not hot beside that heat.  None: raised at the node as the unit rules say
    (joining the node's page, or the quiet page's end: _another_fault).

    One dedup_key a unit: raised at the node, a cool GPU's power brake (0x80) while another
    GPU's heat still stands on the node's page would be that page's evidence, "thermal",
    its onset the heat's (reporting corpus 36: GPU 5 braking at +392 s, its rank +32 %,
    joined GPU 2's heat page of +172 s in 8 of 27 cells).  A different cause on a different
    GPU is a different fault, and the operator acts on it apart (the board's power, not the
    node's air): its page is the GPU's, where its telemetry names it -- the node page
    already holds the node, and a GPU's power or heat page drains the node all the same
    (detector.playbook), so a collector's GPU numbering cannot mislead the action.

    One page, as before (None here): a node's cooling -- GPUs throttling 0x40, then 0x80
    while hot, beside a heat page (this GPU ``hot_gpu_c`` or more, or told ``hot``, and the
    page's cause thermal or its GPUs hot): one fault of the node's air; the same cause
    again on another GPU (the node's page names it too); a generic cause either side (a
    slow rank refined: the same incident); a GPU the page already names (its rank's
    returns, a flapping rank); a page standing on a node-wide finding (every GPU braking).
    The power limit is not in the contract (DESIGN's thermal topic): a cool GPU braking
    under 0x80 is read as its board's power, whatever its draw."""
    if scope.node is None or scope.gpu is None or cause in _GENERIC:
        return None
    node = Scope.of_node(scope.node)
    p = self.problems.get(self.dedup_key(ISOLATION, "slow_node", node, f.cluster))
    if (p is None or p.status != "firing" or p.latched or not p.active
            or p.cause == cause or p.cause in _GENERIC):
        return None  # (no page, a quiet one -- _another_fault --, or the same cause)
    gpus = _gpus_told(p)
    if not gpus or scope.gpu in gpus:
        return None
    for signal, _, unit in (k.partition("@") for k in p.active):
        if not unit.startswith("gpu:") or (unit == scope.key and signal != "slow_rank"):
            return None  # (it stands on the node, or on this GPU's own signal: one fault)

    def hot(unit: str, g: Finding | None) -> bool:
        temp = g.evidence.get("gpu_temp_c") if g is not None else None
        return (isinstance(temp, (int, float)) and temp >= self.cfg.hot_gpu_c) or (
            "hot" in self._device.get(unit, {}))

    if hot(scope.key, f) and (p.cause == "thermal" or any(
            hot(Scope.of_gpu(scope.node, g).key, None) for g in gpus)):
        return None  # (hot beside heat: the node's cooling)
    return {"apart_from": p.key, "scope_because": (
        f"{cause} on GPU {scope.gpu} of {scope.node} while {scope.node}'s {p.cause} page "
        f"still stands for GPU{'s' if len(gpus) > 1 else ''} {gpus}: another fault on "
        "another GPU, paged where its telemetry names it (the node's page holds the node)")}


def _gpu_unconfirmed(self, scope: Scope) -> dict[str, Any] | None:
    """Why a power or heat isolation of GPU ``scope`` is raised at its node (_NODE_HELD): the GPU's
    rank shares its replica with other ranks of its job on the node (TP -- or pipeline
    stages -- inside the node), and the step records do not single its rank out (found
    slow alone).  None when they can or do: no job laid out on the GPU, its rank a
    replica of its own there (pure data parallelism), or its rank slow alone.

    Slow alike, the node's ranks say the node, not the GPU; and the GPU's number comes from
    the telemetry's collector alone, whose numbering DESIGN does not name: one writing
    NVML minor numbers (or PCI bus order) names another GPU than the job's index (blind15
    O3: fx10's hot GPU, the job's 3, was 'gpu 1' in its thermal rows; TP8 slowed the
    node's 8 ranks alike; gpu fx10/1 was isolated -- the wrong GPU).  The node holds the
    GPU whichever number is right; its action is the one a GPU's heat or power already
    gets (drain_node, detector.playbook), and its granularity says what that takes out.
    The number told stays in the evidence."""
    node, gpu = scope.node, scope.gpu
    if node is None or gpu is None:
        return None
    on = self._placement.on_node.get(node, {})
    job = self._placement.last_on(node, gpu)
    if job is None:
        return None
    mine = [(rank, g, dp) for (j, rank), (g, dp) in on.items() if j == job]
    ranks = [(rank, dp) for rank, g, dp in mine if g == gpu]
    if not ranks:
        return None
    rank, dp = ranks[0]
    mates = sorted({g for _, g, d in mine if d == dp and g != gpu})
    if not mates:
        return None  # (its rank a replica of its own on the node: its slowness its own)
    own = self._device.get(scope.key, {}).get("slow_rank")
    if own is not None and own.job == job and not own.evidence.get("node_wide") and not any(
            (m := self._device.get(Scope.of_gpu(node, g).key, {}).get("slow_rank"))
            is not None and m.job == job and _alike(own, m) for g in mates):
        return None  # (its rank slow alone: the step records confirm the GPU)
    slow = sorted(g for g in (gpu, *mates) if (m := self._device.get(
        Scope.of_gpu(node, g).key, {}).get("slow_rank")) is not None and m.job == job)
    seen = (f"ranks on GPUs {slow} slow alike" if len(slow) > 1 else
            "no rank of it found slow alone")
    return {"gpu_in_telemetry": gpu, "scope_because": (
        f"the telemetry names GPU {gpu} of {node}, but its rank {rank} of {job} shares "
        f"replica {dp} with the job's ranks on GPUs {mates[:_UNITS_TOLD]} of {node} ({seen}): "
        "no step record can say which GPU, and a collector may number GPUs otherwise "
        "than the job (NVML minor numbers, PCI bus order) -- the node holds it either "
        "way")}


def _raise_domain(self, widened: tuple[Scope, dict[str, Any]], topic: str, kind: str,
                  cause: str, f: Finding, out: list[Alert], *,
                  detected_ts: float | None, own: bool) -> Problem:
    """One isolation for an NVLink domain braking (detector.domain_brake): ``f`` its
    evidence; raised now, it supersedes the power or heat isolations of the same kind
    already open on the domain's nodes and GPUs."""
    scope, extra = widened
    said = {k: extra[k] for k in ("nodes_affected", "nodes_heard_from", "recommended_because")}
    summary = f._replace(scope=scope, tenant=None, job=None, rank=None, dp_rank=None,
                         evidence={"throttle_reasons": f.evidence.get("throttle_reasons"),
                                   **said})
    key = self.dedup_key(topic, kind, scope, f.cluster)
    before = self.problems.get(key)
    fresh = before is None or before.status != "firing"
    sent = len(out)
    p = self._raise(topic, kind, cause, scope, summary, out, detected_ts=detected_ts,
                    extra=extra if fresh else None, own=False)
    p.add(f, self.cfg.evidence_items)
    if own:
        self._own(f, p)
    for i in range(len(out) - 1, sent - 1, -1):
        if out[i].dedup_key == p.key and out[i].status == "firing":
            out[i] = self._alert(p, out[i].detected_ts)  # (the page just made: with ``f``)
            break
    if fresh:
        p.job = p.tenant = None  # (a shared part carries several jobs' and tenants' work)
        topo = self.topology
        nodes = set(topo.nodes_in_domain(scope.domain or "")) if topo is not None else set()
        ts = f.ts if detected_ts is None else detected_ts
        for q in [q for q in self.problems.values() if q is not p and q.status == "firing"
                  and q.topic == topic and q.kind == kind and q.cause in ("power", "thermal")
                  and q.scope.level in ("node", "gpu") and q.scope.node in nodes]:
            self._superseded(q, p, ts, out)
    return p


def _action_of(self, p: Problem) -> str:
    return action_for(p.kind, p.cause, p.scope, xid=p.xid,
                      recovery_action=p.recovery_action,
                      clocks_held="clocks_held" in p.extra).name


def _own(self, f: Finding, p: Problem) -> None:
    old = self._owner.get(f.key)
    if old is not None and old != p.key and old in self.problems:
        q = self.problems[old]
        q.active.discard(f.key)
        if not q.active and not q.latched and q.status == "firing":
            self._schedule_resolve(q, f.ts)
    self._owner[f.key] = p.key
    p.active.add(f.key)
    if p.quiet_since != math.inf and p.status == "firing":
        # Quiet, then back before resolving: the same incident, said in its evidence.
        p.extra["returns"] = p.extra.get("returns", 0) + 1
    p.quiet_since = math.inf


def _attach_if_firing(self, f: Finding) -> None:
    """Evidence-only findings join a problem already firing on the same unit."""
    for topic in (ISOLATION, ESCALATION):
        for kind in ("hardware", "slow_node", "sdc"):
            p = self.problems.get(self.dedup_key(topic, kind, f.scope, f.cluster))
            if p is not None and p.status == "firing":
                p.add(f, self.cfg.evidence_items)
                return


def _sdc_joins_gpu(self, f: Finding) -> bool:
    """A replica's SDC verdict (a loss outlier again and again, detector.sdc) when the
    replica is one GPU (TP1 x PP1: its placement names one rank) and that GPU's SDC page
    is open: the replica and the GPU are the same hardware, so the finding joins that page
    as its evidence -- one problem, one ``dedup_key`` (blind19 R2: paged at the GPU for its
    grad norm, then 53-127 s later again at the replica for its loss).  True when it
    joined."""
    if f.scope.level != "replica" or f.job is None or f.dp_rank is None:
        return False
    ranks = self._placement.ranks.get(f.job)
    if not ranks:
        return False
    hw = None
    for node, gpu, dp in ranks.values():
        if dp == f.dp_rank:
            if hw is not None:
                return False  # (a replica of two GPUs or more: its own unit)
            hw = (node, gpu)
    if hw is None:
        return False
    gpu = Scope.of_gpu(*hw)
    for topic in (ESCALATION, ISOLATION):
        p = self.problems.get(self.dedup_key(topic, "sdc", gpu, f.cluster))
        if p is not None and p.status == "firing":
            p.add(f, self.cfg.evidence_items)
            self._own(f, p)
            p.extra["replica_is_gpu"] = f"replica {f.dp_rank} of {f.job} is this GPU alone"
            return True
    return False


def _sdc_tie(self, f: Finding, out: list[Alert]) -> bool:
    """A checksum tie of two replicas is paged at its job on the split step (detector.sdc);
    when the job's next steps judge it, its GPU's finding (evidence ``tie_judged``) comes
    just after the tie's end: the job's page, firing on nothing else, is narrowed to that
    GPU and fires again -- one incident, one dedup_key, its scope and cause refined as a
    cause is (DESIGN: re-sending a firing alert is not a new problem).  A new tie of the
    job while that page names a GPU widens it back to the job: nothing is lost under it.
    True when ``f`` went so."""
    if f.job is None or f.signal not in ("checksum_mismatch", "checksum_pair"):
        return False
    p = self.problems.get(self.dedup_key(ESCALATION, "sdc", Scope.of_job(f.job), f.cluster))
    if p is None or p.status != "firing":
        return False
    if f.signal == "checksum_mismatch":
        if "tie_judged" not in f.evidence or p.scope.level != "job" or p.active:
            return False
    elif p.scope.level != "job":
        p.extra["named_before"] = p.scope.key
    else:
        return False
    # (the scope it re-fires from: news for a pager that de-duplicates by key --
    # detector.pager.widening.rescoped, revB32 1)
    p.extra["scope_was"] = p.scope.key
    p.scope, p.cause = f.scope, f.cause
    diag = f.evidence.get("next_diagnostic")
    if diag:
        p.extra["next_diagnostic"] = diag
    p.quiet_since = math.inf  # (its tie's end just scheduled a resolve: not quiet)
    p.add(f, self.cfg.evidence_items)
    self._own(f, p)
    out.append(self._alert(p, f.ts))
    return True


def _cleared(self, f: Finding, out: list[Alert]) -> None:
    key = self._owner.pop(f.key, None)
    p = self.problems.get(key) if key else None
    if p is None:
        return
    p.active.discard(f.key)
    if not p.active and not p.latched and p.status == "firing":
        self._schedule_resolve(p, f.ts)


def _quiet_needed(self, p: Problem) -> float:
    """Quiet time before ``p`` resolves.  Hardware problems are latched until a reset or
    clear on a counter; soft signals (a rank a few percent slow, NIC errors, gradient
    spikes) that stop and return within ``flap_window_s`` are one incident, not a page
    each time (Alibaba PAI job 1: workers 0-2, ~8 % slower, stopped and returned)."""
    if p.kind == "hardware" or _is_dark_page(p):  # (a node heard again: liveness)
        return self.cfg.resolve_after_s
    return max(self.cfg.resolve_after_s, self.cfg.flap_window_s)


def _schedule_resolve(self, p: Problem, ts: float, wait: float | None = None) -> None:
    """``p`` quiet since ``ts``: resolved once quiet :meth:`_quiet_needed` -- looked at
    ``wait`` on instead, when given (a longer hold: liveness's partial return)."""
    p.quiet_since = ts
    self._timer(ts + (self._quiet_needed(p) if wait is None else wait), "resolve", p.key)


def _resolve_due(self, key: str, due: float, out: list[Alert]) -> None:
    p = self.problems.get(key)
    if (p is None or p.status != "firing" or p.active or p.latched
            or p.quiet_since + self._quiet_needed(p) > due):
        return
    p.status = "resolved"
    p.extra["quiet_since_ts"] = round(p.quiet_since, 3)
    out.append(self._alert(p, due))
    self._timer(due + self.cfg.forget_after_s, "forget", key)


def _firing_on(self, scope: Scope, kind: str) -> bool:
    return self._firing_isolation(scope, kind) is not None


def _firing_isolation(self, scope: Scope, kind: str) -> Problem | None:
    """The isolation of ``kind`` firing on ``scope`` (any cluster's), if any."""
    p = self.problems.get(self.dedup_key(ISOLATION, kind, scope, None))
    if p is None:
        p = next((q for q in self.problems.values() if q.scope == scope and q.kind == kind
                  and q.topic == ISOLATION), None)
    return p if p is not None and p.status == "firing" else None


def _why_due(self, key: str, due: float, out: list[Alert]) -> None:
    """The wait for a cause is over: raise the recovery action alone, or join its cause
    (a remap pending: its instant is over -- paged as it was at once, REMAP_INSTANT_S
    later)."""
    f = self._why_wait.pop(key, None)
    if f is not None and _remap_pending(f):
        # (as it was at once, its wait added: decided at its ts + the wait)
        self._raise_verdict(f, out, detected_ts=f.ts + REMAP_INSTANT_S)
        return
    if f is None or self._join_board(f):
        return
    p = self._raise(ISOLATION, f.kind, f.cause, f.scope, f, out, latched=True,
                    detected_ts=due)
    self._explain_waiting(f.scope, p, out)


def _forget_due(self, key: str, due: float) -> None:
    """Drop a problem long resolved: memory stays bounded, and its key is derived from
    its unit, so if it comes back it gets the same dedup_key anyway."""
    p = self.problems.get(key)
    if p is not None and p.status == "resolved":
        del self.problems[key]


def _gpu_reset(self, f: Finding, out: list[Alert]) -> None:
    """A reset GPU starts clean: latched hardware problems on it may resolve."""
    unit = f.scope.key
    self._device.pop(unit, None)
    for p in self.problems.values():
        if p.status == "firing" and p.latched and p.scope.key == unit:
            p.latched = False
            p.active = {k for k in p.active if not k.endswith("@" + unit)}
            if not p.active:
                self._schedule_resolve(p, f.ts)
    self._board_reset(f)


def _timer(self, due: float, what: str, key: str) -> None:
    self._seq += 1
    heapq.heappush(self._timers, (due, self._seq, what, key))


def _raise_verdict(self, f: Finding, out: list[Alert], detected_ts: float | None = None
                   ) -> None:
    """Page a monitor's verdict on its own unit: an isolation, or an escalation when its
    cause is unknown or the monitor says a human must look."""
    if detected_ts is None and (self._pcie_verdict(f, out) or self._hold_board(f, out)):
        return
    topic = ESCALATION if f.cause == "unknown" or f.escalate else ISOLATION
    # (a detector that knows the next diagnostic better than the playbook names it)
    extra = {k: f.evidence[k] for k in ("recommended_because", "next_diagnostic")
             if f.evidence.get(k)}
    extra.update(self._cooling(f))
    sent = len(out)
    p = self._raise(topic, f.kind, f.cause, f.scope, f, out, latched=f.kind == "hardware",
                    detected_ts=detected_ts, extra=extra or None)
    if f.kind == "hardware" and self._why_wait:
        self._join_remedies(f.scope, p, f.ts if detected_ts is None else detected_ts, sent,
                            out)
    self._explain_waiting(f.scope, p, out)


def _join_remedies(self, scope: Scope, p: Problem, now: float, sent: int,
                   out: list[Alert]) -> None:
    """NVML's recovery action on ``scope`` waiting for its cause (``_why_wait``) joins the
    hardware problem ``p`` now raised there: its page says the remedy at once -- one
    message, not drain_gpu then drain_node a moment later (a recovery action told just
    before its XID, within the allowed disorder)."""
    remedies = [k for k, g in self._why_wait.items() if g.scope == scope]
    if not remedies:
        return
    before = self._action_of(p)
    for k in remedies:
        g = self._why_wait.pop(k)
        p.add(g, self.cfg.evidence_items)
        self._own(g, p)
    for i in range(len(out) - 1, sent - 1, -1):
        if out[i].dedup_key == p.key and out[i].status == "firing":
            out[i] = self._alert(p, out[i].detected_ts)  # (the page just made)
            return
    if reach(self._action_of(p)) > reach(before):
        p.extra["action_was"] = before
        out.append(self._alert(p, now))


# -- alerts --------------------------------------------------------------------------

def _cadence(self, node: str) -> float:
    """``node``'s telemetry sampling interval as learned (``_interval``), else the
    cadence assumed for a node not learned yet (``unknown_cadence_s``)."""
    return self._interval.get(node, (0.0, 0.0))[0] or self.cfg.unknown_cadence_s


def _interval_of(self, p: Problem) -> float | None:
    """Thermal sampling interval of the problem's node (of its first evidence, if wider)."""
    node = p.scope.node
    if node is None and p.evidence:
        node = _node_of(str(p.evidence[0].get("unit", "")))
    seen = self._interval.get(node) if node is not None else None
    return seen[0] if seen is not None else None


def _alert(self, p: Problem, detected_ts: float) -> Alert:
    evidence: dict[str, Any] = {"signals": list(p.evidence), **p.extra}
    if p.topic == ESCALATION:
        diag = p.extra.get("next_diagnostic") or next_diagnostic(p.kind, p.scope)
        evidence["next_diagnostic"] = diag
        action = Action("investigate", f"needs a human: {diag}", "nothing was changed")
    else:
        action = action_for(p.kind, p.cause, p.scope, xid=p.xid,
                            recovery_action=p.recovery_action,
                            clocks_held="clocks_held" in p.extra)
    # The detectors' own score, kept beside the calibrated one so a new calibration can
    # be fitted from alerts (bench/calibrate.py).
    evidence["raw_confidence"] = round(p.confidence, 3)
    # ... and the deployment conditions the calibration is keyed by (detector/calibration.py)
    conds = conditions(self.topology, self._interval_of(p))
    evidence["conditions"] = conds
    conf = confidence(p.topic, p.kind, p.cause, p.confidence, conds)
    recovery = estimate(action.name, p.kind, p.onset_ts, detected_ts,
                        self.cfg.checkpoint_interval_s, self.cfg.restart_s,
                        at_jobs_end=action.name == "reset_gpu" and p.xid == REMAP_PENDING_XID)
    if p.status == "resolved":
        recovery = replace(recovery, measured_s=round(detected_ts - p.onset_ts, 3))
    return Alert(p.topic, p.key, p.status, p.kind, p.cause, p.scope, action, p.onset_ts,
                 detected_ts, round(conf, 3), evidence, p.job, p.tenant, p.cluster,
                 _summary(p), self._placement.granularity(p.scope, self.topology, p.job),
                 recovery)
