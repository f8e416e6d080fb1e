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

Round 39 (nic39, :func:`_demand_unknown`): the verdict is the port's evidence only where its
demand is known -- two more ways it is not:

- the port never ran at its node's pace (``own_gbps`` 0 in the verdict: detector.network
  keeps each port's own pace): a port low from its first sample carries what its GPUs ask,
  and without the layout *and* the GPU-to-NIC map saying its GPUs run the job its mates run,
  nobody knows they ask anything -- the idle GPUs' port of a job on 6 of 8 GPUs (revA38 F8),
  a light tenant's port seen on port rows alone.  (A port that fell from its own pace is
  judged as before: detector.network asks it to fall below half of that, too.)
- a GPU of its node stopped just before the port's low run began -- at most two of its
  sampling intervals before it, or one after: isolated by a hardware verdict (an XID killing
  its worker, a DBE, a GPU off the bus), or told idle by its thermal rows (no kernel: its
  worker exited) -- the dead worker's port goes quiet with it (blind29 F3: XID 48, the port
  at 0.02 Gb/s beside 72, isolated network/nic 55 s later).  With the map, only the stopped
  GPU's own port; without it, any of its node's (a GPU's fault is paged by itself).  A port
  that falls on its own -- its GPUs busy, minutes after a GPU's fault, or on a node with
  none -- still pages: a degraded port's ranks wait in their collectives, busy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from detector.findings import Finding
from detector.network import GROUP_INTERVAL_CAP_S

if TYPE_CHECKING:
    from detector.correlate.correlator import Correlator


def _tenants_apart(self: Correlator, f: Finding) -> bool:
    """Whether the port of ``f`` (an active ``nic_throughput`` verdict) carries other jobs
    than its node's other ports, by the node's job layout (module docstring): then its Gb/s
    against theirs is demand against demand, and ``f`` is no evidence of the port."""
    node, nic = f.scope.node, f.scope.nic
    on = self._placement.on_node.get(node or "")
    if not on or nic is None:
        return False
    # Each GPU's tenant is the job laid out on it last (by its layout's event time): a job
    # that ended or re-formed off the node stays in the placement until its layout is
    # withdrawn (job_idle_s), and a node's jobs in turn on the same GPUs are one tenant at a
    # time (revA38 F4: the old job counted beside its successor hid a port's loss).
    last_on = self._placement.last_on
    latest = {gpu: last_on(node or "", gpu) or "" for gpu, _ in on.values()}  # GPU -> its job
    topo = self.topology
    behind: dict[str, set[str]] = {}  # NIC -> the jobs with a rank on a GPU it serves
    mapped = topo is not None
    for gpu, job in latest.items():
        port = topo.nic_for_gpu(node or "", gpu) if topo is not None else None
        if port is None:
            mapped = False
            break
        behind.setdefault(port, set()).add(job)
    if not mapped:
        return len(set(latest.values())) > 1
    mine = behind.pop(nic, None)
    alike = sum(1 for jobs in behind.values() if jobs == mine)
    return mine is None or 2 * alike <= len(behind)


def _demand_unknown(self: Correlator, f: Finding) -> bool:
    """Whether ``f`` (an active ``nic_throughput`` verdict) says nothing of its port, its
    demand not known to be its mates' (module docstring): never at its node's pace without
    the layout and the map to vouch for it, a stopped GPU's port, or other tenants' than its
    mates'."""
    own = f.evidence.get("own_gbps")
    if own == 0.0 and not _same_work(self, f):
        return True
    return _gpu_stopped_before(self, f) or _tenants_apart(self, f)


def _same_work(self: Correlator, f: Finding) -> bool:
    """Whether the node's job layout and the topology's GPU-to-NIC map put the jobs that
    run on most of its other GPU NICs behind the port of ``f`` too."""
    node, nic, topo = f.scope.node or "", f.scope.nic, self.topology
    on = self._placement.on_node.get(node)
    if not on or nic is None or topo is None:
        return False
    behind: dict[str, set[str]] = {}
    for gpu, _ in on.values():
        port = topo.nic_for_gpu(node, gpu)
        if port is None:
            return False
        behind.setdefault(port, set()).add(self._placement.last_on(node, gpu) or "")
    mine = behind.pop(nic, None)
    return mine is not None and 2 * sum(1 for jobs in behind.values() if jobs == mine) > len(
        behind)


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
    for gpu, ts in stopped:
        if start - 2.0 * interval - 1.0 <= ts <= start + interval:
            mapped = topo.nic_for_gpu(node, gpu) if topo is not None else None
            if mapped is None or mapped == nic:
                return True
    return False
