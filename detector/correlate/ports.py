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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from detector.findings import Finding

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
