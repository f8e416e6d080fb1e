"""Hardware pages: a GPU failing job after job (detector.lemon), an NVLink
baseboard, PCIe replays on a node's GPUs.
"""

from __future__ import annotations

from typing import Any

from detector import host_straggler, lemon
from detector.alerts import ESCALATION, ISOLATION, Alert, Scope
from detector.correlate.common import Problem
from detector.findings import Finding
from detector.part_window import BOARD_WINDOW_S

# This many GPUs of one node with NVLink trouble at once are its baseboard's fault: on
# an NVSwitch board (HGX, DGX) two GPUs share no link of their own, only the switch chips every
# GPU links through.  (Two, not three: the records of a board's XIDs arrive 30-600 ms late,
# so by the window's end often only two are in -- blind8 tune s1 and held s7, 2 GPU pages
# each before the node's at 1.35 / 1.85 s with three.)
BOARD_MIN_GPUS = 2
# An XID 74 this recent counts as trouble now (a board's come within ~2 s; DESIGN's disorder 5 s).
BOARD_SPREAD_S = 5.0
# The most NVLink verdicts held for one node (any board has 8-16 GPUs, two signals a GPU).
_BOARD_HELD_MAX = 64


def _listed(gpus: list[int]) -> str:
    """A node page's GPUs as its text names them: the first 16, then ``...``."""
    return f"{', '.join(map(str, gpus[:16]))}{' ...' if len(gpus) > 16 else ''}"


# -- a GPU failing job after job (detector.lemon) --------------------------------------

def _lemon_strike(self, f: Finding, out: list[Alert]) -> None:
    """Remember an application XID or a slow replica against its GPUs and the job, and
    escalate a GPU that several jobs saw fail (evidence of its own: never isolates)."""
    if not f.active:
        return
    if f.signal == "app_xid":
        job = self._placement.last_on(f.scope.node or "", f.scope.gpu or 0)
        made = lemon.on_app_xid(self._lemon, f, job)
    else:
        made = lemon.on_split(self._lemon, f, self._placement.ranks.get(f.job or ""))
    for g in made:
        extra = {k: g.evidence[k] for k in ("recommended_because", "next_diagnostic",
                                            "ruled_out")}
        p = self._raise(ESCALATION, g.kind, g.cause, g.scope, g, out,
                        latched=g.kind == "hardware", extra=extra, own=False)
        if not p.latched:
            # (a memory, not a signal that clears: quiet from now, unless struck again)
            self._schedule_resolve(p, g.ts)


# -- NVLink trouble on most GPUs of one node at once: its baseboard (hw18, round 18) -----
#
# On an HGX board every GPU links to every NVSwitch chip on the baseboard, so a switch
# chip (or the board) failing makes NVLink err on all its GPUs at once -- XID 74 on each
# within a second or two, CRC and replay counters climbing on each (blind8 H3: 8 GPU
# isolations, the node the unit to drain).  With no NVLink domain in the topology (an
# NVL72 rack's trays: _group_of), a GPU's NVLink verdict waits BOARD_WINDOW_S for its
# mates: BOARD_MIN_GPUS or more of the node with NVLink trouble are one node isolation,
# one GPU is its own.  Two GPUs are the node too: on an NVSwitch board they have no link
# between them but through the baseboard's switches (a PCIe pair on an NVLink bridge,
# H100 NVL, would be their bridge -- DESIGN has no link scope, and no topology here
# names one).

def _hold_board(self, f: Finding, out: list[Alert]) -> bool:
    """Hold a GPU's NVLink verdict while its node's mates may show the same trouble, or
    join it to its node's NVLink page: True when held or joined."""
    node = f.scope.node
    if f.cause != "nvlink" or f.kind != "hardware" or f.signal == "repeat_xid" or (
            f.scope.level != "gpu" or node is None):
        return False
    if self._join_board(f):
        return True
    held = self._board_wait.setdefault(node, {})
    if f.key not in held and len(held) >= _BOARD_HELD_MAX:
        return False  # (a node claiming more GPUs than any board has: paged alone)
    if not held:
        self._timer(f.ts + BOARD_WINDOW_S, "board", node)
    held.setdefault(f.key, f)
    return True


def _board_page(self, node: str | None, cluster: str | None, cause: str | None = None
                ) -> Problem | None:
    """``node``'s page of its GPUs at once, firing -- of its NVLink baseboard (cause
    nvlink, :meth:`_board_due`) or of its GPUs replaying over PCIe (gpu_hardware naming its
    ``gpus``, :meth:`_pcie_page`); both are the node's hardware isolation (one dedup key).
    ``cause``: that page only."""
    if node is None:
        return None
    p = self.problems.get(self.dedup_key(ISOLATION, "hardware", Scope.of_node(node), cluster))
    if p is None or p.status != "firing" or not (
            p.cause == "nvlink" or p.cause == "gpu_hardware" and "gpus" in p.extra):
        return None
    return p if cause is None or p.cause == cause else None


def _join_board(self, f: Finding, cause: str = "nvlink") -> bool:
    """Add a finding on a GPU to its node's page of ``cause`` (:meth:`_board_page`: NVLink,
    or gpu_hardware: PCIe, which names the GPU too) if that is firing: True if so."""
    node = f.scope.node
    if node is None or f.scope.level != "gpu" or f.kind != "hardware":
        return False
    p = self._board_page(node, f.cluster, cause)
    if p is None:
        return False
    p.add(f, self.cfg.evidence_items)
    if f.active:
        self._own(f, p)
    if cause != "nvlink":
        p.extra["gpus"] = sorted({*p.extra["gpus"], f.scope.gpu})[:_BOARD_HELD_MAX]
    return True


def _board_due(self, node: str, due: float, out: list[Alert]) -> None:
    """The window of a node's held NVLink verdicts is over: the node's page when
    BOARD_MIN_GPUS of its GPUs have NVLink trouble now (those already paged alone too:
    the upgrade), else each GPU's own."""
    held = self._board_wait.pop(node, None)
    if not held:
        return
    # (Every one held came before the window closed: the timer fires before a record
    # past it.)
    ready = [g for g in held.values() if self._device.get(g.scope.key, {}).get(g.signal) == g]
    if not ready:
        return  # (its GPUs reset meanwhile)
    troubled = self._board_troubled(node, due)
    if len(troubled) < BOARD_MIN_GPUS:
        for g in sorted(ready, key=lambda g: g.ts):
            self._raise_verdict(g, out, detected_ts=due)
        return
    first = min(ready, key=lambda g: g.onset_ts)
    gpus = sorted(troubled)[:_BOARD_HELD_MAX]
    spread = max(g.ts for g in ready) - min(g.ts for g in ready)
    extra = {"gpus": gpus, "recommended_because": (
        f"NVLink errors on {len(gpus)} GPUs of {node} at once (GPUs {_listed(gpus)}; "
        "XID 74 or CRC/replay counters, "
        f"{spread:.1f} s apart): every GPU of an HGX board links through the NVSwitch "
        "chips on its baseboard -- the node, not each GPU; check the fabric manager's "
        "SXIDs and run `dcgmi diag -r 3` before returning it")}
    fired: list[Alert] = []
    p = self._raise(ISOLATION, "hardware", "nvlink", Scope.of_node(node), first, fired,
                    latched=True, detected_ts=due, extra=extra)
    for g in ready:
        if g is not first:
            p.add(g, self.cfg.evidence_items)
        self._own(g, p)
    if fired:  # (said with every GPU of its window as evidence)
        out.append(self._alert(p, due))
    # (the mates' pages already firing -- the upgrade: the node's now)
    self._fold_gpu_pages(node, gpus, first.cluster, p, "nvlink", "NVLink baseboard fault",
                         due)


def _fold_gpu_pages(self, node: str, gpus: list[int], cluster: str | None, p: Problem,
                    cause: str, what: str, now: float) -> None:
    """The hardware isolations of ``cause`` firing on ``node``'s GPUs ``gpus``, now parts
    of its node's page ``p``: their findings go to ``p``, and they resolve (saying so)."""
    for gpu in gpus:
        q = self.problems.get(self.dedup_key(ISOLATION, "hardware", Scope.of_gpu(node, gpu),
                                             cluster))
        if q is None or q.status != "firing" or q.cause != cause:
            continue
        for key in list(q.active):
            signal, _, unit = key.partition("@")
            g = self._device.get(unit, {}).get(signal)
            if g is not None:
                p.add(g, self.cfg.evidence_items)
                self._own(g, p)
        q.latched = False
        q.extra["resolved_because"] = f"part of {node}'s {what} ({p.key})"
        q.active.clear()
        self._schedule_resolve(q, now)


def _board_troubled(self, node: str, now: float) -> set[int]:
    """GPUs of ``node`` with NVLink trouble now: an XID 74 within BOARD_SPREAD_S, or an
    error rate raised within ``nvlink_half_life_s`` (a poll or two: a GPU's link erring
    for an hour is its own, not half of a board failing now with another GPU's XID)."""
    gpus: set[int] = set()
    for unit in self._units_of_node.get(node, ()):
        for g in self._device.get(unit, {}).values():
            if (g.cause == "nvlink" and g.kind == "hardware" and g.verdict and g.active
                    and g.scope.gpu is not None and g.signal != "repeat_xid"
                    and now - g.ts <= (BOARD_SPREAD_S if g.signal == "xid"
                                       else self.cfg.nvlink_half_life_s)):
                gpus.add(g.scope.gpu)
                break
    return gpus


def _board_reset(self, f: Finding) -> None:
    """A GPU of a node with a latched NVLink (or PCIe: :meth:`_pcie_page`) page reset: the
    page resolves once every GPU it stands on has been (a PCIe page once its slow ranks,
    which it holds too, are back at their peers' pace)."""
    node, unit = f.scope.node, f.scope.key
    if node is None:
        return
    p = self._board_page(node, f.cluster)
    if p is None or not p.latched:
        return
    p.active = {k for k in p.active if not k.endswith("@" + unit)}
    if p.cause != "nvlink" and not any(
            (g := self._device.get(k.partition("@")[2], {}).get(k.partition("@")[0]))
            is not None and g.kind == "hardware" for k in p.active):
        p.latched = False  # (every replaying GPU reset: _cleared resolves it after them)
    if not p.active:
        p.latched = False
        self._schedule_resolve(p, f.ts)


# -- PCIe replays under a slow rank; a node's GPUs replaying at once (p1pcie) ------------
#
# A GPU's PCIe link -- or the PCIe switch on an HGX baseboard above two GPUs and their NICs
# -- replaying makes its rank late by its host path, and its node's TP mates wait for it
# inside their compute.  The verdicts (detector.gpu_health: 100 replays within a minute, or
# a rate held for six samples) come minutes after the slowdown; the evidence
# (``pcie_seen``: DCGM's 8 a minute, within about a minute) comes with the first ECC poll.
# A slow rank on a GPU showing it -- or a rank slow alike with its node's others while a
# GPU of its job there shows it -- is that GPU's, attributed at its first judgement; two or
# more GPUs of one node replaying at once are the node's (DESIGN has no PCIe-switch unit:
# the smallest unit holding both is the node), their later verdicts joined into its page
# as an NVLink baseboard's are (_hold_board).  blind20 P1: the node escalated
# slow_node/unknown 11-112 s after the onset, both GPUs isolated on their replay rate 1-4
# min later, not joined -- cause wrong 8 of 8, 16 GPU-page false positives.

def _pcie_troubled(self, node: str) -> list[int]:
    """GPUs of ``node`` replaying over PCIe now: ``pcie_seen`` raised or a
    ``pcie_replay`` verdict standing (detector.gpu_health)."""
    gpus = set()
    for unit in self._units_of_node.get(node, ()):
        signals = self._device.get(unit)
        if not signals:
            continue
        g = signals.get("pcie_seen") or signals.get("pcie_replay")
        if g is not None and g.active and g.scope.level == "gpu" and g.scope.gpu is not None:
            gpus.add(g.scope.gpu)
    return sorted(gpus)


def _pcie_verdict(self, f: Finding, out: list[Alert]) -> bool:
    """A GPU's PCIe replay verdict (``pcie_replay``) while two or more GPUs of its node
    replay, or its node's PCIe page is open: the node's page takes it (:meth:`_pcie_page`,
    as an NVLink verdict joins its board's, :meth:`_hold_board`).  True when so; else it
    is its own GPU's link's page."""
    node = f.scope.node
    if f.signal != "pcie_replay" or f.scope.level != "gpu" or node is None:
        return False
    gpus = self._pcie_troubled(node)
    if len(gpus) < BOARD_MIN_GPUS and self._board_page(node, f.cluster, "gpu_hardware") is None:
        return False  # (one GPU's link: its own page)
    self._pcie_page(node, gpus, f, f.ts, out)
    return True


def _pcie_impact(self, slow: Finding, now: float, out: list[Alert]) -> bool:
    """A slow rank explained by PCIe replays: its own GPU's, or -- slow alike with its
    node's other ranks (``node_wide``: TP inside the node, waiting for the late one) --
    a GPU of its job there.  Paged at that GPU, or at the node when two or more of its GPUs
    replay (:meth:`_pcie_page`).  True when so."""
    node, gpu = slow.scope.node, slow.scope.gpu
    if slow.scope.level != "gpu" or node is None:
        return False
    gpus = self._pcie_troubled(node)
    if not gpus:
        return False
    if gpu not in gpus:
        if not slow.evidence.get("node_wide"):
            return False  # (a rank slow alone: its own GPU's link is clean)
        mine = self._job_units(node, slow.job)
        if not any(self._of_job(slow, Scope.of_gpu(node, g).key, mine) for g in gpus):
            return False  # (replays on a GPU outside its job)
    self._pcie_page(node, gpus, slow, now, out)
    return True


def _pcie_page(self, node: str, gpus: list[int], f: Finding, now: float,
               out: list[Alert]) -> Problem:
    """Page ``node``'s GPUs ``gpus`` replaying (``f``: the slow rank or the verdict that
    asked): one isolation, hardware/gpu_hardware, at the node when two or more replay (or
    its page is open), else at the one GPU.  It takes their replay findings, ``f``, the
    slow ranks on the node it explains; a node page supersedes the GPUs' replay pages
    firing (the upgrade) and the escalations of the node's slowness."""
    cluster = f.cluster
    board = self._board_page(node, cluster, "gpu_hardware")
    wide = board is not None or len(gpus) >= BOARD_MIN_GPUS
    found = [g for gpu in gpus for signal in ("pcie_replay", "pcie_seen")
             if (g := self._device.get(Scope.of_gpu(node, gpu).key, {}).get(signal))
             is not None]
    first = min(found, key=lambda g: (g.onset_ts, g.ts)) if found else f
    told = gpus[:_BOARD_HELD_MAX]
    extra: dict[str, Any] | None = None
    if wide:
        extra = {"gpus": told, "recommended_because": (
            f"PCIe replays on {len(told)} GPUs of {node} at once (GPUs {_listed(told)}; at "
            f"{self.cfg.pcie_evidence:g}+ within about a minute, DCGM's rate): GPUs that "
            "share a PCIe switch on the baseboard (with their NICs) -- the node, not each "
            "GPU; `lspci -vvv` link status and `nvidia-smi -q -d PCIE` on each, "
            "`dcgmi diag -r 2` before returning it")}
    else:
        extra = {"recommended_because": (
            f"PCIe replays on GPU {gpus[0]} of {node} (at {self.cfg.pcie_evidence:g}+ "
            "within about a minute, DCGM's rate) while its rank -- or its node's TP group "
            "waiting for it -- runs slow: its PCIe link; `nvidia-smi -q -d PCIE` "
            f"-i {gpus[0]} (link width and generation), `dcgmi diag -r 2`")}
    fired: list[Alert] = []
    if board is not None:  # (open: it takes what is new, and names every GPU)
        p, basis = board, None
        p.extra["gpus"] = sorted({*p.extra["gpus"], *told})[:_BOARD_HELD_MAX]
    else:
        p, basis = self._raise(
            ISOLATION, "hardware", "gpu_hardware",
            Scope.of_node(node) if wide else Scope.of_gpu(node, gpus[0]), first, fired,
            latched=True, detected_ts=now, extra=extra), first
    for g in found:
        if g is not basis and self._owner.get(g.key) != p.key:
            p.add(g, self.cfg.evidence_items)
            self._own(g, p)
    explained = [f] if f.signal == "slow_rank" else []
    for unit in sorted(self._units_of_node.get(node, ())):
        g = self._slow_wait.get(unit)
        if g is not None and g is not f and g.job == f.job and (
                g.evidence.get("node_wide") or g.scope.gpu in gpus):
            explained.append(g)
    for g in explained:
        self._slow_wait.pop(g.scope.key, None)
        if g is not basis:
            p.add(g, self.cfg.evidence_items)
        self._own(g, p)
    if fired:  # (said with what it took)
        out.append(self._alert(p, now))
    if not wide and not f.evidence.get("node_wide"):
        self._supersede(f.scope, p, out)
        return p
    if board is None and wide:  # (the GPUs' replay pages already firing: the node's now)
        self._fold_gpu_pages(node, gpus, cluster, p, "gpu_hardware", "PCIe trouble", now)
    esc = self.problems.get(self.dedup_key(ESCALATION, "slow_node", Scope.of_node(node),
                                           cluster))
    if esc is not None and esc.status == "firing" and not esc.latched:
        self._superseded(esc, p, now, out)  # (its slow ranks: the replays' consequence)
    for gpu in sorted({g.scope.gpu for unit in self._units_of_node.get(node, ())
                       for g in self._device.get(unit, {}).values()
                       if g.scope.level == "gpu" and g.scope.gpu is not None}):
        self._supersede(Scope.of_gpu(node, gpu), p, out)  # (its GPUs' slow escalations)
    return p


def _on_pcie_seen(self, f: Finding) -> None:
    """A GPU's PCIe replays at DCGM's rate (``pcie_seen``, evidence): its node's PCIe page,
    firing, takes it (and names the GPU); else the node's slow ranks are weighed against it
    once its siblings' samples of the same poll can be in (BOARD_WINDOW_S: _pcie_due)."""
    node = f.scope.node
    if node is None or f.scope.level != "gpu" or self._join_board(f, "gpu_hardware"):
        return
    self._timer(f.ts + BOARD_WINDOW_S, "pcie", node)


def _pcie_due(self, node: str, due: float, out: list[Alert]) -> None:
    """A GPU of ``node`` began replaying (:meth:`_on_pcie_seen`) and its poll is in: its
    slow ranks waiting past their wait are decided now (held for this poll,
    :meth:`_hold_for_ecc`, they need not wait on); one escalated already, the escalation
    still firing, is the replays' (:meth:`_pcie_impact`): the attributed page supersedes
    it (blind20 P1: the node escalated slow_node/unknown, the GPUs' pages beside it)."""
    gpus = self._pcie_troubled(node)
    units = sorted(self._units_of_node.get(node, ()))
    for unit in units:
        g = self._slow_wait.get(unit)
        if g is not None and (g.evidence.get("node_wide") or g.scope.gpu in gpus) and (
                due >= g.ts + self._explanation_wait(g)):
            self._slow_due(unit, due, out)
    for unit in units:
        g = self._device.get(unit, {}).get("slow_rank")
        q = self.problems.get(self._owner.get(g.key, "")) if g is not None else None
        if (g is not None and q is not None and q.topic == ESCALATION
                and q.status == "firing" and self._pcie_impact(g, due, out)):
            return


def _hold_for_ecc(self, f: Finding, due: float) -> bool:
    """Hold the escalation of a rank slow alike with its node's others (``node_wide``)
    while ranks of its replica on that node keep their peers' pace, until the node's ECC
    poll after the slowdown can have come (``unknown_cadence_s``: DCGM's 30 s, the
    correlator is told no ECC cadence) and its run has lasted ``host_straggler.LONE_S``:
    True when held.

    With TP inside the node every rank of the replica runs at the pace of its slowest; the
    ranks slow in compute wait inside it for the ones that are not -- late by their host
    path (a PCIe link or switch replaying, a CPU, a loader), which no step record names.
    The one cause telemetry can name there, PCIe replays, comes with the next ECC poll
    (``pcie_seen``, which ends the hold: :meth:`_on_pcie_seen`).  blind20 P1 board-s2:
    the node's six waiting ranks escalated slow_node/unknown 3 s before the poll showed
    GPUs 2 and 3 replaying.  A replica slow on all its ranks there is not held.

    A rank straggling alone by its host path (``basis`` ``host_time``: detector.steps
    _page_lone, its compute normal) is held the same way: its own GPU's PCIe link is the
    one cause telemetry can name there (blind25 P1: a link trained down x16 -> x8,
    replaying 0.2-1 a second), and the poll that shows it attributes the page
    (``gpu_hardware``, :meth:`_pcie_impact`).

    Without a cause either is escalated only once its run has lasted ``LONE_S`` from its
    onset, with or without ECC telemetry: a host path slow for a few seconds is routine
    (revA35 1: one rank's; revA35 9: the same on a TP-in-node job, its seven mates waiting
    for it in compute, was escalated at the node 3.9 s after onset), and such a run that
    ends before pages nothing (:meth:`_lone_dropped`)."""
    until = self._lone_due(f)
    if until is None:
        return False
    if due >= until:
        return False
    self._timer(until, "slow", f.scope.key)
    return True


def _lone_due(self, f: Finding) -> float | None:
    """When :meth:`_hold_for_ecc` lets the slow rank ``f`` be escalated without a cause
    (None: not held)."""
    node = f.scope.node
    own = f.evidence.get("basis") == "host_time"  # (a rank late alone by its host path)
    if node is None or f.job is None or not (own or f.evidence.get("node_wide")):
        return None
    if not own and not any(
            (s := self._device.get(Scope.of_gpu(node, g).key, {}).get("slow_rank"))
            is None or s.job != f.job
            for g, dp in self._job_gpus(node, f.job) if dp == f.dp_rank):
        return None  # (its replica slow on all its ranks there: nothing waited for)
    lasted = f.onset_ts + host_straggler.LONE_S
    if self.seen is not None and not self.seen(node, "ecc"):
        return lasted
    since = f.evidence.get("clearly_slow_since") or f.onset_ts
    return max(lasted, float(since) + 1.25 * self.cfg.unknown_cadence_s + 1.0)


def _lone_dropped(self, waiting: Finding, ended: float) -> bool:
    """Whether a held slow rank's run (``waiting``: :meth:`_hold_for_ecc`) ended at ``ended``
    before it could be escalated: a burst, no page -- a lone host straggler's before its
    escalation was due, a TP mate waiting for one's before ``LONE_S`` (a run that lasted
    that long and ended while its ECC poll was awaited is paged)."""
    until = self._lone_due(waiting)
    if until is None:
        return False
    if waiting.evidence.get("basis") == "host_time":
        return ended < until
    return ended < waiting.onset_ts + host_straggler.LONE_S
