"""A port's throughput is its tenants' demand: which ``nic_throughput`` verdicts compare alike.

detector.network's ``nic_throughput`` reads a port's Gb/s against its node's other ports (the
median of those that carry the job's traffic): in a rail-optimised node every GPU's rank of
one job puts the same collective traffic on its NIC, so a port far below its mates is a bad
port (a link that trained degraded, an HCA that stopped draining its queue).  That holds only
while the ports carry the same work.  A node that several jobs share (a bin-packing
scheduler's HGX node: a recommender's rank and an LLM's TP pair on ``mlx5_0``, a speech job
and a fine-tune on ``mlx5_2``) has each port carrying the demand of the ranks behind it: a
light fine-tune's port at 8 GB/s beside a port with a checkpoint upload at line rate is two
workloads, not a broken port (blind28 F1: 62 NIC and 22 leaf isolations in 16 logs, and a
false leaf page that absorbed a real port losing symbols under it -- F2).  The comparison
is throughput's only evidence; a degraded port on a shared node still shows in its own
counters (symbol and receive errors, a rate or width retrained lower, link downs and flaps:
``nic_errors``, ``link_rate``, ``link_down``, ``link_flap``), which page it by themselves.

So the correlator takes a ``nic_throughput`` verdict only where the port's mates carry the
same jobs, by the jobs' own layout (``job_layout``: which rank of which job runs on which
GPU of the node, kept in :class:`detector.recovery.Placement`):

- the topology maps the node's GPUs to NICs (``Nics=`` / ``GpuNics=``): the jobs behind the
  low port (on the GPUs it serves) must be the jobs behind most of the node's other GPU NICs
  that carry any job (one job over the node's GPUs; a job on six GPUs beside another's two
  is judged on its three ports, so the node's median is its own work's), and the port is not
  judged beside mates of other jobs (the other job's two GPUs' port).  A port with no job
  behind it beside ports with one is idle, not slow;
- no such map (a Slurm ``topology.conf`` lists nodes only): which ranks use which port is
  unknown, so the node must run one job (one tenant's ranks, whatever GPUs it uses);
- no layout told for the node (NIC telemetry alone, a job's steps on another cluster's
  stream): the ports' word stands, as before.

What it must not page: two tenants' ports at their own jobs' paces, an idle GPU's port beside
busy ones, a neighbour's checkpoint upload filling one port.  What still pages: one job's
port far below its mates (tests/test_review_round9.py, test_blind_network.py), every
counter-borne port fault on a shared node (blind28 G2 symbols, G6 flaps).

Round 39 (nic39) and round 40 (nic40), :func:`_demand_unknown`: the verdict is the port's
evidence only where its demand is known to be its mates' kind.  A port's Gb/s is what its
GPUs ask; that is known when (detector.network's ``demand`` on the verdict, else here):

- (a) the port ran at its node's pace and fell below half of its own level (``own_pace``;
  detector.network asks that of every port that has a pace of its own);
- (c) never at its node's pace, its name runs at its node's pace on at least
  ``network.RAIL_NODES`` other nodes (``rails``: one job's rails, each node's port of the
  name carrying its collectives -- a cable trained down before the job, one node's rail slow
  beside fifteen; tests/test_lead_round10.py), and no layout is told for its node (where one
  is, it decides: the other nodes' port of the name carries their jobs, this node's may serve
  GPUs its job leaves idle).  One other node's port at pace is not enough: a fleet's tenants
  differ node by node (revA38 F8's idle port beside one other node);
- (d) with the map, the layout puts the jobs of the mates it is compared with behind it
  (above; on a node its jobs split, the mates carrying exactly its jobs: revA39 F2);
- (b) with no map, one job runs on every GPU of the node (:func:`_one_job_fills`): every one
  of its GPU NICs carries that job, map or not (revA39 F7).

Not known -- the verdict is dropped: a port low from its first sample with none of these
(the idle GPUs' port of a job on 6 of 8 GPUs, revA38 F8; a light tenant's port seen on port
rows alone beside one other node); and, whatever it did before, a port whose GPU stopped just
before its low run began -- at most two of its sampling intervals before it, or one after:
isolated by a hardware verdict (an XID killing its worker, a DBE, a GPU off the bus), or told
idle by its thermal rows (no kernel: its worker exited) -- the dead worker's port goes quiet
with it (blind29 F3: XID 48, the port at 0.02 Gb/s beside 72, isolated network/nic 55 s
later).  With the map, only the stopped GPU's own port; without it, any of its node's (a GPU's
fault is paged by itself).  A port that falls on its own -- its GPUs busy, minutes after a
GPU's fault, or on a node with none -- still pages: a degraded port's ranks wait in their
collectives, busy.

With no map on a node its jobs share, a port that fell from its own level pages only where
it fell alone and every job there has more GPUs than one port serves (:func:`_fell_alone`):
one job's demand moves all of its ports together.

Round 41 (nic41): **a job's end is its ports' fall.**  A job that ended (cancelled, finished,
crashed) removed its demand from every port that carried it, on every node it ran on, when its
steps stopped: on a node it shared, those ports fall to their remaining jobs' demand (half, or
an idle background) while the others' ports carry on -- the shape of a bad port on each node,
and of a leaf on a quarter of its nodes (revA40 F7/F7b: leaf1 isolated, switch:unknown
escalated).  A job's stop (detector.liveness's job ``silent``, its last step's time) is read as
its GPUs stopping (:func:`_jobs_stopped_on`, in :func:`_gpu_stopped_before`'s window), whichever
comes first: a verdict after the stop is dropped; one before it (ports sampled every few
seconds) waits for it in its shared part's window on a node its jobs share
(:func:`_stop_wait`) and is withdrawn when it comes (:func:`_ports_lost_job`).  A leaf's fault
is its ports falling while their jobs step on.  The trade: a port that degrades in the very
poll a job on its node stops (with no map: any job of the node) is not paged by its
throughput -- its counters still page it.  With the map, a port under two jobs or more (a GPU
of each behind it) that fell from its own level is judged beside the mates carrying each of
its jobs (:func:`_fell_beside_each`, revA40 F8).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from detector.alerts import Scope
from detector.findings import Finding
from detector.liveness import _STOPS, FAST_S, SCAN_S, _stopped_at
from detector.network import GROUP_INTERVAL_CAP_S
from detector.statecodec import is_finite

if TYPE_CHECKING:
    from detector.alerts import Alert
    from detector.correlate.correlator import Correlator

# How long after a port's low run began a job's stop on its node may still come (detector.
# liveness: a job's stop is told after FAST_S without a step -- three of its steps, at steps up
# to FAST_S / 3 long -- at the next scan of SCAN_S): a port's verdict on a node its jobs share
# waits that long in its shared part's window (_stop_wait).
STOP_TOLD_S = FAST_S + SCAN_S
# How long a port's verdict dropped for its jobs' pace waits to be told they wait after all
# (_hold_for_pace): two of detector.job_comm's 10 s bins and a window; at most MAX_PACED kept.
PACED_S = 60.0
MAX_PACED = 1024


def _tenants_apart(self: Correlator, f: Finding) -> bool:
    """Whether the port of ``f`` (an active ``nic_throughput`` verdict) carries other jobs
    than the mates it is compared with, by the node's job layout (module docstring): then its
    Gb/s against theirs is demand against demand, and ``f`` is no evidence of the port."""
    node, nic = f.scope.node or "", f.scope.nic
    latest = _tenants(self, node)
    if not latest or nic is None:
        return False
    behind = _ports_behind(self, node, latest)
    if behind is None:
        if len(set(latest.values())) < 2 or _fell_alone(self, f, node, latest) \
                or _jobs_wait(self, latest):
            return False
        _hold_for_pace(self, f)  # (its jobs may yet be told waiting: _jobs_began_waiting)
        return True
    return not _alike_behind(self, f, behind)


def _jobs_wait(self: Correlator, latest: dict[int, str]) -> bool:
    """Whether a job laid out on the node waits in its collectives (detector.job_comm's
    ``comm_wait``: its ranks' comm time up together against its own past): a port carrying
    less while its jobs keep their pace limits nothing -- their demand fell (a lighter
    phase) -- but one whose job waits for its traffic is short of what it asks (odd42,
    nic41 F1: the same ports falling with the jobs' comm time up is the leaf's)."""
    waits = self._comm_wait
    return any(job in waits for job in set(latest.values()))


def _hold_for_pace(self: Correlator, f: Finding) -> None:
    """Keep ``f`` (a port's verdict dropped for its jobs keeping their pace) for ``PACED_S``:
    a job's comm_wait is told when its 10 s bin closes, after the verdict of a port sampled
    every second or two (:func:`_jobs_began_waiting` takes it in then).  At most
    ``MAX_PACED``, the oldest dropped first."""
    kept = self._paced
    kept.pop(f.key, None)
    for key in [k for k, g in kept.items() if g.ts < f.ts - PACED_S]:
        del kept[key]
    if len(kept) >= MAX_PACED:
        del kept[next(iter(kept))]
    kept[f.key] = f


def _jobs_began_waiting(self: Correlator, f: Finding, out: list[Alert]) -> None:
    """Job ``f.job`` told waiting in its collectives (``f``: an active ``comm_wait``, kept
    already): the port verdicts on its nodes dropped for its jobs' pace within ``PACED_S``
    are taken as findings now (:func:`_hold_for_pace`)."""
    kept = self._paced
    if not kept:
        return
    nodes = {hw[0] for hw in self._placement.ranks.get(f.job or "", {}).values()}
    for key, g in list(kept.items()):
        if g.scope.node in nodes and g.ts >= f.ts - PACED_S:
            del kept[key]
            self.on_finding(g, out)


def check_restored(corr: Any) -> bool:
    """Whether a restored correlator's ``_paced`` map has the shape this module reads:
    finding key -> an active NIC-scope ``nic_throughput`` Finding of finite times (at most
    MAX_PACED)."""
    kept = getattr(corr, "_paced", None)
    return type(kept) is dict and len(kept) <= MAX_PACED and all(
        type(k) is str and type(f) is Finding and type(f.scope) is Scope
        and f.scope.level == "nic" and type(f.scope.node) is str
        and type(f.evidence) is dict and f.signal == "nic_throughput"
        and all(type(t) in (float, int) and math.isfinite(t) for t in (f.ts, f.onset_ts))
        for k, f in kept.items())


def _fell_alone(self: Correlator, f: Finding, node: str, latest: dict[int, str]) -> bool:
    """With no map, on a node its jobs share: whether the port of ``f`` fell below half of
    its own level (``demand`` ``own_pace``) alone -- every other port of the node
    (``mates_gbps``) still at the node's pace: an idle frontend port beside it holds the
    verdict too, the cautious side -- while every job on the node has more GPUs than one port
    serves (the node's GPUs over its ports), so each job's collectives cross two ports or more.
    One job's ranks put the same traffic on each of its NICs: its demand falling moves all
    its ports together, and a port falling alone under it is the port's (revA39 F2: jobs on
    GPUs 0-3 and 4-7, mlx5_3 100 -> 30 Gb/s beside three at 100).  A job on no more GPUs
    than one port serves may have that port to itself: its demand is its own, and its fall
    is no evidence (tests/test_nic38.py: a 2-GPU job's port at 30 beside the others' 100)."""
    mates = f.evidence.get("mates_gbps")
    median = f.evidence.get("node_median_gbps")
    if f.evidence.get("demand") != "own_pace" or not isinstance(mates, list) \
            or not is_finite(median):
        return False
    cfg = self.cfg
    rates = [m[1] for m in mates if isinstance(m, list) and len(m) == 2 and is_finite(m[1])]
    if not rates or min(rates) < cfg.nic_throughput_ratio * median:  # type: ignore[operator]
        return False  # (another port low too: a job's demand falling, or the jobs' own levels)
    if f.evidence.get("mates_sank"):
        # A mate sank below its own level with it (detector.network's ``SANK``): one job's
        # demand fell on both -- its own port to a tenth, the port it shares with another
        # job to a half (odd42, nic41 F1: a lighter phase isolated the leaf).
        return False
    ports = len(rates) + 1
    gpus = _gpu_count(self, node, latest)
    per_job: dict[str, int] = {}
    for job in latest.values():
        per_job[job] = per_job.get(job, 0) + 1
    return all(n * ports > gpus for n in per_job.values())


def _gpu_count(self: Correlator, node: str, latest: dict[int, str]) -> int:
    """The node's GPUs: the topology's count where it gives one, else its highest laid-out
    GPU's index rounded up to a power of two (GPU servers carry 1, 2, 4 or 8)."""
    topo = self.topology
    count = topo.gpus_of(node) if topo is not None else 0
    top = max(latest)
    return count or (1 << top.bit_length() if top > 0 else 1)


def _tenants(self: Correlator, node: str) -> dict[int, str]:
    """Each laid-out GPU of ``node`` and its tenant: the job laid out on it last (by its
    layout's event time).  A job that ended or re-formed off the node stays in the placement
    until its layout is withdrawn (job_idle_s), and a node's jobs in turn on the same GPUs are
    one tenant at a time (revA38 F4: the old job counted beside its successor hid a port's
    loss).  Empty: no layout told for the node."""
    on = self._placement.on_node.get(node)
    if not on:
        return {}
    last_on = self._placement.last_on
    return {gpu: last_on(node, gpu) or "" for gpu, _ in on.values()}


def _ports_behind(self: Correlator, node: str, latest: dict[int, str]
                  ) -> dict[str, set[str]] | None:
    """NIC -> the jobs with a rank on a GPU it serves, by the topology's GPU-to-NIC map; None
    where it maps not every laid-out GPU (a Slurm topology, none)."""
    topo = self.topology
    if topo is None:
        return None
    behind: dict[str, set[str]] = {}
    for gpu, job in latest.items():
        port = topo.nic_for_gpu(node, gpu)
        if port is None:
            return None
        behind.setdefault(port, set()).add(job)
    return behind


def _alike_behind(self: Correlator, f: Finding, behind: dict[str, set[str]]) -> bool:
    """With the map: whether the port of ``f`` carries the jobs of the mates its verdict
    compares it with -- most of the node's other GPU NICs that carry any job (one job over the
    node's GPUs; a job on six GPUs beside another's two, judged on its three ports) -- or, on
    a node its jobs split (two jobs on four GPUs each), it is low beside the mates that carry
    exactly its own jobs (revA39 F2: job b's mlx5_2 at 100 Gb/s is the reference of b's
    mlx5_3 at 30, not job a's ports).  A port with no job behind it is idle, not slow."""
    mine = behind.pop(f.scope.nic or "", None)
    if mine is None:
        return False
    alike = {port for port, jobs in behind.items() if jobs == mine}
    return 2 * len(alike) > len(behind) or _low_beside(self, f, alike) \
        or _fell_beside_each(self, f, mine, behind)


def _fell_beside_each(self: Correlator, f: Finding, mine: set[str],
                      behind: dict[str, set[str]]) -> bool:
    """With the map: whether the port of ``f``, under two jobs or more (a GPU of each behind
    it), fell from its own level (``demand`` ``own_pace``) below ``nic_throughput_ratio`` of
    the mates carrying each of its jobs -- for every job of its, the mates that carry it and
    no job the port does not (their upper median: :func:`_low_beside`).  Such a port has no
    mate carrying exactly its jobs, so :func:`_low_beside` never judges it (revA40 F8: job a's
    GPU 4 and b's GPU 5 on ``mlx5_2``, 100 -> 30 Gb/s beside a's two ports and b's one at 100,
    never paged with the map).  A healthy port of g GPUs carries at least g times its
    lightest job's one-GPU demand; a mate of g GPUs of one job carries g of that job's: below
    half of such mates for every job of its, the port carries less than half of what its
    GPUs ask at the least -- while each job's demand holds (its mates still busy; a job that
    stopped there was read first: :func:`_gpu_stopped_before`).  It must not page a port
    whose job's demand fell with its mates' (a lighter phase of one job: its mates fall too,
    no reference), nor one beside a job's light mates (below ``nic_busy_gbps``)."""
    if len(mine) < 2 or f.evidence.get("demand") != "own_pace":
        return False
    only = {port: jobs for port, jobs in behind.items() if jobs and jobs <= mine}
    return all(_low_beside(self, f, {port for port, jobs in only.items() if job in jobs})
               for job in mine)


def _low_beside(self: Correlator, f: Finding, alike: set[str]) -> bool:
    """Whether the port of ``f`` runs below ``nic_throughput_ratio`` of the mates in
    ``alike`` (their upper median, from the verdict's ``mates_gbps``; detector.network)
    while they carry traffic (``nic_busy_gbps``)."""
    mates = f.evidence.get("mates_gbps")
    gbps = f.evidence.get("gbps")
    if not alike or not isinstance(mates, list) or not is_finite(gbps):
        return False
    ref = sorted(m[1] for m in mates if isinstance(m, list) and len(m) == 2
                 and m[0] in alike and is_finite(m[1]))
    if not ref:
        return False
    mid = ref[len(ref) // 2]
    cfg = self.cfg
    return mid >= cfg.nic_busy_gbps and gbps < cfg.nic_throughput_ratio * mid  # type: ignore



def _demand_unknown(self: Correlator, f: Finding) -> bool:
    """Whether ``f`` (an active ``nic_throughput`` verdict) says nothing of its port, its
    demand not known to be its mates' (module docstring): a stopped GPU's port, other tenants'
    than its mates', or a port never at its node's pace whose demand nothing else vouches for
    (:func:`_demand_known`)."""
    if _gpu_stopped_before(self, f):
        return True
    node = f.scope.node or ""
    latest = _tenants(self, node)
    if not _demand_known(self, f, node, latest):
        return True
    return _tenants_apart(self, f)


def _demand_known(self: Correlator, f: Finding, node: str, latest: dict[int, str]) -> bool:
    """Whether the port of ``f`` is known to carry its mates' kind of demand: (a) it ran at
    its node's pace and fell from its own level, or (c) its name runs at its node's pace on
    the other nodes (a job's rails) and no layout is told for its node -- the verdict's
    ``demand`` (detector.network) -- or, never at its node's pace, (d) the map and the layout
    put its mates' jobs behind it, or (b) with no map, one job runs on every GPU of the node
    (:func:`_one_job_fills`)."""
    demand = f.evidence.get("demand")
    if demand == "own_pace":
        return True
    if "demand" not in f.evidence and f.evidence.get("own_gbps") not in (None, 0, 0.0):
        return True  # (a verdict from a worker before round 40: its own pace, as "own_pace")
    if not latest:
        return demand == "rails"
    # (A layout told for the node decides over the name's rails elsewhere: the other nodes'
    # port of that name carries their jobs, this node's may serve GPUs its job leaves idle.)
    behind = _ports_behind(self, node, latest)
    if behind is not None:
        return _alike_behind(self, f, behind)
    return _one_job_fills(self, node, latest)


def _one_job_fills(self: Correlator, node: str, latest: dict[int, str]) -> bool:
    """Whether one job is laid out on every GPU of ``node``: then every one of its GPU NICs
    carries that job's collectives, map or not (revA39 F7: a port trained down before its job
    began, one job on all 8 GPUs, a Slurm topology or none).  The node's GPUs: the topology's
    count where it gives one, else its highest laid-out GPU's index rounded up to a power of
    two (:func:`_gpu_count`: a job on GPUs 0-5 leaves two idle -- revA38 F8's idle port), and
    none its thermal rows tell idle.  Two jobs, or idle GPUs, leave a port's
    demand unknown (a light tenant's, an idle GPU's port)."""
    if len(set(latest.values())) != 1:
        return False
    count = _gpu_count(self, node, latest)
    if any(g not in latest for g in range(count)):
        return False
    idle = self._idle.get(node) if node in self._busy else None
    return not idle or not any(g in idle for g in range(count))


def _without_mates(f: Finding) -> Finding:
    """``f`` without its mates' Gb/s (``mates_gbps``): they served the comparison
    (:func:`_low_beside`, :func:`_fell_alone`); a page's evidence keeps the port's own figures
    and its node's median, not each neighbour port's (other tenants' traffic)."""
    if "mates_gbps" not in f.evidence and "mates_sank" not in f.evidence:
        return f
    return f._replace(evidence={k: v for k, v in f.evidence.items()
                                if k not in ("mates_gbps", "mates_sank")})


def _gpu_stopped_before(self: Correlator, f: Finding) -> bool:
    """Whether a GPU of the port's node (with the map: one behind the port) stopped just
    before the port's low run began -- a hardware verdict on it, or its node's thermal rows
    telling it idle (its clock-event reasons 0x1: no kernel running) -- at most two of the
    port's sampling intervals (and 1 s) before the run's start, or one after it (an XID
    stamped late; the GPU's idle told on its node's thermal cadence): its worker died or
    left, and the port lost its demand."""
    node, nic, topo = f.scope.node or "", f.scope.nic, self.topology
    interval = f.evidence.get("sample_interval_s")
    if not isinstance(interval, (int, float)) or not 0.0 < interval <= GROUP_INTERVAL_CAP_S:
        interval = GROUP_INTERVAL_CAP_S
    start = f.onset_ts
    stopped: list[tuple[int, float]] = []
    for unit in self._units_of_node.get(node, ()):
        if unit.startswith("gpu:"):
            stopped += [(g.scope.gpu, g.onset_ts) for g in self._device.get(unit, {}).values()
                        if g.verdict and g.active and g.kind == "hardware"
                        and g.scope.gpu is not None]
    thermal = self._interval.get(node, (0.0, 0.0))[0]
    for gpu, ts in self._slept.get(node, {}).items():
        stopped.append((gpu, ts - min(thermal, GROUP_INTERVAL_CAP_S)))  # (told a poll late)
    stopped += _jobs_stopped_on(self, node, start)
    for gpu, ts in stopped:
        if start - 2.0 * interval - 1.0 <= ts <= start + interval:
            mapped = topo.nic_for_gpu(node, gpu) if topo is not None else None
            if mapped is None or mapped == nic:
                return True
    return False


def _jobs_stopped_on(self: Correlator, node: str, start: float) -> list[tuple[int, float]]:
    """Each GPU of ``node`` a job is laid out on whose stop was told (detector.liveness's job
    ``silent``: no step for ``stop_s`` of its period; not one that stepped again since), with
    when its demand ended: the job ended, was cancelled or crashed there, and the ports that
    carried its collectives lost that demand then, on every node it ran on at once (revA40 F7:
    job b's end on GPUs 5-7 of two nodes of a leaf -- their mlx5_3 at 1 Gb/s beside job a's
    ports at 100 -- isolated the leaf).  The correlator knows it from any stream: the stop
    comes from the job's steps, the port's fall from its node's NIC rows.  Its demand ended
    at its last step's time, or up to one step period after it (a step's row may be stamped
    at its start; its collectives run to its end: 5-10 s steps at 2 s port polls) -- the
    nearest of those to ``start``, the port's low run's beginning."""
    on = self._placement.on_node.get(node)
    if not on:
        return []
    ended: dict[str, float] = {}
    out = []
    for (job, _), (gpu, _) in on.items():
        t = ended.get(job)
        if t is None:
            t = ended[job] = _demand_ended(self, job, start)
        if t > -math.inf:
            out.append((gpu, t))
    return out


def _demand_ended(self: Correlator, job: str, start: float) -> float:
    """When job ``job``'s demand ended, by its told stop (-inf: none), nearest ``start``: its
    last step's time, or up to its ``step_period_s`` (at most ``GROUP_INTERVAL_CAP_S``) later
    (:func:`_jobs_stopped_on`)."""
    last = _stopped_at(self, job)
    if last >= start or last == -math.inf:
        return last
    stop = (self._silent.get(_STOPS) or {}).get(job)
    period = stop.evidence.get("step_period_s") if stop is not None else None
    if not is_finite(period) or not 0.0 <= period <= GROUP_INTERVAL_CAP_S:  # type: ignore
        return last
    return min(last + period, start)  # type: ignore[operator]


def _ports_lost_job(self: Correlator, f: Finding, out: list[Alert]) -> None:
    """A job's stop told (``f``: detector.liveness's job ``silent`` with its last step's time,
    already kept): the ``nic_throughput`` verdicts taken on its nodes' ports that its stop
    explains (:func:`_gpu_stopped_before`, reading it now) are withdrawn -- out of their shared
    part's window (``_group_wait``), out of the unit's findings, and their own page, if one
    fired, cleared.  A stop is told ``stop_s`` (20 s and three steps) after the job's last
    step; a port sampled every few seconds is low for its five samples before that (revA40
    F7 at 2 s polls: leaf1 isolated at 312 s, the stop told at 320 s), and its verdict, taken
    when nothing yet explained it, would count for its leaf."""
    job = f.job
    nodes = {hw[0] for hw in self._placement.ranks.get(job or "", {}).values()}
    for node in sorted(nodes):
        for unit in sorted(self._units_of_node.get(node, ())):
            signals = self._device.get(unit)
            g = signals.get("nic_throughput") if signals is not None else None
            if g is None or not g.active or not _gpu_stopped_before(self, g):
                continue
            del signals["nic_throughput"]  # type: ignore[union-attr]
            if not signals:
                del self._device[unit]
            self._group_wait.pop(g.key, None)
            self._cleared(g._replace(active=False, ts=max(f.ts, g.ts)), out)


def _stop_wait(self: Correlator, f: Finding) -> float:
    """How long past its own time ``f`` (a network verdict held for its shared part's window)
    waits for a job's stop on its node: a ``nic_throughput`` verdict on a node two jobs or more
    share, until ``STOP_TOLD_S`` after its low run began -- a port sampled every second or two
    is low for its five samples before the stop of the job that left it is told, and its
    switch window (1.25 of its interval + 1 s) closed on it (revA40 F7 at 2 s polls: leaf1
    isolated at 312 s, b's stop told at 320 s; :func:`_ports_lost_job` withdraws it then).
    A port sampled every 10 s or more is past it already; a node one job fills loses all its
    ports' demand together (no port low against its node)."""
    if f.signal != "nic_throughput" or len(set(_tenants(self, f.scope.node or "").values())) < 2:
        return 0.0
    return f.onset_ts + STOP_TOLD_S - f.ts
