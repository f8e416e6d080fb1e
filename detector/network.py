"""Per-NIC-port health from ``telemetry.nic``: link state, flaps, error rates, throughput.

Error counters (symbol, receive, packet-sequence, out-of-sequence) become
decaying rates so one stray symbol error is not a fault; ``link_downed``
increments are flaps.  Throughput is judged against the node's *other* ports:
in a rail-optimised fabric every port of a node carries about the same
traffic, so one port far below its siblings is a bad port, while all ports
dropping together is just the job pausing.  A node's ports are not all peers,
though: a DGX H100 has storage and in-band ports beside its compute-fabric
ones, and an HGX node a frontend NIC on another network.  Only a port with a
history of running at its node's pace (``nic_peer_share`` of its busy samples)
is judged low -- a port that has always been quiet did not go quiet -- and the
node's reference is the median of those ports.  A port's Gb/s is the demand of the ranks
behind it, so one that ran at its own level (``own_gbps``, its pace while at its node's) is
judged low only below half of that too (:func:`_fell`): a light tenant's port that loses one
of its jobs settles at its remaining job's level, not far below it (blind28 F1).  Whether a
verdict is evidence of the port at all -- its demand known to be its mates' -- is the
correlator's (detector.correlate.ports), from what the port's telemetry tells here: the
verdict's ``demand`` (:func:`_demand`: it fell from its own pace, or its name runs at its
node's pace on the other nodes -- a job's rails) and its mates' Gb/s (``mates_gbps``: the
correlator compares a port with the mates that carry its own job, by the jobs' layout).

A port slow from its first sample never ran at its node's pace (a link that trained
degraded after a reboot, a worker started afresh beside it), so its own history cannot
tell it from a frontend port; what else is known decides (``port_names.standing``): the
topology, when it lists the node's NICs (a GPU's NIC carries the job's traffic; one the
node's list has after its GPUs' is storage or management), else the same port name on
the other nodes the worker sees (:class:`PortNames`: a frontend port ``mlx5_2``/``eth0``/
``bond0`` is quiet on every node of the job; a bad fabric port is quiet on one node while
its name runs at its node's pace on the others), else, with no other node reporting that
name, the node's own ports (below).

**A node seen alone** (common: the service keeps one Monitors per telemetry partition and
a node's records go to one of them; an operator replays one node's log) has only its own
ports to go by, and they are weak evidence: a DGX H100's two storage ports are ``mlx5_N``
at 400G like its eight compute ports (or at 200G, streaming a job's data at their pace), an
HGX node's frontend may be an ``mlx5_N`` too, and nothing on one node names which is which.
What one node can tell: a port that is the *single* outlier of a class that runs in
lockstep -- at least ``ALONE_PEERS`` other ports of its name family and negotiated rate at
the node's pace and none of them below it (a compute port slow from its first sample beside
seven at pace) -- and, beside other outliers, a port whose own errors or flaps are abnormal
(``errors_seen``, ``nic_errors``, ``link_flap``); for ``link_rate``
(:meth:`NodeNics._rate`), the single port of its family at its rate, carrying the job's
traffic at pace, below at least ``ALONE_PEERS`` at one higher rate (a GB200 tray's netdev
at 200 beside its three at 400).
What it cannot tell: two or more quiet or slower ports of one class (a storage pair, or a
bad port beside a quiet storage pair at the fabric's rate), a node of two fabric ports
(one slow could be a frontend at pace's rate), a rate only one or two ports report.  Those
wait for a second node reporting the name, or the topology's word (a GPU's NIC, or one
listed after them); a lone node's ambiguous port pages nobody.  A ``rate_gbps`` above
:data:`detector.events.MAX_RATE_GBPS` (no link trains at it: a collector's error or a
forged record) is dead-lettered by decode, and taken as unknown here if it arrives anyway:
never a reference.

Errors count a port as *affected* (the evidence the correlator counts across the
nodes behind a switch) only when they are abnormal for that port: at least
``nic_errors_seen`` lately and ``nic_errors_seen_ratio`` times the port's own
routine rate, learnt from its ordinary samples.  RoCE ports count a few
out-of-sequence and packet-sequence errors under ECMP / adaptive routing all
the time; a trickle is not a switch's doing.

A node back from a reporting gap (a reboot: silent for ``nic_gap_s`` and more
than three of its sampling intervals) brings its ports up while it already reports: a port down on
its first sample back is link training, and is called down only when the next
sample still shows it down (its onset then the first one).

Besides verdicts, the first error on a port is reported as evidence, and so is a
``link_downed`` increment on a port up on both samples (``flap_seen``: down and up between
samples): the correlator counts such evidence across the nodes behind one switch to tell a
switch failure from a cable.
"""

from __future__ import annotations

from typing import Any

from detector.alerts import Scope
from detector.events import MAX_RATE_GBPS, NIC, NIC_COUNTERS, InvalidMessage, NicSample
from detector.findings import Finding
from detector.port_names import _DIGITS, MIXED, PortName, PortNames, standing
from detector.statecodec import (
    bad_field,
    is_bool,
    is_count,
    is_finite,
    is_signed_count,
    is_time,
    list_of,
    one_of,
    within,
)
from detector.thermal import SAME_INTERVAL_HI, SAME_INTERVAL_LO, tells_interval
from detector.thresholds import Thresholds
from models.counters import MAX_COUNTS_PER_S, CounterDeltas, delta_reader
from models.decay import DecayingCount

_IDX = {name: i for i, name in enumerate(NIC_COUNTERS)}
# A sample's counters (NIC_COUNTERS order) to their deltas, compiled for these fields.
_read_deltas = delta_reader(NIC_COUNTERS)
_TX, _RX, _LINK_DOWNED = _IDX["tx_bytes"], _IDX["rx_bytes"], _IDX["link_downed"]
_WAIT, _NP_CNP, _RP_CNP = _IDX["xmit_wait"], _IDX["np_cnp_sent"], _IDX["rp_cnp_handled"]
_ERRORS = tuple(_IDX[n] for n in ("symbol_errors", "rcv_errors", "packet_seq_err",
                                  "out_of_sequence"))
_E0, _E1, _E2, _E3 = _ERRORS
_NEVER = float("-inf")  # a port's last_ts before its first sample
# How many other ports of its name family and rate must agree (at the node's pace, or at a
# higher negotiated rate) before one node's ports alone judge a port: a GB200 tray's four
# RoCE netdevs are one and three; a node of two fabric ports and a frontend cannot tell.
ALONE_PEERS = 3
# A port's own trouble that makes it judged beside other outliers of its class.
_TROUBLE = frozenset({"errors_seen", "nic_errors", "link_flap"})
# The slowest sampling a shared part's window waits for (DCGM exporter's default is 30 s,
# node_exporter's scrapes 15-60 s), and the longest a switch window (detector.correlate) waits
# for the nodes behind it to report: 1.25 x that + 1 s.  (Here, not in the correlator: this
# module must not import it, and both read them.)
GROUP_INTERVAL_CAP_S = 60.0
GROUP_WINDOW_S = 1.25 * GROUP_INTERVAL_CAP_S + 1.0
# Ports tracked on one node (review25): a DGX H100 has 8 compute and 2-4 storage / frontend
# ports, a GB200 tray 4-8, a host with SR-IOV virtual functions tens.  A port past it is
# dead-lettered (``too_many_ports``), not tracked: a collector naming thousands of NICs of one
# node grew its state without bound, and each new port's _forget_silent scan made their cost
# quadratic (4,000 ports: 80 us a sample, 31 at 1,000).
MAX_PORTS = 256
# Other nodes whose port of a name must run at their node's pace before that name's port,
# never at its own node's pace, is known to carry demand (_demand: a job's rails): one or two
# other nodes may be a bin-packed fleet's tenants at their own levels (revA38 F8, blind28 F1).
RAIL_NODES = 3
# A port at its node's pace whose Gb/s went below this share of its own level sank with its
# GPUs' demand (a lighter phase of its job): a port that fell to a tenth beside a mate of its
# that sank to a half at the same poll fell with its job's demand, not alone (odd42, nic41 F1:
# job b's own mlx5_3 100 -> 10 Gb/s, its shared mlx5_2 100 -> 55, the leaf isolated).  Above
# the ratio a port is low at (a half): a mate that sank below that is low by itself.
SANK = 0.8
# Mates' Gb/s a nic_throughput verdict carries (NodeNics._mates_gbps): more than a node's
# GPU NICs (8 on an HGX node, 18 on a GB200 tray's netdevs); the evidence is bounded.
MATES_KEPT = 32
# Link downs of a node followed for a sibling up at once, and siblings told each
# (NodeNics._up_beside): more than a node's ports (a DGX or GB200 node: 8-18).
BESIDE_KEPT = 32
# How long a port's link_downed moving while its link is up (``flap_seen``) stays told: a
# switch window's longest, so a bounce every node saw on its next sample is still there when
# the window opened by the one node that sampled the switch down closes.
FLAP_SEEN_S = GROUP_WINDOW_S
# Two ports of a node below its reference within this factor of each other's throughput
# move together: one workload's class (NodeNics._in_class), not a bad port each.
CLASS_SPREAD = 1.5
_UNNAMED = PortName(None)  # a port's name before it is joined to the table (never voted on)
# NodeNics.quiet reads the counters by position: a change of the tuple must be seen there.
assert NIC_COUNTERS == (
    "tx_bytes", "rx_bytes", "symbol_errors", "link_downed", "rcv_errors", "xmit_discards",
    "xmit_wait", "out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled")


class _Port:
    __slots__ = ("scope", "counters", "errors", "flaps", "gbps", "last_ts", "down", "low",
                 "low_onset", "ok", "active", "last_error_ts", "err_onset", "last_flap_ts",
                 "interval_s", "peer", "usual_errors", "odd_error_ts", "held_ts", "learn_ts",
                 "busy", "idle_ts", "name", "vote", "rate", "role", "family", "rate_low",
                 "rate_ts", "rate_since", "held", "told_s", "told_lo", "told_hi",
                 "wait_mean", "cnp_mean", "cong_n", "cong_ts", "np_s", "rp_s", "cnp_run",
                 "own_gbps", "sinking", "sank_ts")

    def __init__(self, node: str, nic: str, port: int, cfg: Thresholds) -> None:
        self.scope = Scope.of_nic(node, nic, port)
        self.counters = CounterDeltas(len(NIC_COUNTERS))
        self.errors = DecayingCount(cfg.nic_error_half_life_s)
        self.flaps = DecayingCount(cfg.nic_flap_half_life_s)
        self.gbps: float | None = None
        self.last_ts = float("-inf")
        self.down = False
        self.low = 0
        self.low_onset = 0.0
        self.ok = 0
        self.active: set[str] = set()
        self.last_error_ts = float("-inf")
        self.err_onset = 0.0
        self.last_flap_ts = float("-inf")
        self.interval_s = 0.0  # gap between this port's last two samples (0: unknown)
        # Share of its node's busy samples (decaying) at which it ran at the node's pace.
        self.peer = 0.0
        # Its errors: the port's own routine rate (RoCE sequence errors under ECMP).
        self.usual_errors = DecayingCount(cfg.nic_error_base_half_life_s)
        self.odd_error_ts = float("-inf")  # last sample with errors abnormal for this port
        self.held_ts = 0.0  # a down seen on the first sample after the node's gap (0: none)
        self.learn_ts = 0.0  # since when its routine rate is learnt: its first sample, or the
        #                      start of its traffic (RoCE sequence errors come with load)
        self.busy = False    # carrying nic_busy_gbps or more on its latest sample
        self.idle_ts = float("-inf")  # when its traffic last stopped (-inf: never carried any)
        # Its name's standing across the nodes (PortNames), and its own vote there: its
        # latest sample with its node busy at the node's pace (1) or below it (-1), 0 none.
        self.name = _UNNAMED  # (NodeNics.update joins it to its name at once)
        self.vote = 0
        self.rate = 0.0  # negotiated rate_gbps (its latest general-path sample up; 0.0 unknown)
        self.role = 0  # what the topology says: 1 a fabric port, -1 storage/management, 0 --
        self.family = nic.translate(_DIGITS)  # mlx5_3 -> "mlx_", ibp12s0 -> "ibps"
        self.rate_low = 0     # samples in a row up at a rate below its peers' (_rate)
        self.rate_ts = 0.0    # the first of them
        self.rate_since = 0.0  # when it took its current rate (its first sample, a retrain)
        # The highest rate it held up for nic_rate_hold_s or more (0.0: none yet): a port that
        # fell from its siblings' rate is degraded whatever its name does elsewhere (_rate).
        self.held = 0.0
        # Its sampling interval last told (NodeNics._tell_interval), and the gaps that are
        # that interval (SAME_INTERVAL_LO/HI times it: NodeNics.quiet's test, multiplied once).
        self.told_s = self.told_lo = self.told_hi = 0.0
        # Its xmit_wait and CNPs per second, running means of its ordinary samples (how many
        # learnt, up to nic_congested_span), and its last congested sample (_congestion).
        self.wait_mean = self.cnp_mean = 0.0
        self.cong_n = 0
        self.cong_ts = 0.0
        # Its CNPs sent (np_cnp_sent) and handled (rp_cnp_handled) per second on its latest
        # sample (-1.0: unknown), and its runs of samples standing far above its node's other
        # ports in each, with the first one's time: [sent run, its ts, handled run, its ts]
        # (NodeNics._cnps; None while neither runs nor is told: quiet's one test).
        self.np_s = self.rp_s = -1.0
        self.cnp_run: list[Any] | None = None
        # Its own Gb/s while it ran at its node's pace (an EWMA of those samples, fading
        # nic_peer_fading; 0.0: never did): the demand its GPUs put on it, its own reference
        # (_fell).
        self.own_gbps = 0.0
        # Whether its latest sample at its node's pace was below SANK of its own level, and
        # when its latest such run began (-inf: never): a mate that sank with a port that fell
        # moved with it -- one job's demand (NodeNics._mates_sank, correlate.ports).
        self.sinking = False
        self.sank_ts = float("-inf")


def _upper_median(values: list[float]) -> float:
    """The middle value of ``values`` (of an even count, the upper of the two middle ones):
    the siblings' reference of a port's rates."""
    return sorted(values)[len(values) // 2]


def _traffic(p: _Port, ts: float, cfg: Thresholds) -> None:
    """The port's traffic started or stopped.  From a start after a long idle (its first
    traffic, or quiet for longer than its routine rate's half-life: a new job), its routine
    errors are learnt afresh -- under load: a job's RoCE traffic brings its sequence-error
    trickle, and idle hours say nothing of it.  A short pause (a synchronous checkpoint, an
    evaluation, a restart) keeps what was learnt: relearning from zero made the trickle's
    first sample after every resume 'abnormal' on every node of the job at once (review,
    round 9: 10 times in 100 min)."""
    p.busy = not p.busy
    if not p.busy:
        p.idle_ts = ts
    elif ts - p.idle_ts >= cfg.nic_error_base_half_life_s:
        p.usual_errors.reset()
        p.learn_ts = ts


def _at_pace(p: _Port, ts: float, cfg: Thresholds) -> None:
    """A busy sample of the port at its node's pace: into its own pace (``own_gbps``), and
    whether it sank below ``SANK`` of that level (``sinking``, ``sank_ts``)."""
    g = p.gbps or 0.0
    sinking = g < SANK * p.own_gbps
    if sinking and not p.sinking:
        p.sank_ts = ts
    p.sinking = sinking
    p.own_gbps = p.own_gbps + cfg.nic_peer_fading * (g - p.own_gbps) if p.own_gbps else g


def _fell(p: _Port, cfg: Thresholds) -> bool:
    """Whether the port, low against its node, is below its own pace too (by the same
    ``nic_throughput_ratio``), or has none (it never ran at its node's pace).

    A port's Gb/s is the demand of the ranks behind it.  On a node several workloads share,
    ports run at their own levels (a light tenant's at 128 Gb/s beside a recommender's at
    225): one that loses a tenant, or whose job pauses a stream, moves to a lower level of its
    own and may dip under half its node's median while it still carries its remaining work at
    full speed (blind28 F1: 128 -> 80 Gb/s, median 175, on four nodes of a leaf in step).  A
    degraded port (a link trained at a lower width, an HCA that stops draining its queue)
    falls far below what it carried itself: 75 -> 4, 20 GB/s -> 3 %."""
    own = p.own_gbps
    return not own or p.gbps < cfg.nic_throughput_ratio * own  # type: ignore[operator]


def _demand(p: _Port) -> str | None:
    """What the port's own telemetry says of its demand, for a ``nic_throughput`` verdict
    (the correlator takes the verdict as the port's only where its demand is known:
    detector.correlate.ports): ``"own_pace"`` -- it ran at its node's pace, and fell below
    half of its own level too (:func:`_fell`); ``"rails"`` -- it never did, but its name runs
    at its node's pace on at least ``RAIL_NODES`` other nodes with at most one in ``MIXED``
    below it: the rails of one job, each node's port of that name carrying that job's
    collectives (a bad cable from the job's start, one node's rail slow beside fifteen);
    ``None`` -- neither (a light tenant's or an idle GPU's port, which runs at no pace of
    its node's; one other node's port at pace is one node's tenants, not a job's rails)."""
    if p.own_gbps:
        return "own_pace"
    e = p.name
    if not e.kept:
        return None
    v = p.vote
    pace, low = e.pace - (v > 0), e.low - (v < 0)
    return "rails" if pace >= RAIL_NODES and low * MIXED <= pace else None


def _learn_wait(p: _Port, wait: float, cnps: float, cfg: Thresholds) -> None:
    """A sample's xmit_wait and CNPs per second into the port's usual rates (a running mean
    over its first nic_congested_span samples, an EWMA of that span after).  NodeNics.quiet
    does the same inline (tests/test_cpu31.py holds the two equal)."""
    n = p.cong_n
    if n < cfg.nic_congested_span:
        p.cong_n = n = n + 1
    p.wait_mean += (wait - p.wait_mean) / n
    p.cnp_mean += (cnps - p.cnp_mean) / n


def _usual(p: _Port, ts: float, cfg: Thresholds) -> float:
    """The port's routine errors (its ordinary samples' rate) scaled to the recent count.

    Both decaying counts are weighted sums over the time learnt (since the port's first
    sample, or since its traffic began: an idle port counts no sequence errors, so its quiet
    hours say nothing of its rate under load): each is divided by the weight a steady rate
    would have given it over that time, so a port's routine rate is right from its first
    minutes (a young count is not a small rate).
    """
    age = max(ts - p.learn_ts, 1.0)
    base_hl, fast_hl = cfg.nic_error_base_half_life_s, cfg.nic_error_half_life_s
    rate = p.usual_errors.value(ts) / (base_hl * (1.0 - 2.0 ** (-age / base_hl)))
    return rate * fast_hl * (1.0 - 2.0 ** (-age / fast_hl))


def _beside(q: _Port, o: _Port, ts: float, down_ts: float, s: NicSample) -> Finding:
    """``o`` read up at ``ts`` beside ``q``, told down at ``down_ts``: its switch is up
    (``link_up_beside``, decided at once by the correlator's part windows)."""
    return Finding(ts, down_ts, "link_up_beside", "network", "nic", q.scope, True, False, 0.0,
                   {"nic": o.scope.nic, "port": o.scope.port,
                    "since_down_s": round(ts - down_ts, 3)},
                   None, s.tenant, s.cluster)


class NodeNics:
    """All NIC ports of one node, so each port can be compared with its siblings."""

    __slots__ = ("node", "_ports", "_ref_gbps", "_ref_ts", "_names", "_paced", "_top",
                 "_told_s", "_retrained", "_downs", "_retrains")

    def ports_valid(self) -> str | None:
        """The first field of a restored port at odds with what the live code keeps
        (:data:`PORT_FIELDS`; None: every one sound)."""
        for p in self._ports.values():
            if type(p) is not _Port:
                return "a port"
            bad = bad_field(p, PORT_FIELDS)
            if bad is not None:
                return bad
            if not _told(p):
                return "told_lo"
        return None

    def waits_valid(self) -> bool:
        """The restored waits (:attr:`_downs`, :attr:`_retrains`) of the shapes they are made
        in, at most :data:`BESIDE_KEPT` each (revB32 5: a forged one failed the node's next
        sample)."""
        downs, retrains = self._downs, self._retrains
        return (type(downs) is list and len(downs) <= BESIDE_KEPT and all(
            type(d) in (tuple, list) and len(d) == 3 and type(d[0]) is _Port
            and type(d[1]) is float and type(d[2]) is set and len(d[2]) <= MAX_PORTS
            and all(type(k) is tuple and len(k) == 2 and type(k[0]) is str
                    and type(k[1]) is int for k in d[2]) for d in downs)
            and type(retrains) is list and len(retrains) <= BESIDE_KEPT and all(
                type(r) in (tuple, list) and len(r) == 4 and type(r[0]) is _Port
                and type(r[1]) is NicSample and type(r[2]) in (int, float)
                and type(r[3]) is int for r in retrains))

    def __init__(self, node: str, names: PortNames | None = None) -> None:
        self.node = node
        self._ports: dict[tuple[str, int], _Port] = {}
        # The port names across the worker's nodes (Monitors shares one); alone: this node's.
        self._names = PortNames() if names is None else names
        # (name family, rate_gbps) -> [ports at the node's pace, ports below it] on their
        # latest busy sample (None: to be gathered again -- a port's vote or voted rate
        # changed): what a port on one node alone is judged by (_alone), at a dict's cost per
        # sample, however many ports a node reports.
        self._paced: dict[tuple[str, float], list[int]] | None = None
        self._ref_gbps = 0.0          # median throughput of the node's ports, refreshed ~1/s
        self._ref_ts = float("-inf")
        # The highest negotiated rate of the node's ports, or one a port held (_Port.held):
        # a port below it is looked at on every sample (_rate), one at it (every port of a
        # uniform node) costs a comparison.
        self._top = 0.0
        self._told_s = 0.0  # the NIC sampling interval told last for the node (_tell_interval)
        # Most of the node's ports retrained lower together, told as one node finding
        # (_node_retrained): its family, or "" while nothing is told.
        self._retrained = ""
        # Ports whose link_down was told, with the siblings told up beside it since (each
        # once, as "link_up_beside": :meth:`_up_beside`), until it is up or the window ends.
        self._downs: list[tuple[_Port, float, set[tuple[str, int]]]] = []
        # Ports that bounced and came back lower, waiting for a sibling of their family sampled
        # in the same scrape to say the node did not reset (_retrained_lower): each with its
        # sample, its rate before and its link_downed increment.
        self._retrains: list[tuple[_Port, NicSample, float, int]] = []

    @property
    def last_ts(self) -> float:
        """Time of the newest sample of any port of this node."""
        return max((p.last_ts for p in self._ports.values()), default=float("-inf"))

    def has_open_fault(self) -> bool:
        """A port down, or with a signal raised and not cleared."""
        return any(p.active or p.down for p in self._ports.values())

    def quiet(self, s: NicSample, cfg: Thresholds) -> bool:
        """Take the healthy sample: True when ``s`` was applied and could make no finding.

        The common case of :meth:`update`, which calls it first; the batch path of samples
        (detector.quiet) calls it alone.  It takes a late or duplicate sample of a known port
        (nothing to do) and one of a port with nothing raised whose link is up, no counter
        missing or fallen back, no error or flap counted, and whose throughput is not low
        against its siblings: the counters' baseline and the port's rate move on.  False
        leaves the state for :meth:`update`'s general path, which does the same first: at
        most the port's throughput and the node's reference refreshed (again: the same
        value, a refresh no longer due at this ``ts``).
        """
        if self._downs or self._retrains:
            # A port just went down, or came back lower: a sibling's sample up tells
            # (_up_beside, _retrain_beside).
            return False
        try:
            p = self._ports[(s.nic, s.port)]
        except KeyError:
            return False  # a port's first sample
        counters = p.counters
        ts = s.ts
        if ts <= counters._last_ts:
            return True  # late or duplicate
        prev_ts = p.last_ts
        rate = s.rate_gbps
        if (p.active or p.down or p.low or p.held_ts or prev_ts == _NEVER
                or s.link_state == "down" or p.rate < self._top
                or (rate != p.rate and (rate or p.rate))):
            # (A rate that changed while the link stayed up -- a live downshift, no flap, no
            # down sample -- is _rate's to judge.  None and 0.0 are both "unknown".)
            return False
        dt = ts - prev_ts
        if not (p.told_lo <= dt <= p.told_hi) and p.interval_s:
            # Maybe an interval to tell (tells_interval's first test; never on a port's
            # second sample, one gap: no rate yet).
            return False
        # The counters by position (NIC_COUNTERS' order, asserted at the top of the module).
        b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10 = counters._last
        r: Any = s  # (a counter may be None: the comparisons' TypeError tells)
        v0, v1, v2, v3, v4 = r.tx_bytes, r.rx_bytes, r.symbol_errors, r.link_downed, \
            r.rcv_errors
        v5, v6, v7, v8, v9, v10 = r.xmit_discards, r.xmit_wait, r.out_of_sequence, \
            r.packet_seq_err, r.np_cnp_sent, r.rp_cnp_handled
        cap = (ts - counters._last_ts) * MAX_COUNTS_PER_S  # (a blank or a jump: update's)
        try:
            # Traffic counters on, error and flap counters still (and present).
            # (the moving ones' sum within the cap: one compare, not one a counter; a sum
            # over it goes to update, which judges each -- models.counters.delta_reader)
            if not (v0 >= b0 and v1 >= b1 and v5 >= b5 and v6 >= b6 and v9 >= b9
                    and v10 >= b10 and v2 == b2 and v3 == b3 and v4 == b4 and v7 == b7
                    and v8 == b8 and v2 is not None and v3 is not None
                    and v4 is not None and v7 is not None and v8 is not None
                    and (v0 - b0) + (v1 - b1) + (v5 - b5) + (v6 - b6) + (d9 := v9 - b9)
                    + (d10 := v10 - b10) <= cap):
                return False  # a reset, an error, a flap (or a blank, a jump)
        except TypeError:
            return False  # a counter missing, now or before
        if dt > 0:
            wait = (v6 - b6) / dt
            if wait >= cfg.nic_congested_wait_per_s and p.cong_n >= cfg.nic_congested_learn \
                    and wait >= cfg.nic_congested_wait_ratio * p.wait_mean:
                return False  # its wait jumped: congested? (_congestion)
            if d9 >= cfg.nic_cnp_per_s * dt or d10 >= cfg.nic_cnp_per_s * dt \
                    or p.cnp_run is not None:
                return False  # CNPs far above DCQCN's everyday: above its siblings'? (_cnps)
            p.gbps = gbps = ((v0 - b0) + (v1 - b1)) * 8e-9 / dt
            if (gbps >= cfg.nic_busy_gbps) != p.busy:
                _traffic(p, ts, cfg)
        if ts - self._ref_ts >= 1.0:
            self._refresh_ref(ts, cfg)
        ref = self._ref_gbps
        if ref >= cfg.nic_busy_gbps:
            if p.gbps < cfg.nic_throughput_ratio * ref:  # type: ignore[operator]
                if (p.peer >= cfg.nic_peer_share or self._judged(p)) and _fell(p, cfg) \
                        and not self._in_class(p, ts, ref, cfg):
                    return False  # slow against its siblings
                p.peer -= cfg.nic_peer_fading * p.peer
                if p.vote >= 0:
                    self._vote(p, -1, cfg)
            else:
                p.peer += cfg.nic_peer_fading * (1.0 - p.peer)
                _at_pace(p, ts, cfg)
                if p.vote <= 0:
                    self._vote(p, 1, cfg)
        if dt > 0:
            p.np_s, p.rp_s = d9 / dt, d10 / dt  # (its siblings' reference)
            # (taken: nothing to tell) _learn_wait, inline: a call less a port's quiet sample
            n = p.cong_n
            if n < cfg.nic_congested_span:
                p.cong_n = n = n + 1
            p.wait_mean += (wait - p.wait_mean) / n
            p.cnp_mean += ((d9 + d10) / dt - p.cnp_mean) / n
        counters._last_ts = ts
        counters._last = [v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10]
        p.interval_s = dt
        p.last_ts = ts
        return True

    def update(self, s: NicSample, cfg: Thresholds, out: list[Finding]) -> None:
        if self.quiet(s, cfg):
            return
        # The general path: a sample that may raise or clear a signal.  It decides every
        # sample alike, quiet or not (tests/test_batch_samples.py runs it alone as quiet's
        # reference).
        try:  # (a KeyError only on a port's first sample: cheaper than dict.get's call)
            p = self._ports[(s.nic, s.port)]
        except KeyError:
            self._forget_silent(s.ts, cfg)
            if len(self._ports) >= MAX_PORTS:
                raise InvalidMessage(NIC, f"too_many_ports: node {s.node!r} has {MAX_PORTS} "
                                     f"ports reporting; {s.nic!r} port {s.port} not tracked"
                                     ) from None
            p = self._ports[(s.nic, s.port)] = _Port(s.node, s.nic, s.port, cfg)
            names = self._names
            p.name = names.join((s.cluster, s.nic, s.port), cfg)
            p.role = names.role(s.node, s.nic)
        ts = s.ts
        counters = p.counters
        prev_ts = p.last_ts
        resets = counters.resets
        d = _read_deltas(counters, ts, s)
        if d is None:
            return  # late or duplicate
        first = prev_ts == _NEVER
        dt = 0.0
        back = False
        if first:
            p.learn_ts = ts
        else:
            dt = ts - prev_ts
            # Back from the node's reporting gap (a reboot): silent for nic_gap_s and more than
            # three of its sampling intervals.  (Not a counter reset alone: operators clear IB
            # counters on a live port, perfquery -x, and a port may go down right then.)
            back = dt >= cfg.nic_gap_s and dt > 3.0 * p.interval_s > 0.0
            if tells_interval(dt, p.told_s, p.interval_s):
                self._tell_interval(p, s, dt, out)
            p.interval_s = dt
        p.last_ts = ts
        rate = s.rate_gbps or 0.0
        if rate > MAX_RATE_GBPS:
            rate = 0.0  # no link trains at it: unknown, never a reference (decode refuses it)
        old = p.rate
        if rate != old and s.link_state != "down":  # (IB reports 10 Gb/s while down)
            self._new_rate(p, rate, ts, cfg)
            if self._retrained == p.family and not self._fell_together(p.family, cfg):
                self._tell_retrained(s, out)
        if back:
            p.rate_low = 0  # a reboot: its links train again
        # Link up, no flap, no error, nothing raised decides nothing in _link and _errors.
        active = p.active
        if active or p.down or p.held_ts or d[_LINK_DOWNED] or s.link_state == "down":
            self._link(p, s, d, cfg, out, back)
        if self._retrains:
            self._retrain_beside(p, s, d, out)
        if d[_LINK_DOWNED] and 0.0 < rate < old and not back and s.link_state == "up" \
                and p.role >= 0 and "link_rate" not in active:
            self._retrained_lower(p, s, old, d[_LINK_DOWNED], dt, out)
        if self._downs:
            self._up_beside(p, s, d, out)
        if active or d[_E0] or d[_E1] or d[_E2] or d[_E3]:
            self._errors(p, s, d, cfg, out)
        if d[_LINK_DOWNED] and s.link_state == "up" and not back and p.role >= 0 \
                and len(self._downs) < BESIDE_KEPT:
            # A bounce between two samples (its errors, flaps told above): its scrape's
            # siblings tell whether their switch bounced with it (_up_already, _up_beside).
            self._downs.append((p, ts, set()))
            self._up_already(p, s, out)
        if (p.rate < self._top or "link_rate" in active) and not p.down \
                and s.link_state != "down":
            self._rate(p, s, cfg, out)
        if counters.resets == resets and not first:
            if dt > 0:
                self._congestion(p, s, d, dt, cfg, out)
                p.gbps = (d[_TX] + d[_RX]) * 8e-9 / dt
                if (p.gbps >= cfg.nic_busy_gbps) != p.busy:
                    _traffic(p, ts, cfg)
                self._cnps(p, s, d, dt, cfg, out)
            if ts - self._ref_ts >= 1.0:
                self._refresh_ref(ts, cfg)
            ref = self._ref_gbps
            busy = ref >= cfg.nic_busy_gbps
            slow = busy and p.gbps < cfg.nic_throughput_ratio * ref  # type: ignore[operator]
            low = slow and _fell(p, cfg)
            if "nic_throughput" in active or (p.low and not low) or (low and (
                    p.peer >= cfg.nic_peer_share or self._judged(p))
                    and not self._in_class(p, ts, ref, cfg)):
                self._throughput(p, s, cfg, out)
            elif busy:
                # Not judged (at its node's pace, or not known to carry the job's traffic, or
                # not below its own pace -- a run of low samples counts only while it is):
                # its history moves on.
                p.low = 0
                p.peer += cfg.nic_peer_fading * ((0.0 if slow else 1.0) - p.peer)
                if not slow:
                    _at_pace(p, ts, cfg)
            if busy and p.vote != (-1 if slow else 1):
                self._vote(p, -1 if slow else 1, cfg)

    def _congestion(self, p: _Port, s: NicSample, d: tuple[Any, ...], dt: float,
                    cfg: Thresholds, out: list[Finding]) -> None:
        """The port waits for credit far more than it usually does, with CNPs up too: its
        switch is congested (another tenant's traffic on a shared leaf, blind7 G2), told as
        ``congested`` evidence -- never a verdict: xmit_wait alone is routine (a weight pull
        at line rate, an all-to-all's incast); the correlator pages a leaf's congestion only
        with a job waiting under it (Correlator._on_congestion).  Its usual rates are learnt
        from its other samples (quiet's fast path learns the same, and sends a sample here
        only when the wait jumps)."""
        w, c1, c2 = d[_WAIT], d[_NP_CNP], d[_RP_CNP]
        if w is None or c1 is None or c2 is None:
            return
        wait, cnps = w / dt, (c1 + c2) / dt
        if (wait >= cfg.nic_congested_wait_per_s and p.cong_n >= cfg.nic_congested_learn
                and wait >= cfg.nic_congested_wait_ratio * p.wait_mean
                and cnps >= cfg.nic_congested_cnps
                and cnps >= cfg.nic_congested_cnp_ratio * p.cnp_mean):
            p.cong_ts = s.ts
            if "congested" not in p.active:
                self._emit(out, s, p, "congested", True, 0.3, {
                    "xmit_wait_per_s": round(wait), "usual_xmit_wait_per_s": round(p.wait_mean),
                    "cnps_per_s": round(cnps, 1), "usual_cnps_per_s": round(p.cnp_mean, 1)},
                    verdict=False)
            return
        _learn_wait(p, wait, cnps, cfg)
        if "congested" in p.active and s.ts - p.cong_ts >= cfg.nic_congested_quiet_s:
            self._emit(out, s, p, "congested", False, 0.0, {}, verdict=False)

    def _cnps(self, p: _Port, s: NicSample, d: tuple[Any, ...], dt: float, cfg: Thresholds,
              out: list[Finding]) -> None:
        """The port's CNPs against its node's other ports' (x1nic, round 30): ``cnp_sent`` while
        it sends far more than they do -- the ECN-marked packets it receives say the queue
        towards it fills: a receiver that drains slower than its siblings (a NIC trained at
        PCIe x8, blind20 X1), moving no more bytes than they do -- and ``cnp_handled`` while it
        handles far more (its sends rate-limited: it waits on a slow receiver elsewhere).
        Evidence, never a verdict: the correlator joins a sender with its job's ports on other
        nodes handling (detector.nic_cnp).

        Its node's other ports are its peers, not its own past: a port bad from its job's
        first step was never calm (the running mean of :meth:`_congestion` learns it).  DCQCN's
        everyday marks (0-80/s a port), a leaf or fabric congested (every port of the node up
        together), an idle port and a port of another family or of storage by the topology
        stand out of nothing here."""
        c1, c2 = d[_NP_CNP], d[_RP_CNP]
        if c1 is None or c2 is None:
            p.np_s = p.rp_s = -1.0
            return
        p.np_s, p.rp_s = np_s, rp_s = c1 / dt, c2 / dt
        run = p.cnp_run
        floor = cfg.nic_cnp_per_s
        if run is None:
            if np_s < floor and rp_s < floor:
                return  # the healthy common case
            run = p.cnp_run = [0, 0.0, 0, 0.0]
        ts = s.ts
        recent = ts - cfg.nic_gap_s
        peers = [o for o in self._ports.values()
                 if o is not p and o.busy and o.np_s >= 0.0 and o.family == p.family
                 and o.role >= 0 and not o.down and o.last_ts >= recent]
        sent = handled = False
        ref: tuple[float, float, float] = (0.0, 0.0, 0.0)
        if p.busy and p.role >= 0 and len(peers) >= ALONE_PEERS:
            ref = (_upper_median([o.np_s for o in peers]), _upper_median([o.rp_s for o in peers]),
                   _upper_median([o.gbps or 0.0 for o in peers]))
            least = cfg.nic_cnp_peer_floor_s
            sent = (np_s >= floor and np_s >= cfg.nic_cnp_ratio * max(ref[0], least)
                    and (p.gbps or 0.0) <= cfg.nic_cnp_bytes_ratio * ref[2])
            handled = rp_s >= floor and rp_s >= cfg.nic_cnp_ratio * max(ref[1], least)
        for signal, i, hot, rate, peer in (("cnp_sent", 0, sent, np_s, ref[0]),
                                           ("cnp_handled", 2, handled, rp_s, ref[1])):
            if hot:
                if run[i] <= 0:
                    run[i], run[i + 1] = 0, ts
                run[i] += 1
                if run[i] >= cfg.nic_cnp_samples and signal not in p.active:
                    self._emit(out, s, p, signal, True, 0.5, {
                        "cnps_per_s": round(rate, 1), "peers_median_cnps_per_s": round(peer, 1),
                        "peers": len(peers), "gbps": round(p.gbps or 0.0, 2),
                        "peers_median_gbps": round(ref[2], 2),
                        "xmit_wait_per_s": round((d[_WAIT] or 0) / dt),
                        "rate_gbps": p.rate}, verdict=False, onset=run[i + 1])
            else:
                if run[i] > 0:
                    run[i] = 0
                run[i] -= 1
                if signal in p.active and -run[i] >= cfg.nic_cnp_samples:
                    run[i] = 0
                    self._emit(out, s, p, signal, False, 0.0, {}, verdict=False)
                elif signal not in p.active:
                    run[i] = 0
        if not run[0] and not run[2]:
            p.cnp_run = None  # (neither runs nor is told: quiet takes its samples again)

    def _tell_interval(self, p: _Port, s: NicSample, gap: float, out: list[Finding]) -> None:
        """How often the node's NIC ports are sampled, told to the correlator once (and again
        if it changes a lot), as detector.thermal tells a GPU's: a shared part's window waits
        for its healthy nodes' own NIC cadence (Correlator._may_be_failing) -- a 30 s node is
        not sampled 7 s after a leaf failed, however fast the collector that saw it first
        (room fabric, round 11).  Once per node, not per port (its ports share a collector):
        a port's own new interval is told when it is not the node's told last."""
        p.told_s, p.told_lo, p.told_hi = gap, SAME_INTERVAL_LO * gap, SAME_INTERVAL_HI * gap
        told = self._told_s
        if not (SAME_INTERVAL_LO * told <= gap <= SAME_INTERVAL_HI * told):
            self._told_s = gap
            out.append(Finding(s.ts, s.ts, "sampling", "network", "unknown",
                               Scope.of_node(self.node), True, False, 0.0,
                               {"sample_interval_s": round(gap, 2)}, None, s.tenant, s.cluster))

    def _forget_silent(self, now: float, cfg: Thresholds) -> None:
        """Before a new port is added: forget this node's ports silent for ``unit_idle_s``
        (``unit_fault_idle_s`` with a fault open), as Monitors.prune_units forgets silent
        nodes.  A node that keeps reporting while its NIC names change (renumbered after a
        driver reload, or junk names) would otherwise keep every port it ever had."""
        quiet, faulty = now - cfg.unit_idle_s, now - cfg.unit_fault_idle_s
        gone = [k for k, p in self._ports.items() if p.last_ts < faulty or (
                p.last_ts < quiet and not (p.active or p.down))]
        for key in gone:
            p = self._ports.pop(key)
            self._vote(p, 0, cfg)
            self._names.rate(p, p.rate, 0.0)
        if gone:
            self._top = max((max(o.rate, o.held) for o in self._ports.values()), default=0.0)

    def withdraw(self, cfg: Thresholds) -> None:
        """The node is forgotten (Monitors.prune_units): its ports' votes go with it."""
        for p in self._ports.values():
            self._vote(p, 0, cfg)
            self._names.rate(p, p.rate, 0.0)

    def _vote(self, p: _Port, v: int, cfg: Thresholds) -> None:
        if p.vote != v:
            self._paced = None
        self._names.vote(p, v, cfg)

    def _new_rate(self, p: _Port, rate: float, ts: float, cfg: Thresholds) -> None:
        old, p.rate = p.rate, rate
        if old > p.held and ts - p.rate_since >= cfg.nic_rate_hold_s:
            p.held = old  # (held up through a minute's samples: not a rate passing through)
        p.rate_since = ts
        p.rate_low = 0  # a run below the peers' rate starts again (retraining moves it)
        if p.vote:
            self._paced = None
        self._names.rate(p, old, rate)
        if rate > self._top:
            self._top = rate
        elif old == self._top:
            # (A rate a port held counts: every port of a node fallen from 400 to 200 is
            # still below it -- _rate looks at them, _fell_together.)
            self._top = max(max(o.rate, o.held) for o in self._ports.values())

    def _rate(self, p: _Port, s: NicSample, cfg: Thresholds, out: list[Finding]) -> None:
        """A port up at a negotiated rate below its node's other ports of its name family (not
        storage or management by the topology), which are at ``peer`` -- the classic degraded
        link, trained at a lower width or speed (ibstat's check): by its own history first (it
        held a higher rate and retrained lower, most of its family's ports on the node above
        it), then by its name on the other nodes (most of them report it at a higher rate: a
        frontend port at 100 Gb/s on every node is routine; any of them, for a GPU's NIC by
        the topology), else, no other node reporting it, when it is known to carry the job's
        traffic (the topology, or its history at the node's pace).  A node whose
        every port is at 200 Gb/s (an older model) has no port above its own; a port down
        (IB reports 10 Gb/s) is a link-down case.  A degraded link carries traffic, often at
        its node's pace: its rate is the evidence, not its throughput."""
        rate = p.rate
        if p.held > rate and p.role >= 0:
            fell = self._fell_together(p.family, cfg)
            if p in fell and self._alone_in_falling(fell):
                self._node_retrained(p, s, fell, cfg, out)
                return
        faster: dict[float, int] = {}
        same = at = 0  # the other ports of its family at or below its rate; at it
        if rate and p.role >= 0:
            for o in self._ports.values():
                if o is not p and o.family == p.family and o.role >= 0 and not o.down \
                        and o.rate:
                    if o.rate > rate:
                        faster[o.rate] = faster.get(o.rate, 0) + 1
                    else:
                        same += 1
                        at += o.rate == rate
        if not faster:  # at its family's best rate on the node (or not judged): healthy
            p.rate_low = 0
            if "link_rate" in p.active:
                self._emit(out, s, p, "link_rate", False, 0.0, {})
            return
        peer = max(faster, key=lambda r: (faster[r], r))
        e = p.name
        hi = lo = 0
        if e.kept:
            for r, n in e.rates.items():
                if r > rate:
                    hi += n
                else:
                    lo += n
            lo -= 1  # (its own)
        if p.held > rate and sum(faster.values()) > same:
            # It fell from a rate it held, below most of its node's ports of its family: no
            # node model changes its NIC mid-job, so whatever share of the other nodes does the
            # same (a batch of bad cables, a rail leaf's firmware) it is a degraded link each
            # (review round 11, R2b; a live downshift, no flap: quiet passes it here).  Most
            # of the node's ports falling together is the node's (its switch ports
            # reconfigured), left to the rules below.
            why = f"it ran at {p.held:g} Gb/s earlier in the job and retrained lower"
        elif hi + lo:
            # A degraded link is its name's exception: at most one in MIXED of the other nodes
            # reporting the name at its rate or below.  More of them is a node model -- an A100
            # node's 25G frontend mlx5_4 beside H100 nodes whose mlx5_4 is a 400G rail (room
            # blind3, B1: every A100's frontend isolated as a degraded link, "at a higher rate
            # on 8 of the 15 other nodes") -- unless the topology lists the port as a GPU's
            # NIC: then its node model's other rails are its peers, and a share of the nodes
            # at the lower rate is as many degraded links, or one rail leaf's (review round 11,
            # R2a: mlx5_3 at 200 on 5 of rail3-leaf0's 8 nodes paged nowhere).  (B1's A100
            # frontend is no GPU's NIC: role 0 or -1.)
            why = None
            if hi and lo * MIXED <= hi:
                why = f"its name is at a higher rate on {hi} of the {hi + lo} other nodes " \
                      "reporting it"
            elif hi and p.role > 0:
                why = ("the topology lists it as a GPU's NIC, and its name is at a higher rate "
                       f"on {hi} of the {hi + lo} other nodes reporting it")
            elif hi and not at and (peer == 2.0 * rate or peer == 4.0 * rate) \
                    and faster[peer] >= ALONE_PEERS and self._names.family_names(
                        p.name, p.family, hi) == same + sum(faster.values()) + 1:
                # No topology's word (a Slurm topology.conf lists no NICs: review round 12,
                # F3 -- mlx5_3 at 200 on 5 of 16 nodes paged nowhere): a degraded IB/RoCE
                # link trains at 1/2 or 1/4 of its siblings' rate (a width 4x -> 2x / 1x, a
                # speed one generation down), the single port of its family on its node at
                # it, and its node has as many ports of the family as the nodes where the
                # name is faster -- one node model.  Another model's port of the name is a
                # frontend of 1/8 or less (blind3 B1: 25G beside 200G rails), or its node
                # has another port count.
                why = (f"it runs at 1/{peer / rate:g} of {faster[peer]} ports of its family "
                       f"on its node, and its name is at a higher rate on {hi} of the "
                       f"{hi + lo} other nodes reporting it, of as many ports as its own")
        elif p.role > 0:
            why = "the topology lists it as a fabric port"
        elif p.peer >= cfg.nic_peer_share and not at and faster[peer] >= ALONE_PEERS:
            # Its node's ports alone: the single port of its family below a rate that many of
            # them share.  Two at the lower rate are a class (a DGX's storage pair at 200G
            # beside 400G rails), and a rate only one or two ports report (or a forged one)
            # is no family's rate: a second node reporting the name decides instead.
            why = "it carries the job's traffic at its node's pace"
        else:
            why = None
        if why is None:
            p.rate_low = 0
            return
        ts = s.ts
        if not p.rate_low:
            p.rate_ts = ts
        p.rate_low += 1
        if "link_rate" not in p.active and p.rate_low >= cfg.nic_rate_samples \
                and ts - p.rate_ts >= cfg.nic_rate_hold_s:
            n = sum(faster.values())
            self._emit(out, s, p, "link_rate", True, 0.75, {
                "rate_gbps": rate, "peer_rate_gbps": peer,
                "node_ports_faster": f"{n} of the node's {n + same} other ports of its name family",
                "judged_because": why}, onset=p.rate_ts)

    def _fell_together(self, family: str, cfg: Thresholds) -> list[_Port]:
        """The node's ports of ``family`` (up, not storage or management by the topology)
        that fell from a rate they held and retrained lower within ``nic_rate_hold_s`` of
        the median such fall -- when they are at least two and most of the family's ports;
        else [].  No node model changes its NICs mid-job: most of a node's ports halving
        at once is the node's (its HCA firmware reset to another configuration, a driver
        reload, its ports' config on the switch side), one event, where one port falling
        beside siblings at the old rate is that link degraded (review round 12, F4)."""
        ports = [o for o in self._ports.values()
                 if o.family == family and o.role >= 0 and not o.down and o.rate]
        fell = sorted((o for o in ports if o.held > o.rate), key=lambda o: o.rate_since)
        if len(fell) < 2:
            return []
        mid = fell[(len(fell) - 1) // 2].rate_since
        fell = [o for o in fell if abs(o.rate_since - mid) <= cfg.nic_rate_hold_s]
        return fell if len(fell) >= 2 and 2 * len(fell) > len(ports) else []

    @staticmethod
    def _alone_in_falling(fell: list[_Port]) -> bool:
        """Whether the other nodes reporting the fallen ports' names keep them faster, most
        of them (or none reports them: the node's own history decides).  The same ports of
        every node falling at once is the fabric's configuration -- the name's share
        decides then, as before (tests/test_fabric_round12.py)."""
        hi = lo = 0
        for o in fell:
            e = o.name
            if e.kept:
                for r, n in e.rates.items():
                    if r > o.rate:
                        hi += n
                    else:
                        lo += n
                lo -= 1  # (its own)
        return hi > lo or not hi + lo

    def _node_retrained(self, p: _Port, s: NicSample, fell: list[_Port], cfg: Thresholds,
                        out: list[Finding]) -> None:
        """A port among most of its node's that retrained lower together (_fell_together):
        held below for ``nic_rate_samples`` samples over ``nic_rate_hold_s`` (a reboot's
        passing rate is not it), the node is told once -- one node finding, not a link_rate
        per port (the correlator makes it one node alert, as every port down at once)."""
        ts = s.ts
        if not p.rate_low:
            p.rate_ts = ts
        p.rate_low += 1
        if self._retrained or p.rate_low < cfg.nic_rate_samples \
                or ts - p.rate_ts < cfg.nic_rate_hold_s:
            return
        ports = sum(1 for o in self._ports.values()
                    if o.family == p.family and o.role >= 0 and not o.down and o.rate)
        held, rate = max(o.held for o in fell), min(o.rate for o in fell)
        evidence: dict[str, Any] = {
            "ports_retrained": f"{len(fell)} of the node's {ports} ports of its name family",
            "nics": sorted(str(o.scope.nic) for o in fell)[:16],
            "rate_gbps": rate, "held_gbps": held,
            "judged_because": (f"most of the node's ports fell from {held:g} Gb/s to {rate:g} "
                               "together mid-job: the node's HCAs (firmware, driver) or its "
                               "switch ports' configuration, not a cable each")}
        if p.interval_s > 0.0:
            evidence["sample_interval_s"] = round(p.interval_s, 2)
        self._retrained = p.family
        out.append(Finding(ts, min(o.rate_since for o in fell), "link_rate", "network", "nic",
                           Scope.of_node(self.node), True, True, 0.8, evidence, None, s.tenant,
                           s.cluster))

    def _tell_retrained(self, s: NicSample, out: list[Finding]) -> None:
        """The node's ports no longer mostly retrained lower together: its finding clears."""
        self._retrained = ""
        out.append(Finding(s.ts, s.ts, "link_rate", "network", "nic", Scope.of_node(self.node),
                           False, True, 0.0, {}, None, s.tenant, s.cluster))

    def _judged(self, p: _Port) -> bool:
        """May this port, slow against its node and never (lately) at its pace, be judged
        low?  By its standing (topology, its name on other nodes), else -- no other node
        reports its name -- by the node's own ports (:meth:`_alone`)."""
        known = standing(p)
        if known:
            return known > 0
        return bool(p.rate) and self._alone(p)

    def _alone(self, p: _Port) -> bool:
        """The one-node rule (module docstring): at least ``ALONE_PEERS`` other ports of its
        name family and negotiated rate ran at the node's pace on their latest busy sample,
        and none of them below it -- the single outlier of a class that runs in lockstep --
        or, beside other outliers, a port whose errors or flaps are abnormal for it."""
        paced = self._paced
        if paced is None:
            paced = self._paced = {}
            for o in self._ports.values():
                if o.vote and o.rate:
                    n = paced.setdefault((o.family, o.rate), [0, 0])
                    n[o.vote < 0] += 1
        n = paced.get((p.family, p.rate))
        if n is None:
            return False
        pace = n[0] - (p.vote > 0)
        low = n[1] - (p.vote < 0)
        return pace >= ALONE_PEERS and (not low or bool(p.active & _TROUBLE))

    def _in_class(self, p: _Port, ts: float, ref: float, cfg: Thresholds) -> bool:
        """Whether another port of the node, of ``p``'s name family and itself judged low
        (:meth:`_judged`, or a history at the node's pace), runs below the node's reference
        at ``p``'s own pace (within ``CLASS_SPREAD`` of its throughput) on a recent sample.

        Then the node carries more than one workload -- a job on some GPUs, an inference
        replica (TP2: two ports moving together) or another job on the others -- and those
        ports are not ``p``'s peers: throughput is compared only between units doing the
        same work (Minder compares the machines of one task, NVIDIA's straggler detector the
        ranks of one job).  A bad cable or optic is one port's; two ports low at one pace are
        a class, told apart by their own evidence (errors, flaps, the negotiated rate, a link
        down), not by their traffic (blind7 G1: an inference replica's two ports at 20 Gb/s
        beside training's at 232 isolated as two NICs and their leaf drained)."""
        g = p.gbps
        if g is None:
            return False
        cut = cfg.nic_throughput_ratio * ref
        lo, hi = g / CLASS_SPREAD, g * CLASS_SPREAD
        recent = ts - cfg.nic_gap_s
        share = cfg.nic_peer_share
        for o in self._ports.values():
            q = o.gbps
            if o is p or q is None or o.family != p.family or o.down or o.last_ts < recent \
                    or not (lo <= q <= hi and q < cut):
                continue
            if o.peer >= share or self._judged(o):
                return True
        return False

    def _why(self, p: _Port, cfg: Thresholds) -> str | None:
        """Why a port without a history at its node's pace was judged (for the evidence)."""
        if p.peer >= cfg.nic_peer_share:
            return None
        if p.role > 0:
            return "the topology lists it as a fabric port"
        if standing(p) > 0:
            e = p.name
            return (f"its name runs at its node's pace on {e.pace - (p.vote > 0)} of "
                    f"{e.pace + e.low - (p.vote != 0)} other nodes")
        return (f"same name family and negotiated rate ({p.rate:g} Gb/s) as the node's ports "
                "at its pace")

    def _emit(self, out: list[Finding], s: NicSample, p: _Port, signal: str, active: bool,
              severity: float, evidence: dict[str, Any], *, verdict: bool = True,
              onset: float | None = None) -> None:
        if active:
            p.active.add(signal)
            if p.interval_s > 0.0:
                # How often this port is sampled: the switch window waits one such interval
                # for the other nodes behind the switch to report.
                evidence = {**evidence, "sample_interval_s": round(p.interval_s, 2)}
        else:
            p.active.discard(signal)
        out.append(Finding(s.ts, s.ts if onset is None else onset, signal, "network", "nic",
                           p.scope, active, verdict, severity, evidence, None, s.tenant,
                           s.cluster))

    def _link(self, p: _Port, s: NicSample, d: tuple[int, ...], cfg: Thresholds,
              out: list[Finding], back: bool = False) -> None:
        if s.link_state == "down" and not p.down:
            if back:
                # The node's first sample after its reporting gap: its links still train.
                p.held_ts = s.ts
            else:
                p.down = True
                evidence: dict[str, Any] = {"link_state": "down"}
                onset = p.held_ts or s.ts
                if p.held_ts:
                    evidence["down_since_node_came_back_s"] = round(s.ts - p.held_ts, 2)
                    evidence["held_because"] = ("down on the first sample after the node's "
                                                "reporting gap (link training after a reboot); "
                                                "still down on the next")
                p.held_ts = 0.0
                # How many of the node's ports are down with it: all of them at once is one
                # node event (the correlator makes it one node alert), not one per cable.
                evidence["node_ports_down"] = sum(1 for o in self._ports.values() if o.down)
                evidence["node_ports"] = len(self._ports)
                self._emit(out, s, p, "link_down", True, 0.9, evidence, onset=onset)
                if len(self._downs) < BESIDE_KEPT:
                    self._downs.append((p, s.ts, set()))
                    self._up_already(p, s, out)
        elif s.link_state == "up":
            p.held_ts = 0.0
            if p.down:
                p.down = False
                self._emit(out, s, p, "link_down", False, 0.0, {})
        if d[_LINK_DOWNED]:
            p.last_flap_ts = s.ts
            if s.link_state != "down" and not back and "flap_seen" not in p.active:
                # Down and up again between two samples: no sample saw it down, and one
                # bounce is no flapping port -- but a switch that bounced did it to every
                # port it serves at once, and a node whose sample fell inside the bounce saw
                # its links down (blind5 E8: one node isolated for its leaf's 10 s flap).
                # Evidence, counted when a switch window closes (after a reboot's gap the
                # bounce's time is unknown: not told).
                self._emit(out, s, p, "flap_seen", True, 0.3, {
                    "link_downed": d[_LINK_DOWNED], "link_state": "up",
                    "node_ports": self._fabric_ports()}, verdict=False)
        else:
            if "flap_seen" in p.active and s.ts - p.last_flap_ts >= FLAP_SEEN_S:
                self._emit(out, s, p, "flap_seen", False, 0.0, {}, verdict=False)
            if "link_flap" not in p.active:
                return
        flaps = p.flaps.add(s.ts, d[_LINK_DOWNED])
        if "link_flap" not in p.active and flaps >= cfg.nic_flaps:
            self._emit(out, s, p, "link_flap", True, 0.85, {"recent_link_downed": round(flaps, 1)})
        elif "link_flap" in p.active and s.ts - p.last_flap_ts >= cfg.nic_quiet_s:
            p.flaps.reset()
            self._emit(out, s, p, "link_flap", False, 0.0, {})

    def _retrained_lower(self, p: _Port, s: NicSample, old: float, downed: int, dt: float,
                         out: list[Finding]) -> None:
        """The port's ``link_downed`` moved and it is up again below the rate it had (blind22
        W1: 400 -> 100 Gb/s, a width 4x -> 1x): a degraded link, told at once as ``link_rate``
        -- errors or not, DESIGN pages a link down within 1 s -- once a sibling of its family
        (not storage or management by the topology) sampled in the same scrape (since half
        the port's interval) or after it is up at the old rate with no bounce of its own: the
        node's HCAs did not reset (every port of a node retraining lower together is the
        node's: _fell_together), and a switch that failed brings its ports back at the rate
        they had.  A sibling down or bounced in the same scrape: the node's or its switch's
        event, left to the rate rules and the correlator's window (nothing told here).  A
        port without such a sibling waits for one's sample until its own next one
        (_retrain_beside); a node back from a reporting gap (a reboot) trains its links, and
        the rate rules' minute decides (update does not call this then).

        A bounce back at the old rate is not this: ``flap_seen`` evidence (a healthy link's
        rare bounce, a leaf's firmware upgrade), a page only when it repeats (``link_flap``)."""
        since = s.ts - 0.5 * dt
        beside = None
        for o in self._ports.values():
            if o is p or o.family != p.family or o.role < 0 or o.last_ts < since:
                continue
            if o.down or o.last_flap_ts == o.last_ts:
                return  # a sibling down or bounced in this scrape too
            if beside is None and o.rate >= old:
                beside = o
        if beside is not None:
            self._tell_retrain(p, s, s, old, downed, beside, out)
        elif len(self._retrains) < BESIDE_KEPT:
            self._retrains.append((p, s, old, downed))

    def _retrain_beside(self, p: _Port, s: NicSample, d: tuple[int, ...],
                        out: list[Finding]) -> None:
        """A sample of ``p`` while ports that came back lower wait for a sibling's word
        (_retrained_lower): ``p`` up at a waiting port's old rate, of its family, without a
        bounce, tells it; ``p`` bounced or down ends its wait, as it would have before it (the
        node's event, maybe); a waiting port's own next sample ends its own (the rate rules
        decide it)."""
        keep = []
        for q, s0, old, downed in self._retrains:
            if q is p or "link_rate" in q.active or q.rate >= old:
                continue
            if q.family != p.family or p.role < 0:
                keep.append((q, s0, old, downed))
            elif d[_LINK_DOWNED] or p.down or s.link_state != "up":
                continue  # a sibling bounced or down in the scrape too: not one link's
            elif p.rate >= old:
                self._tell_retrain(q, s0, s, old, downed, p, out)
            else:
                keep.append((q, s0, old, downed))  # (a sibling below its old rate says nothing)
        self._retrains = keep

    def _tell_retrain(self, p: _Port, s0: NicSample, s: NicSample, old: float, downed: int,
                      beside: _Port, out: list[Finding]) -> None:
        """``p``'s retrain from ``old`` (its sample ``s0``), told at sample ``s`` (``s0``
        itself, or its sibling ``beside``'s in the same scrape)."""
        rate = p.rate
        self._emit(out, s, p, "link_rate", True, 0.85, {
            "rate_gbps": rate, "rate_before_gbps": old, "peer_rate_gbps": beside.rate,
            "link_downed": downed, "beside_nic": beside.scope.nic,
            "beside_port": beside.scope.port,
            "judged_because": (
                f"it went down and retrained {old:g} -> {rate:g} Gb/s between two samples "
                f"(link_downed +{downed}) while {beside.scope.nic} of its node was sampled up "
                f"at {beside.rate:g} Gb/s without a bounce: a degraded link (lanes or speed "
                "lost), not its node's HCAs nor its switch")}, onset=s0.ts)

    def _up_beside(self, p: _Port, s: NicSample, d: tuple[int, ...],
                   out: list[Finding]) -> None:
        """A port sampled up after a sibling of its node was sampled down: told for the down
        port (``link_up_beside``, evidence only), so the correlator need not wait a switch
        window for the other nodes to tell whether the switch failed.

        A switch that fails (power, firmware, a reboot) takes every port it faces down at
        once, this node's others too: one of them up after the down sample, facing the same
        switch (the correlator's topology says which it faces), says the switch is up and
        the down link is the port's own -- cable, optic, HCA (blind13 M2: a port down paged
        13.5 s later, its switch window of 1.25 sampling intervals + 1 s; the node's next
        port was sampled up 1.0 s after it).  Not a sibling whose ``link_downed`` moved
        since its last sample: it bounced too, maybe with its switch.  Each sibling is told
        once a down (the findings stay sparse: at most the node's ports a link down), until
        the down port is up again or the longest switch window has passed -- and at most
        ``BESIDE_KEPT`` downs at once, ``BESIDE_KEPT`` siblings each: a node's collector
        naming hundreds of ports, half down, half up, made ports squared findings (400
        messages, 40,000 findings -- review24); no real node has that many ports.
        """
        ts = s.ts
        keep = []
        here = (s.nic, s.port)
        for q, down_ts, told in self._downs:
            if q.down:
                if ts - down_ts > GROUP_WINDOW_S:
                    continue  # decided by its window by now
            elif q.last_flap_ts != down_ts or ts - down_ts > 0.5 * q.interval_s:
                continue  # up again (its clear told), or a bounce's scrape is over
            keep.append((q, down_ts, told))
            if q is not p and ts >= down_ts and s.link_state == "up" and not p.down \
                    and not d[_LINK_DOWNED] and p.role >= 0 and here not in told \
                    and len(told) < BESIDE_KEPT:
                told.add(here)
                out.append(_beside(q, p, ts, down_ts, s))
        self._downs = keep

    def _up_already(self, q: _Port, s: NicSample, out: list[Finding]) -> None:
        """Port ``q`` just told down at sample ``s``: its siblings already sampled up in the
        same scrape (at its ``ts``) or after it (a late down row), with no bounce of their
        own, are told for it at once (``link_up_beside``, as :meth:`_up_beside` tells the
        ones sampled after it).

        A node's collector stamps a scrape of its ports with one ``ts`` and its rows come in
        any order: blind37 F4 (a switch port flapping) sent the down port's row first and
        its 7 siblings, up, with the same ``ts`` -- none of them *after* it, so the switch
        window decided, 13.5 s later (DESIGN: a link down within 1 s).  A leaf that fails
        takes the ports it faces down at once: a sibling read up at the same instant says it
        is up, as one read a second later does.  Not one read before the down sample (the
        leaf may have failed since), nor one whose ``link_downed`` moved on its latest
        sample (it bounced too: _retrained_lower's test).  So too for a port whose
        ``link_downed`` moved while it is up again (a bounce between two samples, told by its
        errors or flaps: blind37's other flaps, 13.5 s): its scrape's siblings read up with
        no bounce of their own (within half its interval: their counters cover the same
        span) say their switch did not bounce -- only those."""
        down_ts = s.ts
        told = self._downs[-1][2]
        for o in self._ports.values():
            if o is q or o.last_ts < down_ts or o.down or o.held_ts or o.role < 0 \
                    or o.last_flap_ts == o.last_ts or len(told) >= BESIDE_KEPT:
                continue
            here = (o.scope.nic, o.scope.port)
            if here in told:
                continue
            told.add(here)
            out.append(_beside(q, o, max(o.last_ts, down_ts), down_ts, s))

    def _errors(self, p: _Port, s: NicSample, d: tuple[int, ...], cfg: Thresholds,
                out: list[Finding]) -> None:
        n = d[_ERRORS[0]] + d[_ERRORS[1]] + d[_ERRORS[2]] + d[_ERRORS[3]]
        if not n and not p.active:
            return  # the healthy common case
        ts = s.ts
        level = p.errors.add(ts, n)
        if n:
            if ts - p.last_error_ts >= cfg.nic_quiet_s:
                p.err_onset = ts  # a run of errors begins
            p.last_error_ts = ts
            usual = _usual(p, ts, cfg)  # (up to the previous sample)
            p.usual_errors.add(ts, n)
            if level >= cfg.nic_errors_seen and level >= cfg.nic_errors_seen_ratio * usual:
                p.odd_error_ts = ts
                if "errors_seen" not in p.active:
                    self._emit(out, s, p, "errors_seen", True, 0.3, {
                        "errors": n, "recent_errors": round(level, 1),
                        "usual_recent_errors": round(usual, 1),
                        "node_ports": self._fabric_ports()}, verdict=False)
        if "errors_seen" in p.active and ts - p.odd_error_ts >= cfg.nic_quiet_s:
            self._emit(out, s, p, "errors_seen", False, 0.0, {}, verdict=False)
        if "nic_errors" not in p.active and level >= cfg.nic_errors:
            # (How many ports the node has beside it -- not storage or management by the
            # topology: the correlator tells errors on a fraction of every node's ports (a
            # spine's, ECMP over its uplinks) from errors on all of them (a leaf's).)
            self._emit(out, s, p, "nic_errors", True, 0.85, {
                "recent_errors": round(level, 1), "limit": cfg.nic_errors,
                **{NIC_COUNTERS[i]: d[i] for i in _ERRORS if d[i]},
                "node_ports": self._fabric_ports()}, onset=p.err_onset)
        elif "nic_errors" in p.active and s.ts - p.last_error_ts >= cfg.nic_quiet_s:
            p.errors.reset()
            self._emit(out, s, p, "nic_errors", False, 0.0, {})

    def _fabric_ports(self) -> int:
        """The node's ports but those the topology calls storage or management."""
        return sum(1 for o in self._ports.values() if o.role >= 0)

    def _refresh_ref(self, ts: float, cfg: Thresholds) -> None:
        # The node's median port: with a port or two bad out of many, still the healthy rate.
        # Of the ports that carry the job's traffic, once two do (not its frontend or storage
        # ports: a node of two fabric ports and a frontend one has the slower fabric port as
        # the median of all three), by their history or by what else is known: a GPU's NIC by
        # the topology (asked first, without a call for every port of a node whose NICs it
        # lists), else standing (a fabric port slow from its first sample is one).  Unlike
        # standing, the topology's role counts here even where the name's other nodes say
        # otherwise: a node's idle GPU NICs stay in its reference, as before round 10.
        share = cfg.nic_peer_share
        rates = [o.gbps for o in self._ports.values() if o.gbps is not None and (
                 o.peer >= share or o.role > 0 or (not o.role and standing(o) > 0))]
        if len(rates) < 2:
            rates = [o.gbps for o in self._ports.values() if o.gbps is not None]
        self._ref_gbps = _upper_median(rates) if len(rates) > 1 else 0.0
        self._ref_ts = ts

    def _mates_gbps(self, p: _Port, ts: float, cfg: Thresholds) -> list[list[Any]]:
        """The node's other ports' Gb/s on their latest samples (``[nic, gbps]``, at most
        ``MATES_KEPT``; none the topology calls storage or management, none down or silent for
        ``nic_gap_s``): the correlator compares the port with the mates that carry its own
        job (correlate.ports), where the node's median mixes other tenants' demand.  Every
        such port, not only those with a history at the node's pace: a mate that fell with
        the port long enough ago to have lost that history fell too (a job's demand gone from
        both its ports)."""
        recent = ts - cfg.nic_gap_s
        mates = [[o.scope.nic, round(o.gbps, 2)] for o in self._ports.values()
                 if o is not p and o.gbps is not None and o.role >= 0 and not o.down
                 and o.last_ts >= recent]
        return mates[:MATES_KEPT]

    def _mates_sank(self, p: _Port) -> list[str]:
        """The node's other ports (at most ``MATES_KEPT``) that sank below ``SANK`` of their own
        level (``sank_ts``) from two of the port's intervals and a second before its low run
        began (``low_onset``) -- with it, as one job's demand moves all its ports (a lighter
        phase: evaluation, a frozen tower) -- and have not come back: the correlator reads
        such a port's fall as not alone (correlate.ports._fell_alone)."""
        since = p.low_onset - 2.0 * p.interval_s - 1.0
        sank = [o.scope.nic for o in self._ports.values()
                if o is not p and o.sinking and o.sank_ts >= since]
        return sank[:MATES_KEPT]  # type: ignore[return-value]

    def _throughput(self, p: _Port, s: NicSample, cfg: Thresholds, out: list[Finding]) -> None:
        """A port low against the node's median (refreshed by the caller), or one recovering."""
        ref = self._ref_gbps
        low = ref >= cfg.nic_busy_gbps and p.gbps < cfg.nic_throughput_ratio * ref \
            and _fell(p, cfg)  # type: ignore[operator]
        if low:
            if p.low == 0:
                p.low_onset = s.ts
            p.low += 1
            p.ok = 0
        elif not p.low and "nic_throughput" not in p.active:
            return
        else:
            p.low = 0
            p.ok += 1
        if "nic_throughput" not in p.active and p.low >= cfg.nic_throughput_samples:
            evidence: dict[str, Any] = {"gbps": round(p.gbps, 2),  # type: ignore[arg-type]
                                        "node_median_gbps": round(ref, 2),
                                        # (0.0: it never ran at its node's pace -- its demand
                                        # is unknown: correlate.ports)
                                        "own_gbps": round(p.own_gbps, 2)}
            why = self._why(p, cfg)
            if why is not None:
                evidence["judged_because"] = why
            demand = _demand(p)
            if demand is not None:
                evidence["demand"] = demand
            mates = self._mates_gbps(p, s.ts, cfg)
            if mates:
                evidence["mates_gbps"] = mates
            sank = self._mates_sank(p)
            if sank:
                evidence["mates_sank"] = sank
            self._emit(out, s, p, "nic_throughput", True, 0.75, evidence, onset=p.low_onset)
        elif "nic_throughput" in p.active and p.ok >= cfg.nic_throughput_samples:
            self._emit(out, s, p, "nic_throughput", False, 0.0, {})


def _rate(x: Any) -> bool:
    """A rate per second (Gbit/s, waits, CNPs): >= 0 and finite."""
    return is_finite(x) and x >= 0.0


def _told(p: Any) -> bool:
    """The interval told last and the gaps taken for it (NodeNics._tell_interval): the bounds
    its multiples, as the quiet path reads them."""
    s, lo, hi = p.told_s, p.told_lo, p.told_hi
    return _rate(s) and lo == SAME_INTERVAL_LO * s and hi == SAME_INTERVAL_HI * s


# Each field of a NIC port on snapshot restore (Monitors.check_restored): the codec rebuilds a
# port from fields of any type, and only its CNP fields were checked (revB32 5) -- svc39: a
# forged string ``last_ts`` restored and failed the node's every later sample (TypeError), a
# ``low`` of -10^9 held a port's low-throughput run a billion samples, an infinite ``told_hi``
# took every gap for the interval told.  Each is held to what the live code keeps: times
# finite (-inf where "never"), counts from 0 (``cnp_run``'s count down), rates and shares
# within their range, flags one of their values, the counters' baselines below the blank.
PORT_FIELDS = {
    "scope": lambda x: type(x) is Scope and x.level == "nic",
    "counters": lambda x: type(x) is CounterDeltas and x.restored_ok(len(NIC_COUNTERS)),
    "errors": lambda x: type(x) is DecayingCount and x.restored_ok(),
    "flaps": lambda x: type(x) is DecayingCount and x.restored_ok(),
    "usual_errors": lambda x: type(x) is DecayingCount and x.restored_ok(),
    "gbps": lambda x: x is None or _rate(x), "last_ts": is_time, "down": is_bool,
    "low": is_count, "low_onset": is_finite, "ok": is_count,
    "active": lambda x: type(x) is set and all(type(k) is str for k in x),
    "last_error_ts": is_time, "err_onset": is_finite, "last_flap_ts": is_time,
    "interval_s": _rate, "peer": within(0.0, 1.0), "odd_error_ts": is_time,
    "held_ts": is_finite, "learn_ts": is_finite, "busy": is_bool, "idle_ts": is_time,
    "name": lambda x: type(x) is PortName, "vote": one_of(-1, 0, 1),
    "rate": within(0.0, MAX_RATE_GBPS), "role": one_of(-1, 0, 1),
    "family": lambda x: type(x) is str and len(x) <= 256, "rate_low": is_count,
    "rate_ts": is_finite, "rate_since": is_finite, "held": within(0.0, MAX_RATE_GBPS),
    "told_s": _rate, "told_lo": _rate, "told_hi": _rate,
    "wait_mean": _rate, "cnp_mean": _rate, "cong_n": is_count, "cong_ts": is_finite,
    "np_s": lambda x: x == -1.0 or _rate(x), "rp_s": lambda x: x == -1.0 or _rate(x),
    "cnp_run": lambda x: x is None or list_of(is_signed_count, is_finite, is_signed_count,
                                              is_finite)(x),
    "own_gbps": _rate, "sinking": is_bool, "sank_ts": is_time,
}
assert set(PORT_FIELDS) == set(_Port.__slots__)
