"""Monitors: every per-job, per-GPU and per-node detector of one input stream, events to findings.

Each telemetry source (:class:`~detector.pipeline.source.SourcePartition`:
one per Kafka partition in the service, one in the in-process
:class:`~detector.engine.Engine`) has its own; its findings reach the
correlator through a topic or in memory.  Either way the same records give
the same findings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from msgspec.structs import replace

from detector.alerts import Scope
from detector.events import (
    ECC,
    JUMP_AGREE,
    MAX_AHEAD_S,
    NIC,
    STEP,
    THERMAL,
    EccSample,
    Event,
    InvalidMessage,
    NicSample,
    NonFinite,
    StepSample,
    ThermalSample,
)
from detector.findings import Finding
from detector.gpu_health import FIELDS as _GPU_HEALTH_FIELDS
from detector.gpu_health import GpuHealth
from detector.gpu_missing import check_restored as _gone_restored
from detector.gpu_missing import scan as _scan_gone
from detector.job_comm import check_restored as _comm_restored
from detector.liveness import SCAN_S
from detector.liveness import check_restored as _liveness_restored
from detector.liveness import note as _note_node
from detector.liveness import scan as _scan_liveness
from detector.network import MAX_PORTS, NodeNics
from detector.node_names import NodeNames
from detector.node_temps import FIELDS as _NODE_TEMPS_FIELDS
from detector.port_names import PortNames
from detector.sample_hooks import NOTES as _HOOKS  # what each kind feeds beside its unit
from detector.statecodec import (
    DEADLINE_S,
    bad_field,
    first_past,
    is_map_of,
    is_time,
    refuse_unless,
)
from detector.steps import JobMonitor
from detector.thermal import FIELDS as _THERMAL_FIELDS
from detector.thermal import GpuThermal, NodeTemps
from detector.thresholds import Thresholds
from detector.topology import Topology

_SWEEP_S = 1.0  # how often (event time) silent jobs are checked for overdue steps
# A node's records more than DESIGN's out-of-order bound (5 s) ahead of the partition's clock,
# while another node keeps it, are its clock's error (NTP lost, a bad relay, a drift), not the
# fleet's time: see Monitors._ahead.  More than this ahead, the clock -- which decides every
# job's steps 5 s past it -- would cut the other jobs' steps short (review13 C2: 6 s does).
AHEAD_S = 5.0
# How far apart two nodes' leads may be and still be one move of the fleet's time; how recent
# a record makes a unit "near" the clock (another node keeping it).
SKEW_S = 20.0
_ALONE_S = 4 * SKEW_S  # how much of its own time a skewed node is watched for being alone
# A node's records behind the clock by more than SKEW_S, steady within this of each other for
# SKEW_S of its own time, are its clock's error (behind), not a delivery (see Monitors._behind).
_STEADY_S = SKEW_S / 4
# A stream that moves in jumps takes a record as its time after one only as far as this many
# of its usual jump (or SKEW_S): a job's steps 6 s apart are no sparse poll of 120 s (meta35).
_JUMP_LIKE = 4.0
# Its usual jump is the lower median of its last this many: one inflated by a pause (a 60 s
# checkpoint makes a job's next step a 66 s jump) or a lost poll is not its rhythm (revB35 F2).
_RHYTHM = 5
MAX_SKEWED = 4096      # nodes with an offset kept at most (each is a node heard from)


class Monitors:
    """Per-device and per-job monitors for one stream of telemetry; its clock is the newest ts.

    **Event time is defended**: a record more than ``MAX_AHEAD_S`` ahead of the
    clock (a producer with a broken clock, a year-2100 ``ts``) raises
    :class:`InvalidMessage` ``ts_out_of_range`` and changes nothing, unless
    ``JUMP_AGREE`` consecutive records agree on the new time (a log with a gap:
    the jump is real).  The first record is checked against ``wall_clock``
    when one is given (the service), and taken as it is otherwise (a replayed
    log has its own time).

    The first record's clock is **unconfirmed** until ``JUMP_AGREE`` records
    were taken on it (within ``MAX_AHEAD_S`` of it): that record may be the
    stray (a node booted with an unset RTC reports 1970).  Meanwhile records on
    it do not reset a jump's count (:meth:`process`, :meth:`SourcePartition.admit`),
    and in the service a record within ``MAX_AHEAD_S`` of the wall clock moves
    it at once (:meth:`check_ahead`): the live fleet is never "ahead" of 1970.
    """

    def __init__(self, thresholds: Thresholds | None = None,
                 topology: Topology | None = None, *,
                 wall_clock: Callable[[], float] | None = None) -> None:
        self.cfg = thresholds or Thresholds()
        self.topology = topology
        self.wall_clock = wall_clock
        self.clock = -math.inf
        self._jump: list[float] = []  # consecutive far-ahead ts that agree with each other
        # node -> [offset, newest raw ts, when (its time) to look for other nodes again]: a
        # node whose clock runs ahead of the others' (_ahead, _first_node); its records are
        # taken at ts - offset.  At most one entry a node heard from, dropped
        # with its units (prune_units).
        self._skew: dict[str, list[float]] = {}
        # node -> [first lag, first raw ts, newest raw ts]: a node whose records came more than
        # SKEW_S behind the clock, lagging steadily so far (_behind); at most MAX_SKEWED,
        # dropped with the node's units or once taken as an offset.
        self._lagging: dict[str, list[float]] = {}
        # [node, lead, clock then, its raw ts, [nodes heard at the old time since]]: the first
        # node taken ahead (by more than SKEW_S) while the fleet's time may have moved (a
        # log's gap): a node that kept the clock jumping alike, three or more nodes first heard
        # ahead alike and over twice the nodes heard at the old time, or the nodes taken ahead
        # going on AHEAD_S with nobody at the old time, make it so (_ahead); watched for
        # SKEW_S of the clock (_keeps).
        self._vote: list[Any] | None = None
        # Where the clock landed the last time the fleet's time moved by more than AHEAD_S in
        # one record, the sizes of the last _RHYTHM such moves, and their lower median (the
        # stream's usual jump): a stream that moves in such jumps (collectors in phase, a
        # sparse partition) is not judged ahead on its next one of their size (_ahead).
        self._moved = -math.inf
        self._jumps_by: list[float] = []
        self._moved_by = 0.0
        # [node, lead, clock, raw ts]: a node whose record came AHEAD_S to SKEW_S ahead of the
        # clock, its records held at their own time (the clock stays) until another node's
        # record says whose time it is (_settle): one record, in a dense stream.
        self._cand: list[Any] | None = None
        self.unconfirmed = JUMP_AGREE  # records still to be taken on the clock to trust it
        # [node, {node: newest ts}, ts]: the node whose record set a first clock, until another
        # node's record agrees with it, and the other nodes' records behind it (_first_node)
        self._maker: list[Any] | None = None
        self.rewound = False  # the clock went back (_first_node); the caller clears it
        self._jobs: dict[str, JobMonitor] = {}
        # job -> its comm_ms bins against its own past (detector.job_comm; plain data, bounded)
        self._comm: dict[str, list[Any]] = {}
        # jobs with nothing to expire -> their (evaluations, restarts) then (see sweep)
        self._dormant: dict[str, tuple[int, int]] = {}
        # The jobs a sweep visits: every one that may have something to expire, with its place
        # among the jobs (JobMonitor._order, from _made).  Not state (detector/statecodec.py):
        # None after a restore, when the next sweep visits every job again.
        self._awake: dict[str, int] | None = {}
        self._made = 0
        self._ecc: dict[tuple[str, int], GpuHealth] = {}
        self._thermal: dict[tuple[str, int], GpuThermal] = {}
        self._nics: dict[str, NodeNics] = {}
        self._port_names = PortNames(topology)  # shared by the NodeNics: names across nodes
        # The names records give nodes -> the node each is (an FQDN the topology knows by its
        # short name: detector.node_names); every record's name is resolved first (process).
        self._names = NodeNames(topology)
        self._node_temps: dict[str, NodeTemps] = {}
        self._seen: dict[str, set[str]] = {}   # node -> sources heard from
        # What the correlator's view of "seen" must learn (detector.pipeline.source passes
        # it on): (cluster, node, source) newly heard from, and (node, source) no longer
        # heard from (pruned); source "steps": a node's first step record naming a cluster,
        # and its step name dropped (key45: where a node runs).  Drained by the caller after
        # every record.
        self.heard: list[tuple[str | None, str, str]] = []
        self.forgotten: list[tuple[str, str]] = []
        self._next_sweep = -math.inf
        # The next periodic work of a sweep: the newest records per node (every SCAN_S,
        # detector.liveness: a node gone silent) or a prune (_prune_at).
        self._next_prune = -math.inf
        self._prune_at = -math.inf
        self._live_at = -math.inf
        # node -> [cluster, {topic: [newest ts, interval, updates, silent]}] (detector.liveness)
        self._alive: dict[str, list[Any]] = {}
        self._fleet: dict[str, list[float]] = {}  # topic -> [newest ts, progress] (the same)
        # node -> [cluster, {topic: {gpu: [newest times]}}, {gpu: onset}]: a GPU that does not
        # come back (detector.gpu_missing; bounded there)
        self._gone: dict[str, list[Any]] = {}
        # What went through, for counts: plain ints (an attribute increment costs half a
        # dict item's, and this runs for every record).
        self._n_step = self._n_ecc = self._n_nic = self._n_thermal = 0
        self._n_nonfinite = self._n_unknown_node = self._n_findings = 0

    @property
    def counts(self) -> dict[str, int]:
        """Records of each kind processed, NaN-salvaged steps, units the topology does not
        list, findings made."""
        return {"step": self._n_step, "ecc": self._n_ecc, "nic": self._n_nic,
                "thermal": self._n_thermal, "nonfinite": self._n_nonfinite,
                "unknown_node": self._n_unknown_node, "findings": self._n_findings}

    def process(self, ev: Event, findings: list[Finding],
                through: list[tuple[float, int]] | None = None) -> None:
        """Feed one telemetry record; findings it causes are appended to ``findings``.

        ``through`` (a service's step partition: :meth:`_run_through`): where the clock is
        run through a jump, (the clock of each sweep, ``len(findings)`` after it)."""
        raw = ev.ts  # its node's own time, the hooks' (gpu_missing compares a node's GPUs in it)
        if ev.node not in self._names.plain:
            ev = self._names.resolve(ev, self._seen)  # one host, one node (detector.node_names)
        if self._maker is not None:
            self._first_node(ev)
        if self._cand is not None:
            self._settle(ev)
        if self._skew:
            if ev.node in self._skew:
                ev = self._deskew(ev)
            elif self._vote is not None:
                self._keeps(ev)  # a node at the old time, or the new (_ahead)
        ts = ev.ts
        clock = self.clock
        if ts > clock:
            if ts - clock > AHEAD_S:
                if ts - clock > MAX_AHEAD_S:
                    try:
                        self.check_ahead(ev)  # raises unless the jump is real
                    except InvalidMessage:
                        self._names.refused(ev.node, self._seen)  # (it decides no name)
                        raise
                    self._maker = [ev.node, {}, ev.ts]  # a first clock: one node's so far
                elif clock > -math.inf:
                    if ts - clock <= SKEW_S and self._jump and not self.unconfirmed:
                        self._jump.clear()
                    ev = self._ahead(ev)  # one node's clock, or the fleet's time moving on
                    ts = ev.ts
                    if self._cand is not None and self._cand[0] == ev.node:
                        ts = clock  # (held: a candidate's record, at its own time; _settle)
            elif self._jump and not self.unconfirmed:
                self._jump.clear()
            if through is not None and SCAN_S < ts - clock <= MAX_AHEAD_S and self._jobs:
                self._run_through(clock, ts, findings, through)
            self.clock = ts
        else:
            if ts < clock - SKEW_S and not self._maker and clock - ts <= MAX_AHEAD_S \
                    and ev.node not in self._skew:
                # a late delivery, or one node's clock behind (a record of a node at an
                # offset, late at it, is a re-sent one: _deskew)
                ev = self._behind(ev)
                ts = ev.ts
                if ts > clock:
                    self.clock = ts
            if self._jump and not self.unconfirmed:
                self._jump.clear()  # (on an unconfirmed clock a record does not reset the count)
        if self.unconfirmed and ts >= self.clock - MAX_AHEAD_S:
            self.unconfirmed -= 1  # one more record on the clock (a late one is not)
        n = len(findings)
        # The four kinds' handling, inline (one call less per record: this runs for every
        # one); a unit's monitor by subscript, a KeyError only for its first record (cheaper
        # than dict.get's call on the others).  The unit's quiet step is asked here, as its
        # update (a job's add) asks it first: the usual record costs one call, not two, and
        # one it declines is asked again there (it changed nothing).
        t = type(ev)
        e: Any = ev  # (narrowed by t, which mypy does not follow)
        if t is StepSample:
            self._n_step += 1
            if e.node not in self._names.steps:
                self._names.learn_step(e.node)
                if e.cluster is not None:  # (where the node runs: its rows naming none, key45)
                    self.heard.append((e.cluster, e.node, "steps"))
            try:
                job = self._jobs[e.job]
            except KeyError:
                job = self._new_job(e.job)
            if not job.quiet(e):
                job.add(e, findings)
                # (quiet took the message only into a step already waiting: awake since)
                awake = self._awake
                if awake is not None:
                    awake[e.job] = job._order
            for note in _HOOKS[t]:
                note(self, e, raw, findings)
        elif t is NicSample:
            self._n_nic += 1
            try:
                nics = self._nics[e.node]
            except KeyError:
                nics = self._nics[e.node] = NodeNics(e.node, self._port_names)
                self._heard(e.node, "nic", e.cluster)
            if not nics.quiet(e, self.cfg):
                nics.update(e, self.cfg, findings)
            for note in _HOOKS[t]:
                note(self, e, raw, findings)
        elif t is ThermalSample:
            self._n_thermal += 1
            key = (e.node, e.gpu)
            try:
                mon = self._thermal[key]
            except KeyError:
                temps = self._node_temps.get(e.node)
                if temps is None:
                    temps = self._node_temps[e.node] = NodeTemps()
                mon = self._thermal[key] = GpuThermal(e.node, e.gpu, self.cfg, temps)
                self._heard(e.node, "thermal", e.cluster)
            if not mon.quiet(e, self.cfg):
                mon.update(e, self.cfg, findings)
            for note in _HOOKS[t]:
                note(self, e, raw, findings)
        elif t is EccSample:
            self._n_ecc += 1
            key = (e.node, e.gpu)
            try:
                ecc = self._ecc[key]
            except KeyError:
                ecc = self._ecc[key] = GpuHealth(e.node, e.gpu, self.cfg)
                self._heard(e.node, "ecc", e.cluster)
            if not ecc.quiet(e, self.cfg):
                ecc.update(e, self.cfg, findings)
            for note in _HOOKS[t]:
                note(self, e, raw, findings)
        else:
            raise TypeError(f"not a telemetry record: {t.__name__}")
        if ts >= self._next_sweep:
            self.sweep(findings)
        if findings and len(findings) != n:  # (only appended to: empty means none made)
            self._n_findings += len(findings) - n

    def check_ahead(self, ev: Event) -> None:
        """A record far ahead of the clock: move the clock to it, or raise ``ts_out_of_range``."""
        ts = ev.ts
        wall = self.wall_clock() if self.wall_clock is not None else math.inf
        if self.clock > -math.inf:
            if self.unconfirmed and abs(ts - wall) <= MAX_AHEAD_S < wall - self.clock:
                # The clock is a first record's and not live (far behind the wall clock: a
                # node with an unset RTC, 1970), this record is live: it restarts the clock.
                self._jump.clear()
                self.unconfirmed = JUMP_AGREE
            elif self.count_jump(ts) < JUMP_AGREE:
                raise out_of_range(ev, self.clock)
            else:
                self.unconfirmed = 0  # JUMP_AGREE records agreed on the new time
        # The first record, or a jump the records agree on: never past the wall clock when
        # there is one (the service) -- three records agreeing on 2100 must not move a
        # live partition there.
        if ts - wall > MAX_AHEAD_S:
            raise InvalidMessage(_TOPIC[type(ev)], f"ts_out_of_range: ts {ts!r} is more than "
                                 f"{MAX_AHEAD_S:g} s ahead of the wall clock ({wall:.3f})",
                                 "ts")
        self.clock = ts

    def _ahead(self, ev: Event) -> Event:
        """A record more than ``AHEAD_S`` (but not ``MAX_AHEAD_S``) ahead of the clock.

        The clock judges every node's records (a job's steps expire at it, a timer fires at
        it), so it must be the fleet's time: one node whose NTP source is lost stamps its
        records seconds to minutes ahead (valid by DESIGN), and taken as the clock it would
        decide every other job's steps before their messages came.  Physics: the fleet's
        records arrive in the order they were taken (within DESIGN's 5 s), so a node ahead of
        the records around it by more than that is ahead of the time, not the time ahead of
        them.  Its lead is taken as its clock's offset: this record and its later ones are
        taken at ``ts - offset`` (about when they arrived in the fleet's time), on its own
        spacing (:meth:`_deskew`, which measures it again when it jumps further: a clock
        that gets ahead in steps).  The fleet's time moving on is told apart three ways:
        the stream moves in such jumps (the clock got here by one, within ``AHEAD_S`` of it,
        that a node which kept the clock made with it: collectors in phase, a sparse
        partition; a move settled by a node first heard at the new time, or by one taken
        ahead, is none -- blind17 Q2, :meth:`_settle`); or it leads by ``SKEW_S`` at most
        (a pause),
        and the next node's record comes at the new time (a candidate, :meth:`_settle`;
        at the old time it is this node's offset); a second node that
        kept the clock jumps with the first, ``SKEW_S`` alike, before the clock moved
        ``AHEAD_S`` (a log's gap) --
        nodes first heard ahead are no such evidence: two nodes that follow one bad NTP
        relay agree with each other and not with the nodes that keep the time (review13 C1);
        or nobody else is near (no other node's unit took a record within ``SKEW_S`` of the
        clock), and a node that turns out to be alone later gets its time back (_deskew).
        """
        clock = self.clock
        lead = ev.ts - clock
        node = ev.node
        cand = self._cand
        if cand is not None:
            return ev  # (its own record: held; _settle ended any other node's)
        skew = self._skew
        if clock - self._moved <= AHEAD_S and (
                lead <= max(SKEW_S, _JUMP_LIKE * self._moved_by)
                or self._near(node, mine=True) and not self._mid_step(ev, lead)):
            # (the stream moves in jumps: this one is its time too -- one of their size, or
            # from a node that kept the old time (a poll lost: two periods on; a job's
            # checkpoint pause).  A service's step partition moves a step at a time, and a
            # node first heard 170 s ahead right after one was taken as the time, its other
            # job's findings held 67 s: blind4)
            self._jumped(ev.ts, lead)
            return ev
        if lead <= SKEW_S:
            # Within SKEW_S: a pause of the whole fleet (a job between iterations, a poll's
            # gap) looks the same on this record alone -- the next node's record tells.
            # (Round 27 made a record far ahead just after a jump a candidate too, for
            # blind17 Q2; reverted: a sparse in-phase stream -- tests/test_state_bounds'
            # churning fleet, 120 s samples -- then paged 15 unattributed escalations, each
            # tick's first node held at the old time.  Q2 is told by the move before: _settle.)
            if len(skew) < MAX_SKEWED and self._others_near(node):
                self._cand = [node, lead, clock, ev.ts]
            else:
                self._jumped(ev.ts, lead)
            return ev
        vote = self._vote
        alike = vote is not None and vote[0] != node and abs(lead - vote[1]) <= SKEW_S
        if alike and self._near(node, mine=True):
            # A node that kept the clock moved on with the one taken ahead: the fleet's time
            # moved (a log's gap).
            return self._moves(ev)
        if len(skew) >= MAX_SKEWED or not self._others_near(node):
            return self._moves(ev)  # (nobody else keeps the clock: its time is the time)
        if type(ev) is StepSample:
            job = self._jobs.get(ev.job)
            if job is not None and (not job.in_step(ev.step)
                                    or lead <= ev.step_ms / 1000.0 + AHEAD_S):
                # Its job's steps moved on with the time, or went back (a restart from a
                # checkpoint): the job paused (a node rebooted, a log's gap), the time moved.
                # A clock ahead stamps the step its job is at (tests/test_detect_restart_ranks).
                # Or its lead is its own step's length: the job's next step, first of its
                # ranks to report (a job whose steps are longer than SKEW_S: long-context,
                # 20-60 s); a node ahead would lead by its offset on top of that.
                return self._moves(ev)
        skew[node] = [lead, ev.ts, clock + _ALONE_S]
        if vote is None:
            self._vote = [node, lead, clock, ev.ts, []]
        elif alike:
            # Nodes first heard ahead, agreeing: two are no fleet (one bad NTP relay, review13
            # C1), three or more and over twice the nodes heard at the old time since are:
            # the old time was one node's (a partition's first record from a node behind).
            ahead = sum(abs(st[0] - vote[1]) <= SKEW_S for st in skew.values())
            if ahead >= 3 and ahead > 2 * len(vote[4]):
                return self._moves(ev)
        return replace(ev, ts=clock)

    def _mid_step(self, ev: Event, lead: float) -> bool:
        """Whether ``ev`` is a rank's message of a step its job is still waiting on, leading
        the clock by more than its step's length and ``AHEAD_S``: a step's ranks report
        within their step (a rank that hung reports its hang in its ``step_ms``), so such a
        lead is its node's clock ahead, not the stream's time moving on -- however well the
        node kept the old time.  (A node's clock stepped ahead mid-run -- NTP lost -- right
        after a step partition's jump was taken as the time: the partition's clock 170 s
        ahead for good, every step of its job decided in two parts, meta36.)"""
        if not isinstance(ev, StepSample):
            return False
        job = self._jobs.get(ev.job)
        return job is not None and ev.step in job._pending and lead > ev.step_ms / 1000.0 + AHEAD_S

    def _keeps(self, ev: Event) -> None:
        """A record of a node not taken ahead while a move is watched (:meth:`_ahead`): one
        at the old time is a node keeping it (noted); the watch ends once the clock went on
        ``SKEW_S`` at the old time, or its node is no longer taken ahead."""
        vote = self._vote
        keepers = vote[4]  # type: ignore[index]
        if self.clock > vote[2] + SKEW_S or vote[0] not in self._skew:  # type: ignore[index]
            self._vote = None
        elif ev.ts <= vote[2] + max(AHEAD_S, _JUMP_LIKE * self._moved_by) \
                and ev.node not in keepers and len(keepers) < MAX_SKEWED:  # type: ignore[index]
            # (at the old time: within DESIGN's disorder of it, or a jump of a stream that
            # moves in jumps -- a job's next step 6 s on keeps it as well: blind4's node 170 s
            # ahead otherwise moved a service's step partition's clock with it)
            keepers.append(ev.node)

    def _settle(self, ev: Event) -> None:
        """A record while a node is a candidate ahead (:meth:`_ahead`): another node's record
        at the old time (more than ``AHEAD_S`` behind the candidate's) makes it the node
        ahead, at its lead as its offset (:meth:`_deskew` from its next record; the records
        held went at its own time); one at the new time is the fleet's time moving (a pause:
        the clock moves to it), as is the candidate's own time moving on ``AHEAD_S`` with no
        other node's record.  A stream that moves in jumps (:meth:`_ahead`) it is only when
        the node whose record moved the clock kept it (a unit of it took a record within
        ``SKEW_S`` of the old time, and it is not taken at an offset): a node first heard at
        the new time, or one taken ahead (its records came at the new time before the move),
        says the fleet's time is there, not that the stream got there by a jump -- the old
        time may have been one node's, behind (blind17 Q2: a partition's first record ck06's,
        8 s behind, ck07's at the fleet's time settled by ck01's, taken ahead; ck05's record
        21 s ahead a second later then took the clock as the stream's next jump)."""
        node, lead, clock, raw = self._cand  # type: ignore[misc]
        if ev.node == node:
            if ev.ts <= raw + AHEAD_S:
                return
        elif ev.ts < raw - AHEAD_S:
            self._cand = None
            if node not in self._skew and len(self._skew) < MAX_SKEWED:
                self._skew[node] = [lead, raw, clock + _ALONE_S]
            return
        self._cand = None
        if ev.node == node or (ev.node not in self._skew and self._near(ev.node, mine=True)):
            self._jumped(raw, lead)  # (a jump of the stream: _ahead)
        if raw > self.clock:
            self.clock = raw

    def _moves(self, ev: Event) -> Event:
        """The fleet's time moved on to ``ev``'s (:meth:`_ahead`): the offsets taken since
        the move began (as far ahead) are dropped."""
        vote = self._vote
        if vote is not None:
            skew = self._skew
            for n in [n for n, st in skew.items() if abs(vote[1] - st[0]) <= SKEW_S]:
                del skew[n]
        self._vote = None
        self._jumped(ev.ts, ev.ts - self.clock)
        if ev.ts > self.clock:
            self.clock = ev.ts
        return ev

    def _jumped(self, ts: float, by: float) -> None:
        """The stream's time moved to ``ts`` in one record, ``by`` seconds: its usual jump
        (:attr:`_moved_by`, which :meth:`_ahead` and :meth:`_keeps` measure a record right
        after it against) is the lower median of its last ``_RHYTHM`` -- a job's step period,
        a collector's interval.  Not the last one: a synchronous checkpoint of 60 s makes the
        job's next step a 66 s jump, and four of it let a node first heard 170 s ahead right
        after take a service's step partition's clock (revB35 F2, blind4's shape); a lost poll
        or a log's gap is one move among the last few, not the stream's size."""
        # (bounded as check_restored bounds it: a lead past it made a worker refuse its own
        # snapshot, revB35 F0b)
        jumps = self._jumps_by
        jumps.append(min(MAX_AHEAD_S, max(0.0, by)))
        if len(jumps) > _RHYTHM:
            del jumps[0]
        self._moved, self._moved_by = ts, sorted(jumps)[(len(jumps) - 1) // 2]

    def _behind(self, ev: Event) -> Event:
        """A record more than ``SKEW_S`` behind the clock: a late delivery, or its node's clock
        behind the others' (NTP lost the other way: DESIGN bounds only a clock ahead).

        Taken raw, a node behind stamps its alerts at its own time (a slow rank detected in 6
        s reported 176 s late, 170 s behind), its steps are judged against the fleet's clock
        and its slow rank's wait for an explanation is over before it begins.  Told apart
        from a late delivery by its steadiness: a collector's backlog or a burst comes
        catching up, each record less behind than the one before, while a clock behind keeps
        the same lag sample after sample (the fleet's records arrive in the order they were
        taken, within DESIGN's 5 s).  A node whose records lag within ``_STEADY_S`` of its
        first lag over ``SKEW_S`` of its own time, while other nodes keep the clock, has the
        lesser of its first and latest lag as its offset (negative): this record and its
        later ones are taken at ``ts + lag`` (:meth:`_deskew`, which drops the offset as for
        a node ahead, and once its records come less behind than that: a corrected record
        never takes the clock more than ``_STEADY_S`` on).  Up to ``MAX_AHEAD_S`` behind,
        DESIGN's bound the other way (a node reporting 1970 is no clock to correct).  Two
        nodes lagging alike are the clock's error, not theirs: neither is taken at an offset.
        """
        node = ev.node
        raw = ev.ts
        lag = self.clock - raw
        lagging = self._lagging
        c = lagging.get(node)
        if c is None or raw < c[2] - _STEADY_S or abs(lag - c[0]) > _STEADY_S:
            if c is not None or len(lagging) < MAX_SKEWED:
                lagging[node] = [lag, raw, raw]  # (a backlog catching up starts afresh)
            return ev
        if raw > c[2]:
            c[2] = raw  # (its own records within DESIGN's disorder: a poll's GPUs, ms apart)
        if raw - c[1] < SKEW_S or len(self._skew) >= MAX_SKEWED or not self._others_near(node):
            return ev
        del lagging[node]
        if lag > c[0]:
            lag = c[0]
        skew = self._skew
        agree = [n for n, st in skew.items() if st[0] < 0 and abs(lag + st[0]) <= SKEW_S]
        now = self.clock - SKEW_S  # (a candidate whose newest record is older is no node now)
        if agree or any(n != node and abs(o[0] - lag) <= SKEW_S and o[2] + o[0] >= now
                        for n, o in lagging.items()):
            # Another node lags as far: the clock is what is off (a node ahead took it before
            # any other was near: a partition's first seconds), not theirs -- both stay as
            # they come, as before this rule.
            for n in agree:
                del skew[n]
            return ev
        skew[node] = [-lag, raw, raw + lag + _ALONE_S]
        return replace(ev, ts=raw + lag)

    def _first_node(self, ev: Event) -> None:
        """While the clock is one node's (its record set a first clock): another node's
        record within ``SKEW_S`` of it ends the watch, as does ``_ALONE_S`` of its own time
        with no other node; two other nodes' newest records that agree with each other and
        are all more than ``SKEW_S`` behind it make it a node ahead (the first record of a
        partition was the skewed node's): its offset is theirs to the clock
        (:meth:`_deskew` from here on) and the clock goes back to them (:attr:`rewound`;
        only the first node's own records were taken at it).  One node against one: nothing
        says which is right, the clock stays."""
        maker, votes, since = self._maker  # type: ignore[misc]
        node = ev.node
        clock = self.clock
        if node == maker:
            if clock - since > _ALONE_S:
                self._maker = None  # nobody else for so long: its time is the time
            return
        ts = ev.ts
        if ts >= clock - SKEW_S or len(votes) > 4 * JUMP_AGREE:
            self._maker = None  # agreed with (or the others disagree among themselves)
            return
        if ts > votes.get(node, -math.inf):
            votes[node] = ts
        if len(votes) < 2:
            return  # (one node against one: nothing says which is right)
        back = max(votes.values())
        if back - min(votes.values()) > SKEW_S:
            return
        self._maker = None
        self._skew[maker] = [clock - back, clock, back + _ALONE_S]
        self.clock = back
        self.rewound = True
        self._forget_ahead(back + SKEW_S)
        if self._next_sweep > back + _SWEEP_S:
            self._next_sweep = back + _SWEEP_S
        if self._next_prune > back:
            self._next_prune = self._prune_at = self._live_at = back

    def _deskew(self, ev: Event) -> Event:
        """A record of a node whose clock is off (:meth:`_ahead`): at its offset removed.

        Its records more than ``SKEW_S`` behind the clock once the offset is off, and its
        newest among them (chrony got its source back and stepped the clock), or none of
        them new for ``SKEW_S`` of the clock, drop the offset, as does the node alone: every
        ``_ALONE_S`` of its time, no unit of another node took a record within ``SKEW_S`` of
        the clock (nobody else keeps it: its time is the time; the clock moves to it), and a
        record of a node ahead whose own ``ts`` is the clock's, within ``AHEAD_S``, where its
        offset would date it more than ``AHEAD_S`` earlier (stepped back onto the fleet's
        time: blind17 Q1).  A record older than its node's newest while that one keeps up
        with the clock (a collector re-sending its last minute) is only shifted -- and not
        taken for a clock behind (:meth:`_behind`) when that is far behind the clock."""
        node = ev.node
        st = self._skew[node]
        raw = ev.ts
        vote = self._vote
        if vote is not None and not vote[4] and raw > vote[3] + AHEAD_S:
            # The nodes taken ahead went on AHEAD_S of their time and no other node's record
            # came at the old time: nobody keeps it, the fleet's time moved (_ahead) -- as far
            # as MAX_AHEAD_S of the clock, or of the wall clock where there is one (a record
            # stamped 2100 moved a live partition there: revB35 F0); past that it is
            # process()'s to judge (check_ahead: refused ts_out_of_range, dead-lettered).
            wall = self.wall_clock() if self.wall_clock is not None else -math.inf
            if raw - self.clock > MAX_AHEAD_S and raw - wall > MAX_AHEAD_S:
                return ev
            return self._moves(ev)
        clock = self.clock
        ts = raw - st[0]
        if ts > clock + (AHEAD_S if st[0] > 0 else _STEADY_S):
            # Its records are far past the fleet's with the offset off; behind, its records
            # come less behind than they did (a backlog catching up, its clock stepped on).
            del self._skew[node]
            return ev
        if st[0] > 0.0 and abs(raw - clock) <= AHEAD_S and raw < clock + st[0] - AHEAD_S:
            # Its own time is the fleet's again, within DESIGN's disorder bound, where a
            # clock ahead by its offset could not stamp it: stepped back (chrony found its
            # source: `makestep`; at the offset an XID just after the step was dated 20 s
            # early, blind17 Q1), or the offset was learnt against a clock that was not the
            # fleet's (a partition's first record a node behind: Q2).  Taken as it is.  (A
            # clock stepped back by part is still ahead: re-sent, below, until it is dropped
            # and measured again.)
            del self._skew[node]
            return ev
        if raw < st[1]:
            if st[1] - st[0] >= clock - SKEW_S:
                return replace(ev, ts=ts)  # re-sent: its newest keeps up with the clock
            del self._skew[node]  # nothing new at its offset for SKEW_S: stepped back
            return ev
        st[1] = raw
        if ts < clock - SKEW_S:
            del self._skew[node]  # its clock is right again (or behind: not an ahead offset)
            return ev
        if ts >= st[2]:
            st[2] = ts + _ALONE_S
            if not self._others_near(node):
                del self._skew[node]
                if clock < raw and raw - clock <= MAX_AHEAD_S:
                    self.clock = raw
                return ev
        return replace(ev, ts=ts)

    def _forget_ahead(self, after: float) -> None:
        """The clock went back (:meth:`_first_node`): what only the first node's records made,
        at its clock ahead, starts afresh -- its units (their newest sample is past
        ``after``: its next ones, taken at its offset, would look 170 s old and be passed
        over as repeats) and the jobs its steps reached (a job's own clock would stay there
        and decide each of the job's steps at its first message).  Only the first second or
        so of the partition: the records before two other nodes contradicted it."""
        awake, dormant = self._awake, self._dormant
        for name in [n for n, job in self._jobs.items() if job.clock > after]:
            old = self._jobs.pop(name)
            dormant.pop(name, None)
            if awake is not None:
                awake.pop(name, None)
            # Afresh from its next step: the steps it had begun lost their messages with it,
            # and a first step short of ranks would teach the new monitor a smaller job.
            job = self._new_job(name)
            job._last_step = max(old._last_step, max(old._pending, default=-1))
            job._last_step_ts = self.clock
        self._drop_units(lambda mon: mon.last_ts > after)

    def _others_near(self, node: str) -> bool:
        """Whether a unit of another node (a GPU's, a node's ports, a job with a rank on
        another node) took a record within ``SKEW_S`` of the clock (every ``_ALONE_S`` of a
        skewed node's time: a walk over the units)."""
        return self._near(node, mine=False)

    def _near(self, node: str, *, mine: bool) -> bool:
        """Whether a unit of ``node`` (``mine``), or of another node, took a record within
        ``SKEW_S`` of the clock (a walk over the units: only on a record ahead of the clock,
        and every ``_ALONE_S`` of a skewed node's time)."""
        lo = self.clock - SKEW_S
        for units in (self._thermal, self._ecc):
            for (n, _), m in units.items():
                if (n == node) is mine and m.last_ts >= lo:
                    return True
        for n, nics in self._nics.items():
            if (n == node) is mine and nics.last_ts >= lo:
                return True
        # (a job's ranks by the hardware its evaluated steps ran on, or, before its first
        # evaluation -- a partition's first seconds -- the ranks of the steps it waits on)
        return any(job.clock >= lo and (
            any(hw is not None and (hw[0] == node) is mine for hw in job._hw)
            or any((e.node == node) is mine for buf in job._pending.values() for e in buf.events))
            for job in self._jobs.values())

    def count_jump(self, ts: float) -> int:
        """Count ``ts``, far ahead of the clock, towards a jump of the log's time.

        Returns how many consecutive such records agree on the new time, this
        one included: 1 when it starts a new count (the ones counted before it
        disagree with it), ``JUMP_AGREE`` when the jump is real (and the count
        starts over).  What becomes of the records counted short of that is
        :meth:`SourcePartition.admit`'s (detector.pipeline.source): refused at
        once (the service), or held until the jump is real or refused.
        """
        jump = self._jump
        if jump and abs(ts - jump[-1]) > MAX_AHEAD_S:
            jump.clear()
        jump.append(ts)
        n = len(jump)
        if n >= JUMP_AGREE:
            jump.clear()
        return n

    def forget_jump(self) -> None:
        """The far-ahead records counted so far were strays (refused by the caller)."""
        self._jump.clear()

    def check_restored(self) -> None:
        """:class:`~detector.statecodec.SnapshotRefused` unless a restored one's fields have the
        types this class gives them (the codec rebuilds it from fields of any type; a clock
        that is a string or NaN, a unit map that is not a map, would fail every record)."""
        for name in ("clock", "_next_sweep", "_next_prune", "_prune_at", "_live_at"):
            refuse_unless(is_time(getattr(self, name)), f"Monitors.{name}: not a time")
        refuse_unless(type(self.cfg) is Thresholds, "Monitors.cfg: not Thresholds")
        refuse_unless(type(self._jump) is list and all(
            type(t) is float and math.isfinite(t) for t in self._jump), "Monitors._jump")
        refuse_unless(type(self._skew) is dict and len(self._skew) <= MAX_SKEWED and all(
            type(n) is str and type(st) is list and len(st) == 3
            and all(type(x) is float and math.isfinite(x) for x in st)
            for n, st in self._skew.items()), "Monitors._skew")
        if "_lagging" not in self.__dict__:
            self._lagging = {}  # (a snapshot of round 13: none lagging yet)
        if "_vote" not in self.__dict__:
            self._vote, self._moved = None, -math.inf  # (a snapshot of round 14)
        refuse_unless(self._vote is None or (
            type(self._vote) is list and len(self._vote) == 5 and type(self._vote[0]) is str
            and all(type(x) is float and math.isfinite(x) for x in self._vote[1:4])
            and type(self._vote[4]) is list and len(self._vote[4]) <= MAX_SKEWED
            and all(type(n) is str for n in self._vote[4])), "Monitors._vote")
        refuse_unless(is_time(self._moved), "Monitors._moved: not a time")
        if "_moved_by" not in self.__dict__:
            self._moved_by = 0.0  # (a snapshot before round 35)
        refuse_unless(type(self._moved_by) is float and 0.0 <= self._moved_by <= MAX_AHEAD_S,
                      "Monitors._moved_by")
        if "_jumps_by" not in self.__dict__:
            # (a snapshot before round 36: its last move is all it knows of the rhythm)
            self._jumps_by = [self._moved_by] if self._moved_by > 0.0 else []
        jumps = self._jumps_by
        refuse_unless(type(jumps) is list and len(jumps) <= _RHYTHM and all(
            type(x) is float and 0.0 <= x <= MAX_AHEAD_S for x in jumps), "Monitors._jumps_by")
        if "_cand" not in self.__dict__:
            self._cand = None  # (a snapshot of round 14)
        refuse_unless(self._cand is None or (
            type(self._cand) is list and len(self._cand) == 4 and type(self._cand[0]) is str
            and all(type(x) is float and math.isfinite(x) for x in self._cand[1:])),
            "Monitors._cand")
        refuse_unless(type(self._lagging) is dict and len(self._lagging) <= MAX_SKEWED and all(
            type(n) is str and type(c) is list and len(c) == 3
            and all(type(x) is float and math.isfinite(x) for x in c)
            for n, c in self._lagging.items()), "Monitors._lagging")
        refuse_unless(self._maker is None or (
            type(self._maker) is list and len(self._maker) == 3 and type(self._maker[0]) is str
            and is_map_of(self._maker[1], str, float) and is_time(self._maker[2])),
            "Monitors._maker")
        refuse_unless(type(self.rewound) is bool, "Monitors.rewound")
        refuse_unless(_liveness_restored(self), "Monitors._alive: malformed")
        if "_gone" not in self.__dict__:
            self._gone = {}  # (a snapshot of round 19: no GPU set kept yet)
        refuse_unless(_gone_restored(self._gone), "Monitors._gone: malformed")
        refuse_unless(type(self.unconfirmed) is int and 0 <= self.unconfirmed <= JUMP_AGREE,
                      "Monitors.unconfirmed")
        for name, key, value in (("_jobs", str, JobMonitor), ("_ecc", tuple, GpuHealth),
                                 ("_thermal", tuple, GpuThermal), ("_nics", str, NodeNics),
                                 ("_node_temps", str, NodeTemps), ("_seen", str, set),
                                 ("_dormant", str, tuple)):
            refuse_unless(is_map_of(getattr(self, name), key, value),
                          f"Monitors.{name}: not a map of {value.__name__}")
        for (node, _), m in self._thermal.items():  # (each field of its type; its node's)
            bad = bad_field(m, _THERMAL_FIELDS) or m.recur_valid(self.cfg)
            refuse_unless(bad is None, f"GpuThermal.{bad}: malformed")
            refuse_unless(m._node is self._node_temps.get(node),
                          "GpuThermal._node: not its node's NodeTemps")
        for h in self._ecc.values():
            bad = bad_field(h, _GPU_HEALTH_FIELDS)
            refuse_unless(bad is None, f"GpuHealth.{bad}: malformed")
        for t in self._node_temps.values():
            bad = bad_field(t, _NODE_TEMPS_FIELDS)
            refuse_unless(bad is None, f"NodeTemps.{bad}: malformed")
        refuse_unless(all(type(n._ports) is dict and len(n._ports) <= MAX_PORTS
                          for n in self._nics.values()), "NodeNics._ports: over MAX_PORTS")
        for n in self._nics.values():
            bad = n.ports_valid()
            refuse_unless(bad is None, f"NicPort.{bad}: malformed")
        refuse_unless(all(n.waits_valid() for n in self._nics.values()),
                      "NodeNics._downs/_retrains: malformed")
        for job in self._jobs.values():
            job.check_restored()
        if "_comm" not in self.__dict__:
            self._comm = {}  # (a snapshot of round 18: no comm bins yet)
        refuse_unless(_comm_restored(self._comm), "Monitors._comm: malformed")
        refuse_unless(type(self._port_names) is PortNames and self._port_names.valid(self.cfg)
                      and all(n._names is self._port_names for n in self._nics.values()),
                      "Monitors._port_names: not one bounded table shared by the nodes")
        refuse_unless(type(self._names) is NodeNames and self._names.valid(),
                      "Monitors._names: not a bounded table of names")
        refuse_unless(type(self.heard) is list and type(self.forgotten) is list,
                      "Monitors.heard/forgotten: not lists")
        refuse_unless(all(type(getattr(self, n)) is int for n in (
            "_n_step", "_n_ecc", "_n_nic", "_n_thermal", "_n_nonfinite", "_n_unknown_node",
            "_n_findings")), "Monitors: a count is not an int")

    def check_times(self, limit: float) -> None:
        """:class:`~detector.statecodec.SnapshotRefused` if a restored time lies past ``limit``
        (its restoring worker's wall clock + ``MAX_AHEAD_S``; without one, this state's own
        clock + ``MAX_AHEAD_S``) or a deadline ``DEADLINE_S`` past it.  A live record that far
        ahead is refused (check_ahead); a state holding one -- year 2100 in a clock or a GPU's
        newest sample (hard40: finite, so ``is_time`` took it) -- took every live record of
        its partition, job or GPU as late, forever."""
        bad = first_past(limit, self._restored_times()) or first_past(
            limit + DEADLINE_S, self._restored_deadlines())
        refuse_unless(bad is None, f"{bad}: a time past the restoring worker's clock")

    def _restored_times(self) -> Iterator[tuple[str, Any]]:
        """The newest-seen times a later record is judged late against (check_times)."""
        yield "Monitors.clock", self.clock
        for job in self._jobs.values():
            yield from (("JobMonitor.clock", job.clock),
                        ("JobMonitor._last_step_ts", job._last_step_ts),
                        ("JobMonitor._host_seen_ts", job._host_seen_ts))
        for m in self._thermal.values():
            yield "GpuThermal._last_ts", m._last_ts
        for h in self._ecc.values():
            yield from (("GpuHealth._counters", h._counters.last_ts),
                        ("GpuHealth._sbe_ts", h._sbe_ts),
                        ("GpuHealth._nvl_replay_ts", h._nvl_replay_ts))
            yield from (("GpuHealth._xids", t) for t, _ in h._xids)
            yield from (("GpuHealth._last_error", t) for t in h._last_error.values())
            if h._sbe_rise is not None:
                yield "RisingRate._last_ts", h._sbe_rise._last_ts
        for n in self._nics.values():
            yield "NodeNics._ref_ts", n._ref_ts
            for p in n._ports.values():
                yield from (("NicPort.last_ts", p.last_ts),
                            ("NicPort.counters", p.counters.last_ts))
        for t in self._node_temps.values():
            yield "NodeTemps.median_ts", t.median_ts
            yield from (("NodeTemps.times", x) for x in t.times.values())

    def _restored_deadlines(self) -> Iterator[tuple[str, Any]]:
        """The times a restored state waits for (check_times): a sweep, a prune, a job's expiry."""
        for name in ("_next_sweep", "_next_prune", "_prune_at", "_live_at"):
            yield f"Monitors.{name}", getattr(self, name)
        for job in self._jobs.values():
            yield "JobMonitor._next_expire", job._next_expire

    def attach(self, topology: Topology | None,
               wall_clock: Callable[[], float] | None = None) -> None:
        """Give restored monitors what a snapshot never holds (see detector.statecodec)."""
        self.topology = topology
        self.wall_clock = wall_clock
        self._port_names.topology = topology
        self._names.attach(topology)

    def process_nonfinite(self, nf: NonFinite, findings: list[Finding]) -> None:
        """A step message dead-lettered for a NaN/inf loss or grad_norm (see events.NonFinite)."""
        self._n_nonfinite += 1
        if nf.node in self._names.alias:
            nf = nf._replace(node=self._names.alias[nf.node])
        job = self._jobs.get(nf.job) or self._new_job(nf.job)
        job.add_nonfinite(nf, findings)

    def _new_job(self, name: str) -> JobMonitor:
        job = self._jobs[name] = JobMonitor(name, self.cfg)
        job._order = self._made
        self._made += 1
        return job

    def _run_through(self, clock: float, ts: float, findings: list[Finding],
                     through: list[tuple[float, int]]) -> None:
        """A service's step partition (keyed by job) whose next record is more than a scan
        past its clock: its jobs stopped stepping in between (a job lost with a node, resumed
        minutes later).  Live, the idle advance runs its clock on meanwhile and the stop is
        told (liveness._stops) when it is due; read from a backlog (a restart, a consumer
        behind) the records' time jumps over it and the stop was never told.  The sweeps the
        idle advance would have made, a scan apart, before the record; ``through`` gets the
        clock of each, for the findings' tags (svc22: blind9 nvl72's lone dead node, paged by
        the in-process replay in 31-45 s, by the service stages in 254-267 s or not at all)."""
        t = clock + SCAN_S
        while t < ts:
            self.clock = t
            self.sweep(findings, quiet=True)
            through.append((t, len(findings)))
            t += SCAN_S

    def holds_nothing(self, findings: list[Finding]) -> bool:
        """Whether these monitors keep nothing any more -- every unit, job and silence pruned
        after its silence (``unit_idle_s``, ``unit_fault_idle_s``, ``job_idle_s``): quiet that
        long, nothing open.  A node whose units are pruned but whose liveness entry waits for
        the next scan is scanned now (its silence is over, and told into ``findings``).  What
        a cluster's slot may be given back for (detector.pipeline.source)."""
        if self._seen or self._jobs or self._gone:
            return False
        if self._alive:
            _scan_liveness(self, findings)
        return not self._alive

    def advance(self, now: float, findings: list[Finding], *, quiet: bool = True) -> None:
        """Move the clock without a record (a quiet stream) and decide overdue steps.
        ``quiet`` False: other records moved the time (another cluster's, kept apart in
        the same stream: detector.pipeline.source's _run_on_quiet) -- see :meth:`sweep`."""
        if now > self.clock:
            self.clock = now
        self.sweep(findings, quiet=quiet)

    def sweep(self, findings: list[Finding], *, quiet: bool = False) -> None:
        """Evaluate steps that have waited past the allowed lateness, in every job.

        ``quiet``: the clock was run on without a record (no evidence that a job stopped)."""
        self._next_sweep = self.clock + _SWEEP_S
        dormant = self._dormant
        awake = self._awake
        if awake is None:  # (restored: every job, in their order)
            awake = self._awake = {}
            for i, (name, job) in enumerate(self._jobs.items()):
                job._order = awake[name] = i
            self._made = len(awake)
        jobs = self._jobs
        # The jobs awake, in the order of the jobs (their findings' order, as when every job
        # was visited).  A job with no step waiting and no slow rank reported has nothing to
        # expire (its expire would only move its next-check time, which its next message
        # does): it goes to sleep, and only a message its quiet path does not take (the only
        # way it gets a step waiting, an evaluation or a restart) wakes it (process).  So a
        # sweep costs the jobs that are stepping, not every job kept (a flood of one-message
        # jobs cost every record a call per job; room harden, 2026-12-02).  Whether one is
        # reported is a numpy call, so it is asked once: the job is marked dormant with its
        # (evaluations, restarts), and stays so while neither changes (only an evaluation or
        # a restart changes what it reports) and nothing waits.
        for name in sorted(awake, key=awake.__getitem__) if len(awake) > 1 else list(awake):
            job = jobs[name]
            if not job._pending:
                mark = (job._evaluated, job.restarts)
                if dormant.get(name) == mark:
                    del awake[name]
                    continue
                if not job._reported.any():
                    dormant[name] = mark
                    del awake[name]
                    continue
            dormant.pop(name, None)
            job.expire(self.clock, findings, quiet=quiet)
        if self.clock >= self._next_prune:
            if self.clock >= self._live_at:
                self._live_at = self.clock + SCAN_S
                _scan_liveness(self, findings)
                _scan_gone(self, findings)
            if self.clock < self._prune_at:
                self._next_prune = min(self._prune_at, self._live_at)
                return
            self._prune_at = self.clock + min(self.cfg.job_idle_s, self.cfg.unit_idle_s) / 4
            self._next_prune = min(self._prune_at, self._live_at)
            idle = [name for name, job in self._jobs.items()
                    if job.clock < self.clock - self.cfg.job_idle_s]
            for name in idle:  # a job that ended: its ranks' history is no use any more
                job = self._jobs.pop(name)
                # Its stop is sure now (no step for job_idle_s), whatever ran the clock on (a
                # quiet cluster run on by another's records, the service's idle advance): its
                # slow ranks are withdrawn (expire not quiet: _retract_slow) -- forgotten with
                # them reported, their pages fired for ever (review30).
                job.expire(self.clock, findings)
                dormant.pop(name, None)
                self._comm.pop(name, None)
                awake.pop(name, None)
                findings.append(Finding(
                    self.clock, self.clock, "job_layout", "slow_node", "unknown",
                    Scope.of_job(name), False, False, 0.0, {}, name, job.tenant, job.cluster))
            if idle:  # the step names the jobs kept use (a job's next step learns its again)
                names = {hw[0] for j in self._jobs.values() for hw in j._hw if hw is not None}
                # (where a node runs is no longer told by its steps: a "steps" notice, key45)
                self.forgotten += [(n, "steps") for n in sorted(self._names.steps - names)]
                self._names.keep_steps(names, self._seen)
            self.prune_units()

    def prune_units(self) -> None:
        """Forget GPUs and nodes silent for ``unit_idle_s`` (``unit_fault_idle_s`` if faulty).

        A fleet churns: nodes are drained, replaced, renamed.  Without this the
        state (and every snapshot) grows with every node ever seen.  A unit that
        comes back starts afresh, as a new one would (its counters' first
        sample is a baseline, not an increase).
        """
        quiet = self.clock - self.cfg.unit_idle_s
        faulty = self.clock - self.cfg.unit_fault_idle_s

        def gone(mon: GpuHealth | GpuThermal | NodeNics) -> bool:
            t = mon.last_ts
            return t < faulty or (t < quiet and not mon.has_open_fault())

        touched = self._drop_units(gone)
        for node in [n for n, st in self._skew.items() if st[1] - st[0] < quiet]:
            del self._skew[node]
        for node in [n for n, c in self._lagging.items() if c[2] + c[0] < quiet]:
            del self._lagging[node]
        if not touched:
            return
        live = {"ecc": {n for n, _ in self._ecc}, "thermal": {n for n, _ in self._thermal},
                "nic": set(self._nics)}
        for node in touched:
            sources = self._seen.get(node)
            if sources is None:
                continue
            for source in [s for s in sources if node not in live.get(s, (node,))]:
                sources.discard(source)
                self.forgotten.append((node, source))
            if not sources:
                del self._seen[node]
                self._names.forget(node)  # no unit left under it: its name is decided afresh

    def _drop_units(self, gone: Callable[[Any], bool]) -> set[str]:
        """Forget the GPU and node monitors ``gone`` says are; returns their nodes."""
        touched: set[str] = set()
        for key in [k for k, m in self._ecc.items() if gone(m)]:
            del self._ecc[key]
            touched.add(key[0])
        for key in [k for k, m in self._thermal.items() if gone(m)]:
            mon = self._thermal.pop(key)
            touched.add(key[0])
            if mon.node_temps.forget(key[1]) and self._node_temps.get(key[0]) is mon.node_temps:
                del self._node_temps[key[0]]
        for node in [n for n, m in self._nics.items() if gone(m)]:
            self._nics.pop(node).withdraw(self.cfg)
            touched.add(node)
        return touched

    def finish(self, findings: list[Finding]) -> None:
        """End of input: decide every waiting step."""
        for job in self._jobs.values():
            job.expire(math.inf, findings)

    def _heard(self, node: str, source: str, cluster: str | None) -> None:
        sources = self._seen.get(node)
        if sources is None:
            sources = self._seen[node] = set()
        if source not in sources:
            sources.add(source)
            self.heard.append((cluster, node, source))
            _note_node(self, node, cluster)
        if self.topology is not None and not self.topology.has_node(node):
            self._n_unknown_node += 1

    def heard_at(self, ev: Event) -> float | None:
        """When these monitors took the newest sample of ``ev``'s GPU on ``ev``'s topic (ECC
        or thermal), None when they hold no such GPU (or ``ev`` is not such a sample): which
        cluster a row naming none is of (detector.pipeline.source's ``_unnamed``)."""
        t = type(ev)
        unit: GpuHealth | GpuThermal | None = (
            self._ecc.get((ev.node, ev.gpu)) if t is EccSample  # type: ignore[union-attr]
            else self._thermal.get((ev.node, ev.gpu)) if t is ThermalSample  # type: ignore
            else None)
        return None if unit is None else unit.last_ts

    def gpu_keys(self) -> set[tuple[str, int]]:
        """Every (node, gpu) this worker keeps a model for, from any telemetry."""
        gpus = set(self._ecc) | set(self._thermal)
        for j in self._jobs.values():
            gpus.update(hw for hw in j._hw if hw is not None)
        return gpus

    def tracked_gpus(self) -> int:
        return len(self.gpu_keys())

    def unreadable(self) -> dict[str, int]:
        """Values taken as no reading by the units tracked now (review24): DCGM blank sentinels
        in a GPU or NIC counter (``counter_blank``), counter increases no hardware counts
        (``counter_implausible``), temperatures, powers and clocks no GPU reads (``thermal``).
        Summed at scrape time (a unit forgotten takes its count with it)."""
        counters = [m._counters for m in self._ecc.values()]
        counters += [p.counters for n in self._nics.values() for p in n._ports.values()]
        return {"counter_blank": sum(c.blanks for c in counters),
                "counter_implausible": sum(c.implausible for c in counters),
                "thermal": sum(m.unread for m in self._thermal.values())}

    def stats(self) -> dict[str, Any]:
        return {**self.counts, "unreadable": self.unreadable(), "jobs": len(self._jobs),
                "gpus": self.tracked_gpus(),
                "nodes_with_nics": len(self._nics), "nodes_seen": len(self._seen),
                "late_steps": sum(j.late for j in self._jobs.values()),
                "duplicate_steps": sum(j.duplicates for j in self._jobs.values()),
                "job_restarts": sum(j.restarts for j in self._jobs.values())}


def out_of_range(ev: Event, clock: float) -> InvalidMessage:
    """The dead-letter reason of a record too far ahead of its partition's clock."""
    return InvalidMessage(_TOPIC[type(ev)], f"ts_out_of_range: ts {ev.ts!r} is more than "
                          f"{MAX_AHEAD_S:g} s ahead of the partition's clock ({clock!r})", "ts")


_TOPIC = {StepSample: STEP, ThermalSample: THERMAL, NicSample: NIC, EccSample: ECC}


def unreadable(parts: Iterable[Monitors]) -> dict[str, int]:
    """Values taken as no reading across partitions, by kind (Monitors.unreadable)."""
    out: dict[str, int] = {}
    for m in parts:
        for kind, n in m.unreadable().items():
            out[kind] = out.get(kind, 0) + n
    return out


def tracked_gpus(parts: Iterable[Monitors]) -> int:
    """GPUs tracked across partitions: a GPU's ECC, thermal and step telemetry land on three
    partitions (keyed by node, node and job), and it is still one GPU."""
    return len(set().union(*(m.gpu_keys() for m in parts)))
