"""Slow ranks: the explanation a slow rank finds on its GPU or node, its wait for
one, and its escalation when none comes; a rank or node late by its host.
"""

from __future__ import annotations

import math
from itertools import islice
from typing import Any

from detector import host_node, job_pace, stuck_clock
from detector.alerts import ESCALATION, ISOLATION, Alert, Scope
from detector.correlate.common import (
    _HELD_CLOCK,
    _THROTTLES,
    Problem,
    _alike,
    _found_alike,
    _gpus_told,
    _reason_bits,
)
from detector.findings import Finding
from detector.part_window import _UNITS_TOLD
from detector.playbook import clock_diagnostic, next_diagnostic

_CLOCK_PEERS = 4096  # ranks of the job read for its peers' clock (a bound per escalation)
# A replica is one unit slow across its nodes when they slowed together: a TP group spanning
# nodes runs at its slowest GPU's pace from the same step on every node of it (review13 S3:
# onsets on one step).  A node of the replica whose slow ranks began more than this before or
# after is a fault of its own (peer42, blind32 F4: a replica's stage-2 node capped at 355 s, its
# stage-3 node's GPU slow from 548 s, the second escalated as the replica -- a miss and a false
# positive).  A minute holds a CUSUM's onset estimate a few steps either way on slow steps.
REPLICA_ONSET_S = 60.0
HELD_GPUS = 2        # a node's slow GPUs held by a setting, at least, for a software page
# A cohort's clock policy (_clock_policy): a node's busy clock POLICY_MIN or more below its job's
# other GPUs' (a boost clock wanders ~1 %: 3 % is a setting, not chance), shared within
# POLICY_BAND of the reference by another node of the job.
POLICY_MIN = 0.03
POLICY_BAND = 0.02
# A clock down with no reason waits for its GPU's next sample to agree (_clock_sample_due) only
# where that sample comes within this: a reason bit trails its clock by seconds, not polls.
TRAIL_WAIT_S = 10.0


def _host_alone(f: Finding) -> bool:
    """Whether ``f`` is a rank late by its own host path (``basis`` ``host_time``: detector.
    host_straggler) with no other rank of its job on its node (``node_mates`` 0): nothing
    there tells its GPU's link from its host's CPUs, storage or NUMA placement, and its node
    holds both -- the unit to escalate without a cause (revA35 6: eight ranks one a node);
    its GPU's PCIe replays still name the GPU (Correlator._pcie_impact, before this)."""
    return f.evidence.get("basis") == "host_time" and f.evidence.get("node_mates") == 0


def _in_step(f: Finding, mate: Finding) -> bool:
    """Whether slow ranks ``f`` and ``mate`` were found at the same step of their job with the
    same deviation from their peers: in step, as TP partners are (Correlator._mates_cause)."""
    step = f.evidence.get("step")
    return step is not None and step == mate.evidence.get("step") and _alike(f, mate)


# -- slow ranks: attribution and escalation ------------------------------------------

def _explanation(self, f: Finding) -> Problem | None:
    """A firing isolation problem whose signals on the same GPU explain a slow rank (or on
    its node: a power brake on two GPUs or more of the node, or several GPUs of it throttling
    thermally, raised at node scope), or a throttle on either that let go after the slow
    run began (:meth:`_ended_throttle`)."""
    units = [f.scope.key]
    if f.scope.level == "gpu" and f.scope.node is not None:
        node = Scope.of_node(f.scope.node).key
        verdict = self._device.get(node, {}).get("throttle")
        if self._node_throttle(f) is not None or (
                verdict is not None and self._covers(f, verdict)):
            units.append(node)
    for unit in units:
        for signal, g in self._device.get(unit, {}).items():
            if signal == "slow_rank" or not (g.verdict or signal in _THROTTLES):
                continue
            key = self._owner.get(g.key)
            p = self.problems.get(key) if key else None
            if p is not None and p.status == "firing" and p.topic == ISOLATION and (
                    g.verdict or p.kind == "slow_node"):
                # (A throttle that is evidence only explains the rank when an open
                # slow_node isolation has taken it: its node's own power limit, every busy
                # GPU capped -- blind5 pl-wrong, the node's ranks escalated slow_node/
                # unknown 3.5 s after the node's power isolation.  A routine cap nobody
                # paged still explains nothing.)
                return p
    p = self._open_hardware(f.scope, f.cluster) or self._open_brake(f)
    if p is not None:
        return p
    return self._ended_throttle(f) if self._throttled else None


def _open_hardware(self, scope: Scope, cluster: str | None) -> Problem | None:
    """The hardware isolation still open on GPU ``scope``, whatever its findings now.

    It is latched until the GPU's reset, but its findings clear between episodes (a
    PCIe link's replay storms come and go, the counter still between them): a slow rank
    on that GPU in the next episode, before the next ECC poll shows its replays, is the
    same fault -- evidence of the open page, not a second page for the GPU (blind10
    K4: hgx-b05/6 isolated for its replays at 68 s, escalated slow_node/unknown at 233 s
    while the isolation was open)."""
    if scope.level != "gpu":
        return None
    p = self.problems.get(self.dedup_key(ISOLATION, "hardware", scope, cluster))
    return p if p is not None and p.status == "firing" else None


def _open_brake(self, f: Finding) -> Problem | None:
    """The power page still firing on the slow rank's node that names its GPU (a GPU of the
    page's throttle evidence, or told it: ``gpus_in_telemetry``).

    A power supply or board brakes in episodes (0x80 for 15-40 s every minute or two): its
    page stands between them, its throttle rows clear.  A rank of a GPU the page names slow
    in the next episode, before the node's next poll shows the brake, is the same fault --
    evidence of the open page, as a slow rank under a GPU's open hardware isolation is
    (:meth:`_open_hardware`), not a second page at the GPU (tenant41 H4, blind28: a new
    fine-tune's rank on gpu-r07-n01, its node paged for power 350 s before, x2.1 from an
    episode's first step, escalated unknown 2 s before the poll that showed 0x80 on all 8
    GPUs)."""
    if f.scope.level != "gpu" or f.scope.node is None or f.scope.gpu is None:
        return None
    p = self.problems.get(self.dedup_key(ISOLATION, "slow_node", Scope.of_node(f.scope.node),
                                         f.cluster))
    if p is None or p.status != "firing" or p.cause != "power":
        return None
    if f.scope.gpu in _gpus_told(p) or any(
            item.get("signal") in _THROTTLES and (item.get("unit") == f.scope.key or (
                isinstance(item.get("gpus"), list) and f.scope.gpu in item["gpus"]))
            for item in p.evidence):
        return p
    return None


def _node_verdict(self, f: Finding) -> Problem | None:
    """A hardware isolation firing on a GPU of the slow rank's node, when the rank is
    slow with its node's others alike (``node_wide``, detector.steps: TP inside the
    node, its ranks at the pace of its slowest GPU): they are that GPU's consequence and
    join its verdict (blind4 D3: an NVLink fault's slowed TP group was escalated as
    ``slow_node/unknown`` beside the ``hardware/nvlink`` isolation).  A rank slow alone
    on its GPU is its own problem.

    Only a fault that can be theirs explains them: on the node as a whole, or on a GPU
    of their job there (where its ranks run, ``job_layout``; or one with a slow rank of
    it) -- not on any GPU of the node: a GPU outside the job, off the bus minutes
    before, swallowed the job's TP group slowed alike and its slowness was paged nowhere
    (review13 S1)."""
    if not f.evidence.get("node_wide") or f.scope.node is None:
        return None
    node = Scope.of_node(f.scope.node).key
    mine = self._job_units(f.scope.node, f.job)
    for unit in sorted(self._units_of_node.get(f.scope.node, ())):
        signals = self._device.get(unit, {})
        if unit != node and not self._of_job(f, unit, mine):
            continue
        for g in signals.values():
            if g.kind != "hardware" or not g.verdict:
                continue
            key = self._owner.get(g.key)
            p = self.problems.get(key) if key else None
            if p is not None and p.status == "firing" and p.topic == ISOLATION:
                return p
    return None


def _job_gpus(self, node: str, job: str | None) -> list[tuple[int, int | None]]:
    """The GPU and replica (dp) of each rank of ``job`` on ``node``, as placed
    (``job_layout``; in the placement's order, a GPU once a rank)."""
    return [(g, dp) for (j, _), (g, dp) in self._placement.on_node.get(node, {}).items()
            if j == job]


def _job_units(self, node: str, job: str | None) -> set[str]:
    """The units (GPU keys) of ``node`` where ranks of ``job`` run (:meth:`_job_gpus`)."""
    return {Scope.of_gpu(node, g).key for g, _ in self._job_gpus(node, job)}


def _of_job(self, f: Finding, unit: str, mine: set[str]) -> bool:
    """Whether GPU ``unit`` of the slow rank ``f``'s node is its job's: a rank of the job
    runs there (``mine``: :meth:`_job_units`), or it is ``f``'s own or holds another slow
    rank of the job (:meth:`_slow_with`: where the job's layout is not known)."""
    return unit in mine or self._slow_with(f, unit)


def _slow_with(self, f: Finding, unit: str) -> bool:
    """Whether GPU ``unit`` is the slow rank ``f``'s own or holds another slow rank of its
    job (:meth:`_of_job`, where the job's layout is not known)."""
    if unit == f.scope.key:
        return True
    g = self._device.get(unit, {}).get("slow_rank")
    return g is not None and g.job == f.job


def _node_escalated(self, f: Finding) -> bool:
    """The slow rank's node is escalated slow and still firing (its ranks found together
    earlier, some since back at their peers' pace): a rank of it slow again joins the
    node's page rather than paging its GPU (blind4 D3: a bad spare's ranks, each
    re-found alone over the next 10-40 min, were each a new GPU escalation)."""
    if f.scope.node is None:
        return False
    p = self.problems.get(self.dedup_key(ESCALATION, "slow_node", Scope.of_node(
        f.scope.node), f.cluster))
    return p is not None and p.status == "firing"


def _ended_throttle(self, f: Finding) -> Problem | None:
    """A throttle isolation on the slow rank's GPU or node, still firing (waiting out its
    quiet time), whose throttling was on when the rank's slow run began: a slow run found
    after its cause let go -- a 78 s step's CUSUM takes minutes -- is that cause's (blind3
    B3: a cooling node's slow rank escalated 'unknown' a minute after its GPUs stopped
    throttling, beside the node's thermal isolation)."""
    if f.scope.node is None:
        return None
    for unit in (f.scope.key, Scope.of_node(f.scope.node).key):
        g, ended = self._throttled.get(unit, (None, -math.inf))
        if g is None or ended < f.onset_ts or not self._covers(f, g):
            continue
        p = self.problems.get(self.dedup_key(ISOLATION, "slow_node", g.scope, g.cluster))
        if p is not None and p.status == "firing":
            return p
    return None


def _mates_cause(self, f: Finding) -> Problem | None:
    """A slow_node isolation for power or heat firing on the slow rank's node -- at node
    scope, or the one that explains a mate's rank on another GPU of it -- when the rank is
    slow alike with its node's others (``node_wide``, detector.steps: TP inside the node,
    every rank at the pace of its slowest GPU): the ranks are that GPU's consequence and
    join its page (blind5 E7: a fan failing beside GPU 5, its thermal isolation firing,
    and the node's 8 TP ranks escalated 'unknown' beside it -- two pages for one part).
    A mate counts when it is of the same job and slow alike too; a rank slow alone on
    its GPU is its own problem.

    Slow alike is also ranks found at the same step with the same deviation (within
    steps' ``TP_LOCKED``: TP partners wait in one all-reduce, so their compute_ms are
    one), told ``node_wide`` or not: a job's warm-up after a restart finds a node's ranks
    all at once as gross outliers, where no mate is left to be told alike (blind8
    scale-1k: the HBM-throttled gpu0124/5's rank joined its open thermal isolation, its 7
    TP mates at 1.517-1.528x were escalated slow_node/unknown at node scope 12 min after
    it -- a second page for one GPU's heat)."""
    node = f.scope.node
    if node is None:
        return None
    wide = bool(f.evidence.get("node_wide"))
    whole = self.problems.get(self.dedup_key(ISOLATION, "slow_node", Scope.of_node(node),
                                             f.cluster))
    if whole is None or whole.status != "firing" or whole.cause not in _HELD_CLOCK:
        whole = None
    elif wide:
        return whole
    for unit in sorted(self._units_of_node.get(node, ())):
        mate = self._device.get(unit, {}).get("slow_rank")
        if mate is None or mate is f or mate.job != f.job:
            continue
        key = self._owner.get(mate.key)
        p = self.problems.get(key) if key else None
        if (p is None or p.status != "firing" or p.topic != ISOLATION
                or p.kind != "slow_node" or p.cause not in _HELD_CLOCK):
            continue
        if ((wide and mate.evidence.get("node_wide")) or _in_step(f, mate)
                or (p is whole and _alike(f, mate) and self._throttling_at(node, f))):
            # (under the node's own cap or heat every rank of the job on it slows alike,
            # found steps apart or not: blind5 pl-wrong's eighth rank, 60 s after the rest)
            return p
    return None


def _on_slow(self, f: Finding, out: list[Alert]) -> None:
    unit = f.scope.key
    if not f.active:
        waiting = self._slow_wait.get(unit)
        held = self._fleet_held.pop(unit, None)  # (a site's cap explained the run)
        if (waiting is not None and f.ts >= waiting.ts + self._explanation_wait(waiting)
                and self._benign_explanation(waiting, f.ts) is None and held is None
                and not self._lone_dropped(waiting, f.ts)):
            # Held past its wait only for its hot GPU's next sample (_warming), and the
            # run ended first: a hot GPU delays a page, never cancels one (reproducer
            # interval-30 s9944: a GPU 26 C over its node's median, its rank 13 % slow
            # for 38 s, the 30 s sample in between in an intermittent throttle's off
            # phase -- the fault was never paged).
            self._slow_due(unit, f.ts, out, ended=True)
        self._slow_wait.pop(unit, None)
        self._cleared(f, out)
        return
    if "alone_on_node" in f.evidence:  # (told again: slow alone on its node, steps.alone)
        self._narrow_node_page(f, out)
        return
    if "grown_from" in f.evidence:
        # The same run told again, grown well past the pace it was told at
        # (detector.steps' _grown_runs): a rank still held is weighed afresh on its
        # pace now (a minor cap's excuse measured a ramp's first few percent); one paged
        # or explained keeps its owner, the fresh evidence on the unit.
        held = self._slow_wait.get(unit)
        if held is not None:
            self._slow_wait[unit] = f
            if f.ts >= held.ts + self._explanation_wait(held):
                self._slow_due(unit, f.ts, out, grown=True)
            else:  # (still waiting for its GPU's first sample: as long as for a new one)
                self._timer(f.ts + self._explanation_wait(f), "slow", unit)
        return
    seen = self._routine_cap.get(unit)
    if seen:
        # Capping seen since this slowdown began was not routine: the rank was already
        # slow, just not yet found so (an intermittent power fault's first episode).
        # Nor was the capping the slowdown began with (_cap_began_apart's): a cap creeping
        # in cost its rank a point or less at first, and the CUSUM finds the run later.
        since = self._cap_since.get(unit)
        began = since[0] if since is not None and (
            since[0] >= f.onset_ts - self.cfg.impact_onset_s) else math.inf
        seen[:] = [c for c in seen if c[1] < min(
            began, f.onset_ts - self.cfg.routine_cap_slot_s)]
        if not seen:
            del self._routine_cap[unit]
    p = self._explanation(f) or self._node_verdict(f)
    if p is not None:
        p.add(f, self.cfg.evidence_items)
        self._own(f, p)
        return
    if (self._power_impact(f, f.ts, out) or self._throttle_impact(f, f.ts, out)
            or self._pcie_impact(f, f.ts, out)):
        return
    self._slow_wait[unit] = f
    self._timer(f.ts + self._explanation_wait(f), "slow", unit)


def _explanation_wait(self, f: Finding) -> float:
    """How long a slow rank waits for a cause before a human is paged.

    What could explain it is its GPU's thermal telemetry (a throttle raises
    throttle_seen on the first sample that shows it), so the wait ends once the first
    sample taken after the slowdown began is due: a collector samples on a fixed cadence,
    the node's phase known from the sample that reported its interval.  "After the
    slowdown began" is the end of the run's first clearly slow step (``clearly_slow_since``:
    a step's ``ts`` is its end, so a cause that slowed that step had begun by then), or,
    without one, two steps past the run's onset (the CUSUM's onset can lead the real
    change by a step or two: a chance slow step just before it); a gross outlier from a
    job's start was slow from its first step.  Never longer than one interval and a
    quarter plus a second (a sample lost or late).  While the node's cadence is not known
    (or it sends no thermal telemetry) an ordinary slow rank waits ``escalate_after_s``
    at least (other explanations, an XID, a NIC, arrive at their own pace); once it is,
    the sample is what the rank waits for, and a rank found with that sample already in
    hand is decided at once: at a 1 s collector the sample after the run's first clearly
    slow step is in before the CUSUM finds the run, and the 3 s floor was 3 steps of a
    silent slowdown's latency, waiting for nothing (int43: in the matrix's 1 s cells every
    silent slowdown was paged exactly 3.0 s after it was found).
    """
    gross = bool(f.evidence.get("gross_outlier"))
    wait = self.cfg.gross_escalate_after_s if gross else self.cfg.escalate_after_s
    interval, phase_ts = self._interval.get(f.scope.node or "", (0.0, 0.0))
    late = _row_slack(self, f.scope.node or "")  # (its rows' delivery and jitter)
    if interval <= 0.0:
        if not gross and self.seen is not None and f.scope.node and self.seen(
                f.scope.node, "thermal"):
            # Thermal telemetry comes, at a cadence not known yet (a collector's interval
            # is told after two like gaps: 60-90 s into a 30 s collector's life): wait as
            # for dcgm-exporter's default until it is (the "sampling" finding re-arms).
            return max(wait, 1.25 * self.cfg.unknown_cadence_s + 1.0)
        return wait  # no thermal telemetry from this node (yet)
    longest = max(wait, 1.25 * interval + 1.0 + late)
    runs = int(f.evidence.get("run_steps") or 0)
    period = (f.ts - f.onset_ts) / (runs - 1) if runs > 1 else 0.0
    since = f.evidence.get("clearly_slow_since")
    after = f.onset_ts if gross else since if since else f.onset_ts + 2.0 * period
    sample = _rank_sample(self, f, interval, phase_ts, late, after)
    return min(longest, max(0.0, sample - f.ts))


def _rank_sample(self, f: Finding, interval: float, phase_ts: float, late: float,
                 after: float) -> float:
    """When the sample a slow rank waits for (:meth:`_explanation_wait`) is here: its own
    GPU's first sample taken at ``after`` or later, or -- slow alike with its node's others
    (common._found_alike: TP inside the node, every rank at the pace of its slowest GPU, which
    may be any of them) -- the last of its job's GPUs' there (every GPU of the node with a
    phase known where its job's layout is not).

    A collector may sample a node's GPUs each at its own phase (one query a GPU, spread over
    the interval), so the node's phase -- the last GPU to tell its cadence -- says nothing of
    another GPU's: blind16 fleet-s1's CDU-hot GPU 1 sampled at :x3.9, GPU 2 (the node's
    phase) at :x8.5, its TP group's 8 ranks found at 1111.1 with GPU 2's sample after their
    slowdown in, escalated slow_node/unknown 2.8 s before GPU 1's sample showed 0x20 (int43;
    the 3 s floor before hid it by 0.2 s).  GPUs sampled together (one scrape a node) wait
    as for the node's phase."""
    node = f.scope.node or ""
    phases = self._phases.get(node)
    if not phases or interval < 5.0:  # (below 5 s the wait is a whole interval: _next_sample)
        return _next_sample(interval, phase_ts, late, after)
    if _found_alike(f):
        gpus = {g for g, _ in self._job_gpus(node, f.job)} or set(phases)
        if f.scope.gpu is not None:
            gpus.add(f.scope.gpu)
    else:
        gpus = {f.scope.gpu}
    own = self._cadences.get(node, {})  # (each GPU at the interval it told with its phase)
    return max(_next_sample(own.get(g, interval), phases[g], late, after) if g in phases
               else _next_sample(interval, phase_ts, late, after) for g in gpus)


def _next_sample(interval: float, phase_ts: float, late: float, after: float) -> float:
    """When a collector sampling every ``interval`` s in phase with ``phase_ts``, its rows
    delivered up to ``late`` s behind, has delivered its first sample taken at ``after`` or
    later: the sample's jitter and its delivery allowed."""
    if interval >= 5.0:
        # Collectors are configured in whole seconds (dcgm-exporter's 30 s, a scrape
        # interval): one measured gap carries the samples' jitter, which would add up
        # over the many intervals since the phase was seen.
        interval = float(round(interval))
        sample = phase_ts + math.ceil((after - phase_ts) / interval) * interval
        return sample + max(1.0, 0.05 * interval) + late
    return after + interval + 0.25 * interval + late


def _sample_due(self, node: str, after: float) -> float | None:
    """When ``node``'s first thermal sample taken at ``after`` or later is here
    (:func:`_next_sample` by its cadence and its rows' lateness) -- None while its cadence is
    not known."""
    interval, phase_ts = self._interval.get(node, (0.0, 0.0))
    if interval <= 0.0:
        return None
    return _next_sample(interval, phase_ts, _row_slack(self, node), after)


def _row_slack(self, node: str) -> float:
    """How far past its grid a row of ``node`` may come: the most its rows were seen late
    (:func:`_note_late_row`) and off their grid (detector.cadence's jitter: a collector that
    samples each GPU at a time of its own, a few seconds either way, revA45 F3)."""
    return self._late_rows.get(node, 0.0) + self._jitter.get(node, 0.0)


# The thermal monitor's findings, each made on one row at the row's own time (detector.thermal,
# detector.throttle): how far behind its source's clock such a finding was made is how late
# that row was delivered.
_ROW_SIGNALS = frozenset({"sampling", "sm_clock", "gpus_busy", "hot", "hot_seen", "power_cap",
                          "throttle", "throttle_seen", "throttle_minor"})


def _note_late_row(self, f: Finding, tag: float) -> None:
    """Note how late a thermal row of ``f``'s node came: ``f`` made on it at the row's time,
    ``tag`` its source's clock then (CorrelatorPartition._release_findings; the same in the
    service and in process).  A slow rank's wait for its GPU's next sample ends that much
    later (:meth:`_explanation_wait`): DESIGN lets a record come 5 s out of order, and a
    node's collector that delivers so delivers its next poll so.  revA38 F7: a node's brake
    at 30 s polls, every record up to 4 s late -- the ranks' wait ended 1.5 s after the
    sample, the sample still on its way, and the node was escalated slow_node/unknown 60 s
    before its power isolation (3 of 6 runs).  A node delivering in order (its rows never
    behind the clock) waits as before; the most noted is kept, gone with the node's
    cadence (prune).  A row more than ``lateness_s`` behind (DESIGN's bound) is no delivery
    of this poll and is not noted: a node whose clock runs behind, before its offset is
    learnt (Monitors._behind), sends rows 170 s "late" -- noted as 5 s, its slow ranks
    waited 3 s past their GPU's sample for ever after (tests/test_clock_round13.py, once
    the wait had no 3 s floor to hide it: int43)."""
    node = f.scope.node
    if node is None or f.signal not in _ROW_SIGNALS or (
            f.signal == "sampling" and f.kind == "network"):
        return
    late = tag - f.ts
    if late > self.cfg.lateness_s or late <= self._late_rows.get(node, 0.0):
        return
    # The node's slow ranks still in their first wait wait longer now: re-armed at its new
    # end (their timer at the old end finds them not yet due, _slow_due, and leaves them).
    # Without it a rank armed before the figure grew was never decided (blind28 held
    # spread-s6: hgx-a07/6's wait grew 5.31 -> 5.34 s, its straggler never paged).
    waiting = [(unit, g, g.ts + self._explanation_wait(g))
               for unit in sorted(self._units_of_node.get(node, ()))
               if (g := self._slow_wait.get(unit)) is not None]
    self._late_rows[node] = late
    for unit, g, end in waiting:
        if end > self._clock:  # (a rank past its first wait is held by its own timers)
            self._timer(g.ts + self._explanation_wait(g), "slow", unit)


def _slow_due(self, unit: str, due: float, out: list[Alert], ended: bool = False,
              grown: bool = False) -> None:
    """Decide a slow rank whose wait for a cause is over (``ended``: its run has ended
    while it was held, so there is no next sample to wait for; ``grown``: held past its
    wait, its run told again at a larger pace -- its wait was over before)."""
    f = self._slow_wait.get(unit)
    if f is None or (not grown and due < f.ts + self._explanation_wait(f)
                     and "throttle_seen" not in self._device.get(unit, {})):
        return  # (a throttle seen explains it now: _throttle_impact's wait for the node)
    hold = self._poll_hold.get(f.scope.node or "")
    if hold is not None and due < hold and not ended:
        self._timer(hold, "slow", unit)  # (a capped GPU's page waits for its poll)
        return
    p = self._explanation(f) or self._node_verdict(f)
    if p is not None:
        del self._slow_wait[unit]
        p.add(f, self.cfg.evidence_items)
        self._own(f, p)
        return
    if (self._power_impact(f, due, out) or self._throttle_impact(f, due, out)
            or self._pcie_impact(f, due, out)):
        return
    if not ended and self._held_for_site(f, due):
        # A site's cap explained it lately (_fleet_explains): looked at again until its run
        # ends -- 1-80 s after the cap let go in blind21's tune logs (a run clears only
        # after slow_clear_steps steps at its peers' pace); still slow flap_window_s after
        # the cap last explained it (two nodes' cap: first) is a fault.
        self._timer(self._site_look(f, due), "slow", unit)
        return
    if self._benign_explanation(f, due) is not None:
        # Look again later: still slow once power management has let go is a fault.
        self._timer(due + self.cfg.benign_grace_s / 2, "slow", unit)
        return
    if not ended and (self._warming(f, due) or self._hold_for_ecc(f, due)
                      or self._node_sample_due(f, due) or self._burst_sample_due(f, due)
                      or _cap_sample_due(self, f, due) or _clock_sample_due(self, f, due)):
        return
    if "noise_hold" in f.evidence:
        # Evidence only: a run held for its job's noise (detector.steps' JobMonitor._held_runs,
        # told as no verdict) is paged with a cause, above; none without one until it is told
        # again unmarked -- it waits here, where a cause told later still finds it (a throttle
        # seen).
        return
    partners, pipe = self._tp_partners(f)
    if partners or pipe:
        # Its TP group spans nodes, or its replica's other stages are paced alike
        # (detector.correlate.trays): a cause shown on a node of the group is the group's,
        # a cause that took a stage's ranks the pipeline's; none yet while a rank of the
        # group waits for its own sample, or a stage's for its own.
        p = (self._group_cause(f, partners) if partners else None) or self._pipe_cause(pipe)
        if p is not None:
            del self._slow_wait[unit]
            p.add(f, self.cfg.evidence_items)
            self._own(f, p)
            return
        until = None if ended else self._group_pending(f, partners, due, pipe)
        if until is not None:
            self._timer(until, "slow", unit)
            return
        if partners and self._page_lone_reason(f, partners + pipe, due, out):
            return
    del self._slow_wait[unit]
    # Group only with the same job's slow ranks (evidence never mixes tenants), and not
    # with ranks that power management explains.
    members = [g for g in self._unexplained_slow() if g.job == f.job
               and self._benign_explanation(g, due) is None
               and (g is f or not self._held_for_site(g, due))]
    node = [g for g in members if g.scope.node == f.scope.node]
    replica = {g.scope.node: g for g in members
               if g.job == f.job and g.dp_rank is not None and g.dp_rank == f.dp_rank
               and abs(g.onset_ts - f.onset_ts) <= REPLICA_ONSET_S}
    whole = self._replica_across(f, members, node, len(replica))
    if whole is None and (len(node) >= 2 or _found_alike(f)) and not (
            self._node_escalated(f)) and self._gpu_page_returns(f, node, due, out):
        return  # (a quiet GPU page's return with one mate: problems._gpu_page_returns)
    if whole is not None:
        scope, group = Scope.of_replica(f.job, f.dp_rank), whole  # type: ignore[arg-type]
    elif len(node) >= 2 or self._node_escalated(f) or _host_alone(f) or (
            _found_alike(f) and not self._site_lately(f, due)):
        scope, group = Scope.of_node(f.scope.node), node  # type: ignore[arg-type]
    elif len(replica) >= 2 and f.job is not None and f.dp_rank is not None:
        scope, group = Scope.of_replica(f.job, f.dp_rank), list(replica.values())
    elif stuck_clock.page(self, f, due, out) is not None:
        return  # (its own GPU's clock stuck low with no reason, its mates free)
    else:
        scope, group = f.scope, [f]
    lone = self._lone_clock(f, group) if scope.level == "replica" else None
    basis = f
    if lone is not None:
        scope, basis = lone[0].scope, lone[0]
    # (a rank late by its host path names its own: the PCIe link, the host's CPUs)
    extra = {"ruled_out": self._ruled_out(basis), "next_diagnostic": basis.evidence.get(
        "next_diagnostic") or next_diagnostic("slow_node", scope)}
    held = self._held_clock(f, [lone[0]] if lone is not None else group)
    if lone is not None:
        extra["replica_slow"] = lone[1]
    if held is not None:
        extra["ruled_out"].insert(0, held.pop("why"))
        extra["sm_clock"] = held
        extra["next_diagnostic"] = clock_diagnostic(scope, held["sm_clock_mhz"])
    if held is None and lone is None and self._clock_policy(f, scope, group):
        for g in group:  # (a cohort's clock policy: routine, nobody paged)
            self._slow_wait.pop(g.scope.key, None)
        return
    sent = len(out)
    if held is not None and lone is None and self._held_by_setting(scope, group):
        # (every slow GPU of the node at a clock a setting holds: software, reset its clocks)
        p = self._raise(ISOLATION, "slow_node", "software", scope, f, out, detected_ts=due,
                        extra=extra)
        for g in group:
            self._slow_wait.pop(g.scope.key, None)
            if g is not f:
                p.add(g, self.cfg.evidence_items)
            self._own(g, p)
        if len(out) > sent:
            out[sent] = self._alert(p, due)
        return
    told = self._units_told(scope, f)
    p = self._raise(ESCALATION, "slow_node", "unknown", scope, f, out, detected_ts=due,
                    extra=extra)
    if told is not None and f.scope.key not in told and len(out) == sent:
        # A GPU of a node escalated and still firing, slow from after the page's first
        # finding (not one of the ranks that slowed with it, found a step or two later):
        # the same problem (its dedup_key, one page), re-sent with the new evidence --
        # DESIGN lets a firing alert be re-sent, and a human must hear that the node now
        # has a slow GPU it did not have (blind8 H2: a routing escalation open for
        # 37-290 s hid a GPU 15-22 % slow; the node holds it, so the re-sent page names
        # it).  Each GPU once: ``units_found_slow``.
        told.append(f.scope.key)
        p.extra["units_found_slow"] = told[-_UNITS_TOLD:]
        out.append(self._alert(p, due))
    for g in group:
        self._slow_wait.pop(g.scope.key, None)
        if g is not f:
            p.add(g, self.cfg.evidence_items)
        q = self.problems.get(self._owner.get(g.key, ""))
        self._own(g, p)
        if (q is not None and q is not p and q.topic == ESCALATION and q.status == "firing"
                and not q.active and not q.latched and p.scope.contains(q.scope)):
            # A GPU's escalation the node's (or its replica's) now takes: one page
            # (blind10 K5: hgx-a03/0 paged alone 19 s before the node, then both open
            # for 10 min).
            self._superseded(q, p, due, out)
        for h in self._device.get(g.scope.key, {}).values():
            if h.kind == "hardware" and not h.verdict:
                # Evidence the GPU's own monitors raised without a verdict (a corrected
                # single-bit error rate alone: detector.gpu_health) goes to the human
                # with the slow rank it may explain; a later one joins by
                # _attach_if_firing.
                p.add(h, self.cfg.evidence_items)
    if len(out) > sent:
        out[sent] = self._alert(p, due)  # the page itself carries what was added to it


def _node_sample_due(self, f: Finding, due: float) -> bool:
    """Hold a rank slow alike with its node's others (``node_wide``) until the sample
    most of them wait for is due: the median of their waits' ends (_explanation_wait).
    Each rank's wait ends at the first sample after its own clearly slow step, and one
    chance slow step before the node's slowdown puts that sample before it -- the node
    was escalated 'unknown' 2-5 s before the sample showing its GPUs' SW power cap
    (blind21 D1: rank 15 at +3.4 % twice, 4 s before the cap).  The node's page waits
    for the sample after its slowdown began, as a rank's does; at most one interval
    more.  True when held."""
    node = f.scope.node
    if node is None or not f.evidence.get("node_wide"):
        return False
    ends = sorted(g.ts + self._explanation_wait(g) for unit in self._units_of_node.get(
        node, ()) if (g := self._slow_wait.get(unit)) is not None and g.job == f.job
        and g.evidence.get("node_wide"))
    until = ends[len(ends) // 2] if ends else due
    if due >= until:
        return False
    self._timer(until, "slow", f.scope.key)
    return True


def _cap_sample_due(self, f: Finding, due: float) -> bool:
    """Hold a slow rank whose GPU -- or, slow alike with its node's others
    (common._found_alike), a GPU of its job there -- shows a SW power cap (0x4) begun with the
    slowdown (``impact_onset_s``) and told without what its free mates draw: until that GPU's
    next sample after the cap began is in (one interval from it at most).  True when held.

    The cap rule's power measure (correlate.power's _own_limit) compares a capped GPU's draw
    with its free mates' sampled on its poll (detector.thermal's _below_mates).  A GPU whose
    row comes first in its poll is told before its mates' rows of that poll are in, and its
    first capped sample carries no comparison -- its throttle_seen is told again with it on
    its next sample -- while the clock it sampled understates what a cap takes.  A rank
    decided between the two was escalated 'unknown' before the sample that names its cause
    (blind32 held zb-s4 cap-z-06: GPU 4's limit set low, 440 W beside mates at 500-530 W, its
    row 8-40 ms before theirs on the poll the cap began, its TP group 16 % slow beside a
    6.5 % clock dip: escalated slow_node/unknown at 9.2 s, paged power at its next sample,
    10.0 s -- int43's wait had ended at the poll that showed the cap)."""
    node = f.scope.node
    if node is None or f.scope.level != "gpu":
        return False
    units = [f.scope.key]
    if _found_alike(f):
        mine = self._job_units(node, f.job)
        units += [u for u in sorted(self._units_of_node.get(node, ()))
                  if u != f.scope.key and u.startswith("gpu:") and self._of_job(f, u, mine)]
    interval = self._interval.get(node, (0.0, 0.0))[0] or self.cfg.unknown_cadence_s
    slack = max(1.0, 0.05 * interval) + _row_slack(self, node)
    until = -math.inf
    for unit in units:
        seen = self._device.get(unit, {}).get("throttle_seen")
        if (seen is None or not seen.active or _reason_bits(seen) != 0x4
                or "mates_power_w" in seen.evidence):
            continue
        since = self._cap_since.get(unit)
        began = min(seen.ts, since[0]) if since is not None else seen.ts
        if abs(began - f.onset_ts) <= self.cfg.impact_onset_s:
            until = max(until, began + interval + slack)
    if due >= until:
        return False
    self._timer(until, "slow", f.scope.key)
    return True


def _clock_sample_due(self, f: Finding, due: float) -> bool:
    """Hold a slow rank whose own GPU's clock is down with no clock-event reason beside free
    mates (detector.stuck_clock's rule, which pages the GPU gpu_hardware) until the clock has
    stood so on the GPU's next sample too, and ``escalate_after_s`` past its first sample so
    (the slack of a sample's delivery on both) -- the next sample only where it is due within
    ``TRAIL_WAIT_S``.  True when held.

    NVML's reasons and its clock are fields read apart, and a reason can trail the clock it
    explains by a poll or more: a GPU capped with its slow rank showed its clock 12 % down on
    the slowdown's first sample and 0x4 on the next (5 s polls; at 1 s polls 3 polls later) --
    with int43's wait over at the first sample it was paged gpu_hardware, then power 12 s
    later: two pages of one GPU, the first with the wrong cause (revA44 F6; the 3 s floor had
    covered the lag).  A stuck clock is one sample's reading until its next confirms it, and
    its reasons may come a few seconds behind it; a clock told stuck long before the rank was
    found waits for nothing (blind23 C1: an H100 at 1590 MHz on every sample since its job
    began, its rank found 21 s later).

    A reason trails its clock by seconds (the driver's own update, fields read apart), not by
    polls: a 30 s poll shows a cap's clock without its bit only when the cap began in the
    seconds before it -- and waiting for its next sample held every clock stuck with no reason
    a whole poll more (revA45 F8: 30 s polls, paged gpu_hardware 34-59 s after the slowdown,
    4-29 s before this wait).  So the agreeing sample is waited for where it comes within
    ``TRAIL_WAIT_S`` (1-10 s polls: revA44 F6's 1 s / 3 polls and 5 s / 1 poll, wait44's 10 s
    / 1 poll); at longer polls the first sample's clock loss stands once ``escalate_after_s``
    has passed (a bit a few seconds behind it still comes in that)."""
    clock = stuck_clock.held(self, f)
    if clock is None:
        return False
    node = f.scope.node or ""
    interval = self._interval.get(node, (0.0, 0.0))[0] or self.cfg.unknown_cadence_s
    slack = max(1.0, 0.05 * interval) + _row_slack(self, node)
    wait = self.cfg.escalate_after_s
    if interval <= TRAIL_WAIT_S:
        wait = max(interval, wait)
    until = float(clock["clock_told_ts"]) + wait + slack
    if due >= until:
        return False
    self._timer(until, "slow", f.scope.key)
    return True


def _held_clock(self, f: Finding, group: list[Finding]) -> dict[str, Any] | None:
    """The slow ranks' GPUs running busy at a clock ``job_pace.CLOCK_HELD`` or more below their
    job's other GPUs' with no clock-event reason (detector.throttle's ``sm_clock``): a
    clock held by a setting -- application or locked clocks left after a driver reload,
    not power or heat, which set a reason -- said with its numbers (blind10 K5: hgx-a03
    locked at 1395 MHz beside peers at 1973 was paged with "no thermal or power
    throttling" and `dcgmi diag -r 3`).  None when no such clock, or no peers' known."""
    clocks = self._clocks
    mine = [c[0] for g in group if (c := clocks.get(g.scope.key)) is not None]
    ranks = self._placement.ranks.get(f.job or "")
    if not mine or not ranks:
        return None
    slow = {g.scope.node for g in group}
    peers = [c[0] for node, gpu, _ in islice(ranks.values(), _CLOCK_PEERS)
             if node not in slow
             and (c := clocks.get(Scope.of_gpu(node, gpu).key)) is not None]
    if len(peers) < 2:
        return None
    clock, ref = job_pace.median_clock(mine), job_pace.median_clock(peers)
    if not job_pace.held_below(clock, ref):
        return None
    return {"sm_clock_mhz": clock, "gpus_told": len(mine), "peers_median_mhz": ref,
            "peers_told": len(peers), "throttle_reasons": "0x0",
            "why": (f"not ruled out: SM clock {clock:g} MHz busy with no clock-event "
                    f"reason, {1.0 - clock / ref:.0%} below the job's other GPUs "
                    f"(median {ref:g} MHz of {len(peers)}): a clock held by a setting "
                    "(application or locked clocks), not by power or heat")}


def _held_by_setting(self, scope: Scope, group: list[Finding]) -> bool:
    """Whether a node's slowness is a clock a setting holds: ``scope`` a node, HELD_GPUS or
    more of its slow ranks' GPUs each busy at a clock ``job_pace.CLOCK_HELD`` or more below
    the job's GPUs on other nodes with no clock-event reason (:meth:`_held_clock`, each GPU
    on its own, not a median).  NVML names everything the driver holds a clock down for --
    power, heat, a hardware slowdown -- except application or locked clocks (0x2, which
    DESIGN's ``throttle`` does not carry): every GPU of one node low alike and reason-less is
    that setting, left by a tool or a driver reload (blind10 K5; blind30 F2: a firmware
    tool's 1,200-1,290 MHz lock against 1,980).  DESIGN's ``software`` cause, an isolation
    at the node whose action resets the clocks (`nvidia-smi -rgc`, ``reset_clocks``;
    nothing restarts).  Not this rule's: one GPU low beside free mates (detector.stuck_clock,
    the GPU's own), a replica's one low GPU (_lone_clock), a clock 3-9 % low (a cohort's
    clock policy, a newer driver: below CLOCK_HELD, :meth:`_clock_policy`'s), a node
    whose GPUs' reason bits say power or heat (those never reach here as held)."""
    if scope.level != "node" or len(group) < HELD_GPUS:
        return False
    gpus = [g for g in group if g.scope.level == "gpu" and g.scope.node == scope.node]
    return len(gpus) == len(group) and all(
        self._held_clock(g, [g]) is not None for g in gpus)


def _clock_policy(self, f: Finding, scope: Scope, group: list[Finding]) -> bool:
    """Whether a node's slowness is a clock policy its cohort shares: routine, no page.

    Reads the slow ranks' GPUs' busy clocks with no clock-event reason (``sm_clock``,
    detector.throttle) against the job's GPUs on other nodes.  True when ``scope`` is a node,
    HELD_GPUS or more of its slow ranks' GPUs (all the group) each run POLICY_MIN or more below
    the job's others but less than ``job_pace.CLOCK_HELD`` (a deeper hold is a setting to
    reset: :meth:`_held_by_setting`), another node of the job runs its GPUs at that clock too
    (within POLICY_BAND: a cohort), and each rank's slowdown beyond its baseline is within
    what the clock loss explains (work slows at most in proportion to the clock, two points
    allowed: power.py's ``_cap_explains``).  Several nodes' GPUs held alike, by no power or
    heat NVML would name, is an operator's setting applied to a cohort -- a canary driver's
    clock policy, a power-performance profile (blind30 F3: two canary nodes at 1,830-1,860
    MHz against 1,980, their ranks 2.5-4 % slow, escalated unknown each) -- and DESIGN makes
    a policy routine; the job runs at the cohort's pace by its operator's choice.  Not this
    rule's: one node low alone (no cohort: a stray setting or a fault, escalated as before),
    a rank slower than its clock explains (something besides the clock), a clock that
    carries a reason (power, heat: their own rules), ranks of the node at their peers' pace
    beside the slow ones (a group short of the node's GPUs told)."""
    if scope.level != "node" or len(group) < HELD_GPUS or f.job is None:
        return False
    clocks = self._clocks
    mine = [c[0] for g in group if g.scope.level == "gpu" and g.scope.node == scope.node
            and (c := clocks.get(g.scope.key)) is not None]
    ranks = self._placement.ranks.get(f.job)
    if len(mine) < len(group) or not ranks:
        return False
    others: dict[str, list[float]] = {}
    for node, gpu, _ in islice(ranks.values(), _CLOCK_PEERS):
        if node != scope.node and (c := clocks.get(Scope.of_gpu(node, gpu).key)) is not None:
            others.setdefault(node, []).append(c[0])
    peers = [c for cs in others.values() for c in cs]
    if len(peers) < 2:
        return False
    ref = job_pace.median_clock(peers)
    lo, hi = (1.0 - job_pace.CLOCK_HELD) * ref, (1.0 - POLICY_MIN) * ref
    if not all(lo < c <= hi for c in mine):
        return False
    clock = job_pace.median_clock(mine)
    if not any(abs(job_pace.median_clock(cs) - clock) <= POLICY_BAND * ref
               for cs in others.values()):
        return False
    drop = 1.0 - clock / ref
    return all(self._cap_explains(g, drop) for g in group)


def _lone_clock(self, f: Finding, group: list[Finding]) -> tuple[Finding, dict] | None:
    """The one GPU among a slow replica's ranks ``group`` whose busy clock with no
    clock-event reason is held ``job_pace.CLOCK_HELD`` or more below its job's other GPUs'
    (_held_clock), the rest at theirs; with what the replica shows.  None otherwise.

    A pipeline's ranks wait for their slowest stage inside their step timer (Megatron's
    forward-backward timer holds the p2p waits), so one GPU running a quarter slower makes
    every rank of its replica look slow alike (blind15 O2: pp04/0 at 1455 MHz against
    1980, replica 2's 16 ranks on 4 nodes 1.10-1.12x, escalated as the replica).  The
    replica is the symptom; the one GPU of it under load below its peers is the
    candidate (cause unknown).  A clock below peers alone pages nothing: only with its
    replica slow, and only when it is the replica's one such GPU.
    """
    low = [g for g in group if g.scope.level == "gpu" and self._held_clock(f, [g])]
    if len(low) != 1 or len(group) < 2:
        return None
    return low[0], {"dp_replica": f.dp_rank, "ranks_slow": len(group), "why": (
        f"all {len(group)} slow ranks are replica {f.dp_rank}'s: its pipeline waits for "
        f"its slowest stage inside the step timer, and {low[0].scope.key} is its one GPU "
        "running well below the job's clock")}


def _units_told(self, scope: Scope, f: Finding) -> list[str] | None:
    """The GPUs already named by the node escalation ``scope`` that ``f`` joins, still
    firing (None: no such page, or ``f`` is no GPU's): its evidence's, its active
    findings', and those it was re-sent for (:meth:`_slow_due`)."""
    if scope.level != "node" or f.scope.level != "gpu":
        return None
    p = self.problems.get(self.dedup_key(ESCALATION, "slow_node", scope, f.cluster))
    if p is None or p.status != "firing" or not p.evidence or not (
            f.onset_ts > p.evidence[0].get("ts", math.inf)):
        return None
    told = list(p.extra.get("units_found_slow") or ())
    for unit in [e.get("unit") for e in p.evidence] + [k.partition("@")[2]
                                                       for k in p.active]:
        if isinstance(unit, str) and unit.startswith("gpu:") and unit not in told:
            told.append(unit)
    return told


def _replica_across(self, f: Finding, members: list[Finding], node: list[Finding],
                    nodes: int) -> list[Finding] | None:
    """The slow ranks of ``f``'s replica, when its slowness is that replica's across
    nodes: ranks of it slow on ``nodes`` >= 2 nodes (slow since within REPLICA_ONSET_S of
    ``f``) and every slow rank on ``f``'s node (``node``) of it -- or when that replica is
    escalated slow already and still firing.  None otherwise (the node rule's, or the rank's own).

    A TP group spanning nodes (a GB200 tray of 4 GPUs under TP 8) runs at the pace of its
    slowest GPU: every rank of it is slow alike on each of its nodes, and the node rule
    (>= 2 slow ranks on a node) paged each node -- one fault, two pages (review13 S3).
    Its smallest unit is the replica (PP 1: the TP group is the replica).  A node whose
    slow ranks belong to several replicas (pure DP, a node's own fault) is the node's.
    """
    if f.job is None or f.dp_rank is None:
        return None
    mine = [g for g in members if g.dp_rank == f.dp_rank]
    p = self.problems.get(self.dedup_key(ESCALATION, "slow_node", Scope.of_replica(
        f.job, f.dp_rank), f.cluster))
    if p is not None and p.status == "firing":
        return mine
    if nodes < 2 or len(node) < 2 or any(g.dp_rank != f.dp_rank for g in node):
        return None
    return [g for g in mine if g.scope.node == f.scope.node
            or abs(g.onset_ts - f.onset_ts) <= REPLICA_ONSET_S]


def _host_lasting(self, g: Finding, out: list[Alert]) -> None:
    """A rank late by its host path (detector.steps ``host_late``: its compute normal, its
    time in neither compute nor collectives over its stage's) for ``host_page_s`` since
    its run began: an escalation to a human, never an isolation.

    Late by its host path for minutes, the rank makes every step of its job late (review
    round 12, S1: a node +25 % for 20 minutes, 160 GPU-minutes of a 32-GPU job, reached
    nobody).  A lasting cause -- a throttled or starved CPU, a runaway host process, a
    PCIe link trained down without replays, NUMA mis-pinning -- needs a look
    (``nvidia-smi -q -d PCIE``, ``turbostat``, the input pipeline), which a drain does
    not replace; an input pipeline catching up (blind2's healthy 3-minute stall on one
    tray) ends first.  Every rank of its job late this way on its node counts: two or
    more are the node (the host they share), one alone its GPU (its own link and loader).
    A rank whose GPU has a firing isolation has its cause (a PCIe replay rate's
    ``gpu_hardware``): its host_late is that problem's evidence already.  (detector.steps
    tells the host_late again, with ``lasting_s``, on the step its run passes
    ``host_page_s``.)
    """
    if g.scope.node is None:
        self._attach_if_firing(g)
        return
    due = g.ts
    key = self._owner.get(g.key)
    p = self.problems.get(key) if key else None
    if p is not None and p.status == "firing":
        return  # (found with its node's others already)
    if self._firing_on(g.scope, "hardware"):
        self._attach_if_firing(g)
        return
    board = self._board_page(g.scope.node, g.cluster, "gpu_hardware")
    if board is not None and g.scope.gpu in board.extra.get("gpus", ()):
        board.add(g, self.cfg.evidence_items)  # (its GPU's replays: the node's PCIe page)
        self._own(g, board)
        return
    late = []
    for u in sorted(self._units_of_node.get(g.scope.node, ())):
        h = self._device.get(u, {}).get("host_late")
        if h is not None and h.job == g.job and not self._firing_on(h.scope, "hardware"):
            late.append(h)
    scope = Scope.of_node(g.scope.node) if len(late) >= 2 else g.scope
    extra = {"ruled_out": self._ruled_out(g),
             "next_diagnostic": g.evidence.get("next_diagnostic")
             or next_diagnostic("slow_node", scope),
             "host_late_for_s": round(due - g.onset_ts, 1)}
    p = self._raise(ESCALATION, "slow_node", "unknown", scope, g, out, detected_ts=due,
                    extra=extra)
    for h in late:
        if h is not g:
            p.add(h, self.cfg.evidence_items)
        self._own(h, p)


def _on_host_share(self, f: Finding, out: list[Alert]) -> None:
    """A node whose ranks carry their job's excess host time for minutes (detector.host_time
    ``host_share``: a loader stalling on its local disk, ranks bound to the wrong socket):
    an escalation at the node, slow_node/unknown -- no telemetry names the host's trouble,
    a human looks where the evidence says.  A node under a firing isolation has its cause
    already (a GPU's PCIe link): the finding is that problem's evidence."""
    node = f.scope.node
    if any(p.status == "firing" and p.topic == ISOLATION and p.scope.node == node
           for p in self.problems.values()):
        self._attach_if_firing(f)
        return
    self._raise(ESCALATION, "slow_node", "unknown", f.scope, f, out, extra={
        "ruled_out": self._ruled_out(f),
        "next_diagnostic": f.evidence.get("next_diagnostic")
        or next_diagnostic("slow_node", f.scope)})


def _on_host_rise(self, f: Finding, out: list[Alert]) -> None:
    """A job's host time risen on a node, or calm again (detector.host_rise): kept by
    node; a node with rises of several jobs is decided after a hold (_host_node_due); a
    node paged whose jobs are all calm again resolves after the quiet hold."""
    due = host_node.note(self._host_rise, f)
    node = f.scope.node
    if due is not None and node is not None:
        self._timer(due, "hostnode", node)
    if not f.active and node is not None and not host_node.risen(self._host_rise, node):
        p = self.problems.get(self.dedup_key(ESCALATION, "slow_node", Scope.of_node(node),
                                             None))
        if p is not None and p.status == "firing" and not p.active:
            self._schedule_resolve(p, f.ts)


def _host_node_due(self, node: str, due: float, out: list[Alert]) -> None:
    """Several jobs' host time risen on ``node``: its escalation if no shared cause
    shows on the other nodes running jobs (detector.host_node)."""
    busy = set(self._busy) | {n for n, ranks in self._placement.on_node.items() if ranks}
    g = host_node.decide(self._host_rise, node, due, busy)
    if g is None:
        return
    extra = {k: g.evidence[k] for k in ("recommended_because", "next_diagnostic",
                                        "ruled_out")}
    self._raise(ESCALATION, g.kind, g.cause, g.scope, g, out, detected_ts=due, extra=extra,
                own=False)


def _unexplained_slow(self) -> list[Finding]:
    out = []
    for signals in self._device.values():
        g = signals.get("slow_rank")
        if g is None or "noise_hold" in g.evidence:  # (held for its job's noise: not yet)
            continue
        key = self._owner.get(g.key)
        p = self.problems.get(key) if key else None
        if p is None or p.topic == ESCALATION:
            out.append(g)
    return out


def _ruled_out(self, f: Finding) -> list[str]:
    """What was checked and found clean, to tell a human where not to look."""
    node, unit = f.scope.node or "", f.scope.key
    signals = self._device.get(unit, {})
    checks = []
    for source, what in (("ecc", "XID/ECC/NVLink/PCIe errors on the GPU"),
                         ("thermal", "thermal or power throttling on the GPU")):
        seen = self.seen(node, source) if self.seen else True
        past = self._throttled_near(f) if source == "thermal" else None
        clue = [g for g in signals.values() if g.kind == "hardware" and not g.verdict]
        if not seen:
            checks.append(f"not checked: no {source} telemetry from {node}")
        elif source == "ecc" and clue:
            checks.extend(f"not ruled out: {g.signal} on the GPU "
                          f"({g.evidence.get('rests_on') or 'evidence, not a verdict'})"
                          for g in clue)
        elif any((g.kind == "hardware" and g.verdict) or g.signal == "throttle"
                 for g in signals.values()):
            continue
        elif source == "thermal" and (now := self._throttled_now(signals)):
            checks.append(now)  # (before an ended one: the GPU's state now comes first)
        elif past:
            checks.append(past)
        else:
            checks.append(f"no {what}")
    nic_trouble = [u for u in self._units_of_node.get(node, ()) if u.startswith("nic:")
                   and u in self._device]
    checks.append(f"NIC trouble on {node}: {', '.join(sorted(nic_trouble))}" if nic_trouble
                  else f"no NIC errors, flaps or throughput loss on {node}")
    checks.append("not a whole-job slowdown: compared with peers at the same step")
    return checks


@staticmethod
def _throttled_now(signals: dict[str, Finding]) -> str | None:
    """A throttle reason the GPU shows now that no verdict stands on (a SW power cap
    whose clock loss the impact rule found too small for the slowdown, short of the
    sustained rule), said as such: not ruled out (twenty-ninth reporting corpus, seed
    2902: "no thermal or power throttling on the GPU" while it was at 0x4, 19 % down)."""
    for signal in ("power_cap", "throttle_seen", "throttle_minor"):
        g = signals.get(signal)
        if g is not None and g.active and g.evidence.get("throttle_reasons"):
            return (f"not ruled out: throttle reasons {g.evidence['throttle_reasons']} on "
                    f"the GPU now, clock {float(g.evidence.get('clock_drop') or 0.0):.1%} "
                    f"below its baseline (since {g.onset_ts:.1f})")
    return None


def _throttled_near(self, f: Finding) -> str | None:
    """Throttling the slow rank's GPU (or its node) showed and that has ended, within
    ``flap_window_s`` before the slow run began or since, said as such: not ruled out
    (blind3 B3: a node's GPUs throttled thermally until a minute before its slow ranks'
    escalation said "no thermal or power throttling on the GPU").  None when none."""
    units = [f.scope.key] + ([Scope.of_node(f.scope.node).key] if f.scope.node else [])
    for unit in units:
        g, ended = self._throttled.get(unit, (None, -math.inf))
        if g is not None and ended >= f.onset_ts - self.cfg.flap_window_s:
            on = "the GPU" if unit == f.scope.key else f"its node {f.scope.node}"
            gpus = f" (GPUs {g.evidence['gpus']})" if g.evidence.get("gpus") else ""
            return (f"not ruled out: {g.cause} throttling on {on}{gpus}, reasons "
                    f"{g.evidence.get('throttle_reasons', '?')}, from {g.onset_ts:.1f} until "
                    f"{ended:.1f} ({f.ts - ended:.0f} s before this, "
                    f"{ended - f.onset_ts:+.0f} s from the slowdown's onset)")
    return None
